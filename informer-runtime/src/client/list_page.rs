//! One list response body to one typed page, decoded part by part while it arrives.
//!
//! Where lists enter the data flow: the HTTP lister-watcher pushes the body of one list response
//! into a [`PageDecoder`], chunk by chunk as the socket delivers it. The
//! [splitter](super::list_split) cuts out each part as soon as it is complete, and each item is
//! deserialized on its own, straight into its `Arc<K>` (no untyped JSON tree, no intermediate
//! `Vec<K>`, and never the whole body in memory). The list's `metadata` comes before `items` in
//! what API servers write, so the continue token is known, and reported to a callback, before
//! any item is decoded: the caller uses that to start fetching the next page meanwhile.
//!
//! Unless told to keep it, each item's `metadata.managedFields` is skipped while decoding (see
//! [`prune`](super::prune)): it is never allocated. Items are decoded by an
//! [`ObjectDecoder`], so their vectors have exact capacities. With a [`ReuseFn`], an item the cache
//! already holds unchanged is dropped as soon as it is decoded, and the cached object stands in
//! for it.

use std::marker::PhantomData;
use std::sync::Arc;

use serde::Deserialize;
use serde::de::IgnoredAny;

use super::error::{byte_offset, json_error_message};
use super::list_split::{ListSplitter, Piece, SplitError};
use super::object_decoder::ObjectDecoder;
use crate::listwatch::{Error, ObjectList, ReuseFn};
use crate::resource::Resource;

/// Decodes one page of a list of `resource` from its whole body; see [`PageDecoder`].
///
/// # Errors
///
/// [`Error::Decode`] naming the resource, the item and the byte offset of the fault.
#[cfg(test)]
pub(crate) fn decode_list_page<K: Resource>(
    body: &[u8],
    resource: &str,
    keep_managed_fields: bool,
    on_continue: impl FnOnce(&str),
) -> Result<ObjectList<K>, Error> {
    let mut decoder = PageDecoder::new(resource.into(), keep_managed_fields, on_continue);
    decoder.push(body)?;
    decoder.finish()
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
    resource: Arc<str>,
    objects: ObjectDecoder<K>,
    on_continue: Option<F>,
    reuse: Option<ReuseFn<K>>,
    meta: ListMeta,
    items: Vec<Arc<K>>,
    _kind: PhantomData<fn() -> K>,
}

impl<K: Resource, F: FnOnce(&str)> PageDecoder<K, F> {
    pub(crate) fn new(resource: Arc<str>, keep_managed_fields: bool, on_continue: F) -> Self {
        Self {
            splitter: ListSplitter::new(),
            resource,
            objects: ObjectDecoder::new(keep_managed_fields),
            on_continue: Some(on_continue),
            reuse: None,
            meta: ListMeta::default(),
            items: Vec::new(),
            _kind: PhantomData,
        }
    }

    /// Holds `reuse`'s object in place of each item it finds one for.
    pub(crate) fn reusing(mut self, reuse: Option<ReuseFn<K>>) -> Self {
        self.reuse = reuse;
        self
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
                Err(e) => return Err(split_error(&self.resource, &e)),
            };
            match piece {
                Piece::Member { key: "metadata", value, offset } => {
                    let meta: Option<ListMeta> = serde_json::from_slice(value)
                        .map_err(|e| part_error(&self.resource, "metadata", value, offset, &e))?;
                    self.meta = meta.unwrap_or_default();
                    let token = self.meta.continue_token.as_deref().filter(|t| !t.is_empty());
                    if let (Some(token), Some(on_continue)) = (token, self.on_continue.take()) {
                        on_continue(token);
                    }
                }
                Piece::Member { key: "items", value, offset } => {
                    // Arrays were split into items; what is left may only be `null`.
                    serde_json::from_slice::<Option<[IgnoredAny; 0]>>(value)
                        .map_err(|e| part_error(&self.resource, "items", value, offset, &e))?;
                }
                Piece::Member { key, value, offset } => {
                    serde_json::from_slice::<IgnoredAny>(value)
                        .map_err(|e| part_error(&self.resource, key, value, offset, &e))?;
                }
                Piece::Item { value, offset } => {
                    let item = self.objects.decode(value).map_err(|e| {
                        let what = format!("item {}", self.items.len());
                        part_error(&self.resource, &what, value, offset, &e)
                    })?;
                    let known = self.reuse.as_ref().and_then(|reuse| reuse(&item));
                    self.items.push(known.unwrap_or_else(|| Arc::new(item)));
                }
            }
        }
    }

    /// The page, once the whole body has been pushed.
    ///
    /// # Errors
    ///
    /// [`Error::Decode`] if the body ended before the list did.
    pub(crate) fn finish(mut self) -> Result<ObjectList<K>, Error> {
        self.splitter.finish().map_err(|e| split_error(&self.resource, &e))?;
        Ok(ObjectList {
            items: self.items,
            resource_version: self.meta.resource_version.unwrap_or_default(),
            continue_token: self.meta.continue_token.filter(|t| !t.is_empty()),
        })
    }
}

