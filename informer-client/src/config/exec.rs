//! Running a client-go credential plugin once: its `KUBERNETES_EXEC_INFO`, the process
//! (bounded in time and output, killed and reaped when it overruns), the validation of the
//! `ExecCredential` it prints, and the excerpt of its stderr that goes into errors, with what
//! looks like a credential masked ([`stderr_excerpt`]).
//!
//! Where it sits: below `auth`, which decides when to run the plugin (single flight, expiry,
//! 401s) and caches what it returned.

use std::fmt::Write as _;
use std::process::Stdio;
use std::time::{Duration, SystemTime};

use base64::Engine as _;
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use tokio::io::AsyncReadExt as _;

use super::{Config, ConfigError, ExecConfig, Identity};
use crate::error::JsonObject;

/// How many characters of a failed plugin's stderr go into the error.
const STDERR_LIMIT: usize = 1024;
/// The most of a plugin's stderr that is kept while the rest is read and dropped: room for
/// [`STDERR_LIMIT`] characters of any width.
const STDERR_KEPT: usize = 4 * STDERR_LIMIT;
/// The most of a plugin's stdout that is read: an `ExecCredential` with a token is a few
/// hundred bytes, one with a client certificate chain a few KiB. More is an error.
const STDOUT_LIMIT: usize = 1024 * 1024;
/// How long a killed plugin may take to exit before it is left to be reaped in the background.
const REAP_GRACE: Duration = Duration::from_secs(5);

/// The `KUBERNETES_EXEC_INFO` JSON: a non-interactive `ExecCredential` request, with the
/// cluster's connection settings when the plugin asks for them.
pub(crate) fn exec_info(exec: &ExecConfig, config: &Config) -> String {
    let mut spec = serde_json::Map::new();
    spec.insert("interactive".to_owned(), false.into());
    if exec.provide_cluster_info {
        let mut cluster = serde_json::Map::new();
        let server = config.cluster_url.as_str();
        let server =
            if config.cluster_url.path() == "/" { server.trim_end_matches('/') } else { server };
        cluster.insert("server".to_owned(), server.into());
        if let Some(name) = &config.tls_server_name {
            cluster.insert("tls-server-name".to_owned(), name.as_str().into());
        }
        cluster.insert("insecure-skip-tls-verify".to_owned(), config.accept_invalid_certs.into());
        if let Some(pem) = &config.root_certs_pem {
            cluster.insert(
                "certificate-authority-data".to_owned(),
                base64::engine::general_purpose::STANDARD.encode(pem).into(),
            );
        }
        if let Some(proxy) = &config.proxy_url {
            cluster.insert("proxy-url".to_owned(), proxy.as_str().into());
        }
        if let Some(extension) = &exec.cluster_config {
            cluster.insert("config".to_owned(), extension.clone());
        }
        spec.insert("cluster".to_owned(), cluster.into());
    }
    serde_json::json!({ "apiVersion": exec.api_version, "kind": "ExecCredential", "spec": spec })
        .to_string()
}

/// An `ExecCredential` as a plugin prints it.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ExecCredential {
    api_version: Option<String>,
    kind: Option<String>,
    status: Option<JsonObject<ExecCredentialStatus>>,
}

/// `ExecCredential.status`. `Debug` redacts the token and the key.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ExecCredentialStatus {
    #[serde(default, deserialize_with = "secret")]
    token: Option<SecretString>,
    client_certificate_data: Option<String>,
    #[serde(default, deserialize_with = "secret")]
    client_key_data: Option<SecretString>,
    expiration_timestamp: Option<String>,
}

impl std::fmt::Debug for ExecCredentialStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExecCredentialStatus")
            .field("token", &self.token.as_ref().map(|_| "[REDACTED]"))
            .field(
                "client_certificate_data",
                &self.client_certificate_data.as_ref().map(|pem| format!("{} bytes", pem.len())),
            )
            .field("client_key_data", &self.client_key_data.as_ref().map(|_| "[REDACTED]"))
            .field("expiration_timestamp", &self.expiration_timestamp)
            .finish()
    }
}

