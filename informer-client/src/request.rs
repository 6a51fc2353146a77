//! Request URLs: the path of a resource type or object, and the query of a list or watch.
//!
//! Where requests start in the data flow: the [lister-watcher](super::Client::lister_watcher)
//! and the typed requests of [`Client`](super::Client) build their URLs here, so path layout
//! and query encoding are tested without a server.
//!
//! Paths follow the API server's layout:
//!
//! | resource | path |
//! |---|---|
//! | core group | `/api/v1/...` |
//! | named group | `/apis/{group}/{version}/...` |
//! | namespaced, in one namespace | `.../namespaces/{namespace}/{plural}[/{name}]` |
//! | namespaced, all namespaces; cluster-scoped | `.../{plural}[/{name}]` |
//!
//! Path segments and query values are percent-encoded (a label selector such as
//! `tier in (a,b)` travels as `tier+in+%28a%2Cb%29`). A name, namespace or subresource that
//! could not be one segment ([`PathSegmentError`]: empty, `.`, `..`, or holding `/` or `%`, as
//! client-go's `IsValidPathSegmentName` refuses) makes no URL at all: a URL library resolves
//! `..`, so `delete(ns, "..")` would otherwise delete the collection, and names can come
//! from users' data.
//!
//! The `Accept` header says which representation to send: the objects themselves
//! (`application/json`), or, for [`PartialObjectMetadata<K>`](informer_runtime::metadata::PartialObjectMetadata),
//! only their metadata. The API server transforms lists and single objects under different
//! names (`as=PartialObjectMetadataList` for a list, `as=PartialObjectMetadata` for an object
//! and for each object of a watch) and answers `406 Not Acceptable` to the wrong one.

use std::sync::Arc;
use std::time::Duration;

use url::Url;

use informer_runtime::listwatch::{ListOptions, WatchOptions};
use informer_runtime::resource::{ApiResource, Resource};

/// What a lister-watcher or a request asks the server for: a resource, and whether whole
/// objects or their metadata alone. Typed requests make it from `K`'s constants
/// ([`Target::of`]); a dynamic informer from discovery.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Target {
    resource: ApiResource,
    metadata_only: bool,
    /// `plural[.group]`, for messages and logs.
    name: Arc<str>,
    /// The `apiVersion` the objects served carry.
    api_version: String,
    /// Whether the list's kind is known to be `{Kind}List`; see [`Target::discovered`].
    exact_list_kind: bool,
}

impl Target {
    /// The target of the Rust type `K`.
    pub(crate) fn of<K: Resource>() -> Self {
        Self::new(ApiResource::of::<K>(), K::METADATA_ONLY)
    }

    /// `resource`'s whole objects, or their metadata only.
    pub(crate) fn new(resource: ApiResource, metadata_only: bool) -> Self {
        let name = resource.to_string().into();
        let api_version = if metadata_only {
            informer_runtime::metadata::API_VERSION.to_owned()
        } else {
            resource.api_version()
        };
        Self { resource, metadata_only, name, api_version, exact_list_kind: true }
    }

    /// A target found by discovery: its lists may have any kind but `Status`, since a CRD's
    /// `spec.names.listKind` may be any name (`WidgetCollection`) and discovery does not say it
    /// (metadata-only lists are always `PartialObjectMetadataList`). A list must still have
    /// `items` and a resource version.
    pub(crate) fn discovered(resource: ApiResource, metadata_only: bool) -> Self {
        Self { exact_list_kind: metadata_only, ..Self::new(resource, metadata_only) }
    }

    /// Whether `kind` is the kind of a list of this target.
    pub(crate) fn is_list_kind(&self, kind: &str) -> bool {
        let item_kind = self.served_type().1;
        let exact = kind.strip_suffix("List").is_some_and(|k| k == item_kind);
        exact || (!self.exact_list_kind && kind != "Status")
    }

    /// The resource.
    pub(crate) fn resource(&self) -> &ApiResource {
        &self.resource
    }

    /// `plural[.group]`.
    pub(crate) fn name(&self) -> &Arc<str> {
        &self.name
    }

