//! One list response body to one typed page, decoded part by part while it arrives.
//!
//! Where lists enter the data flow: the HTTP lister-watcher pushes the body of one list response
//! into a [`PageDecoder`], chunk by chunk as the socket delivers it. The
//! [splitter](super::list_split) cuts out each part as soon as it is complete, and each item
//! is deserialized on its own, straight into its `Arc<K>` (no untyped JSON tree, no intermediate
//! `Vec<K>`, and never the whole body in memory). The list's `metadata` comes before `items` in
//! what API servers write, so the continue token is known, and reported to a callback, before any
//! item is decoded: the caller uses that to start fetching the next page meanwhile.
//!
//! Unless told to keep it, each item's `metadata.managedFields` is skipped while decoding (see
//! [`prune`](informer_runtime::codec::prune)): it is never allocated. Items are decoded by an
//! [`ObjectDecoder`], so their vectors have exact capacities. With a [`ListIntake`], an item the
//! cache already holds unchanged is dropped as soon as it is decoded, and the cached object
//! stands in for it; and each item goes to the intake as soon as it is decoded, once the body
//! has shown it is a list of `K` (its `kind`) at a resource version (its `metadata`), which API
//! servers write before `items`; it is offered the item's bytes first
//! ([`ListIntake::take_json`]), and an item it takes that way is not decoded here. Items of a
//! body that has not shown both yet are held in the page and checked with it, so a body that is
//! not such a list never reaches the cache.

use std::marker::PhantomData;
use std::sync::Arc;

use serde::Deserialize;
use serde::de::IgnoredAny;

use super::list_split::{ListSplitter, Part, Piece, SplitError};
use crate::error::{byte_offset, json_error_message};
use crate::limits::DEFAULT_MAX_OBJECT_SIZE;
use crate::request::Target;
use informer_runtime::codec::object_decoder::ObjectDecoder;
use informer_runtime::listwatch::{Error, ListIntake, ObjectList};
use informer_runtime::resource::Object;

/// Decodes one page of a list of `resource` from its whole body; see [`PageDecoder`].
///
/// # Errors
///
/// [`Error::Decode`] naming the resource, the item and the byte offset of the fault.
#[cfg(test)]
pub(crate) fn decode_list_page<K: informer_runtime::Resource>(
    body: &[u8],
    keep_managed_fields: bool,
    on_continue: impl FnOnce(&str),
) -> Result<ObjectList<K>, Error> {
    let target = Arc::new(Target::of::<K>());
    let mut decoder = PageDecoder::new(target, keep_managed_fields, on_continue);
    decoder.push(body)?;
    decoder.finish()
}

/// What a `Status` body says, kept in case a 200 answer is one instead of a list.
#[derive(Default)]
struct StatusParts {
    reason: Option<String>,
    message: Option<String>,
}

/// The list's metadata: the part of `ListMeta` the reflector needs.
#[derive(Default, Deserialize)]
struct ListMeta {
    #[serde(default, rename = "resourceVersion")]
    resource_version: Option<String>,
    #[serde(default, rename = "continue")]
    continue_token: Option<String>,
}

/// Decodes one list page from its body, pushed in chunks.
///
/// `on_continue` is called with the continue token as soon as the list's metadata has been read,
/// before the items are (at most once, and only for a non-empty token). Items keep their
/// `metadata.managedFields` only when `keep_managed_fields` is set.
pub(crate) struct PageDecoder<K, F> {
    splitter: ListSplitter,
    /// What is listed: its name for error messages, the kind of its lists (a CRD's `listKind`
    /// is `KindList` unless it says otherwise, which API servers accept but no published CRD
    /// we know of does; a dynamic informer's target accepts lists of any kind), and the
    /// `apiVersion` and `kind` of items, for the types that keep them.
    target: Arc<Target>,
    objects: ObjectDecoder<K>,
    on_continue: Option<F>,
    intake: Option<Arc<dyn ListIntake<K>>>,
    meta: ListMeta,
    /// The body's `kind`, if it had one.
    kind: Option<String>,
    /// Whether `items` was `null` (an array is the splitter's to see).
    null_items: bool,
    status: StatusParts,
    /// Items not taken by the intake.
    items: Vec<Arc<K>>,
    /// Items read so far: decoded (taken or not), or taken undecoded by the intake (errors
    /// count items from 0).
    decoded: usize,
    /// [`shows_the_list`](Self::shows_the_list), as of the last member read.
    list_shown: bool,
    _kind: PhantomData<fn() -> K>,
}