fn split_error(resource: &str, error: &SplitError) -> Error {
    Error::Decode(format!("{resource} list: {error}"))
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
        let page =
            decode_list_page::<Pod>(body, "pods", false, |t| seen = Some(t.to_owned())).unwrap();
        assert_eq!(seen.as_deref(), Some("tok"));
        assert_eq!(page.resource_version, "7");
        assert_eq!(page.continue_token.as_deref(), Some("tok"));
        let names: Vec<_> = page.items.iter().map(|p| p.metadata.name.clone().unwrap()).collect();
        assert_eq!(names, ["a", "b"]);
    }

    #[test]
    fn last_page_has_no_token_and_no_callback() {
        let body = br#"{"metadata":{"resourceVersion":"9","continue":""},"items":null}"#;
        let page =
            decode_list_page::<Pod>(body, "pods", false, |_| panic!("no continue token")).unwrap();
        assert!(page.items.is_empty());
        assert_eq!(page.continue_token, None);
        let page = decode_list_page::<Pod>(br#"{"items":[]}"#, "pods", false, |_| {}).unwrap();
        assert_eq!(page.resource_version, "");
    }

    #[test]
    fn metadata_after_items_still_works() {
        let body = br#"{"items":[{"metadata":{"name":"a"}}],"metadata":{"resourceVersion":"3","continue":"c"}}"#;
        let mut calls = 0;
        let page = decode_list_page::<Pod>(body, "pods", false, |_| calls += 1).unwrap();
        assert_eq!((page.items.len(), calls), (1, 1));
    }

    #[test]
    fn errors_name_resource_item_and_byte() {
        let body =
            br#"{"metadata":{},"items":[{"metadata":{"name":"a"}},{"metadata":{"name":7}}]}"#;
        let Err(Error::Decode(message)) = decode_list_page::<Pod>(body, "pods", false, |_| {})
        else {
            panic!("expected a decode error");
        };
        assert!(message.starts_with("pods list: item 1: invalid type: integer `7`"), "{message}");
        assert!(message.contains("(byte "), "{message}");
        assert!(!message.contains("line"), "{message}");
    }

    #[test]
    fn truncated_and_trailing_bodies_fail() {
        assert!(
            decode_list_page::<Pod>(br#"{"items":[{"metadata":{}}"#, "pods", false, |_| {})
                .is_err()
        );
        assert!(decode_list_page::<Pod>(br#"{"items":[]} x"#, "pods", false, |_| {}).is_err());
    }

    #[test]
    fn real_pod_list() {
        let body = include_bytes!("../../tests/fixtures/kind-v1-36-job-pods-podlist.compact.json");
        let page = decode_list_page::<Pod>(body, "pods", false, |_| {}).unwrap();
        assert_eq!(page.resource_version, "636");
        assert!(!page.items.is_empty());
        assert!(page.items.iter().all(|p| p.metadata.namespace.as_deref() == Some("default")));
    }

    #[test]
    fn items_lose_managed_fields_unless_kept_and_are_otherwise_equal() {
        let body = include_bytes!("../../tests/fixtures/kind-v1-36-job-pods-podlist.compact.json");
        let pruned = decode_list_page::<Pod>(body, "pods", false, |_| {}).unwrap();
        let kept = decode_list_page::<Pod>(body, "pods", true, |_| {}).unwrap();
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
            .map(|keep| match decode_list_page::<Pod>(body, "pods", keep, |_| {}) {
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
