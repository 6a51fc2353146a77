//! The object verbs: get, create, update, patch, delete and deletecollection.
//!
//! This is the apiserver's generic registry store (`registry/generic/registry/store.go`) with
//! the parts of the REST strategies every type shares: server-owned metadata (uid,
//! creationTimestamp, generation, resourceVersion), `generateName`, optimistic concurrency,
//! no-op updates that take no new resourceVersion, the `/status` subresource, finalizers and
//! `deletionTimestamp`, delete preconditions, and `dryRun=All`. A few types get their
//! strategy's defaults: namespaces (phase, name label, the `kubernetes` finalizer), pods
//! (`Pending`, `QoS` class), secrets (`stringData`), CRDs (status, and the types they serve).
//!
//! Every write records field ownership in `metadata.managedFields` (see
//! [`managed_fields`](crate::managed_fields)): creates, updates and non-apply patches as the
//! `Update` of their field manager, apply patches as server-side apply with conflicts, `force`
//! and pruning; `/status` writes as the `status` subresource. The manager is the request's
//! `fieldManager`, else its User-Agent up to the first `/`; the server's own writes (the test
//! handle's, the scale subresource's and an eviction's budget update) are `embedded-apiserver`'s.
//!
//! A DELETE honours `propagationPolicy` (and the deprecated `orphanDependents`), validated as
//! kube-apiserver validates them: background deletes at once, foreground and orphan leave the
//! object with the `foregroundDeletion` or `orphan` finalizer for the owner-reference garbage
//! collector (`garbage_collector.rs`, kube-controller-manager's part), which also deletes the
//! dependents of deleted owners and objects whose owners are all absent.
//!
//! Admission and conversion webhooks take part in a write through `admitted.rs`, which calls
//! these verbs as dry runs and stores what they made with [`commit_created`] and
//! [`commit_updated`].
//!
//! Not done: schema validation and defaulting, graceful pod termination (pods go at
//! once), CRD list types from `x-kubernetes-list-type` (a custom resource's lists are atomic to
//! server-side apply), the cap of ten `Update` managers.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::catalog::ApiResource;
use crate::crd;
use crate::list;
use crate::managed_fields::{self, Writer};
use crate::patch::{
    MAX_JSON_PATCH_OPERATIONS, PatchKind, json_patch, merge_patch, strategic_merge_patch,
};
use crate::propagation;
use crate::query::ListParams;
use crate::state::{Settings, State};
use crate::status::{ApiError, GroupResource};
use crate::storage::{ChangeKind, Object, meta_str, metadata_mut, object_key};
use crate::strategy::{prepare, set_field};
use crate::util::{is_dns_label, is_dns_subdomain, new_uid, now_rfc3339, random_suffix};

/// Where an object verb acts: a resource, and the namespace for a namespaced one.
#[derive(Clone, Copy)]
pub(crate) struct Scope<'a> {
    pub(crate) resource: &'a Arc<ApiResource>,
    /// `Some` exactly when the resource is namespaced.
    pub(crate) namespace: Option<&'a str>,
}

impl Scope<'_> {
    fn key(&self, name: &str) -> String {
        object_key(self.namespace.unwrap_or_default(), name)
    }

    fn not_found(&self, name: &str) -> ApiError {
        ApiError::not_found(self.resource.group_resource(), name)
    }
}

/// Which part of an object a write may change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Part {
    /// The main resource: with a status subresource, the stored status is kept.
    Main,
    /// The `/status` subresource: only the status changes.
    Status,
}

/// `GET` of one object.
pub(crate) fn get(
    state: &State,
    scope: Scope<'_>,
    name: &str,
    rv: &str,
) -> Result<Object, ApiError> {
    let current = state.store.resource_version();
    let requested = crate::query::parse_version(rv).map_err(ApiError::internal)?;
    if let Some(n) = requested.filter(|&n| n > current) {
        return Err(ApiError::too_large_resource_version(n, current));
    }
    let found = state.store.get(&scope.resource.storage, &scope.key(name));
    found.cloned().ok_or_else(|| scope.not_found(name))
}

/// The field manager of the server's own writes (and of the test handle's).
const SERVER_MANAGER: &str = "embedded-apiserver";

