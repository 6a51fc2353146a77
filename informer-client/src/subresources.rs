//! The subresources controllers act through besides `status`: a workload's `scale` (client-go's
//! `GetScale`/`UpdateScale`, kube-rs's `Api::get_scale`) and a pod's `eviction` (client-go's
//! `EvictV1`, kube-rs's `Api::evict`). Pod logs are in `pod_logs`.
//!
//! Where it sits: beside the typed requests of `api_client`, through the same transport,
//! bounds and errors; a failure the server answered keeps its `Status`.

use http::Method;
use k8s_openapi::api::autoscaling::v1::Scale;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::Eviction;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{DeleteOptions, ObjectMeta};
use url::Url;

use super::api_client::{Client, encode};
use super::body::BodyReader;
use super::error::{ClientError, Result};
use super::request::JSON;
use informer_runtime::resource::{Resource, resource_name};

impl Client {
    /// Reads the `scale` subresource of an object: the replicas it asks for
    /// (`spec.replicas`), those it has (`status.replicas`) and the selector of its pods
    /// (`status.selector`), as an `autoscaling/v1` [`Scale`].
    ///
    /// For `Deployment`s, `ReplicaSet`s and `StatefulSet`s, and for custom resources whose CRD
    /// version declares `subresources.scale` (the paths it names are read).
    ///
    /// # Errors
    ///
    /// [`ClientError::Api`] with the server's status: `404` when the object does not exist or
    /// its kind has no scale subresource; the errors of [`Client::get`].
    ///
    /// ```no_run
    /// # async fn run(client: informer_client::Client) -> informer_client::Result<()> {
    /// use k8s_openapi::api::apps::v1::Deployment;
    /// let scale = client.get_scale::<Deployment>(Some("apps"), "web").await?;
    /// let wanted = scale.spec.and_then(|s| s.replicas).unwrap_or_default();
    /// println!("{wanted} wanted, {} running", scale.status.map_or(0, |s| s.replicas));
    /// # Ok(())
    /// # }
    /// ```
    #[doc(alias = "GetScale")]
    pub async fn get_scale<K: Resource>(
        &self,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Scale> {
        let url = self.subresource_url::<K>(namespace, name, "scale")?;
        self.scale_request::<K>(Method::GET, url, None).await
    }

    /// Replaces the `scale` subresource of an object: sets its `spec.replicas` to `scale`'s.
    /// The scale's `metadata.resourceVersion`, when set, makes it conditional (the object's
    /// version: a scale read by [`get_scale`](Self::get_scale) carries it); its name must be
    /// `name`.
    ///
    /// # Errors
    ///
    /// As [`Client::get_scale`]; `409 Conflict` ([`ClientError::is_conflict`]) when the
    /// resource version is stale, `422` for negative replicas, `400` for another name.
    ///
    /// ```no_run
    /// # async fn run(client: informer_client::Client) -> informer_client::Result<()> {
    /// use k8s_openapi::api::apps::v1::StatefulSet;
    /// let mut scale = client.get_scale::<StatefulSet>(Some("db"), "postgres").await?;
    /// scale.spec.get_or_insert_default().replicas = Some(3);
    /// let scale = client.replace_scale::<StatefulSet>(Some("db"), "postgres", &scale).await?;
    /// # drop(scale);
    /// # Ok(())
    /// # }
    /// ```
    #[doc(alias = "UpdateScale")]
    pub async fn replace_scale<K: Resource>(
        &self,
        namespace: Option<&str>,
        name: &str,
        scale: &Scale,
    ) -> Result<Scale> {
        let url = self.subresource_url::<K>(namespace, name, "scale")?;
        let body = encode(&url, scale)?;
        self.scale_request::<K>(Method::PUT, url, Some(("application/json", body))).await
    }

    /// Applies a JSON merge patch to the `scale` subresource of an object (typically
    /// `{"spec": {"replicas": 3}}`); returns the new scale. Unconditional unless the patch sets
    /// `metadata.resourceVersion`.
    ///
    /// # Errors
    ///
    /// As [`Client::replace_scale`].
    ///
    /// ```no_run
    /// # async fn run(client: informer_client::Client) -> informer_client::Result<()> {
    /// use k8s_openapi::api::apps::v1::Deployment;
    /// let patch = serde_json::json!({"spec": {"replicas": 5}});
    /// let scale = client.patch_scale::<Deployment>(Some("apps"), "web", &patch).await?;
    /// # drop(scale);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn patch_scale<K: Resource>(
        &self,
        namespace: Option<&str>,
        name: &str,
        patch: &serde_json::Value,
    ) -> Result<Scale> {
        let url = self.subresource_url::<K>(namespace, name, "scale")?;
        let body = encode(&url, patch)?;
        self.scale_request::<K>(Method::PATCH, url, Some(("application/merge-patch+json", body)))
            .await
    }

    async fn scale_request<K: Resource>(
        &self,
        method: Method,
        url: Url,
        body: Option<crate::transport::Body>,
    ) -> Result<Scale> {
        let resource = || format!("{}/scale", resource_name::<K>());
        self.request_decoded(method, url, body, JSON, resource, "Scale").await
    }

    /// Evicts a pod: asks the API server to delete it unless a `PodDisruptionBudget` that
    /// selects it allows no disruption now (a `policy/v1` `Eviction` posted to
    /// `pods/{pod}/eviction`). `options` are the delete's: preconditions, grace period, dry run.
    ///
    /// A pod that is not running yet or any more (`Pending`, `Succeeded`, `Failed`) is deleted
    /// whatever its budgets say.
    ///
    /// # Errors
    ///
    /// `429 TooManyRequests` ([`ClientError::is_too_many_requests`]) when a budget forbids
    /// the eviction now (message `Cannot evict pod as it would violate the pod's disruption
    /// budget.`): try again later, after [`ClientError::retry_after`] when set, as
    /// `kubectl drain` does. `404` for a missing pod, `409` for a failed precondition, `500`
    /// when more than one budget selects the pod (the server cannot tell which to honour).
    ///
    /// ```no_run
    /// # async fn run(client: informer_client::Client) -> informer_client::Result<()> {
    /// use k8s_openapi::apimachinery::pkg::apis::meta::v1::DeleteOptions;
    /// match client.evict("apps", "web-0", &DeleteOptions::default()).await {
    ///     Ok(()) => println!("evicted"),
    ///     Err(e) if e.is_too_many_requests() => println!("blocked by a disruption budget; later"),
    ///     Err(e) => return Err(e),
    /// }
    /// # Ok(())
    /// # }
    /// ```
    #[doc(alias = "EvictV1")]
    pub async fn evict(&self, namespace: &str, pod: &str, options: &DeleteOptions) -> Result<()> {
        let url = self.subresource_url::<Pod>(Some(namespace), pod, "eviction")?;
        let eviction = Eviction {
            metadata: ObjectMeta {
                name: Some(pod.to_owned()),
                namespace: Some(namespace.to_owned()),
                ..ObjectMeta::default()
            },
            delete_options: Some(options.clone()),
        };
        let body = encode(&url, &eviction)?;
        let path = url.path().to_owned();
        match self.send(Method::POST, url, Some(("application/json", body))).await {
            Ok(response) => {
                // The answer is a `Status` of success: read (bounded) so the connection is
                // reused.
                let limits = self.limits();
                let mut body = BodyReader::new(response, limits.read_idle_timeout);
                let _ = body.read_prefix(limits.max_object_size).await;
                Ok(())
            }
            Err(e) => Err(ClientError::request("POST", path, e)),
        }
    }
}
