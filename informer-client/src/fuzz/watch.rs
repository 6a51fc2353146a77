//! `watch_decoder`: the watch-stream decoder ([`WatchDecoder`]) on recorded watch streams, laid
//! out anew, mutated, or replaced by random bytes.
//!
//! Properties:
//! - any input, cut into random chunks, gives the same events and errors (messages, line
//!   numbers, byte offsets) as fed whole, and the same end;
//! - a valid stream (recorded events of pods, or of a custom resource, re-laid out: member
//!   order, whitespace, escapes, `\r\n`, blank lines) decodes without an error, each event as
//!   `serde_json` reads its line (the object without `metadata.managedFields`);
//! - each line decodes to the same event whether or not it is in the API server's layout (the
//!   fast path that reads the object in one pass) — except the one difference that path
//!   documents, an object that repeats `kind` or `apiVersion`.

use std::sync::{Arc, OnceLock};

use fastrand::Rng;
use informer_fuzz::json::{self, Layout};
use informer_fuzz::{Unstructured, arbitrary, bytes, chunk_ends};
use k8s_openapi::api::core::v1::Pod;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::list_watch::watch_decode::{Decoded, WatchDecoder};
use crate::test_objects::FooBar;
use informer_runtime::listwatch::{Bookmark, Error, Status, WatchEvent};
use informer_runtime::resource::Resource;

/// What one line of a stream decoded to, comparable.
#[derive(Debug, PartialEq)]
pub(super) enum Seen<K> {
    Added(Arc<K>),
    Modified(Arc<K>),
    Deleted(Arc<K>),
    Bookmark(Bookmark),
    Error(Status),
    /// An error, by its message.
    Failed(String),
}

impl<K> From<Result<WatchEvent<K>, Error>> for Seen<K> {
    fn from(event: Result<WatchEvent<K>, Error>) -> Self {
        match event {
            Ok(WatchEvent::Added(object)) => Self::Added(object),
            Ok(WatchEvent::Modified(object)) => Self::Modified(object),
            Ok(WatchEvent::Deleted(object)) => Self::Deleted(object),
            Ok(WatchEvent::Bookmark(bookmark)) => Self::Bookmark(bookmark),
            Ok(WatchEvent::Error(status)) => Self::Error(status),
            Err(error) => Self::Failed(error.to_string()),
        }
    }
}

/// `seen` in a few words: the event and its object's key and version, or the error.
fn brief<K: Resource>(seen: &Seen<K>) -> String {
    let object = |o: &K| {
        format!(
            "{}@{}",
            informer_runtime::ObjectKey::of(o),
            informer_runtime::resource::resource_version(o)
        )
    };
    match seen {
        Seen::Added(o) => format!("Added({})", object(o)),
        Seen::Modified(o) => format!("Modified({})", object(o)),
        Seen::Deleted(o) => format!("Deleted({})", object(o)),
        Seen::Bookmark(b) => format!("{b:?}"),
        Seen::Error(s) => format!("Error({s})"),
        Seen::Failed(message) => format!("Failed({message})"),
    }
}

/// The events of `body` fed in chunks ending at `ends`, and how the stream ended.
pub(super) fn decode<K: Resource>(body: &[u8], ends: &[usize]) -> (Vec<Seen<K>>, Option<String>) {
    let mut decoder = WatchDecoder::<K>::new(Arc::new(crate::request::Target::of::<K>()), false);
    let mut out = Decoded::new();
    let mut start = 0;
    for &end in ends {
        decoder.feed(&body[start..end], &mut out);
        start = end;
    }
    let end = decoder.finish().err().map(|e| e.to_string());
    (out.into_iter().map(Seen::from).collect(), end)
}

struct Seeds {
    /// Pod events: recorded streams, plus the kinds of line they lack.
    pods: Vec<Value>,
    /// A custom resource's events.
    foobars: Vec<Value>,
    /// The recorded streams as bytes, to splice from.
    raw: Vec<Vec<u8>>,
}