/// Who writes through `scope` when the request does not say: the server itself.
fn server_writer(scope: Scope<'_>, part: Part) -> Writer {
    writer(scope, part, SERVER_MANAGER)
}

/// The [`Writer`] of a write by `manager` to `scope`'s `part`.
pub(crate) fn writer(scope: Scope<'_>, part: Part, manager: &str) -> Writer {
    let resource = scope.resource;
    let (subresource, ignored) = match part {
        Part::Status => ("status", vec![vec!["f:spec".to_owned()], vec!["f:metadata".to_owned()]]),
        Part::Main if resource.ty.status_subresource => ("", vec![vec!["f:status".to_owned()]]),
        Part::Main => ("", Vec::new()),
    };
    Writer {
        manager: manager.to_owned(),
        api_version: resource.api_version(),
        subresource: subresource.to_owned(),
        builtin: resource.builtin,
        ignored,
    }
}

/// `POST`: creates an object; returns it as stored.
pub(crate) fn create(
    state: &mut State,
    settings: &Settings,
    scope: Scope<'_>,
    obj: Value,
    dry_run: bool,
) -> Result<Value, ApiError> {
    create_by(state, settings, scope, obj, dry_run, &server_writer(scope, Part::Main), false)
}

/// `POST` by `writer`; with `owned`, `obj` carries its managedFields already (an apply).
pub(crate) fn create_by(
    state: &mut State,
    settings: &Settings,
    scope: Scope<'_>,
    mut obj: Value,
    dry_run: bool,
    writer: &Writer,
    owned: bool,
) -> Result<Value, ApiError> {
    let resource = scope.resource;
    check_type(&obj, resource)?;
    set_type(&mut obj, resource);
    let kind = resource.ty.kind.clone();
    place_in_namespace(scope, &mut obj)?;
    let meta = metadata_mut(&mut obj);
    let name = meta.get("name").and_then(Value::as_str).unwrap_or_default().to_owned();
    let generate = meta.get("generateName").and_then(Value::as_str).unwrap_or_default().to_owned();
    let name = if name.is_empty() && !generate.is_empty() {
        let base: String = generate.chars().take(58).collect();
        let free = (0..16)
            .map(|_| format!("{base}{}", random_suffix()))
            .find(|n| state.store.get(&resource.storage, &scope.key(n)).is_none());
        free.unwrap_or_else(|| format!("{base}{}", random_suffix()))
    } else {
        name
    };
    validate_name(&kind, &resource.ty.group, &name, resource.ty.plural == "namespaces")?;
    let meta = metadata_mut(&mut obj);
    meta.insert("name".into(), json!(name));
    meta.insert("uid".into(), json!(new_uid()));
    meta.insert("creationTimestamp".into(), json!(now_rfc3339()));
    if resource.generation {
        meta.insert("generation".into(), json!(1));
    }
    for server_owned in
        ["resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"]
    {
        meta.remove(server_owned);
    }
    if let Some(ns) = scope.namespace {
        let namespaces = GroupResource::new("", "namespaces");
        if settings.require_namespaces && state.store.get(&namespaces, ns).is_none() {
            return Err(ApiError::not_found(&namespaces, ns));
        }
    }
    if resource.ty.status_subresource {
        // Every strategy with a status subresource resets the status on create: clients
        // write it through `/status` only.
        set_field(&mut obj, "status", None);
    }
    if !owned {
        let zero = managed_fields::zero_object(&obj, resource.builtin);
        let base = managed_fields::base(None, &obj, false);
        managed_fields::update(&zero, &mut obj, base, writer);
    }
    prepare(&mut obj, resource, None)?;
    let key = scope.key(&name);
    if state.store.get(&resource.storage, &key).is_some() {
        return Err(ApiError::already_exists(resource.group_resource(), &name));
    }
    if dry_run {
        return Ok(obj);
    }
    let change = state.commit(&resource.storage, &key, ChangeKind::Added, obj);
    after_write(state, resource, &change.obj);
    Ok(Value::clone(&change.obj))
}