    /// What lists accept.
    pub(crate) fn list_accept(&self) -> &'static str {
        list_accept_for(self.metadata_only)
    }

    /// What watches and single-object requests accept.
    pub(crate) fn object_accept(&self) -> &'static str {
        object_accept_for(self.metadata_only)
    }

    /// The `apiVersion` and `kind` of the objects the server sends: a metadata-only request gets
    /// `meta.k8s.io/v1` `PartialObjectMetadata` objects (in a `PartialObjectMetadataList`).
    pub(crate) fn served_type(&self) -> (&str, &str) {
        let kind =
            if self.metadata_only { informer_runtime::metadata::KIND } else { &self.resource.kind };
        (&self.api_version, kind)
    }

    /// The URL of the collection under `base` (which may carry a path prefix), in `namespace`
    /// when the resource is namespaced and one is given (`""`: every namespace); a namespace is
    /// ignored for cluster-scoped resources.
    ///
    /// # Errors
    ///
    /// A namespace that cannot be a path segment.
    pub(crate) fn collection_url(
        &self,
        base: &Url,
        namespace: Option<&str>,
    ) -> Result<Url, PathSegmentError> {
        let resource = &self.resource;
        if let Some(ns) = namespace.filter(|ns| resource.namespaced && !ns.is_empty()) {
            check_segment("namespace", ns)?;
        }
        let mut url = base.clone();
        url.set_query(None);
        url.set_fragment(None);
        if let Ok(mut segments) = url.path_segments_mut() {
            segments.pop_if_empty();
            if resource.group.is_empty() {
                segments.push("api");
            } else {
                segments.extend(["apis", &resource.group]);
            }
            segments.push(&resource.version);
            // `""` is every namespace, as everywhere in Kubernetes.
            if let Some(ns) = namespace.filter(|ns| resource.namespaced && !ns.is_empty()) {
                segments.extend(["namespaces", ns]);
            }
            segments.push(&resource.plural);
        }
        Ok(url)
    }

    /// The URL of one object `name` under `base`, and of one of its `subresource`s (`status`,
    /// `scale`): the [collection](Self::collection_url) in `namespace`, then the name.
    ///
    /// # Errors
    ///
    /// A namespace, name or subresource that cannot be a path segment.
    pub(crate) fn object_url(
        &self,
        base: &Url,
        namespace: Option<&str>,
        name: &str,
        subresource: Option<&str>,
    ) -> Result<Url, PathSegmentError> {
        check_segment("name", name)?;
        if let Some(subresource) = subresource {
            check_segment("subresource", subresource)?;
        }
        let mut url = self.collection_url(base, namespace)?;
        if let Ok(mut segments) = url.path_segments_mut() {
            segments.push(name);
            segments.extend(subresource);
        }
        Ok(url)
    }
}

/// A name, namespace or subresource that cannot be one segment of a request's path (empty,
/// `.`, `..`, or holding `/` or `%`, as client-go refuses): such a value would make a request
/// about another object, or the whole collection, so none is sent.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "{what} {value:?} cannot name an object in a request path: {reason}; Kubernetes names are \
     never that, so check where the value came from"
)]
pub struct PathSegmentError {
    what: &'static str,
    value: String,
    reason: &'static str,
}

impl PathSegmentError {
    /// What the value was meant to be: `name`, `namespace` or `subresource`.
    #[must_use]
    pub fn what(&self) -> &'static str {
        self.what
    }

    /// The value refused, as given.
    #[must_use]
    pub fn value(&self) -> &str {
        &self.value
    }

    /// Why it was refused, for example "it contains `/`".
    #[must_use]
    pub fn reason(&self) -> &'static str {
        self.reason
    }
}

/// Refuses what client-go refuses in a path segment (`IsValidPathSegmentName`, and the
/// request builder's empty name): `""`, `.` and `..` (path navigation, which URL libraries
/// resolve) and values holding `/` (another segment) or `%` (an escape a proxy may decode).
pub(crate) fn check_segment(what: &'static str, value: &str) -> Result<(), PathSegmentError> {
    let reason = match value {
        "" => "it is empty",
        "." | ".." => "`.` and `..` are path navigation",
        _ if value.contains('/') => "it contains `/`",
        _ if value.contains('%') => "it contains `%`",
        _ => return Ok(()),
    };
    Err(PathSegmentError { what, value: value.to_owned(), reason })
}

fn list_accept_for(metadata_only: bool) -> &'static str {
    if metadata_only { METADATA_LIST } else { JSON }
}

fn object_accept_for(metadata_only: bool) -> &'static str {
    if metadata_only { METADATA_OBJECT } else { JSON }
}

/// What lists of `K` accept.
#[cfg(test)]
pub(crate) fn list_accept<K: Resource>() -> &'static str {
    list_accept_for(K::METADATA_ONLY)
}

