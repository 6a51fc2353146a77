//! The read path: list pages and watch streams over HTTP, turned into typed pages and events.
//!
//! Where it sits in the data flow: between the socket and the [reflector](informer_runtime::reflector), in
//! the order bytes travel:
//!
//! - `http_lister_watcher`: the [`ListerWatcher`](informer_runtime::ListerWatcher) over a
//!   [`Client`](crate::Client): list pages with the next one prefetched, watch streams
//!   with an idle deadline;
//! - `list_page`: one list response body to one typed page, decoded part by part while it
//!   arrives, cut into its parts by `list_split`;
//! - `watch_decode`: watch stream bytes to typed watch events.
//!
//! Both decoders decode each object through the bottom [`codec`](informer_runtime::codec) module, which
//! needs no HTTP.

pub(super) mod http_lister_watcher;
pub(crate) mod list_page;
pub(crate) mod list_split;
pub(crate) mod watch_decode;