/// Sets the namespace of an object to be created to the request's (none for a cluster-scoped
/// resource), as the create handler does before admission
/// (`EnsureObjectNamespaceMatchesRequestNamespace`).
///
/// # Errors
///
/// `400` when the object names another namespace.
pub(crate) fn place_in_namespace(scope: Scope<'_>, obj: &mut Value) -> Result<(), ApiError> {
    let meta = metadata_mut(obj);
    match (scope.namespace, meta.get("namespace").and_then(Value::as_str).filter(|n| !n.is_empty()))
    {
        (Some(ns), Some(body)) if body != ns => {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        (Some(ns), _) => {
            meta.insert("namespace".into(), json!(ns));
        }
        (None, _) => {
            meta.remove("namespace");
        }
    }
    Ok(())
}

/// Stores an object a dry run of [`create_by`] made (after its admission): the create's last
/// step.
///
/// # Errors
///
/// `409 AlreadyExists` when an object of its name was created meanwhile.
pub(crate) fn commit_created(
    state: &mut State,
    scope: Scope<'_>,
    obj: Value,
) -> Result<Value, ApiError> {
    let resource = scope.resource;
    let name = meta_str(&obj, "name").to_owned();
    let key = scope.key(&name);
    if state.store.get(&resource.storage, &key).is_some() {
        return Err(ApiError::already_exists(resource.group_resource(), &name));
    }
    let change = state.commit(&resource.storage, &key, ChangeKind::Added, obj);
    after_write(state, resource, &change.obj);
    Ok(Value::clone(&change.obj))
}

/// `PUT`: replaces an object (or its status); returns it as stored.
pub(crate) fn update(
    state: &mut State,
    scope: Scope<'_>,
    name: &str,
    obj: Value,
    part: Part,
    dry_run: bool,
) -> Result<Value, ApiError> {
    update_by(state, scope, name, obj, part, dry_run, &server_writer(scope, part), false)
}

/// `PUT` by `writer`; with `owned`, `obj` carries its managedFields already (an apply).
#[allow(clippy::too_many_arguments)] // One parameter per part of a PUT request.
pub(crate) fn update_by(
    state: &mut State,
    scope: Scope<'_>,
    name: &str,
    mut obj: Value,
    part: Part,
    dry_run: bool,
    writer: &Writer,
    owned: bool,
) -> Result<Value, ApiError> {
    let resource = scope.resource;
    check_type(&obj, resource)?;
    set_type(&mut obj, resource);
    let body_name = meta_str(&obj, "name");
    if body_name != name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({name})"
        )));
    }
    if let Some(ns) = scope.namespace {
        let body_ns = meta_str(&obj, "namespace");
        if !body_ns.is_empty() && body_ns != ns {
            return Err(ApiError::bad_request(format!(
                "the namespace of the object ({body_ns}) does not match the namespace on the URL ({ns})"
            )));
        }
        metadata_mut(&mut obj).insert("namespace".into(), json!(ns));
    } else {
        metadata_mut(&mut obj).remove("namespace");
    }
    let key = scope.key(name);
    let existing =
        state.store.get(&resource.storage, &key).cloned().ok_or_else(|| scope.not_found(name))?;
    let precondition = meta_str(&obj, "resourceVersion");
    if !precondition.is_empty() && precondition != meta_str(&existing, "resourceVersion") {
        return Err(ApiError::stale(resource.group_resource(), name));
    }
    let base = managed_fields::base(Some(&existing), &obj, part == Part::Status);
    let applied = obj.pointer("/metadata/managedFields").cloned();
    let mut new = match part {
        Part::Status => {
            let mut new = Value::clone(&existing);
            set_field(&mut new, "status", obj.get("status").cloned());
            if owned {
                let meta = metadata_mut(&mut new);
                match applied {
                    Some(entries) => meta.insert("managedFields".into(), entries),
                    None => meta.remove("managedFields"),
                };
            }
            new
        }
        Part::Main if resource.ty.status_subresource => {
            set_field(&mut obj, "status", existing.get("status").cloned());
            obj
        }
        Part::Main => obj,
    };
    keep_server_metadata(&mut new, &existing);
    if !owned {
        managed_fields::update(&existing, &mut new, base, writer);
    }
    prepare(&mut new, resource, Some(&existing))?;
    if unchanged(&new, &existing) {
        return Ok(Value::clone(&existing));
    }
    if dry_run {
        return Ok(new);
    }
    Ok(commit_updated(state, scope, name, new, &existing))
}

