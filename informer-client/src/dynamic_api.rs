//! [`DynamicApi`]: the typed requests of [`Client`] for a resource known only at run time,
//! whose objects are [`DynamicObject`]s (client-go's `dynamic.ResourceInterface`, kube-rs's
//! `Api<DynamicObject>`).
//!
//! Where it sits: beside the typed requests of `api_client`, for the writes of a program that
//! learns its resources from discovery ([`Client::resolve`], [`Client::discover`]) and reads
//! them through a dynamic informer. URLs come from the resource's [`ApiResource`] (`request`'s
//! `Target`), and every request goes through the client's own transport, bounds and errors.

use http::Method;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::DeleteOptions;
use serde::Serialize;
use url::Url;

use super::api_client::{Client, Patch, PatchParams, encode, patch_request};
use super::error::{ClientError, Result};
use super::request::{JSON, Target, check_segment};
use super::transport::Body;
use informer_runtime::dynamic::DynamicObject;
use informer_runtime::resource::{ApiResource, Object};

impl Client {
    /// The requests about the objects of `resource`, a resource known only at run time (from
    /// [`Client::resolve`] or [`Client::discover`], or written out): get, create, replace,
    /// patches, status updates and deletes of [`DynamicObject`]s.
    ///
    /// For a namespaced resource, name the namespace with [`DynamicApi::namespace`]; a request
    /// without one fails with [`ClientError::NamespaceRequired`]. A cluster-scoped resource
    /// takes no namespace (one given is ignored).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn run(client: informer_client::Client) -> informer_client::Result<()> {
    /// use informer_client::{Patch, PatchParams};
    ///
    /// let widgets = client.resolve("widgets.example.com").await?;
    /// let api = client.dynamic(&widgets).namespace("apps");
    /// let patch = serde_json::json!({"spec": {"size": 3}});
    /// let widget = api.patch("blue", &Patch::Merge(&patch), &PatchParams::default()).await?;
    /// println!("{} {:?}: size {}", widget.kind(), widget.metadata.name, widget.data["spec"]["size"]);
    /// # Ok(())
    /// # }
    /// ```
    #[doc(alias = "Resource")]
    #[must_use]
    pub fn dynamic(&self, resource: &ApiResource) -> DynamicApi {
        DynamicApi {
            client: self.clone(),
            target: Target::new(resource.clone(), false),
            namespace: None,
        }
    }
}

/// The requests about the objects of one resource known at run time, in one namespace or
/// cluster-wide: what [`Client::dynamic`] returns.
///
/// Objects go and come as [`DynamicObject`]s: the metadata typed, the rest as JSON. Each
/// request is one HTTP request of the [`Client`] it was made from, with its errors: a failure
/// the server answered keeps its `Status` ([`ClientError::status`]), so that a missing object
/// (`404`, [`ClientError::is_not_found`]) or a lost race (`409`, [`ClientError::is_conflict`])
/// can be told from the rest.
///
/// Cheap to clone (the client's connections are shared).
///
/// ```no_run
/// # async fn run(client: informer_client::Client) -> informer_client::Result<()> {
/// use informer_runtime::GroupVersionResource;
/// use informer_runtime::dynamic::DynamicObject;
///
/// let resource = client.discover(&GroupVersionResource::new("example.com", "v1", "widgets")).await?;
/// let widgets = client.dynamic(&resource).namespace("apps");
/// let mut widget = DynamicObject::new("blue", &resource);
/// widget.data.insert("spec".into(), serde_json::json!({"size": 1}));
/// let created = widgets.create(&widget).await?;
/// widgets.delete("blue").await?;
/// # drop(created);
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
#[doc(alias = "ResourceInterface")]
pub struct DynamicApi {
    client: Client,
    target: Target,
    /// `None`: no namespace was named (cluster-wide, or an error for a namespaced resource).
    namespace: Option<String>,
}