fn secret<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<SecretString>, D::Error> {
    Ok(Option::<String>::deserialize(deserializer)?.map(SecretString::from))
}

/// A validated plugin result.
pub(crate) struct PluginCredential {
    pub(crate) token: Option<SecretString>,
    pub(crate) identity: Option<Identity>,
    pub(crate) expires: Option<SystemTime>,
}

/// Why reading a plugin's output stopped short.
enum Failure {
    /// More than [`STDOUT_LIMIT`] on stdout.
    TooMuchOutput,
    Io(std::io::Error),
}

/// Run the plugin once, for at most `timeout`, and validate what it prints.
///
/// stdout (up to [`STDOUT_LIMIT`]) and stderr (drained, keeping its start) are read while
/// the plugin runs, so it never blocks on a full pipe. A plugin that runs too long or prints
/// too much is killed and reaped.
pub(crate) async fn run_plugin(
    config: &ExecConfig,
    exec_info: &str,
    timeout: Duration,
) -> Result<PluginCredential, ConfigError> {
    let error = |reason: String| ConfigError::Exec { command: config.command.clone(), reason };
    let mut command = tokio::process::Command::new(&config.command);
    command
        .args(&config.args)
        .envs(config.env.iter().map(|(name, value)| (name, value)))
        .env("KUBERNETES_EXEC_INFO", exec_info)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // A run that is abandoned (its task dropped when the runtime shuts down) kills it.
        .kill_on_drop(true);
    if let Some(dir) = &config.working_dir {
        if !dir.is_dir() {
            return Err(error(format!("working directory {} does not exist", dir.display())));
        }
        command.current_dir(dir);
    }
    tracing::debug!(command = %config.command, "running exec credential plugin");
    let mut child = command.spawn().map_err(|err| {
        if err.kind() == std::io::ErrorKind::NotFound {
            ConfigError::ExecNotFound {
                command: config.command.clone(),
                install_hint: config.install_hint.clone(),
            }
        } else {
            error(format!("cannot run it: {err}"))
        }
    })?;
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        kill(&mut child, &config.command).await;
        return Err(error("its output pipes could not be opened".to_owned()));
    };
    let mut kept_stderr = Vec::new();
    let run = async {
        let wait = async { child.wait().await.map_err(Failure::Io) };
        let (stdout, (), status) =
            tokio::try_join!(read_stdout(stdout), drain_stderr(stderr, &mut kept_stderr), wait)?;
        Ok::<_, Failure>((stdout, status))
    };
    let outcome = tokio::time::timeout(timeout, run).await;
    let reason = match outcome {
        Ok(Ok((stdout, status))) if status.success() => return parse_credential(config, &stdout),
        Ok(Ok((_, status))) => {
            return Err(error(format!(
                "failed ({status}); stderr: {}",
                stderr_excerpt(&kept_stderr)
            )));
        }
        Ok(Err(Failure::TooMuchOutput)) => format!(
            "it printed more than {STDOUT_LIMIT} bytes (1 MiB) to stdout, more than any credential, and was killed"
        ),
        Ok(Err(Failure::Io(err))) => format!("cannot read its output ({err}); it was killed"),
        Err(_) => format!(
            "it did not finish within {timeout:?} and was killed (Config::exec_timeout sets the limit); stderr so far: {}",
            stderr_excerpt(&kept_stderr)
        ),
    };
    kill(&mut child, &config.command).await;
    Err(error(reason))
}

/// [`run_plugin`] for callers that cannot await, on a thread and a runtime of its own: that
/// works inside a runtime too, where `block_on` would panic.
pub(crate) fn run_plugin_blocking(
    config: &ExecConfig,
    exec_info: &str,
    timeout: Duration,
) -> Result<PluginCredential, ConfigError> {
    let error = |reason: String| ConfigError::Exec { command: config.command.clone(), reason };
    std::thread::scope(|scope| {
        let thread = std::thread::Builder::new()
            .name("exec-credential-plugin".to_owned())
            .spawn_scoped(scope, || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|err| error(format!("cannot start a runtime to run it: {err}")))?;
                runtime.block_on(run_plugin(config, exec_info, timeout))
            })
            .map_err(|err| error(format!("cannot start a thread to run it: {err}")))?;
        thread.join().unwrap_or_else(|_| Err(error("the thread running it panicked".to_owned())))
    })
}

