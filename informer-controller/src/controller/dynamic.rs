//! Controllers of resources known only at run time: a [`Controller`] of [`DynamicObject`]s
//! ([`for_resource`](Controller::for_resource)), and children and watched resources known at
//! run time of any controller ([`owns_dynamic`](Controller::owns_dynamic),
//! [`watches_dynamic`](Controller::watches_dynamic)). Each resolves the factory's dynamic
//! informer and hands it to the one code path typed controllers take.

use informer_runtime::SharedInformerFactory;
use informer_runtime::dynamic::DynamicObject;
use informer_runtime::listwatch::ListWatchSource;
use informer_runtime::resource::{ApiResource, Object};
use informer_runtime::store::ObjectKey;

use super::Controller;
use crate::filter::Filter;

impl<S: ListWatchSource> Controller<DynamicObject, S> {
    /// A controller of `resource`, a resource known only at run time, over `factory`'s
    /// [dynamic informer](SharedInformerFactory::dynamic_informer) of it (kube-rs's
    /// `Controller::new_with(api, config, ApiResource)` for `DynamicObject`,
    /// controller-runtime's `For` with an `unstructured.Unstructured`), named after the
    /// resource (`widgets.example.com`), with one worker.
    ///
    /// Everything else is as for a typed controller: reconciles get
    /// [`Request<DynamicObject>`](super::Request), filters read its metadata, and it
    /// [owns](Self::owns) or [watches](Self::watches) typed resources and
    /// [dynamic](Self::owns_dynamic) ones alike. Owner references are matched by `resource`'s
    /// group and kind, and `resource.namespaced` says where its objects are: take it from
    /// discovery (`informer_client::Client::resolve` or `discover`), or write it out, as for a
    /// CRD the controller installs itself (its informer lists once the CRD is served,
    /// retrying until then). Writes go through `informer_client::Client::dynamic(&resource)`
    /// or [`ApiWriter::json_patch`](crate::ApiWriter::json_patch).
    ///
    /// A factory whose source lists only Rust types makes [`run`](Self::run) fail with
    /// [`ControllerError::Informer`](super::ControllerError::Informer). For a resource the
    /// program has a Rust type for, prefer [`new`](Controller::new) and [`owns`](Self::owns):
    /// a dynamic informer of it is a second watch and cache beside the typed one other
    /// controllers share.
    ///
    /// ```no_run
    /// use informer_client::{Client, ClientError, Patch, PatchParams};
    /// use informer_controller::controller::{Action, Controller, stop_on_signal};
    /// use informer_controller::filter::GenerationChanged;
    /// use informer_runtime::{ApiResource, SharedInformerFactory};
    /// use serde_json::json;
    ///
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let client = Client::try_default()?;
    /// // From the command line, say: `widgets.example.com`.
    /// let widgets: ApiResource = client.resolve("widgets.example.com").await?;
    /// let config_maps: ApiResource = client.resolve("configmaps").await?;
    /// let factory = SharedInformerFactory::new(client.clone());
    /// Controller::for_resource(&factory, &widgets)
    ///     .filter(GenerationChanged)
    ///     .owns_dynamic(&config_maps)
    ///     .run(
    ///         move |request| {
    ///             let (client, widgets) = (client.clone(), widgets.clone());
    ///             async move {
    ///                 let Some(widget) = request.object else { return Ok(Action::Done) };
    ///                 let size = widget.data["spec"]["size"].as_i64().unwrap_or(1);
    ///                 let written = widget.data.get("status").and_then(|s| s.get("size"));
    ///                 if written == Some(&json!(size)) {
    ///                     return Ok(Action::Done);
    ///                 }
    ///                 // ... make the world match the spec, then say so in the status ...
    ///                 let namespace = widget.metadata.namespace.as_deref().unwrap_or("default");
    ///                 let name = widget.metadata.name.as_deref().unwrap_or_default();
    ///                 let status = json!({"status": {"size": size}});
    ///                 client
    ///                     .dynamic(&widgets)
    ///                     .namespace(namespace)
    ///                     .patch_status(name, &Patch::Merge(&status), &PatchParams::default())
    ///                     .await?;
    ///                 Ok::<_, ClientError>(Action::Done)
    ///             }
    ///         },
    ///         stop_on_signal(),
    ///     )
    ///     .await?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// Through [`ApiWriter`](crate::ApiWriter) instead (this project's `Client` or a
    /// `kube::Client`), a JSON patch that applies only to the version it was computed from:
    ///
    /// ```no_run
    /// # use std::sync::Arc;
    /// # use informer_controller::controller::{Action, Request};
    /// use informer_controller::{ApiWriter, WriteError};
    /// use informer_runtime::ApiResource;
    /// use informer_runtime::dynamic::DynamicObject;
    /// use serde_json::json;
    ///
    /// async fn reconcile(
    ///     writer: Arc<dyn ApiWriter>,
    ///     widgets: &ApiResource,
    ///     request: Request<DynamicObject>,
    /// ) -> Result<Action, WriteError> {
    ///     let Some(widget) = request.object else { return Ok(Action::Done) };
    ///     let name = widget.metadata.name.as_deref().unwrap_or_default();
    ///     let version = widget.metadata.resource_version.clone().unwrap_or_default();
    ///     let patch = json!([
    ///         // A 422 (retried after backoff) if the widget changed since the cache read it.
    ///         {"op": "test", "path": "/metadata/resourceVersion", "value": version},
    ///         {"op": "add", "path": "/metadata/labels", "value": {"example.com/seen": "yes"}},
    ///     ]);
    ///     let namespace = widget.metadata.namespace.as_deref();
    ///     writer.json_patch(widgets, namespace, name, &patch).await?;
    ///     Ok(Action::Done)
    /// }
    /// # let _ = reconcile;
    /// ```
    #[doc(alias = "new_with")]
    #[doc(alias = "For")]
    pub fn for_resource(factory: &SharedInformerFactory<S>, resource: &ApiResource) -> Self {
        let primary = factory.dynamic_informer(&resource.gvr());
        Self::with_primary(factory, resource.clone(), primary)
    }
}

