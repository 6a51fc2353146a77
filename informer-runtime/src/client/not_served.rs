//! Why a list or watch of a resource answered `404`: the server does not serve it. What the
//! server's discovery documents say of its group and version turns "404 page not found" into
//! an error that says what to do (install the CRD, use a served version).
//!
//! Asked only on a `404`, at most two small GETs (`/apis/{group}/{version}`, then `/apis/{group}`),
//! each body bounded; if discovery itself fails, the server's own answer is kept.

use reqwest::Method;
use serde_json::Value;

use super::Client;
use super::body::BodyReader;
use crate::listwatch::{Error, Status};
use crate::resource::Resource;

/// Discovery documents are a few kilobytes; a larger one is not read whole.
const MAX_DISCOVERY_BODY: usize = 1024 * 1024;

/// `error` with what discovery says when it is a `404` for `K`'s collection; else `error`.
pub(crate) async fn explain<K: Resource>(client: &Client, error: Error) -> Error {
    let Error::Api(status) = &error else { return error };
    if status.code != 404 {
        return error;
    }
    let resource = crate::resource::resource_name::<K>();
    let group = if K::GROUP.is_empty() {
        "the core group".to_owned()
    } else {
        format!("the group {}", K::GROUP)
    };
    let why = match get(client, &version_path::<K>()).await {
        Some(Ok(list)) => {
            let served = list["resources"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|r| r["name"].as_str() == Some(K::PLURAL));
            if served {
                // Discovery lists it: something else answered 404 (a proxy, a namespace path).
                return error;
            }
            format!(
                "{} is served, but has no resource {}: is the CustomResourceDefinition that \
                 defines it installed?",
                K::API_VERSION,
                K::PLURAL
            )
        }
        Some(Err(404)) if !K::GROUP.is_empty() => {
            match get(client, &format!("/apis/{}", K::GROUP)).await {
                Some(Ok(group_doc)) => {
                    let versions: Vec<&str> = group_doc["versions"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|v| v["version"].as_str())
                        .collect();
                    format!(
                        "{group} is served, but not its version {} (served: {}): use a served version",
                        K::VERSION,
                        versions.join(", ")
                    )
                }
                Some(Err(404)) => format!(
                    "the server does not know {group}: install the CustomResourceDefinition that \
                 defines {resource}"
                ),
                _ => return error,
            }
        }
        _ => return error,
    };
    let message = format!(
        "{resource} ({}) is not served by the API server: {why}; the informer retries, and \
         syncs once it is served (the server said: {})",
        K::API_VERSION,
        status.message
    );
    Error::Api(Status { message, ..status.clone() })
}

/// `/apis/{group}/{version}`, or `/api/{version}` for the core group.
fn version_path<K: Resource>() -> String {
    if K::GROUP.is_empty() {
        format!("/api/{}", K::VERSION)
    } else {
        format!("/apis/{}/{}", K::GROUP, K::VERSION)
    }
}

/// A discovery document: `Ok(json)`, `Err(http code)` for an error answer, `None` when it could
/// not be had (transport, too large, not JSON).
async fn get(client: &Client, path: &str) -> Option<Result<Value, u16>> {
    let mut url = client.base_url().clone();
    let base = url.path().trim_end_matches('/').to_owned();
    url.set_path(&format!("{base}{path}"));
    url.set_query(None);
    match client.send(Method::GET, url, None).await {
        Ok(response) => {
            let mut body = BodyReader::new(response, client.limits().read_idle_timeout);
            let (bytes, read) = body.read_prefix(MAX_DISCOVERY_BODY).await;
            match read {
                Ok(true) => serde_json::from_slice(&bytes).ok().map(Ok),
                _ => None,
            }
        }
        Err(Error::Api(status)) => Some(Err(status.code)),
        Err(_) => None,
    }
}
