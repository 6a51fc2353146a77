//! Owner-reference garbage collection, as kube-controller-manager's garbage collector
//! (`pkg/controller/garbagecollector`) and the registry's delete strategy do it.
//!
//! Two halves. The API server's half runs inside a DELETE ([`deletion_finalizers`],
//! [`validate_delete_options`]): the `propagationPolicy` (or the deprecated
//! `orphanDependents`), or else the resource's default, decides whether the object gets the
//! `orphan` or the `foregroundDeletion` finalizer and so waits for the collector, or goes at
//! once (background). The controller's half is [`collect`], which a task of the server runs
//! after writes ([`run`]): it looks at every stored object and does what `attemptToDeleteItem`,
//! `processDeletingDependentsItem` and `attemptToOrphan` would do for it:
//!
//! - an object being deleted with `orphan`: its dependents lose their reference to it, then
//!   the finalizer goes (and with it the object, if no other finalizer remains);
//! - an object being deleted with `foregroundDeletion`: the finalizer goes once no dependent
//!   refers to it with `blockOwnerDeletion: true`;
//! - an object with owner references: while one owner is there and not waiting for its
//!   dependents ("solid"), it stays, and its references to absent owners (dangling) and to
//!   owners deleting in the foreground are removed; otherwise it is deleted: in the foreground
//!   when an owner waits on it and it has dependents of its own, else with the policy its own
//!   finalizers name (background when none).
//!
//! An owner is absent when no object of its kind has its namespace and name with its uid. A
//! reference to a kind the server does not serve, or from a cluster-scoped object to a
//! namespaced kind, is never resolved (the real collector retries it forever), so the
//! object stays. Every change is an ordinary write: a watch sees it as `MODIFIED` or
//! `DELETED`.
//!
//! Unlike the real collector, which reacts to events through its dependency graph, this one
//! looks at the whole store each time (at most [`MAX_PASSES`] passes a run, each skipping the
//! objects that have no owners and are not being finished); the outcomes are the same, and a
//! test waits for them with [`crate::testing::eventually`].
//!
//! Not done: the real collector's cycle breaker (a foreground dependent whose own dependent is
//! deleting in the foreground has its references made non-blocking first), and its warnings.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::catalog::ApiResource;
use crate::propagation::{
    FOREGROUND, ORPHAN, Propagation, concerns_the_collector, finalizers, has_finalizer, references,
    terminating,
};
use crate::registry::{self, Deleted, Scope};
use crate::state::{Shared, State};
use crate::storage::{ChangeKind, Object, meta_str, metadata_mut, object_key};

/// How many passes one [`collect`] makes at most before it yields the lock; a chain of owners
/// deeper than this is finished by the next run.
const MAX_PASSES: usize = 64;

/// The collector's task: runs [`collect`] whenever a write wakes it, until the server stops.
pub(crate) async fn run(shared: Arc<Shared>) {
    let wake = Arc::clone(&shared.state.lock().gc_wake);
    loop {
        tokio::select! {
            () = shared.shutdown.cancelled() => return,
            () = wake.notified() => {}
        }
        {
            let mut state = shared.state.lock();
            if !collect(&mut state) {
                // Not settled within the bound: come back after other requests had the lock.
                state.gc_wake.notify_one();
            }
        }
        tokio::task::yield_now().await;
    }
}

/// Runs the collector until nothing is left to do (`true`) or [`MAX_PASSES`] passes made
/// changes (`false`).
pub(crate) fn collect(state: &mut State) -> bool {
    for _ in 0..MAX_PASSES {
        let snap = snapshot(state);
        let actions = plan(state, &snap);
        if actions.is_empty() {
            return true;
        }
        let mut applied = 0;
        for action in actions {
            if apply(state, &snap, action) {
                applied += 1;
            }
        }
        if applied == 0 {
            return true;
        }
    }
    false
}

/// One stored object.
struct Entry {
    resource: Arc<ApiResource>,
    key: String,
    obj: Object,
}