/// Stores `new`, what a dry run of [`update_by`] made of `existing` (after its admission): the
/// update's last step. Nothing changes when `new` is `existing`; an object whose last finalizer
/// is gone is deleted.
pub(crate) fn commit_updated(
    state: &mut State,
    scope: Scope<'_>,
    name: &str,
    new: Value,
    existing: &Value,
) -> Value {
    let resource = scope.resource;
    if unchanged(&new, existing) {
        return existing.clone();
    }
    let key = scope.key(name);
    let finalized = new.pointer("/metadata/deletionTimestamp").is_some()
        && new.pointer("/metadata/finalizers").and_then(Value::as_array).is_none_or(Vec::is_empty);
    let kind = if finalized { ChangeKind::Deleted } else { ChangeKind::Modified };
    let change = state.commit(&resource.storage, &key, kind, new);
    if finalized {
        after_delete(state, resource, &change.obj);
    } else {
        after_write(state, resource, &change.obj);
    }
    Value::clone(&change.obj)
}

/// `PATCH`: applies a patch to an object (or its status) and stores the result. An apply
/// patch of a missing object creates it. Returns the object and whether it was created.
#[cfg(test)]
#[allow(clippy::too_many_arguments)] // One parameter per part of a PATCH request.
pub(crate) fn patch(
    state: &mut State,
    settings: &Settings,
    scope: Scope<'_>,
    name: &str,
    kind: PatchKind,
    body: &[u8],
    part: Part,
    dry_run: bool,
) -> Result<(Value, bool), ApiError> {
    let writer = server_writer(scope, part);
    patch_by(state, settings, scope, name, kind, body, part, dry_run, &writer, false)
}

/// `PATCH` by `writer`; `force` takes the fields of conflicting managers in an apply.
#[allow(clippy::too_many_arguments)] // One parameter per part of a PATCH request.
pub(crate) fn patch_by(
    state: &mut State,
    settings: &Settings,
    scope: Scope<'_>,
    name: &str,
    kind: PatchKind,
    body: &[u8],
    part: Part,
    dry_run: bool,
    writer: &Writer,
    force: bool,
) -> Result<(Value, bool), ApiError> {
    let patch = decode_patch(kind, body)?;
    let existing = state.store.get(&scope.resource.storage, &scope.key(name)).cloned();
    let Some(existing) = existing else {
        if kind == PatchKind::Apply && part == Part::Main {
            let merged = applied_new(scope, &patch, writer, force)?;
            let created = create_by(state, settings, scope, merged, dry_run, writer, true)?;
            return Ok((created, true));
        }
        return Err(scope.not_found(name));
    };
    let patched = patched(scope, &existing, kind, &patch, writer, force)?;
    let owned = kind == PatchKind::Apply;
    let updated = update_by(state, scope, name, patched, part, dry_run, writer, owned)?;
    Ok((updated, false))
}

/// The body of a `PATCH` as JSON.
///
/// # Errors
///
/// `400` for a body that is not JSON.
pub(crate) fn decode_patch(kind: PatchKind, body: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(body).map_err(|e| match kind {
        PatchKind::Apply => ApiError::bad_request(format!(
            "this server takes apply patches in JSON (YAML's JSON subset) only: {e}"
        )),
        _ => ApiError::bad_request(format!("error decoding patch: {e}")),
    })
}

/// The object an apply patch creates (of an object that does not exist), with its ownership.
///
/// # Errors
///
/// `400` for a patch of another kind; an apply's own errors.
pub(crate) fn applied_new(
    scope: Scope<'_>,
    patch: &Value,
    writer: &Writer,
    force: bool,
) -> Result<Value, ApiError> {
    check_type(patch, scope.resource)?;
    managed_fields::apply(&json!({}), patch, writer, force)
}

