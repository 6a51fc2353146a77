//! How the controller layer writes to the API server: the five requests leader election and
//! Events send, and the JSON patch the [`finalizer`](crate::finalizer) helper adds and removes
//! its finalizer with, behind one small trait, so that this crate needs no particular HTTP
//! client.
//!
//! [`ApiWriter`] is implemented for this project's `Client` (feature `client`, on by default)
//! and for kube-rs's `kube::Client` (feature `kube`): a kube-rs program elects its leader and
//! records its Events through the client it already has. Anything else that can send these
//! requests (a client with its own middleware, a test double that fails on purpose) implements
//! the trait itself, as controller-runtime's `client.Writer` lets a Go program do.
//!
//! The trait is object safe: [`LeaderElection`](crate::leader_election::LeaderElection) and
//! [`EventRecorder`](crate::events::EventRecorder) keep an `Arc<dyn ApiWriter>`, so they are
//! the same type whichever client writes.

use std::error::Error as StdError;
use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;
use informer_runtime::Status;
use informer_runtime::resource::ApiResource;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::events::v1::Event;

/// The writes of the controller layer: get, create and replace a `Lease` (leader election),
/// create an `events.k8s.io/v1` `Event` and merge-patch it (Events and their series counts),
/// and a JSON patch of any object (the [`finalizer`](crate::finalizer) helper's).
///
/// Each method answers what the server answered. An error that carries the server's status
/// ([`WriteError::status`]) lets the caller tell a missing Lease (`404`, which leader election
/// creates) or a lost race (`409`) from a failure.
///
/// # Implementing it
///
/// ```
/// use futures::future::BoxFuture;
/// use informer_controller::write::{ApiWriter, WriteError};
/// use informer_runtime::{ApiResource, Status};
/// use k8s_openapi::api::coordination::v1::Lease;
/// use k8s_openapi::api::events::v1::Event;
///
/// /// A writer for a cluster that is never there: every request fails as unreachable.
/// struct Unreachable;
///
/// fn down<'a, T: Send + 'a>() -> BoxFuture<'a, Result<T, WriteError>> {
///     Box::pin(async { Err(WriteError::new("the API server is unreachable")) })
/// }
///
/// impl ApiWriter for Unreachable {
///     fn get_lease<'a>(&'a self, _: &'a str, _: &'a str) -> BoxFuture<'a, Result<Lease, WriteError>> {
///         Box::pin(async {
///             Err(WriteError::with_status(Status::new(404, "NotFound", "no lease"), "GET lease: 404"))
///         })
///     }
///     fn create_lease<'a>(&'a self, _: &'a str, _: &'a Lease) -> BoxFuture<'a, Result<Lease, WriteError>> {
///         down()
///     }
///     fn replace_lease<'a>(
///         &'a self,
///         _: &'a str,
///         _: &'a str,
///         _: &'a Lease,
///     ) -> BoxFuture<'a, Result<Lease, WriteError>> {
///         down()
///     }
///     fn create_event<'a>(&'a self, _: &'a str, _: &'a Event) -> BoxFuture<'a, Result<Event, WriteError>> {
///         down()
///     }
///     fn merge_patch_event<'a>(
///         &'a self,
///         _: &'a str,
///         _: &'a str,
///         _: &'a serde_json::Value,
///     ) -> BoxFuture<'a, Result<Event, WriteError>> {
///         down()
///     }
///     fn json_patch<'a>(
///         &'a self,
///         _: &'a ApiResource,
///         _: Option<&'a str>,
///         _: &'a str,
///         _: &'a serde_json::Value,
///     ) -> BoxFuture<'a, Result<serde_json::Value, WriteError>> {
///         down()
///     }
/// }
/// ```
pub trait ApiWriter: Send + Sync + 'static {
    /// `GET` the Lease `namespace/name`.
    fn get_lease<'a>(
        &'a self,
        namespace: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Lease, WriteError>>;

    /// `POST` `lease` into `namespace`; `409` when it exists already.
    fn create_lease<'a>(
        &'a self,
        namespace: &'a str,
        lease: &'a Lease,
    ) -> BoxFuture<'a, Result<Lease, WriteError>>;

    /// `PUT` `lease` as `namespace/name`, conditional on its `resourceVersion`: `409` when the
    /// Lease changed since it was read, so that of two candidates racing only one wins.
    fn replace_lease<'a>(
        &'a self,
        namespace: &'a str,
        name: &'a str,
        lease: &'a Lease,
    ) -> BoxFuture<'a, Result<Lease, WriteError>>;

    /// `POST` the `events.k8s.io/v1` `event` into `namespace`.
    fn create_event<'a>(
        &'a self,
        namespace: &'a str,
        event: &'a Event,
    ) -> BoxFuture<'a, Result<Event, WriteError>>;

    /// `PATCH` the Event `namespace/name` with the JSON merge patch `patch`
    /// (`application/merge-patch+json`), as a series count update is sent.
    fn merge_patch_event<'a>(
        &'a self,
        namespace: &'a str,
        name: &'a str,
        patch: &'a serde_json::Value,
    ) -> BoxFuture<'a, Result<Event, WriteError>>;

    /// `PATCH` the object `name` of `resource` (in `namespace`, for a namespaced resource;
    /// `None` for a cluster-scoped one) with the JSON patch `patch` (RFC 6902,
    /// `application/json-patch+json`: an array of operations); answers the object as the
    /// server stored it.
    ///
    /// The patch applies whole or not at all: a `test` operation that fails (the object
    /// changed since it was read) makes kube-apiserver answer `422 Invalid` and change nothing,
    /// which the [`finalizer`](crate::finalizer) helper relies on to add and remove its
    /// finalizer without losing another controller's.
    fn json_patch<'a>(
        &'a self,
        resource: &'a ApiResource,
        namespace: Option<&'a str>,
        name: &'a str,
        patch: &'a serde_json::Value,
    ) -> BoxFuture<'a, Result<serde_json::Value, WriteError>>;
}

