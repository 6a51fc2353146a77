//! The list step of the [reflector](super): all pages of one list, a continue token that
//! expires or comes round again, and the handover of the complete list to the store.
//!
//! Every item goes through the reflector's [`ListIntake`] as soon as it is decoded: an item the
//! store holds unchanged is swapped for the held object (a relist then holds no second copy),
//! and for a store that [holds lists compactly](ReflectorStore::compact_lists) the item waits in
//! its [compact form](crate::store::compact) until the list is complete (`staged_list`). Only
//! a complete list reaches the store: as one [`replace`](ReflectorStore::replace), or,
//! compactly held, item by item ([`Reflector::hand_over`]), each decoded again only when the
//! store has room for it.

use std::hash::BuildHasher;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::staged_list::{StagedList, Unstaged};
use super::{Reflector, ReflectorStore};
use crate::listwatch::{Error, ListIntake, ListOptions};
use crate::resource::Object;
use crate::store::Indexer;

impl<K: Object> Reflector<K> {
    /// Lists and replaces the store. `Ok(false)` when cancelled first.
    pub(super) async fn list(&self, cancel: &CancellationToken) -> Result<bool, Error> {
        let rv = self.relist_resource_version();
        let intake = Arc::new(StoreIntake::new(
            Arc::clone(&self.store),
            self.compact_cache.clone(),
            self.items_as_sent.then_some(self.config.keep_managed_fields),
        ));
        let listing = async {
            match self.list_pages(&rv, &intake).await {
                Err(e) if e.is_expired() || e.is_resource_version_too_large() => {
                    tracing::debug!(resource = %self.resource, rv, error = %e, "relisting with a consistent read");
                    self.state.lock().resource_version_unavailable = true;
                    intake.clear();
                    self.list_pages(&self.relist_resource_version(), &intake).await
                }
                result => result,
            }
        };
        let (items, list_rv, paginated) = tokio::select! {
            biased;
            () = cancel.cancelled() => return Ok(false),
            result = listing => result?,
        };
        {
            let mut state = self.state.lock();
            if rv == "0" && paginated {
                state.paginated_result = true;
            }
            state.resource_version_unavailable = false;
        }
        match &intake.staged {
            Some(staged) if !staged.is_empty() => {
                tracing::debug!(resource = %self.resource, items = items.len() + staged.len(), rv = list_rv, "listed");
                if !self.hand_over_staged(staged, items, &list_rv, cancel).await? {
                    return Ok(false);
                }
            }
            _ => {
                tracing::debug!(resource = %self.resource, items = items.len(), rv = list_rv, "listed");
                self.store.replace(items, &list_rv);
            }
        }
        self.set_last_sync_resource_version(&list_rv);
        Ok(true)
    }

    /// Replaces the store with the complete list `staged` and `rest` (items held decoded), item
    /// by item, each decoded as the store has room for it. `Ok(false)` when cancelled first.
    ///
    /// # Errors
    ///
    /// [`Error::Decode`] naming the item, when an item kept as the server sent it does not
    /// decode: the list fails there, its deletions and its version not applied (see
    /// `staged_list`).
    pub(super) async fn hand_over_staged(
        &self,
        staged: &StagedList<K>,
        rest: Vec<Arc<K>>,
        resource_version: &str,
        cancel: &CancellationToken,
    ) -> Result<bool, Error> {
        let lazy = staged.take().into_iter().map(|(key, item)| match staged.unstage(item) {
            Ok(obj) => Ok(Some(obj)),
            Err(Unstaged::Listed(error)) => Err(Error::Decode(format!(
                "{} list: the item {key}: {error}; the list is retried",
                self.resource
            ))),
            // Bytes encoded from an object of this very type: only a type whose serde does not
            // round-trip gets here. Logged, never a panic; the object is left out of this
            // list, so a relist or its next change brings it back.
            Err(Unstaged::Encoded(error)) => {
                tracing::error!(
                    resource = %self.resource,
                    %key,
                    %error,
                    "a listed object held in compact form could not be decoded again; it is left out of this list"
                );
                Ok(None)
            }
        });
        self.hand_over(lazy, rest, resource_version, cancel).await
    }

    /// Replaces the store with a complete list, item by item: `lazy` makes each object (its
    /// decoding) only when the store has room for it (see [`ReflectorStore::poll_ready`]), and
    /// `rest` holds objects decoded already. `Ok(false)` when cancelled first.
    ///
    /// # Errors
    ///
    /// The first error `lazy` gives: the replace is left unfinished (the next one starts
    /// afresh), so nothing is deleted and the list's version is not taken.
    pub(super) async fn hand_over(
        &self,
        mut lazy: impl Iterator<Item = Result<Option<Arc<K>>, Error>>,
        mut rest: Vec<Arc<K>>,
        resource_version: &str,
        cancel: &CancellationToken,
    ) -> Result<bool, Error> {
        self.store.start_replace();
        loop {
            tokio::select! {
                biased;
                () = cancel.cancelled() => return Ok(false),
                () = std::future::poll_fn(|cx| self.store.poll_ready(cx)) => {}
            }
            match lazy.next().transpose()? {
                Some(Some(obj)) => rest.extend(self.store.replace_item(obj)),
                Some(None) => {}
                None => break,
            }
        }
        self.store.finish_replace(rest, resource_version);
        Ok(true)
    }

