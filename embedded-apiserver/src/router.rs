//! From an HTTP request to a verb: path parsing, faults, content negotiation and dispatch.
//!
//! Paths are the API server's:
//!
//! ```text
//! /version  /healthz  /livez  /readyz  /openapi/v3[/api/v1 | /apis/{group}/{version}]
//! /api  /api/v1  /apis  /apis/{group}  /apis/{group}/{version}
//! /api/v1/{resource}[/{name}[/status]]                        cluster-scoped, or all namespaces
//! /api/v1/namespaces/{namespace}/{resource}[/{name}[/status | /scale | /eviction | /log]]
//! /apis/{group}/{version}/...                                  the same, for named groups
//! ```
//!
//! with `watch/` accepted before the resource (the deprecated watch paths) and `?watch=true`.
//! Paths of unknown groups and paths outside these get the HTTP mux's plain-text
//! `404 page not found`; unknown versions, resources and subresources of served groups get a
//! `Status` (404 `NotFound`), as kube-apiserver answers.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State as AxumState};
use axum::http::request::Parts;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::{FutureExt, StreamExt};
use parking_lot::MutexGuard;
use serde_json::{Value, json};

use crate::admission::Warnings;
use crate::admitted::{self, Write};
use crate::catalog::ApiResource;
use crate::conversion::{self, Converter};
use crate::discovery;
use crate::disrupt::disrupt;
use crate::list;
use crate::patch::PatchKind;
use crate::pod_logs;
use crate::query::{FieldRequirement, ListParams, Query};
use crate::registry::{self, Deleted, Part, Scope};
use crate::render::{self, Output, json_response};
use crate::served::ListMeta;
use crate::state::{Shared, State};
use crate::status::ApiError;
use crate::subresources::{self, Subresource};
use crate::watch;

/// The largest request body the API server takes (kube-apiserver's `MaxRequestBodyBytes`,
/// 3 MiB); a larger one gets `413 RequestEntityTooLarge`.
const MAX_BODY: usize = 3 * 1024 * 1024;

/// How much of a body over [`MAX_BODY`] is read and thrown away before the 413 is sent, and
/// for how long at most. A client that writes its whole body before it reads (most do) would
/// otherwise find the connection reset under it and never read the answer. Go's HTTP server,
/// which kube-apiserver runs on, does the same on a smaller scale (it discards up to 256 KiB,
/// then closes its side and lingers); past these bounds the connection is closed after the
/// 413 all the same.
const DISCARD_MAX: usize = 64 * 1024 * 1024;
const DISCARD_FOR: Duration = Duration::from_secs(10);

/// How long a request body may take to arrive: kube-apiserver's default request timeout
/// (`--request-timeout`, one minute), which its timeout filter answers with a `504 Timeout`.
const BODY_TIMEOUT: Duration = Duration::from_secs(60);

/// The router of the embedded server: every path goes to [`handle`].
pub(crate) fn router(shared: Arc<Shared>) -> Router {
    Router::new().fallback(handle).with_state(shared)
}

/// Serves one request. A panic while serving it is a bug, but it still gets an answer, a
/// `500 InternalError`, as kube-apiserver's panic recovery filter (`WithPanicRecovery`)
/// answers, and the server goes on serving.
async fn handle(AxumState(shared): AxumState<Arc<Shared>>, request: Request) -> Response {
    let (method, uri) = (request.method().clone(), request.uri().clone());
    match AssertUnwindSafe(serve_request(shared, request)).catch_unwind().await {
        Ok(response) => response,
        Err(panic) => {
            let why = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            tracing::error!(%method, %uri, %why, "the embedded API server panicked serving a request");
            let message = format!(
                "Internal error occurred: the embedded API server panicked serving {method} \
                 {uri}: {why} (a bug: please report it)"
            );
            ApiError::new(500, "InternalError", message).into_response()
        }
    }
}