/// `existing` with `patch` applied (an apply patch with its ownership); a patch that removes
/// the resourceVersion leaves it empty, which makes the update unconditional.
///
/// # Errors
///
/// A patch of another kind (`400`), too many JSON patch operations (`413`), a JSON patch that
/// does not apply (`422`), an apply's conflicts (`409`).
pub(crate) fn patched(
    scope: Scope<'_>,
    existing: &Value,
    kind: PatchKind,
    patch: &Value,
    writer: &Writer,
    force: bool,
) -> Result<Value, ApiError> {
    let mut patched = existing.clone();
    match kind {
        PatchKind::Merge => merge_patch(&mut patched, patch),
        PatchKind::StrategicMerge => strategic_merge_patch(&mut patched, patch),
        PatchKind::Apply => {
            check_type(patch, scope.resource)?;
            patched = managed_fields::apply(existing, patch, writer, force)?;
        }
        PatchKind::Json => {
            let operations = crate::patch::operations(patch);
            if operations > MAX_JSON_PATCH_OPERATIONS {
                // kube-apiserver's `errors.NewRequestEntityTooLargeError`.
                let message = format!(
                    "Request entity too large: The allowed maximum operations in a JSON patch \
                     is {MAX_JSON_PATCH_OPERATIONS}, got {operations}"
                );
                return Err(ApiError::new(413, "RequestEntityTooLarge", message));
            }
            json_patch(&mut patched, patch).map_err(|why| crate::patch::not_applied(&why))?;
        }
    }
    if patched.pointer("/metadata/resourceVersion").is_none() {
        // A patch that removed the version is unconditional.
        metadata_mut(&mut patched).insert("resourceVersion".into(), json!(""));
    }
    Ok(patched)
}

/// What a DELETE answers with.
pub(crate) enum Deleted {
    /// The object: deleted (for types that return it) or waiting for its finalizers.
    Object(Value),
    /// A `Status` of success naming the deleted object.
    Status(Value),
}

/// `DELETE` of one object, honouring `preconditions` and finalizers.
pub(crate) fn delete(
    state: &mut State,
    scope: Scope<'_>,
    name: &str,
    options: &Value,
    dry_run: bool,
) -> Result<Deleted, ApiError> {
    propagation::validate_delete_options(options)?;
    let resource = scope.resource;
    let key = scope.key(name);
    let existing =
        state.store.get(&resource.storage, &key).cloned().ok_or_else(|| scope.not_found(name))?;
    // `rest.BeforeDelete`: the conflict names the kind, not the resource.
    let kind = GroupResource::new(&resource.ty.group, &resource.ty.kind);
    let preconditions = [
        ("uid", "UID", "The object might have been deleted and then recreated"),
        ("resourceVersion", "ResourceVersion", "The object might have been modified"),
    ];
    for (field, label, hint) in preconditions {
        let wanted = options.pointer(&format!("/preconditions/{field}")).and_then(Value::as_str);
        if let Some(wanted) = wanted {
            let actual = meta_str(&existing, field);
            if wanted != actual {
                let why = format!(
                    "the {label} in the precondition ({wanted}) does not match the {label} in \
                     record ({actual}). {hint}"
                );
                return Err(ApiError::conflict(&kind, name, &why));
            }
        }
    }
    // The registry's half of garbage collection: the policy may add the `orphan` or
    // `foregroundDeletion` finalizer, which the collector (`garbage_collector.rs`) removes.
    let gc_finalizers = propagation::deletion_finalizers(resource, &existing, options);
    let pending = existing
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .is_some_and(|f| !f.is_empty());
    if pending || gc_finalizers.is_some() {
        let already = existing.pointer("/metadata/deletionTimestamp").is_some();
        if dry_run || (already && gc_finalizers.is_none()) {
            return Ok(Deleted::Object(Value::clone(&existing)));
        }
        let mut terminating = Value::clone(&existing);
        let meta = metadata_mut(&mut terminating);
        if let Some(finalizers) = gc_finalizers {
            if finalizers.is_empty() {
                meta.remove("finalizers");
            } else {
                meta.insert("finalizers".into(), Value::Array(finalizers));
            }
        }
        let remaining =
            meta.get("finalizers").and_then(Value::as_array).is_some_and(|f| !f.is_empty());
        if remaining {
            if !already {
                meta.insert("deletionTimestamp".into(), json!(now_rfc3339()));
                meta.insert("deletionGracePeriodSeconds".into(), json!(0));
            }
            let change = state.commit(&resource.storage, &key, ChangeKind::Modified, terminating);
            return Ok(Deleted::Object(Value::clone(&change.obj)));
        }
        // The policy took away the only finalizers: the object goes now.
    }
    let last = if dry_run {
        Arc::clone(&existing)
    } else {
        let change =
            state.commit(&resource.storage, &key, ChangeKind::Deleted, Value::clone(&existing));
        after_delete(state, resource, &change.obj);
        Arc::clone(&change.obj)
    };
    if resource.returns_deleted_object {
        return Ok(Deleted::Object(Value::clone(&last)));
    }
    let storage = resource.group_resource();
    let mut details =
        json!({"name": name, "kind": storage.resource, "uid": meta_str(&last, "uid")});
    if !storage.group.is_empty() {
        details["group"] = json!(storage.group);
    }
    Ok(Deleted::Status(json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
                              "status": "Success", "details": details})))
}

