//! From an HTTP request to a verb: path parsing, faults, content negotiation and dispatch.
//!
//! Paths are the API server's:
//!
//! ```text
//! /version  /healthz  /livez  /readyz  /openapi/v3[/api/v1 | /apis/{group}/{version}]
//! /api  /api/v1  /apis  /apis/{group}  /apis/{group}/{version}
//! /api/v1/{resource}[/{name}[/status]]                        cluster-scoped, or all namespaces
//! /api/v1/namespaces/{namespace}/{resource}[/{name}[/status]]
//! /apis/{group}/{version}/...                                  the same, for named groups
//! ```
//!
//! with `watch/` accepted before the resource (the deprecated watch paths) and `?watch=true`.

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Request, State as AxumState};
use axum::http::request::Parts;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::catalog::ApiResource;
use super::discovery;
use super::list;
use super::patch::PatchKind;
use super::query::{FieldRequirement, ListParams, Query};
use super::registry::{self, Deleted, Part, Scope};
use super::render::{self, Output, json_response};
use super::state::Shared;
use super::status::ApiError;
use super::watch;

/// The largest request body the API server takes (3 MiB).
const MAX_BODY: usize = 3 * 1024 * 1024;

/// The router of the embedded server: every path goes to [`handle`].
pub(crate) fn router(shared: Arc<Shared>) -> Router {
    Router::new().fallback(handle).with_state(shared)
}

async fn handle(AxumState(shared): AxumState<Arc<Shared>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let delay = shared.state.lock().faults.delay;
    if let Some(delay) = delay {
        tokio::time::sleep(delay).await;
    }
    let Ok(body) = axum::body::to_bytes(body, MAX_BODY).await else {
        let message = format!("Request entity too large: limit is {MAX_BODY}");
        return ApiError::new(413, "RequestEntityTooLarge", message).into_response();
    };
    let response = match serve(&shared, &parts, &body) {
        Ok(response) => response,
        Err(error) => {
            tracing::debug!(method = %parts.method, uri = %parts.uri, %error, "request failed");
            error.into_response()
        }
    };
    tracing::debug!(method = %parts.method, uri = %parts.uri, status = response.status().as_u16(), "request");
    response
}

/// A JSON document with 200.
fn document(value: &Value) -> Response {
    json_response(StatusCode::OK, value.to_string().into_bytes())
}

fn serve(shared: &Arc<Shared>, parts: &Parts, body: &Bytes) -> Result<Response, ApiError> {
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
            let host =
                parts.headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or_default();
            get_only(document(&discovery::api_versions(host)))
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
        ["apis", group] => {
            let doc = discovery::api_group(&shared.state.lock().catalog, group);
            get_only(document(&doc.ok_or_else(ApiError::path_not_found)?))
        }
        ["apis", group, version] => get_only(resource_list(shared, group, version)?),
        ["api", "v1", rest @ ..] => resource_request(shared, parts, &query, body, "", "v1", rest),
        ["apis", group, version, rest @ ..] => {
            resource_request(shared, parts, &query, body, group, version, rest)
        }
        _ => Err(ApiError::path_not_found()),
    }
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
    let part = match subresource {
        None => Part::Main,
        Some("status") if resource.ty.status_subresource => Part::Status,
        Some(_) => return Err(ApiError::path_not_found()),
    };
    if !scoped_right {
        return Err(ApiError::path_not_found());
    }
    Ok(Target { resource, namespace, name, part, watch_path })
}

