//! The transport seam: how the reflector lists and watches, whatever carries the bytes.
//!
//! **Who it is for.** Programs pass a source ([`ListWatchSource`]: this project's `Client`, a
//! `kube::Client`, a `testing::FakeSource`) to the factory and never call it; its [`Status`]
//! and [`Error`] are what failures carry. Implement [`ListerWatcher`] to feed informers from
//! another transport (a cache proxy, a recorded stream).
//!
//! A [`ListerWatcher`] answers list and watch requests for one resource type. The reflector is
//! written against this trait only, so it runs the same over HTTP, against the in-process
//! `FakeSource` of the `testing` module, or anything a user plugs in. A [`ListWatchSource`]
//! makes lister-watchers for any type; the factory holds one.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::stream::BoxStream;

use crate::dynamic::DynamicObject;
use crate::resource::{GroupVersionResource, Object, Resource};

/// A `resourceVersionMatch` rule for lists and streaming lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ResourceVersionMatch {
    /// Data at least as new as the given resource version.
    NotOlderThan,
    /// Data at exactly the given resource version.
    Exact,
}

impl ResourceVersionMatch {
    /// The wire value.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NotOlderThan => "NotOlderThan",
            Self::Exact => "Exact",
        }
    }
}

/// Options of one list request (one page).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListOptions {
    /// Label selector, Kubernetes syntax (`app=web,tier!=db`).
    pub label_selector: Option<String>,
    /// Field selector (`metadata.name=x`).
    pub field_selector: Option<String>,
    /// `""`: a consistent read from storage; `"0"`: any data (from the watch cache); else at least
    /// as new as this version (see `resource_version_match`).
    pub resource_version: String,
    /// How `resource_version` is interpreted.
    pub resource_version_match: Option<ResourceVersionMatch>,
    /// Page size; `None` for everything at once.
    pub limit: Option<u32>,
    /// The continue token of the previous page.
    pub continue_token: Option<String>,
    /// Keep `metadata.managedFields` in the objects returned. With `false` (the default) the
    /// HTTP lister-watcher skips it while decoding, so it is never allocated, and the `testing`
    /// module's `FakeSource` hands out objects without it; informers' caches then do not hold
    /// it. client-go recommends stripping it in informers: controllers almost never read it,
    /// and it is often the largest part of an object. Lister-watchers of your own should
    /// honour it too. The reflector sets it from
    /// [`ReflectorConfig::keep_managed_fields`](crate::reflector::ReflectorConfig::keep_managed_fields).
    pub keep_managed_fields: bool,
}

/// What a list tweak may change in an informer's list and watch requests: their selectors.
///
/// client-go's `tweakListOptions` is handed the whole `metav1.ListOptions`, so a tweak can set
/// `resourceVersion`, `limit`, `continue` or `timeoutSeconds` too, and so break the reflector's
/// protocol (a relist at a fixed version never moves on; a limit set on a watch-cache list makes
/// etcd serve it). The reflector owns those. A tweak gets only this: the selectors, which it
/// may set, replace or add to, and which the reflector puts on every list (each page) and
/// every watch alike, so that the cache and the watch agree on what they hold.
///
/// ```
/// use informer_runtime::listwatch::ListTweak;
/// let mut tweak = ListTweak::default();
/// tweak.and_labels("app=web").and_labels("shard=1").and_fields("spec.nodeName=node-1");
/// assert_eq!(tweak.label_selector.as_deref(), Some("app=web,shard=1"));
/// assert_eq!(tweak.field_selector.as_deref(), Some("spec.nodeName=node-1"));
/// ```
#[doc(alias = "TweakListOptionsFunc")]
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ListTweak {
    /// Label selector, Kubernetes syntax (`app=web,tier!=db`); `None` for every object.
    pub label_selector: Option<String>,
    /// Field selector (`metadata.name=x`); `None` for every object.
    pub field_selector: Option<String>,
}

