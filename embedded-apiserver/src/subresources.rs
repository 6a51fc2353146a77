//! The subresources that are not the object itself: `scale` (an `autoscaling/v1` `Scale` view
//! of a workload or a custom resource) and `pods/eviction` (a delete that a
//! `PodDisruptionBudget` may refuse). `pods/log` is in [`pod_logs`](crate::pod_logs).
//!
//! Where it sits: the router sends a request for one of these here once it has parsed the path
//! (`/apis/apps/v1/namespaces/{ns}/deployments/{name}/scale`, `/api/v1/namespaces/{ns}/pods/
//! {name}/eviction`); the verbs act through the [registry](crate::registry), so a scale writes
//! the object as an update would (a new resourceVersion, watch events, optimistic concurrency)
//! and an eviction deletes the pod as a DELETE would.
//!
//! The rules are kube-apiserver's: `pkg/registry/apps/deployment/storage` (and the replica set
//! and stateful set storages) for the built-in scales, apiextensions' `customresource` scale
//! for CRDs whose version declares `subresources.scale`, and
//! `pkg/registry/core/pod/storage/eviction.go` for evictions. Not done: the
//! `DisruptionAllowed` condition an eviction sets on a budget it brings to zero, and the
//! resourceVersion precondition kube-apiserver adds to the delete of a pod it checked against
//! a budget (this server checks and deletes under one lock, so nothing can change between).

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::http::{Method, StatusCode};
use axum::response::Response;
use informer_runtime::LabelSelector;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector as WireSelector;
use serde_json::{Value, json};

use crate::catalog::{ApiResource, ScalePaths, ScaleSelector};
use crate::patch::{PatchKind, json_patch, merge_patch, strategic_merge_patch};
use crate::registry::{self, Part, Scope};
use crate::render::json_response;
use crate::state::State;
use crate::status::{ApiError, Cause, GroupResource};
use crate::storage::{meta_str, metadata_mut};
use crate::util::now_rfc3339;

/// A subresource this module (or [`pod_logs`](crate::pod_logs)) serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Subresource {
    /// `{plural}/scale`: get, update, patch.
    Scale,
    /// `pods/eviction`: create.
    Eviction,
    /// `pods/log`: get.
    Log,
}

/// One request for a `scale` or `eviction` subresource.
pub(crate) struct Request<'a> {
    pub(crate) method: &'a Method,
    pub(crate) scope: Scope<'a>,
    pub(crate) name: &'a str,
    pub(crate) body: &'a [u8],
    /// The request's `Content-Type`, for a patch.
    pub(crate) content_type: Option<&'a str>,
    pub(crate) dry_run: bool,
}

/// Serves `scale` and `eviction` with the state locked.
pub(crate) fn serve(
    state: &mut State,
    sub: Subresource,
    request: &Request<'_>,
) -> Result<Response, ApiError> {
    let (scope, name, dry_run) = (request.scope, request.name, request.dry_run);
    let paths = scope.resource.scale.as_ref();
    match (sub, request.method, paths) {
        (Subresource::Scale, &Method::GET, Some(paths)) => {
            let obj = registry::get(state, scope, name, "")?;
            Ok(ok(&scale_of(&obj, paths, scope.resource.builtin)))
        }
        (Subresource::Scale, &Method::PUT, Some(_)) => {
            let scale = parse_scale(request.body)?;
            Ok(ok(&update_scale(state, scope, name, &scale, dry_run)?))
        }
        (Subresource::Scale, &Method::PATCH, Some(paths)) => {
            let kind = request
                .content_type
                .and_then(PatchKind::from_content_type)
                .ok_or_else(ApiError::unsupported_patch_type)?;
            let patch: Value = serde_json::from_slice(request.body)
                .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
            let obj = registry::get(state, scope, name, "")?;
            let mut scale = scale_of(&obj, paths, scope.resource.builtin);
            match kind {
                PatchKind::Merge => merge_patch(&mut scale, &patch),
                PatchKind::StrategicMerge | PatchKind::Apply => {
                    strategic_merge_patch(&mut scale, &patch);
                }
                PatchKind::Json => {
                    json_patch(&mut scale, &patch)
                        .map_err(|why| crate::patch::not_applied(&why))?;
                }
            }
            Ok(ok(&update_scale(state, scope, name, &scale, dry_run)?))
        }
        (Subresource::Eviction, &Method::POST, _) => {
            let status = evict(state, scope, name, request.body, dry_run)?;
            Ok(json_response(StatusCode::CREATED, status.to_string().into_bytes()))
        }
        _ => Err(ApiError::method_not_allowed()),
    }
}