/// stdout, up to [`STDOUT_LIMIT`].
async fn read_stdout(stdout: tokio::process::ChildStdout) -> Result<Vec<u8>, Failure> {
    let mut output = Vec::new();
    // One byte past the limit tells a full credential from too much output.
    stdout.take(STDOUT_LIMIT as u64 + 1).read_to_end(&mut output).await.map_err(Failure::Io)?;
    if output.len() > STDOUT_LIMIT {
        return Err(Failure::TooMuchOutput);
    }
    Ok(output)
}

/// Read stderr to its end, keeping the first [`STDERR_KEPT`] bytes in `kept`.
async fn drain_stderr(
    mut stderr: tokio::process::ChildStderr,
    kept: &mut Vec<u8>,
) -> Result<(), Failure> {
    let mut chunk = vec![0; 8192];
    loop {
        let read = stderr.read(&mut chunk).await.map_err(Failure::Io)?;
        if read == 0 {
            return Ok(());
        }
        let room = STDERR_KEPT.saturating_sub(kept.len());
        kept.extend_from_slice(&chunk[..read.min(room)]);
    }
}

/// Kill the plugin and reap it, so that no zombie is left behind. The wait is bounded: a
/// process stuck in the kernel outlives even SIGKILL for a while, and is then left to tokio,
/// which reaps it later.
async fn kill(child: &mut tokio::process::Child, command: &str) {
    if let Err(err) = child.start_kill() {
        tracing::debug!(command, error = %err, "cannot kill the exec credential plugin");
    }
    match tokio::time::timeout(REAP_GRACE, child.wait()).await {
        Ok(Ok(_)) => {}
        Ok(Err(err)) => {
            tracing::warn!(command, error = %err, "cannot reap the killed exec credential plugin");
        }
        Err(_) => {
            tracing::warn!(command, grace = ?REAP_GRACE, "the killed exec credential plugin has not exited yet");
        }
    }
}

/// The start of a plugin's stderr, for an error message, with what looks like a credential
/// masked.
///
/// client-go passes a plugin's stderr through to its own; here it goes into the error, where
/// it says why the plugin failed ("the refresh token has expired"), but plugins also print
/// what they hold: a token in a debug line, a secret in a dump of a failed request, a key.
/// The rule, line by line:
///
/// - at most [`STDERR_LINES`] lines and [`STDERR_LIMIT`] characters are kept;
/// - a PEM block (`-----BEGIN PRIVATE KEY-----` to its `-----END` line) becomes
///   `[REDACTED PRIVATE KEY]`;
/// - the value after a name that ends in a credential's name (`token`, `secret`,
///   `password`, `key`, `authorization`, `cookie`... as in `client_secret=...`,
///   `"access_token":"..."`, `password: ...`, but not a number of up to 3 digits, an HTTP
///   status in prose: `token: 400 Bad Request`) becomes `[REDACTED]`, and so does the word
///   after the `Bearer` or `Basic` scheme;
/// - any word of [`OPAQUE_WORD`] characters or more of the alphabets of tokens (base64,
///   base64url, hex, JWTs: letters, digits, `+/=_-.`) that holds a digit becomes `[REDACTED]`:
///   credentials are long and random, while words, paths and host names are rarely both.
pub(crate) fn stderr_excerpt(stderr: &[u8]) -> String {
    // A word cut where the kept bytes end could be a credential too short to look like one.
    let stderr = if stderr.len() >= STDERR_KEPT {
        let end = stderr.iter().rposition(u8::is_ascii_whitespace).unwrap_or(0);
        &stderr[..end]
    } else {
        stderr
    };
    let text = String::from_utf8_lossy(stderr);
    let lines: Vec<&str> = text.trim().lines().collect();
    let mut kept = Vec::new();
    let mut in_pem = false;
    for line in &lines {
        let trimmed = line.trim();
        if in_pem {
            in_pem = !trimmed.starts_with("-----END");
            continue;
        }
        if let Some(label) = trimmed.strip_prefix("-----BEGIN ") {
            kept.push(format!("[REDACTED {}]", label.trim_end_matches('-').trim()));
            in_pem = true;
        } else {
            kept.push(redact_line(line));
        }
    }
    let omitted = kept.len().saturating_sub(STDERR_LINES);
    kept.truncate(STDERR_LINES);
    let mut text = kept.join("\n");
    if let Some((end, _)) = text.char_indices().nth(STDERR_LIMIT) {
        text.truncate(end);
        text.push_str("...");
    } else if omitted > 0 {
        let _ = write!(text, "\n... ({omitted} more lines)");
    }
    if text.trim().is_empty() { "(empty)".to_owned() } else { text }
}