impl ListTweak {
    /// Adds `selector` to the label selector: an object must match both (`,` is AND).
    pub fn and_labels(&mut self, selector: &str) -> &mut Self {
        and(&mut self.label_selector, selector);
        self
    }

    /// Adds `selector` to the field selector: an object must match both.
    pub fn and_fields(&mut self, selector: &str) -> &mut Self {
        and(&mut self.field_selector, selector);
        self
    }
}

/// `existing,selector`, skipping empty parts.
fn and(existing: &mut Option<String>, selector: &str) {
    let selector = selector.trim();
    if selector.is_empty() {
        return;
    }
    match existing {
        Some(s) if !s.trim().is_empty() => {
            s.push(',');
            s.push_str(selector);
        }
        _ => *existing = Some(selector.to_owned()),
    }
}

/// A tweak of every list and watch request of an informer (client-go's `tweakListOptions`):
/// a function of the [`ListTweak`] the reflector starts from (the configured selectors).
///
/// It runs for each request, so it must give the same answer every time: a list and a watch
/// with different selectors would leave objects in the cache that no watch reports on.
#[derive(Clone)]
pub struct TweakListOptions(Arc<dyn Fn(&mut ListTweak) + Send + Sync>);

impl TweakListOptions {
    /// A tweak that runs `tweak`.
    #[must_use]
    pub fn new(tweak: impl Fn(&mut ListTweak) + Send + Sync + 'static) -> Self {
        Self(Arc::new(tweak))
    }

    /// Runs the tweak on `options`.
    pub fn apply(&self, options: &mut ListTweak) {
        (self.0)(options);
    }

    /// This tweak, then `next`.
    #[must_use]
    pub fn then(self, next: Self) -> Self {
        Self::new(move |options| {
            self.apply(options);
            next.apply(options);
        })
    }
}

impl fmt::Debug for TweakListOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TweakListOptions(..)")
    }
}

/// Options of one watch request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WatchOptions {
    /// Label selector, as for lists.
    pub label_selector: Option<String>,
    /// Field selector, as for lists.
    pub field_selector: Option<String>,
    /// Watch changes after this version (`""` with `send_initial_events` for a streaming list).
    pub resource_version: String,
    /// How `resource_version` is interpreted (streaming lists use `NotOlderThan`).
    pub resource_version_match: Option<ResourceVersionMatch>,
    /// The server ends the watch after this long.
    pub timeout: Option<Duration>,
    /// Ask for `BOOKMARK` events.
    pub allow_watch_bookmarks: bool,
    /// Streaming list: first send the current state as `ADDED` events, then a bookmark
    /// annotated `k8s.io/initial-events-end: "true"`.
    pub send_initial_events: bool,
    /// Keep `metadata.managedFields` in the objects of events, as
    /// [`ListOptions::keep_managed_fields`].
    pub keep_managed_fields: bool,
}

/// One page of a list.
#[derive(Debug)]
pub struct ObjectList<K> {
    /// The objects of this page.
    pub items: Vec<Arc<K>>,
    /// The version the list was read at.
    pub resource_version: String,
    /// The token for the next page, if there is one.
    pub continue_token: Option<String>,
}

/// A bookmark: "everything up to this version has been sent".
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Bookmark {
    /// The version reached.
    pub resource_version: String,
    /// Whether this bookmark ends the initial events of a streaming list.
    pub initial_events_end: bool,
}

/// One event of a watch.
pub enum WatchEvent<K> {
    /// `ADDED`.
    Added(Arc<K>),
    /// `MODIFIED`.
    Modified(Arc<K>),
    /// `DELETED`, with the object's last state.
    Deleted(Arc<K>),
    /// `BOOKMARK`.
    Bookmark(Bookmark),
    /// `ERROR`: the server ended the watch with this status.
    Error(Status),
}

