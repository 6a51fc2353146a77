//! The per-type parts of writes (kube-apiserver's REST strategies, `strategy.go` of each
//! type): the defaults and validation a few types get before they are stored. The generic
//! registry (`registry.rs`) calls [`prepare`] on every create and update.
//!
//! Namespaces get their phase, name label and `kubernetes` finalizer, pods their phase and
//! `QoS` class, secrets their `stringData` folded into `data` and a type, CRDs their status
//! (and the types they serve, see `crd.rs`), webhook configurations their defaults and
//! validation (see `webhook_config.rs`).

use serde_json::{Value, json};

use crate::catalog::ApiResource;
use crate::crd;
use crate::status::ApiError;
use crate::storage::{meta_str, metadata_mut};
use crate::webhook_config;

/// The per-type strategy work before a write: `PrepareForCreate` (no `previous`) or
/// `PrepareForUpdate`, with the type's defaults and validation.
///
/// # Errors
///
/// `422 Invalid` from a type's validation (CRDs, webhook configurations).
pub(crate) fn prepare(
    obj: &mut Value,
    resource: &ApiResource,
    previous: Option<&Value>,
) -> Result<(), ApiError> {
    if !resource.builtin {
        return Ok(());
    }
    match (resource.ty.group.as_str(), resource.ty.plural.as_str()) {
        ("", "namespaces") => {
            let name = meta_str(obj, "name").to_owned();
            let meta = metadata_mut(obj);
            let labels = meta.entry("labels").or_insert_with(|| json!({}));
            if let Value::Object(labels) = labels {
                labels.insert("kubernetes.io/metadata.name".into(), json!(name));
            }
            if previous.is_none() {
                // The namespace strategy's PrepareForCreate: active, with the `kubernetes`
                // finalizer the namespace controller removes once the namespace is empty.
                set_field(obj, "status", Some(json!({"phase": "Active"})));
                let spec = obj
                    .as_object_mut()
                    .and_then(|o| o.entry("spec").or_insert_with(|| json!({})).as_object_mut());
                if let Some(spec) = spec {
                    let finalizers = spec.entry("finalizers").or_insert_with(|| json!([]));
                    if let Value::Array(finalizers) = finalizers
                        && !finalizers.iter().any(|f| f == "kubernetes")
                    {
                        finalizers.push(json!("kubernetes"));
                    }
                }
            } else if obj.pointer("/status/phase").is_none() {
                set_field(obj, "status", Some(json!({"phase": "Active"})));
            }
        }
        ("", "pods") if previous.is_none() => {
            // The pod strategy's PrepareForCreate: a new pod is Pending (what a
            // `status.phase` field selector sees) with its QoS class.
            let qos = pod_qos_class(obj);
            set_field(obj, "status", Some(json!({"phase": "Pending", "qosClass": qos})));
        }
        ("", "secrets") => {
            if let Some(Value::Object(string_data)) = obj.get("stringData").cloned() {
                let mut data =
                    obj.get("data").and_then(Value::as_object).cloned().unwrap_or_default();
                for (key, value) in string_data {
                    let text = value.as_str().unwrap_or_default();
                    data.insert(key, json!(crate::util::base64_encode(text.as_bytes(), false)));
                }
                set_field(obj, "data", Some(Value::Object(data)));
                set_field(obj, "stringData", None);
            }
            if obj.get("type").is_none() {
                set_field(obj, "type", Some(json!("Opaque")));
            }
        }
        ("apiextensions.k8s.io", "customresourcedefinitions") => {
            webhook_config::default_conversion(obj);
            crd::validate(obj)?;
            crd::set_status(obj, previous);
        }
        (
            webhook_config::GROUP,
            plural @ (webhook_config::MUTATING | webhook_config::VALIDATING),
        ) => {
            webhook_config::prepare(obj, plural == webhook_config::MUTATING)?;
        }
        _ => {}
    }
    Ok(())
}

/// `qos.GetPodQOS`, for the common cases: `BestEffort` without any CPU or memory requests or
/// limits, `Guaranteed` when every container limits both and requests what it limits,
/// `Burstable` otherwise.
fn pod_qos_class(pod: &Value) -> &'static str {
    let containers: Vec<&Value> = ["containers", "initContainers"]
        .iter()
        .filter_map(|k| pod.pointer(&format!("/spec/{k}")).and_then(Value::as_array))
        .flatten()
        .collect();
    let amount = |c: &Value, kind: &str, resource: &str| {
        c.pointer(&format!("/resources/{kind}/{resource}")).filter(|v| !v.is_null()).cloned()
    };
    let mut any = false;
    let mut guaranteed = !containers.is_empty();
    for c in &containers {
        for resource in ["cpu", "memory"] {
            let (request, limit) = (amount(c, "requests", resource), amount(c, "limits", resource));
            any |= request.is_some() || limit.is_some();
            guaranteed &= limit.is_some() && request.is_none_or(|r| Some(r) == limit);
        }
    }
    match (any, guaranteed) {
        (false, _) => "BestEffort",
        (true, true) => "Guaranteed",
        (true, false) => "Burstable",
    }
}

/// Sets a top-level field, or removes it for `None`.
pub(crate) fn set_field(obj: &mut Value, field: &str, value: Option<Value>) {
    if let Value::Object(map) = obj {
        match value {
            Some(value) => map.insert(field.to_owned(), value),
            None => map.remove(field),
        };
    }
}