impl DynamicApi {
    /// The same requests in `namespace` (kube-rs's `Api::namespaced_with`). Ignored for a
    /// cluster-scoped resource.
    #[must_use]
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }

    /// The resource these requests are about.
    #[must_use]
    pub fn resource(&self) -> &ApiResource {
        self.target.resource()
    }

    /// Reads the object `name`.
    ///
    /// # Errors
    ///
    /// [`ClientError::Api`] with the server's status (`404 NotFound`: see
    /// [`ClientError::is_not_found`]), [`ClientError::Request`] for transport and decode
    /// failures, [`ClientError::NamespaceRequired`] and [`ClientError::InvalidPathSegment`]
    /// before anything is sent.
    pub async fn get(&self, name: &str) -> Result<DynamicObject> {
        let url = self.object_url(name, None)?;
        self.request(Method::GET, url, None).await
    }

    /// Creates `object` (its `apiVersion` and `kind` should be the resource's: see
    /// [`DynamicObject::new`]); returns it as the server stored it.
    ///
    /// # Errors
    ///
    /// As [`get`](Self::get); `409 AlreadyExists` ([`ClientError::is_conflict`]) when it
    /// exists.
    pub async fn create(&self, object: &DynamicObject) -> Result<DynamicObject> {
        let namespace = self.request_namespace()?;
        let url = self.target.collection_url(self.client.base_url(), namespace)?;
        let body = encode(&url, object)?;
        self.request(Method::POST, url, Some((JSON, body))).await
    }

    /// Replaces the object `name` with `object` (an update); the object's
    /// `metadata.resourceVersion`, when set, makes it conditional.
    ///
    /// # Errors
    ///
    /// As [`get`](Self::get); `409 Conflict` when the resource version is stale.
    pub async fn replace(&self, name: &str, object: &DynamicObject) -> Result<DynamicObject> {
        let url = self.object_url(name, None)?;
        let body = encode(&url, object)?;
        self.request(Method::PUT, url, Some((JSON, body))).await
    }

    /// Replaces the `status` subresource of the object `name` (only its status changes); the
    /// object's `metadata.resourceVersion`, when set, makes it conditional.
    ///
    /// # Errors
    ///
    /// As [`replace`](Self::replace); `404` for a resource without a status subresource.
    pub async fn replace_status(
        &self,
        name: &str,
        object: &DynamicObject,
    ) -> Result<DynamicObject> {
        let url = self.object_url(name, Some("status"))?;
        let body = encode(&url, object)?;
        self.request(Method::PUT, url, Some((JSON, body))).await
    }

    /// Patches the object `name`, in any of the API server's [formats](Patch): a JSON merge
    /// patch, a JSON patch (`test` operations included), a strategic merge patch (built-in
    /// kinds only: `415` for a custom resource) or a server-side apply
    /// ([`PatchParams::apply`], with [`force`](PatchParams::force)); returns the result.
    ///
    /// # Errors
    ///
    /// As [`get`](Self::get); `409 Conflict` when a precondition of the patch
    /// (`metadata.resourceVersion`) fails or, for an apply without `force`, when another
    /// manager owns a field it sets; `422 Invalid` when a JSON patch's operation does not
    /// apply (a failed `test`).
    pub async fn patch<P: Serialize>(
        &self,
        name: &str,
        patch: &Patch<P>,
        params: &PatchParams,
    ) -> Result<DynamicObject> {
        let url = self.object_url(name, None)?;
        let (url, body) = patch_request(url, patch, params)?;
        self.request(Method::PATCH, url, Some(body)).await
    }

    /// Patches the `status` subresource of the object `name`: only its status changes.
    ///
    /// # Errors
    ///
    /// As [`patch`](Self::patch); `404` for a resource without a status subresource.
    pub async fn patch_status<P: Serialize>(
        &self,
        name: &str,
        patch: &Patch<P>,
        params: &PatchParams,
    ) -> Result<DynamicObject> {
        let url = self.object_url(name, Some("status"))?;
        let (url, body) = patch_request(url, patch, params)?;
        self.request(Method::PATCH, url, Some(body)).await
    }

    /// Deletes the object `name`. The server may keep it for a while (finalizers, graceful
    /// deletion).
    ///
    /// # Errors
    ///
    /// As [`get`](Self::get).
    pub async fn delete(&self, name: &str) -> Result<()> {
        let url = self.object_url(name, None)?;
        self.client.delete_at(url, None).await
    }

    /// Deletes the object `name` with `options`: preconditions (the UID or resource version it
    /// must still have), propagation to its dependents, grace period.
    ///
    /// # Errors
    ///
    /// As [`get`](Self::get); `409 Conflict` when a precondition fails.
    ///
    /// ```no_run
    /// # async fn run(widgets: informer_client::DynamicApi) -> informer_client::Result<()> {
    /// use k8s_openapi::apimachinery::pkg::apis::meta::v1::{DeleteOptions, Preconditions};
    /// let options = DeleteOptions {
    ///     // Only the object this program read, not one created since under the same name.
    ///     preconditions: Some(Preconditions { uid: Some("6f1c…".into()), ..Preconditions::default() }),
    ///     propagation_policy: Some("Background".into()),
    ///     ..DeleteOptions::default()
    /// };
    /// widgets.delete_with("blue", &options).await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn delete_with(&self, name: &str, options: &DeleteOptions) -> Result<()> {
        let url = self.object_url(name, None)?;
        let body = encode(&url, options)?;
        self.client.delete_at(url, Some((JSON, body))).await
    }

    /// The namespace of a request about one object (or a create): required for a namespaced
    /// resource, where `""` (every namespace) names none; `None` for a cluster-scoped one.
    fn request_namespace(&self) -> Result<Option<&str>> {
        let resource = self.target.resource();
        if !resource.namespaced {
            return Ok(None);
        }
        match self.namespace.as_deref() {
            Some(namespace) => {
                check_segment("namespace", namespace)?;
                Ok(Some(namespace))
            }
            None => Err(ClientError::NamespaceRequired { resource: resource.to_string() }),
        }
    }

    fn object_url(&self, name: &str, subresource: Option<&str>) -> Result<Url> {
        let namespace = self.request_namespace()?;
        Ok(self.target.object_url(self.client.base_url(), namespace, name, subresource)?)
    }

    async fn request(&self, method: Method, url: Url, body: Option<Body>) -> Result<DynamicObject> {
        let resource = self.target.resource();
        let resource_name = || self.target.name().to_string();
        let mut object: DynamicObject = self
            .client
            .request_decoded(method, url, body, JSON, resource_name, &resource.kind)
            .await?;
        // kube-apiserver always writes both for one object; a server that leaves them out
        // still gives a `DynamicObject` that says what it is, as informers' objects do.
        object.fill_type(&resource.api_version(), &resource.kind);
        Ok(object)
    }
}

