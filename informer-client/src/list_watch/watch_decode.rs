//! Socket bytes to typed watch events: newline framing, `Status` lines, bookmarks.
//!
//! The first step of the data flow after the socket: the HTTP client feeds the chunks of a watch
//! response body into a [`WatchDecoder`], which cuts them into lines and turns each line into a
//! [`WatchEvent<K>`] for the [reflector](informer_runtime::reflector). It is a pure state machine (no I/O,
//! no clock), so every framing case is tested on bytes.
//!
//! # Framing
//!
//! The API server writes one JSON event per line (`{"type":"ADDED","object":{...}}\n`). Chunk
//! boundaries fall anywhere: a line may span many chunks and a chunk may hold many lines. Only the
//! unfinished tail of a line is kept between chunks; complete lines are decoded straight from the
//! chunk. `\r\n` endings and empty lines are accepted. When the body ends inside a line, that is
//! an error ([`WatchDecoder::finish`]): the event was cut off.
//!
//! # Decoding
//!
//! A line is read as `{type, object}` with `object` kept as borrowed raw JSON
//! ([`RawValue`]), so no untyped tree is ever built. (An object event laid out exactly as the
//! API server writes it, `{"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1",…}}`, is
//! recognised by its bytes instead, and its object decoded in one pass; any other layout, and
//! any error, takes the path below.)
//!
//! - `ADDED` / `MODIFIED` / `DELETED`: the object's `apiVersion` and `kind` are read first (a
//!   small header struct); another kind gives [`Error::UnexpectedKind`], which the reflector skips.
//!   (For a metadata-only `K`, the expected kind is `meta.k8s.io/v1` `PartialObjectMetadata`.)
//!   Then the raw object is decoded into `K` by the client's `ObjectDecoder` (simd-json, exact
//!   capacities, `serde_json`'s errors), without its `metadata.managedFields` unless the decoder
//!   was told to keep it (see the client's `prune` module): a skipped field is never allocated.
//! - `BOOKMARK`: only `metadata.resourceVersion` and the `k8s.io/initial-events-end` annotation are
//!   read (bookmark objects are not valid `K`s: a pod bookmark has `"containers": null`).
//! - `ERROR`: the object is a `metav1.Status`; it becomes [`WatchEvent::Error`].
//! - A line that is not an event is retried as a `metav1.Status` (as kube-rs does), so an error
//!   the server wrote in place of an event still arrives typed, as [`Error::Api`].
//!
//! Errors name the resource, the line number and the byte offset in the stream.
//!
//! # Bounds
//!
//! No line is held, or decoded, beyond the maximum object size (the client's
//! [`max_object_size`](crate::Config::max_object_size), plus a little for the event around
//! the object): a line that grows past it is an error as soon as it does, and its remaining bytes
//! are skipped up to its newline, never kept. (The API server's objects are at most a few MiB:
//! etcd's request limit is 1.5 MiB.)

use std::borrow::Cow;
use std::collections::{BTreeMap, VecDeque};
use std::marker::PhantomData;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::error::{json_error_message, parse_status};
use crate::limits::DEFAULT_MAX_OBJECT_SIZE;
use crate::request::Target;
use informer_runtime::codec::object_decoder::ObjectDecoder;
use informer_runtime::listwatch::{Bookmark, Error, WatchEvent};
use informer_runtime::resource::Object;

/// The annotation on the bookmark that ends the initial events of a streaming list.
const INITIAL_EVENTS_END: &str = "k8s.io/initial-events-end";

/// What a watch event's line may hold beyond its object: `{"type":"MODIFIED","object":…}` and
/// some whitespace. A line may be this much longer than the maximum object size, so an object
/// a list accepts is accepted in a watch too.
const EVENT_ENVELOPE: usize = 1024;

/// Decoded events (or per-line errors), in stream order.
pub(crate) type Decoded<K> = VecDeque<Result<WatchEvent<K>, Error>>;

/// Turns the chunks of one watch response body into typed events; see the
/// [module documentation](self).
pub(crate) struct WatchDecoder<K> {
    /// What is watched: its name for error messages, the `apiVersion` and `kind` of its
    /// objects.
    target: Arc<Target>,
    /// The unfinished line carried over from earlier chunks.
    partial: Vec<u8>,
    /// The longest line decoded: the maximum object size plus [`EVENT_ENVELOPE`].
    max_line: usize,
    /// The maximum object size, for error messages.
    max_object_size: usize,
    /// Bytes of an over-long line dropped so far: the rest of it is skipped up to its newline.
    skipping: Option<u64>,
    /// The number of the next line, from 1.
    line: u64,
    /// The stream offset of the next line's first byte.
    offset: u64,
    /// Decodes the objects of `ADDED`, `MODIFIED` and `DELETED` events.
    objects: ObjectDecoder<K>,
    _kind: PhantomData<fn() -> K>,
}