/// What watches and single-object requests of `K` accept (no [`Target`] made for a typed
/// request's header).
pub(crate) fn object_accept<K: Resource>() -> &'static str {
    object_accept_for(K::METADATA_ONLY)
}

pub(crate) const JSON: &str = "application/json";
// No fallback to plain JSON: a server that cannot send metadata alone answers 406, which says
// so, instead of whole objects that would defeat the point (kube-rs sends the same).
const METADATA_LIST: &str = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
const METADATA_OBJECT: &str = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";

/// The URL of `K`'s collection: see [`Target::collection_url`].
pub(crate) fn collection_url<K: Resource>(
    base: &Url,
    namespace: Option<&str>,
) -> Result<Url, PathSegmentError> {
    Target::of::<K>().collection_url(base, namespace)
}

/// The URL of one object of `K`, and of one of its `subresources`: see [`Target::object_url`].
pub(crate) fn object_url<K: Resource>(
    base: &Url,
    namespace: Option<&str>,
    name: &str,
    subresource: Option<&str>,
) -> Result<Url, PathSegmentError> {
    Target::of::<K>().object_url(base, namespace, name, subresource)
}

/// Adds the query of one list request (one page).
pub(crate) fn set_list_query(url: &mut Url, options: &ListOptions) {
    let mut query = url.query_pairs_mut();
    query.clear();
    if let Some(limit) = options.limit {
        query.append_pair("limit", &limit.to_string());
    }
    if let Some(token) = options.continue_token.as_deref().filter(|t| !t.is_empty()) {
        query.append_pair("continue", token);
    }
    if !options.resource_version.is_empty() {
        query.append_pair("resourceVersion", &options.resource_version);
    }
    if let Some(rv_match) = options.resource_version_match {
        query.append_pair("resourceVersionMatch", rv_match.as_str());
    }
    append_selectors(
        &mut query,
        options.label_selector.as_deref(),
        options.field_selector.as_deref(),
    );
    drop(query);
    clear_empty_query(url);
}

/// Adds the query of one watch request.
pub(crate) fn set_watch_query(url: &mut Url, options: &WatchOptions) {
    let mut query = url.query_pairs_mut();
    query.clear();
    query.append_pair("watch", "true");
    if !options.resource_version.is_empty() {
        query.append_pair("resourceVersion", &options.resource_version);
    }
    if let Some(rv_match) = options.resource_version_match {
        query.append_pair("resourceVersionMatch", rv_match.as_str());
    }
    append_selectors(
        &mut query,
        options.label_selector.as_deref(),
        options.field_selector.as_deref(),
    );
    if options.allow_watch_bookmarks {
        query.append_pair("allowWatchBookmarks", "true");
    }
    if let Some(timeout) = options.timeout {
        query.append_pair("timeoutSeconds", &timeout_seconds(timeout).to_string());
    }
    if options.send_initial_events {
        query.append_pair("sendInitialEvents", "true");
    }
}

/// The largest `timeoutSeconds` kube-apiserver takes as it is: it multiplies the value into a
/// Go `time.Duration` (nanoseconds in an `int64`), which overflows past this many seconds
/// (about 292 years), and it refuses a value past `int64` outright.
const MAX_TIMEOUT_SECONDS: u64 = i64::MAX as u64 / 1_000_000_000;

/// A watch's `timeoutSeconds`: whole seconds, as client-go's reflector truncates them, but at
/// least 1 (`0` asks for the server's default, 30 to 60 minutes, instead of a short watch)
/// and at most [`MAX_TIMEOUT_SECONDS`] (a saturated setting, `Duration::MAX`, would otherwise
/// be a value the server refuses).
fn timeout_seconds(timeout: Duration) -> u64 {
    timeout.as_secs().clamp(1, MAX_TIMEOUT_SECONDS)
}

fn append_selectors(
    query: &mut url::form_urlencoded::Serializer<'_, url::UrlQuery<'_>>,
    labels: Option<&str>,
    fields: Option<&str>,
) {
    if let Some(labels) = labels.filter(|s| !s.is_empty()) {
        query.append_pair("labelSelector", labels);
    }
    if let Some(fields) = fields.filter(|s| !s.is_empty()) {
        query.append_pair("fieldSelector", fields);
    }
}