impl<K: Object, F: FnOnce(&str)> PageDecoder<K, F> {
    /// A decoder of a page of `target`'s list.
    pub(crate) fn new(target: Arc<Target>, keep_managed_fields: bool, on_continue: F) -> Self {
        Self {
            splitter: ListSplitter::new(DEFAULT_MAX_OBJECT_SIZE),
            target,
            objects: ObjectDecoder::new(keep_managed_fields),
            on_continue: Some(on_continue),
            intake: None,
            meta: ListMeta::default(),
            kind: None,
            null_items: false,
            status: StatusParts::default(),
            items: Vec::new(),
            decoded: 0,
            list_shown: false,
            _kind: PhantomData,
        }
    }

    /// Refuses any item or member of the list larger than `bytes` (the client's
    /// [`max_object_size`](crate::Config::max_object_size)) as soon as it grows past it.
    /// Call it before the first [`push`](Self::push).
    pub(crate) fn max_object_size(mut self, bytes: usize) -> Self {
        self.splitter = ListSplitter::new(bytes);
        self
    }

    /// Hands items to `intake` as they are decoded (see the [module documentation](self)).
    pub(crate) fn into_intake(mut self, intake: Option<Arc<dyn ListIntake<K>>>) -> Self {
        self.intake = intake;
        self
    }

    /// Whether the body has shown it is a list of `K` at a resource version, so that its items
    /// may go to the intake before the whole body is in.
    fn shows_the_list(&self) -> bool {
        self.kind.as_deref().is_some_and(|kind| self.target.is_list_kind(kind))
            && self.meta.resource_version.as_deref().is_some_and(|rv| !rv.is_empty())
    }

    /// Decodes every part `chunk` completes.
    ///
    /// # Errors
    ///
    /// [`Error::Decode`] naming the resource, the part and the byte offset of the fault.
    pub(crate) fn push(&mut self, chunk: &[u8]) -> Result<(), Error> {
        self.splitter.push(chunk);
        loop {
            let piece = match self.splitter.next_piece() {
                Ok(Some(piece)) => piece,
                Ok(None) => return Ok(()),
                Err(e) => return Err(split_error(self.target.name(), self.decoded, &e)),
            };
            match piece {
                Piece::Member { key: "metadata", value, offset } => {
                    let meta: Option<ListMeta> = serde_json::from_slice(value).map_err(|e| {
                        part_error(self.target.name(), "metadata", value, offset, &e)
                    })?;
                    self.meta = meta.unwrap_or_default();
                    self.list_shown = self.shows_the_list();
                    let token = self.meta.continue_token.as_deref().filter(|t| !t.is_empty());
                    if let (Some(token), Some(on_continue)) = (token, self.on_continue.take()) {
                        on_continue(token);
                    }
                }
                Piece::Member { key: "items", value, offset } => {
                    // Arrays were split into items; what is left may only be `null`.
                    serde_json::from_slice::<Option<[IgnoredAny; 0]>>(value)
                        .map_err(|e| part_error(self.target.name(), "items", value, offset, &e))?;
                    self.null_items = true;
                }
                Piece::Member { key: key @ ("kind" | "reason" | "message"), value, offset } => {
                    let text: Option<String> = serde_json::from_slice(value)
                        .map_err(|e| part_error(self.target.name(), key, value, offset, &e))?;
                    match key {
                        "kind" => {
                            self.kind = text;
                            self.list_shown = self.shows_the_list();
                        }
                        "reason" => self.status.reason = text,
                        _ => self.status.message = text,
                    }
                }
                Piece::Member { key, value, offset } => {
                    serde_json::from_slice::<IgnoredAny>(value)
                        .map_err(|e| part_error(self.target.name(), key, value, offset, &e))?;
                }
                Piece::Item { value, offset } => {
                    // Offered undecoded first: a compact cache's intake keeps it as it came.
                    let taken_whole = self.list_shown
                        && self.intake.as_ref().is_some_and(|intake| {
                            intake.take_json(value, self.target.served_type())
                        });
                    if taken_whole {
                        self.decoded += 1;
                        continue;
                    }
                    let mut item = self.objects.decode(value).map_err(|e| {
                        let what = format!("item {}", self.decoded);
                        part_error(self.target.name(), &what, value, offset, &e)
                    })?;
                    let (api_version, kind) = self.target.served_type();
                    item.fill_type(api_version, kind);
                    self.decoded += 1;
                    let Some(intake) = &self.intake else {
                        self.items.push(Arc::new(item));
                        continue;
                    };
                    let item = intake.unchanged(&item).unwrap_or_else(|| Arc::new(item));
                    if self.list_shown {
                        self.items.extend(intake.take(item));
                    } else {
                        self.items.push(item);
                    }
                }
            }
        }
    }