// The client under test is this crate's own (`Client::new`), which the `http` feature builds.
#[cfg(all(test, feature = "http"))]
mod tests {
    use super::*;
    use crate::Config;

    fn widgets() -> ApiResource {
        ApiResource {
            group: "example.com".into(),
            version: "v1".into(),
            kind: "Widget".into(),
            plural: "widgets".into(),
            namespaced: true,
        }
    }

    #[test]
    fn object_urls_follow_the_resource() {
        let client =
            Client::new(Config::new("https://10.0.0.1:6443/prefix/".parse().unwrap())).unwrap();
        let api = client.dynamic(&widgets()).namespace("apps");
        assert_eq!(
            api.object_url("blue", Some("status")).unwrap().path(),
            "/prefix/apis/example.com/v1/namespaces/apps/widgets/blue/status"
        );
        let namespaces = ApiResource::of::<k8s_openapi::api::core::v1::Namespace>();
        let api = client.dynamic(&namespaces).namespace("ignored");
        assert_eq!(
            api.object_url("kube-system", None).unwrap().path(),
            "/prefix/api/v1/namespaces/kube-system"
        );
    }

    #[test]
    fn a_namespaced_resource_needs_a_namespace_and_a_valid_one() {
        let client = Client::new(Config::new("https://10.0.0.1:6443".parse().unwrap())).unwrap();
        let api = client.dynamic(&widgets());
        let error = api.object_url("blue", None).unwrap_err();
        assert!(
            matches!(&error, ClientError::NamespaceRequired { resource } if resource == "widgets.example.com"),
            "{error}"
        );
        // `""` is every namespace for a collection, never the namespace of one object.
        let error = api.clone().namespace("").object_url("blue", None).unwrap_err();
        assert!(matches!(error, ClientError::InvalidPathSegment(_)), "{error}");
        let error = api.namespace("apps").object_url("..", None).unwrap_err();
        assert!(matches!(error, ClientError::InvalidPathSegment(_)), "{error}");
    }
}