impl<K: Object> WatchDecoder<K> {
    /// A decoder for a watch of `resource` (named in errors), whose objects keep their
    /// `metadata.managedFields` only if `keep_managed_fields` is set.
    pub(crate) fn new(target: Arc<Target>, keep_managed_fields: bool) -> Self {
        Self {
            target,
            partial: Vec::new(),
            max_line: DEFAULT_MAX_OBJECT_SIZE + EVENT_ENVELOPE,
            max_object_size: DEFAULT_MAX_OBJECT_SIZE,
            skipping: None,
            line: 1,
            offset: 0,
            objects: ObjectDecoder::new(keep_managed_fields),
            _kind: PhantomData,
        }
    }

    /// Refuses events whose object is larger than `bytes` (the client's
    /// [`max_object_size`](crate::Config::max_object_size)).
    pub(crate) fn max_object_size(mut self, bytes: usize) -> Self {
        self.max_object_size = bytes;
        self.max_line = bytes.saturating_add(EVENT_ENVELOPE);
        self
    }

    /// Feeds the next chunk of the body; the events of every line it completes go to `out`.
    pub(crate) fn feed(&mut self, chunk: &[u8], out: &mut Decoded<K>) {
        let mut rest = chunk;
        if let Some(skipped) = self.skipping {
            let Some(end) = memchr::memchr(b'\n', rest) else {
                self.skipping = Some(skipped + rest.len() as u64);
                return;
            };
            // The over-long line ends here; the next one starts after its newline.
            self.skipping = None;
            self.line += 1;
            self.offset += skipped + end as u64 + 1;
            rest = &rest[end + 1..];
        }
        if !self.partial.is_empty() {
            let Some(end) = memchr::memchr(b'\n', rest) else {
                self.partial.extend_from_slice(rest);
                self.check_line_length(out);
                return;
            };
            self.partial.extend_from_slice(&rest[..end]);
            rest = &rest[end + 1..];
            // Decode from the carried-over buffer, then keep its allocation for the next tail.
            let line = std::mem::take(&mut self.partial);
            self.complete_line(&line, out);
            self.partial = line;
            self.partial.clear();
        }
        while let Some(end) = memchr::memchr(b'\n', rest) {
            self.complete_line(&rest[..end], out);
            rest = &rest[end + 1..];
        }
        self.partial.extend_from_slice(rest);
        self.check_line_length(out);
    }

    /// Gives up on a line that grew past the maximum without a newline: an error now, and the
    /// rest of the line is skipped instead of kept.
    fn check_line_length(&mut self, out: &mut Decoded<K>) {
        if self.partial.len() > self.max_line {
            out.push_back(Err(self.too_large()));
            self.skipping = Some(self.partial.len() as u64);
            // Not kept: the allocation is as large as the limit.
            self.partial = Vec::new();
        }
    }

    /// The error for the current line, which is longer than the maximum.
    fn too_large(&self) -> Error {
        Error::Decode(format!(
            "{} watch, line {} (byte {}): the event is larger than the maximum object size, {} \
             bytes (Config::max_object_size); the watch ends: raise max_object_size if the API \
             server serves objects this large",
            self.target.name(),
            self.line,
            self.offset,
            self.max_object_size
        ))
    }

    /// The resource this decoder decodes, as named in errors.
    pub(crate) fn resource(&self) -> &str {
        self.target.name()
    }

    /// Whether bytes of an unfinished line are buffered (or being skipped).
    pub(crate) fn has_partial_line(&self) -> bool {
        self.skipping.is_some() || self.partial.iter().any(|b| !b.is_ascii_whitespace())
    }

    /// The body ended.
    ///
    /// # Errors
    ///
    /// [`Error::Decode`] when it ended inside a line: the last event was cut off.
    pub(crate) fn finish(&mut self) -> Result<(), Error> {
        // An over-long line was reported when it grew too long.
        if self.skipping.take().is_some() || !self.has_partial_line() {
            return Ok(());
        }
        let len = self.partial.len();
        self.partial.clear();
        Err(Error::Decode(format!(
            "{} watch: stream ended inside line {} (byte {}): {len} bytes of an unfinished event",
            self.target.name(),
            self.line,
            self.offset
        )))
    }

    /// Decodes one complete line (without its `\n`) and advances the position past it.
    fn complete_line(&mut self, line: &[u8], out: &mut Decoded<K>) {
        let content = line.strip_suffix(b"\r").unwrap_or(line);
        if content.len() > self.max_line {
            // Whole in one chunk, but still too large to decode.
            out.push_back(Err(self.too_large()));
        } else if !content.iter().all(u8::is_ascii_whitespace) {
            out.push_back(self.decode_line(content));
        }
        self.line += 1;
        self.offset += line.len() as u64 + 1;
    }

