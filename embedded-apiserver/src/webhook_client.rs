//! The client that calls webhooks: HTTPS POSTs of JSON reviews, each on its own connection,
//! with the webhook's deadline, its CA bundle, and a bounded response; failures worded as Go's
//! and client-go's, which kube-apiserver's messages quote.
//!
//! kube-apiserver's webhook client (`k8s.io/apiserver/pkg/util/webhook/client.go`,
//! `ClientManager.HookClient`) is a client-go REST client: it posts to the configured URL, or to
//! `https://NAME.NAMESPACE.svc:PORT/PATH` for a service (dialling the address its service
//! resolver finds; here, the one a test maps the service to), over HTTP/1.1, trusting the
//! configuration's `caBundle`, with the call's timeout as a `?timeout=` parameter and as the
//! deadline of the whole exchange. Its errors reach clients inside kube-apiserver's messages
//! (`failed to call webhook: Post "URL": dial tcp ...: connect: connection refused`), so this
//! client words its own failures the same way: Go's `url.Error`, `net.OpError` and
//! `context.DeadlineExceeded`, and client-go's `Result.Into` (see [`decode`]).
//!
//! Not done: a configuration without `caBundle` trusts nothing here (kube-apiserver trusts the
//! system's roots); HTTP/2 is never offered (kube-apiserver offers it to loopback URLs).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{Method, Request, header};
use hyper_util::rt::TokioIo;
use parking_lot::RwLock;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::Value;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use crate::webhook_config::{ClientConfig, Target};

/// The largest response body read from a webhook. kube-apiserver reads whatever comes; a test
/// server has a bound, and a conversion of a whole list fits well within this one.
const MAX_RESPONSE: usize = 32 * 1024 * 1024;

/// How much of a non-JSON error body client-go quotes (`maxUnstructuredResponseTextBytes`).
const MAX_QUOTED_BODY: usize = 2048;

/// Calls webhooks; knows where the services a test named are.
#[derive(Debug, Default)]
pub(crate) struct WebhookClient {
    /// `(namespace, name)` of a service to the address its webhook listens on.
    services: RwLock<HashMap<(String, String), SocketAddr>>,
}

/// A webhook's HTTP answer.
#[derive(Debug)]
pub(crate) struct Reply {
    status: u16,
    content_type: String,
    body: Bytes,
}

impl WebhookClient {
    /// A client that resolves `services` (namespace, name) to those addresses.
    pub(crate) fn new(services: HashMap<(String, String), SocketAddr>) -> Self {
        Self { services: RwLock::new(services) }
    }

    /// Resolves the service `namespace/name` to `addr` from now on.
    pub(crate) fn set_service(&self, namespace: &str, name: &str, addr: SocketAddr) {
        self.services.write().insert((namespace.to_owned(), name.to_owned()), addr);
    }

    /// POSTs `body` (JSON) to the webhook of `config`, within `timeout`.
    ///
    /// # Errors
    ///
    /// The failure as Go's HTTP client words it: `Post "URL": REASON`.
    pub(crate) async fn post(
        &self,
        config: &ClientConfig,
        body: Vec<u8>,
        timeout: Duration,
    ) -> Result<Reply, String> {
        let url = format!("{}?timeout={}", config.url(), go_duration(timeout));
        let failed = |reason: String| format!("Post \"{url}\": {reason}");
        let endpoint = self.endpoint(config).map_err(failed)?;
        // The deadline covers the whole exchange, as the context client-go's request runs in.
        match tokio::time::timeout(timeout, exchange(config, &endpoint, &url, body)).await {
            Ok(result) => result.map_err(failed),
            Err(_) => Err(failed("context deadline exceeded".to_owned())),
        }
    }

    /// Where to connect, the TLS server name and the `Host` header.
    fn endpoint(&self, config: &ClientConfig) -> Result<Endpoint, String> {
        match &config.target {
            Target::Service { namespace, name, port, .. } => {
                let key = (namespace.clone(), name.clone());
                // What kube-apiserver's service resolver answers for a service it cannot find.
                let addr = self.services.read().get(&key).copied();
                let addr = addr.ok_or_else(|| format!("service {name:?} not found"))?;
                let server_name = format!("{name}.{namespace}.svc");
                Ok(Endpoint {
                    host: format!("{server_name}:{port}"),
                    dial: Dial::Addr(addr),
                    server_name,
                })
            }
            Target::Url(url) => {
                let rest = url.strip_prefix("https://").ok_or_else(|| {
                    let scheme = url.split_once("://").map_or("", |(s, _)| s);
                    format!("unsupported protocol scheme {scheme:?}")
                })?;
                let authority = rest.split(['/', '?']).next().unwrap_or_default();
                let (host, port) = split_host_port(authority);
                Ok(Endpoint {
                    host: authority.to_owned(),
                    dial: Dial::Host(host.to_owned(), port),
                    server_name: host.trim_start_matches('[').trim_end_matches(']').to_owned(),
                })
            }
        }
    }
}