    /// The page, once the whole body has been pushed.
    ///
    /// A body that is not a list of `K` is refused here, not read as an empty list: taken as
    /// one, it would make the reflector replace the cache with nothing, and every handler would
    /// get a delete for every object. So the body must say it is `K`'s list (`kind`), hold
    /// `items` (an array, or `null`), and carry the `resourceVersion` the reflector watches from.
    ///
    /// # Errors
    ///
    /// [`Error::Decode`] if the body ended before the list did, or is not a list of `K` with a
    /// resource version.
    pub(crate) fn finish(mut self) -> Result<ObjectList<K>, Error> {
        let items = self.decoded;
        self.splitter.finish().map_err(|e| split_error(self.target.name(), items, &e))?;
        let expected = format!("{}List", self.target.served_type().1);
        let resource = self.target.name();
        match self.kind.as_deref() {
            Some(kind) if self.target.is_list_kind(kind) => {}
            Some("Status") => {
                let reason = self.status.reason.as_deref().unwrap_or("no reason");
                let message = self.status.message.as_deref().unwrap_or("no message");
                return Err(Error::Decode(format!(
                    "{resource} list: the server answered 200 with a Status instead of a \
                     {expected} ({reason}: {message}); the list is retried"
                )));
            }
            Some(kind) => {
                return Err(Error::Decode(format!(
                    "{resource} list: the server answered 200 with a {kind} instead of a \
                     {expected}; the list is retried (is the URL served by the right API?)"
                )));
            }
            None => {
                return Err(Error::Decode(format!(
                    "{resource} list: the response has no `kind`, so it is not a {expected}; \
                     the list is retried"
                )));
            }
        }
        if !(self.null_items || self.splitter.saw_items_array()) {
            return Err(Error::Decode(format!(
                "{resource} list: the {expected} has no `items`; the list is retried"
            )));
        }
        if self.meta.resource_version.as_deref().is_none_or(str::is_empty) {
            return Err(Error::Decode(format!(
                "{resource} list: the {expected} has no `metadata.resourceVersion` to watch \
                 from; the list is retried"
            )));
        }
        Ok(ObjectList {
            items: self.items,
            resource_version: self.meta.resource_version.unwrap_or_default(),
            continue_token: self.meta.continue_token.filter(|t| !t.is_empty()),
        })
    }
}

