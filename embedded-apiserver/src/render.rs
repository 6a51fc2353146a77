//! Responses as the client asked for them: content negotiation (`Accept`) and the JSON of
//! objects, lists, tables and partial object metadata.
//!
//! Objects are stored at their storage version; they are served at the requested version
//! (only `apiVersion` differs for CRDs with the `None` conversion strategy; those with a
//! conversion webhook are converted before they get here, see `conversion.rs`). Lists of
//! built-in types omit `kind` and `apiVersion` on their items, as typed lists do on the wire;
//! lists of custom resources keep them.
//!
//! `PartialObjectMetadata` follows kube-apiserver's `transformObject`: the `as=` kind must fit
//! the answer (`PartialObjectMetadataList` for a list, `PartialObjectMetadata` for one object
//! and for each object of a watch); the wrong one is a `406 NotAcceptable` once the answer is
//! known, not a reason to try the next media range. Every item of a `PartialObjectMetadataList`
//! carries `kind` and `apiVersion`, and an empty one has `"items": null` (a nil Go slice).

use std::borrow::Cow;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value, json};

use crate::catalog::ApiResource;
use crate::query::Query;
use crate::served::{ListMeta, partial_metadata, served};
use crate::status::ApiError;
use crate::storage::Object;
use crate::table::{self, Include};

/// The representation a response is rendered in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Output {
    /// The objects themselves.
    Json,
    /// A `meta.k8s.io` `Table` (`v1` or `v1beta1`).
    Table { api_version: &'static str, include: Include },
    /// `PartialObjectMetadata` (`list: false`) or `PartialObjectMetadataList` (`list: true`):
    /// the `as=` of the request, which must fit the answer.
    Metadata { api_version: &'static str, list: bool },
}

/// Picks the first representation of the `Accept` header the server can produce.
pub(crate) fn negotiate(accept: Option<&str>, query: &Query) -> Result<Output, ApiError> {
    let Some(accept) = accept.filter(|a| !a.trim().is_empty()) else {
        return Ok(Output::Json);
    };
    for range in accept.split(',') {
        let mut parts = range.split(';').map(str::trim);
        let media = parts.next().unwrap_or_default().to_ascii_lowercase();
        let params: Vec<(String, &str)> = parts
            .filter_map(|p| p.split_once('='))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().trim_matches('"')))
            .collect();
        let param = |name: &str| params.iter().find(|(k, _)| k == name).map(|(_, v)| *v);
        if !matches!(media.as_str(), "application/json" | "application/*" | "*/*") {
            continue;
        }
        let api_version = match (param("g"), param("v")) {
            (Some("meta.k8s.io"), Some("v1")) => "meta.k8s.io/v1",
            (Some("meta.k8s.io"), Some("v1beta1")) => "meta.k8s.io/v1beta1",
            _ => "",
        };
        match param("as") {
            None => return Ok(Output::Json),
            Some("Table") if !api_version.is_empty() => {
                let include = match query.get("includeObject").unwrap_or_default() {
                    "" | "Metadata" => Include::Metadata,
                    "None" => Include::None,
                    "Object" => Include::Object,
                    other => {
                        return Err(ApiError::bad_request(format!(
                            "unrecognized includeObject value: {other:?}"
                        )));
                    }
                };
                return Ok(Output::Table { api_version, include });
            }
            Some(kind @ ("PartialObjectMetadata" | "PartialObjectMetadataList"))
                if !api_version.is_empty() =>
            {
                let list = kind == "PartialObjectMetadataList";
                return Ok(Output::Metadata { api_version, list });
            }
            // Aggregated discovery and other conversions: try the next range.
            Some(_) => {}
        }
    }
    Err(ApiError::not_acceptable(
        "only the following media types are accepted: application/json, \
         application/json;as=Table;v=v1;g=meta.k8s.io, \
         application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io",
    ))
}