/// `DELETE` of a collection: deletes every object the selectors match; returns them.
pub(crate) fn delete_collection(
    state: &mut State,
    scope: Scope<'_>,
    params: &ListParams,
    options: &Value,
    dry_run: bool,
) -> Result<Vec<Object>, ApiError> {
    propagation::validate_delete_options(options)?;
    let page = list::list(state, scope.resource, scope.namespace, params)?;
    let mut deleted = Vec::new();
    for obj in page.items {
        let name = meta_str(&obj, "name").to_owned();
        let namespace = meta_str(&obj, "namespace").to_owned();
        let item_scope = Scope {
            resource: scope.resource,
            namespace: scope.namespace.map(|_| namespace.as_str()),
        };
        match delete(state, item_scope, &name, options, dry_run)? {
            Deleted::Object(obj) => deleted.push(Arc::new(obj)),
            Deleted::Status(_) => deleted.push(obj),
        }
    }
    Ok(deleted)
}

/// Rejects a body whose `kind` or API group is not the endpoint's.
pub(crate) fn check_type(obj: &Value, resource: &ApiResource) -> Result<(), ApiError> {
    if !obj.is_object() {
        return Err(ApiError::bad_request(format!(
            "the object provided is unrecognized (must be of type {})",
            resource.ty.kind
        )));
    }
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or_default();
    if !kind.is_empty() && kind != resource.ty.kind {
        return Err(ApiError::bad_request(format!(
            "the kind in the data ({kind}) does not match the expected kind ({})",
            resource.ty.kind
        )));
    }
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or_default();
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    if !api_version.is_empty() && group != resource.ty.group {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({api_version}) does not match the expected API version ({})",
            resource.api_version()
        )));
    }
    Ok(())
}

/// Sets `kind` and `apiVersion` to the stored ones.
fn set_type(obj: &mut Value, resource: &ApiResource) {
    if let Value::Object(map) = obj {
        map.insert("kind".into(), json!(resource.ty.kind));
        map.insert("apiVersion".into(), json!(resource.storage_version));
    }
}

/// `metadata.name` must be a DNS subdomain (a DNS label for namespaces).
fn validate_name(kind: &str, group: &str, name: &str, label: bool) -> Result<(), ApiError> {
    let why = if name.is_empty() {
        let error = (
            "metadata.name",
            "FieldValueRequired",
            "Required value: name or generateName is required".to_owned(),
        );
        return Err(ApiError::invalid(kind, group, name, &[error]));
    } else if label && !is_dns_label(name) {
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and \
         must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex \
         used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
    } else if !label && !is_dns_subdomain(name) {
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or \
         '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex \
         used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
    } else {
        return Ok(());
    };
    let error = ("metadata.name", "FieldValueInvalid", format!("Invalid value: {name:?}: {why}"));
    Err(ApiError::invalid(kind, group, name, &[error]))
}

/// Copies what the server owns from the stored object, and bumps `generation` when anything
/// but metadata and status changed.
fn keep_server_metadata(new: &mut Value, old: &Value) {
    let changed = spec_changed(old, new);
    let old_meta = old.get("metadata").and_then(Value::as_object).cloned().unwrap_or_default();
    let meta = metadata_mut(new);
    for field in ["uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds"] {
        match old_meta.get(field) {
            Some(value) => meta.insert(field.to_owned(), value.clone()),
            None => meta.remove(field),
        };
    }
    if let Some(generation) = old_meta.get("generation").and_then(Value::as_i64) {
        // Saturating: a type without generation tracking keeps whatever a client wrote there,
        // `i64::MAX` included.
        meta.insert("generation".into(), json!(generation.saturating_add(i64::from(changed))));
    }
}