/// `query_pairs_mut` leaves `?` behind when nothing was added.
fn clear_empty_query(url: &mut Url) {
    if url.query() == Some("") {
        url.set_query(None);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::{Namespace, Pod};
    use k8s_openapi::api::rbac::v1::ClusterRole;

    use super::*;
    use informer_runtime::listwatch::ResourceVersionMatch;
    use informer_runtime::resource::resource_name;

    fn base() -> Url {
        Url::parse("https://10.0.0.1:6443").unwrap()
    }

    #[test]
    fn core_namespaced_paths() {
        assert_eq!(
            collection_url::<Pod>(&base(), Some("kube-system")).unwrap().path(),
            "/api/v1/namespaces/kube-system/pods"
        );
        assert_eq!(collection_url::<Pod>(&base(), None).unwrap().path(), "/api/v1/pods");
        assert_eq!(
            object_url::<Pod>(&base(), Some("default"), "web-0", None).unwrap().path(),
            "/api/v1/namespaces/default/pods/web-0"
        );
    }

    #[test]
    fn grouped_paths() {
        assert_eq!(
            collection_url::<Deployment>(&base(), Some("default")).unwrap().as_str(),
            "https://10.0.0.1:6443/apis/apps/v1/namespaces/default/deployments"
        );
        assert_eq!(
            collection_url::<Deployment>(&base(), None).unwrap().path(),
            "/apis/apps/v1/deployments"
        );
    }

    #[test]
    fn cluster_scoped_paths_ignore_the_namespace() {
        assert_eq!(
            collection_url::<Namespace>(&base(), Some("default")).unwrap().path(),
            "/api/v1/namespaces"
        );
        assert_eq!(
            object_url::<Namespace>(&base(), None, "kube-system", None).unwrap().path(),
            "/api/v1/namespaces/kube-system"
        );
        assert_eq!(
            object_url::<ClusterRole>(&base(), None, "system:controller:job-controller", None)
                .unwrap()
                .path(),
            "/apis/rbac.authorization.k8s.io/v1/clusterroles/system:controller:job-controller"
        );
    }

    #[test]
    fn base_path_prefix_is_kept() {
        let base = Url::parse("https://rancher.example/k8s/clusters/c-1/?x=1").unwrap();
        assert_eq!(
            collection_url::<Pod>(&base, Some("a")).unwrap().as_str(),
            "https://rancher.example/k8s/clusters/c-1/api/v1/namespaces/a/pods"
        );
    }

    #[test]
    fn segments_are_percent_encoded() {
        assert_eq!(
            object_url::<Pod>(&base(), Some("a b"), "c d?", Some("status")).unwrap().path(),
            "/api/v1/namespaces/a%20b/pods/c%20d%3F/status"
        );
    }

    /// client-go's `IsValidPathSegmentName`: a name, namespace or subresource that would be
    /// path navigation or more than one segment makes no URL (the URL library would resolve
    /// `..`: a delete of `(ns, "..")` became a delete of the collection).
    #[test]
    fn segments_that_would_retarget_the_request_are_refused() {
        for bad in ["", ".", "..", "a/b", "../x", "%2e%2e", "a%2Fb"] {
            let error = object_url::<Pod>(&base(), Some("ns"), bad, None).unwrap_err();
            assert_eq!((error.what, error.value.as_str()), ("name", bad));
            assert!(error.to_string().contains(&format!("{bad:?}")), "{error}");
            let error = object_url::<Pod>(&base(), Some("ns"), "web", Some(bad)).unwrap_err();
            assert_eq!(error.what, "subresource");
        }
        for bad in [".", "..", "a/b", "%2e"] {
            let error = collection_url::<Pod>(&base(), Some(bad)).unwrap_err();
            assert_eq!((error.what, error.value.as_str()), ("namespace", bad));
        }
        // `""` is every namespace for a collection; a cluster-scoped kind has no namespace to
        // check; `.` inside a name is a DNS subdomain's, not navigation.
        assert!(collection_url::<Pod>(&base(), Some("")).is_ok());
        assert!(collection_url::<Namespace>(&base(), Some("..")).is_ok());
        assert!(object_url::<Pod>(&base(), Some("ns"), "web.v1..x", None).is_ok());
    }

    #[test]
    fn list_query_has_every_option_encoded() {
        let mut url = collection_url::<Pod>(&base(), None).unwrap();
        set_list_query(
            &mut url,
            &ListOptions {
                label_selector: Some("app=web,tier in (a,b)".to_owned()),
                field_selector: Some("metadata.name=x".to_owned()),
                resource_version: "12".to_owned(),
                resource_version_match: Some(ResourceVersionMatch::NotOlderThan),
                limit: Some(500),
                continue_token: Some("eyJ2Ijo+/=".to_owned()),
                // Not a query parameter: what the client decodes.
                keep_managed_fields: true,
            },
        );
        assert_eq!(
            url.query(),
            Some(
                "limit=500&continue=eyJ2Ijo%2B%2F%3D&resourceVersion=12&resourceVersionMatch=NotOlderThan\
                 &labelSelector=app%3Dweb%2Ctier+in+%28a%2Cb%29&fieldSelector=metadata.name%3Dx"
            )
        );
        let pairs: Vec<(String, String)> = url.query_pairs().into_owned().collect();
        assert!(pairs.contains(&("labelSelector".to_owned(), "app=web,tier in (a,b)".to_owned())));
        assert!(pairs.contains(&("continue".to_owned(), "eyJ2Ijo+/=".to_owned())));
    }

    #[test]
    fn empty_list_options_give_no_query() {
        let mut url = collection_url::<Pod>(&base(), None).unwrap();
        set_list_query(
            &mut url,
            &ListOptions { continue_token: Some(String::new()), ..ListOptions::default() },
        );
        assert_eq!(url.as_str(), "https://10.0.0.1:6443/api/v1/pods");
    }

    /// A saturated watch timeout (a setting made of `Duration::MAX`, or added to until it
    /// saturated) is sent as a value kube-apiserver takes, and a sub-second one is not `0`,
    /// which would ask for the server's default of 30 to 60 minutes.
    #[test]
    fn watch_timeouts_are_seconds_the_api_server_takes() {
        let query = |timeout: Duration| {
            let mut url = collection_url::<Pod>(&base(), None).unwrap();
            set_watch_query(
                &mut url,
                &WatchOptions { timeout: Some(timeout), ..WatchOptions::default() },
            );
            url.query().unwrap_or_default().to_owned()
        };
        assert_eq!(query(Duration::MAX), "watch=true&timeoutSeconds=9223372036");
        assert_eq!(
            query(Duration::from_secs(u64::MAX / 2)),
            "watch=true&timeoutSeconds=9223372036"
        );
        assert_eq!(query(Duration::from_millis(400)), "watch=true&timeoutSeconds=1");
        assert_eq!(query(Duration::from_secs(330)), "watch=true&timeoutSeconds=330");
    }

    #[test]
    fn watch_query() {
        let mut url = collection_url::<Pod>(&base(), Some("default")).unwrap();
        set_watch_query(
            &mut url,
            &WatchOptions {
                label_selector: Some("app!=db".to_owned()),
                resource_version: "100".to_owned(),
                timeout: Some(Duration::from_millis(301_900)),
                allow_watch_bookmarks: true,
                ..WatchOptions::default()
            },
        );
        assert_eq!(
            url.query(),
            Some(
                "watch=true&resourceVersion=100&labelSelector=app%21%3Ddb&allowWatchBookmarks=true&timeoutSeconds=301"
            )
        );
    }

    #[test]
    fn streaming_list_watch_query() {
        let mut url = collection_url::<Pod>(&base(), None).unwrap();
        set_watch_query(
            &mut url,
            &WatchOptions {
                resource_version_match: Some(ResourceVersionMatch::NotOlderThan),
                allow_watch_bookmarks: true,
                send_initial_events: true,
                ..WatchOptions::default()
            },
        );
        assert_eq!(
            url.query(),
            Some(
                "watch=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&sendInitialEvents=true"
            )
        );
    }

    #[test]
    fn metadata_only_types_accept_partial_object_metadata() {
        use informer_runtime::metadata::PartialObjectMetadata;
        assert_eq!((list_accept::<Pod>(), object_accept::<Pod>()), (JSON, JSON));
        assert_eq!(
            list_accept::<PartialObjectMetadata<Pod>>(),
            "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
        );
        assert_eq!(
            object_accept::<PartialObjectMetadata<Deployment>>(),
            "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
        );
        // Same URLs as the kind itself.
        assert_eq!(
            collection_url::<PartialObjectMetadata<Deployment>>(&base(), Some("a")).unwrap().path(),
            "/apis/apps/v1/namespaces/a/deployments"
        );
    }

    #[test]
    fn resource_names() {
        assert_eq!(resource_name::<Pod>(), "pods");
        assert_eq!(resource_name::<Deployment>(), "deployments.apps");
    }
}
