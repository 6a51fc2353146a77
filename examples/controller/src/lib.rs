//! A controller on this project's informers, whole: `ConfigMapSet`, a cluster-scoped custom
//! resource asking for the same config map in several namespaces, and the controller that makes
//! it so.
//!
//! The controller [`run`]s in a `Manager`: behind a Lease (one replica of several reconciles,
//! the others keep their caches synced to take over at once), with `/healthz`, `/readyz` and
//! `/metrics` on one port. It watches
//! `ConfigMapSet`s, the config maps it owns (owner references with `controller: true`) and
//! namespaces (a namespace created later gets its config map), and for each set:
//!
//! - keeps a finalizer on it (the `finalizer` helper), and when it is deleted removes its config
//!   maps before letting it go;
//! - creates or updates a config map named after the set in each listed namespace that exists,
//!   and deletes the ones in namespaces no longer listed;
//! - writes its status: a `Ready` condition (false, `NamespaceMissing`, while a listed namespace
//!   does not exist), `observedGeneration` and how many config maps are in place;
//! - records Events for what it creates, updates and deletes, and metrics.
//!
//! Every read comes from the informers' listers; writes carry the version read, so a stale
//! cache gets a `409 Conflict`, which the controller retries at once.
//!
//! A validating admission [`webhook`] (on `informer-webhook`'s server) keeps sets the
//! controller could never satisfy (no namespace, a namespace name the API server refuses, a
//! data key no config map may have) out of the API server, with a message saying what to fix.
//!
//! ```
//! use example_controller::ConfigMapSet;
//!
//! let set: ConfigMapSet = serde_json::from_value(serde_json::json!({
//!     "apiVersion": "sets.example.com/v1",
//!     "kind": "ConfigMapSet",
//!     "metadata": {"name": "web"},
//!     "spec": {"namespaces": ["shop", "blog"], "data": {"mode": "fast"}},
//! }))?;
//! assert_eq!(set.spec.namespaces.len(), 2);
//! assert_eq!(ConfigMapSet::crd().metadata.name.as_deref(), Some("configmapsets.sets.example.com"));
//! # Ok::<(), serde_json::Error>(())
//! ```

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use informer_client::{Client, ClientError, Patch, PatchParams};
use informer_controller::conditions::{self, ConditionExt, ConditionStatus};
use informer_controller::controller::{Action, Controller, Request};
use informer_controller::events::{EventRecorder, EventType};
use informer_controller::filter::{Changed, GenerationChanged, Or};
use informer_controller::finalizer::{Event, FinalizerError, finalizer};
use informer_controller::leader_election::{LeaderElection, LeaderElectionError, Leadership};
pub use informer_controller::manager::Standby;
use informer_controller::manager::{Manager, ManagerError};
use informer_controller::owner_references::{self, OwnerError};
use informer_derive::Informer;
use informer_runtime::metrics::Metrics;
use informer_runtime::selector::LabelSelector;
use informer_runtime::{Lister, ObjectKey, SharedInformerFactory};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    Condition, DeleteOptions, ObjectMeta, Preconditions,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

pub mod webhook;

/// The finalizer the controller puts on every set, to delete its config maps first.
pub const FINALIZER: &str = "sets.example.com/cleanup";
/// The label on every config map a set owns: the set's name.
pub const OWNER_LABEL: &str = "sets.example.com/owner";
/// The controller's name: its Lease, its Events' `reportingController`, its metrics' label.
pub const CONTROLLER: &str = "configmapset-controller";

/// The same config map in several namespaces.
#[derive(Clone, Debug, PartialEq, Deserialize, Informer)]
#[informer(group = "sets.example.com", version = "v1", cluster, status, shortname = "cms")]
pub struct ConfigMapSet {
    /// Standard object metadata.
    pub metadata: ObjectMeta,
    /// What is asked for.
    pub spec: ConfigMapSetSpec,
    /// What is in place.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ConfigMapSetStatus>,
}

/// The namespaces and the data.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigMapSetSpec {
    /// Where a config map named after the set should be.
    pub namespaces: Vec<String>,
    /// The data of each.
    #[serde(default)]
    pub data: BTreeMap<String, String>,
}

/// What the controller found and did.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigMapSetStatus {
    /// `Ready`: every listed namespace has its config map.
    #[serde(default)]
    pub conditions: Vec<Condition>,
    /// The generation of the spec this status is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// config maps in place.
    #[serde(default)]
    pub ready: i32,
}