    fn decode_line(&mut self, line: &[u8]) -> Result<WatchEvent<K>, Error> {
        match self.decode_object_event_in_server_layout(line) {
            Some(event) => Ok(event),
            None => self.decode_line_in_any_layout(line),
        }
    }

    fn decode_line_in_any_layout(&mut self, line: &[u8]) -> Result<WatchEvent<K>, Error> {
        let event: RawEvent<'_> = match serde_json::from_slice(line) {
            Ok(event) => event,
            Err(error) => {
                return match parse_status(line) {
                    Some(status) => Err(Error::Api(status)),
                    None => Err(self.error_at(
                        0,
                        &format!("not a watch event: {}", json_error_message(&error)),
                        Some(&error),
                    )),
                };
            }
        };
        let object = event.object.get();
        // Where the object starts within the line (it borrows from it), to turn serde_json's
        // columns into stream offsets.
        let object_start = (object.as_ptr() as usize).saturating_sub(line.as_ptr() as usize);
        match &*event.kind {
            "ADDED" => self.decode_object(object, object_start).map(WatchEvent::Added),
            "MODIFIED" => self.decode_object(object, object_start).map(WatchEvent::Modified),
            "DELETED" => self.decode_object(object, object_start).map(WatchEvent::Deleted),
            "BOOKMARK" => {
                let bookmark: BookmarkObject = serde_json::from_str(object).map_err(|e| {
                    self.error_at(
                        object_start,
                        &format!("BOOKMARK object: {}", json_error_message(&e)),
                        Some(&e),
                    )
                })?;
                let initial_events_end = bookmark
                    .metadata
                    .annotations
                    .get(INITIAL_EVENTS_END)
                    .is_some_and(|v| v == "true");
                Ok(WatchEvent::Bookmark(Bookmark {
                    resource_version: bookmark.metadata.resource_version,
                    initial_events_end,
                }))
            }
            "ERROR" => parse_status(object.as_bytes()).map(WatchEvent::Error).ok_or_else(|| {
                self.error_at(object_start, "ERROR event whose object is not a Status", None)
            }),
            other => Err(self.error_at(0, &format!("unknown watch event type {other:?}"), None)),
        }
    }

    /// An `ADDED`, `MODIFIED` or `DELETED` line laid out as the API server writes it,
    /// `{"type":"MODIFIED","object":{"kind":"Pod","apiVersion":"v1",…}}` (a custom resource's
    /// object starts with `apiVersion`), decoded with one parse of the object where the general
    /// path takes three: the event, the object's type, the object.
    ///
    /// `None` for any other layout, and whenever the object does not decode: the general path
    /// then reads the line again and reports its exact error. What this path takes, the
    /// general one takes too, as the same event: the object is decoded up to the event's
    /// closing brace, so the event holds nothing but `type` and `object`, and both name its
    /// kind as expected. The one exception is an object that repeats `kind` or `apiVersion`
    /// later on: a duplicate field to the general path, while here `K`'s own deserializer
    /// decides (k8s-openapi's types take a repeat only of the same value; a metadata-only or
    /// custom resource type may ignore those fields).
    fn decode_object_event_in_server_layout(&mut self, line: &[u8]) -> Option<WatchEvent<K>> {
        let rest = line.strip_prefix(br#"{"type":""#)?;
        let event: ObjectEvent<K>;
        let object = if let Some(object) = rest.strip_prefix(br#"MODIFIED","object":"#) {
            event = WatchEvent::Modified;
            object
        } else if let Some(object) = rest.strip_prefix(br#"ADDED","object":"#) {
            event = WatchEvent::Added;
            object
        } else {
            event = WatchEvent::Deleted;
            rest.strip_prefix(br#"DELETED","object":"#)?
        };
        let mut object = object;
        // JSON's whitespace only: `trim_ascii_end` would also take a form feed, which the
        // general path refuses as trailing characters.
        while let [rest @ .., b' ' | b'\t' | b'\n' | b'\r'] = object {
            object = rest;
        }
        let object = object.strip_suffix(b"}")?;
        let (api_version, kind) = self.target.served_type();
        if !starts_with_type(object, api_version, kind) {
            return None;
        }
        // The general path reads the object as a `&str`; without this check, invalid UTF-8 in
        // a value the decode skips (managedFields, an unknown field) would pass here alone,
        // since `serde_json` checks only the strings it keeps.
        std::str::from_utf8(object).ok()?;
        let mut object = self.objects.decode(object).ok()?;
        object.fill_type(api_version, kind);
        Some(event(Arc::new(object)))
    }

    fn decode_object(&mut self, object: &str, object_start: usize) -> Result<Arc<K>, Error> {
        let header: TypeHeader<'_> = serde_json::from_str(object).map_err(|e| {
            self.error_at(object_start, &format!("object: {}", json_error_message(&e)), Some(&e))
        })?;
        let (api_version, kind) = self.target.served_type();
        let api_version_matches = header.api_version.as_deref().is_none_or(|v| v == api_version);
        let kind_matches = header.kind.as_deref().is_none_or(|k| k == kind);
        if !api_version_matches || !kind_matches {
            return Err(Error::UnexpectedKind {
                expected: format!("{api_version}/{kind}"),
                got: format!(
                    "{}/{}",
                    header.api_version.as_deref().unwrap_or_default(),
                    header.kind.as_deref().unwrap_or_default()
                ),
            });
        }
        let typed = |mut object: K| {
            object.fill_type(api_version, kind);
            Arc::new(object)
        };
        self.objects.decode(object.as_bytes()).map(typed).map_err(|e| {
            self.error_at(
                object_start,
                &format!("{kind} object: {}", json_error_message(&e)),
                Some(&e),
            )
        })
    }

    /// A decode error at the current line; `column_base` is where the JSON that `json` parsed
    /// starts within the line.
    fn error_at(&self, column_base: usize, what: &str, json: Option<&serde_json::Error>) -> Error {
        // serde_json counts columns from 1 within the (single-line) text it parsed.
        let byte = match json {
            Some(e) if e.line() == 1 => {
                self.offset + (column_base + e.column().saturating_sub(1)) as u64
            }
            _ => self.offset + column_base as u64,
        };
        Error::Decode(format!(
            "{} watch, line {} (byte {byte}): {what}",
            self.target.name(),
            self.line
        ))
    }
}

