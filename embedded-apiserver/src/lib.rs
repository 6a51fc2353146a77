//! An embedded, protocol-faithful Kubernetes API server for tests and demos.
//!
//! It stands where a cluster's API server stands in an informer's data flow (left of
//! informer-runtime's [`ListerWatcher`](informer_runtime::ListerWatcher)), and speaks the same
//! HTTP protocol closely enough that real clients (kubectl, kube-rs, client-go,
//! informer-client's `Client`) cannot tell the difference for discovery, get, list, watch and
//! writes. Start one per test with [`ApiServer::start`], point a client at
//! [`url`](ServerHandle::url) or [`kubeconfig_yaml`](ServerHandle::kubeconfig_yaml), and inject
//! faults through the [`ServerHandle`].
//!
//! # In your tests
//!
//! Add it as a dev-dependency, with a tokio runtime for the tests (the server runs on the
//! runtime that starts it):
//!
//! ```toml
//! [dev-dependencies]
//! embedded-apiserver = "0.1"
//! tokio = { version = "1", features = ["macros", "rt"] }
//! # Libraries pick no Kubernetes version, tests do (unless your crate already picks one).
//! k8s-openapi = { version = "0.29", features = ["latest"] }
//! ```
//!
//! Then start a server in a `#[tokio::test] async fn`, one per test, so that tests share no
//! state and run in parallel (each server listens on its own loopback port):
//!
//! ```
//! use embedded_apiserver::ApiServer;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let server = ApiServer::start().await?;
//! let url = format!("{}/api/v1/namespaces", server.url());
//! // GET url with any HTTP client: a NamespaceList with default, kube-system, ...
//! # let _ = url;
//! let watches = server.drop_watches(); // every open watch ends, as on a dropped connection
//! assert_eq!(watches, 0);
//! server.shutdown().await?;
//! # Ok(())
//! # }
//! ```
//!
//! Informers reach it through an informer-client `Client` configured with the server's
//! [`url`](ServerHandle::url); kube-rs through that URL too or
//! [`kubeconfig_yaml`](ServerHandle::kubeconfig_yaml) (the README's "A kube-rs client for
//! tests" shows both), kubectl through the kubeconfig. Its API speaks informer-runtime's types
//! ([`GroupVersionResource`](informer_runtime::GroupVersionResource), a failed direct write's
//! [`Status`](informer_runtime::Status), [`ResourceType::of`] for any
//! [`Resource`](informer_runtime::Resource)), so a test should use the informer-runtime version
//! this crate depends on.
//!
//! # What is faithful
//!
//! - **Transport.** Plain HTTP/1.1 by default; with [`Config::tls`], TLS with ALPN offering
//!   `h2` and `http/1.1` as kube-apiserver does, so that client-go, kube-rs and
//!   informer-client's `Client` speak HTTP/2, with kube-apiserver's per-connection stream
//!   limit ([`Config::max_concurrent_streams`], 100 by default) advertised and enforced, its
//!   32 s handshake deadline and 90 s HTTP/2 idle timeout. The server makes its own CA
//!   ([`ServerHandle::ca_pem`], in the [kubeconfig](ServerHandle::kubeconfig_yaml));
//!   [`ServerHandle::traffic`] counts requests by protocol and streams per connection.
//! - **Storage.** Objects are JSON, in any number of resource types: built-ins (core/v1 pods,
//!   namespaces, configmaps, secrets, services, serviceaccounts, nodes, events, endpoints,
//!   persistentvolumes(claims); apps/v1; batch/v1; policy/v1 poddisruptionbudgets; leases;
//!   endpointslices; events.k8s.io/v1
//!   events; CRDs), types
//!   declared in the [`Config`], and the types of CRDs created through the API (every served
//!   version, with its scope, names and printer columns; `Established` at once). One global
//!   resourceVersion counter, as etcd's revision.
//! - **Discovery** (`/version`, `/api`, `/apis` in kube-aggregator's group order, resource
//!   lists with verbs, short names and categories) and an **`OpenAPI` v3** index whose PATCH
//!   operations declare `fieldValidation`,
//!   which is what `kubectl create` and `kubectl apply` need to validate on the server (see
//!   `discovery.rs`). `OpenAPI` v2 is not served; aggregated discovery requests get legacy
//!   documents, from which kubectl falls back as it does with older servers.
//! - **Reads.** get; list with `limit`/`continue` (tokens in the API server's format, every page
//!   from one snapshot), `resourceVersion` `""`, `"0"` (the watch cache: `limit` ignored,
//!   unless [`Config::paginate_cached_lists`] asks for pages), `N`
//!   with `NotOlderThan` or `Exact`, label and field selectors (each kind's labels and error
//!   messages); 410 for compacted versions and tokens, 504 `ResourceVersionTooLarge` for future
//!   ones. Tables (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`, with
//!   `includeObject`; kube-apiserver's printers for pods, config maps, secrets, namespaces,
//!   service accounts and leases) and `PartialObjectMetadata` for get and watch,
//!   `PartialObjectMetadataList` for lists (the wrong one of the two: 406, as
//!   kube-apiserver's `transformObject` answers; see `render.rs`).
//! - **Watch.** `ADDED`, `MODIFIED`, `DELETED` filtered as the watch cache filters, `BOOKMARK`
//!   (periodic, on request, and shortly before `timeoutSeconds` ends the watch),
//!   `sendInitialEvents` with the `k8s.io/initial-events-end` bookmark, from a compacted version
//!   an HTTP 200 whose only event is an `ERROR` with `410 Expired: too old resource version: X
//!   (Y)`, and from a future version a watch that waits for it.
//!
//! The behaviour above is checked against a real kube-apiserver by the workspace's differential
//! conformance suite (`tests/conformance.rs`).
//! - **Writes.** create (generateName, uid, creationTimestamp, generation), update with
//!   optimistic concurrency, merge patch, JSON patch (its `test` as kube-apiserver's library
//!   runs it: a missing member is `null`; a patch that does not apply is `422 Invalid`),
//!   strategic merge patch for simple cases (built-in kinds only: `415` for a custom resource,
//!   as the apiextensions server answers; see `patch.rs`), server-side apply approximated as
//!   create-or-patch, delete (finalizers,
//!   preconditions; the object or a `Status` as the real resource answers), deletecollection,
//!   `/status` subresources, `dryRun=All`. Errors are `Status` bodies with apimachinery's
//!   messages: `pods "x" not found`, `pods "x" already exists`, `Operation cannot be fulfilled
//!   on pods "x": the object has been modified; ...`.
//! - **Subresources** beyond `/status`: `scale` (`autoscaling/v1` `Scale`) of deployments,
//!   replica sets, stateful sets and of custom resources whose CRD version declares
//!   `subresources.scale` (get, update, patch); `pods/eviction`, which deletes the pod unless a
//!   `PodDisruptionBudget` selecting it allows no disruption (`429` with kube-apiserver's
//!   message and causes); and `pods/log` (tail, byte limit, timestamps, follow), whose text a
//!   test supplies with [`ServerHandle::append_pod_log`], the stand-in for the kubelet.
//! - **Authentication**, optional and off by default, as kube-apiserver's: bearer tokens from a
//!   set a test replaces while the server runs ([`Config::bearer_tokens`],
//!   [`ServerHandle::set_bearer_tokens`]) and, over TLS, client certificates of a client CA
//!   the server makes, checked on every request so that one that expires on an open HTTP/2
//!   connection gets `401` ([`Config::client_certificates`],
//!   [`ServerHandle::issue_client_certificate`]). Refusals are kube-apiserver's `401`
//!   `Unauthorized` `Status`, counted in [`Traffic::unauthorized`].
//! - **Owner-reference garbage collection**, kube-controller-manager's, inside the server: a
//!   DELETE's `propagationPolicy` (background by default; foreground, orphan, or the deprecated
//!   `orphanDependents`) is validated and honoured, with the `foregroundDeletion` and `orphan`
//!   finalizers; the dependents of a deleted owner, and objects whose owners are all absent,
//!   are deleted shortly after (wait for it with [`testing::eventually`]), each change a write
//!   that watches see. [`Config::garbage_collector`] turns it off, for objects recorded from a
//!   cluster whose owners a test does not create.
//! - **Webhooks**, called as kube-apiserver calls them, over HTTPS trusting each
//!   configuration's `caBundle`: `MutatingWebhookConfiguration` and
//!   `ValidatingWebhookConfiguration` (`admissionregistration.k8s.io/v1`, defaulted and
//!   validated) make creates, updates, patches, deletes and `/status` writes call the webhooks
//!   whose rules (operations, resources with subresources, scope), namespace selector and
//!   object selector select them: mutating ones in turn, their JSON patches applied, then
//!   validating ones together, each within its `timeoutSeconds`. Denials, `failurePolicy`
//!   `Fail` and `Ignore`, dry runs and warnings (`Warning` headers) are answered in
//!   kube-apiserver's words (`admission webhook "NAME" denied the request: ...`,
//!   `Internal error occurred: failed calling webhook "NAME": failed to call webhook: Post
//!   "URL?timeout=10s": ...`). A CRD whose `spec.conversion.strategy` is `Webhook` has its
//!   objects converted by its webhook (`ConversionReview` v1 or v1beta1; a list in one
//!   review) when they are read or written in a version other than the one they are stored
//!   in (objects stored before the storage version moved keep their version until written
//!   again, as in etcd). A `clientConfig.service` is reached at the address a test gives it
//!   ([`Config::webhook_service_address`]). Not done: `reinvocationPolicy`, `matchConditions`,
//!   `matchPolicy: Equivalent` (matched as `Exact`), and admission of the writes of the
//!   [`ServerHandle`], of `/scale` and `/eviction`, and of the server's own controllers.
//!
//! Not simulated: authorization (whoever authenticates may do anything), admission plugins
//! other than webhooks, schema validation and
//! defaulting (`fieldValidation` is accepted and ignored), controllers
//! (a deleted namespace goes at once, as if its controller had run), managedFields, protobuf
//! and YAML bodies, aggregated discovery, the printers of the other built-ins, websockets.
//!
//! # Faults
//!
//! On the [`ServerHandle`]: [`drop_watches`](ServerHandle::drop_watches),
//! [`stall_watches`](ServerHandle::stall_watches), [`compact`](ServerHandle::compact),
//! [`set_history_limit`](ServerHandle::set_history_limit),
//! [`fail_next`](ServerHandle::fail_next) with a [`Failure`] (status, reason, message,
//! `Retry-After`, optionally only for one verb or resource: lists and watches apart),
//! [`set_delay`](ServerHandle::set_delay), [`send_bookmarks`](ServerHandle::send_bookmarks),
//! [`disrupt_next`](ServerHandle::disrupt_next) with a [`Disruption`] (a response cut short
//! mid-body without its chunked terminator, stalled after its headers or part of its body
//! until [`clear_disruptions`](ServerHandle::clear_disruptions), or slowed chunk by chunk), and
//! [`restart`](ServerHandle::restart): every connection closed at once, new ones refused for a
//! while, then the same objects and resourceVersions on the same address (watches from before
//! the restart get `410`, as from a restarted kube-apiserver's watch cache).
//!
//! # Hostile clients
//!
//! What a client sends cannot make the server panic, buffer without bound, or burn its CPU,
//! and it answers every request over HTTP, as kube-apiserver does:
//!
//! - a watch whose client stops reading is closed once
//!   [`Config::watch_buffer`] events wait for it ("Forcing watcher close due to
//!   unresponsiveness", with a `tracing` warning); [`ServerHandle::buffered_watch_events`]
//!   shows what waiting events cost;
//! - request bodies over 3 MiB get `413 RequestEntityTooLarge` (kube-apiserver's
//!   `MaxRequestBodyBytes`); JSON patches take at most 10 000 operations (413), copy at most
//!   3 MiB (422), and cannot nest an object deeper than a body can (422);
//! - a request head must arrive within 90 s of the connection's last answer (kube-apiserver's
//!   idle and header timeouts), its body within a minute (its request timeout: `504`);
//! - more than [`Config::max_watches`] open watches get `429` with `Retry-After`;
//! - label and field selectors longer than 16 KiB or with more than 100 requirements get
//!   `400`; `limit` must be an integer (anything not positive lists everything, as in
//!   kube-apiserver);
//! - a panic while serving a request (a bug) is answered with a `500 InternalError`, as
//!   kube-apiserver's panic recovery answers, and the server goes on.
//!
//! # Layers
//!
//! For a reader of the source: the modules from the bottom up. A module imports only from its
//! own line or the lines above, and no two files import each other, directly or in a circle.
//!
//! - `util`, `status`, `error`, `traffic`: helpers (times, base64, names), the `Status` errors
//!   the API answers, the crate's [`Error`], and the [`Traffic`] counters
//! - `field_labels`, `catalog`, `storage`, `kubelet_logs`, `query`, `patch`, `propagation`, `managed_fields`, `served`, `webhook_config`:
//!   the resource types and their field labels, the versioned object store, the containers'
//!   log text, list and watch parameters with their selectors, patches, field ownership
//!   (server-side apply), deletion's propagation policies, an object as it is served, and
//!   webhook configurations (admission and CRD conversion) with their match rules
//! - `auth`, `tls`, `faults`, `disrupt`, `webhook_client`: authentication, the server's
//!   certificates, the faults a test injects, and the HTTPS client that calls webhooks
//! - `printers`, `table`, `render`, `discovery`, `crd`, `watch_hub`, `admission`, `conversion`, `strategy`:
//!   responses (tables, metadata, lists), discovery documents, CRDs turned into resource types,
//!   the fan-out of each change to the open watches, admission webhook calls, CRD conversion
//!   webhook calls, and the per-type defaults and validation of writes
//! - `state`: the shared state behind one lock
//! - `list`, `registry`, `watch`, `subresources`, `pod_logs`, `garbage_collector`, `admitted`:
//!   the verbs: lists, gets and writes, watches; scale and eviction; pod logs; the collection
//!   of dependents whose owners are gone; and writes that webhooks take part in
//! - `connection`, `router`: one connection served with its bounds, and each request routed to
//!   its verb
//! - `serving`, `handle`: the accept loop with its restarts, and the [`ServerHandle`] tests drive
//! - `server`: [`Config`], [`ApiServer`] and [`serve`]: starting and stopping
//! - `testing`, `fuzz`: helpers for tests, and the fuzz target of field selectors (tests only)
//! - `scenario`: the test kit: a controller's replicas under seeded faults

#![cfg_attr(docsrs, feature(doc_cfg))]
mod admission;
mod admitted;
mod auth;
mod catalog;
mod connection;
mod conversion;
mod crd;
mod discovery;
mod disrupt;
mod error;
mod faults;
mod field_labels;
#[cfg(test)]
mod fuzz;
mod garbage_collector;
mod handle;
mod kubelet_logs;
mod list;
mod managed_fields;
mod patch;
mod pod_logs;
mod printers;
mod propagation;
mod query;
mod registry;
mod render;
mod router;
pub mod scenario;
mod served;
mod server;
mod serving;
mod state;
mod status;
mod storage;
mod strategy;
mod subresources;
mod table;
pub mod testing;
mod tls;
mod traffic;
mod util;
mod watch;
mod watch_hub;
mod webhook_client;
mod webhook_config;

pub use auth::{Authentication, ClientCertificate};
pub use catalog::ResourceType;
pub use error::{Error, Result};
pub use faults::{Disruption, DisruptionKind, Failure};
pub use handle::ServerHandle;
pub use server::{ApiServer, Config, serve};
pub use traffic::Traffic;

// The README is the crate's registry page: its examples compile as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
