//! Writes that webhooks take part in: admission webhooks around the registry's verbs, and a
//! CRD's conversion webhook between the request's version and the storage version.
//!
//! The registry's verbs run under the state lock; webhooks are HTTP calls, made with the lock
//! released. So a write that webhooks take part in runs in steps, each step that needs the
//! state taking the lock for itself, in kube-apiserver's order (`createHandler`,
//! `UpdateResource`, `PatchResource`, `DeleteResource` in `k8s.io/apiserver/pkg/endpoints/
//! handlers`, and the generic registry store's `Create`, `Update`, `Delete`):
//!
//! 1. the object the request asks for: its body (for a create, in its namespace), or for a
//!    patch the stored object, in the request's version, with the patch applied;
//! 2. the mutating webhooks, in turn (`admission.rs`);
//! 3. conversion to the storage version, then the registry's verb as a dry run: the object as
//!    it would be stored (defaulted, validated, with its generated name and uid);
//! 4. the validating webhooks, on that object in the request's version (for a create, with the
//!    generated name);
//! 5. the object stored, unless the one it replaces changed since step 1; then the write starts
//!    over from step 1 (kube-apiserver's `GuaranteedUpdate` retries the same way, admission
//!    included), at most [`ATTEMPTS`] times.
//!
//! A delete is admitted with the stored object as `oldObject` (mutating webhooks may deny it
//! but not change it) after its preconditions are checked, and a deletecollection admits each
//! object it deletes, with an empty name, as kube-apiserver's does.
//!
//! The writes of the [`ServerHandle`](crate::ServerHandle), the `/scale` and `/eviction`
//! subresources and the server's own controllers (garbage collection, namespace deletion) are
//! not admitted, and managedFields are computed after the mutating webhooks (kube-apiserver
//! computes them before: fields a webhook sets are owned by the request's manager here).
//! Webhook configurations themselves are never admitted by webhooks
//! (`IsExemptAdmissionConfigurationResource`).

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::MutexGuard;
use serde_json::{Value, json};

use crate::admission::{Admission, Review, Warnings};
use crate::catalog::ApiResource;
use crate::conversion;
use crate::list;
use crate::managed_fields::Writer;
use crate::patch::PatchKind;
use crate::propagation;
use crate::query::ListParams;
use crate::registry::{self, Deleted, Part, Scope};
use crate::served::served;
use crate::state::{Shared, State};
use crate::status::{ApiError, GroupResource};
use crate::storage::{Object, meta_str, object_key};
use crate::webhook_client::WebhookClient;
use crate::webhook_config::{self, Attributes, Operation, Webhook, labels};

/// How many times an update starts over because the object changed while its webhooks were
/// called, before it fails with a conflict.
const ATTEMPTS: usize = 8;

/// Whether a write to `resource` must go through this module: webhooks are configured (and
/// `resource` is not a webhook configuration), or the resource's objects are converted by a
/// webhook.
pub(crate) fn needed(state: &State, resource: &ApiResource) -> bool {
    let configured = |plural: &str| {
        let storage = GroupResource::new(webhook_config::GROUP, plural);
        state.store.range(&storage, "").next().is_some()
    };
    conversion::needed(resource)
        || (resource.ty.group != webhook_config::GROUP
            && (configured(webhook_config::MUTATING) || configured(webhook_config::VALIDATING)))
}

/// The webhooks of one request, read under the lock, and its namespace's labels.
struct Hooks {
    mutating: Vec<Webhook>,
    validating: Vec<Webhook>,
    /// `None` when the namespace does not exist.
    namespace_labels: Option<BTreeMap<String, String>>,
}

impl Hooks {
    fn read(state: &State, resource: &ApiResource, namespace: &str) -> Self {
        let read = |plural: &str| {
            if resource.ty.group == webhook_config::GROUP {
                return Vec::new();
            }
            let storage = GroupResource::new(webhook_config::GROUP, plural);
            webhook_config::webhooks(state.store.range(&storage, "").map(|(_, obj)| &**obj))
        };
        let namespaces = GroupResource::new("", "namespaces");
        let namespace_labels = if namespace.is_empty() {
            Some(BTreeMap::new())
        } else {
            state.store.get(&namespaces, namespace).map(|ns| labels(ns))
        };
        Self {
            mutating: read(webhook_config::MUTATING),
            validating: read(webhook_config::VALIDATING),
            namespace_labels,
        }
    }