impl<K: Object> fmt::Debug for WatchEvent<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let show = |o: &K| {
            format!(
                "{}@{}",
                crate::resource::ObjectKey::of(o),
                crate::resource::resource_version(o)
            )
        };
        match self {
            Self::Added(o) => write!(f, "Added({})", show(o)),
            Self::Modified(o) => write!(f, "Modified({})", show(o)),
            Self::Deleted(o) => write!(f, "Deleted({})", show(o)),
            Self::Bookmark(b) => write!(f, "{b:?}"),
            Self::Error(s) => write!(f, "Error({s})"),
        }
    }
}

/// A stream of watch events; it ends when the watch ends.
pub type WatchStream<K> = BoxStream<'static, Result<WatchEvent<K>, Error>>;

/// A Kubernetes `Status`: what the server says when a request fails.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Status {
    /// HTTP status code (`410`, `429`, `500`, ...).
    pub code: u16,
    /// Machine-readable reason (`Expired`, `Gone`, `TooManyRequests`, `Timeout`, ...).
    pub reason: String,
    /// Human-readable message, as the server wrote it.
    pub message: String,
    /// The causes' types (for example `ResourceVersionTooLarge`) and messages.
    pub causes: Vec<(String, String)>,
    /// How long the server asked us to wait before retrying.
    pub retry_after: Option<Duration>,
}

impl Status {
    /// A status with a code, a reason and a message.
    #[must_use]
    pub fn new(code: u16, reason: &str, message: impl Into<String>) -> Self {
        Self { code, reason: reason.to_owned(), message: message.into(), ..Self::default() }
    }

    /// `410 Expired`: the requested version was compacted away.
    #[must_use]
    pub fn expired(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    /// `429 TooManyRequests`.
    #[must_use]
    pub fn too_many_requests(message: impl Into<String>, retry_after: Option<Duration>) -> Self {
        Self { retry_after, ..Self::new(429, "TooManyRequests", message) }
    }

    /// `504 Timeout` with cause `ResourceVersionTooLarge`: the version is newer than the server's.
    #[must_use]
    pub fn resource_version_too_large(message: impl Into<String>) -> Self {
        let message = message.into();
        Self {
            causes: vec![("ResourceVersionTooLarge".to_owned(), message.clone())],
            ..Self::new(504, "Timeout", message)
        }
    }

    /// `410`, or reason `Expired` / `Gone`.
    #[must_use]
    pub fn is_expired(&self) -> bool {
        self.code == 410 || self.reason == "Expired" || self.reason == "Gone"
    }

    /// `429`.
    #[must_use]
    pub fn is_too_many_requests(&self) -> bool {
        self.code == 429 || self.reason == "TooManyRequests"
    }

    /// The three formats API servers have used to say "resource version too large".
    #[must_use]
    pub fn is_resource_version_too_large(&self) -> bool {
        const MESSAGE: &str = "Too large resource version";
        self.causes
            .iter()
            .any(|(kind, msg)| kind == "ResourceVersionTooLarge" || msg.contains(MESSAGE))
            || (self.reason == "Timeout" && self.message.contains(MESSAGE))
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}: {}", self.code, self.reason, self.message)
    }
}

/// Why a list or watch failed. Every variant is retryable: the reflector backs off and retries.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The server answered with a `Status`.
    #[error("api error: {0}")]
    Api(Status),
    /// The server refused the connection (nothing listens there). Other connection failures
    /// (DNS, TLS, timeouts) are [`Error::Transport`].
    #[error("connection refused: {0}")]
    ConnectionRefused(String),
    /// The connection failed while in use.
    #[error("transport error: {0}")]
    Transport(String),
    /// The bytes were not what the protocol promised.
    #[error("decode error: {0}")]
    Decode(String),
    /// A watch delivered an object of another kind; the reflector skips it.
    #[error("unexpected object kind in watch: expected {expected}, got {got}")]
    UnexpectedKind {
        /// The kind the watch is for.
        expected: String,
        /// The kind that arrived.
        got: String,
    },
    /// A streaming list did not deliver its initial-events-end bookmark in time.
    #[error("streaming list: no initial-events-end bookmark within {0:?}")]
    StreamingListTimeout(Duration),
    /// The request could not be made from the settings it was given (a namespace that cannot
    /// be a path segment, say); nothing was sent. Retrying does not help: fix the setting.
    #[error("invalid request: {0}")]
    InvalidRequest(String),
}

