//! Lists as requests of their own: one page ([`Client::list`]), every page in turn
//! ([`Client::list_pages`]), or every item at once under a bound ([`Client::list_all`]) —
//! client-go's `List` with `metav1.ListOptions` and its `pager.ListPager`, kube-rs's
//! `Api::list`.
//!
//! Where it sits: above the [lister-watcher](crate::Client::lister_watcher), whose list
//! requests these are (the same query, the same decoder, the same bounds: an idle deadline on
//! every wait, [`max_object_size`](crate::Config::max_object_size) on every item,
//! `metadata.managedFields` left out unless
//! [`keep_managed_fields`](ListOptions::keep_managed_fields) is set). The options are the
//! runtime's [`ListOptions`], which informers' lists use too.

use std::sync::Arc;

use futures::stream::{self, Stream};

use super::api_client::Client;
use super::error::{ClientError, Result};
use super::request::collection_url;
use informer_runtime::listwatch::{ListOptions, ListerWatcher, ObjectList};
use informer_runtime::resource::{Resource, resource_name};

/// The page size of [`Client::list_pages`] and [`Client::list_all`] when the options set none:
/// client-go's pager default.
pub const DEFAULT_PAGE_SIZE: u32 = 500;

impl Client {
    /// Lists one page of `K`: the objects the options select, in `namespace` (every namespace
    /// with `None` or `Some("")`; ignored for cluster-scoped kinds).
    ///
    /// The page holds [`items`](ObjectList::items), the
    /// [`resource_version`](ObjectList::resource_version) it was read at, and, when more
    /// objects follow, the [`continue_token`](ObjectList::continue_token) that asks for the
    /// next page (send it back in [`ListOptions::continue_token`] with the same selectors and
    /// limit, and no resource version). Every page of a list reads the same snapshot of the
    /// server's state; no page is fetched ahead.
    ///
    /// The options: [`label_selector`](ListOptions::label_selector) and
    /// [`field_selector`](ListOptions::field_selector), [`limit`](ListOptions::limit) (the page
    /// size; `None` for every object in one answer), `continue_token`, and
    /// [`resource_version`](ListOptions::resource_version) with
    /// [`resource_version_match`](ListOptions::resource_version_match) (`""`: the current
    /// state, read from storage; `"0"`: any state, from the server's cache, which ignores the
    /// limit).
    ///
    /// # Errors
    ///
    /// [`ClientError::Api`] with the server's status, naming the request's path (the resource)
    /// and the HTTP status: `410 Expired` ([`ClientError::is_resource_expired`]) for a continue
    /// token whose snapshot the server no longer has (start the list again, without a token),
    /// `400` for a selector the server refuses. [`ClientError::Request`] for transport and
    /// decode failures; [`ClientError::InvalidPathSegment`] for a namespace that cannot be one.
    ///
    /// ```no_run
    /// # async fn run(client: informer_client::Client) -> informer_client::Result<()> {
    /// use informer_runtime::listwatch::ListOptions;
    /// use k8s_openapi::api::core::v1::Pod;
    ///
    /// let options = ListOptions {
    ///     label_selector: Some("app=web".into()),
    ///     field_selector: Some("status.phase=Running".into()),
    ///     limit: Some(100),
    ///     ..ListOptions::default()
    /// };
    /// let page = client.list::<Pod>(Some("apps"), &options).await?;
    /// println!("{} pods at version {}", page.items.len(), page.resource_version);
    /// if let Some(token) = page.continue_token {
    ///     let next = ListOptions { continue_token: Some(token), ..options };
    ///     let page = client.list::<Pod>(Some("apps"), &next).await?;
    /// #   drop(page);
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub async fn list<K: Resource>(
        &self,
        namespace: Option<&str>,
        options: &ListOptions,
    ) -> Result<ObjectList<K>> {
        let path = collection_url::<K>(self.base_url(), namespace)?.path().to_owned();
        let lister = self.page_lister::<K>(namespace);
        lister.list(options).await.map_err(|e| ClientError::request("GET", path, e))
    }

