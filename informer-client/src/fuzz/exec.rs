//! `exec_credential`: the reading of an exec credential plugin's output
//! ([`parse_credential`]: an `ExecCredential` of `client.authentication.k8s.io/v1` or
//! `v1beta1`), on credentials as plugins print them (a token, a client certificate and key, or
//! both, with or without an expiry) mutated, re-laid out, or replaced by random bytes.
//!
//! Properties:
//! - an output that is exactly the JSON of a value is accepted exactly when client-go accepts
//!   it: an object that Go's `encoding/json` reads into an `ExecCredential` (each field read
//!   here a string or `null`, which Go reads as empty), of kind `ExecCredential` and the
//!   configured `apiVersion`, with a `status` that holds a token or both a certificate and a
//!   key, and an expiry that is empty or an RFC 3339 time; the credential then holds that
//!   token, certificate, key and expiry;
//! - any other output is an error that names the plugin's command, and no error ever quotes
//!   the token or the key.

use std::time::{Duration, SystemTime};

use fastrand::Rng;
use informer_fuzz::json::{self, Layout};
use informer_fuzz::{Unstructured, arbitrary, bytes};
use secrecy::ExposeSecret;
use serde_json::{Map, Value, json};

use crate::ExecConfig;
use crate::parsers::{EXEC_API_VERSIONS, parse_credential};

/// What an error may quote of an output, as written.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Quoted {
    kind: Option<String>,
    api_version: Option<String>,
    status: Option<QuotedStatus>,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct QuotedStatus {
    expiration_timestamp: Option<String>,
}

const COMMAND: &str = "fuzz-credential-plugin";

/// Strings no input holds by chance: an error that quotes one quotes a secret.
const TOKEN: &str = "tkn-4f1b9e0c7d2a";
const KEY: &str = "-----BEGIN PRIVATE KEY-----\nkey-8c3e5a1f6b9d\n-----END PRIVATE KEY-----\n";
const CERT: &str = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----\n";

/// Expiry times, written as plugins write them, and when they are in milliseconds since 1970
/// (`None`: not an RFC 3339 time, which client-go refuses).
const TIMES: &[(&str, Option<u64>)] = &[
    ("2030-01-01T00:00:00Z", Some(1_893_456_000_000)),
    ("2030-01-01T01:00:00+01:00", Some(1_893_456_000_000)),
    ("2030-01-01T00:00:00.5Z", Some(1_893_456_000_500)),
    ("1970-01-01T00:00:00Z", Some(0)),
    ("", None),
    ("tomorrow", None),
    ("2030-13-01T00:00:00Z", None),
];

fn seeds(api_version: &str) -> Vec<Value> {
    let time = TIMES[0].0;
    vec![
        json!({"apiVersion": api_version, "kind": "ExecCredential",
            "status": {"token": TOKEN, "expirationTimestamp": time}}),
        json!({"apiVersion": api_version, "kind": "ExecCredential", "spec": {"interactive": false},
            "status": {"token": TOKEN}}),
        json!({"apiVersion": api_version, "kind": "ExecCredential",
            "status": {"clientCertificateData": CERT, "clientKeyData": KEY, "expirationTimestamp": time}}),
        json!({"apiVersion": api_version, "kind": "ExecCredential",
            "status": {"token": TOKEN, "clientCertificateData": CERT, "clientKeyData": KEY}}),
    ]
}

/// An output, and whether it is exactly the JSON of a value (no repeated member, no byte
/// changed), which the reference below can read.
fn output(
    u: &mut Unstructured<'_>,
    rng: &mut Rng,
    api_version: &str,
) -> arbitrary::Result<(Vec<u8>, bool)> {
    let mode = u.int_in_range(0..=4)?;
    if mode == 0 {
        return Ok((u.bytes(u.len())?.to_vec(), false));
    }
    let seeds = seeds(api_version);
    let mut value = seeds[rng.usize(0..seeds.len())].clone();
    if let Some(status) = value.get_mut("status").and_then(Value::as_object_mut)
        && status.contains_key("expirationTimestamp")
    {
        let (time, _) = TIMES[rng.usize(0..TIMES.len())];
        status.insert("expirationTimestamp".to_owned(), Value::from(time));
    }
    if mode >= 2 {
        let ops = rng.usize(1..=4);
        json::mutate(rng, &mut value, &seeds, ops);
    }
    let duplicates = mode >= 3 && rng.bool();
    let mut out = Vec::new();
    json::write(rng, &value, Layout { newlines: true, duplicates, reorder: true }, &mut out);
    if mode == 4 {
        let raw: Vec<Vec<u8>> = seeds.iter().map(|s| s.to_string().into_bytes()).collect();
        let raw: Vec<&[u8]> = raw.iter().map(Vec::as_slice).collect();
        let ops = rng.usize(1..=4);
        bytes::mutate(rng, &mut out, &raw, bytes::JSON_TOKENS, ops);
        return Ok((out, false));
    }
    Ok((out, !duplicates))
}

/// What client-go takes from an output: the token, the certificate and key, and the expiry (in
/// seconds since 1970, when it is one of [`TIMES`]); `None` when it refuses the output.
type Expected = (Option<String>, Option<(String, String)>, Option<String>);