impl Error {
    /// The server's status, if it sent one.
    #[must_use]
    pub fn status(&self) -> Option<&Status> {
        match self {
            Self::Api(s) => Some(s),
            _ => None,
        }
    }

    /// A `410 Expired` / `Gone`.
    #[must_use]
    pub fn is_expired(&self) -> bool {
        self.status().is_some_and(Status::is_expired)
    }

    /// A `429 TooManyRequests`.
    #[must_use]
    pub fn is_too_many_requests(&self) -> bool {
        self.status().is_some_and(Status::is_too_many_requests)
    }

    /// "Too large resource version".
    #[must_use]
    pub fn is_resource_version_too_large(&self) -> bool {
        self.status().is_some_and(Status::is_resource_version_too_large)
    }

    /// Errors after which opening a watch is simply tried again after a backoff, without a
    /// relist: 429 and connection refused.
    #[must_use]
    pub fn is_watch_retriable(&self) -> bool {
        self.is_too_many_requests() || matches!(self, Self::ConnectionRefused(_))
    }

    /// How long the server asked to wait, if it did.
    #[must_use]
    pub fn retry_after(&self) -> Option<Duration> {
        self.status().and_then(|s| s.retry_after)
    }
}

/// Lists and watches one resource type.
///
/// Implementations must report server errors as [`Error::Api`] with the server's status, so
/// the reflector can tell a compacted version (410) from throttling (429) from the rest.
#[doc(alias = "ListWatch")]
pub trait ListerWatcher<K>: Send + Sync + 'static {
    /// One page of objects.
    fn list(&self, options: &ListOptions) -> BoxFuture<'_, Result<ObjectList<K>, Error>>;
    /// A stream of changes.
    fn watch(&self, options: &WatchOptions) -> BoxFuture<'_, Result<WatchStream<K>, Error>>;

    /// One page, like [`list`](Self::list), whose items go to `intake` as they are decoded.
    ///
    /// The reflector lists this way (see [`ListIntake`]): an item the cache holds unchanged is
    /// swapped for the cached object, and an informer whose cache is compact takes each item
    /// in its compact form at once. The page holds what `intake` gave back.
    ///
    /// The default lists the whole page first, then hands its items over one by one. The HTTP
    /// lister-watcher hands each item over as soon as it is decoded, once the body has said it
    /// is a list of `K` at a resource version: a list of any size is then never held decoded
    /// whole by an intake that keeps no decoded items.
    ///
    /// # Errors
    ///
    /// As [`list`](Self::list).
    fn list_into(
        &self,
        options: &ListOptions,
        intake: Arc<dyn ListIntake<K>>,
    ) -> BoxFuture<'_, Result<ObjectList<K>, Error>>
    where
        K: Send + Sync + 'static,
    {
        let listing = self.list(options);
        Box::pin(async move {
            let page = listing.await?;
            let items = page
                .items
                .into_iter()
                .filter_map(|item| intake.take(intake.unchanged(&item).unwrap_or(item)))
                .collect();
            Ok(ObjectList { items, ..page })
        })
    }
}

/// Where a list's items go as soon as they are decoded: see [`ListerWatcher::list_into`].
///
/// The reflector's intake swaps an unchanged item for the cached object (a relist of unchanged
/// objects then holds no second copy of the cache), and, for an informer whose cache is
/// compact, takes each item in its compact form until the list is complete, so that the list
/// is never held decoded whole.
pub trait ListIntake<K>: Send + Sync {
    /// An object already held that equals `listed` (the same key and resource version), to
    /// keep in its place; it must be equal to `listed`.
    fn unchanged(&self, listed: &K) -> Option<Arc<K>>;