/// The error for a body the splitter refused; `items` is the number of items decoded so far
/// (the index of the one being read).
fn split_error(resource: &str, items: usize, error: &SplitError) -> Error {
    let Some(part) = &error.too_large else {
        return Error::Decode(format!("{resource} list: {error}"));
    };
    let what = match part {
        Part::Item => format!("item {items}"),
        Part::Member(key) if key.is_empty() => "a key".to_owned(),
        Part::Member(key) => format!("the `{key}` member"),
    };
    Error::Decode(format!(
        "{resource} list: {what} (byte {}) is larger than the maximum object size, {} bytes \
         (Config::max_object_size); the list is retried: raise max_object_size if the API \
         server serves objects this large",
        error.offset, error.limit
    ))
}

/// A decode error in one part of a list body, placed in the whole body.
fn part_error(
    resource: &str,
    what: &str,
    part: &[u8],
    offset: u64,
    error: &serde_json::Error,
) -> Error {
    let at = offset + byte_offset(part, error) as u64;
    Error::Decode(format!("{resource} list: {what}: {} (byte {at})", json_error_message(error)))
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Pod;

    use super::*;

    #[test]
    fn decodes_items_version_and_continue_token_and_reports_the_token_first() {
        let body = br#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"7","continue":"tok"},
            "items":[{"metadata":{"name":"a","namespace":"n","resourceVersion":"5"}},{"metadata":{"name":"b","namespace":"n"}}]}"#;
        let mut seen = None;
        let page = decode_list_page::<Pod>(body, false, |t| seen = Some(t.to_owned())).unwrap();
        assert_eq!(seen.as_deref(), Some("tok"));
        assert_eq!(page.resource_version, "7");
        assert_eq!(page.continue_token.as_deref(), Some("tok"));
        let names: Vec<_> = page.items.iter().map(|p| p.metadata.name.clone().unwrap()).collect();
        assert_eq!(names, ["a", "b"]);
    }

    #[test]
    fn last_page_has_no_token_and_no_callback() {
        let body =
            br#"{"kind":"PodList","metadata":{"resourceVersion":"9","continue":""},"items":null}"#;
        let page = decode_list_page::<Pod>(body, false, |_| panic!("no continue token")).unwrap();
        assert!(page.items.is_empty());
        assert_eq!(page.continue_token, None);
        let body = br#"{"kind":"PodList","metadata":{"resourceVersion":"9"},"items":[]}"#;
        let page = decode_list_page::<Pod>(body, false, |_| {}).unwrap();
        assert_eq!((page.items.len(), page.resource_version.as_str()), (0, "9"));
    }

    /// A 200 answer that is not a list must never read as an empty one: the reflector would
    /// replace the cache with nothing and tell every handler every object was deleted.
    #[test]
    fn a_body_that_is_not_a_list_of_the_kind_is_an_error_not_an_empty_list() {
        let cases: [(&[u8], &str); 7] = [
            (b"{}", "has no `kind`"),
            (
                br#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"etcd is down","reason":"InternalError","code":500}"#,
                "a Status instead of a PodList (InternalError: etcd is down)",
            ),
            (
                br#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"x","resourceVersion":"4"},"data":{}}"#,
                "a ConfigMap instead of a PodList",
            ),
            (
                br#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"4"},"items":[]}"#,
                "a ConfigMapList instead of a PodList",
            ),
            (br#"{"kind":"PodList","metadata":{"resourceVersion":"4"}}"#, "has no `items`"),
            (br#"{"kind":"PodList","items":[]}"#, "no `metadata.resourceVersion`"),
            (
                br#"{"kind":"PodList","metadata":{"resourceVersion":""},"items":[]}"#,
                "no `metadata.resourceVersion`",
            ),
        ];
        for (body, expected) in cases {
            let shown = String::from_utf8_lossy(body);
            match decode_list_page::<Pod>(body, false, |_| {}) {
                Err(Error::Decode(message)) => {
                    assert!(message.starts_with("pods list: "), "{shown}: {message}");
                    assert!(message.contains(expected), "{shown}: {message}");
                }
                other => panic!("{shown}: expected a decode error, got {other:?}"),
            }
        }
    }

    #[test]
    fn a_metadata_only_list_is_a_partial_object_metadata_list() {
        use informer_runtime::metadata::PartialObjectMetadata;
        let body = br#"{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"5"},"items":[{"metadata":{"name":"a","namespace":"n"}}]}"#;
        let page = decode_list_page::<PartialObjectMetadata<Pod>>(body, false, |_| {}).unwrap();
        assert_eq!(page.items.len(), 1);
        let body = br#"{"kind":"PodList","metadata":{"resourceVersion":"5"},"items":[]}"#;
        assert!(decode_list_page::<PartialObjectMetadata<Pod>>(body, false, |_| {}).is_err());
    }

    #[test]
    fn metadata_after_items_still_works() {
        let body = br#"{"items":[{"metadata":{"name":"a"}}],"metadata":{"resourceVersion":"3","continue":"c"},"kind":"PodList"}"#;
        let mut calls = 0;
        let page = decode_list_page::<Pod>(body, false, |_| calls += 1).unwrap();
        assert_eq!((page.items.len(), calls), (1, 1));
    }

    #[test]
    fn errors_name_resource_item_and_byte() {
        let body =
            br#"{"metadata":{},"items":[{"metadata":{"name":"a"}},{"metadata":{"name":7}}]}"#;
        let Err(Error::Decode(message)) = decode_list_page::<Pod>(body, false, |_| {}) else {
            panic!("expected a decode error");
        };
        assert!(message.starts_with("pods list: item 1: invalid type: integer `7`"), "{message}");
        assert!(message.contains("(byte "), "{message}");
        assert!(!message.contains("line"), "{message}");
    }

    #[test]
    fn truncated_and_trailing_bodies_fail() {
        assert!(decode_list_page::<Pod>(br#"{"items":[{"metadata":{}}"#, false, |_| {}).is_err());
        assert!(decode_list_page::<Pod>(br#"{"items":[]} x"#, false, |_| {}).is_err());
    }

    #[test]
    fn real_pod_list() {
        let body = include_bytes!("../../tests/fixtures/kind-v1-36-job-pods-podlist.compact.json");
        let page = decode_list_page::<Pod>(body, false, |_| {}).unwrap();
        assert_eq!(page.resource_version, "636");
        assert!(!page.items.is_empty());
        assert!(page.items.iter().all(|p| p.metadata.namespace.as_deref() == Some("default")));
    }

    #[test]
    fn items_lose_managed_fields_unless_kept_and_are_otherwise_equal() {
        let body = include_bytes!("../../tests/fixtures/kind-v1-36-job-pods-podlist.compact.json");
        let pruned = decode_list_page::<Pod>(body, false, |_| {}).unwrap();
        let kept = decode_list_page::<Pod>(body, true, |_| {}).unwrap();
        assert_eq!(pruned.items.len(), kept.items.len());
        assert!(kept.items.iter().all(|p| p.metadata.managed_fields.is_some()));
        for (pruned, kept) in pruned.items.iter().zip(&kept.items) {
            let mut expected = (**kept).clone();
            expected.metadata.managed_fields = None;
            assert_eq!(**pruned, expected);
        }
    }

    #[test]
    fn pruning_does_not_change_errors() {
        // The fault comes after a skipped `managedFields`, in the same metadata.
        let body = br#"{"metadata":{},"items":[{"metadata":{"name":"a"}},{"metadata":{"managedFields":[{"manager":"m","fieldsV1":{"f:x":{}}}],"name":7}}]}"#;
        let messages: Vec<String> = [false, true]
            .into_iter()
            .map(|keep| match decode_list_page::<Pod>(body, keep, |_| {}) {
                Err(Error::Decode(message)) => message,
                other => panic!("expected a decode error, got {other:?}"),
            })
            .collect();
        assert_eq!(messages[0], messages[1]);
        assert!(
            messages[0].starts_with("pods list: item 1: invalid type: integer `7`"),
            "{}",
            messages[0]
        );
        assert!(messages[0].contains("(byte "), "{}", messages[0]);
    }
}
