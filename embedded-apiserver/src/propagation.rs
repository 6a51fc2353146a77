//! Deletion's propagation policies, as kube-apiserver's REST layer applies them before the
//! garbage collector (`garbage_collector`) does the rest: which `propagationPolicy` (or
//! `orphanDependents`) values a DELETE takes, each resource's default, and the finalizer
//! (`foregroundDeletion`, `orphan`) an object gets for the collector to finish.

use serde_json::{Value, json};

use crate::catalog::ApiResource;
use crate::status::ApiError;

/// The finalizer of an object whose dependents are orphaned before it goes.
pub(crate) const ORPHAN: &str = "orphan";
/// The finalizer of an object whose blocking dependents are deleted before it goes.
pub(crate) const FOREGROUND: &str = "foregroundDeletion";

/// `DeletionPropagation`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Propagation {
    Background,
    Foreground,
    Orphan,
}

impl Propagation {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Background => "Background",
            Self::Foreground => "Foreground",
            Self::Orphan => "Orphan",
        }
    }
}

/// `rest.GarbageCollectionPolicy`: what a resource's strategy does when a DELETE names none.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum DefaultPolicy {
    DeleteDependents,
    OrphanDependents,
    Unsupported,
}

/// The strategies' `DefaultGarbageCollectionPolicy`, by the version the request used: events
/// take no finalizers, `batch/v1` jobs and `v1` replication controllers orphan for backwards
/// compatibility, everything else deletes its dependents.
fn default_policy(resource: &ApiResource) -> DefaultPolicy {
    if !resource.builtin {
        return DefaultPolicy::DeleteDependents;
    }
    let ty = &resource.ty;
    match (ty.group.as_str(), ty.version.as_str(), ty.plural.as_str()) {
        ("" | "events.k8s.io", _, "events") => DefaultPolicy::Unsupported,
        ("batch", "v1", "jobs") | ("", "v1", "replicationcontrollers") => {
            DefaultPolicy::OrphanDependents
        }
        _ => DefaultPolicy::DeleteDependents,
    }
}

/// `ValidateDeleteOptions`' rules for propagation, with kube-apiserver's error.
pub(crate) fn validate_delete_options(options: &Value) -> Result<(), ApiError> {
    let policy = options.get("propagationPolicy").filter(|p| !p.is_null());
    let orphan = options.get("orphanDependents").filter(|o| !o.is_null());
    let mut errors = Vec::new();
    if let (Some(policy), Some(_)) = (policy, orphan) {
        errors.push((
            "propagationPolicy",
            "FieldValueInvalid",
            format!(
                "Invalid value: {}: orphanDependents and deletionPropagation cannot be both set",
                quoted(policy)
            ),
        ));
    }
    if let Some(policy) = policy
        && !matches!(policy.as_str(), Some("Foreground" | "Background" | "Orphan"))
    {
        errors.push((
            "propagationPolicy",
            "FieldValueNotSupported",
            format!(
                "Unsupported value: {}: supported values: \"Foreground\", \"Background\", \
                 \"Orphan\", \"nil\"",
                quoted(policy)
            ),
        ));
    }
    if errors.is_empty() {
        return Ok(());
    }
    Err(ApiError::invalid("DeleteOptions", "meta.k8s.io", "", &errors))
}

/// A value as `field.Error` prints it: strings quoted.
fn quoted(value: &Value) -> String {
    value.as_str().map_or_else(|| value.to_string(), |s| format!("{s:?}"))
}

pub(crate) fn finalizers(obj: &Value) -> impl Iterator<Item = &str> {
    obj.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

pub(crate) fn has_finalizer(obj: &Value, name: &str) -> bool {
    finalizers(obj).any(|f| f == name)
}

pub(crate) fn terminating(obj: &Value) -> bool {
    obj.pointer("/metadata/deletionTimestamp").is_some_and(|t| !t.is_null())
}

/// An object's owner references.
pub(crate) fn references(obj: &Value) -> impl Iterator<Item = &Value> {
    obj.pointer("/metadata/ownerReferences").and_then(Value::as_array).into_iter().flatten()
}

/// Whether the garbage collector may have to act on `obj`: it names owners, or it is being
/// deleted with a finalizer only the collector removes (`orphan`, `foregroundDeletion`).
pub(crate) fn concerns_the_collector(obj: &Value) -> bool {
    let finishing =
        terminating(obj) && (has_finalizer(obj, ORPHAN) || has_finalizer(obj, FOREGROUND));
    finishing || references(obj).next().is_some()
}

/// `shouldOrphanDependents` and `shouldDeleteDependents` of the generic store.
fn policy_for_delete(resource: &ApiResource, obj: &Value, options: &Value) -> Option<Propagation> {
    let default = default_policy(resource);
    if default == DefaultPolicy::Unsupported {
        return None;
    }
    if let Some(orphan) = options.get("orphanDependents").and_then(Value::as_bool) {
        return orphan.then_some(Propagation::Orphan);
    }
    match options.get("propagationPolicy").and_then(Value::as_str) {
        Some("Orphan") => return Some(Propagation::Orphan),
        Some("Foreground") => return Some(Propagation::Foreground),
        Some("Background") => return None,
        _ => {}
    }
    for finalizer in finalizers(obj) {
        match finalizer {
            ORPHAN => return Some(Propagation::Orphan),
            FOREGROUND => return Some(Propagation::Foreground),
            _ => {}
        }
    }
    (default == DefaultPolicy::OrphanDependents).then_some(Propagation::Orphan)
}

/// `deletionFinalizersForGarbageCollection`: the finalizers `obj` should have once a DELETE
/// with `options` reaches it, if they differ (as a set) from the ones it has.
pub(crate) fn deletion_finalizers(
    resource: &ApiResource,
    obj: &Value,
    options: &Value,
) -> Option<Vec<Value>> {
    let policy = policy_for_delete(resource, obj, options);
    let mut wanted: Vec<&str> =
        finalizers(obj).filter(|&f| f != ORPHAN && f != FOREGROUND).collect();
    match policy {
        Some(Propagation::Orphan) => wanted.push(ORPHAN),
        Some(Propagation::Foreground) => wanted.push(FOREGROUND),
        Some(Propagation::Background) | None => {}
    }
    let mut old: Vec<&str> = finalizers(obj).collect();
    let mut new = wanted.clone();
    old.sort_unstable();
    old.dedup();
    new.sort_unstable();
    new.dedup();
    (old != new).then(|| wanted.into_iter().map(|f| json!(f)).collect())
}