impl<W: ApiWriter + ?Sized> ApiWriter for Arc<W> {
    fn get_lease<'a>(
        &'a self,
        namespace: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Lease, WriteError>> {
        (**self).get_lease(namespace, name)
    }

    fn create_lease<'a>(
        &'a self,
        namespace: &'a str,
        lease: &'a Lease,
    ) -> BoxFuture<'a, Result<Lease, WriteError>> {
        (**self).create_lease(namespace, lease)
    }

    fn replace_lease<'a>(
        &'a self,
        namespace: &'a str,
        name: &'a str,
        lease: &'a Lease,
    ) -> BoxFuture<'a, Result<Lease, WriteError>> {
        (**self).replace_lease(namespace, name, lease)
    }

    fn create_event<'a>(
        &'a self,
        namespace: &'a str,
        event: &'a Event,
    ) -> BoxFuture<'a, Result<Event, WriteError>> {
        (**self).create_event(namespace, event)
    }

    fn merge_patch_event<'a>(
        &'a self,
        namespace: &'a str,
        name: &'a str,
        patch: &'a serde_json::Value,
    ) -> BoxFuture<'a, Result<Event, WriteError>> {
        (**self).merge_patch_event(namespace, name, patch)
    }

    fn json_patch<'a>(
        &'a self,
        resource: &'a ApiResource,
        namespace: Option<&'a str>,
        name: &'a str,
        patch: &'a serde_json::Value,
    ) -> BoxFuture<'a, Result<serde_json::Value, WriteError>> {
        (**self).json_patch(resource, namespace, name, patch)
    }
}

/// Why a write of an [`ApiWriter`] failed: the client's own error, and the server's status
/// when the server answered.
///
/// It displays as the client's error does (which names the request), and its
/// [`source`](StdError::source) is that error's source, so that a chain walked for logging
/// does not print the same message twice.
pub struct WriteError {
    status: Option<Box<Status>>,
    error: Box<dyn StdError + Send + Sync>,
}