/// The 406 of kube-apiserver's `asPartialObjectMetadata(List)` when the `as=` kind does not fit
/// the answer: a list asked for as `PartialObjectMetadata`, or an object as
/// `PartialObjectMetadataList`. `Ok` otherwise.
pub(crate) fn check_shape(
    output: Output,
    resource: &ApiResource,
    is_list: bool,
) -> Result<(), ApiError> {
    let Output::Metadata { list, .. } = output else { return Ok(()) };
    if list == is_list {
        return Ok(());
    }
    // The Go type the handler holds: the internal type of a built-in (`*core.PodList`), an
    // unstructured object for a custom resource.
    let suffix = if is_list { "List" } else { "" };
    let go_type = if resource.builtin {
        let package =
            resource.ty.group.split('.').next().filter(|g| !g.is_empty()).unwrap_or("core");
        format!("*{package}.{}{suffix}", resource.ty.kind)
    } else {
        format!("*unstructured.Unstructured{suffix}")
    };
    Err(ApiError::not_acceptable(if is_list {
        format!(
            "you requested PartialObjectMetadata, but the requested object is a list ({go_type})"
        )
    } else {
        format!(
            "you requested PartialObjectMetadataList, but the requested object is not a list ({go_type})"
        )
    }))
}

/// One object in the negotiated representation.
///
/// # Errors
///
/// 406 when the request asked for a `PartialObjectMetadataList` (see [`check_shape`]).
pub(crate) fn object(
    obj: &Value,
    resource: &ApiResource,
    output: Output,
) -> Result<Value, ApiError> {
    check_shape(output, resource, false)?;
    Ok(match output {
        Output::Json => served(obj, resource).into_owned(),
        Output::Metadata { api_version, .. } => partial_metadata(obj, api_version),
        Output::Table { api_version, include } => {
            let rv = crate::storage::meta_str(obj, "resourceVersion").to_owned();
            let meta = ListMeta { resource_version: rv, ..ListMeta::default() };
            table::table(resource, &[obj], api_version, include, true, &meta)
        }
    })
}

/// A list in the negotiated representation, serialized.
///
/// # Errors
///
/// 406 when the request asked for a `PartialObjectMetadata` (see [`check_shape`]).
pub(crate) fn list(
    resource: &ApiResource,
    items: &[Object],
    meta: &ListMeta,
    output: Output,
) -> Result<Vec<u8>, ApiError> {
    check_shape(output, resource, true)?;
    Ok(match output {
        Output::Json => {
            // The streaming writer, run to the end: one place writes a JSON list's envelope.
            let shape = ItemShape::Object { strip: resource.builtin };
            let mut writer = ListWriter::new(resource, shape, Cow::Borrowed(items), meta);
            let mut body = Vec::new();
            while writer.write_chunk(&mut body) {}
            body
        }
        Output::Metadata { api_version, .. } => {
            // `asPartialObjectMetadataList` appends to a nil slice: no items is `null`.
            let items: Value = if items.is_empty() {
                Value::Null
            } else {
                items.iter().map(|o| partial_metadata(o, api_version)).collect()
            };
            let body = json!({"kind": "PartialObjectMetadataList", "apiVersion": api_version,
                              "metadata": meta.to_json(), "items": items});
            body.to_string().into_bytes()
        }
        Output::Table { api_version, include } => {
            let rows: Vec<&Value> = items.iter().map(|o| &**o).collect();
            table::table(resource, &rows, api_version, include, true, meta).to_string().into_bytes()
        }
    })
}

/// Lists with more items than this are streamed (see [`list_response`]).
const STREAM_ITEMS_ABOVE: usize = 64;

/// About how many bytes of items go in one chunk of a streamed list.
const STREAM_CHUNK: usize = 256 * 1024;

/// A list response. Plain JSON lists of more than a few items are streamed: the envelope, then
/// the items a chunk at a time, serialized as the client reads them. kube-apiserver has streamed
/// JSON collections since 1.33 (`StreamingCollectionEncodingToJSON`), and it matters for the
/// same reason here: a list of tens of thousands of objects is never rendered whole before its
/// first byte leaves, so the client decodes while the server writes.
pub(crate) fn list_response(
    resource: &Arc<ApiResource>,
    items: Vec<Object>,
    meta: &ListMeta,
    output: Output,
) -> Result<Response, ApiError> {
    let shape = match output {
        _ if items.len() <= STREAM_ITEMS_ABOVE => None,
        Output::Json => Some(ItemShape::Object { strip: resource.builtin }),
        Output::Metadata { api_version, list: true } => Some(ItemShape::Metadata { api_version }),
        Output::Metadata { .. } | Output::Table { .. } => None,
    };
    let Some(shape) = shape else {
        return Ok(json_response(StatusCode::OK, list(resource, &items, meta, output)?));
    };
    let writer = ListWriter::new(resource, shape, Cow::Owned(items), meta);
    let chunks = futures::stream::unfold(writer, |mut writer| async move {
        let mut chunk = Vec::new();
        if !writer.write_chunk(&mut chunk) {
            return None;
        }
        Some((Ok::<_, std::convert::Infallible>(Bytes::from(chunk)), writer))
    });
    let mut response = Response::new(Body::from_stream(chunks));
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    Ok(response)
}