async fn serve_request(shared: Arc<Shared>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let delay = shared.state.lock().faults.delay;
    if let Some(delay) = delay {
        tokio::time::sleep(delay).await;
    }
    let body = match tokio::time::timeout(BODY_TIMEOUT, read_body(&parts, body)).await {
        Ok(Ok(body)) => body,
        Ok(Err(response)) => return response,
        Err(_) => {
            let message = "Timeout: request did not complete within requested timeout - the \
                           request body took longer than a minute to arrive";
            let mut timeout = ApiError::new(504, "Timeout", message);
            timeout.details = Some(Box::default());
            let mut response = timeout.into_response();
            // The rest of the body may still come: this connection carries no other request.
            response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
            return response;
        }
    };
    let response = match serve(&shared, &parts, &body).await {
        Ok(response) => response,
        Err(error) => {
            tracing::debug!(method = %parts.method, uri = %parts.uri, %error, "request failed");
            error.into_response()
        }
    };
    tracing::debug!(method = %parts.method, uri = %parts.uri, status = response.status().as_u16(), "request");
    response
}

/// The whole request body, at most [`MAX_BODY`] bytes; else the answer to send instead: 413
/// for a larger body, 400 for one that broke off.
async fn read_body(parts: &Parts, body: Body) -> Result<Bytes, Response> {
    let too_large = |all_read: bool| {
        let message = format!("Request entity too large: limit is {MAX_BODY}");
        let mut response = ApiError::new(413, "RequestEntityTooLarge", message).into_response();
        if !all_read {
            // The rest of the body is still coming: this connection cannot carry another request.
            response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
        response
    };
    let declared = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > (MAX_BODY + DISCARD_MAX) as u64) {
        return Err(too_large(false));
    }
    let mut chunks = body.into_data_stream();
    let mut bytes = Vec::new();
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.map_err(|error| {
            let message = format!("error reading the request body: {error}");
            ApiError::bad_request(message).into_response()
        })?;
        if bytes.len() + chunk.len() > MAX_BODY {
            // Read the rest (bounded) so that the client is still reading when the 413 comes.
            let mut discarded = bytes.len() + chunk.len();
            drop(bytes);
            let discard = async {
                while let Some(Ok(chunk)) = chunks.next().await {
                    discarded += chunk.len();
                    if discarded > MAX_BODY + DISCARD_MAX {
                        return false;
                    }
                }
                true
            };
            let all_read = tokio::time::timeout(DISCARD_FOR, discard).await.unwrap_or(false);
            return Err(too_large(all_read));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(Bytes::from(bytes))
}

/// A JSON document with 200.
fn document(value: &Value) -> Response {
    json_response(StatusCode::OK, value.to_string().into_bytes())
}

async fn serve(shared: &Arc<Shared>, parts: &Parts, body: &Bytes) -> Result<Response, ApiError> {
    let segments: Vec<&str> = parts.uri.path().split('/').filter(|s| !s.is_empty()).collect();
    let query = Query::parse(parts.uri.query());
    let get_only = |response: Response| {
        if parts.method == Method::GET { Ok(response) } else { Err(ApiError::method_not_allowed()) }
    };
    match segments.as_slice() {
        [] => get_only(document(
            &json!({"paths": ["/api", "/api/v1", "/apis", "/openapi/v3", "/version"]}),
        )),
        ["version"] => get_only(document(&discovery::version())),
        ["healthz" | "livez" | "readyz"] => {
            let mut response = (StatusCode::OK, "ok").into_response();
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/plain; charset=utf-8"),
            );
            get_only(response)
        }
        ["api"] => {
            // HTTP/2 carries the host in the `:authority` pseudo-header, which is the URI's.
            let host = parts.headers.get(header::HOST).and_then(|h| h.to_str().ok());
            let host =
                host.or_else(|| parts.uri.authority().map(axum::http::uri::Authority::as_str));
            get_only(document(&discovery::api_versions(host.unwrap_or_default())))
        }
        ["apis"] => get_only(document(&discovery::api_group_list(&shared.state.lock().catalog))),
        ["openapi", "v3"] => {
            get_only(document(&discovery::openapi_index(&shared.state.lock().catalog)))
        }
        ["openapi", "v3", "api", version] => openapi(shared, "", version).and_then(get_only),
        ["openapi", "v3", "apis", group, version] => {
            openapi(shared, group, version).and_then(get_only)
        }
        ["api", "v1"] => get_only(resource_list(shared, "", "v1")?),
        ["api", "v1", rest @ ..] => {
            resource_request(shared, parts, &query, body, "", "v1", rest).await
        }
        // Another core version: the core group's handler answers, with a Status.
        ["api", ..] => Err(ApiError::path_not_found()),
        ["apis", group, ..] if !serves_group(shared, group) => Ok(page_not_found()),
        ["apis", group] => {
            let doc = discovery::api_group(&shared.state.lock().catalog, group);
            get_only(document(&doc.ok_or_else(ApiError::path_not_found)?))
        }
        ["apis", group, version] => get_only(resource_list(shared, group, version)?),
        ["apis", group, version, rest @ ..] => {
            resource_request(shared, parts, &query, body, group, version, rest).await
        }
        _ => Ok(page_not_found()),
    }
}