fn resource_request(
    shared: &Arc<Shared>,
    parts: &Parts,
    query: &Query,
    body: &Bytes,
    group: &str,
    version: &str,
    rest: &[&str],
) -> Result<Response, ApiError> {
    let target = target(shared, group, version, rest)?;
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
        (&Method::DELETE, None, _) if target.namespace.is_some() || !resource.ty.namespaced => {
            "deletecollection"
        }
        _ => return Err(ApiError::method_not_allowed()),
    };
    if let Some(error) =
        shared.state.lock().faults.take(verb, &resource.ty.group, &resource.ty.plural)
    {
        return Err(error);
    }
    let accept = parts.headers.get(header::ACCEPT).and_then(|a| a.to_str().ok());
    let output = render::negotiate(accept, query)?;
    let request =
        Call { shared, parts, query, body, target: &target, output, dry_run: query.dry_run()? };
    match verb {
        "watch" | "list" | "get" => request.read(verb),
        _ => request.write(verb),
    }
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

    /// An object in the negotiated representation.
    fn respond(&self, code: StatusCode, obj: &Value) -> Response {
        let body = render::object(obj, &self.target.resource, self.output).to_string();
        json_response(code, body.into_bytes())
    }

    /// `watch`, `list` and `get`.
    fn read(&self, verb: &str) -> Result<Response, ApiError> {
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
                watch::watch(self.shared, Arc::clone(resource), namespace, &params, self.output)
            }
            "list" => {
                let params = ListParams::parse(self.query, resource, false)?;
                // Items are shared: serialize them without holding the lock.
                let page = list::list(
                    &self.shared.state.lock(),
                    resource,
                    self.target.namespace,
                    &params,
                )?;
                let body = render::list(resource, &page.items, &page.meta, self.output);
                Ok(json_response(StatusCode::OK, body))
            }
            _ => {
                let rv = self.query.get("resourceVersion").unwrap_or_default();
                let obj = registry::get(&self.shared.state.lock(), self.scope(), self.name(), rv)?;
                Ok(self.respond(StatusCode::OK, &obj))
            }
        }
    }

    /// `create`, `update`, `patch`, `delete` and `deletecollection`.
    fn write(&self, verb: &str) -> Result<Response, ApiError> {
        let (shared, resource, dry_run) = (self.shared, &self.target.resource, self.dry_run);
        let (scope, name, part) = (self.scope(), self.name(), self.target.part);
        match verb {
            "create" => {
                let obj = parse_body(self.body, resource)?;
                let mut state = shared.state.lock();
                let created = registry::create(&mut state, &shared.settings, scope, obj, dry_run)?;
                Ok(self.respond(StatusCode::CREATED, &created))
            }
            "update" => {
                let obj = parse_body(self.body, resource)?;
                let mut state = shared.state.lock();
                let updated = registry::update(&mut state, scope, name, obj, part, dry_run)?;
                Ok(self.respond(StatusCode::OK, &updated))
            }
            "patch" => {
                let kind = self.patch_kind()?;
                let mut state = shared.state.lock();
                let settings = &shared.settings;
                let (obj, created) = registry::patch(
                    &mut state, settings, scope, name, kind, self.body, part, dry_run,
                )?;
                let code = if created { StatusCode::CREATED } else { StatusCode::OK };
                Ok(self.respond(code, &obj))
            }
            "delete" => {
                let options = delete_options(self.body)?;
                match registry::delete(&mut shared.state.lock(), scope, name, &options, dry_run)? {
                    Deleted::Object(obj) => Ok(self.respond(StatusCode::OK, &obj)),
                    Deleted::Status(status) => Ok(document(&status)),
                }
            }
            _ => {
                let options = delete_options(self.body)?;
                let params = ListParams::parse(self.query, resource, false)?;
                let mut state = shared.state.lock();
                let deleted =
                    registry::delete_collection(&mut state, scope, &params, &options, dry_run)?;
                let meta = render::ListMeta {
                    resource_version: state.store.resource_version().to_string(),
                    ..render::ListMeta::default()
                };
                let body = render::list(resource, &deleted, &meta, self.output);
                Ok(json_response(StatusCode::OK, body))
            }
        }
    }

    /// The patch format of the `Content-Type`; apply patches need a field manager.
    fn patch_kind(&self) -> Result<PatchKind, ApiError> {
        let content_type =
            self.parts.headers.get(header::CONTENT_TYPE).and_then(|c| c.to_str().ok());
        let kind = content_type.and_then(PatchKind::from_content_type).ok_or_else(|| {
            ApiError::unsupported_media_type(format!(
                "the body of the request was in an unknown format - accepted media types \
                 include: application/json-patch+json, application/merge-patch+json, \
                 application/apply-patch+yaml, application/strategic-merge-patch+json \
                 (got {:?})",
                content_type.unwrap_or_default()
            ))
        })?;
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