/// Makes one of the events that carry an object.
type ObjectEvent<K> = fn(Arc<K>) -> WatchEvent<K>;

/// Whether the JSON object `object` starts with its `kind` and `apiVersion` members (in either
/// order, unescaped, without whitespace), saying `kind` and `api_version`.
fn starts_with_type(object: &[u8], api_version: &str, kind: &str) -> bool {
    let member = |json: &'_ [u8], key: &str, value: &str| -> Option<usize> {
        let rest = json.strip_prefix(b"\"")?.strip_prefix(key.as_bytes())?;
        let rest = rest.strip_prefix(b"\":\"")?.strip_prefix(value.as_bytes())?;
        rest.strip_prefix(b"\"")?;
        Some(key.len() + value.len() + 5)
    };
    let Some(members) = object.strip_prefix(b"{") else { return false };
    let pair = |first: (&str, &str), second: (&str, &str)| {
        let Some(len) = member(members, first.0, first.1) else { return false };
        let Some(rest) = members[len..].strip_prefix(b",") else { return false };
        member(rest, second.0, second.1)
            .is_some_and(|len| matches!(rest.get(len), Some(b',' | b'}')))
    };
    pair(("kind", kind), ("apiVersion", api_version))
        || pair(("apiVersion", api_version), ("kind", kind))
}

/// One line of a watch, with the object left as raw JSON.
#[derive(Deserialize)]
struct RawEvent<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow)]
    object: &'a RawValue,
}

/// The part of an object that says what it is.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TypeHeader<'a> {
    #[serde(borrow, default)]
    api_version: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    kind: Option<Cow<'a, str>>,
}

/// The part of a bookmark's object that matters.
#[derive(Deserialize)]
struct BookmarkObject {
    #[serde(default)]
    metadata: BookmarkMeta,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct BookmarkMeta {
    #[serde(default)]
    resource_version: String,
    #[serde(default, deserialize_with = "null_as_default")]
    annotations: BTreeMap<String, String>,
}

fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

#[cfg(test)]
pub(crate) mod tests {
    use k8s_openapi::api::core::v1::Pod;

    use super::*;
    use crate::test_objects::FooBar;
    use informer_runtime::listwatch::Status;

    const PODS_RV0_BOOKMARKS: &[u8] =
        include_bytes!("../../tests/fixtures/kind-v1-36-watch-pods-rv0-bookmarks.events.jsonl");
    const FOOBAR_WATCH: &[u8] =
        include_bytes!("../../tests/fixtures/kind-v1-36-foobar-watch.events.jsonl");

    /// Feeds `body` in chunks of `size` bytes, then ends it.
    type Events<K> = Vec<Result<WatchEvent<K>, Error>>;

    fn decode_chunked<K: informer_runtime::Resource>(
        body: &[u8],
        size: usize,
    ) -> (Events<K>, Result<(), Error>) {
        let mut decoder = WatchDecoder::<K>::new(Arc::new(Target::of::<K>()), false);
        let mut out = Decoded::new();
        for chunk in body.chunks(size) {
            decoder.feed(chunk, &mut out);
        }
        let end = decoder.finish();
        (out.into_iter().collect(), end)
    }