fn ok(value: &Value) -> Response {
    json_response(StatusCode::OK, value.to_string().into_bytes())
}

/// The `Scale` of `obj`: its name, namespace, uid, resourceVersion and creation time, the
/// replicas it asks for and has, and the selector of its pods.
///
/// A built-in workload without `spec.replicas` asks for 1 (what kube-apiserver's defaulting
/// would have stored); a custom resource without the field asks for 0, as the apiextensions
/// server reads a missing field.
fn scale_of(obj: &Value, paths: &ScalePaths, builtin: bool) -> Value {
    let int = |pointer: &str| obj.pointer(pointer).and_then(Value::as_i64);
    let spec_replicas = int(&paths.spec_replicas).unwrap_or(i64::from(builtin));
    let status_replicas = int(&paths.status_replicas).unwrap_or(0);
    let selector = match &paths.selector {
        ScaleSelector::SpecSelector => obj
            .pointer("/spec/selector")
            .and_then(|s| serde_json::from_value::<WireSelector>(s.clone()).ok())
            .and_then(|s| LabelSelector::from_label_selector(&s).ok())
            .map(|s| s.to_string())
            .unwrap_or_default(),
        ScaleSelector::Path(pointer) => {
            obj.pointer(pointer).and_then(Value::as_str).unwrap_or_default().to_owned()
        }
        ScaleSelector::None => String::new(),
    };
    let mut metadata = serde_json::Map::new();
    for field in ["name", "namespace", "uid", "resourceVersion", "creationTimestamp"] {
        let value = meta_str(obj, field);
        if !value.is_empty() {
            metadata.insert(field.into(), json!(value));
        }
    }
    let mut status = json!({"replicas": status_replicas});
    if !selector.is_empty() {
        status["selector"] = json!(selector);
    }
    let mut spec = json!({});
    if spec_replicas != 0 {
        spec["replicas"] = json!(spec_replicas);
    }
    json!({"kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": metadata,
           "spec": spec, "status": status})
}

/// The `Scale` of a PUT.
fn parse_scale(body: &[u8]) -> Result<Value, ApiError> {
    let scale: Value = serde_json::from_slice(body).map_err(|e| {
        ApiError::bad_request(format!(
            "the object provided is unrecognized (must be of type Scale): couldn't get \
             version/kind; json parse error: {e}"
        ))
    })?;
    let kind = scale.get("kind").and_then(Value::as_str).unwrap_or("Scale");
    if kind != "Scale" {
        return Err(ApiError::bad_request(format!(
            "the object provided is unrecognized (must be of type Scale): {kind}"
        )));
    }
    Ok(scale)
}

