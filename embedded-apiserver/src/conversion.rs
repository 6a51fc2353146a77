//! Custom resources served in a version other than the one they are stored in: converted by
//! the CRD's conversion webhook (`spec.conversion.strategy: Webhook`) with `ConversionReview`
//! v1 (or v1beta1), or by rewriting `apiVersion` (`None`, the default).
//!
//! This is the apiextensions server's `webhookConverter` (`k8s.io/apiextensions-apiserver/pkg/
//! apiserver/conversion/webhook_converter.go`): only objects not already in the desired
//! version are sent; the answer must have as many objects, each of the desired version, of
//! the same kind, name, namespace and UID; each converted object keeps its original metadata
//! except labels and annotations, which the webhook may change. A failure is answered as
//! kube-apiserver answers it, `500` with no reason and the converter's error as the message:
//! `conversion webhook for GROUP/VERSION, Kind=KIND failed: Post "URL?timeout=30s": ...`.
//!
//! Where objects are converted (the callers): a read (get, list, each watch event) converts
//! from the version each object was stored in (the storage version when it was last written:
//! the storage version may have moved since) to the requested one; a write converts the
//! request's object to the storage version and what it stored back. Lists are converted in one
//! review (the converter's `UnstructuredList` form). kube-apiserver converts when its watch
//! cache for each served version takes in an object, one object a review, rather than per
//! request: a webhook here is called for every read of objects stored in a version other than
//! the one asked for, and once per list.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::catalog::ApiResource;
use crate::status::ApiError;
use crate::storage::Object;
use crate::util::new_uid;
use crate::webhook_client::{WebhookClient, decode, gvk_of};

/// The deadline of a conversion call: kube-apiserver's webhook clients' default timeout
/// (`setGlobalDefaults` in `k8s.io/apiserver/pkg/util/webhook/authentication.go`), which
/// client-go also sends as the `?timeout=` parameter.
const TIMEOUT: Duration = Duration::from_secs(30);

/// Whether objects served at `resource` go through its CRD's conversion webhook: whenever the
/// CRD asks for one, even at its storage version, because an object keeps the version it was
/// stored in until it is written again, and the storage version may have moved since (as
/// kube-apiserver decodes each object from etcd in its own version). [`convert`] sends only
/// the objects not already in the version asked for, so a read of objects stored in that
/// version calls no webhook.
pub(crate) fn needed(resource: &ApiResource) -> bool {
    resource.conversion.is_some()
}

/// `objects` in the `apiVersion` `to` (a version of `resource`'s group).
///
/// # Errors
///
/// `500` with the converter's message when the webhook fails or answers wrongly (see the
/// [module documentation](self)).
pub(crate) async fn convert(
    client: &WebhookClient,
    resource: &ApiResource,
    mut objects: Vec<Value>,
    to: &str,
) -> Result<Vec<Value>, ApiError> {
    let pending: Vec<usize> = (0..objects.len())
        .filter(|&i| objects[i].get("apiVersion").and_then(Value::as_str) != Some(to))
        .collect();
    let Some(webhook) = resource.conversion.as_deref() else {
        // `nopConverter`: the version is all that changes.
        for i in pending {
            if let Some(map) = objects[i].as_object_mut() {
                map.insert("apiVersion".into(), json!(to));
            }
        }
        return Ok(objects);
    };
    let Some(&first) = pending.first() else { return Ok(objects) };
    let from = gvk_of(&objects[first]);
    let failed =
        |why: String| ApiError::internal(format!("conversion webhook for {from} failed: {why}"));
    let Some(version) =
        webhook.review_versions.iter().find(|v| matches!(v.as_str(), "v1" | "v1beta1"))
    else {
        return Err(ApiError::internal("no supported conversion review versions"));
    };
    let uid = new_uid();
    let sent: Vec<&Value> = pending.iter().map(|&i| &objects[i]).collect();
    let request = json!({
        "kind": "ConversionReview",
        "apiVersion": format!("apiextensions.k8s.io/{version}"),
        "request": {"uid": uid, "desiredAPIVersion": to, "objects": sent},
        // Go sends the empty response it decodes into.
        "response": {"uid": "", "convertedObjects": null, "result": {"metadata": {}}},
    });
    let body = request.to_string().into_bytes();
    let reply = client.post(&webhook.client, body, TIMEOUT).await.map_err(&failed)?;
    let review = decode(&reply).map_err(&failed)?;
    let converted = converted_objects(version, &uid, &review).map_err(&failed)?;
    if converted.len() != pending.len() {
        return Err(ApiError::internal(format!(
            "conversion webhook for {from} returned {} objects, expected {}",
            converted.len(),
            pending.len()
        )));
    }
    let single = pending.len() == 1;
    for (index, (i, converted)) in pending.into_iter().zip(converted).enumerate() {
        let original = &objects[i];
        let object = checked(original, converted, to, index, single)
            .map_err(|why| ApiError::internal(format!("conversion webhook for {from} {why}")))?;
        objects[i] = object;
    }
    Ok(objects)
}