/// How many lines of a plugin's stderr go into an error.
const STDERR_LINES: usize = 20;

/// The shortest word of a token alphabet that is masked when it holds a digit.
const OPAQUE_WORD: usize = 20;

/// Names whose values are credentials, matched at the end of a lower-cased name.
const SECRET_NAMES: [&str; 12] = [
    "token",
    "secret",
    "password",
    "passwd",
    "pwd",
    "key",
    "credential",
    "credentials",
    "authorization",
    "cookie",
    "session",
    "signature",
];

/// One line of stderr with its credentials masked; see [`stderr_excerpt`].
fn redact_line(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    // The next word is a value of a credential's name, or follows an authorization scheme.
    let mut secret_next = false;
    for (i, word) in line.split(' ').enumerate() {
        if i > 0 {
            out.push(' ');
        }
        let bare = word.trim_matches(|c: char| !c.is_alphanumeric());
        let scheme = bare.eq_ignore_ascii_case("bearer") || bare.eq_ignore_ascii_case("basic");
        // A status code after `token:` in prose ("cannot fetch token: 400 Bad Request").
        let status_code = word.len() <= 3 && word.bytes().all(|b| b.is_ascii_digit());
        if secret_next && !word.is_empty() && !scheme {
            out.push_str(if status_code { word } else { "[REDACTED]" });
            secret_next = false;
            continue;
        }
        if scheme {
            out.push_str(word);
            secret_next = true;
            continue;
        }
        // `a=1&client_secret=x`, `{"error":"e","access_token":"x"}`: each field on its own.
        for piece in word.split_inclusive(FIELD_DELIMITERS) {
            let (field, delimiter) = match piece.char_indices().last() {
                Some((at, c)) if FIELD_DELIMITERS.contains(&c) => piece.split_at(at),
                _ => (piece, ""),
            };
            out.push_str(&redact_field(field, &mut secret_next));
            out.push_str(delimiter);
        }
    }
    out
}

/// What separates the fields of a word: JSON objects, query strings, cookies.
const FIELD_DELIMITERS: [char; 5] = [',', '{', '}', '&', ';'];

/// One `name=value` or `name:value` field with a credential's value masked; sets
/// `secret_next` when the value is the next word (`password: hunter2`).
fn redact_field(field: &str, secret_next: &mut bool) -> String {
    match field.find(['=', ':']) {
        Some(at) if names_a_secret(&field[..at]) => {
            let value = field[at + 1..].trim_start_matches(['=', ':']);
            let separators = &field[at..field.len() - value.len()];
            let mut out = format!("{}{separators}", &field[..at]);
            if value.trim_matches(|c: char| !c.is_alphanumeric()).is_empty() {
                out.push_str(value);
                *secret_next = true;
            } else {
                out.push_str("[REDACTED]");
            }
            out
        }
        _ => mask_opaque(field),
    }
}

/// Whether `name` (as in `name=value`) names a credential.
fn names_a_secret(name: &str) -> bool {
    let name = name.trim_matches(|c: char| !c.is_alphanumeric()).to_ascii_lowercase();
    !name.is_empty() && SECRET_NAMES.iter().any(|secret| name.ends_with(secret))
}

