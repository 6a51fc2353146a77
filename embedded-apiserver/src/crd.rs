//! `CustomResourceDefinitions`: validating them, the status the apiextensions controllers would
//! set, and the resource types they make servable.
//!
//! On a real cluster, the `Established` condition appears a moment after the CRD is created;
//! here it is set by the create (or update) itself, so a client never has to wait for it.

use serde_json::{Value, json};

use crate::catalog::{ApiResource, ResourceType, ScalePaths, ScaleSelector};
use crate::status::ApiError;
use crate::storage::meta_str;
use crate::table::printer_columns;
use crate::util::now_rfc3339;
use crate::webhook_config;

/// Checks a CRD as apiextensions validation would for the fields this server relies on.
pub(crate) fn validate(crd: &Value) -> Result<(), ApiError> {
    let name = meta_str(crd, "name");
    let spec = crd.get("spec");
    let text = |path: &[&str]| {
        spec.and_then(|s| path.iter().try_fold(s, |v, k| v.get(k)))
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    let group = text(&["group"]);
    let plural = text(&["names", "plural"]);
    let mut errors: Vec<(&str, &str, String)> = Vec::new();
    if group.is_empty() {
        errors.push(("spec.group", "FieldValueRequired", "Required value".into()));
    }
    if plural.is_empty() {
        errors.push(("spec.names.plural", "FieldValueRequired", "Required value".into()));
    }
    if text(&["names", "kind"]).is_empty() {
        errors.push(("spec.names.kind", "FieldValueRequired", "Required value".into()));
    }
    if !group.is_empty() && !plural.is_empty() && name != format!("{plural}.{group}") {
        let why = format!("Invalid value: {name:?}: must be spec.names.plural+\".\"+spec.group");
        errors.push(("metadata.name", "FieldValueInvalid", why));
    }
    let scope = text(&["scope"]);
    if !matches!(scope, "Namespaced" | "Cluster") {
        let why =
            format!("Unsupported value: {scope:?}: supported values: \"Cluster\", \"Namespaced\"");
        errors.push(("spec.scope", "FieldValueNotSupported", why));
    }
    let versions = versions(crd);
    if versions.is_empty() {
        errors.push((
            "spec.versions",
            "FieldValueInvalid",
            "Invalid value: must have exactly one version marked as storage version".into(),
        ));
    } else if versions
        .iter()
        .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .count()
        != 1
    {
        let why = "Invalid value: must have exactly one version marked as storage version";
        errors.push(("spec.versions", "FieldValueInvalid", why.into()));
    }
    let mut conversion = Vec::new();
    webhook_config::validate_conversion(crd, &mut conversion);
    errors.extend(conversion.iter().map(|(f, r, m)| (f.as_str(), *r, m.clone())));
    if errors.is_empty() {
        Ok(())
    } else {
        Err(ApiError::invalid("CustomResourceDefinition", "apiextensions.k8s.io", name, &errors))
    }
}

fn versions(crd: &Value) -> Vec<&Value> {
    let versions = crd.get("spec").and_then(|s| s.get("versions")).and_then(Value::as_array);
    versions.map(|v| v.iter().collect()).unwrap_or_default()
}

/// `spec.names` with the defaults the API server fills in (singular, listKind).
fn accepted_names(crd: &Value) -> Value {
    let mut names =
        crd.get("spec").and_then(|s| s.get("names")).cloned().unwrap_or_else(|| json!({}));
    let kind = names.get("kind").and_then(Value::as_str).unwrap_or_default().to_owned();
    if names.get("singular").and_then(Value::as_str).is_none_or(str::is_empty) {
        names["singular"] = json!(kind.to_lowercase());
    }
    if names.get("listKind").and_then(Value::as_str).is_none_or(str::is_empty) {
        names["listKind"] = json!(format!("{kind}List"));
    }
    names
}

/// Sets the status the apiextensions controllers maintain: names accepted, established, and
/// the stored versions.
pub(crate) fn set_status(crd: &mut Value, previous: Option<&Value>) {
    let now = now_rfc3339();
    let condition = |type_: &str, reason: &str, message: &str| {
        // Keep the transition time of a condition that was already true.
        let since = previous
            .and_then(|p| p.pointer("/status/conditions"))
            .and_then(Value::as_array)
            .and_then(|cs| cs.iter().find(|c| c.get("type").and_then(Value::as_str) == Some(type_)))
            .and_then(|c| c.get("lastTransitionTime").cloned())
            .unwrap_or_else(|| json!(now));
        json!({"type": type_, "status": "True", "lastTransitionTime": since,
               "reason": reason, "message": message})
    };
    let mut stored: Vec<Value> = previous
        .and_then(|p| p.pointer("/status/storedVersions"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for version in versions(crd) {
        if version.get("storage").and_then(Value::as_bool) == Some(true) {
            let name = version.get("name").cloned().unwrap_or(Value::Null);
            if !stored.contains(&name) {
                stored.push(name);
            }
        }
    }
    let status = json!({
        "conditions": [
            condition("NamesAccepted", "NoConflicts", "no conflicts found"),
            condition("Established", "InitialNamesAccepted", "the initial names have been accepted"),
        ],
        "acceptedNames": accepted_names(crd),
        "storedVersions": stored,
    });
    if let Value::Object(map) = crd {
        map.insert("status".into(), status);
    }
}

/// The resource types a (valid) CRD serves: one per served version.
pub(crate) fn resources(crd: &Value) -> Vec<ApiResource> {
    let name = meta_str(crd, "name").to_owned();
    let spec = crd.get("spec").cloned().unwrap_or_default();
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
    let group = text(&spec, "group");
    let names = accepted_names(crd);
    let list = |k: &str| -> Vec<String> {
        names
            .get(k)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect()
    };
    let namespaced = text(&spec, "scope") == "Namespaced";
    let versions = versions(crd);
    let storage_version = versions
        .iter()
        .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .map(|v| text(v, "name"))
        .unwrap_or_default();
    let conversion = webhook_config::conversion_webhook(crd).map(std::sync::Arc::new);
    versions
        .iter()
        .filter(|v| v.get("served").and_then(Value::as_bool) != Some(false))
        .map(|version| {
            let mut ty = ResourceType::new(
                &group,
                &text(version, "name"),
                &text(&names, "kind"),
                &text(&names, "plural"),
                namespaced,
            )
            .singular(&text(&names, "singular"));
            ty.short_names = list("shortNames");
            ty.categories = list("categories");
            ty.status_subresource = version.pointer("/subresources/status").is_some();
            let scale = version.pointer("/subresources/scale").and_then(scale_paths);
            let mut resource = ApiResource::custom(ty);
            resource.list_kind = text(&names, "listKind");
            resource.storage_version = format!("{group}/{storage_version}");
            resource.columns = printer_columns(version);
            resource.crd = Some(name.clone());
            resource.scale = scale;
            resource.conversion.clone_from(&conversion);
            resource.crd_uid =
                crd.pointer("/metadata/uid").and_then(Value::as_str).map(str::to_owned);
            resource
        })
        .collect()
}

/// A version's `subresources.scale`: `specReplicasPath` and `statusReplicasPath` (required),
/// `labelSelectorPath` (optional). `None` when a path is missing or not a field path.
fn scale_paths(scale: &Value) -> Option<ScalePaths> {
    let path = |key: &str| scale.get(key).and_then(Value::as_str).and_then(ScalePaths::pointer);
    let selector = match scale.get("labelSelectorPath").and_then(Value::as_str) {
        Some(p) => ScaleSelector::Path(ScalePaths::pointer(p)?),
        None => ScaleSelector::None,
    };
    Some(ScalePaths {
        spec_replicas: path("specReplicasPath")?,
        status_replicas: path("statusReplicasPath")?,
        selector,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crontab_crd() -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "crontabs.stable.example.com"},
            "spec": {
                "group": "stable.example.com", "scope": "Namespaced",
                "names": {"plural": "crontabs", "kind": "CronTab", "shortNames": ["ct"]},
                "versions": [
                    {"name": "v1", "served": true, "storage": true, "subresources": {"status": {}}},
                    {"name": "v1beta1", "served": true, "storage": false},
                    {"name": "v1alpha1", "served": false, "storage": false}
                ]
            }
        })
    }

    #[test]
    fn a_crd_serves_each_served_version() {
        let crd = crontab_crd();
        validate(&crd).unwrap();
        let served = resources(&crd);
        assert_eq!(served.len(), 2);
        assert_eq!(served[0].ty.singular, "crontab");
        assert_eq!(served[0].list_kind, "CronTabList");
        assert!(served[0].ty.status_subresource && !served[1].ty.status_subresource);
        assert_eq!(served[1].storage_version, "stable.example.com/v1");
        assert_eq!(served[1].ty.short_names, ["ct"]);
        assert_eq!(served[0].columns[0].name, "Age");
    }

    #[test]
    fn status_and_validation() {
        let mut crd = crontab_crd();
        set_status(&mut crd, None);
        assert_eq!(crd["status"]["conditions"][1]["type"], "Established");
        assert_eq!(crd["status"]["storedVersions"], json!(["v1"]));
        let mut bad = crontab_crd();
        bad["metadata"]["name"] = json!("crontabs");
        let error = validate(&bad).unwrap_err();
        assert_eq!(error.code, 422);
        assert!(
            error.message.contains("must be spec.names.plural+\".\"+spec.group"),
            "{}",
            error.message
        );
    }
}