/// Writes `scale`'s `spec.replicas` into the object, conditionally on `scale`'s
/// `metadata.resourceVersion` when it has one; returns the object's new `Scale`.
fn update_scale(
    state: &mut State,
    scope: Scope<'_>,
    name: &str,
    scale: &Value,
    dry_run: bool,
) -> Result<Value, ApiError> {
    let resource = scope.resource;
    let Some(paths) = resource.scale.as_ref() else {
        return Err(ApiError::path_not_found());
    };
    let body_name = meta_str(scale, "name");
    if body_name != name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({name})"
        )));
    }
    let replicas = scale.pointer("/spec/replicas").map_or(Some(0), Value::as_i64);
    let replicas = match replicas {
        Some(n) if n >= 0 => n,
        _ => {
            let shown = scale.pointer("/spec/replicas").map(Value::to_string).unwrap_or_default();
            let why = format!("Invalid value: {shown}: must be greater than or equal to 0");
            let error = ("spec.replicas", "FieldValueInvalid", why);
            return Err(ApiError::invalid("Scale", "autoscaling", name, &[error]));
        }
    };
    let existing = registry::get(state, scope, name, "")?;
    let mut obj = Value::clone(&existing);
    set_pointer(&mut obj, &paths.spec_replicas, json!(replicas));
    // The scale's version is the object's: an empty one makes the write unconditional.
    let rv = meta_str(scale, "resourceVersion").to_owned();
    metadata_mut(&mut obj).insert("resourceVersion".into(), json!(rv));
    let updated = registry::update(state, scope, name, obj, Part::Main, dry_run)?;
    Ok(scale_of(&updated, paths, resource.builtin))
}

/// Sets the field at `pointer` (`/spec/replicas`), making the objects on the way.
fn set_pointer(obj: &mut Value, pointer: &str, value: Value) {
    let mut at = obj;
    let fields: Vec<&str> = pointer.split('/').skip(1).collect();
    let Some((last, parents)) = fields.split_last() else { return };
    for field in parents {
        if !at.get(*field).is_some_and(Value::is_object)
            && let Value::Object(map) = at
        {
            map.insert((*field).to_owned(), json!({}));
        }
        let Some(next) = at.get_mut(*field) else { return };
        at = next;
    }
    if let Value::Object(map) = at {
        map.insert((*last).to_owned(), value);
    }
}

/// kube-apiserver's answer when a budget allows no disruption (`checkAndDecrement`).
const BUDGET_VIOLATED: &str = "Cannot evict pod as it would violate the pod's disruption budget.";

/// `POST pods/{name}/eviction`: deletes the pod unless a `PodDisruptionBudget` that selects
/// it allows no disruption; returns the `Status` of success (HTTP 201).
fn evict(
    state: &mut State,
    pods: Scope<'_>,
    name: &str,
    body: &[u8],
    dry_run: bool,
) -> Result<Value, ApiError> {
    let eviction: Value = serde_json::from_slice(body).map_err(|e| {
        ApiError::bad_request(format!(
            "the object provided is unrecognized (must be of type Eviction): couldn't get \
             version/kind; json parse error: {e}"
        ))
    })?;
    if meta_str(&eviction, "name") != name {
        return Err(ApiError::bad_request("name in URL does not match name in Eviction object"));
    }
    let options = eviction.get("deleteOptions").cloned().unwrap_or_else(|| json!({}));
    let dry_run = dry_run
        || options
            .get("dryRun")
            .and_then(Value::as_array)
            .is_some_and(|d| d.iter().any(|v| v == "All"));
    let pod = registry::get(state, pods, name, "")?;
    if !can_ignore_budget(&pod) {
        let budgets = budgets_of(state, &pod);
        match budgets.as_slice() {
            [] => {}
            [(budget_resource, budget)] => {
                let unhealthy_may_go = !is_ready(&pod) && unhealthy_may_be_evicted(budget);
                if !unhealthy_may_go {
                    let budget_scope =
                        Scope { resource: budget_resource, namespace: pods.namespace };
                    check_and_decrement(state, budget_scope, budget, name, dry_run)?;
                }
            }
            _ => {
                return Err(ApiError::new(
                    500,
                    "",
                    "This pod has more than one PodDisruptionBudget, which the eviction \
                     subresource does not support.",
                ));
            }
        }
    }
    registry::delete(state, pods, name, &options, dry_run)?;
    Ok(json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
              "code": 201}))
}