/// What each item of a JSON list is written as.
#[derive(Clone, Copy)]
enum ItemShape {
    /// The object (without `kind`/`apiVersion` for built-ins).
    Object { strip: bool },
    /// Its `PartialObjectMetadata`.
    Metadata { api_version: &'static str },
}

/// A JSON list written a chunk at a time: what is left to write. Streamed lists send each
/// chunk as it is written; whole ones write every chunk into one buffer.
struct ListWriter<'a> {
    /// The `apiVersion` the objects are served at.
    item_api_version: String,
    shape: ItemShape,
    items: Cow<'a, [Object]>,
    next: usize,
    /// The envelope up to `items`' `[`, until the first chunk is written.
    head: Option<Vec<u8>>,
}

impl<'a> ListWriter<'a> {
    /// A writer of `items` of `resource`, each as `shape`, in a list with `meta`.
    fn new(
        resource: &ApiResource,
        shape: ItemShape,
        items: Cow<'a, [Object]>,
        meta: &ListMeta,
    ) -> Self {
        let item_api_version = resource.api_version();
        let (list_kind, api_version) = match shape {
            ItemShape::Object { .. } => (resource.list_kind.as_str(), item_api_version.as_str()),
            ItemShape::Metadata { api_version } => ("PartialObjectMetadataList", api_version),
        };
        // TypeMeta, ListMeta, then items: the order kube-apiserver writes.
        let mut head = Vec::new();
        head.extend_from_slice(b"{\"kind\":");
        head.extend(serde_json::to_vec(list_kind).unwrap_or_default());
        head.extend_from_slice(b",\"apiVersion\":");
        head.extend(serde_json::to_vec(api_version).unwrap_or_default());
        head.extend_from_slice(b",\"metadata\":");
        head.extend(serde_json::to_vec(&meta.to_json()).unwrap_or_default());
        head.extend_from_slice(b",\"items\":[");
        Self { item_api_version, shape, items, next: 0, head: Some(head) }
    }

    /// Appends the next chunk, about [`STREAM_CHUNK`] bytes of items, to `out`; `false`, with
    /// nothing appended, once the list's closing bytes have been written.
    fn write_chunk(&mut self, out: &mut Vec<u8>) -> bool {
        if self.next > self.items.len() {
            return false;
        }
        let start = out.len();
        if let Some(head) = self.head.take() {
            out.extend(head);
        }
        while self.next < self.items.len() && out.len() - start < STREAM_CHUNK {
            if self.next > 0 {
                out.push(b',');
            }
            let obj = &self.items[self.next];
            // Serializing JSON values into memory cannot fail.
            let _ = match self.shape {
                ItemShape::Object { strip } => {
                    let item = Item { obj, api_version: &self.item_api_version, strip };
                    serde_json::to_writer(&mut *out, &item)
                }
                ItemShape::Metadata { api_version } => {
                    serde_json::to_writer(&mut *out, &PartialItem { obj, api_version })
                }
            };
            self.next += 1;
        }
        if self.next == self.items.len() {
            out.extend_from_slice(b"]}");
            self.next += 1;
        }
        true
    }
}

/// An object's `PartialObjectMetadata`, serialized without copying its metadata.
struct PartialItem<'a> {
    obj: &'a Value,
    api_version: &'a str,
}

impl Serialize for PartialItem<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(3))?;
        map.serialize_entry("kind", "PartialObjectMetadata")?;
        map.serialize_entry("apiVersion", self.api_version)?;
        match self.obj.get("metadata") {
            Some(metadata) => map.serialize_entry("metadata", metadata)?,
            None => map.serialize_entry("metadata", &Map::new())?,
        }
        map.end()
    }
}

/// One list item: without `kind`/`apiVersion` (built-ins), or with `apiVersion` as served.
struct Item<'a> {
    obj: &'a Value,
    api_version: &'a str,
    strip: bool,
}

impl Serialize for Item<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Value::Object(fields) = self.obj else {
            return self.obj.serialize(serializer);
        };
        let mut map = serializer.serialize_map(None)?;
        for (key, value) in fields {
            match key.as_str() {
                "kind" | "apiVersion" if self.strip => {}
                "apiVersion" => map.serialize_entry(key, self.api_version)?,
                _ => map.serialize_entry(key, value)?,
            }
        }
        map.end()
    }
}