/// `word` with its long, random-looking runs of token characters masked.
fn mask_opaque(word: &str) -> String {
    let token_char = |c: char| c.is_ascii_alphanumeric() || "+/=_-.".contains(c);
    let mut out = String::with_capacity(word.len());
    let mut run = String::new();
    let flush = |run: &mut String, out: &mut String| {
        if run.chars().count() >= OPAQUE_WORD && run.chars().any(|c| c.is_ascii_digit()) {
            out.push_str("[REDACTED]");
        } else {
            out.push_str(run);
        }
        run.clear();
    };
    for c in word.chars() {
        if token_char(c) {
            run.push(c);
        } else {
            flush(&mut run, &mut out);
            out.push(c);
        }
    }
    flush(&mut run, &mut out);
    out
}

/// Check a plugin's stdout the way client-go does. Errors never quote the output: it holds the
/// credential.
pub(crate) fn parse_credential(
    config: &ExecConfig,
    stdout: &[u8],
) -> Result<PluginCredential, ConfigError> {
    let error = |reason: String| ConfigError::Exec { command: config.command.clone(), reason };
    // Only objects, as Go reads them: serde's derive also reads a struct from an array of its
    // fields in order, which client-go refuses.
    let JsonObject(credential) = serde_json::from_slice::<JsonObject<ExecCredential>>(stdout)
        .map_err(|err| {
            let what = if err.is_data() {
                "does not have the shape of an ExecCredential"
            } else {
                "is not JSON"
            };
            error(format!("its output {what} (line {}, column {})", err.line(), err.column()))
        })?;
    if credential.kind.as_deref() != Some("ExecCredential") {
        return Err(error(format!(
            "its output has kind `{}`, not ExecCredential",
            credential.kind.unwrap_or_default()
        )));
    }
    if credential.api_version.as_deref() != Some(config.api_version.as_str()) {
        return Err(error(format!(
            "it returned apiVersion `{}`, but `{}` is configured",
            credential.api_version.unwrap_or_default(),
            config.api_version
        )));
    }
    let JsonObject(status) =
        credential.status.ok_or_else(|| error("its output has no status".to_owned()))?;
    let token = status.token.filter(|token| !token.expose_secret().is_empty());
    let cert = status.client_certificate_data.filter(|cert| !cert.is_empty());
    let key = status.client_key_data.filter(|key| !key.expose_secret().is_empty());
    let identity = match (cert, key) {
        (Some(cert), Some(key)) => Some(Identity { cert_pem: cert.into_bytes(), key_pem: key }),
        (None, None) => None,
        _ => {
            return Err(error(
                "it returned only one of status.clientCertificateData and status.clientKeyData"
                    .to_owned(),
            ));
        }
    };
    if token.is_none() && identity.is_none() {
        return Err(error(
            "it returned neither status.token nor a client certificate and key".to_owned(),
        ));
    }
    let expires = match status.expiration_timestamp.as_deref().filter(|at| !at.is_empty()) {
        Some(at) => {
            let at: jiff::Timestamp = at.parse().map_err(|err| {
                error(format!("status.expirationTimestamp `{at}` is not an RFC 3339 time: {err}"))
            })?;
            Some(SystemTime::from(at))
        }
        None => None,
    };
    Ok(PluginCredential { token, identity, expires })
}

#[cfg(test)]
mod tests {
    use super::*;

    const V1: &str = "client.authentication.k8s.io/v1";