fn seeds() -> &'static Seeds {
    static SEEDS: OnceLock<Seeds> = OnceLock::new();
    SEEDS.get_or_init(|| {
        let raw = [
            "kind-v1-36-watch-pods-rv0-bookmarks.events.jsonl",
            "kind-v1-36-watch-pods.events.jsonl",
            "kind-v1-36-foobar-watch.events.jsonl",
        ]
        .map(super::recorded)
        .to_vec();
        let lines = |body: &[u8]| -> Vec<Value> {
            body.split(|&b| b == b'\n')
                .filter(|line| !line.trim_ascii().is_empty())
                .map(|line| serde_json::from_slice(line).unwrap())
                .collect()
        };
        let mut pods = lines(&raw[0]);
        pods.extend(lines(&raw[1]));
        pods.push(
            serde_json::json!({"type": "ERROR", "object": {"kind": "Status", "apiVersion": "v1",
            "metadata": {}, "status": "Failure", "message": "too old resource version: 5 (10)",
            "reason": "Expired", "code": 410}}),
        );
        pods.push(
            serde_json::json!({"type": "BOOKMARK", "object": {"kind": "Pod", "apiVersion": "v1",
            "metadata": {"resourceVersion": "12"}}}),
        );
        Seeds { pods, foobars: lines(&raw[2]), raw }
    })
}

pub(super) fn property(u: &mut Unstructured<'_>) -> arbitrary::Result<()> {
    let mut rng = Rng::with_seed(u.arbitrary()?);
    let seeds = seeds();
    match u.int_in_range(0..=5)? {
        0 | 1 => valid::<Pod>(u, &mut rng, &seeds.pods),
        2 => valid::<FooBar>(u, &mut rng, &seeds.foobars),
        3 => {
            let body = u.bytes(u.len())?.to_vec();
            hostile::<Pod>(u, &body)
        }
        _ => {
            let foobar = u.ratio(1, 4)?;
            let lines = if foobar { &seeds.foobars } else { &seeds.pods };
            let mut body = stream(u, &mut rng, lines, true)?;
            let raw: Vec<&[u8]> = seeds.raw.iter().map(Vec::as_slice).collect();
            let ops = u.int_in_range(0..=6)?;
            bytes::mutate(&mut rng, &mut body, &raw, bytes::JSON_TOKENS, ops);
            if foobar { hostile::<FooBar>(u, &body) } else { hostile::<Pod>(u, &body) }
        }
    }
}

/// A stream of events picked from `lines`, re-laid out; with `mutate`, their values changed and
/// their members sometimes repeated. Returns the body and, without `mutate`, the events' values.
fn stream(
    u: &mut Unstructured<'_>,
    rng: &mut Rng,
    lines: &[Value],
    mutate: bool,
) -> arbitrary::Result<Vec<u8>> {
    Ok(stream_with_values(u, rng, lines, mutate)?.0)
}

fn stream_with_values(
    u: &mut Unstructured<'_>,
    rng: &mut Rng,
    lines: &[Value],
    mutate: bool,
) -> arbitrary::Result<(Vec<u8>, Vec<Value>)> {
    let count = u.int_in_range(1..=10)?;
    let crlf = u.ratio(1, 4)?;
    let layout = Layout { newlines: false, duplicates: mutate, reorder: u.ratio(1, 2)? };
    let mut body = Vec::new();
    let mut values = Vec::new();
    for _ in 0..count {
        let mut value = lines[rng.usize(0..lines.len())].clone();
        if mutate && rng.u8(0..2) == 0 {
            let ops = rng.usize(1..=3);
            json::mutate(rng, &mut value, lines, ops);
        }
        if rng.u8(0..8) == 0 {
            body.extend_from_slice(if rng.bool() { b"\n" } else { b"  \t\r\n" });
        }
        json::write(rng, &value, layout, &mut body);
        body.extend_from_slice(if crlf { b"\r\n" } else { b"\n" });
        values.push(value);
    }
    Ok((body, values))
}

