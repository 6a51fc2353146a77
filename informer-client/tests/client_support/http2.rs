//! The scripted server's HTTP/2 side: each stream is one request, answered by the script as
//! the HTTP/1.1 side answers it, with HTTP/2's own endings: a clean end is `END_STREAM`, a cut
//! resets the stream (`RST_STREAM`, as Go's server does when a handler dies mid-body), and a
//! stall or a hang keeps the stream open and silent while the connection serves on.

use bytes::Bytes;
use h2::server::SendResponse;
use http::{HeaderValue, Response, StatusCode};
use parking_lot::Mutex;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::Notify;

use super::{Connection, End, Reply, Request, Script};

/// How long a cut waits for what comes before it to be written.
const FLUSH_BEFORE_CUT: std::time::Duration = std::time::Duration::from_millis(20);

/// Serves one HTTP/2 connection until the client closes it.
pub(super) async fn serve<S: AsyncRead + AsyncWrite + Unpin + Send + 'static>(
    stream: S,
    connection: Connection,
    script: &Script,
    recorded: &std::sync::Arc<Mutex<Vec<Request>>>,
    arrived: &std::sync::Arc<Notify>,
) {
    let Ok(mut h2) = h2::server::handshake(stream).await else { return };
    let mut streams = tokio::task::JoinSet::new();
    // Accepting drives the connection: the streams' frames go out while this loop runs.
    while let Some(Ok((request, respond))) = h2.accept().await {
        let (parts, mut body) = request.into_parts();
        let (script, recorded, arrived) = (
            std::sync::Arc::clone(script),
            std::sync::Arc::clone(recorded),
            std::sync::Arc::clone(arrived),
        );
        let (sni, client_cert) = (connection.sni.clone(), connection.client_cert.clone());
        streams.spawn(async move {
            let mut bytes = Vec::new();
            while let Some(Ok(chunk)) = body.data().await {
                let _ = body.flow_control().release_capacity(chunk.len());
                bytes.extend_from_slice(&chunk);
            }
            let target = parts.uri.path_and_query().map_or("/", |p| p.as_str()).to_owned();
            let headers = parts
                .headers
                .iter()
                .map(|(n, v)| (n.as_str().to_owned(), v.to_str().unwrap_or_default().to_owned()))
                .collect();
            let request = Request {
                method: parts.method.as_str().to_owned(),
                target,
                headers,
                body: bytes,
                sni,
                client_cert: client_cert.is_some(),
                http2: true,
                client_cert_der: client_cert,
            };
            let reply = script(&request);
            recorded.lock().push(request);
            arrived.notify_waiters();
            answer(respond, reply).await;
        });
    }
}

fn head(status: u16, headers: &[(String, String)]) -> Response<()> {
    let mut response = Response::new(());
    *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    for (name, value) in headers {
        if let (Ok(name), Ok(value)) =
            (http::HeaderName::try_from(name.as_str()), HeaderValue::try_from(value.as_str()))
        {
            response.headers_mut().append(name, value);
        }
    }
    response
}

/// Answers one stream as `reply` says.
async fn answer(mut respond: SendResponse<Bytes>, reply: Reply) {
    let json = || vec![("content-type".to_owned(), "application/json".to_owned())];
    match reply {
        Reply::Full { status, mut headers, body } => {
            headers.push(("content-length".to_owned(), body.len().to_string()));
            let Ok(mut send) = respond.send_response(head(status, &headers), body.is_empty())
            else {
                return;
            };
            if !body.is_empty() {
                let _ = send.send_data(Bytes::from(body), true);
            }
            // The connection task sends what was queued; this stream is done.
        }
        Reply::Chunked { status, chunks, end } => {
            let Ok(mut send) = respond.send_response(head(status, &json()), false) else {
                return;
            };
            for chunk in chunks {
                if send.send_data(Bytes::from(chunk), false).is_err() {
                    return;
                }
            }
            match end {
                End::Clean => {
                    let _ = send.send_data(Bytes::new(), true);
                }
                End::Cut => {
                    // h2 drops the frames still queued for a stream it resets: the bytes before
                    // the cut are written first (the embedded API server's cut waits as long).
                    tokio::time::sleep(FLUSH_BEFORE_CUT).await;
                    send.send_reset(h2::Reason::INTERNAL_ERROR);
                }
                End::Stall => {
                    std::future::pending::<()>().await;
                    drop(send);
                }
            }
        }
        Reply::Stalled { status, length, body } => {
            let mut headers = json();
            headers.push(("content-length".to_owned(), length.to_string()));
            let Ok(mut send) = respond.send_response(head(status, &headers), false) else {
                return;
            };
            let _ = send.send_data(Bytes::from(body), false);
            std::future::pending::<()>().await;
            drop(send);
        }
        Reply::Hang => {
            std::future::pending::<()>().await;
            drop(respond);
        }
    }
}