/// Whether a top-level field other than metadata and status differs.
fn spec_changed(old: &Value, new: &Value) -> bool {
    let empty = Map::new();
    let (old, new) = (old.as_object().unwrap_or(&empty), new.as_object().unwrap_or(&empty));
    let ignored = |k: &str| matches!(k, "metadata" | "status" | "kind" | "apiVersion");
    old.keys().chain(new.keys()).filter(|k| !ignored(k)).any(|k| old.get(k) != new.get(k))
}

/// Whether an update changes nothing (resourceVersion and the times of managedFields aside:
/// kube-apiserver's `IgnoreManagedFieldsTimestampsTransformer`).
fn unchanged(new: &Value, old: &Value) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        let meta = metadata_mut(&mut v);
        meta.remove("resourceVersion");
        if let Some(Value::Array(entries)) = meta.get_mut("managedFields") {
            for entry in entries.iter_mut().filter_map(Value::as_object_mut) {
                entry.remove("time");
            }
        }
        v
    };
    strip(new) == strip(old)
}

/// Serves the types of a CRD that was just written.
fn after_write(state: &mut State, resource: &ApiResource, obj: &Value) {
    if resource.builtin && resource.ty.plural == "customresourcedefinitions" {
        let name = meta_str(obj, "name");
        state.catalog.remove_crd(name);
        for served in crd::resources(obj) {
            state.catalog.add(served);
        }
    }
}