/// Where a call goes.
struct Endpoint {
    /// The `Host` header: `host:port` as in the URL.
    host: String,
    dial: Dial,
    /// The name the serving certificate must carry.
    server_name: String,
}

enum Dial {
    Addr(SocketAddr),
    Host(String, u16),
}

/// `host` and `port` (443 when none) of an authority; IPv6 literals keep their brackets.
fn split_host_port(authority: &str) -> (&str, u16) {
    let (host, port) = match authority.rfind(':') {
        Some(i) if !authority[i..].contains(']') => (&authority[..i], &authority[i + 1..]),
        _ => (authority, ""),
    };
    (host, port.parse().unwrap_or(443))
}

/// Connects, shakes hands, posts and reads the answer.
async fn exchange(
    config: &ClientConfig,
    endpoint: &Endpoint,
    url: &str,
    body: Vec<u8>,
) -> Result<Reply, String> {
    let tcp = dial(&endpoint.dial).await?;
    let tls = tls_connector(&config.ca_bundle)?;
    let name = ServerName::try_from(endpoint.server_name.clone())
        .map_err(|e| format!("invalid server name {:?}: {e}", endpoint.server_name))?;
    let stream = tls.connect(name, tcp).await.map_err(|e| tls_error(&e, &endpoint.server_name))?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| http_error(&e))?;
    // The path and query of the URL (which holds a service's path too).
    let target = url.find("://").map_or(url, |i| &url[i + 3..]);
    let target = &target[target.find(['/', '?']).unwrap_or(target.len())..];
    let target = if target.starts_with('/') { target.to_owned() } else { format!("/{target}") };
    let request = Request::builder()
        .method(Method::POST)
        .uri(target)
        .header(header::HOST, &endpoint.host)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json, */*")
        .header(header::USER_AGENT, "kube-apiserver-admission")
        .body(Body::from(body))
        .map_err(|e| format!("net/http: invalid request: {e}"))?;
    let answer = async {
        let response = sender.send_request(request).await.map_err(|e| http_error(&e))?;
        let (parts, body) = response.into_parts();
        let body = axum::body::to_bytes(Body::new(body), MAX_RESPONSE).await.map_err(|e| {
            if e.to_string().contains("length limit") {
                format!(
                    "the response is larger than {MAX_RESPONSE} bytes, the most this server reads"
                )
            } else {
                "unexpected EOF".to_owned()
            }
        })?;
        let content_type = parts.headers.get(header::CONTENT_TYPE);
        let content_type = content_type.and_then(|c| c.to_str().ok()).unwrap_or_default();
        Ok(Reply { status: parts.status.as_u16(), content_type: content_type.to_owned(), body })
    };
    tokio::pin!(connection);
    tokio::select! {
        biased;
        reply = answer => reply,
        // The connection ended before the answer did: the server closed it.
        ended = &mut connection => Err(ended.err().map_or_else(|| "EOF".to_owned(), |e| http_error(&e))),
    }
}

/// Opens the TCP connection, worded as Go's dialer fails (`dial tcp ADDR: connect: ...`).
async fn dial(target: &Dial) -> Result<TcpStream, String> {
    let addrs: Vec<SocketAddr> = match target {
        Dial::Addr(addr) => vec![*addr],
        Dial::Host(host, port) => {
            let host = host.trim_start_matches('[').trim_end_matches(']');
            tokio::net::lookup_host((host, *port))
                .await
                .map_err(|e| format!("dial tcp: lookup {host}: {e}"))?
                .collect()
        }
    };
    let mut last = String::from("dial tcp: no addresses");
    for addr in addrs {
        match TcpStream::connect(addr).await {
            Ok(stream) => return Ok(stream),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                last = format!("dial tcp {addr}: connect: connection refused");
            }
            Err(e) => last = format!("dial tcp {addr}: connect: {e}"),
        }
    }
    Err(last)
}

/// A TLS client trusting the PEM certificates of `ca_bundle`, offering HTTP/1.1.
fn tls_connector(ca_bundle: &[u8]) -> Result<TlsConnector, String> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_bundle) {
        let cert = cert.map_err(|e| format!("unable to load root certificates: {e}"))?;
        roots.add(cert).map_err(|e| format!("unable to load root certificates: {e}"))?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("tls: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsConnector::from(Arc::new(config)))
}

/// A failed handshake as Go's `crypto/tls` words the common cases.
fn tls_error(error: &std::io::Error, server_name: &str) -> String {
    use rustls::CertificateError as Cert;
    let rustls_error = error.get_ref().and_then(|e| e.downcast_ref::<rustls::Error>());
    match rustls_error {
        Some(rustls::Error::InvalidCertificate(Cert::UnknownIssuer)) => {
            "tls: failed to verify certificate: x509: certificate signed by unknown authority"
                .to_owned()
        }
        Some(rustls::Error::InvalidCertificate(Cert::NotValidForNameContext {
            presented, ..
        })) => {
            format!("tls: failed to verify certificate: {}", hostname_error(server_name, presented))
        }
        Some(rustls::Error::InvalidCertificate(Cert::NotValidForName)) => {
            format!("tls: failed to verify certificate: {}", hostname_error(server_name, &[]))
        }
        Some(rustls::Error::InvalidCertificate(
            Cert::Expired
            | Cert::ExpiredContext { .. }
            | Cert::NotValidYet
            | Cert::NotValidYetContext { .. },
        )) => {
            "tls: failed to verify certificate: x509: certificate has expired or is not yet valid"
                .to_owned()
        }
        Some(other) => format!("tls: {other}"),
        None if error.kind() == std::io::ErrorKind::UnexpectedEof => "EOF".to_owned(),
        None => error.to_string(),
    }
}

/// Go's `x509.HostnameError` for `host`, from the names the certificate presents (rustls
/// writes them `DnsName("...")` and `IpAddress(...)`): the names of the kind `host` is.
fn hostname_error(host: &str, presented: &[String]) -> String {
    let ip = host.parse::<std::net::IpAddr>().is_ok();
    let (prefix, suffix) = if ip { ("IpAddress(", ")") } else { ("DnsName(\"", "\")") };
    let names: Vec<&str> = presented
        .iter()
        .filter_map(|name| name.strip_prefix(prefix)?.strip_suffix(suffix))
        .collect();
    match (ip, names.is_empty()) {
        (true, true) => format!(
            "x509: cannot validate certificate for {host} because it doesn't contain any IP SANs"
        ),
        (false, true) => {
            format!("x509: certificate is not valid for any names, but wanted to match {host}")
        }
        (_, false) => format!("x509: certificate is valid for {}, not {host}", names.join(", ")),
    }
}

/// An HTTP failure as Go's client words it: a connection closed before the answer is `EOF`.
fn http_error(error: &hyper::Error) -> String {
    if error.is_incomplete_message() || error.is_closed() || error.is_canceled() {
        "EOF".to_owned()
    } else {
        error.to_string()
    }
}

/// A duration as Go's `time.Duration.String` writes whole seconds: `10s`, `1m30s`.
fn go_duration(d: Duration) -> String {
    let secs = d.as_secs();
    if secs < 60 { format!("{secs}s") } else { format!("{}m{}s", secs / 60, secs % 60) }
}

/// The JSON object of a webhook's answer, as client-go's `Result.Into` reads it (`transformResponse`
/// and `newUnstructuredResponseError` in `k8s.io/client-go/rest/request.go`): a `Status` in an
/// error answer is its message; other error answers get
/// `errors.NewGenericServerResponse`'s message for their code; an empty body, a body in
/// another format or one that is not JSON is an error.
///
/// # Errors
///
/// The error text client-go would return.
pub(crate) fn decode(reply: &Reply) -> Result<Value, String> {
    let media =
        reply.content_type.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    if !(200..=206).contains(&reply.status) {
        // A failing `Status` in the body is the error (`Result.Error`).
        if let Ok(status) = serde_json::from_slice::<Value>(&reply.body)
            && status.get("kind").and_then(Value::as_str) == Some("Status")
            && status.get("status").and_then(Value::as_str) == Some("Failure")
        {
            return Err(status
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned());
        }
        let text = media.is_empty() || media.starts_with("text/");
        let message = if text {
            let quoted = &reply.body[..reply.body.len().min(MAX_QUOTED_BODY)];
            String::from_utf8_lossy(quoted).trim().to_owned()
        } else {
            "unknown".to_owned()
        };
        return Err(generic_server_response(reply.status, &message));
    }
    let content_type =
        if reply.content_type.is_empty() { "application/json" } else { &reply.content_type };
    if !media.is_empty() && media != "application/json" {
        return Err(format!("serializer for {content_type} doesn't exist"));
    }
    if reply.body.is_empty() {
        return Err(format!(
            "0-length response with status code: {} and content type: {content_type}",
            reply.status
        ));
    }
    serde_json::from_slice(&reply.body)
        .map_err(|e| format!("couldn't get version/kind; json parse error: {e}"))
}

/// `errors.NewGenericServerResponse`'s message for an answer with `code` (no resource named).
fn generic_server_response(code: u16, server_message: &str) -> String {
    match code {
        409 => "the server reported a conflict".to_owned(),
        404 => "the server could not find the requested resource".to_owned(),
        400 => "the server rejected our request for an unknown reason".to_owned(),
        401 => "the server has asked for the client to provide credentials".to_owned(),
        406 if server_message.is_empty() || server_message == "unknown" => {
            "the server was unable to respond with a content type that the client supports"
                .to_owned()
        }
        403 | 406 | 415 => server_message.to_owned(),
        405 => "the server does not allow this method on the requested resource".to_owned(),
        422 => "the server rejected our request due to an error in our request".to_owned(),
        503 => "the server is currently unable to handle the request".to_owned(),
        504 => "the server was unable to return a response in the time allotted, but may still \
                be processing the request"
            .to_owned(),
        429 => "the server has received too many requests and has asked us to try again later"
            .to_owned(),
        500.. => format!(
            "an error on the server ({}) has prevented the request from succeeding",
            go_quote(server_message)
        ),
        _ => format!(
            "the server responded with the status code {code} but did not return more information"
        ),
    }
}

/// A string quoted as Go's `%q` quotes printable text.
pub(crate) fn go_quote(text: &str) -> String {
    let mut quoted = String::with_capacity(text.len() + 2);
    quoted.push('"');
    for c in text.chars() {
        match c {
            '"' => quoted.push_str("\\\""),
            '\\' => quoted.push_str("\\\\"),
            '\n' => quoted.push_str("\\n"),
            '\r' => quoted.push_str("\\r"),
            '\t' => quoted.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(quoted, "\\x{:02x}", u32::from(c));
            }
            c => quoted.push(c),
        }
    }
    quoted.push('"');
    quoted
}

/// The `GroupVersionKind` of a JSON object as Go's `GroupVersionKind.String` writes it:
/// `group/version, Kind=Kind` (`/, Kind=` when it has neither).
pub(crate) fn gvk_of(obj: &Value) -> String {
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or_default();
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or_default();
    gvk(api_version, kind)
}

/// `group/version, Kind=kind` of an `apiVersion` and a kind.
pub(crate) fn gvk(api_version: &str, kind: &str) -> String {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    format!("{group}/{version}, Kind={kind}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(status: u16, content_type: &str, body: &str) -> Reply {
        Reply { status, content_type: content_type.to_owned(), body: Bytes::from(body.to_owned()) }
    }

    #[test]
    fn answers_are_read_as_client_go_reads_them() {
        let ok = decode(&reply(200, "application/json", r#"{"a":1}"#)).unwrap();
        assert_eq!(ok["a"], 1);
        assert_eq!(
            decode(&reply(200, "application/json", "")).unwrap_err(),
            "0-length response with status code: 200 and content type: application/json"
        );
        assert_eq!(
            decode(&reply(500, "text/plain", "boom\n")).unwrap_err(),
            "an error on the server (\"boom\") has prevented the request from succeeding"
        );
        let status = r#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"no"}"#;
        assert_eq!(decode(&reply(403, "application/json", status)).unwrap_err(), "no");
        assert_eq!(
            decode(&reply(404, "application/json", "{}")).unwrap_err(),
            "the server could not find the requested resource"
        );
        assert_eq!(
            decode(&reply(200, "text/html", "<p>")).unwrap_err(),
            "serializer for text/html doesn't exist"
        );
    }

    #[test]
    fn names_are_written_as_go_writes_them() {
        assert_eq!(go_duration(Duration::from_secs(10)), "10s");
        assert_eq!(go_duration(Duration::from_secs(90)), "1m30s");
        assert_eq!(gvk("stable.example.com/v1", "CronTab"), "stable.example.com/v1, Kind=CronTab");
        assert_eq!(gvk_of(&serde_json::json!({})), "/, Kind=");
        assert_eq!(split_host_port("[::1]:8443"), ("[::1]", 8443));
        assert_eq!(split_host_port("example.com"), ("example.com", 443));
        let presented = ["DnsName(\"a.svc\")".to_owned(), "IpAddress(127.0.0.1)".to_owned()];
        assert_eq!(
            hostname_error("b.svc", &presented),
            "x509: certificate is valid for a.svc, not b.svc"
        );
        assert_eq!(
            hostname_error("10.0.0.1", &presented),
            "x509: certificate is valid for 127.0.0.1, not 10.0.0.1"
        );
        assert_eq!(
            hostname_error("10.0.0.1", &presented[..1]),
            "x509: cannot validate certificate for 10.0.0.1 because it doesn't contain any IP SANs"
        );
    }
}