/// Whether any version of `group` is served.
fn serves_group(shared: &Shared, group: &str) -> bool {
    shared.state.lock().catalog.serves_group(group)
}

/// The answer to a path no API handler owns (an unknown group, a path outside `/api` and
/// `/apis`): the API server's HTTP mux answers it as Go's `http.NotFound` does, in plain text,
/// not with a `Status`.
fn page_not_found() -> Response {
    let mut response = (StatusCode::NOT_FOUND, "404 page not found\n").into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    headers.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    response
}

fn openapi(shared: &Shared, group: &str, version: &str) -> Result<Response, ApiError> {
    let doc = discovery::openapi_document(&shared.state.lock().catalog, group, version);
    Ok(document(&doc.ok_or_else(ApiError::path_not_found)?))
}

fn resource_list(shared: &Shared, group: &str, version: &str) -> Result<Response, ApiError> {
    let doc = discovery::resource_list(&shared.state.lock().catalog, group, version);
    Ok(document(&doc.ok_or_else(ApiError::path_not_found)?))
}

/// A request for a resource, its objects, or one object's subresource.
struct Target<'a> {
    resource: Arc<ApiResource>,
    namespace: Option<&'a str>,
    name: Option<&'a str>,
    part: Part,
    /// A subresource that is not the object (`scale`, `pods/eviction`, `pods/log`).
    sub: Option<Subresource>,
    /// Came through a `/watch/` path.
    watch_path: bool,
}

/// Parses what follows `/api/v1` or `/apis/{group}/{version}`.
fn target<'a>(
    shared: &Shared,
    group: &str,
    version: &str,
    rest: &[&'a str],
) -> Result<Target<'a>, ApiError> {
    let (watch_path, rest) = match rest {
        ["watch", rest @ ..] => (true, rest),
        _ => (false, rest),
    };
    let (namespace, rest) = match rest {
        ["namespaces", ns, plural, rest @ ..] if !matches!(*plural, "status" | "finalize") => {
            (Some(*ns), std::iter::once(plural).chain(rest).copied().collect::<Vec<_>>())
        }
        _ => (None, rest.to_vec()),
    };
    let (plural, name, subresource) = match rest.as_slice() {
        [plural] => (*plural, None, None),
        [plural, name] => (*plural, Some(*name), None),
        [plural, name, sub] => (*plural, Some(*name), Some(*sub)),
        _ => return Err(ApiError::path_not_found()),
    };
    let resource = shared
        .state
        .lock()
        .catalog
        .find(group, version, plural)
        .ok_or_else(ApiError::path_not_found)?;
    let scoped_right = match (resource.ty.namespaced, namespace, name) {
        // In its namespace, cluster-scoped, or across all namespaces (collections only).
        (true, Some(_), _) | (false, None, _) | (true, None, None) => true,
        (true, None, Some(_)) | (false, Some(_), _) => false,
    };
    let pods = resource.builtin && resource.ty.group.is_empty() && resource.ty.plural == "pods";
    let (part, sub) = match subresource {
        None => (Part::Main, None),
        Some("status") if resource.ty.status_subresource => (Part::Status, None),
        Some("scale") if resource.scale.is_some() => (Part::Main, Some(Subresource::Scale)),
        Some("eviction") if pods => (Part::Main, Some(Subresource::Eviction)),
        Some("log") if pods => (Part::Main, Some(Subresource::Log)),
        Some(_) => return Err(ApiError::path_not_found()),
    };
    if !scoped_right {
        return Err(ApiError::path_not_found());
    }
    Ok(Target { resource, namespace, name, part, sub, watch_path })
}