/// A pod that is done, not started, or already going is evicted whatever its budgets say
/// (`canIgnorePDB`).
fn can_ignore_budget(pod: &Value) -> bool {
    let phase = pod.pointer("/status/phase").and_then(Value::as_str).unwrap_or_default();
    matches!(phase, "Succeeded" | "Failed" | "Pending" | "")
        || pod.pointer("/metadata/deletionTimestamp").is_some()
}

/// Whether the pod's `Ready` condition is `True`.
fn is_ready(pod: &Value) -> bool {
    let conditions = pod.pointer("/status/conditions").and_then(Value::as_array);
    conditions.into_iter().flatten().any(|c| c["type"] == "Ready" && c["status"] == "True")
}

/// For a pod that is not ready: its budget's `unhealthyPodEvictionPolicy` is `AlwaysAllow`,
/// or (the default, `IfHealthyBudget`) the budget has the healthy pods it wants.
fn unhealthy_may_be_evicted(budget: &Value) -> bool {
    let policy = budget.pointer("/spec/unhealthyPodEvictionPolicy").and_then(Value::as_str);
    let status = |field: &str| {
        budget.pointer(&format!("/status/{field}")).and_then(Value::as_i64).unwrap_or(0)
    };
    policy == Some("AlwaysAllow")
        || (status("currentHealthy") >= status("desiredHealthy") && status("desiredHealthy") > 0)
}

/// The budgets in the pod's namespace whose selector matches its labels (a budget without a
/// selector, or with one that does not parse, matches nothing).
fn budgets_of(state: &State, pod: &Value) -> Vec<(Arc<ApiResource>, Value)> {
    let Some(resource) = state.catalog.find("policy", "v1", "poddisruptionbudgets") else {
        return Vec::new();
    };
    let labels: BTreeMap<String, String> = pod
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
        .collect();
    let prefix = format!("{}/", meta_str(pod, "namespace"));
    state
        .store
        .range(&resource.storage, &prefix)
        .take_while(|(key, _)| key.starts_with(&prefix))
        .filter(|(_, budget)| {
            budget
                .pointer("/spec/selector")
                .and_then(|s| serde_json::from_value::<WireSelector>(s.clone()).ok())
                .and_then(|s| LabelSelector::from_label_selector(&s).ok())
                .is_some_and(|s| s.matches(&labels))
        })
        .map(|(_, budget)| (Arc::clone(&resource), Value::clone(budget)))
        .collect()
}

/// `checkAndDecrement`: refuses the eviction when the budget allows no disruption (or its
/// status is older than its spec); else takes one disruption from it and records the pod in
/// `status.disruptedPods`.
fn check_and_decrement(
    state: &mut State,
    scope: Scope<'_>,
    budget: &Value,
    pod: &str,
    dry_run: bool,
) -> Result<(), ApiError> {
    let budget_name = meta_str(budget, "name");
    let int = |pointer: &str| budget.pointer(pointer).and_then(Value::as_i64).unwrap_or(0);
    let too_many = |retry_after: u32, why: String| {
        let mut error = ApiError::new(429, "TooManyRequests", BUDGET_VIOLATED);
        error.retry_after = Some(retry_after);
        error.details = Some(Box::default());
        error.causes =
            vec![Cause { reason: "DisruptionBudget".into(), message: why, field: String::new() }];
        error
    };
    if int("/status/observedGeneration") < int("/metadata/generation") {
        let why =
            format!("The disruption budget {budget_name} is still being processed by the server.");
        return Err(too_many(10, why));
    }
    let allowed = int("/status/disruptionsAllowed");
    let forbidden = |why: &str| {
        let resource = GroupResource::new("policy", "poddisruptionbudget");
        let message = format!("{resource} {budget_name:?} is forbidden: {why}");
        let mut error = ApiError::new(403, "Forbidden", message);
        error.details =
            Some(Box::new((budget_name.to_owned(), "policy".into(), "poddisruptionbudget".into())));
        error
    };
    if allowed < 0 {
        return Err(forbidden("pdb disruptions allowed is negative"));
    }
    let disrupted = budget.pointer("/status/disruptedPods").and_then(Value::as_object);
    if disrupted.is_some_and(|d| d.len() > MAX_DISRUPTED_PODS) {
        return Err(forbidden(
            "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
        ));
    }
    if allowed == 0 {
        let why = format!(
            "The disruption budget {budget_name} needs {} healthy pods and has {} currently",
            int("/status/desiredHealthy"),
            int("/status/currentHealthy")
        );
        return Err(too_many(0, why));
    }
    if dry_run {
        return Ok(());
    }
    let mut updated = budget.clone();
    updated["status"]["disruptionsAllowed"] = json!(allowed - 1);
    if !updated["status"]["disruptedPods"].is_object() {
        updated["status"]["disruptedPods"] = json!({});
    }
    updated["status"]["disruptedPods"][pod] = json!(now_rfc3339());
    let name = budget_name.to_owned();
    registry::update(state, scope, &name, updated, Part::Status, false)?;
    Ok(())
}