/// What deleting an object takes with it: a namespace's objects, a CRD's types and objects.
pub(crate) fn after_delete(state: &mut State, resource: &ApiResource, obj: &Value) {
    if !resource.builtin {
        return;
    }
    let name = meta_str(obj, "name").to_owned();
    let mut removed = Vec::new();
    let doomed: Vec<(GroupResource, String)> = match resource.ty.plural.as_str() {
        "namespaces" => {
            let prefix = format!("{name}/");
            state
                .store
                .storages()
                .into_iter()
                .filter(|s| state.catalog.find_storage(s).is_none_or(|r| r.ty.namespaced))
                .flat_map(|s| {
                    let keys = state.store.keys_with_prefix(&s, &prefix);
                    keys.into_iter().map(move |k| (s.clone(), k))
                })
                .collect()
        }
        "customresourcedefinitions" => {
            removed = state.catalog.remove_crd(&name);
            removed
                .iter()
                .flat_map(|s| {
                    let keys = state.store.keys_with_prefix(s, "");
                    keys.into_iter().map(move |k| (s.clone(), k))
                })
                .collect()
        }
        _ => Vec::new(),
    };
    for (storage, key) in doomed {
        if let Some(last) = state.store.get(&storage, &key).cloned() {
            state.commit(&storage, &key, ChangeKind::Deleted, Value::clone(&last));
        }
    }
    // A removed resource's watches end once they have sent its objects' deletions.
    for storage in &removed {
        state.hub.drop_storage(storage);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state() -> State {
        State::for_tests(100)
    }

    fn settings() -> Settings {
        Settings {
            require_namespaces: false,
            bookmark_interval: None,
            watch_buffer: 1,
            max_watches: 1,
            tls: None,
            max_concurrent_streams: 1,
        }
    }

    #[test]
    fn create_update_and_delete_follow_the_generic_registry() {
        let mut state = state();
        let pods = state.catalog.find("", "v1", "pods").unwrap();
        let scope = Scope { resource: &pods, namespace: Some("ns") };
        let deployments = state.catalog.find("apps", "v1", "deployments").unwrap();
        let deployment = json!({"metadata": {"name": "d"}, "spec": {"replicas": 1}});
        let d_scope = Scope { resource: &deployments, namespace: Some("ns") };
        let mut d = create(&mut state, &settings(), d_scope, deployment, false).unwrap();
        assert_eq!(d["metadata"]["generation"], 1);
        d["spec"]["replicas"] = json!(2);
        let d = update(&mut state, d_scope, "d", d, Part::Main, false).unwrap();
        assert_eq!(d["metadata"]["generation"], 2);

        let pod = json!({"metadata": {"generateName": "web-", "resourceVersion": "99"}, "spec": {"x": 1}});
        let created = create(&mut state, &settings(), scope, pod, false).unwrap();
        let name = meta_str(&created, "name").to_owned();
        assert!(name.starts_with("web-") && name.len() == 9, "{name}");
        assert_eq!(
            (meta_str(&created, "namespace"), meta_str(&created, "resourceVersion")),
            ("ns", "3")
        );
        assert!(created["metadata"].get("generation").is_none(), "pods have no generation");
        assert_eq!(created["kind"], "Pod");

        let mut stale = created.clone();
        stale["metadata"]["resourceVersion"] = json!("0");
        assert_eq!(
            update(&mut state, scope, &name, stale, Part::Main, false).unwrap_err().reason,
            "Conflict"
        );

        let same = update(&mut state, scope, &name, created.clone(), Part::Main, false).unwrap();
        assert_eq!(meta_str(&same, "resourceVersion"), "3", "a no-op update takes no version");

        let mut changed = created.clone();
        changed["spec"]["x"] = json!(2);
        changed["status"] = json!({"phase": "Running"});
        let updated = update(&mut state, scope, &name, changed, Part::Main, false).unwrap();
        assert_eq!(updated["spec"]["x"], 2);
        assert_eq!(
            updated["status"],
            json!({"phase": "Pending", "qosClass": "BestEffort"}),
            "status changes only through /status (it is Pending since the create)"
        );
        assert_eq!(updated["metadata"]["uid"], created["metadata"]["uid"]);

        let status = json!({"metadata": {"name": name}, "status": {"phase": "Running"}});
        let updated = update(&mut state, scope, &name, status, Part::Status, false).unwrap();
        assert_eq!(
            (updated["status"]["phase"].clone(), updated["spec"]["x"].clone()),
            (json!("Running"), json!(2))
        );

        let precondition = json!({"preconditions": {"uid": "nope"}});
        assert_eq!(delete(&mut state, scope, &name, &precondition, false).err().unwrap().code, 409);
        let Deleted::Object(gone) = delete(&mut state, scope, &name, &json!({}), false).unwrap()
        else {
            panic!("pods return the deleted object");
        };
        assert_eq!(meta_str(&gone, "resourceVersion"), "6");
        assert_eq!(delete(&mut state, scope, &name, &json!({}), false).err().unwrap().code, 404);
    }

    #[test]
    fn finalizers_hold_a_deleted_object_until_removed() {
        let mut state = state();
        let cms = state.catalog.find("", "v1", "configmaps").unwrap();
        let scope = Scope { resource: &cms, namespace: Some("ns") };
        let cm = json!({"metadata": {"name": "a", "finalizers": ["x/y"]}});
        create(&mut state, &settings(), scope, cm, false).unwrap();
        let Deleted::Object(terminating) =
            delete(&mut state, scope, "a", &json!({}), false).unwrap()
        else {
            panic!("an object with finalizers is returned");
        };
        assert!(terminating.pointer("/metadata/deletionTimestamp").is_some());
        let patch = br#"{"metadata":{"finalizers":null}}"#;
        patch_object(&mut state, scope, patch);
        assert!(state.store.get(&cms.storage, "ns/a").is_none());
    }

    fn patch_object(state: &mut State, scope: Scope<'_>, body: &[u8]) {
        patch(state, &settings(), scope, "a", PatchKind::Merge, body, Part::Main, false).unwrap();
    }

    #[test]
    fn names_are_validated() {
        let mut state = state();
        let cms = state.catalog.find("", "v1", "configmaps").unwrap();
        let scope = Scope { resource: &cms, namespace: Some("ns") };
        let error =
            create(&mut state, &settings(), scope, json!({"metadata": {}}), false).unwrap_err();
        assert_eq!(
            error.message,
            "ConfigMap \"\" is invalid: metadata.name: Required value: name or generateName is required"
        );
        let error =
            create(&mut state, &settings(), scope, json!({"metadata": {"name": "Bad"}}), false)
                .unwrap_err();
        assert_eq!(error.code, 422);
        let wrong = json!({"kind": "Pod", "metadata": {"name": "a"}});
        assert_eq!(create(&mut state, &settings(), scope, wrong, false).unwrap_err().code, 400);
        let other_ns = json!({"metadata": {"name": "a", "namespace": "other"}});
        assert_eq!(create(&mut state, &settings(), scope, other_ns, false).unwrap_err().code, 400);
    }
}