/// `getConvertedObjectsFromResponse`: the `convertedObjects` of a successful answer.
fn converted_objects(version: &str, uid: &str, review: &Value) -> Result<Vec<Value>, String> {
    if version == "v1" {
        let got = gvk_of(review);
        let expected = "apiextensions.k8s.io/v1, Kind=ConversionReview";
        if got != expected {
            return Err(format!("expected webhook response of {expected}, got {got}"));
        }
    }
    let response = review.get("response").filter(|r| r.is_object());
    let response = response.ok_or_else(|| "no response provided".to_owned())?;
    if version == "v1" {
        let got = response.get("uid").and_then(Value::as_str).unwrap_or_default();
        if got != uid {
            return Err(format!("expected response.uid={uid:?}, got {got:?}"));
        }
    }
    let result = response.get("result");
    let status = result.and_then(|r| r.get("status")).and_then(Value::as_str).unwrap_or_default();
    if status != "Success" {
        let message = result.and_then(|r| r.get("message")).and_then(Value::as_str);
        return Err(match message.filter(|m| !m.is_empty()) {
            Some(message) => message.to_owned(),
            None => format!("response.result.status was '{status}', not 'Success'"),
        });
    }
    let objects = response.get("convertedObjects").and_then(Value::as_array);
    Ok(objects.cloned().unwrap_or_default())
}