    #[test]
    fn credential_output_is_validated() {
        let config = ExecConfig::new(V1, "plugin");
        let check = |json: &str| {
            parse_credential(&config, json.as_bytes())
                .err()
                .map(|err| err.to_string())
                .unwrap_or_default()
        };
        let v1 = r#""apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential""#;
        assert!(check(&format!("{{{v1}}}")).contains("no status"));
        assert!(check(&format!(r#"{{{v1},"status":{{}}}}"#)).contains("neither status.token nor"));
        assert!(
            check(&format!(r#"{{{v1},"status":{{"clientCertificateData":"c"}}}}"#))
                .contains("only one of")
        );
        let bad_time = check(&format!(
            r#"{{{v1},"status":{{"token":"tkn-secret","expirationTimestamp":"tomorrow"}}}}"#
        ));
        assert!(bad_time.contains("`tomorrow` is not an RFC 3339 time"), "{bad_time}");
        assert!(!bad_time.contains("tkn-secret"), "{bad_time}");
        let bad_shape = check(&format!(r#"{{{v1},"status":{{"token":12345678}}}}"#));
        assert!(bad_shape.contains("does not have the shape of an ExecCredential"), "{bad_shape}");
        assert!(!bad_shape.contains("12345678"), "{bad_shape}");
        assert!(check(r#"{"apiVersion":"client.authentication.k8s.io/v1","kind":"Pod","status":{"token":"t"}}"#).contains("kind `Pod`"));
    }

    /// serde's derive reads a struct from an array of its fields in order; client-go (Go's
    /// `encoding/json`) reads an `ExecCredential` and its status only from objects.
    #[test]
    fn an_array_of_fields_is_no_credential() {
        let config = ExecConfig::new(V1, "plugin");
        let refused = |json: &str| match parse_credential(&config, json.as_bytes()) {
            Ok(_) => panic!("accepted {json}, which client-go refuses"),
            Err(err) => err.to_string(),
        };
        let whole =
            refused(r#"["client.authentication.k8s.io/v1","ExecCredential",{"token":"t"}]"#);
        assert!(whole.contains("does not have the shape of an ExecCredential"), "{whole}");
        let status = refused(&format!(
            r#"{{"apiVersion":"{V1}","kind":"ExecCredential","status":["tkn-secret"]}}"#
        ));
        assert!(status.contains("does not have the shape of an ExecCredential"), "{status}");
        assert!(!status.contains("tkn-secret"), "{status}");
    }

    #[test]
    fn stderr_keeps_words_and_masks_credentials() {
        let redacted = |text: &str| stderr_excerpt(text.as_bytes());
        assert_eq!(
            redacted("error: oauth2: cannot fetch token: 400 Bad Request"),
            "error: oauth2: cannot fetch token: 400 Bad Request"
        );
        assert_eq!(
            redacted(r#"Response: {"error":"invalid_grant","access_token":"abc","id_token": "x"}"#),
            r#"Response: {"error":"invalid_grant","access_token":[REDACTED],"id_token": [REDACTED]"#
        );
        assert_eq!(
            redacted("using key=AKIA123 for /var/run/x.crt"),
            "using key=[REDACTED] for /var/run/x.crt"
        );
        assert_eq!(
            redacted("Authorization: Basic YWRtaW46cHc="),
            "Authorization: Basic [REDACTED]"
        );
        assert_eq!(
            redacted("cached 0123456789abcdef0123456789abcdef at https://login.example.com/tenant"),
            "cached [REDACTED] at https://login.example.com/tenant"
        );
        let many = (1..=30).map(|i| format!("line {i}")).collect::<Vec<_>>().join("\n");
        let excerpt = redacted(&many);
        assert!(excerpt.starts_with("line 1\n") && excerpt.contains("line 20\n"), "{excerpt}");
        assert!(
            excerpt.ends_with("... (10 more lines)") && !excerpt.contains("line 21"),
            "{excerpt}"
        );
    }

    #[test]
    fn a_word_cut_by_the_stderr_bound_is_dropped() {
        let mut stderr = "x ".repeat(STDERR_KEPT / 2 - 8).into_bytes();
        stderr.extend_from_slice(b"0123456789abcdef0123");
        stderr.truncate(STDERR_KEPT);
        assert!(!stderr_excerpt(&stderr).contains("0123"));
    }

    #[test]
    fn long_stderr_is_truncated() {
        let excerpt = stderr_excerpt("é".repeat(STDERR_LIMIT + 10).as_bytes());
        assert_eq!(excerpt.chars().count(), STDERR_LIMIT + 3);
        assert_eq!(stderr_excerpt(b"  \n"), "(empty)");
    }

    #[test]
    fn exec_credential_status_debug_is_redacted() {
        let status: ExecCredentialStatus =
            serde_json::from_str(r#"{"token":"tkn-secret","clientKeyData":"key-secret"}"#).unwrap();
        let debug = format!("{status:?}");
        assert!(!debug.contains("tkn-secret") && !debug.contains("key-secret"), "{debug}");
    }
}