    /// Every page of a list, in turn: the first with `options`, each next one with the
    /// previous page's continue token. Ends after the last page, or after the first error.
    ///
    /// Pages of [`DEFAULT_PAGE_SIZE`] (500) objects unless `options` set a
    /// [`limit`](ListOptions::limit).
    ///
    /// # Memory
    ///
    /// The stream holds the page it yields and, while the caller works on it, the next one
    /// being fetched (at most 8 MiB of it, undecoded; a larger page is fetched when asked
    /// for). Pages the caller dropped are gone: a list of any length is walked in the memory
    /// of two pages. A server that serves the list from its cache (`resource_version` `"0"`)
    /// ignores the limit and answers one page with everything.
    ///
    /// # Errors
    ///
    /// As [`Client::list`], as the stream's last item. A `410 Expired`
    /// ([`ClientError::is_resource_expired`]) means the walk took longer than the server
    /// keeps its snapshots (about five minutes on etcd's default compaction): start again.
    ///
    /// ```no_run
    /// # async fn run(client: informer_client::Client) -> informer_client::Result<()> {
    /// use futures::TryStreamExt;
    /// use informer_runtime::listwatch::ListOptions;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    ///
    /// let mut pages = std::pin::pin!(client.list_pages::<ConfigMap>(None, &ListOptions::default()));
    /// while let Some(page) = pages.try_next().await? {
    ///     for cm in &page.items {
    ///         println!("{:?}", cm.metadata.name);
    ///     }
    /// }
    /// # Ok(())
    /// # }
    /// ```
    #[doc(alias = "ListPager")]
    pub fn list_pages<K: Resource>(
        &self,
        namespace: Option<&str>,
        options: &ListOptions,
    ) -> impl Stream<Item = Result<ObjectList<K>>> + Send + 'static {
        let path = collection_url::<K>(self.base_url(), namespace).map(|url| url.path().to_owned());
        let mut first = options.clone();
        first.limit = Some(first.limit.unwrap_or(DEFAULT_PAGE_SIZE));
        // One lister for the whole walk: its prefetch fetches each next page while the caller
        // works on this one.
        let lister: Arc<dyn ListerWatcher<K>> = self.lister_watcher::<K>(namespace);
        let walk = Walk { lister, path, next: Some(first) };
        stream::unfold(walk, Walk::step)
    }

    /// Every object of a list, read page by page: at most `max_items`, or an error.
    ///
    /// The result has every item, the resource version of the snapshot the pages were read
    /// at, and no continue token. Pages of [`DEFAULT_PAGE_SIZE`] (500) objects unless `options`
    /// set a [`limit`](ListOptions::limit).
    ///
    /// # Memory
    ///
    /// At most `max_items` objects are kept, plus the page that crossed the bound (which is
    /// then dropped): a list larger than the program expected fails instead of growing
    /// without bound. Walk [`Client::list_pages`] instead to handle each page and let it go.
    ///
    /// # Errors
    ///
    /// [`ClientError::ListTooLarge`] past `max_items` objects (raise the bound, narrow the list
    /// with selectors, or walk its pages); otherwise as [`Client::list_pages`].
    ///
    /// ```no_run
    /// # async fn run(client: informer_client::Client) -> informer_client::Result<()> {
    /// use informer_runtime::listwatch::ListOptions;
    /// use k8s_openapi::api::core::v1::Node;
    ///
    /// let nodes = client.list_all::<Node>(None, &ListOptions::default(), 10_000).await?;
    /// println!("{} nodes", nodes.items.len());
    /// # Ok(())
    /// # }
    /// ```
    pub async fn list_all<K: Resource>(
        &self,
        namespace: Option<&str>,
        options: &ListOptions,
        max_items: usize,
    ) -> Result<ObjectList<K>> {
        use futures::TryStreamExt as _;
        let pages = self.list_pages::<K>(namespace, options);
        let mut pages = std::pin::pin!(pages);
        let mut all =
            ObjectList { items: Vec::new(), resource_version: String::new(), continue_token: None };
        while let Some(page) = pages.try_next().await? {
            if all.items.len() + page.items.len() > max_items {
                return Err(ClientError::ListTooLarge {
                    resource: resource_name::<K>(),
                    max_items,
                });
            }
            if all.resource_version.is_empty() {
                all.resource_version = page.resource_version;
            }
            all.items.extend(page.items);
        }
        Ok(all)
    }
}

/// Where a walk of [`Client::list_pages`] is.
struct Walk<K> {
    lister: Arc<dyn ListerWatcher<K>>,
    /// The collection's path, for errors; the error itself when it cannot be one.
    path: std::result::Result<String, crate::request::PathSegmentError>,
    /// The options of the next page; `None` once the walk is over.
    next: Option<ListOptions>,
}

impl<K: Resource> Walk<K> {
    async fn step(mut self) -> Option<(Result<ObjectList<K>>, Self)> {
        let options = self.next.take()?;
        let path = match &self.path {
            Ok(path) => path.clone(),
            Err(error) => return Some((Err(error.clone().into()), self)),
        };
        match self.lister.list(&options).await {
            Ok(page) => {
                self.next = page.continue_token.clone().filter(|t| !t.is_empty()).map(|token| {
                    // What client-go's pager sends: the token, the selectors and the limit;
                    // the token carries the snapshot's version.
                    ListOptions {
                        continue_token: Some(token),
                        resource_version: String::new(),
                        resource_version_match: None,
                        ..options
                    }
                });
                Some((Ok(page), self))
            }
            Err(error) => Some((Err(ClientError::request("GET", path, error)), self)),
        }
    }
}