/// A string field as Go reads it (absent or `null`: empty); `None` if it is not a string.
fn go_string(object: &Map<String, Value>, key: &str) -> Option<String> {
    match object.get(key) {
        None | Some(Value::Null) => Some(String::new()),
        Some(Value::String(text)) => Some(text.clone()),
        Some(_) => None,
    }
}

fn reference(value: &Value, api_version: &str) -> Option<Expected> {
    let object = value.as_object()?;
    let kind = go_string(object, "kind")?;
    let version = go_string(object, "apiVersion")?;
    let status = match object.get("status") {
        None | Some(Value::Null) => None,
        Some(Value::Object(status)) => Some(status),
        Some(_) => return None,
    };
    let status = status.map(|status| {
        Some((
            go_string(status, "token")?,
            go_string(status, "clientCertificateData")?,
            go_string(status, "clientKeyData")?,
            go_string(status, "expirationTimestamp")?,
        ))
    });
    let (token, cert, key, expiry) = status??;
    if kind != "ExecCredential" || version != api_version {
        return None;
    }
    let identity = match (cert.is_empty(), key.is_empty()) {
        (false, false) => Some((cert, key)),
        (true, true) => None,
        _ => return None,
    };
    let token = (!token.is_empty()).then_some(token);
    if token.is_none() && identity.is_none() {
        return None;
    }
    let expiry = (!expiry.is_empty()).then_some(expiry);
    Some((token, identity, expiry))
}

pub(super) fn property(u: &mut Unstructured<'_>) -> arbitrary::Result<()> {
    let mut rng = Rng::with_seed(u.arbitrary()?);
    let api_version = EXEC_API_VERSIONS[rng.usize(0..EXEC_API_VERSIONS.len())];
    let (output, exact) = output(u, &mut rng, api_version)?;
    informer_fuzz::note("exec-credential.json", &output);
    check(api_version, &output, exact);
    Ok(())
}

/// The properties, for one output of a plugin configured for `api_version`.
pub(super) fn check(api_version: &str, output: &[u8], exact: bool) {
    let config = ExecConfig::new(api_version, COMMAND);
    let parsed = parse_credential(&config, output);
    // A value's JSON that `Value` cannot read was cut off (past 4 MiB), or nests deeper than its
    // limit of 128 (Go's is 10,000, and members not read here are skipped at any depth): no
    // claim then.
    let value = serde_json::from_slice::<Value>(output).ok();
    let expected = value.as_ref().filter(|_| exact).map(|v| reference(v, api_version));
    match parsed {
        Ok(credential) => {
            let token = credential.token.as_ref().map(|t| t.expose_secret().to_owned());
            let identity = credential.identity.as_ref().map(|i| {
                (
                    String::from_utf8_lossy(&i.cert_pem).into_owned(),
                    i.key_pem.expose_secret().to_owned(),
                )
            });
            let Some(expected) = expected else { return };
            let (expected_token, expected_identity, expiry) = expected
                .unwrap_or_else(|| panic!("client-go refuses this output, which was accepted"));
            assert!(token == expected_token, "another token than the output's");
            assert!(identity == expected_identity, "another certificate or key than the output's");
            // An expiry the mutations made up is not checked: only that it was read.
            let known = expiry.as_deref().map(|text| TIMES.iter().find(|(t, _)| *t == text));
            match known {
                None => assert_eq!(credential.expires, None, "an expiry the output does not have"),
                Some(None) => assert!(credential.expires.is_some(), "the expiry was dropped"),
                Some(Some((text, millis))) => {
                    let millis =
                        millis.unwrap_or_else(|| panic!("the expiry {text:?} was accepted"));
                    let expires = SystemTime::UNIX_EPOCH + Duration::from_millis(millis);
                    assert_eq!(credential.expires, Some(expires), "another expiry than {text:?}");
                }
            }
        }
        Err(error) => {
            let mut message = error.to_string();
            assert!(message.contains(COMMAND), "the error does not name the plugin: {message}");
            // The kind, apiVersion and expiry are quoted as written: if mutations moved a
            // secret there, it is not the token or key any more.
            // Read as the code under test reads them (a `Value` refuses what that skips:
            // members nested past 128).
            if let Ok(quoted) = serde_json::from_slice::<Quoted>(output) {
                let expiry = quoted.status.and_then(|s| s.expiration_timestamp);
                for text in [quoted.kind, quoted.api_version, expiry].into_iter().flatten() {
                    if !text.is_empty() {
                        message = message.replace(&text, "");
                    }
                }
            }
            assert!(!message.contains(TOKEN), "the error quotes the token: {error}");
            assert!(!message.contains("key-8c3e5a1f6b9d"), "the error quotes the key: {error}");
            if let Some(Some((_, _, expiry))) = &expected {
                // Refused only for an expiry that is not RFC 3339.
                let refusable = expiry.as_deref().is_some_and(|time| {
                    let known = TIMES.iter().find(|(t, _)| *t == time);
                    known.is_none_or(|(_, millis)| millis.is_none())
                });
                assert!(refusable, "client-go takes this output, which was refused: {error}");
            }
        }
    }
}
