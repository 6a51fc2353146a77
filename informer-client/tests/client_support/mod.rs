//! A tiny scripted HTTP/1.1 server for the client tests, over plain TCP or TLS; or HTTP/2
//! over TLS (`http2.rs`), where the same scripts end, cut or stall a stream instead.
//!
//! Each connection serves requests one after the other until the script closes it; a script
//! maps a request to a [`Reply`]: a whole body, or chunks sent with chunked encoding and ended
//! cleanly, cut off, or never (stalled); a body shorter than its length that stalls; or no
//! answer at all. Every request is recorded, and tests wait for requests
//! with [`Server::wait_for_requests`] (under a deadline) rather than sleeping.

#![allow(dead_code, reason = "each test file uses a different part")]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed unwrap is a failed test"
)]

mod http2;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

pub mod pki;

/// How long any test waits for anything.
pub const DEADLINE: Duration = Duration::from_secs(10);

/// Runs `fut` under [`DEADLINE`].
pub async fn within<F: std::future::Future>(fut: F) -> F::Output {
    tokio::time::timeout(DEADLINE, fut).await.expect("deadline exceeded")
}

/// One request as the server read it.
#[derive(Clone, Debug)]
pub struct Request {
    pub method: String,
    /// Path and query, as sent.
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// The TLS server name (SNI) the client sent, for TLS connections.
    pub sni: Option<String>,
    /// Whether the connection presented a client certificate (TLS only).
    pub client_cert: bool,
    /// Whether it came over HTTP/2.
    pub http2: bool,
    /// The client certificate the connection presented (DER), for TLS connections that did.
    pub client_cert_der: Option<Vec<u8>>,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or_default()
    }

    /// The decoded query parameters.
    pub fn query(&self) -> Vec<(String, String)> {
        let query = self.target.split_once('?').map(|(_, q)| q).unwrap_or_default();
        url::form_urlencoded::parse(query.as_bytes()).into_owned().collect()
    }

    pub fn param(&self, name: &str) -> Option<String> {
        self.query().into_iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }
}

/// How a streamed body ends.
#[derive(Clone, Copy, Debug)]
pub enum End {
    /// The terminal chunk.
    Clean,
    /// The connection is closed without the terminal chunk.
    Cut,
    /// Nothing more is ever sent.
    Stall,
}

/// What the server answers.
#[derive(Clone, Debug)]
pub enum Reply {
    Full {
        status: u16,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    },
    Chunked {
        status: u16,
        chunks: Vec<Vec<u8>>,
        end: End,
    },
    /// A `content-length` of `length`, then `body` (shorter), then nothing more, ever.
    Stalled {
        status: u16,
        length: usize,
        body: Vec<u8>,
    },
    /// Nothing at all, not even a status line: a server that accepted the connection and hung.
    Hang,
}

impl Reply {
    pub fn json(status: u16, body: impl Into<Vec<u8>>) -> Self {
        Self::Full {
            status,
            headers: vec![("Content-Type".to_owned(), "application/json".to_owned())],
            body: body.into(),
        }
    }

    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        if let Self::Full { headers, .. } = &mut self {
            headers.push((name.to_owned(), value.to_owned()));
        }
        self
    }
}

type Script = Arc<dyn Fn(&Request) -> Reply + Send + Sync>;

/// What a TLS connection told about its client.
struct Connection {
    sni: Option<String>,
    /// The client certificate presented (DER).
    client_cert: Option<Vec<u8>>,
}

/// A running server; it stops when dropped.
pub struct Server {
    pub addr: SocketAddr,
    requests: Arc<Mutex<Vec<Request>>>,
    arrived: Arc<Notify>,
    task: JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Server {
    /// A plain-HTTP server on loopback.
    pub async fn start(script: impl Fn(&Request) -> Reply + Send + Sync + 'static) -> Self {
        Self::spawn(None, false, Arc::new(script)).await
    }

    /// A TLS server on loopback.
    pub async fn start_tls(
        config: rustls::ServerConfig,
        script: impl Fn(&Request) -> Reply + Send + Sync + 'static,
    ) -> Self {
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        Self::spawn(Some(acceptor), false, Arc::new(script)).await
    }

    /// A TLS server on loopback that speaks HTTP/2 to clients that offer it in ALPN (`config`
    /// gets `h2` as its only protocol), HTTP/1.1 to the others.
    pub async fn start_http2(
        mut config: rustls::ServerConfig,
        script: impl Fn(&Request) -> Reply + Send + Sync + 'static,
    ) -> Self {
        config.alpn_protocols = vec![b"h2".to_vec()];
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        Self::spawn(Some(acceptor), true, Arc::new(script)).await
    }

    async fn spawn(tls: Option<tokio_rustls::TlsAcceptor>, http2: bool, script: Script) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let arrived = Arc::new(Notify::new());
        let (recorded, notify) = (Arc::clone(&requests), Arc::clone(&arrived));
        let task = tokio::spawn(async move {
            let mut connections = tokio::task::JoinSet::new();
            loop {
                let Ok((tcp, _)) = listener.accept().await else { return };
                let (script, recorded, notify, tls) =
                    (Arc::clone(&script), Arc::clone(&recorded), Arc::clone(&notify), tls.clone());
                connections.spawn(async move {
                    match tls {
                        None => serve(tcp, None, None, &script, &recorded, &notify).await,
                        Some(acceptor) => {
                            // A failed handshake is what some tests expect; the client reports it.
                            let Ok(stream) = acceptor.accept(tcp).await else { return };
                            let (_, conn) = stream.get_ref();
                            let sni = conn.server_name().map(ToOwned::to_owned);
                            let client_cert = conn
                                .peer_certificates()
                                .and_then(|chain| chain.first())
                                .map(|cert| cert.to_vec());
                            let h2 = http2 && conn.alpn_protocol() == Some(b"h2");
                            let connection = Connection { sni, client_cert };
                            if h2 {
                                http2::serve(stream, connection, &script, &recorded, &notify).await;
                            } else {
                                let Connection { sni, client_cert } = connection;
                                serve(stream, sni, client_cert, &script, &recorded, &notify).await;
                            }
                        }
                    }
                });
            }
        });
        Self { addr, requests, arrived, task }
    }