/// A JSON response.
pub(crate) fn json_response(code: StatusCode, body: Vec<u8>) -> Response {
    let mut response = (code, body).into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;
    use std::sync::Arc;

    #[test]
    fn negotiation_follows_kubectl_accept_headers() {
        let q = Query::default();
        let kubectl = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        assert_eq!(
            negotiate(Some(kubectl), &q).unwrap(),
            Output::Table { api_version: "meta.k8s.io/v1", include: Include::Metadata }
        );
        let discovery =
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";
        assert_eq!(negotiate(Some(discovery), &q).unwrap(), Output::Json);
        assert_eq!(
            negotiate(Some("application/vnd.kubernetes.protobuf, */*"), &q).unwrap(),
            Output::Json
        );
        assert_eq!(
            negotiate(Some("application/vnd.kubernetes.protobuf"), &q).unwrap_err().code,
            406
        );
        // client-go's metadata client: protobuf first (not served here), then JSON.
        let metadata_list = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
        assert_eq!(
            negotiate(Some(metadata_list), &q).unwrap(),
            Output::Metadata { api_version: "meta.k8s.io/v1", list: true }
        );
        assert_eq!(
            negotiate(
                Some("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1"),
                &q
            )
            .unwrap(),
            Output::Metadata { api_version: "meta.k8s.io/v1beta1", list: false }
        );
        let other_group = "application/json;as=PartialObjectMetadata;g=example.com;v=v1";
        assert_eq!(negotiate(Some(other_group), &q).unwrap_err().code, 406);
        let none = Query::parse(Some("includeObject=None"));
        assert!(matches!(
            negotiate(Some("application/json;as=Table;g=meta.k8s.io;v=v1"), &none).unwrap(),
            Output::Table { include: Include::None, .. }
        ));
    }

    #[test]
    fn builtin_list_items_have_no_type_meta() {
        let catalog = Catalog::builtin();
        let pods = catalog.find("", "v1", "pods").unwrap();
        let pod = Arc::new(json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"}}));
        let meta = ListMeta { resource_version: "7".into(), ..ListMeta::default() };
        let body: Value =
            serde_json::from_slice(&list(&pods, &[pod], &meta, Output::Json).unwrap()).unwrap();
        assert_eq!(
            body,
            json!({"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "7"},
                   "items": [{"metadata": {"name": "a"}}]})
        );
    }

    /// The bytes of a list response, however it is sent.
    async fn body_of(response: Response) -> Vec<u8> {
        axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap().to_vec()
    }

    #[tokio::test]
    async fn streamed_lists_are_what_unstreamed_ones_are() {
        let catalog = Catalog::builtin();
        let pods = catalog.find("", "v1", "pods").unwrap();
        // Big enough for several chunks.
        let filler = "x".repeat(4096);
        let items_again = |count: usize| -> Vec<Object> {
            (0..count)
                .map(|i| {
                    Arc::new(json!({"apiVersion": "v1", "kind": "Pod", "spec": {"a": 1},
                        "metadata": {"name": format!("p-{i}"), "annotations": {"f": filler}}}))
                })
                .collect()
        };
        for count in [0, STREAM_ITEMS_ABOVE, STREAM_ITEMS_ABOVE + 1, 300] {
            let items = items_again(count);
            let meta = ListMeta {
                resource_version: "7".into(),
                continue_token: Some("c".into()),
                remaining: Some(3),
            };
            let whole = list(&pods, &items, &meta, Output::Json).unwrap();
            let response = list_response(&pods, items, &meta, Output::Json).unwrap();
            let streamed = axum::body::HttpBody::size_hint(response.body()).exact().is_none();
            assert_eq!(streamed, count > STREAM_ITEMS_ABOVE, "{count} items");
            assert_eq!(body_of(response).await, whole, "{count} items");

            let metadata = Output::Metadata { api_version: "meta.k8s.io/v1", list: true };
            let whole: Value =
                serde_json::from_slice(&list(&pods, &items_again(count), &meta, metadata).unwrap())
                    .unwrap();
            let response = list_response(&pods, items_again(count), &meta, metadata).unwrap();
            let streamed: Value = serde_json::from_slice(&body_of(response).await).unwrap();
            assert_eq!(streamed, whole, "{count} items as metadata");
        }
    }
}