    fn admission<'a>(&'a self, client: &'a WebhookClient) -> Admission<'a> {
        Admission {
            client,
            mutating: &self.mutating,
            validating: &self.validating,
            namespace_labels: self.namespace_labels.as_ref(),
        }
    }
}

/// One write to one resource.
pub(crate) struct Write<'a> {
    pub(crate) shared: &'a Arc<Shared>,
    pub(crate) resource: &'a Arc<ApiResource>,
    /// `Some` exactly when the resource is namespaced (and the request names a namespace).
    pub(crate) namespace: Option<&'a str>,
    /// The object's name from the URL (empty for a create and a deletecollection).
    pub(crate) name: &'a str,
    pub(crate) part: Part,
    pub(crate) dry_run: bool,
    pub(crate) writer: Writer,
    /// The `fieldManager` parameter, for the operation's options.
    pub(crate) field_manager: Option<&'a str>,
}

impl Write<'_> {
    fn scope(&self) -> Scope<'_> {
        Scope { resource: self.resource, namespace: self.namespace }
    }

    /// The state, locked, if the resource is still served (see the router's `Call::state`).
    fn state(&self) -> Result<MutexGuard<'_, State>, ApiError> {
        let state = self.shared.state.lock();
        if state.catalog.serves(self.resource) {
            Ok(state)
        } else {
            Err(ApiError::path_not_found())
        }
    }

    fn client(&self) -> &WebhookClient {
        &self.shared.webhooks
    }

    /// The namespace of the admission attributes: the request's, or a namespace's own name.
    fn namespace_attribute(&self, name: &str) -> String {
        let ty = &self.resource.ty;
        if ty.group.is_empty() && ty.plural == "namespaces" {
            name.to_owned()
        } else {
            self.namespace.unwrap_or_default().to_owned()
        }
    }

    fn attributes<'s>(&'s self, operation: Operation, namespace: &'s str) -> Attributes<'s> {
        let ty = &self.resource.ty;
        Attributes {
            operation,
            group: &ty.group,
            version: &ty.version,
            resource: &ty.plural,
            subresource: if self.part == Part::Status { "status" } else { "" },
            namespace,
        }
    }

    /// `CreateOptions` or `UpdateOptions` of the request.
    fn options(&self, kind: &str) -> Value {
        let mut options = json!({"kind": kind, "apiVersion": "meta.k8s.io/v1"});
        if self.dry_run {
            options["dryRun"] = json!(["All"]);
        }
        if let Some(manager) = self.field_manager.filter(|m| !m.is_empty()) {
            options["fieldManager"] = json!(manager);
        }
        options
    }

    /// A stored object (storage version) in the request's version.
    async fn to_request(&self, obj: Value) -> Result<Value, ApiError> {
        if !conversion::needed(self.resource) {
            return Ok(served(&obj, self.resource).into_owned());
        }
        let to = self.resource.api_version();
        let mut objects = conversion::convert(self.client(), self.resource, vec![obj], &to).await?;
        Ok(objects.pop().unwrap_or_default())
    }

    /// Objects of a list (storage version) in the request's version, in one conversion.
    async fn all_to_request(&self, objects: Vec<Object>) -> Result<Vec<Object>, ApiError> {
        converted(self.shared, self.resource, objects).await
    }

    /// A request's object (request version) in the storage version.
    async fn to_storage(&self, obj: Value) -> Result<Value, ApiError> {
        if !conversion::needed(self.resource) {
            return Ok(obj);
        }
        let to = self.resource.storage_version.clone();
        let mut objects = conversion::convert(self.client(), self.resource, vec![obj], &to).await?;
        Ok(objects.pop().unwrap_or_default())
    }

    /// `kind` and the request's `apiVersion` on a body (which the decoder gives the object
    /// admission sees), after checking that they are the endpoint's.
    fn typed(&self, mut obj: Value) -> Result<Value, ApiError> {
        registry::check_type(&obj, self.resource)?;
        if let Value::Object(map) = &mut obj {
            map.insert("kind".into(), json!(self.resource.ty.kind));
            map.insert("apiVersion".into(), json!(self.resource.api_version()));
        }
        Ok(obj)
    }

    /// `POST`: creates `obj`; returns it as stored, in the request's version.
    ///
    /// # Errors
    ///
    /// The registry's, the webhooks' and the conversion's.
    pub(crate) async fn create(
        &self,
        obj: Value,
        warnings: &mut Warnings,
    ) -> Result<Value, ApiError> {
        let obj = self.typed(obj)?;
        self.create_admitted(obj, false, warnings).await
    }

    /// The create of `obj` (with its ownership already when `owned`: an apply).
    async fn create_admitted(
        &self,
        mut obj: Value,
        owned: bool,
        warnings: &mut Warnings,
    ) -> Result<Value, ApiError> {
        registry::place_in_namespace(self.scope(), &mut obj)?;
        let name = meta_str(&obj, "name").to_owned();
        let namespace = self.namespace_attribute(&name);
        let hooks = Hooks::read(&*self.state()?, self.resource, &namespace);
        let admission = hooks.admission(self.client());
        let mut review = Review {
            attrs: self.attributes(Operation::Create, &namespace),
            kind: &self.resource.ty.kind,
            name,
            object: Some(obj),
            old_object: None,
            options: self.options("CreateOptions"),
            dry_run: self.dry_run,
        };
        admission.mutate(&mut review, warnings).await?;
        let obj = self.to_storage(review.object.take().unwrap_or_default()).await?;
        let candidate = {
            let mut state = self.state()?;
            let settings = &self.shared.settings;
            registry::create_by(&mut state, settings, self.scope(), obj, true, &self.writer, owned)?
        };
        if !hooks.validating.is_empty() {
            // `AdmissionToValidateObjectFunc`: the generated name, if there is one.
            review.name = meta_str(&candidate, "name").to_owned();
            review.object = Some(self.to_request(candidate.clone()).await?);
            admission.validate(&review, warnings).await?;
        }
        if self.dry_run {
            return self.to_request(candidate).await;
        }
        let created = registry::commit_created(&mut *self.state()?, self.scope(), candidate)?;
        self.to_request(created).await
    }

    /// `PUT`: replaces the object (or its status) with `obj`; returns it as stored, in the
    /// request's version.
    ///
    /// # Errors
    ///
    /// The registry's, the webhooks' and the conversion's; `409` when the object kept changing.
    pub(crate) async fn update(
        &self,
        obj: Value,
        warnings: &mut Warnings,
    ) -> Result<Value, ApiError> {
        let obj = self.typed(obj)?;
        for _ in 0..ATTEMPTS {
            let (existing, hooks) = self.existing()?;
            let existing = existing.ok_or_else(|| self.not_found())?;
            let old = self.to_request(Value::clone(&existing)).await?;
            let outcome =
                self.update_admitted(&existing, old, obj.clone(), false, &hooks, warnings).await?;
            if let Some(updated) = outcome {
                return Ok(updated);
            }
        }
        Err(ApiError::stale(self.resource.group_resource(), self.name))
    }

    /// `PATCH`: patches the object (or its status); an apply patch of a missing object creates
    /// it. Returns the object as stored, in the request's version, and whether it was created.
    ///
    /// # Errors
    ///
    /// The registry's, the webhooks' and the conversion's; `409` when the object kept changing.
    pub(crate) async fn patch(
        &self,
        kind: PatchKind,
        body: &[u8],
        force: bool,
        warnings: &mut Warnings,
    ) -> Result<(Value, bool), ApiError> {
        let patch = registry::decode_patch(kind, body)?;
        let owned = kind == PatchKind::Apply;
        for _ in 0..ATTEMPTS {
            let (existing, hooks) = self.existing()?;
            let Some(existing) = existing else {
                if owned && self.part == Part::Main {
                    let merged = registry::applied_new(self.scope(), &patch, &self.writer, force)?;
                    let merged = self.typed(merged)?;
                    return Ok((self.create_admitted(merged, true, warnings).await?, true));
                }
                return Err(self.not_found());
            };
            let old = self.to_request(Value::clone(&existing)).await?;
            let patched = registry::patched(self.scope(), &old, kind, &patch, &self.writer, force)?;
            let outcome =
                self.update_admitted(&existing, old, patched, owned, &hooks, warnings).await?;
            if let Some(updated) = outcome {
                return Ok((updated, false));
            }
        }
        Err(ApiError::stale(self.resource.group_resource(), self.name))
    }

    fn not_found(&self) -> ApiError {
        ApiError::not_found(self.resource.group_resource(), self.name)
    }

    /// The stored object of the request's name (storage version), and the webhooks.
    fn existing(&self) -> Result<(Option<Object>, Hooks), ApiError> {
        let state = self.state()?;
        let key = object_key(self.namespace.unwrap_or_default(), self.name);
        let existing = state.store.get(&self.resource.storage, &key).cloned();
        let namespace = self.namespace_attribute(self.name);
        Ok((existing, Hooks::read(&state, self.resource, &namespace)))
    }

    /// Whether the stored object is no longer `existing`.
    fn changed(&self, state: &State, existing: &Object) -> bool {
        let key = object_key(self.namespace.unwrap_or_default(), self.name);
        state.store.get(&self.resource.storage, &key).is_none_or(|now| {
            meta_str(now, "resourceVersion") != meta_str(existing, "resourceVersion")
        })
    }

    /// An update of `existing` to `obj` (request version; `old` is `existing` in that version),
    /// admitted and stored; `None` when the stored object changed meanwhile (start over).
    async fn update_admitted(
        &self,
        existing: &Object,
        old: Value,
        obj: Value,
        owned: bool,
        hooks: &Hooks,
        warnings: &mut Warnings,
    ) -> Result<Option<Value>, ApiError> {
        let namespace = self.namespace_attribute(self.name);
        let admission = hooks.admission(self.client());
        let mut review = Review {
            attrs: self.attributes(Operation::Update, &namespace),
            kind: &self.resource.ty.kind,
            name: self.name.to_owned(),
            object: Some(obj),
            old_object: Some(old),
            options: self.options("UpdateOptions"),
            dry_run: self.dry_run,
        };
        admission.mutate(&mut review, warnings).await?;
        let obj = self.to_storage(review.object.take().unwrap_or_default()).await?;
        let (scope, name, part, writer) = (self.scope(), self.name, self.part, &self.writer);
        let candidate = {
            let mut state = self.state()?;
            if self.changed(&state, existing) {
                return Ok(None);
            }
            registry::update_by(&mut state, scope, name, obj, part, true, writer, owned)?
        };
        if !hooks.validating.is_empty() {
            review.object = Some(self.to_request(candidate.clone()).await?);
            admission.validate(&review, warnings).await?;
        }
        if self.dry_run {
            return self.to_request(candidate).await.map(Some);
        }
        let stored = {
            let mut state = self.state()?;
            if self.changed(&state, existing) {
                return Ok(None);
            }
            registry::commit_updated(&mut state, scope, name, candidate, existing)
        };
        self.to_request(stored).await.map(Some)
    }

    /// `DeleteOptions` of the request, as admission's options.
    fn delete_options(&self, options: &Value) -> Value {
        let mut options = options.clone();
        if let Value::Object(map) = &mut options {
            map.insert("kind".into(), json!("DeleteOptions"));
            map.insert("apiVersion".into(), json!("meta.k8s.io/v1"));
            if self.dry_run {
                map.insert("dryRun".into(), json!(["All"]));
            }
        }
        options
    }

    /// `DELETE` of the object, after its admission; the deleted object is in the request's
    /// version.
    ///
    /// # Errors
    ///
    /// The registry's, the webhooks' and the conversion's.
    pub(crate) async fn delete(
        &self,
        options: &Value,
        warnings: &mut Warnings,
    ) -> Result<Deleted, ApiError> {
        let (existing, hooks) = {
            let mut state = self.state()?;
            // Options, existence and preconditions first, as the registry store checks them
            // before it admits the delete (`rest.BeforeDelete`).
            registry::delete(&mut state, self.scope(), self.name, options, true)?;
            let key = object_key(self.namespace.unwrap_or_default(), self.name);
            let existing = state.store.get(&self.resource.storage, &key).cloned();
            let namespace = self.namespace_attribute(self.name);
            (existing, Hooks::read(&state, self.resource, &namespace))
        };
        let existing = existing.ok_or_else(|| self.not_found())?;
        self.admit_delete(self.name, Value::clone(&existing), &hooks, options, warnings).await?;
        let deleted =
            registry::delete(&mut *self.state()?, self.scope(), self.name, options, self.dry_run)?;
        Ok(match deleted {
            Deleted::Object(obj) => Deleted::Object(self.to_request(obj).await?),
            status @ Deleted::Status(_) => status,
        })
    }

    /// The delete's admission: `oldObject` is the stored object, `name` the request's.
    async fn admit_delete(
        &self,
        name: &str,
        existing: Value,
        hooks: &Hooks,
        options: &Value,
        warnings: &mut Warnings,
    ) -> Result<(), ApiError> {
        let wanted_by_any = !hooks.mutating.is_empty() || !hooks.validating.is_empty();
        if !wanted_by_any {
            return Ok(());
        }
        let old = self.to_request(existing).await?;
        let namespace = self.namespace_attribute(name);
        let admission = hooks.admission(self.client());
        let mut review = Review {
            attrs: self.attributes(Operation::Delete, &namespace),
            kind: &self.resource.ty.kind,
            name: name.to_owned(),
            object: None,
            old_object: Some(old),
            options: self.delete_options(options),
            dry_run: self.dry_run,
        };
        admission.mutate(&mut review, warnings).await?;
        admission.validate(&review, warnings).await
    }

    /// `DELETE` of a collection: each object the selectors match is admitted (with an empty
    /// name, as kube-apiserver's deletecollection admits them) and deleted; returns the deleted
    /// objects in the request's version.
    ///
    /// # Errors
    ///
    /// The first object's error, once every object was tried (kube-apiserver's
    /// `DeleteCollection` deletes in parallel and reports the first error it sees).
    pub(crate) async fn delete_collection(
        &self,
        params: &ListParams,
        options: &Value,
        warnings: &mut Warnings,
    ) -> Result<Vec<Object>, ApiError> {
        propagation::validate_delete_options(options)?;
        let (items, hooks) = {
            let state = self.state()?;
            let page = list::list(&state, self.resource, self.namespace, params)?;
            (page.items, Hooks::read(&state, self.resource, self.namespace.unwrap_or_default()))
        };
        let mut deleted = Vec::new();
        let mut first_error = None;
        for obj in items {
            let name = meta_str(&obj, "name").to_owned();
            let namespace = meta_str(&obj, "namespace").to_owned();
            let admitted =
                self.admit_delete("", Value::clone(&obj), &hooks, options, warnings).await;
            if let Err(error) = admitted {
                first_error.get_or_insert(error);
                continue;
            }
            let scope = Scope {
                resource: self.resource,
                namespace: self.namespace.map(|_| namespace.as_str()),
            };
            let outcome =
                registry::delete(&mut *self.state()?, scope, &name, options, self.dry_run);
            match outcome {
                Ok(Deleted::Object(obj)) => deleted.push(Arc::new(obj)),
                Ok(Deleted::Status(_)) => deleted.push(obj),
                // Deleted meanwhile: nothing to do.
                Err(error) if error.code == 404 => {}
                Err(error) => {
                    first_error.get_or_insert(error);
                }
            }
        }
        if let Some(error) = first_error {
            return Err(error);
        }
        self.all_to_request(deleted).await
    }
}

/// Reads for which the resource's objects are converted by a webhook: `items` (storage
/// version) in `resource`'s version, in one conversion.
///
/// # Errors
///
/// The conversion's.
pub(crate) async fn converted(
    shared: &Shared,
    resource: &ApiResource,
    items: Vec<Object>,
) -> Result<Vec<Object>, ApiError> {
    if !conversion::needed(resource) {
        return Ok(items);
    }
    let values = items.iter().map(|o| Value::clone(o)).collect();
    let to = resource.api_version();
    let converted = conversion::convert(&shared.webhooks, resource, values, &to).await?;
    Ok(converted.into_iter().map(Arc::new).collect())
}