/// What the collector does to one object.
enum Action {
    /// Drops the object's owner references to these uids.
    RemoveReferences(usize, Vec<String>),
    /// Drops one of the object's finalizers.
    RemoveFinalizer(usize, &'static str),
    /// Deletes the object with a propagation policy.
    Delete(usize, Propagation),
}

/// An owner reference's place in the decision.
enum Owner {
    /// Present, and not waiting for its dependents.
    Solid,
    /// Absent: no object of its kind and name has its uid.
    Dangling,
    /// Present, being deleted in the foreground.
    Waiting,
}

struct Snapshot {
    entries: Vec<Entry>,
    /// Dependents' entry indices by owner uid.
    dependents: HashMap<String, Vec<usize>>,
}

fn snapshot(state: &State) -> Snapshot {
    let mut entries = Vec::new();
    for storage in state.store.storages() {
        let Some(resource) = state.catalog.find_storage(&storage) else { continue };
        for (key, obj) in state.store.range(&storage, "") {
            // Only dependents and owners the collector is finishing can need an action.
            if !concerns_the_collector(obj) {
                continue;
            }
            entries.push(Entry {
                resource: Arc::clone(&resource),
                key: key.clone(),
                obj: Arc::clone(obj),
            });
        }
    }
    let mut dependents: HashMap<String, Vec<usize>> = HashMap::new();
    for (i, entry) in entries.iter().enumerate() {
        for reference in references(&entry.obj) {
            let uid = reference.get("uid").and_then(Value::as_str).unwrap_or_default();
            dependents.entry(uid.to_owned()).or_default().push(i);
        }
    }
    Snapshot { entries, dependents }
}

fn reference_uid(reference: &Value) -> &str {
    reference.get("uid").and_then(Value::as_str).unwrap_or_default()
}

/// What to do, judged from one consistent view of the store.
fn plan(state: &State, snap: &Snapshot) -> Vec<Action> {
    let mut actions = Vec::new();
    for (i, entry) in snap.entries.iter().enumerate() {
        let obj = &entry.obj;
        let uid = meta_str(obj, "uid");
        let dependents = snap.dependents.get(uid).map_or(&[][..], Vec::as_slice);
        if terminating(obj) {
            // `attemptToOrphan`: the dependents first, then the finalizer.
            if has_finalizer(obj, ORPHAN) {
                if dependents.is_empty() {
                    actions.push(Action::RemoveFinalizer(i, ORPHAN));
                } else {
                    for &d in dependents {
                        actions.push(Action::RemoveReferences(d, vec![uid.to_owned()]));
                    }
                }
            } else if has_finalizer(obj, FOREGROUND) {
                // `processDeletingDependentsItem`: the dependents are deleted from their side.
                let blocked = dependents.iter().any(|&d| {
                    references(&snap.entries[d].obj).any(|r| {
                        reference_uid(r) == uid
                            && r.get("blockOwnerDeletion").and_then(Value::as_bool) == Some(true)
                    })
                });
                if !blocked {
                    actions.push(Action::RemoveFinalizer(i, FOREGROUND));
                }
            }
            // Otherwise being deleted is a one-way trip: wait for the final deletion.
            continue;
        }
        if let Some(action) = judge_dependent(state, snap, i, !dependents.is_empty()) {
            actions.push(action);
        }
    }
    actions
}

/// `attemptToDeleteItem` for an object that is not being deleted.
fn judge_dependent(
    state: &State,
    snap: &Snapshot,
    i: usize,
    has_dependents: bool,
) -> Option<Action> {
    let entry = &snap.entries[i];
    let mut solid = false;
    let mut to_remove = Vec::new();
    let mut waiting = false;
    let mut any = false;
    for reference in references(&entry.obj) {
        any = true;
        match owner(state, entry, reference)? {
            Owner::Solid => solid = true,
            Owner::Dangling => to_remove.push(reference_uid(reference).to_owned()),
            Owner::Waiting => {
                waiting = true;
                to_remove.push(reference_uid(reference).to_owned());
            }
        }
    }
    if !any {
        return None;
    }
    if solid {
        return (!to_remove.is_empty()).then_some(Action::RemoveReferences(i, to_remove));
    }
    if waiting && has_dependents {
        return Some(Action::Delete(i, Propagation::Foreground));
    }
    let policy = if has_finalizer(&entry.obj, ORPHAN) {
        Propagation::Orphan
    } else if has_finalizer(&entry.obj, FOREGROUND) {
        Propagation::Foreground
    } else {
        Propagation::Background
    };
    Some(Action::Delete(i, policy))
}

/// `isDangling` and `classifyReferences` for one reference; `None` when it cannot be resolved
/// (an unknown kind, or a namespaced owner of a cluster-scoped object).
fn owner(state: &State, entry: &Entry, reference: &Value) -> Option<Owner> {
    let api_version = reference.get("apiVersion").and_then(Value::as_str)?;
    let kind = reference.get("kind").and_then(Value::as_str)?;
    let name = reference.get("name").and_then(Value::as_str)?;
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let resource = state
        .catalog
        .in_group_version(group, version)
        .into_iter()
        .find(|r| r.ty.kind == kind && !r.ty.plural.contains('/'))?;
    let namespace = meta_str(&entry.obj, "namespace");
    if resource.ty.namespaced && namespace.is_empty() {
        return None;
    }
    let namespace = if resource.ty.namespaced { namespace } else { "" };
    let found = state.store.get(&resource.storage, &object_key(namespace, name));
    let uid = reference_uid(reference);
    let Some(found) = found.filter(|o| meta_str(o, "uid") == uid) else {
        return Some(Owner::Dangling);
    };
    if terminating(found) && has_finalizer(found, FOREGROUND) {
        Some(Owner::Waiting)
    } else {
        Some(Owner::Solid)
    }
}

/// Carries out an action if its object is still as planned (the real collector's uid and
/// resourceVersion preconditions); whether it wrote.
fn apply(state: &mut State, snap: &Snapshot, action: Action) -> bool {
    let i = match &action {
        Action::RemoveReferences(i, _) | Action::RemoveFinalizer(i, _) | Action::Delete(i, _) => *i,
    };
    let planned = &snap.entries[i];
    let resource = Arc::clone(&planned.resource);
    // An earlier action of this pass may have changed or removed the object.
    let Some(obj) = state.store.get(&resource.storage, &planned.key).cloned() else {
        return false;
    };
    if meta_str(&obj, "resourceVersion") != meta_str(&planned.obj, "resourceVersion")
        || meta_str(&obj, "uid") != meta_str(&planned.obj, "uid")
    {
        return false;
    }
    match action {
        Action::RemoveReferences(_, uids) => {
            let mut obj = Value::clone(&obj);
            let meta = metadata_mut(&mut obj);
            let Some(Value::Array(refs)) = meta.get_mut("ownerReferences") else { return false };
            let before = refs.len();
            refs.retain(|r| !uids.iter().any(|u| u == reference_uid(r)));
            if refs.len() == before {
                return false;
            }
            if refs.is_empty() {
                meta.remove("ownerReferences");
            }
            write(state, &resource, &planned.key, obj);
            true
        }
        Action::RemoveFinalizer(_, finalizer) => {
            let mut obj = Value::clone(&obj);
            let meta = metadata_mut(&mut obj);
            let Some(Value::Array(list)) = meta.get_mut("finalizers") else { return false };
            let before = list.len();
            list.retain(|f| f != finalizer);
            if list.len() == before {
                return false;
            }
            if list.is_empty() {
                meta.remove("finalizers");
            }
            write(state, &resource, &planned.key, obj);
            true
        }
        Action::Delete(_, policy) => {
            let namespace = meta_str(&obj, "namespace").to_owned();
            let name = meta_str(&obj, "name").to_owned();
            let scope = Scope {
                resource: &resource,
                namespace: resource.ty.namespaced.then_some(namespace.as_str()),
            };
            let options = json!({
                "propagationPolicy": policy.as_str(),
                "preconditions": {"uid": meta_str(&obj, "uid"),
                                  "resourceVersion": meta_str(&obj, "resourceVersion")},
            });
            let before = state.store.resource_version();
            match registry::delete(state, scope, &name, &options, false) {
                Ok(Deleted::Object(_) | Deleted::Status(_)) => {
                    state.store.resource_version() != before
                }
                Err(error) => {
                    tracing::debug!(%name, %error, "garbage collector: delete not done");
                    false
                }
            }
        }
    }
}

/// Stores a change the collector made, deleting an object whose last finalizer went.
fn write(state: &mut State, resource: &ApiResource, key: &str, obj: Value) {
    let finalized = terminating(&obj) && finalizers(&obj).next().is_none();
    let kind = if finalized { ChangeKind::Deleted } else { ChangeKind::Modified };
    let change = state.commit(&resource.storage, key, kind, obj);
    if finalized {
        registry::after_delete(state, resource, &change.obj);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::propagation::deletion_finalizers;
    use crate::state::Settings;
    use crate::status::ApiError;

    fn state() -> State {
        State::for_tests(1000)
    }

    fn settings() -> Settings {
        Settings {
            require_namespaces: false,
            bookmark_interval: None,
            watch_buffer: 10,
            max_watches: 10,
            tls: None,
            max_concurrent_streams: 10,
        }
    }

    fn configmaps(state: &State) -> Arc<ApiResource> {
        state.catalog.find("", "v1", "configmaps").expect("configmaps are built in")
    }

    /// Creates a `ConfigMap` in `ns` owned by `owners` (uid, whether it blocks); returns its uid.
    fn create(
        state: &mut State,
        name: &str,
        owners: &[(&str, &str, bool)],
        finalizers: &[&str],
    ) -> String {
        let resource = configmaps(state);
        let scope = Scope { resource: &resource, namespace: Some("ns") };
        let refs: Vec<Value> = owners
            .iter()
            .map(|(owner, uid, block)| {
                json!({"apiVersion": "v1", "kind": "ConfigMap", "name": owner, "uid": uid,
                       "blockOwnerDeletion": block})
            })
            .collect();
        let mut obj = json!({"metadata": {"name": name}});
        if !refs.is_empty() {
            obj["metadata"]["ownerReferences"] = json!(refs);
        }
        if !finalizers.is_empty() {
            obj["metadata"]["finalizers"] = json!(finalizers);
        }
        let created =
            registry::create(state, &settings(), scope, obj, false).expect("the object is created");
        meta_str(&created, "uid").to_owned()
    }

    fn delete(state: &mut State, name: &str, options: &Value) -> Result<Deleted, ApiError> {
        let resource = configmaps(state);
        let scope = Scope { resource: &resource, namespace: Some("ns") };
        registry::delete(state, scope, name, options, false)
    }

    fn get(state: &State, name: &str) -> Option<Object> {
        state.store.get(&configmaps(state).storage, &object_key("ns", name)).cloned()
    }

    fn owner_names(state: &State, name: &str) -> Vec<String> {
        let obj = get(state, name).expect("the object exists");
        references(&obj).map(|r| r["name"].as_str().unwrap_or_default().to_owned()).collect()
    }

    fn remove_finalizers(state: &mut State, name: &str) {
        let resource = configmaps(state);
        let scope = Scope { resource: &resource, namespace: Some("ns") };
        let mut obj = Value::clone(&get(state, name).expect("the object exists"));
        metadata_mut(&mut obj).remove("finalizers");
        registry::update(state, scope, name, obj, registry::Part::Main, false)
            .expect("the update is accepted");
    }

    /// Whether the collector has been woken since the last look.
    fn woken(state: &State) -> bool {
        use futures::FutureExt as _;
        state.gc_wake.notified().now_or_never().is_some()
    }

    // Only writes that can give the collector work wake it (issue 33): a server loading many
    // objects that name no owner must not walk its whole store once per write.
    #[test]
    fn only_writes_the_collector_may_act_on_wake_it() {
        let mut state = state();
        let owner = create(&mut state, "plain", &[], &[]);
        assert!(!woken(&state), "an object without owners or finalizers");
        create(&mut state, "child", &[("plain", &owner, false)], &[]);
        assert!(woken(&state), "an object naming an owner");
        remove_finalizers(&mut state, "plain");
        assert!(!woken(&state), "an update of an object without owners");
        delete(&mut state, "plain", &json!({})).expect("deleted");
        assert!(woken(&state), "a deletion: its dependents may be left without an owner");
    }

    // Anchor: test/integration/garbagecollector TestCascadingDeletion (background part).
    #[test]
    fn background_deletion_collects_dependents_recursively() {
        let mut state = state();
        let owner = create(&mut state, "owner", &[], &[]);
        let child = create(&mut state, "child", &[("owner", &owner, false)], &[]);
        create(&mut state, "grandchild", &[("child", &child, false)], &[]);
        create(&mut state, "held", &[("owner", &owner, false)], &["example.com/hold"]);
        assert!(collect(&mut state), "nothing to collect while the owner is there");
        assert!(get(&state, "child").is_some());
        let Ok(Deleted::Status(_)) = delete(&mut state, "owner", &json!({})) else {
            panic!("a background delete removes the owner at once");
        };
        assert!(get(&state, "child").is_some(), "dependents go after the delete, not in it");
        assert!(collect(&mut state));
        assert!(get(&state, "child").is_none() && get(&state, "grandchild").is_none());
        let held = get(&state, "held").expect("a dependent with a finalizer is only marked");
        assert!(terminating(&held));
        remove_finalizers(&mut state, "held");
        assert!(get(&state, "held").is_none());
    }

    // Anchor: TestBlockingOwnerRefDoesBlock and TestNonBlockingOwnerRefDoesNotBlock.
    #[test]
    fn foreground_deletion_waits_for_blocking_dependents() {
        let mut state = state();
        let owner = create(&mut state, "owner", &[], &[]);
        create(&mut state, "blocking", &[("owner", &owner, true)], &["example.com/hold"]);
        create(&mut state, "free", &[("owner", &owner, false)], &[]);
        let options = json!({"propagationPolicy": "Foreground"});
        let Ok(Deleted::Object(marked)) = delete(&mut state, "owner", &options) else {
            panic!("a foreground delete keeps the owner");
        };
        assert_eq!(marked["metadata"]["finalizers"], json!([FOREGROUND]));
        assert!(terminating(&marked));
        assert!(collect(&mut state));
        assert!(get(&state, "free").is_none(), "a non-blocking dependent is deleted too");
        assert!(terminating(&get(&state, "blocking").expect("held by its finalizer")));
        assert!(get(&state, "owner").is_some(), "the blocking dependent holds the owner");
        remove_finalizers(&mut state, "blocking");
        assert!(collect(&mut state));
        assert!(get(&state, "owner").is_none());
    }

    // Anchor: TestOrphaning.
    #[test]
    fn orphan_deletion_removes_the_references_then_the_owner() {
        for options in [json!({"propagationPolicy": "Orphan"}), json!({"orphanDependents": true})] {
            let mut state = state();
            let owner = create(&mut state, "owner", &[], &[]);
            let other = create(&mut state, "other", &[], &[]);
            create(&mut state, "only", &[("owner", &owner, true)], &[]);
            create(&mut state, "two", &[("owner", &owner, false), ("other", &other, false)], &[]);
            let Ok(Deleted::Object(marked)) = delete(&mut state, "owner", &options) else {
                panic!("an orphaning delete keeps the owner");
            };
            assert_eq!(marked["metadata"]["finalizers"], json!([ORPHAN]));
            let before = state.store.resource_version();
            assert!(collect(&mut state));
            assert!(get(&state, "owner").is_none());
            assert!(owner_names(&state, "only").is_empty());
            assert_eq!(owner_names(&state, "two"), ["other"]);
            // Each change is a write a watch sees: the dependents modified, then the owner gone.
            let kinds: Vec<(ChangeKind, String)> = state
                .store
                .changes_after(before)
                .map(|c| (c.kind, meta_str(&c.obj, "name").to_owned()))
                .collect();
            assert_eq!(
                kinds,
                [
                    (ChangeKind::Modified, "only".to_owned()),
                    (ChangeKind::Modified, "two".to_owned()),
                    (ChangeKind::Deleted, "owner".to_owned()),
                ]
            );
        }
    }

    // Anchor: TestCreateWithNonExistentOwner and TestMixedRelationships.
    #[test]
    fn dangling_owners_are_collected_unless_another_owner_remains() {
        let mut state = state();
        let solid = create(&mut state, "solid", &[], &[]);
        let ghost = "00000000-0000-0000-0000-000000000001";
        create(&mut state, "dangling", &[("ghost", ghost, false)], &[]);
        create(&mut state, "half", &[("ghost", ghost, false), ("solid", &solid, false)], &[]);
        // The name exists, but with another uid: still absent.
        create(&mut state, "renamed", &[("solid", ghost, false)], &[]);
        // A kind the server does not serve is never resolved: the object waits.
        let resource = configmaps(&state);
        let scope = Scope { resource: &resource, namespace: Some("ns") };
        let unknown = json!({"metadata": {"name": "unknown", "ownerReferences": [
            {"apiVersion": "example.com/v1", "kind": "Nothing", "name": "x", "uid": ghost}]}});
        registry::create(&mut state, &settings(), scope, unknown, false).expect("created");
        assert!(collect(&mut state));
        assert!(get(&state, "dangling").is_none() && get(&state, "renamed").is_none());
        assert_eq!(owner_names(&state, "half"), ["solid"]);
        assert!(get(&state, "unknown").is_some());
    }

    // Anchor: `ValidateDeleteOptions` (apimachinery's validation_test.go).
    #[test]
    fn propagation_policies_are_validated() {
        let mut state = state();
        create(&mut state, "a", &[], &[]);
        let Err(unknown) = delete(&mut state, "a", &json!({"propagationPolicy": "Sideways"}))
        else {
            panic!("an unknown policy is refused");
        };
        assert_eq!(
            unknown.message,
            "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Unsupported value: \
             \"Sideways\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\""
        );
        let both = json!({"propagationPolicy": "Orphan", "orphanDependents": false});
        let Err(both) = delete(&mut state, "missing", &both) else {
            panic!("both options are refused, before the object is looked up");
        };
        assert!(
            both.message.ends_with("orphanDependents and deletionPropagation cannot be both set")
        );
        assert!(get(&state, "a").is_some());
    }

    // Anchor: the strategies' `DefaultGarbageCollectionPolicy` (job, replicationcontroller,
    // event) and the store's `deletionFinalizersForGarbageCollection`.
    #[test]
    fn defaults_and_finalizers_follow_the_strategies() {
        let state = state();
        let jobs = state.catalog.find("batch", "v1", "jobs").expect("jobs are built in");
        let cms = configmaps(&state);
        let obj = json!({"metadata": {"name": "x"}});
        assert_eq!(deletion_finalizers(&jobs, &obj, &json!({})), Some(vec![json!(ORPHAN)]));
        assert_eq!(
            deletion_finalizers(&jobs, &obj, &json!({"propagationPolicy": "Background"})),
            None
        );
        assert_eq!(deletion_finalizers(&cms, &obj, &json!({})), None);
        if let Some(events) = state.catalog.find("", "v1", "events") {
            let orphan = json!({"propagationPolicy": "Orphan"});
            assert_eq!(deletion_finalizers(&events, &obj, &orphan), None);
        }
        // A finalizer already there is the default; an explicit policy replaces it.
        let marked = json!({"metadata": {"name": "x", "finalizers": ["a", ORPHAN]}});
        assert_eq!(deletion_finalizers(&cms, &marked, &json!({})), None);
        assert_eq!(
            deletion_finalizers(&cms, &marked, &json!({"propagationPolicy": "Foreground"})),
            Some(vec![json!("a"), json!(FOREGROUND)])
        );
    }
}
