//! Cleanup before deletion: a reconcile that keeps a finalizer of its own on each object, so
//! that the API server keeps a deleted object until the controller has cleaned up after it
//! (kube-runtime's `finalizer` helper, controller-runtime's `finalizer.Finalizers`).
//!
//! Where it sits: inside a reconcile ([`Controller::run`](crate::controller::Controller::run)),
//! between the object the cache holds and your code. [`finalizer`] looks at the object's
//! `metadata.finalizers` and `metadata.deletionTimestamp`, adds or removes its finalizer with a
//! JSON patch through an [`ApiWriter`], and calls your reconcile with an [`Event`]: `Apply`
//! while the object lives, `Cleanup` once it is being deleted.
//!
//! # The flow
//!
//! 1. An object is created; its reconcile runs [`finalizer`], which adds the finalizer and runs
//!    [`Event::Apply`] on the object the patch returned.
//! 2. Each change: [`Event::Apply`].
//! 3. The object is deleted: the API server sets `deletionTimestamp` and keeps the object while
//!    finalizers remain. [`finalizer`] runs [`Event::Cleanup`] and, once it succeeded, removes
//!    its finalizer; the API server deletes the object when no finalizer is left.
//!
//! A cleanup that fails keeps the finalizer, and with it the object: the error is returned and
//! the controller retries after its backoff.
//!
//! # Concurrent changes
//!
//! Other controllers add and remove their own finalizers at the same time, and the object a
//! reconcile holds may be behind the server's. Each patch is guarded by a `test` operation, as
//! kube-runtime's: adding tests that `metadata.finalizers` is still the list the object had (or
//! absent), removing tests that the entry at our index is still ours, so that neither
//! duplicates ours nor removes another's. When a `test` fails, kube-apiserver changes nothing
//! and answers `422 Invalid` with no causes (its answer to every JSON patch that does not
//! apply). The helper turns that answer into a `409 Conflict` [`WriteError`] inside
//! [`FinalizerError::AddFinalizer`] or [`FinalizerError::RemoveFinalizer`], whose source is
//! the server's own error: the controller takes a conflict in a reconcile's error chain for a
//! stale cache and reconciles again at once, from the object as the cache holds it by then.
//! A `422` with causes (a finalizer name the server refuses as invalid) is kept as it is.

use std::error::Error as StdError;
use std::future::Future;
use std::sync::Arc;

use informer_runtime::Status;
use informer_runtime::resource::{ApiResource, Resource, is_namespaced};
use serde_json::{Value, json};

use crate::controller::Action;
use crate::write::{ApiWriter, WriteError};

/// What a reconcile wrapped by [`finalizer`] is asked to do.
#[derive(Debug)]
pub enum Event<K> {
    /// Make the world match the object: it lives, and carries the finalizer.
    ///
    /// Runs again on each change, after a failure and after a restart: it must be idempotent.
    Apply(Arc<K>),
    /// The object is being deleted: remove what was made for it. The finalizer is removed
    /// once this succeeds, and the object is deleted when no finalizer is left.
    ///
    /// Runs again after a failure, after a restart, and when the removal of the finalizer
    /// lost a race with another controller: it must be idempotent, and it may run for an
    /// object whose `Apply` never ran or never succeeded.
    Cleanup(Arc<K>),
}