impl<K: Object, S: ListWatchSource> Controller<K, S> {
    /// [`owns`](Self::owns), for children of `resource`, a resource known only at run time,
    /// through the factory's [dynamic informer](SharedInformerFactory::dynamic_informer) of it
    /// (controller-runtime's `Owns` with an `unstructured.Unstructured`). A reference names
    /// the owner by the primary resource's group and kind, typed or
    /// [dynamic](Controller::for_resource); a child is a `DynamicObject` of `resource`.
    ///
    /// ```no_run
    /// # use informer_controller::controller::Controller;
    /// # use informer_runtime::{SharedInformerFactory, ListWatchSource};
    /// use informer_runtime::ApiResource;
    /// use k8s_openapi::api::apps::v1::Deployment;
    ///
    /// # fn build<S: ListWatchSource>(factory: &SharedInformerFactory<S>) {
    /// // Widgets the Deployments' reconcile creates, from a CRD the program does not compile in.
    /// let widgets = ApiResource {
    ///     group: "example.com".into(),
    ///     version: "v1".into(),
    ///     kind: "Widget".into(),
    ///     plural: "widgets".into(),
    ///     namespaced: true,
    /// };
    /// let controller = Controller::<Deployment, _>::new(factory).owns_dynamic(&widgets);
    /// # let _ = controller;
    /// # }
    /// ```
    pub fn owns_dynamic(self, resource: &ApiResource) -> Self {
        let informer = self.factory.dynamic_informer(&resource.gvr());
        self.owns_from(informer, None::<Box<dyn Filter<DynamicObject>>>)
    }

    /// [`watches`](Self::watches), for `resource`, a resource known only at run time, through
    /// the factory's [dynamic informer](SharedInformerFactory::dynamic_informer) of it: `map`
    /// gives the keys of the primary objects each changed `DynamicObject` concerns.
    ///
    /// ```no_run
    /// # use informer_controller::controller::Controller;
    /// # use informer_runtime::{SharedInformerFactory, ListWatchSource};
    /// use informer_runtime::{ApiResource, ObjectKey};
    /// use informer_runtime::dynamic::DynamicObject;
    /// use k8s_openapi::api::apps::v1::Deployment;
    ///
    /// # fn build<S: ListWatchSource>(factory: &SharedInformerFactory<S>) {
    /// // A Widget names the Deployment of its namespace it configures in `spec.deployment`.
    /// let widgets = ApiResource {
    ///     group: "example.com".into(),
    ///     version: "v1".into(),
    ///     kind: "Widget".into(),
    ///     plural: "widgets".into(),
    ///     namespaced: true,
    /// };
    /// let controller = Controller::<Deployment, _>::new(factory).watches_dynamic(
    ///     &widgets,
    ///     |widget: &DynamicObject| {
    ///         let deployment = widget.data.get("spec")?.get("deployment")?.as_str()?;
    ///         Some(ObjectKey::new(widget.metadata.namespace.as_deref(), deployment))
    ///     },
    /// );
    /// # let _ = controller;
    /// # }
    /// ```
    pub fn watches_dynamic<I>(
        self,
        resource: &ApiResource,
        map: impl Fn(&DynamicObject) -> I + Send + Sync + 'static,
    ) -> Self
    where
        I: IntoIterator<Item = ObjectKey> + 'static,
    {
        let informer = self.factory.dynamic_informer(&resource.gvr());
        self.watches_from(informer, map)
    }
}