/// One converted object, checked against its original and given back the original's
/// metadata (labels and annotations aside); the error follows `conversion webhook for GVK `.
fn checked(
    original: &Value,
    converted: Value,
    to: &str,
    index: usize,
    single: bool,
) -> Result<Value, String> {
    let invalid = if single {
        "returned invalid object at index 0".to_owned()
    } else {
        format!("returned invalid converted object at index {index}")
    };
    if !converted.is_object() {
        return Err(format!("{invalid}: the converted object is not a JSON object"));
    }
    let api_version = converted.get("apiVersion").and_then(Value::as_str).unwrap_or_default();
    if api_version != to {
        return Err(format!(
            "{invalid}: invalid groupVersion (expected {to}, received {api_version})"
        ));
    }
    let kind = |obj: &Value| obj.get("kind").and_then(Value::as_str).unwrap_or_default().to_owned();
    let (expected, got) = (kind(original), kind(&converted));
    if expected != got {
        return Err(format!("{invalid}: invalid kind (expected {expected}, received {got})"));
    }
    // `validateConvertedObject`.
    let meta = |obj: &Value, field: &str| {
        obj.pointer(&format!("/metadata/{field}"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let prefix = if single {
        "returned invalid object".to_owned()
    } else {
        format!("returned invalid converted object at index {index}")
    };
    for (field, label) in [("name", "name"), ("namespace", "namespace"), ("uid", "UID")] {
        let (e, a) = (meta(original, field), meta(&converted, field));
        if e != a {
            return Err(format!("{prefix}: must have the same {label}: {e} != {a}"));
        }
    }
    restore_metadata(original, converted).map_err(|why| {
        if single {
            format!("returned invalid metadata: {why}")
        } else {
            format!("returned invalid metadata in object at index {index}: {why}")
        }
    })
}

/// `restoreObjectMeta`: the original's metadata with the converted object's labels and
/// annotations.
fn restore_metadata(original: &Value, mut converted: Value) -> Result<Value, String> {
    let response = match converted.get("metadata") {
        None => return Err("missing metadata in converted object".to_owned()),
        Some(Value::Object(map)) => map.clone(),
        Some(other) => {
            return Err(format!("invalid metadata of type {} in converted object", go_type(other)));
        }
    };
    let mut metadata =
        original.get("metadata").and_then(Value::as_object).cloned().unwrap_or_default();
    for field in ["labels", "annotations"] {
        match response.get(field) {
            None | Some(Value::Null) => {
                metadata.remove(field);
            }
            Some(Value::Object(entries)) => {
                if let Some((key, value)) = entries.iter().find(|(_, v)| !v.is_string()) {
                    return Err(format!(
                        "metadata.{field}[{key}] must be a string, but is {} in converted object",
                        go_type(value)
                    ));
                }
                metadata.insert(field.to_owned(), Value::Object(entries.clone()));
            }
            Some(other) => {
                return Err(format!(
                    "invalid metadata.{field} of type {} in converted object",
                    go_type(other)
                ));
            }
        }
    }
    if let Some(map) = converted.as_object_mut() {
        map.insert("metadata".into(), Value::Object(metadata));
    }
    Ok(converted)
}

/// The Go type (`%T`) an unstructured JSON value decodes to.
fn go_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_i64() || n.is_u64() => "int64",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

/// Converts the objects a watch sends (see `watch.rs`): each event's object in its turn.
#[derive(Clone, Debug)]
pub(crate) struct Converter {
    pub(crate) client: Arc<WebhookClient>,
    pub(crate) resource: Arc<ApiResource>,
}

impl Converter {
    /// `obj` in the version the watch was opened at.
    ///
    /// # Errors
    ///
    /// As [`convert`].
    pub(crate) async fn object(&self, obj: &Object) -> Result<Object, ApiError> {
        let to = self.resource.api_version();
        let mut converted =
            convert(&self.client, &self.resource, vec![Value::clone(obj)], &to).await?;
        Ok(Arc::new(converted.pop().unwrap_or(Value::Object(Map::new()))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::ResourceType;

    #[test]
    fn converted_objects_keep_their_metadata_but_labels_and_annotations() {
        let original = json!({"apiVersion": "e.com/v1", "kind": "W",
            "metadata": {"name": "a", "uid": "u", "resourceVersion": "5", "labels": {"x": "1"}}});
        let converted = json!({"apiVersion": "e.com/v2", "kind": "W",
            "metadata": {"name": "a", "uid": "u", "resourceVersion": "9", "annotations": {"b": "2"}},
            "spec": {}});
        let out = checked(&original, converted, "e.com/v2", 0, true).unwrap();
        assert_eq!(
            out["metadata"],
            json!({"name": "a", "uid": "u", "resourceVersion": "5", "annotations": {"b": "2"}})
        );
        let renamed =
            json!({"apiVersion": "e.com/v2", "kind": "W", "metadata": {"name": "b", "uid": "u"}});
        assert_eq!(
            checked(&original, renamed, "e.com/v2", 0, true).unwrap_err(),
            "returned invalid object: must have the same name: a != b"
        );
        let wrong = json!({"apiVersion": "e.com/v1", "kind": "W", "metadata": {}});
        assert_eq!(
            checked(&original, wrong, "e.com/v2", 3, false).unwrap_err(),
            "returned invalid converted object at index 3: invalid groupVersion (expected e.com/v2, received e.com/v1)"
        );
    }

    #[test]
    fn answers_must_be_successful_reviews_of_the_request() {
        let ok = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "response": {"uid": "u", "result": {"status": "Success"}, "convertedObjects": [{}]}});
        assert_eq!(converted_objects("v1", "u", &ok).unwrap().len(), 1);
        let failed = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "response": {"uid": "u", "result": {"status": "Failure", "message": "cannot"}}});
        assert_eq!(converted_objects("v1", "u", &failed).unwrap_err(), "cannot");
        let silent = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "response": {"uid": "u", "result": {}}});
        assert_eq!(
            converted_objects("v1", "u", &silent).unwrap_err(),
            "response.result.status was '', not 'Success'"
        );
        let resource = ApiResource::custom(ResourceType::new("e.com", "v2", "W", "ws", true));
        assert!(!needed(&resource), "no conversion webhook");
    }
}