/// Why a reconcile failed; the controller retries it.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A request to the API server failed (a `409 Conflict` is retried at once).
    #[error("{0}")]
    Client(#[from] ClientError),
    /// A config map of the set's name is another controller's.
    #[error("{0}")]
    Owner(#[from] OwnerError),
}

/// Why the controller could not run.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The leader election's settings.
    #[error("{0}")]
    Election(#[from] LeaderElectionError),
    /// The manager stopped on a failure.
    #[error("{0}")]
    Manager(#[from] ManagerError),
    /// The probes' address could not be bound.
    #[error("binding the probes' address {addr}: {source}")]
    Probes {
        /// The address asked for.
        addr: SocketAddr,
        /// Why it failed.
        #[source]
        source: std::io::Error,
    },
}

/// How a replica runs.
#[derive(Clone, Debug)]
pub struct Settings {
    /// This replica's name in the Lease (the pod's name, in a cluster).
    pub identity: String,
    /// Where the Lease is.
    pub lease_namespace: String,
    /// Lease duration, renew deadline and retry period (client-go's 15 s, 10 s, 2 s by default).
    pub lease: (Duration, Duration, Duration),
    /// Workers reconciling at once.
    pub workers: usize,
    /// Where metrics go, if anywhere.
    pub metrics: Option<Metrics>,
    /// Where `/healthz`, `/readyz` and `/metrics` are served, if anywhere.
    pub probes: Option<SocketAddr>,
    /// When the informers start: at once (warm, the default) or on taking the Lease.
    pub standby: Standby,
}

impl Settings {
    /// The defaults, for `identity`.
    #[must_use]
    pub fn new(identity: impl Into<String>) -> Self {
        Self {
            identity: identity.into(),
            lease_namespace: "default".to_owned(),
            lease: (Duration::from_secs(15), Duration::from_secs(10), Duration::from_secs(2)),
            workers: 2,
            metrics: None,
            probes: None,
            standby: Standby::Warm,
        }
    }
}

/// What reconciles share.
struct Context {
    client: Client,
    configmaps: Lister<ConfigMap>,
    namespaces: Lister<Namespace>,
    recorder: EventRecorder,
}

/// Runs one replica until `stop`, in a manager: the informers (at once, or on taking the
/// Lease: see [`Standby`]), the controller while it holds the Lease, the probes. Returns how
/// leadership ended.
///
/// # Errors
///
/// [`RunError`] for unusable leader-election settings, a probe address that cannot be bound,
/// and a controller that failed (its informers shut down under it).
pub async fn run(
    client: Client,
    settings: Settings,
    stop: CancellationToken,
) -> Result<Leadership, RunError> {
    let (lease, renew, retry) = settings.lease;
    let election = LeaderElection::builder(
        client.clone(),
        &settings.lease_namespace,
        CONTROLLER,
        &settings.identity,
    )
    .lease_duration(lease)
    .renew_deadline(renew)
    .retry_period(retry)
    .build()?;
    let mut factory = SharedInformerFactory::builder(client.clone());
    let mut manager_metrics = None;
    if let Some(metrics) = &settings.metrics {
        factory = factory.metrics(metrics);
        manager_metrics = Some(metrics.clone());
    }
    let factory = factory.build();
    let sets = factory.lister::<ConfigMapSet>();
    let controller = Controller::<ConfigMapSet, _>::new(&factory)
        .name("configmapsets")
        // The controller's own status writes change no generation: they do not come back as
        // work. Finalizer changes and the deletion itself do.
        .filter(Or(
            GenerationChanged,
            Changed(|set: &ConfigMapSet| {
                (set.metadata.deletion_timestamp.clone(), set.metadata.finalizers.clone())
            }),
        ))
        .owns::<ConfigMap>()
        // A namespace that appears (or goes) concerns every set that lists it.
        .watches(move |namespace: &Namespace| {
            let name = namespace.metadata.name.clone().unwrap_or_default();
            sets.list(&LabelSelector::everything())
                .into_iter()
                .filter(|set| set.spec.namespaces.contains(&name))
                .map(|set| ObjectKey::of(&*set))
                .collect::<Vec<_>>()
        })
        .workers(settings.workers);
    let context = Arc::new(Context {
        client: client.clone(),
        configmaps: factory.lister::<ConfigMap>(),
        namespaces: factory.lister::<Namespace>(),
        recorder: EventRecorder::new(client, CONTROLLER, settings.identity.clone()),
    });
    let reconciles = Arc::clone(&context);
    let mut manager = Manager::new(&factory)
        .leader_election(election)
        .standby(settings.standby)
        .add(controller, move |request| {
            let context = Arc::clone(&reconciles);
            async move { reconcile(&context, request).await }
        });
    if let Some(metrics) = &manager_metrics {
        manager = manager.metrics(metrics);
    }
    if let Some(addr) = settings.probes {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| RunError::Probes { addr, source })?;
        manager = manager.probes(listener);
    }
    let outcome = manager.run(stop).await;
    context.recorder.flush().await;
    match outcome {
        Ok(report) => Ok(report.leadership.unwrap_or(Leadership::NotAcquired)),
        Err(ManagerError::LeadershipLost) => Ok(Leadership::Lost),
        Err(e) => Err(e.into()),
    }
}

/// Makes the world what one set asks for, behind its finalizer: the helper adds it before the
/// first [`apply`], and runs [`cleanup`] once the set is being deleted.
async fn reconcile(
    cx: &Context,
    request: Request<ConfigMapSet>,
) -> Result<Action, FinalizerError<Error>> {
    // Gone: its finalizer ran, nothing is left to do.
    let Some(set) = request.object else { return Ok(Action::Done) };
    finalizer(&cx.client, FINALIZER, set, |event| async move {
        match event {
            Event::Apply(set) => apply(cx, &set).await,
            Event::Cleanup(set) => cleanup(cx, &set).await,
        }
    })
    .await
}

/// The config maps `set` controls, as the cache holds them.
fn owned(cx: &Context, set: &ConfigMapSet) -> Vec<Arc<ConfigMap>> {
    cx.configmaps
        .list(&LabelSelector::everything())
        .into_iter()
        .filter(|cm| owner_references::is_controlled_by(&**cm, set))
        .collect()
}

/// A config map in each listed namespace that exists, none elsewhere, and the status.
async fn apply(cx: &Context, set: &ConfigMapSet) -> Result<Action, Error> {
    let name = set.metadata.name.clone().unwrap_or_default();
    let mut missing = Vec::new();
    let mut ready = 0;
    for namespace in &set.spec.namespaces {
        if cx.namespaces.get(namespace).is_err() {
            missing.push(namespace.as_str());
            continue;
        }
        let current = cx.configmaps.namespace(namespace).get(&name).ok();
        ensure(cx, set, namespace, current.as_deref()).await?;
        ready += 1;
    }
    for cm in owned(cx, set).iter().filter(|cm| {
        cm.metadata.namespace.as_ref().is_none_or(|ns| !set.spec.namespaces.contains(ns))
    }) {
        delete(cx, set, cm).await?;
    }
    write_status(cx, set, &missing, ready).await?;
    Ok(Action::Done)
}

/// The set is being deleted: its config maps go first. When this succeeds, the helper removes
/// the finalizer and the API server deletes the set.
async fn cleanup(cx: &Context, set: &ConfigMapSet) -> Result<Action, Error> {
    for cm in &owned(cx, set) {
        delete(cx, set, cm).await?;
    }
    Ok(Action::Done)
}

/// Creates or updates the config map of `set` in `namespace`.
async fn ensure(
    cx: &Context,
    set: &ConfigMapSet,
    namespace: &str,
    current: Option<&ConfigMap>,
) -> Result<(), Error> {
    let name = set.metadata.name.clone().unwrap_or_default();
    let label = BTreeMap::from([(OWNER_LABEL.to_owned(), name.clone())]);
    let Some(current) = current else {
        let mut cm = ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(namespace.to_owned()),
                labels: Some(label),
                ..ObjectMeta::default()
            },
            data: Some(set.spec.data.clone()),
            ..ConfigMap::default()
        };
        owner_references::set_controller_reference(set, &mut cm)?;
        cx.client.create(Some(namespace), &cm).await?;
        let note = format!("created ConfigMap {namespace}/{name}");
        cx.recorder.publish(set, EventType::Normal, "Created", "Create", &note);
        return Ok(());
    };
    // The cached version goes with the update: if the cache is behind, a 409 says so.
    let mut updated = current.clone();
    updated.data = Some(set.spec.data.clone());
    updated.metadata.labels.get_or_insert_with(BTreeMap::new).extend(label);
    // A config map of the same name that another controller owns is left to it: the error
    // names both, and the set's reconcile retries after its backoff.
    owner_references::set_controller_reference(set, &mut updated)?;
    if updated == *current {
        return Ok(());
    }
    cx.client.replace(Some(namespace), &name, &updated).await?;
    let note = format!("updated ConfigMap {namespace}/{name}");
    cx.recorder.publish(set, EventType::Normal, "Updated", "Update", &note);
    Ok(())
}