/// kube-apiserver's `MaxDisruptedPodSize`.
const MAX_DISRUPTED_PODS: usize = 2000;

#[cfg(test)]
mod tests {
    use super::*;

    fn workload() -> ScalePaths {
        ScalePaths {
            spec_replicas: "/spec/replicas".into(),
            status_replicas: "/status/replicas".into(),
            selector: ScaleSelector::SpecSelector,
        }
    }

    #[test]
    fn a_workloads_scale_carries_its_selector_in_string_form() {
        let deployment = json!({
            "metadata": {"name": "web", "namespace": "apps", "uid": "u1", "resourceVersion": "7",
                         "labels": {"not": "copied"}},
            "spec": {"replicas": 3, "selector": {
                "matchLabels": {"app": "web"},
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["b", "a"]}]}},
            "status": {"replicas": 2}
        });
        let scale = scale_of(&deployment, &workload(), true);
        assert_eq!(
            scale,
            json!({"kind": "Scale", "apiVersion": "autoscaling/v1",
                   "metadata": {"name": "web", "namespace": "apps", "uid": "u1", "resourceVersion": "7"},
                   "spec": {"replicas": 3},
                   "status": {"replicas": 2, "selector": "app=web,tier in (a,b)"}})
        );
        // Defaulting would have stored one replica; a custom resource reads a missing field as 0.
        let bare = json!({"metadata": {"name": "web"}});
        assert_eq!(scale_of(&bare, &workload(), true)["spec"]["replicas"], 1);
        let custom = ScalePaths { selector: ScaleSelector::None, ..workload() };
        assert_eq!(scale_of(&bare, &custom, false)["spec"], json!({}));
    }

    #[test]
    fn crd_scale_paths_are_json_paths_of_fields() {
        assert_eq!(ScalePaths::pointer(".spec.size").as_deref(), Some("/spec/size"));
        assert_eq!(ScalePaths::pointer("spec.size"), None);
        assert_eq!(ScalePaths::pointer(".spec.items[0]"), None);
        assert_eq!(ScalePaths::pointer(".spec..size"), None);
    }

    #[test]
    fn set_pointer_makes_the_objects_on_the_way() {
        let mut obj = json!({"metadata": {}});
        set_pointer(&mut obj, "/spec/scale/size", json!(2));
        assert_eq!(obj, json!({"metadata": {}, "spec": {"scale": {"size": 2}}}));
    }

    #[test]
    fn budgets_are_ignored_for_pods_not_running() {
        for phase in ["Pending", "Succeeded", "Failed"] {
            assert!(can_ignore_budget(&json!({"status": {"phase": phase}})), "{phase}");
        }
        assert!(!can_ignore_budget(&json!({"status": {"phase": "Running"}})));
        let going = json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"},
                           "status": {"phase": "Running"}});
        assert!(can_ignore_budget(&going));
    }
}