    /// Takes `item`, or gives it back (`Some`) for the page to hold.
    fn take(&self, item: Arc<K>) -> Option<Arc<K>>;

    /// Takes an item as the JSON the server sent, before it is decoded: `true` when taken,
    /// `false` when the caller is to decode it and hand it to [`take`](Self::take).
    ///
    /// A lister-watcher that has each item's bytes offers them here first, once the body has
    /// shown it is a list of `K` at a resource version. An intake that keeps items in a form
    /// of its own takes them: the reflector of a compact cache keeps each item compressed as it
    /// came, and decodes it once, at the handover to the cache, instead of decoding it here and
    /// encoding it again. Its type is then checked at the handover, where an item that does not
    /// decode fails the list (an item that never gets there, one a later item of the same key
    /// replaces, is not checked). `served` is the `apiVersion` and `kind` of what is listed,
    /// which lists of built-in kinds leave out of their items. The default takes nothing.
    fn take_json(&self, json: &[u8], served: (&str, &str)) -> bool {
        let _ = (json, served);
        false
    }
}

impl<K, T: ListerWatcher<K> + ?Sized> ListerWatcher<K> for Arc<T> {
    fn list(&self, options: &ListOptions) -> BoxFuture<'_, Result<ObjectList<K>, Error>> {
        (**self).list(options)
    }

    fn watch(&self, options: &WatchOptions) -> BoxFuture<'_, Result<WatchStream<K>, Error>> {
        (**self).watch(options)
    }

    fn list_into(
        &self,
        options: &ListOptions,
        intake: Arc<dyn ListIntake<K>>,
    ) -> BoxFuture<'_, Result<ObjectList<K>, Error>>
    where
        K: Send + Sync + 'static,
    {
        (**self).list_into(options, intake)
    }
}

/// Makes [`ListerWatcher`]s for any resource type: what a factory needs from a client.
pub trait ListWatchSource: Clone + Send + Sync + 'static {
    /// A lister-watcher for `K`, limited to `namespace` when given (for namespaced kinds).
    fn lister_watcher<K: Resource>(&self, namespace: Option<&str>) -> Arc<dyn ListerWatcher<K>>;

    /// A lister-watcher for a resource known only at run time (see the
    /// [`dynamic`](crate::dynamic) module), over `scope`; with `metadata_only`, of its objects'
    /// metadata alone. `None` when this source cannot serve resources it does not know at
    /// compile time (the default; the `testing` module's `FakeSource` is such a source).
    fn dynamic_lister_watcher(
        &self,
        gvr: &GroupVersionResource,
        scope: DynamicScope<'_>,
        metadata_only: bool,
    ) -> Option<Arc<dyn ListerWatcher<DynamicObject>>> {
        let _ = (gvr, scope, metadata_only);
        None
    }
}

/// Which objects a lister-watcher of a resource known only at run time covers. Its scope
/// (namespaced or cluster-scoped) is learnt from discovery, after the lister-watcher is made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DynamicScope<'a> {
    /// Every object, in every namespace.
    All,
    /// The objects of one namespace; every object if the resource is cluster-scoped (a
    /// factory's namespace applies to namespaced kinds only).
    Namespace(&'a str),
    /// The objects of one namespace of a set, each with its own lister-watcher into one cache:
    /// a cluster-scoped resource is refused with an error that says so, since each
    /// lister-watcher of the set would list it whole.
    NamespaceOfSet(&'a str),
}

impl<'a> DynamicScope<'a> {
    /// The namespace, if one.
    #[must_use]
    pub fn namespace(self) -> Option<&'a str> {
        match self {
            Self::All => None,
            Self::Namespace(ns) | Self::NamespaceOfSet(ns) => Some(ns),
        }
    }
}