async fn resource_request(
    shared: &Arc<Shared>,
    parts: &Parts,
    query: &Query,
    body: &Bytes,
    group: &str,
    version: &str,
    rest: &[&str],
) -> Result<Response, ApiError> {
    let target = target(shared, group, version, rest)?;
    if let (Some(sub), Some(name)) = (target.sub, target.name) {
        return subresource(shared, parts, query, body, &target, sub, name);
    }
    let resource = &target.resource;
    let watch = target.watch_path || query.bool("watch")?.unwrap_or(false);
    let verb = match (&parts.method, target.name, watch) {
        (&Method::GET, _, true) => "watch",
        (&Method::GET, None, false) => "list",
        (&Method::GET, Some(_), false) => "get",
        (&Method::POST, None, _) if target.namespace.is_some() || !resource.ty.namespaced => {
            "create"
        }
        (&Method::PUT, Some(_), _) => "update",
        (&Method::PATCH, Some(_), _) => "patch",
        (&Method::DELETE, Some(_), _) => "delete",
        (&Method::DELETE, None, _)
            if resource.verbs.contains(&"deletecollection")
                && (target.namespace.is_some() || !resource.ty.namespaced) =>
        {
            "deletecollection"
        }
        _ => return Err(ApiError::method_not_allowed()),
    };
    let (group, plural) = (&resource.ty.group, &resource.ty.plural);
    let disruption = {
        let mut state = shared.state.lock();
        if let Some(error) = state.faults.take(verb, group, plural) {
            return Err(error);
        }
        state.faults.take_disruption(verb, group, plural)
    };
    let served = async {
        let accept = parts.headers.get(header::ACCEPT).and_then(|a| a.to_str().ok());
        let output = render::negotiate(accept, query)?;
        let dry_run = query.dry_run()?;
        let request = Call { shared, parts, query, body, target: &target, output, dry_run };
        match verb {
            "watch" | "list" | "get" => request.read(verb).await,
            _ => request.write(verb).await,
        }
    }
    .await;
    let Some((kind, release)) = disruption else { return served };
    // Whatever the answer, its body is what the disruption acts on.
    let response = served.unwrap_or_else(IntoResponse::into_response);
    Ok(disrupt(response, kind, release, shared.shutdown.clone()))
}

/// A request for `scale`, `pods/eviction` or `pods/log` (see [`crate::subresources`] and
/// [`crate::pod_logs`]): JSON in and out (logs: text out), no faults, no tables.
fn subresource(
    shared: &Arc<Shared>,
    parts: &Parts,
    query: &Query,
    body: &Bytes,
    target: &Target<'_>,
    sub: Subresource,
    name: &str,
) -> Result<Response, ApiError> {
    let scope = Scope { resource: &target.resource, namespace: target.namespace };
    if !shared.state.lock().catalog.serves(&target.resource) {
        return Err(ApiError::path_not_found());
    }
    if sub == Subresource::Log {
        if parts.method != Method::GET {
            return Err(ApiError::method_not_allowed());
        }
        return pod_logs::serve(shared, scope, name, query);
    }
    let content_type = parts.headers.get(header::CONTENT_TYPE).and_then(|c| c.to_str().ok());
    let request = subresources::Request {
        method: &parts.method,
        scope,
        name,
        body,
        content_type,
        dry_run: query.dry_run()?,
    };
    subresources::serve(&mut shared.state.lock(), sub, &request)
}