/// Why [`finalizer`] failed. `E` is the error of your reconcile.
///
/// All are retried by the controller: a conflict (see the [module docs](self#concurrent-changes))
/// at once, the rest after backoff.
#[derive(Debug, thiserror::Error)]
pub enum FinalizerError<E>
where
    E: StdError + 'static,
{
    /// The reconcile of [`Event::Apply`] failed.
    #[error("the reconcile of the object (finalizer Event::Apply) failed")]
    ApplyFailed(#[source] E),
    /// The reconcile of [`Event::Cleanup`] failed. The finalizer stays, and so does the
    /// object, until a cleanup succeeds.
    #[error(
        "the cleanup of the object being deleted (finalizer Event::Cleanup) failed; the \
         finalizer stays, and the object with it, until a cleanup succeeds"
    )]
    CleanupFailed(#[source] E),
    /// The JSON patch that adds the finalizer failed. A `409 Conflict` status
    /// ([`WriteError::is_conflict`]) means the object's finalizers changed since it was read.
    #[error("adding the finalizer to the object failed")]
    AddFinalizer(#[source] WriteError),
    /// The JSON patch that removes the finalizer failed (after a successful cleanup, which
    /// runs again). A `409 Conflict` status means the object's finalizers changed since it was
    /// read.
    #[error("removing the finalizer from the object failed; its cleanup will run again")]
    RemoveFinalizer(#[source] WriteError),
    /// The object has no `metadata.name`, which the patch needs. Objects from an informer
    /// always have one: this is an object made by hand.
    #[error("the object has no metadata.name: the finalizer helper patches objects by name")]
    UnnamedObject,
}

/// Reconciles `object` so that `cleanup` runs before the API server deletes it, by keeping
/// `finalizer_name` in its `metadata.finalizers` (kube-runtime's
/// `kube::runtime::finalizer::finalizer`, with the same states and patches).
///
/// Use it as the whole of a reconcile, and write `reconcile` to take the object from the
/// [`Event`] rather than `object` (the event's may be newer). What it does, by the object's
/// state:
///
/// | finalizer | being deleted | what runs | then |
/// |---|---|---|---|
/// | ours present | no | [`Event::Apply`] | its action |
/// | ours present | yes | [`Event::Cleanup`] | the finalizer is removed; its action |
/// | absent | no | the finalizer is added, then [`Event::Apply`] | its action |
/// | absent | yes | nothing | [`Action::Done`] |
///
/// Where kube-runtime returns after adding the finalizer and waits for the update the patch
/// causes, this runs [`Event::Apply`] at once on the object the patch returned: the object's
/// first reconcile does its work without waiting for a watch event. That update event still
/// arrives and reconciles the object again ([`Event::Apply`] is idempotent). If the patched
/// object does not decode as `K`, it waits for that event instead, as kube-runtime does.
///
/// `finalizer_name` must be unique to this controller, and, for kube-apiserver, a qualified
/// name (`example.com/cleanup`).
///
/// # Guarantees
///
/// Once [`Event::Apply`] has started for an object, the API server does not delete it before an
/// [`Event::Cleanup`] succeeded. Never a lost finalizer: the patches carry `test`s (see the
/// [module docs](self#concurrent-changes)).
///
/// # Caveats
///
/// A deletion waits while the controller is not running, or while its cleanup fails.
///
/// # Errors
///
/// [`FinalizerError::ApplyFailed`] and [`FinalizerError::CleanupFailed`] carry `reconcile`'s
/// error; [`FinalizerError::AddFinalizer`] and [`FinalizerError::RemoveFinalizer`] the
/// write's (a `409 Conflict` when the finalizers changed since the object was read);
/// [`FinalizerError::UnnamedObject`] for an object without a name.
///
/// # Examples
///
/// ```no_run
/// use informer_client::{Client, ClientError};
/// use informer_controller::controller::{Action, Controller, stop_on_signal};
/// use informer_controller::finalizer::{Event, finalizer};
/// use informer_runtime::SharedInformerFactory;
/// use k8s_openapi::api::core::v1::ConfigMap;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let client = Client::try_default()?;
/// let factory = SharedInformerFactory::new(client.clone());
/// Controller::<ConfigMap, _>::new(&factory)
///     .run(
///         move |request| {
///             let client = client.clone();
///             async move {
///                 let Some(config_map) = request.object else { return Ok(Action::Done) };
///                 finalizer(&client, "example.com/cleanup", config_map, |event| async move {
///                     match event {
///                         Event::Apply(config_map) => { /* make what it describes */ }
///                         Event::Cleanup(config_map) => { /* remove what was made */ }
///                     }
///                     Ok::<_, ClientError>(Action::Done)
///                 })
///                 .await
///             }
///         },
///         stop_on_signal(),
///     )
///     .await?;
/// # Ok(())
/// # }
/// ```
#[doc(alias = "Finalizers")]
pub async fn finalizer<K, W, F, Fut, E>(
    writer: &W,
    finalizer_name: &str,
    object: Arc<K>,
    reconcile: F,
) -> Result<Action, FinalizerError<E>>
where
    K: Resource,
    W: ApiWriter + ?Sized,
    F: FnOnce(Event<K>) -> Fut,
    Fut: Future<Output = Result<Action, E>>,
    E: StdError + 'static,
{
    let meta = object.meta();
    let finalizers = meta.finalizers.as_deref().unwrap_or_default();
    let ours = finalizers.iter().position(|f| f == finalizer_name);
    let deleting = meta.deletion_timestamp.is_some();
    match (ours, deleting) {
        (Some(_), false) => {
            reconcile(Event::Apply(object)).await.map_err(FinalizerError::ApplyFailed)
        }
        (Some(index), true) => {
            let name = meta.name.clone().ok_or(FinalizerError::UnnamedObject)?;
            let namespace = namespace_of(&*object);
            let action =
                reconcile(Event::Cleanup(object)).await.map_err(FinalizerError::CleanupFailed)?;
            let patch = removal(index, finalizer_name);
            let resource = ApiResource::of::<K>();
            writer
                .json_patch(&resource, namespace.as_deref(), &name, &patch)
                .await
                .map_err(|e| FinalizerError::RemoveFinalizer(conflict_if_not_applied(e)))?;
            Ok(action)
        }
        (None, false) => {
            let name = meta.name.as_deref().ok_or(FinalizerError::UnnamedObject)?;
            let namespace = namespace_of(&*object);
            let patch = addition(finalizers, finalizer_name);
            let resource = ApiResource::of::<K>();
            let patched = writer
                .json_patch(&resource, namespace.as_deref(), name, &patch)
                .await
                .map_err(|e| FinalizerError::AddFinalizer(conflict_if_not_applied(e)))?;
            match serde_json::from_value::<K>(patched) {
                Ok(patched) => reconcile(Event::Apply(Arc::new(patched)))
                    .await
                    .map_err(FinalizerError::ApplyFailed),
                Err(error) => {
                    // The update event of the patch reconciles it again, finalizer present.
                    tracing::debug!(%error, name, "the patched object does not decode; Apply waits for its update event");
                    Ok(Action::Done)
                }
            }
        }
        (None, true) => Ok(Action::Done),
    }
}

/// The namespace of the patch: the object's, for a namespaced kind.
fn namespace_of<K: Resource>(object: &K) -> Option<String> {
    if is_namespaced::<K>() { object.meta().namespace.clone() } else { None }
}

/// kube-runtime's patch that adds `ours`: to no finalizers, tested absent (a missing member
/// tests as `null`); to others, tested unchanged, since the API server does not deduplicate
/// finalizers and two adds could both land.
fn addition(finalizers: &[String], ours: &str) -> Value {
    if finalizers.is_empty() {
        json!([
            {"op": "test", "path": "/metadata/finalizers", "value": null},
            {"op": "add", "path": "/metadata/finalizers", "value": [ours]},
        ])
    } else {
        json!([
            {"op": "test", "path": "/metadata/finalizers", "value": finalizers},
            {"op": "add", "path": "/metadata/finalizers/-", "value": ours},
        ])
    }
}

/// kube-runtime's patch that removes `ours` at `index`, tested still ours there: other
/// controllers remove theirs concurrently, which moves the indices.
fn removal(index: usize, ours: &str) -> Value {
    let path = format!("/metadata/finalizers/{index}");
    json!([
        {"op": "test", "path": path, "value": ours},
        {"op": "remove", "path": path},
    ])
}

/// A JSON patch that did not apply (see the [module docs](self#concurrent-changes)) as the
/// conflict it is; any other error as it is.
fn conflict_if_not_applied(error: WriteError) -> WriteError {
    let not_applied = error
        .status()
        .is_some_and(|s| s.code == 422 && s.reason == "Invalid" && s.causes.is_empty());
    if !not_applied {
        return error;
    }
    let status = Status::new(
        409,
        "Conflict",
        "the object's finalizers changed since it was read: the finalizer patch's test failed",
    );
    WriteError::with_status(status, FinalizersChanged(error))
}

/// What a conflict made of a failed JSON patch `test` says; its source is the server's answer.
#[derive(Debug, thiserror::Error)]
#[error(
    "the object's finalizers changed since it was read (a test operation of the JSON patch \
     failed), so the patch changed nothing; the controller reconciles it again at once"
)]
struct FinalizersChanged(#[source] WriteError);

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::*;

    #[test]
    fn the_patches_are_kube_runtimes() {
        assert_eq!(
            addition(&[], "example.com/a"),
            json!([
                {"op": "test", "path": "/metadata/finalizers", "value": null},
                {"op": "add", "path": "/metadata/finalizers", "value": ["example.com/a"]},
            ])
        );
        assert_eq!(
            addition(&["other/x".to_owned()], "example.com/a"),
            json!([
                {"op": "test", "path": "/metadata/finalizers", "value": ["other/x"]},
                {"op": "add", "path": "/metadata/finalizers/-", "value": "example.com/a"},
            ])
        );
        assert_eq!(
            removal(1, "example.com/a"),
            json!([
                {"op": "test", "path": "/metadata/finalizers/1", "value": "example.com/a"},
                {"op": "remove", "path": "/metadata/finalizers/1"},
            ])
        );
    }

    #[test]
    fn a_patch_that_did_not_apply_is_a_conflict_whose_source_is_the_servers_answer() {
        let answer = || {
            WriteError::with_status(
                Status::new(
                    422,
                    "Invalid",
                    "the server rejected our request due to an error in our request",
                ),
                "PATCH /api/v1/namespaces/a/configmaps/b: 422 Invalid",
            )
        };
        let conflict = conflict_if_not_applied(answer());
        assert!(conflict.is_conflict());
        assert_eq!(conflict.status().map(|s| s.reason.as_str()), Some("Conflict"));
        assert!(conflict.to_string().contains("finalizers changed"), "{conflict}");
        let source = conflict.source().and_then(|s| s.downcast_ref::<WriteError>()).unwrap();
        assert_eq!(source.status().map(|s| s.code), Some(422));

        let error: FinalizerError<std::io::Error> = FinalizerError::AddFinalizer(conflict);
        let write = error.source().and_then(|s| s.downcast_ref::<WriteError>()).unwrap();
        assert!(write.is_conflict(), "the controller sees the conflict in the chain");

        // A 422 with causes is a validation error, not a failed test: kept as it is.
        let mut invalid = Status::new(422, "Invalid", "ConfigMap \"b\" is invalid");
        invalid.causes.push(("FieldValueInvalid".to_owned(), "bad finalizer".to_owned()));
        let kept = conflict_if_not_applied(WriteError::with_status(invalid, "PATCH: 422"));
        assert_eq!(kept.status().map(|s| s.code), Some(422));
        let other = conflict_if_not_applied(WriteError::new("connection refused"));
        assert!(other.status().is_none());
    }
}
