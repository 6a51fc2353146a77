//! One list response body to one typed page, in a single pass and without copies.
//!
//! Where lists enter the data flow: the HTTP lister-watcher hands the body bytes of one list
//! response to [`decode_list_page`], which deserializes `{metadata, items}` straight into
//! `Vec<Arc<K>>` (no untyped JSON tree, no intermediate `Vec<K>`). The list's `metadata` comes
//! before `items` in what API servers write, so the continue token is known, and reported to a
//! callback, before the items are decoded: the caller uses that to start fetching the next page
//! while this one is still being decoded.
//!
//! Unless told to keep it, each item's `metadata.managedFields` is skipped while decoding (see
//! [`prune`](super::prune)): it is never allocated.

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::error::decode_error;
use super::prune::ObjectSeed;
use crate::listwatch::{Error, ObjectList};
use crate::resource::Resource;

/// Decodes one page of a list of `resource` from its body.
///
/// `on_continue` is called with the continue token as soon as the list's metadata has been read,
/// before the items are (at most once, and only for a non-empty token). Items keep their
/// `metadata.managedFields` only when `keep_managed_fields` is set.
///
/// # Errors
///
/// [`Error::Decode`] naming the resource, the item and the byte offset of the fault.
pub(crate) fn decode_list_page<K: Resource>(
    body: &[u8],
    resource: &str,
    keep_managed_fields: bool,
    on_continue: impl FnOnce(&str),
) -> Result<ObjectList<K>, Error> {
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    let seed = PageSeed::<K, _> {
        on_continue: Some(on_continue),
        keep_managed_fields,
        _kind: PhantomData,
    };
    let page = seed
        .deserialize(&mut deserializer)
        .and_then(|page| deserializer.end().map(|()| page))
        .map_err(|e| decode_error(resource, "list", body, &e))?;
    Ok(page)
}

/// The list's metadata: the part of `ListMeta` the reflector needs.
#[derive(Default, Deserialize)]
struct ListMeta {
    #[serde(default, rename = "resourceVersion")]
    resource_version: Option<String>,
    #[serde(default, rename = "continue")]
    continue_token: Option<String>,
}

struct PageSeed<K, F> {
    on_continue: Option<F>,
    keep_managed_fields: bool,
    _kind: PhantomData<fn() -> K>,
}

impl<'de, K: Resource, F: FnOnce(&str)> DeserializeSeed<'de> for PageSeed<K, F> {
    type Value = ObjectList<K>;

    fn deserialize<D: de::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de, K: Resource, F: FnOnce(&str)> Visitor<'de> for PageSeed<K, F> {
    type Value = ObjectList<K>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a {}List", K::KIND)
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut meta = ListMeta::default();
        let mut items = Vec::new();
        while let Some(field) = map.next_key::<Field>()? {
            match field {
                Field::Metadata => {
                    meta = map.next_value::<Option<ListMeta>>()?.unwrap_or_default();
                    if let Some(token) = meta.continue_token.as_deref().filter(|t| !t.is_empty()) {
                        if let Some(on_continue) = self.on_continue.take() {
                            on_continue(token);
                        }
                    }
                }
                Field::Items => {
                    let seed = ItemsSeed::<K>::new(self.keep_managed_fields);
                    items = map.next_value_seed(seed)?;
                }
                Field::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(ObjectList {
            items,
            resource_version: meta.resource_version.unwrap_or_default(),
            continue_token: meta.continue_token.filter(|t| !t.is_empty()),
        })
    }
}

/// The fields of a list object this decoder looks at.
enum Field {
    Metadata,
    Items,
    Other,
}

impl<'de> Deserialize<'de> for Field {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct FieldVisitor;
        impl Visitor<'_> for FieldVisitor {
            type Value = Field;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a field name")
            }

            fn visit_str<E: de::Error>(self, name: &str) -> Result<Field, E> {
                Ok(match name {
                    "metadata" => Field::Metadata,
                    "items" => Field::Items,
                    _ => Field::Other,
                })
            }
        }
        deserializer.deserialize_identifier(FieldVisitor)
    }
}

/// `items`: an array (or `null`) of `K`, each put in its `Arc` as it is decoded.
struct ItemsSeed<K> {
    keep_managed_fields: bool,
    _kind: PhantomData<fn() -> K>,
}

impl<K> ItemsSeed<K> {
    fn new(keep_managed_fields: bool) -> Self {
        Self { keep_managed_fields, _kind: PhantomData }
    }
}

impl<'de, K: Resource> DeserializeSeed<'de> for ItemsSeed<K> {
    type Value = Vec<Arc<K>>;

    fn deserialize<D: de::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_option(self)
    }
}

impl<'de, K: Resource> Visitor<'de> for ItemsSeed<K> {
    type Value = Vec<Arc<K>>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "an array of {}", K::KIND)
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Vec::new())
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Vec::new())
    }

    fn visit_some<D: de::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_seq(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        loop {
            match seq.next_element_seed(ObjectSeed::<K>::new(self.keep_managed_fields)) {
                Ok(Some(item)) => items.push(Arc::new(item)),
                Ok(None) => return Ok(items),
                Err(e) => {
                    // Name the item; the position is added again by the outer layer.
                    let message = describe(&e);
                    return Err(de::Error::custom(format_args!("item {}: {message}", items.len())));
                }
            }
        }
    }
}

/// The message of a nested error without `serde_json`'s position (the outer layer adds it).
fn describe(error: &impl fmt::Display) -> String {
    let mut text = error.to_string();
    if let Some(at) = text.rfind(" at line ") {
        text.truncate(at);
    }
    text
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