/// One resource request, its verb decided.
struct Call<'a> {
    shared: &'a Arc<Shared>,
    parts: &'a Parts,
    query: &'a Query,
    body: &'a Bytes,
    target: &'a Target<'a>,
    output: Output,
    dry_run: bool,
}

impl Call<'_> {
    fn scope(&self) -> Scope<'_> {
        Scope { resource: &self.target.resource, namespace: self.target.namespace }
    }

    fn name(&self) -> &str {
        self.target.name.unwrap_or_default()
    }

    /// Who writes: the `fieldManager` parameter, else (kube-apiserver's
    /// `prefixFromUserAgent`) the User-Agent up to its first `/`.
    fn writer(&self) -> crate::managed_fields::Writer {
        let manager =
            if let Some(manager) = self.query.get("fieldManager").filter(|m| !m.is_empty()) {
                manager.to_owned()
            } else {
                let agent = self.parts.headers.get(header::USER_AGENT);
                let agent = agent.and_then(|a| a.to_str().ok()).unwrap_or_default();
                agent.split('/').next().unwrap_or_default().to_owned()
            };
        registry::writer(self.scope(), self.target.part, &manager)
    }

    /// The server's state, locked, once it is known that the resource the request was routed
    /// to is still served (see [`Catalog::serves`](crate::catalog::Catalog::serves)): a CRD
    /// deleted and created again with another scope between the two must not take a
    /// namespaced write into its cluster-scoped storage.
    fn state(&self) -> Result<MutexGuard<'_, State>, ApiError> {
        let state = self.shared.state.lock();
        if state.catalog.serves(&self.target.resource) {
            Ok(state)
        } else {
            Err(ApiError::path_not_found())
        }
    }

    /// An object in the negotiated representation. As in kube-apiserver, a write is done
    /// (committed) before its answer is rendered, and may still end in a 406.
    fn respond(&self, code: StatusCode, obj: &Value) -> Result<Response, ApiError> {
        let body = render::object(obj, &self.target.resource, self.output)?.to_string();
        Ok(json_response(code, body.into_bytes()))
    }

    /// `watch`, `list` and `get`; objects of a CRD with a conversion webhook are converted to
    /// the version asked for (see `conversion.rs`).
    async fn read(&self, verb: &str) -> Result<Response, ApiError> {
        let resource = &self.target.resource;
        match verb {
            "watch" => {
                let mut params = ListParams::parse(self.query, resource, true)?;
                if let Some(name) = self.target.name {
                    // A watch of one object is a watch of its collection for that name.
                    params.field_selector.push(FieldRequirement {
                        field: "metadata.name".to_owned(),
                        equals: true,
                        value: name.to_owned(),
                    });
                }
                let namespace = self.target.namespace;
                let converter = conversion::needed(resource).then(|| Converter {
                    client: Arc::clone(&self.shared.webhooks),
                    resource: Arc::clone(resource),
                });
                let (shared, output) = (self.shared, self.output);
                watch::watch(shared, Arc::clone(resource), namespace, &params, output, converter)
            }
            "list" => {
                let params = ListParams::parse(self.query, resource, false)?;
                // Items are shared: serialize them without holding the lock.
                let page = list::list(&*self.state()?, resource, self.target.namespace, &params)?;
                let items = admitted::converted(self.shared, resource, page.items).await?;
                render::list_response(resource, items, &page.meta, self.output)
            }
            _ => {
                let rv = self.query.get("resourceVersion").unwrap_or_default();
                let obj = registry::get(&*self.state()?, self.scope(), self.name(), rv)?;
                let obj = admitted::converted(self.shared, resource, vec![obj]).await?;
                self.respond(StatusCode::OK, obj.first().map_or(&Value::Null, |o| &**o))
            }
        }
    }

    /// `create`, `update`, `patch`, `delete` and `deletecollection`: through the webhooks when
    /// any take part (see `admitted.rs`), else at once under the lock.
    async fn write(&self, verb: &str) -> Result<Response, ApiError> {
        if admitted::needed(&*self.state()?, &self.target.resource) {
            return Ok(self.write_admitted(verb).await);
        }
        self.write_now(verb)
    }

    /// A write that webhooks take part in. Whatever its outcome, the answer carries the
    /// webhooks' warnings as `Warning` headers.
    async fn write_admitted(&self, verb: &str) -> Response {
        let mut warnings = Warnings::default();
        let outcome = self.admitted(verb, &mut warnings).await;
        let mut response = outcome.unwrap_or_else(IntoResponse::into_response);
        for warning in warnings.headers() {
            // Go writes the text's bytes as they are: UTF-8 is `obs-text` to HTTP.
            if let Ok(value) = HeaderValue::from_bytes(warning.as_bytes()) {
                response.headers_mut().append(header::WARNING, value);
            }
        }
        response
    }

    async fn admitted(&self, verb: &str, warnings: &mut Warnings) -> Result<Response, ApiError> {
        let resource = &self.target.resource;
        let write = Write {
            shared: self.shared,
            resource,
            namespace: self.target.namespace,
            name: self.name(),
            part: self.target.part,
            dry_run: self.dry_run,
            writer: self.writer(),
            field_manager: self.query.get("fieldManager"),
        };
        match verb {
            "create" => {
                self.check_body_type()?;
                let obj = parse_body(self.body, resource)?;
                let created = write.create(obj, warnings).await?;
                self.respond(StatusCode::CREATED, &created)
            }
            "update" => {
                self.check_body_type()?;
                let obj = parse_body(self.body, resource)?;
                let updated = write.update(obj, warnings).await?;
                self.respond(StatusCode::OK, &updated)
            }
            "patch" => {
                let kind = self.patch_kind()?;
                let force = self.query.get("force") == Some("true");
                let (obj, created) = write.patch(kind, self.body, force, warnings).await?;
                let code = if created { StatusCode::CREATED } else { StatusCode::OK };
                self.respond(code, &obj)
            }
            "delete" => {
                self.check_body_type()?;
                let options = delete_options(self.body)?;
                match write.delete(&options, warnings).await? {
                    Deleted::Object(obj) => self.respond(StatusCode::OK, &obj),
                    Deleted::Status(status) => Ok(document(&status)),
                }
            }
            _ => {
                self.check_body_type()?;
                let options = delete_options(self.body)?;
                let params = ListParams::parse(self.query, resource, false)?;
                let deleted = write.delete_collection(&params, &options, warnings).await?;
                let resource_version = self.state()?.store.resource_version().to_string();
                let meta = ListMeta { resource_version, ..ListMeta::default() };
                let body = render::list(resource, &deleted, &meta, self.output)?;
                Ok(json_response(StatusCode::OK, body))
            }
        }
    }

    /// A write no webhook takes part in: done under the lock, at once.
    fn write_now(&self, verb: &str) -> Result<Response, ApiError> {
        let (shared, resource, dry_run) = (self.shared, &self.target.resource, self.dry_run);
        let (scope, name, part) = (self.scope(), self.name(), self.target.part);
        match verb {
            "create" => {
                self.check_body_type()?;
                let obj = parse_body(self.body, resource)?;
                let mut state = self.state()?;
                let writer = self.writer();
                let settings = &shared.settings;
                let created =
                    registry::create_by(&mut state, settings, scope, obj, dry_run, &writer, false)?;
                self.respond(StatusCode::CREATED, &created)
            }
            "update" => {
                self.check_body_type()?;
                let obj = parse_body(self.body, resource)?;
                let mut state = self.state()?;
                let writer = self.writer();
                let updated = registry::update_by(
                    &mut state, scope, name, obj, part, dry_run, &writer, false,
                )?;
                self.respond(StatusCode::OK, &updated)
            }
            "patch" => {
                let kind = self.patch_kind()?;
                let mut state = self.state()?;
                let settings = &shared.settings;
                let writer = self.writer();
                let force = self.query.get("force") == Some("true");
                let (obj, created) = registry::patch_by(
                    &mut state, settings, scope, name, kind, self.body, part, dry_run, &writer,
                    force,
                )?;
                let code = if created { StatusCode::CREATED } else { StatusCode::OK };
                self.respond(code, &obj)
            }
            "delete" => {
                self.check_body_type()?;
                let options = delete_options(self.body)?;
                match registry::delete(&mut *self.state()?, scope, name, &options, dry_run)? {
                    Deleted::Object(obj) => self.respond(StatusCode::OK, &obj),
                    Deleted::Status(status) => Ok(document(&status)),
                }
            }
            _ => {
                self.check_body_type()?;
                let options = delete_options(self.body)?;
                let params = ListParams::parse(self.query, resource, false)?;
                let mut state = self.state()?;
                let deleted =
                    registry::delete_collection(&mut state, scope, &params, &options, dry_run)?;
                let meta = ListMeta {
                    resource_version: state.store.resource_version().to_string(),
                    ..ListMeta::default()
                };
                let body = render::list(resource, &deleted, &meta, self.output)?;
                Ok(json_response(StatusCode::OK, body))
            }
        }
    }

    /// The `Content-Type` of a body the server decodes as an object: JSON, or no type at all
    /// (what kube-apiserver also takes as JSON). YAML and protobuf are the server's other
    /// formats; this server reads their JSON subset only, so it lets them through to the JSON
    /// decoder. Anything else is a 415, as the API server's decoder negotiation answers.
    fn check_body_type(&self) -> Result<(), ApiError> {
        if self.body.iter().all(u8::is_ascii_whitespace) {
            // Nothing to decode (a DELETE without options): the type does not matter.
            return Ok(());
        }
        let content_type =
            self.parts.headers.get(header::CONTENT_TYPE).and_then(|c| c.to_str().ok());
        let media = content_type.unwrap_or_default().split(';').next().unwrap_or_default();
        match media.trim().to_ascii_lowercase().as_str() {
            ""
            | "application/json"
            | "application/yaml"
            | "application/vnd.kubernetes.protobuf" => Ok(()),
            _ => Err(ApiError::unsupported_media_type(
                "the body of the request was in an unknown format - accepted media types \
                 include: application/json, application/yaml, application/vnd.kubernetes.protobuf",
            )),
        }
    }

    /// The patch format of the `Content-Type`; apply patches need a field manager.
    fn patch_kind(&self) -> Result<PatchKind, ApiError> {
        let content_type =
            self.parts.headers.get(header::CONTENT_TYPE).and_then(|c| c.to_str().ok());
        // The PATCH route declares the patch types it consumes, so the HTTP router (not the
        // decoder) refuses any other type, with its own terse message.
        let kind = content_type
            .and_then(PatchKind::from_content_type)
            .ok_or_else(ApiError::unsupported_patch_type)?;
        if kind == PatchKind::StrategicMerge && self.target.resource.crd.is_some() {
            // A custom resource has no Go types to say how its lists merge: the apiextensions
            // server's patch handler takes the other three formats only (its
            // `supportedTypes`), and refuses the rest before it reads the object.
            return Err(ApiError::unsupported_media_type(
                "the body of the request was in an unknown format - accepted media types \
                 include: application/json-patch+json, application/merge-patch+json, \
                 application/apply-patch+yaml",
            ));
        }
        if kind == PatchKind::Apply && self.query.get("fieldManager").is_none_or(str::is_empty) {
            let why = "Required value: is required for apply patch".to_owned();
            let error = ("fieldManager", "FieldValueRequired", why);
            return Err(ApiError::invalid("PatchOptions", "meta.k8s.io", "", &[error]));
        }
        Ok(kind)
    }
}

/// The JSON object of a create or update.
fn parse_body(body: &Bytes, resource: &ApiResource) -> Result<Value, ApiError> {
    serde_json::from_slice::<Value>(body).map_err(|e| {
        ApiError::bad_request(format!(
            "the object provided is unrecognized (must be of type {}): couldn't get version/kind; \
             json parse error: {e}",
            resource.ty.kind
        ))
    })
}

/// The `DeleteOptions` of a DELETE (an empty body is none).
fn delete_options(body: &Bytes) -> Result<Value, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(json!({}));
    }
    serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("invalid DeleteOptions: {e}")))
}