    pub fn url(&self, scheme: &str) -> url::Url {
        format!("{scheme}://{}", self.addr).parse().unwrap()
    }

    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().clone()
    }

    /// Waits (under the deadline) until at least `n` requests arrived; returns them all.
    pub async fn wait_for_requests(&self, n: usize) -> Vec<Request> {
        within(async {
            loop {
                let notified = self.arrived.notified();
                let requests = self.requests();
                if requests.len() >= n {
                    return requests;
                }
                notified.await;
            }
        })
        .await
    }
}

async fn serve<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    sni: Option<String>,
    client_cert: Option<Vec<u8>>,
    script: &Script,
    recorded: &Mutex<Vec<Request>>,
    arrived: &Notify,
) {
    let mut buffer = Vec::new();
    loop {
        let Some(mut request) = read_request(&mut stream, &mut buffer).await else { return };
        request.sni.clone_from(&sni);
        request.client_cert = client_cert.is_some();
        request.client_cert_der.clone_from(&client_cert);
        let reply = script(&request);
        recorded.lock().push(request);
        arrived.notify_waiters();
        if !write_reply(&mut stream, reply).await {
            return;
        }
    }
}

async fn read_request<S: AsyncRead + Unpin>(
    stream: &mut S,
    buffer: &mut Vec<u8>,
) -> Option<Request> {
    let head_end = loop {
        if let Some(i) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        let mut chunk = [0; 4096];
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8(buffer[..head_end].to_vec()).ok()?;
    buffer.drain(..head_end + 4);
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let (method, target) = (first.next()?.to_owned(), first.next()?.to_owned());
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let length = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0);
    while buffer.len() < length {
        let mut chunk = [0; 4096];
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
    }
    let body = buffer.drain(..length).collect();
    Some(Request {
        method,
        target,
        headers,
        body,
        sni: None,
        client_cert: false,
        http2: false,
        client_cert_der: None,
    })
}

/// Writes a reply; `false` when the connection must not be used again.
async fn write_reply<S: AsyncWrite + Unpin>(stream: &mut S, reply: Reply) -> bool {
    match reply {
        Reply::Full { status, headers, body } => {
            let mut head = format!("HTTP/1.1 {status} X\r\ncontent-length: {}\r\n", body.len());
            for (name, value) in headers {
                head = head + &name + ": " + &value + "\r\n";
            }
            head.push_str("\r\n");
            let mut bytes = head.into_bytes();
            bytes.extend_from_slice(&body);
            stream.write_all(&bytes).await.is_ok() && stream.flush().await.is_ok()
        }
        Reply::Chunked { status, chunks, end } => {
            let head = format!(
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n"
            );
            if stream.write_all(head.as_bytes()).await.is_err() {
                return false;
            }
            for chunk in chunks {
                let mut framed = format!("{:x}\r\n", chunk.len()).into_bytes();
                framed.extend_from_slice(&chunk);
                framed.extend_from_slice(b"\r\n");
                if stream.write_all(&framed).await.is_err() || stream.flush().await.is_err() {
                    return false;
                }
            }
            match end {
                End::Clean => {
                    stream.write_all(b"0\r\n\r\n").await.is_ok() && stream.flush().await.is_ok()
                }
                End::Cut => {
                    let _ = stream.shutdown().await;
                    false
                }
                End::Stall => std::future::pending().await,
            }
        }
        Reply::Stalled { status, length, body } => {
            let head = format!(
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {length}\r\n\r\n"
            );
            if stream.write_all(head.as_bytes()).await.is_err()
                || stream.write_all(&body).await.is_err()
                || stream.flush().await.is_err()
            {
                return false;
            }
            std::future::pending().await
        }
        Reply::Hang => std::future::pending().await,
    }
}