    fn decode_all<K: informer_runtime::Resource>(body: &[u8]) -> Events<K> {
        let (events, end) = decode_chunked(body, body.len().max(1));
        end.unwrap();
        events
    }

    /// `ADDED ns/name@rv`, `BOOKMARK rv end`, or the error's message.
    fn describe<K: Object>(event: &Result<WatchEvent<K>, Error>) -> String {
        match event {
            Ok(WatchEvent::Bookmark(b)) => {
                format!("BOOKMARK {} {}", b.resource_version, b.initial_events_end)
            }
            Ok(event) => format!("{event:?}"),
            Err(e) => format!("error: {e}"),
        }
    }

    #[test]
    fn recorded_pod_watch_with_initial_events_end_bookmark() {
        let events = decode_all::<Pod>(PODS_RV0_BOOKMARKS);
        let shown: Vec<String> = events.iter().map(describe).collect();
        assert_eq!(shown.len(), 9, "{shown:#?}");
        assert!(shown[..8].iter().all(|s| s.starts_with("Added(kube-system/")), "{shown:#?}");
        assert_eq!(shown[8], "BOOKMARK 550 true");
    }

    #[test]
    fn metadata_only_watches_take_partial_object_metadata_and_nothing_else() {
        use informer_runtime::metadata::PartialObjectMetadata;
        let body = br#"{"type":"ADDED","object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"a","namespace":"n","resourceVersion":"5","managedFields":[{"manager":"m"}]}}}
{"type":"BOOKMARK","object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"6","annotations":{"k8s.io/initial-events-end":"true"}}}}
{"type":"MODIFIED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","namespace":"n"},"spec":{}}}
"#;
        let events = decode_all::<PartialObjectMetadata<Pod>>(body);
        let Ok(WatchEvent::Added(added)) = &events[0] else { panic!("{events:?}") };
        assert_eq!(added.metadata.name.as_deref(), Some("a"));
        assert_eq!(added.metadata.managed_fields, None, "pruned as for whole objects");
        assert_eq!(describe(&events[1]), "BOOKMARK 6 true");
        assert!(
            matches!(&events[2], Err(Error::UnexpectedKind { expected, got })
                if expected == "meta.k8s.io/v1/PartialObjectMetadata" && got == "v1/Pod"),
            "{:?}",
            events[2]
        );
        // And the other way round: a whole-object watch does not take metadata.
        let events = decode_all::<Pod>(body);
        assert!(matches!(&events[0], Err(Error::UnexpectedKind { .. })), "{:?}", events[0]);
    }

    #[test]
    fn objects_lose_managed_fields_unless_kept() {
        let objects = |keep: bool| {
            let mut decoder = WatchDecoder::<Pod>::new(Arc::new(Target::of::<Pod>()), keep);
            let mut out = Decoded::new();
            decoder.feed(PODS_RV0_BOOKMARKS, &mut out);
            decoder.finish().unwrap();
            out.into_iter()
                .filter_map(|e| match e.unwrap() {
                    WatchEvent::Added(pod) => Some(pod),
                    _ => None,
                })
                .collect::<Vec<_>>()
        };
        let (pruned, kept) = (objects(false), objects(true));
        assert_eq!((pruned.len(), kept.len()), (8, 8));
        assert!(kept.iter().all(|p| p.metadata.managed_fields.is_some()));
        for (pruned, kept) in pruned.iter().zip(&kept) {
            let mut expected = (**kept).clone();
            expected.metadata.managed_fields = None;
            assert_eq!(**pruned, expected);
        }
    }

    #[test]
    fn pruning_does_not_move_error_positions() {
        let line = br#"{"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"managedFields":[{"manager":"m"}],"name":7}}}"#;
        let messages = [false, true].map(|keep| {
            let mut decoder = WatchDecoder::<Pod>::new(Arc::new(Target::of::<Pod>()), keep);
            let mut out = Decoded::new();
            decoder.feed(line, &mut out);
            decoder.feed(b"\n", &mut out);
            match out.pop_front() {
                Some(Err(Error::Decode(message))) => message,
                other => panic!("expected a decode error, got {:?}", other.map(|e| e.is_ok())),
            }
        });
        let fault = line.iter().position(|&b| b == b'7').unwrap();
        assert_eq!(messages[0], messages[1]);
        assert!(messages[0].contains(&format!("line 1 (byte {fault})")), "{}", messages[0]);
    }

    #[test]
    fn every_chunking_gives_the_same_events() {
        let whole: Vec<String> =
            decode_all::<Pod>(PODS_RV0_BOOKMARKS).iter().map(describe).collect();
        for size in [1, 2, 7, 100, 4096, 65_536] {
            let (events, end) = decode_chunked::<Pod>(PODS_RV0_BOOKMARKS, size);
            end.unwrap();
            let shown: Vec<String> = events.iter().map(describe).collect();
            assert_eq!(shown, whole, "chunks of {size}");
        }
    }