    /// All pages of one list at `rv`, their items handed to `intake` as they are decoded: the
    /// items it gave back, the version of the first page, and whether the answer came in
    /// several pages.
    async fn list_pages(
        &self,
        rv: &str,
        intake: &Arc<StoreIntake<K>>,
    ) -> Result<(Vec<Arc<K>>, String, bool), Error> {
        let selectors = self.config.selectors();
        let mut options = ListOptions {
            label_selector: selectors.label_selector,
            field_selector: selectors.field_selector,
            resource_version: rv.to_owned(),
            resource_version_match: None,
            limit: self.page_size_for(rv),
            continue_token: None,
            keep_managed_fields: self.config.keep_managed_fields,
        };
        let into: Arc<dyn ListIntake<K>> = Arc::clone(intake) as _;
        let mut items = Vec::new();
        let mut list_rv = None;
        let mut paginated = false;
        // The continue tokens of this list, hashed: a server that hands one out again would be
        // paged through forever (client-go does not check; a token is a position in one
        // snapshot, so it can never come back in a list that moves on).
        let tokens = std::collections::hash_map::RandomState::new();
        let mut seen = std::collections::HashSet::new();
        loop {
            match self.lister_watcher.list_into(&options, Arc::clone(&into)).await {
                Err(e) if e.is_expired() && options.continue_token.is_some() => {
                    // The snapshot behind the continue token was compacted away mid-list: one
                    // full list at the version first asked for keeps the result consistent.
                    tracing::debug!(resource = %self.resource, rv, "continue token expired; full list");
                    let full = ListOptions {
                        resource_version: rv.to_owned(),
                        limit: None,
                        continue_token: None,
                        ..options
                    };
                    intake.clear();
                    let page = self.lister_watcher.list_into(&full, into).await?;
                    let items = page.items.into_iter().filter_map(|item| intake.take(item));
                    return Ok((items.collect(), page.resource_version, paginated));
                }
                Err(e) => return Err(e),
                Ok(page) => {
                    let page_rv = page.resource_version;
                    list_rv.get_or_insert(page_rv);
                    // Items a page held back until it had been checked whole (a server or
                    // proxy that sorts its keys writes `items` before `kind` and `metadata`) go
                    // to the intake now: a compact cache's keeps them in compact form, so that
                    // the list waits decoded one page at most, not whole. The intake gives
                    // back again what it gave back once.
                    items.extend(page.items.into_iter().filter_map(|item| intake.take(item)));
                    match page.continue_token {
                        Some(token) if !token.is_empty() => {
                            if !seen.insert(tokens.hash_one(&token)) {
                                return Err(Error::Decode(format!(
                                    "{} list: the server handed out the continue token {:?} a \
                                     second time in one list, so paging would never end; the \
                                     list is retried from the start",
                                    self.resource,
                                    shorten(&token)
                                )));
                            }
                            options.continue_token = Some(token);
                            // A version with a continue token is an error on the server.
                            options.resource_version.clear();
                            options.resource_version_match = None;
                            paginated = true;
                        }
                        _ => return Ok((items, list_rv.unwrap_or_default(), paginated)),
                    }
                }
            }
        }
    }
}

/// The reflector's [`ListIntake`]: the store's unchanged objects stand in for listed ones, and
/// for a store that [holds lists compactly](ReflectorStore::compact_lists), each item is
/// [staged](StagedList) in compact form as soon as it arrives (as the server sent it, when the
/// lister-watcher offers its JSON), until the list is complete and
/// [`Reflector::hand_over_staged`] hands it over.
struct StoreIntake<K> {
    store: Arc<dyn ReflectorStore<K>>,
    /// The list's items so far in compact form, when the store asks for that.
    staged: Option<StagedList<K>>,
    /// Whether items may be kept as the server sent them (`Reflector::items_as_sent`), and if
    /// so whether they keep their `managedFields` ([`ReflectorConfig::keep_managed_fields`]).
    ///
    /// [`ReflectorConfig::keep_managed_fields`]: super::ReflectorConfig::keep_managed_fields
    as_sent: Option<bool>,
}

impl<K: Object> StoreIntake<K> {
    fn new(
        store: Arc<dyn ReflectorStore<K>>,
        cache: Option<Indexer<K>>,
        as_sent: Option<bool>,
    ) -> Self {
        let staged = store.compact_lists().then(|| StagedList::new(cache));
        Self { store, staged, as_sent }
    }

    /// Forgets the items taken so far: the list starts again.
    fn clear(&self) {
        if let Some(staged) = &self.staged {
            staged.clear();
        }
    }
}

impl<K: Object> ListIntake<K> for StoreIntake<K> {
    fn unchanged(&self, listed: &K) -> Option<Arc<K>> {
        self.store.unchanged(listed)
    }

    fn take(&self, item: Arc<K>) -> Option<Arc<K>> {
        let Some(staged) = &self.staged else { return Some(item) };
        // Kept decoded rather than lost if it cannot be encoded (a `Serialize` impl that can
        // refuse); the store logs it when it finds it cannot hold the object compactly either.
        (!staged.stage(&item)).then_some(item)
    }

    fn take_json(&self, json: &[u8], served: (&str, &str)) -> bool {
        match (&self.staged, self.as_sent) {
            (Some(staged), Some(keep_managed_fields)) => {
                staged.stage_json(json, served, keep_managed_fields)
            }
            _ => false,
        }
    }
}

/// At most the first 64 characters of `token`, for a message.
fn shorten(token: &str) -> String {
    match token.char_indices().nth(64) {
        Some((end, _)) => format!("{}…", &token[..end]),
        None => token.to_owned(),
    }
}