/// A valid stream decodes, as `serde_json` reads it, in any chunking and either layout.
fn valid<K: Resource + DeserializeOwned + PartialEq + std::fmt::Debug>(
    u: &mut Unstructured<'_>,
    rng: &mut Rng,
    lines: &[Value],
) -> arbitrary::Result<()> {
    let (body, values) = stream_with_values(u, rng, lines, false)?;
    informer_fuzz::note("watch.jsonl", &body);
    let (events, end) = decode::<K>(&body, &[body.len()]);
    assert_eq!(end, None, "a valid stream ends cleanly");
    let expected: Vec<Seen<K>> = values.iter().map(expected_event).collect();
    assert_eq!(events, expected, "a valid stream decodes as serde_json reads it");
    let ends = chunk_ends(u, body.len())?;
    assert!(
        decode::<K>(&body, &ends) == (events, end),
        "a valid stream decodes alike in any chunking"
    );
    same_in_both_layouts::<K>(&body);
    Ok(())
}

/// Any bytes: the same in any chunking and in either layout, and no panic.
fn hostile<K: Resource + PartialEq + std::fmt::Debug>(
    u: &mut Unstructured<'_>,
    body: &[u8],
) -> arbitrary::Result<()> {
    informer_fuzz::note("watch.jsonl", body);
    let whole = decode::<K>(body, &[body.len()]);
    let ends = chunk_ends(u, body.len())?;
    let chunked = decode::<K>(body, &ends);
    if chunked != whole {
        let shown = |(events, end): &(Vec<Seen<K>>, Option<String>)| {
            (events.iter().map(brief).collect::<Vec<_>>(), end.clone())
        };
        panic!("chunked and whole decodes differ: {:?} vs {:?}", shown(&chunked), shown(&whole));
    }
    same_in_both_layouts::<K>(body);
    Ok(())
}

/// The event of one line of a valid stream, read by `serde_json`.
fn expected_event<K: DeserializeOwned>(line: &Value) -> Seen<K> {
    let object = || {
        let mut object = line["object"].clone();
        if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
            metadata.remove("managedFields");
        }
        Arc::new(serde_json::from_value::<K>(object).unwrap())
    };
    match line["type"].as_str() {
        Some("ADDED") => Seen::Added(object()),
        Some("MODIFIED") => Seen::Modified(object()),
        Some("DELETED") => Seen::Deleted(object()),
        Some("BOOKMARK") => {
            let metadata = &line["object"]["metadata"];
            Seen::Bookmark(Bookmark {
                resource_version: metadata["resourceVersion"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                initial_events_end: metadata["annotations"]["k8s.io/initial-events-end"] == "true",
            })
        }
        // The one error event of the seeds.
        Some("ERROR") => {
            Seen::Error(Status::expired(line["object"]["message"].as_str().unwrap_or_default()))
        }
        other => unreachable!("seed event type {other:?}"),
    }
}

/// Each line of `body` decodes to the same event as the same line moved out of the API
/// server's layout (a space after its first `{`), which the fast path does not take.
fn same_in_both_layouts<K: Resource + PartialEq + std::fmt::Debug>(body: &[u8]) {
    for line in body.split(|&b| b == b'\n') {
        let Some(rest) = line.strip_prefix(b"{") else { continue };
        let server_layout = line_event::<K>(line);
        let other_layout = line_event::<K>(&[b"{ ".as_slice(), rest].concat());
        match (&server_layout, &other_layout) {
            (Some(Seen::Failed(_)), Some(Seen::Failed(_))) => {}
            // The documented exception: `K`'s deserializer, not the event's, sees the repeat.
            (_, Some(Seen::Failed(message)))
                if message.contains("duplicate field `kind`")
                    || message.contains("duplicate field `apiVersion`") => {}
            (one, other) => assert!(
                one == other,
                "a line decodes differently in the server's layout: {:?} vs {:?}",
                one.as_ref().map(brief),
                other.as_ref().map(brief)
            ),
        }
    }
}

/// The event of one line alone.
fn line_event<K: Resource>(line: &[u8]) -> Option<Seen<K>> {
    let (mut events, _) = decode::<K>(&[line, b"\n"].concat(), &[line.len() + 1]);
    assert!(events.len() <= 1, "one line gave {} events", events.len());
    events.pop()
}