    #[test]
    fn recorded_pod_watch_from_a_kind_cluster() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/kind-v1-36-watch-pods.events.jsonl"
        );
        let body = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let events = decode_all::<Pod>(&body);
        assert_eq!(events.len(), 5);
        for event in &events {
            let Ok(WatchEvent::Added(pod)) = event else { panic!("{}", describe(event)) };
            assert!(pod.metadata.resource_version.is_some());
            assert!(!pod.spec.as_ref().unwrap().containers.is_empty());
        }
    }

    #[test]
    fn recorded_custom_resource_watch() {
        let events = decode_all::<FooBar>(FOOBAR_WATCH);
        let names: Vec<_> = events
            .iter()
            .map(|e| match e {
                Ok(WatchEvent::Added(fb)) => {
                    (fb.metadata.name.clone().unwrap(), fb.spec["prop1"].clone())
                }
                other => panic!("{}", describe(other)),
            })
            .collect();
        assert_eq!(
            names,
            [("fb1".to_owned(), "value1".into()), ("fb2".to_owned(), "value1".into())]
        );
    }

    #[test]
    fn another_kind_is_unexpected_and_the_stream_goes_on() {
        let mut body = FOOBAR_WATCH.to_vec();
        body.extend_from_slice(br#"{"type":"MODIFIED","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"n","resourceVersion":"9"}}}"#);
        body.push(b'\n');
        let events = decode_all::<Pod>(&body);
        assert_eq!(events.len(), 3);
        for event in &events[..2] {
            let Err(Error::UnexpectedKind { expected, got }) = event else {
                panic!("{}", describe(event))
            };
            assert_eq!(expected, "v1/Pod");
            assert_eq!(got, "k8s-openapi-tests-custom-resource-definition.com/v1/FooBar");
        }
        assert_eq!(describe(&events[2]), "Modified(n/p@9)");
    }

    /// The event of one line, through the server-layout path (`None` if it does not take the
    /// line) and through the general one.
    fn both_paths<K: informer_runtime::Resource>(
        line: &[u8],
    ) -> (Option<WatchEvent<K>>, Result<WatchEvent<K>, Error>) {
        let mut decoder = WatchDecoder::<K>::new(Arc::new(Target::of::<K>()), false);
        let fast = decoder.decode_object_event_in_server_layout(line);
        (fast, decoder.decode_line_in_any_layout(line))
    }

    fn object<K: Object>(event: &WatchEvent<K>) -> &K {
        match event {
            WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => o,
            other => panic!("not an object event: {other:?}"),
        }
    }

    #[test]
    fn the_server_s_layout_decodes_in_one_pass_to_the_same_events() {
        let mut lines = 0;
        for line in PODS_RV0_BOOKMARKS.split(|&b| b == b'\n').filter(|l| l.contains(&b'"')) {
            let (fast, general) = both_paths::<Pod>(line);
            let general = general.unwrap();
            if matches!(general, WatchEvent::Bookmark(_)) {
                assert!(fast.is_none());
                continue;
            }
            let fast = fast.expect("the API server's layout");
            assert_eq!(format!("{fast:?}"), format!("{general:?}"));
            assert_eq!(object(&fast), object(&general));
            lines += 1;
        }
        // JSON's whitespace after the event is the server's layout still.
        let line = [
            &PODS_RV0_BOOKMARKS[..PODS_RV0_BOOKMARKS.iter().position(|&b| b == b'\n').unwrap()],
            b" \t\r",
        ]
        .concat();
        assert!(both_paths::<Pod>(&line).0.is_some());
        // A custom resource's object names its `apiVersion` first.
        for line in FOOBAR_WATCH.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            let (fast, general) = both_paths::<FooBar>(line);
            let (fast, general) = (fast.expect("the API server's layout"), general.unwrap());
            assert_eq!(format!("{fast:?}"), format!("{general:?}"));
            assert_eq!(object(&fast).spec, object(&general).spec);
            lines += 1;
        }
        assert_eq!(lines, 10);
    }

    #[test]
    fn other_layouts_and_bad_objects_take_the_general_path() {
        let meta = r#""metadata":{"name":"a","namespace":"n","resourceVersion":"3"}"#;
        let pod = format!(r#"{{"kind":"Pod","apiVersion":"v1",{meta}}}"#);
        for (line, expected) in [
            (format!(r#"{{"object":{pod},"type":"ADDED"}}"#), "Added(n/a@3)"),
            (format!(r#"{{"type":"ADDED","object":{pod},"extra":1}}"#), "Added(n/a@3)"),
            (format!(r#"{{"type":"ADDED", "object":{pod}}}"#), "Added(n/a@3)"),
            (format!(r#"{{"type":"ADD\u0045D","object":{pod}}}"#), "Added(n/a@3)"),
            (
                format!(r#"{{"type":"DELETED","object":{{{meta},"kind":"Pod","apiVersion":"v1"}}}}"#),
                "Deleted(n/a@3)",
            ),
            (format!(r#"{{"type":"MODIFIED","object":{{"kind":"Pod",{meta}}}}}"#), "Modified(n/a@3)"),
            (
                format!(r#"{{"type":"ADDED","object":{{"kind":"Pod","apiVersion":"v1beta1",{meta}}}}}"#),
                "error: unexpected object kind in watch: expected v1/Pod, got v1beta1/Pod",
            ),
            (
                format!(r#"{{"type":"ADDED","object":{{"kind":"Pods","apiVersion":"v1",{meta}}}}}"#),
                "error: unexpected object kind in watch: expected v1/Pod, got v1/Pods",
            ),
            (
                format!("{{\"type\":\"ADDED\",\"object\":{pod}}}\x0c"),
                "error: decode error: pods watch, line 1 (byte 120): not a watch event: trailing \
                 characters",
            ),
            (
                r#"{"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":7}}}"#
                    .to_owned(),
                // Byte 76 is the `7`.
                "error: decode error: pods watch, line 1 (byte 76): Pod object: invalid type: \
                 integer `7`, expected a string",
            ),
        ] {
            let (fast, general) = both_paths::<Pod>(line.as_bytes());
            assert!(fast.is_none(), "{line}");
            assert_eq!(describe(&general), expected, "{line}");
        }
    }

    #[test]
    fn invalid_utf8_in_a_skipped_value_is_refused_on_both_paths() {
        let mut line = br#"{"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","managedFields":[{"manager":"#
            .to_vec();
        line.extend_from_slice(b"\"\xff\"}]}}}");
        let (fast, general) = both_paths::<Pod>(&line);
        assert!(fast.is_none());
        assert!(describe(&general).contains("not a watch event"), "{}", describe(&general));
    }

    #[test]
    fn the_type_members_are_matched_whole() {
        let starts = |json: &str| starts_with_type(json.as_bytes(), "v1", "Pod");
        assert!(starts(r#"{"kind":"Pod","apiVersion":"v1","metadata":{}}"#));
        assert!(starts(r#"{"apiVersion":"v1","kind":"Pod"}"#));
        assert!(!starts(r#"{"kind":"Pod","apiVersion":"v1""#));
        assert!(!starts(r#"{"kind":"Pod","apiVersion":"v12","metadata":{}}"#));
        assert!(!starts(r#"{"kind":"Pod","apiVersion":"v1" ,"metadata":{}}"#));
        assert!(!starts(r#"{"kind":"PodX","apiVersion":"v1"}"#));
        assert!(!starts(r#"{"kind":"Pod","kind":"Pod"}"#));
        assert!(!starts(r#"{ "kind":"Pod","apiVersion":"v1"}"#));
        assert!(!starts(""));
    }

    #[test]
    fn crlf_and_empty_lines_are_accepted() {
        let body = b"\r\n{\"type\":\"DELETED\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"a\",\"namespace\":\"n\",\"resourceVersion\":\"3\"}}}\r\n\n  \n{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"4\"},\"spec\":{\"containers\":null}}}\r\n";
        for size in [1, 3, body.len()] {
            let (events, end) = decode_chunked::<Pod>(body, size);
            end.unwrap();
            let shown: Vec<String> = events.iter().map(describe).collect();
            assert_eq!(shown, ["Deleted(n/a@3)", "BOOKMARK 4 false"]);
        }
    }

    #[test]
    fn a_trailing_partial_line_at_the_end_is_an_error() {
        let body = b"{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"4\"}}}\n{\"type\":\"ADDED\",\"obj";
        let (events, end) = decode_chunked::<Pod>(body, 10);
        assert_eq!(events.len(), 1);
        let Err(Error::Decode(message)) = end else { panic!("expected a cut-off error") };
        assert!(message.contains("line 2 (byte 66)"), "{message}");
        // Only whitespace after the last newline is a clean end.
        let (_, end) = decode_chunked::<Pod>(b"\r\n  ", 1);
        end.unwrap();
    }

    #[test]
    fn error_event_becomes_a_status() {
        let body = br#"{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 5 (10)","reason":"Expired","code":410}}
"#;
        let events = decode_all::<Pod>(body);
        let [Ok(WatchEvent::Error(status))] = &events[..] else {
            panic!("{}", describe(&events[0]))
        };
        assert_eq!(status, &Status::expired("too old resource version: 5 (10)"));
    }

    #[test]
    fn a_status_line_instead_of_an_event_is_an_api_error() {
        let body = br#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"internal error","reason":"InternalError","code":500}
"#;
        let events = decode_all::<Pod>(body);
        let [Err(Error::Api(status))] = &events[..] else { panic!("{}", describe(&events[0])) };
        assert_eq!(status.code, 500);
    }

    #[test]
    fn garbage_names_line_and_byte_and_later_lines_still_decode() {
        let body = b"{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"1\"}}}\nnot json\n{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"2\"}}}\n";
        let shown: Vec<String> = decode_all::<Pod>(body).iter().map(describe).collect();
        assert_eq!(shown[0], "BOOKMARK 1 false");
        assert!(
            shown[1].starts_with(
                "error: decode error: pods watch, line 2 (byte 67): not a watch event"
            ),
            "{}",
            shown[1]
        );
        assert_eq!(shown[2], "BOOKMARK 2 false");
    }

    #[test]
    fn a_bad_object_names_the_byte_inside_the_line() {
        let line =
            br#"{"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":7}}}"#;
        let mut body = b"\n".to_vec();
        body.extend_from_slice(line);
        body.push(b'\n');
        let events = decode_all::<Pod>(&body);
        let Err(Error::Decode(message)) = &events[0] else { panic!("{}", describe(&events[0])) };
        // serde_json stops at the `7`; line 2 starts at byte 1.
        let fault = 1 + line.iter().position(|&b| b == b'7').unwrap();
        assert!(
            message.contains(&format!("line 2 (byte {fault})")),
            "{message} (fault at {fault})"
        );
        assert!(message.contains("Pod object: invalid type: integer `7`"), "{message}");
    }

    #[test]
    fn unknown_event_types_and_bad_error_objects_are_decode_errors() {
        let body = br#"{"type":"SURPRISE","object":{}}
{"type":"ERROR","object":{"kind":"Pod"}}
"#;
        let shown: Vec<String> = decode_all::<Pod>(body).iter().map(describe).collect();
        assert!(shown[0].contains("unknown watch event type \"SURPRISE\""), "{}", shown[0]);
        assert!(shown[1].contains("ERROR event whose object is not a Status"), "{}", shown[1]);
    }

    #[test]
    fn bookmark_annotation_must_say_true() {
        let body = br#"{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"5","annotations":{"k8s.io/initial-events-end":"false"}}}}
{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"6","annotations":null}}}
"#;
        let shown: Vec<String> = decode_all::<Pod>(body).iter().map(describe).collect();
        assert_eq!(shown, ["BOOKMARK 5 false", "BOOKMARK 6 false"]);
    }

    #[test]
    fn a_line_over_the_limit_is_an_error_and_skipped_and_the_next_line_decodes() {
        let bookmark = |rv: u32| {
            format!(r#"{{"type":"BOOKMARK","object":{{"metadata":{{"resourceVersion":"{rv}"}}}}}}"#)
        };
        let huge = format!(
            r#"{{"type":"ADDED","object":{{"kind":"Pod","apiVersion":"v1","metadata":{{"name":"{}"}}}}}}"#,
            "x".repeat(3000)
        );
        let body = format!("{}\n{huge}\n{}\n", bookmark(1), bookmark(2));
        let huge_at = bookmark(1).len() + 1;
        for size in [1, 100, 1000, body.len()] {
            let mut decoder = WatchDecoder::<Pod>::new(Arc::new(Target::of::<Pod>()), false)
                .max_object_size(1000);
            let mut out = Decoded::new();
            for chunk in body.as_bytes().chunks(size) {
                decoder.feed(chunk, &mut out);
                // Never more than the limit and one chunk held.
                assert!(decoder.partial.len() <= 1000 + EVENT_ENVELOPE + size, "chunks of {size}");
            }
            decoder.finish().unwrap();
            let shown: Vec<String> = out.iter().map(describe).collect();
            assert_eq!(shown.len(), 3, "chunks of {size}: {shown:#?}");
            assert_eq!(shown[0], "BOOKMARK 1 false");
            assert!(
                shown[1].starts_with(&format!(
                    "error: decode error: pods watch, line 2 (byte {huge_at}): the event is larger \
                     than the maximum object size, 1000 bytes (Config::max_object_size)"
                )),
                "chunks of {size}: {}",
                shown[1]
            );
            assert_eq!(shown[2], "BOOKMARK 2 false", "chunks of {size}");
        }
        // Cut off while skipping: reported once, when it grew too long.
        let mut decoder =
            WatchDecoder::<Pod>::new(Arc::new(Target::of::<Pod>()), false).max_object_size(1000);
        let mut out = Decoded::new();
        decoder.feed(&huge.as_bytes()[..2500], &mut out);
        assert_eq!(out.len(), 1);
        assert!(decoder.has_partial_line());
        decoder.finish().unwrap();
    }
}