impl WriteError {
    /// A failure without an answer from the server (transport, timeout, decoding).
    #[must_use]
    pub fn new(error: impl Into<Box<dyn StdError + Send + Sync>>) -> Self {
        Self { status: None, error: error.into() }
    }

    /// A failure the server answered with `status` (`404`, `409`, `422`, ...).
    #[must_use]
    pub fn with_status(status: Status, error: impl Into<Box<dyn StdError + Send + Sync>>) -> Self {
        Self { status: Some(Box::new(status)), error: error.into() }
    }

    /// The server's status, when the server answered with an error.
    #[must_use]
    pub fn status(&self) -> Option<&Status> {
        self.status.as_deref()
    }

    /// The server answered `404 Not Found`.
    #[must_use]
    pub fn is_not_found(&self) -> bool {
        self.status().is_some_and(|s| s.code == 404)
    }

    /// The server answered `409 Conflict` (a stale `resourceVersion`, or the object exists).
    #[must_use]
    pub fn is_conflict(&self) -> bool {
        self.status().is_some_and(|s| s.code == 409)
    }

    /// The client's error, to downcast to its own type.
    #[must_use]
    pub fn into_inner(self) -> Box<dyn StdError + Send + Sync> {
        self.error
    }
}

impl fmt::Debug for WriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WriteError")
            .field("status", &self.status)
            .field("error", &self.error)
            .finish()
    }
}

impl fmt::Display for WriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.error, f)
    }
}

impl StdError for WriteError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.error.source()
    }
}

#[cfg(feature = "client")]
mod client {
    //! [`ApiWriter`] for this project's HTTP client.

    use futures::future::BoxFuture;
    use informer_client::{Client, ClientError, Patch, PatchParams};
    use informer_runtime::resource::ApiResource;
    use k8s_openapi::api::coordination::v1::Lease;
    use k8s_openapi::api::events::v1::Event;

    use super::{ApiWriter, WriteError};

    impl From<ClientError> for WriteError {
        fn from(error: ClientError) -> Self {
            match error.status().cloned() {
                Some(status) => Self::with_status(status, error),
                None => Self::new(error),
            }
        }
    }

    #[cfg_attr(docsrs, doc(cfg(feature = "client")))]
    impl ApiWriter for Client {
        fn get_lease<'a>(
            &'a self,
            namespace: &'a str,
            name: &'a str,
        ) -> BoxFuture<'a, Result<Lease, WriteError>> {
            Box::pin(async move { Ok(self.get::<Lease>(Some(namespace), name).await?) })
        }

        fn create_lease<'a>(
            &'a self,
            namespace: &'a str,
            lease: &'a Lease,
        ) -> BoxFuture<'a, Result<Lease, WriteError>> {
            Box::pin(async move { Ok(self.create(Some(namespace), lease).await?) })
        }

        fn replace_lease<'a>(
            &'a self,
            namespace: &'a str,
            name: &'a str,
            lease: &'a Lease,
        ) -> BoxFuture<'a, Result<Lease, WriteError>> {
            Box::pin(async move { Ok(self.replace(Some(namespace), name, lease).await?) })
        }

        fn create_event<'a>(
            &'a self,
            namespace: &'a str,
            event: &'a Event,
        ) -> BoxFuture<'a, Result<Event, WriteError>> {
            Box::pin(async move { Ok(self.create(Some(namespace), event).await?) })
        }

        fn merge_patch_event<'a>(
            &'a self,
            namespace: &'a str,
            name: &'a str,
            patch: &'a serde_json::Value,
        ) -> BoxFuture<'a, Result<Event, WriteError>> {
            Box::pin(async move {
                let (patch, params) = (Patch::Merge(patch), PatchParams::default());
                Ok(self.patch::<Event, _>(Some(namespace), name, &patch, &params).await?)
            })
        }

        fn json_patch<'a>(
            &'a self,
            resource: &'a ApiResource,
            namespace: Option<&'a str>,
            name: &'a str,
            patch: &'a serde_json::Value,
        ) -> BoxFuture<'a, Result<serde_json::Value, WriteError>> {
            Box::pin(async move {
                let mut api = self.dynamic(resource);
                if let Some(namespace) = namespace {
                    api = api.namespace(namespace);
                }
                let (patch, params) = (Patch::Json(patch), PatchParams::default());
                let object = api.patch(name, &patch, &params).await?;
                serde_json::to_value(object).map_err(WriteError::new)
            })
        }
    }
}