/// Deletes one config map of `set`, only if it is still the one the cache holds.
async fn delete(cx: &Context, set: &ConfigMapSet, cm: &ConfigMap) -> Result<(), Error> {
    let (namespace, name) =
        (cm.metadata.namespace.as_deref(), cm.metadata.name.as_deref().unwrap_or_default());
    let options = DeleteOptions {
        preconditions: Some(Preconditions {
            uid: cm.metadata.uid.clone(),
            ..Preconditions::default()
        }),
        ..DeleteOptions::default()
    };
    match cx.client.delete_with::<ConfigMap>(namespace, name, &options).await {
        Ok(()) => {
            let note = format!("deleted ConfigMap {}/{name}", namespace.unwrap_or_default());
            cx.recorder.publish(set, EventType::Normal, "Deleted", "Delete", &note);
            Ok(())
        }
        Err(e) if e.is_not_found() => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Writes the status, when it changes.
async fn write_status(
    cx: &Context,
    set: &ConfigMapSet,
    missing: &[&str],
    ready: i32,
) -> Result<(), Error> {
    let old = set.status.clone().unwrap_or_default();
    let generation = set.metadata.generation;
    let ready_condition = if missing.is_empty() {
        let message = format!("{ready} ConfigMaps in place");
        conditions::new("Ready", ConditionStatus::True, "AllPresent", message)
    } else {
        let message = format!("namespaces not found: {}", missing.join(", "));
        conditions::new("Ready", ConditionStatus::False, "NamespaceMissing", message)
    };
    let mut status = ConfigMapSetStatus { observed_generation: generation, ready, ..old.clone() };
    // The transition time moves only when the condition's status does.
    let changed =
        conditions::set(&mut status.conditions, ready_condition.observed_generation(generation));
    if !changed && status == old {
        return Ok(());
    }
    let name = set.metadata.name.as_deref().unwrap_or_default();
    let patch = serde_json::json!({ "status": status });
    cx.client
        .patch_status::<ConfigMapSet, _>(None, name, &Patch::Merge(&patch), &PatchParams::default())
        .await?;
    if !missing.is_empty() && changed {
        let note = format!("namespaces not found: {}", missing.join(", "));
        cx.recorder.publish(set, EventType::Warning, "NamespaceMissing", "Reconcile", &note);
    }
    Ok(())
}

/// Where the world differs from what `sets` ask for, given every config map and namespace;
/// `None` once it does not: each set not being deleted has its finalizer, a config map with its
/// data in each listed namespace that exists and in no other, and a status of its generation
/// whose `Ready` condition says whether every listed namespace exists; a set being deleted
/// still has config maps. What tests and `cargo xtask demo-controller` wait for.
#[must_use]
pub fn difference(
    sets: &[ConfigMapSet],
    configmaps: &[ConfigMap],
    namespaces: &[Namespace],
) -> Option<String> {
    let existing: Vec<&str> =
        namespaces.iter().filter_map(|n| n.metadata.name.as_deref()).collect();
    for set in sets {
        let name = set.metadata.name.as_deref().unwrap_or_default();
        let owned: BTreeMap<&str, &ConfigMap> = configmaps
            .iter()
            .filter(|cm| {
                cm.metadata
                    .owner_references
                    .iter()
                    .flatten()
                    .any(|o| Some(&o.uid) == set.metadata.uid.as_ref())
            })
            .map(|cm| (cm.metadata.namespace.as_deref().unwrap_or_default(), cm))
            .collect();
        if set.metadata.deletion_timestamp.is_some() {
            return Some(format!("set {name} is being deleted, {} config maps left", owned.len()));
        }
        let wanted: Vec<&str> = set
            .spec
            .namespaces
            .iter()
            .map(String::as_str)
            .filter(|n| existing.contains(n))
            .collect();
        let have: Vec<&str> = owned.keys().copied().collect();
        let mut sorted = wanted.clone();
        sorted.sort_unstable();
        sorted.dedup();
        if sorted != have {
            return Some(format!("set {name}: config maps in {have:?}, wanted {sorted:?}"));
        }
        if let Some(ns) =
            owned.iter().find(|(_, cm)| cm.data.as_ref() != Some(&set.spec.data)).map(|(ns, _)| ns)
        {
            return Some(format!("set {name}: the data of {ns}/{name} differs"));
        }
        let status = set.status.clone().unwrap_or_default();
        if status.observed_generation != set.metadata.generation {
            return Some(format!(
                "set {name}: status of generation {:?}, not {:?}",
                status.observed_generation, set.metadata.generation
            ));
        }
        let expected = if wanted.len() == set.spec.namespaces.len() {
            ConditionStatus::True
        } else {
            ConditionStatus::False
        };
        if !conditions::is_present_and_equal(&status.conditions, "Ready", expected) {
            let ready = conditions::find(&status.conditions, "Ready").map(|c| &c.status);
            return Some(format!("set {name}: Ready is {ready:?}, wanted {expected}"));
        }
        if !set.metadata.finalizers.iter().flatten().any(|f| f == FINALIZER) {
            return Some(format!("set {name}: no finalizer"));
        }
    }
    None
}