#[cfg(feature = "kube")]
mod kube_client {
    //! [`ApiWriter`] for kube-rs's client, through its `Api`.

    use futures::future::BoxFuture;
    use informer_runtime::Status;
    use informer_runtime::resource::ApiResource;
    use k8s_openapi::api::coordination::v1::Lease;
    use k8s_openapi::api::events::v1::Event;
    use kube::api::{Api, Patch, PatchParams, PostParams};

    use super::{ApiWriter, WriteError};

    impl From<kube::Error> for WriteError {
        fn from(error: kube::Error) -> Self {
            let status = match &error {
                kube::Error::Api(status) => Some(Status {
                    code: status.code,
                    reason: status.reason.clone(),
                    message: status.message.clone(),
                    causes: status
                        .details
                        .iter()
                        .flat_map(|d| &d.causes)
                        .map(|c| (c.reason.clone(), c.message.clone()))
                        .collect(),
                    retry_after: None,
                }),
                _ => None,
            };
            match status {
                Some(status) => Self::with_status(status, error),
                None => Self::new(error),
            }
        }
    }

    #[cfg_attr(docsrs, doc(cfg(feature = "kube")))]
    impl ApiWriter for kube::Client {
        fn get_lease<'a>(
            &'a self,
            namespace: &'a str,
            name: &'a str,
        ) -> BoxFuture<'a, Result<Lease, WriteError>> {
            let api = Api::<Lease>::namespaced(self.clone(), namespace);
            Box::pin(async move { Ok(api.get(name).await?) })
        }

        fn create_lease<'a>(
            &'a self,
            namespace: &'a str,
            lease: &'a Lease,
        ) -> BoxFuture<'a, Result<Lease, WriteError>> {
            let api = Api::<Lease>::namespaced(self.clone(), namespace);
            Box::pin(async move { Ok(api.create(&PostParams::default(), lease).await?) })
        }

        fn replace_lease<'a>(
            &'a self,
            namespace: &'a str,
            name: &'a str,
            lease: &'a Lease,
        ) -> BoxFuture<'a, Result<Lease, WriteError>> {
            let api = Api::<Lease>::namespaced(self.clone(), namespace);
            Box::pin(async move { Ok(api.replace(name, &PostParams::default(), lease).await?) })
        }

        fn create_event<'a>(
            &'a self,
            namespace: &'a str,
            event: &'a Event,
        ) -> BoxFuture<'a, Result<Event, WriteError>> {
            let api = Api::<Event>::namespaced(self.clone(), namespace);
            Box::pin(async move { Ok(api.create(&PostParams::default(), event).await?) })
        }

        fn merge_patch_event<'a>(
            &'a self,
            namespace: &'a str,
            name: &'a str,
            patch: &'a serde_json::Value,
        ) -> BoxFuture<'a, Result<Event, WriteError>> {
            let api = Api::<Event>::namespaced(self.clone(), namespace);
            Box::pin(async move {
                Ok(api.patch(name, &PatchParams::default(), &Patch::Merge(patch)).await?)
            })
        }

        fn json_patch<'a>(
            &'a self,
            resource: &'a ApiResource,
            namespace: Option<&'a str>,
            name: &'a str,
            patch: &'a serde_json::Value,
        ) -> BoxFuture<'a, Result<serde_json::Value, WriteError>> {
            Box::pin(async move {
                if !is_segment(name) {
                    return Err(WriteError::new(format!(
                        "{name:?} cannot name an object of {resource} in a request path"
                    )));
                }
                let path = collection_path(resource, namespace)?;
                // kube-rs sends JSON patches as its `json_patch::Patch` type alone (its
                // `jsonpatch` feature and crate); the operations arrive here as JSON. So the
                // request is built as a merge patch, whose body is the value as it is, and
                // sent with the JSON patch media type instead.
                let mut request = kube::core::Request::new(path)
                    .patch(name, &PatchParams::default(), &Patch::Merge(patch))
                    .map_err(|e| WriteError::new(kube::Error::BuildRequest(e)))?;
                let json_patch = "application/json-patch+json".parse().map_err(WriteError::new)?;
                request.headers_mut().insert("content-type", json_patch);
                Ok(self.request::<serde_json::Value>(request).await?)
            })
        }
    }

    /// The path of `resource`'s collection, in `namespace` for a namespaced resource, as
    /// kube-rs's `Api` builds it: `/api/v1/namespaces/{namespace}/pods`.
    pub(super) fn collection_path(
        resource: &ApiResource,
        namespace: Option<&str>,
    ) -> Result<String, WriteError> {
        let mut path = if resource.group.is_empty() {
            format!("/api/{}", resource.version)
        } else {
            format!("/apis/{}/{}", resource.group, resource.version)
        };
        if resource.namespaced {
            let namespace = namespace.filter(|ns| is_segment(ns)).ok_or_else(|| {
                WriteError::new(format!(
                    "{resource} is namespaced: a JSON patch of one of its objects needs a \
                     namespace that can be a path segment, not {namespace:?}"
                ))
            })?;
            path.push_str("/namespaces/");
            path.push_str(namespace);
        }
        path.push('/');
        path.push_str(&resource.plural);
        Ok(path)
    }

    /// Whether `value` is one path segment that navigates nowhere, as client-go's
    /// `IsValidPathSegmentName` requires (kube-rs's `Api` does not check).
    fn is_segment(value: &str) -> bool {
        !matches!(value, "" | "." | "..") && !value.contains(['/', '%'])
    }
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::WriteError;
    use informer_runtime::Status;

    #[test]
    fn a_write_error_reads_as_its_clients_error_and_keeps_the_servers_status() {
        let error = WriteError::with_status(
            Status::new(409, "Conflict", "the object has been modified"),
            "PUT /apis/coordination.k8s.io/v1/namespaces/default/leases/demo: 409 Conflict",
        );
        assert!(error.is_conflict());
        assert!(!error.is_not_found());
        assert_eq!(
            error.to_string(),
            "PUT /apis/coordination.k8s.io/v1/namespaces/default/leases/demo: 409 Conflict"
        );
        assert!(error.source().is_none(), "the message is not repeated as a source");
        let unanswered = WriteError::new("connection refused");
        assert!(unanswered.status().is_none() && !unanswered.is_conflict());
    }

    /// The JSON patch through kube-rs goes where kube-rs's `Api` would send it, and never to a
    /// path a namespace could redirect.
    #[cfg(feature = "kube")]
    #[test]
    fn kube_json_patches_go_to_the_resources_collection() {
        use super::kube_client::collection_path;
        use informer_runtime::ApiResource;
        use k8s_openapi::api::apps::v1::Deployment;
        use k8s_openapi::api::core::v1::Node;

        let deployments = ApiResource::of::<Deployment>();
        let path = collection_path(&deployments, Some("apps")).unwrap();
        assert_eq!(path, "/apis/apps/v1/namespaces/apps/deployments");
        assert_eq!(
            collection_path(&ApiResource::of::<Node>(), Some("x")).unwrap(),
            "/api/v1/nodes"
        );
        for namespace in [None, Some(""), Some(".."), Some("a/b"), Some("%2e")] {
            let error = collection_path(&deployments, namespace).unwrap_err();
            assert!(error.to_string().contains("deployments.apps is namespaced"), "{error}");
        }
    }
}
