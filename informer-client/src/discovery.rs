//! What the API server's discovery documents say of a resource: its kind and scope, for an
//! informer of a resource known only at run time, and, when a list or watch answered `404`, why
//! it is not served.
//!
//! - [`Client::discover`] reads `/api/{version}` or `/apis/{group}/{version}` and finds the
//!   resource's kind and scope: what a [dynamic informer](informer_runtime::dynamic) needs before its
//!   first list.
//! - [`Client::resolve`] finds a resource by the name kubectl accepts (`pods`, `pod`, `po`,
//!   `deployments.apps`, `Deployment`), in the preferred version of its group.
//! - On a `404`, [`explain`] turns "404 page not found" into an error that says what to do
//!   (install the CRD, use a served version): at most two small GETs
//!   (`/apis/{group}/{version}`, then `/apis/{group}`); if discovery itself fails, the server's
//!   own answer is kept.
//!
//! Every discovery body is bounded ([`MAX_DISCOVERY_BODY`]) and read under the client's idle
//! deadline.

use http::Method;
use serde::Deserialize;
use serde_json::Value;

use super::Client;
use super::body::{BodyReader, ReadError};
use super::error::transport_error;
use super::error::{ClientError, Result};
use informer_runtime::listwatch::{Error, Status};
use informer_runtime::resource::{ApiResource, GroupVersionResource};

/// Discovery documents are a few kilobytes (the core group's is the largest, about 10 KiB); a
/// larger one is not read whole.
const MAX_DISCOVERY_BODY: usize = 1024 * 1024;

/// One entry of an `APIResourceList`. A `null` field reads as its zero value, as Go reads it
/// (an aggregated API server not written in Go may send one).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DiscoveredResource {
    #[serde(deserialize_with = "null_as_default")]
    pub(crate) name: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub(crate) singular_name: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub(crate) namespaced: bool,
    #[serde(default, deserialize_with = "null_as_default")]
    pub(crate) kind: String,
    #[serde(default, deserialize_with = "null_strings")]
    pub(crate) short_names: Vec<String>,
}

/// `null` as `T`'s zero value.
fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// A list of strings, `null` for the list or any of its strings read as empty.
fn null_strings<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<String>, D::Error> {
    let strings = Option::<Vec<Option<String>>>::deserialize(deserializer)?.unwrap_or_default();
    Ok(strings.into_iter().map(Option::unwrap_or_default).collect())
}

/// `/apis/{group}/{version}`, or `/api/{version}` for the core group.
fn version_path(group: &str, version: &str) -> String {
    if group.is_empty() { format!("/api/{version}") } else { format!("/apis/{group}/{version}") }
}

/// The resources of one group version, without subresources (`pods/log`). An entry that is no
/// object (serde would read an array as the fields in order, Go refuses it), has no name, or a
/// field of another type is skipped.
pub(crate) fn resources_of(list: &Value) -> impl Iterator<Item = DiscoveredResource> + '_ {
    list["resources"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r.is_object())
        .filter_map(|r| DiscoveredResource::deserialize(r).ok())
        .filter(|r| !r.name.is_empty() && !r.name.contains('/'))
}

/// The groups of an `APIGroupList` (`/apis`), each with its versions, the preferred one first;
/// only `group` when one is given. Entries without a name are skipped.
pub(crate) fn groups_of(apis: &Value, group: Option<&str>) -> Vec<(String, Vec<String>)> {
    let mut groups = Vec::new();
    for entry in apis["groups"].as_array().into_iter().flatten() {
        let Some(group_name) = entry["name"].as_str() else { continue };
        if group.is_some_and(|g| g != group_name) {
            continue;
        }
        let preferred = entry["preferredVersion"]["version"].as_str();
        let mut versions: Vec<String> = preferred.map(ToOwned::to_owned).into_iter().collect();
        let others = entry["versions"].as_array().into_iter().flatten();
        for version in others.filter_map(|v| v["version"].as_str()) {
            if Some(version) != preferred {
                versions.push(version.to_owned());
            }
        }
        groups.push((group_name.to_owned(), versions));
    }
    groups
}

/// The versions an `APIGroup` document (`/apis/{group}`) lists, in its order.
pub(crate) fn versions_of(group_doc: &Value) -> Vec<&str> {
    group_doc["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v["version"].as_str())
        .collect()
}

/// A discovery document's body as JSON; the error names the document.
pub(crate) fn parse_document(path: &str, body: &[u8]) -> Result<Value, Error> {
    serde_json::from_slice(body)
        .map_err(|e| Error::Decode(format!("discovery document {path}: {e}")))
}

impl DiscoveredResource {
    pub(crate) fn into_api_resource(self, group: &str, version: &str) -> ApiResource {
        ApiResource {
            group: group.to_owned(),
            version: version.to_owned(),
            kind: self.kind,
            plural: self.name,
            namespaced: self.namespaced,
        }
    }

    /// Whether kubectl would take `name` for this resource: its plural, singular, kind or a
    /// short name, in any case.
    pub(crate) fn answers_to(&self, name: &str) -> bool {
        self.name.eq_ignore_ascii_case(name)
            || self.singular_name.eq_ignore_ascii_case(name)
            || self.kind.eq_ignore_ascii_case(name)
            || self.short_names.iter().any(|s| s.eq_ignore_ascii_case(name))
    }
}

impl Client {
    /// The kind and scope of `gvr`, from the API server's discovery document of its group
    /// version: what an informer of a resource known only at run time needs.
    ///
    /// # Errors
    ///
    /// [`ClientError::Api`] with status `404` when the server does not serve the resource; its
    /// message says why (unknown group, unserved version, no such resource: is the CRD
    /// installed?). [`ClientError::Request`] when discovery could not be read.
    ///
    /// ```no_run
    /// # async fn run(client: informer_client::Client) -> informer_client::Result<()> {
    /// use informer_runtime::GroupVersionResource;
    /// let deployments = client.discover(&GroupVersionResource::new("apps", "v1", "deployments")).await?;
    /// assert_eq!((deployments.kind.as_str(), deployments.namespaced), ("Deployment", true));
    /// # Ok(()) }
    /// ```
    pub async fn discover(&self, gvr: &GroupVersionResource) -> Result<ApiResource> {
        let path = version_path(&gvr.group, &gvr.version);
        discover(self, gvr).await.map_err(|e| ClientError::request("GET", path, e))
    }

    /// The resource kubectl would take `name` for: a plural (`pods`), singular (`pod`), kind
    /// (`Pod`) or short name (`po`), in any case, optionally followed by `.group`
    /// (`deployments.apps`, `widgets.example.com`) or `.version.group` (`deployments.v1.apps`);
    /// the core group first, and in each group the preferred version first, then the others.
    ///
    /// # Errors
    ///
    /// [`ClientError::Api`] with status `404` when no served resource answers to `name`;
    /// [`ClientError::Request`] when discovery could not be read.
    ///
    /// ```no_run
    /// # async fn run(client: informer_client::Client) -> informer_client::Result<()> {
    /// let deployments = client.resolve("deploy").await?;
    /// assert_eq!(deployments.to_string(), "deployments.apps");
    /// # Ok(()) }
    /// ```
    pub async fn resolve(&self, name: &str) -> Result<ApiResource> {
        resolve(self, name).await.map_err(|e| ClientError::request("GET", "/apis".to_owned(), e))
    }
}

/// See [`Client::discover`].
pub(crate) async fn discover(
    client: &Client,
    gvr: &GroupVersionResource,
) -> Result<ApiResource, Error> {
    let path = version_path(&gvr.group, &gvr.version);
    let list = match get(client, &path).await {
        Ok(list) => list,
        Err(error) => return Err(explain(client, gvr, error).await),
    };
    if let Some(found) = resources_of(&list).find(|r| r.name == gvr.resource) {
        return Ok(found.into_api_resource(&gvr.group, &gvr.version));
    }
    let status = Status::new(404, "NotFound", format!("{path} has no resource {}", gvr.resource));
    Err(explain(client, gvr, Error::Api(status)).await)
}

/// See [`Client::resolve`].
async fn resolve(client: &Client, name: &str) -> Result<ApiResource, Error> {
    let name = name.to_ascii_lowercase();
    // `deployments.v1.apps` names a version too: tried first, as kubectl does, then
    // `deployments.apps` with `v1.apps` as the group.
    let mut parts = name.splitn(3, '.');
    if let (Some(resource), Some(version), Some(group)) = (parts.next(), parts.next(), parts.next())
        && let Ok(list) = get(client, &version_path(group, version)).await
        && let Some(found) = resources_of(&list).find(|r| r.answers_to(resource))
    {
        return Ok(found.into_api_resource(group, version));
    }
    // `deployments.apps`: the group follows the first dot. A bare name is looked for in the
    // core group first, then in every group, as kubectl does.
    let (resource, group) = match name.split_once('.') {
        Some((resource, group)) => (resource, Some(group)),
        None => (name.as_str(), None),
    };
    // Each group with its versions, the preferred one first: a resource served only in another
    // version (an alpha kind beside a group's stable ones) is found there.
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    if group.is_none() {
        groups.push((String::new(), vec!["v1".to_owned()]));
    }
    let apis = get(client, "/apis").await?;
    groups.extend(groups_of(&apis, group));
    for (group_name, versions) in &groups {
        for version in versions {
            let list = match get(client, &version_path(group_name, version)).await {
                Ok(list) => list,
                // A group whose discovery fails (an aggregated API that is down) hides only its
                // own resources, as in kubectl.
                Err(error) => {
                    tracing::debug!(group = %group_name, %version, %error, "discovery of a group version failed");
                    continue;
                }
            };
            if let Some(found) = resources_of(&list).find(|r| r.answers_to(resource)) {
                return Ok(found.into_api_resource(group_name, version));
            }
        }
    }
    let message = match group {
        Some(group) => format!(
            "the server has no resource {resource:?} in the group {group:?}: see `kubectl \
             api-resources --api-group={group}`"
        ),
        None => format!(
            "the server has no resource {resource:?}: see `kubectl api-resources` for the names \
             it serves"
        ),
    };
    Err(Error::Api(Status::new(404, "NotFound", message)))
}

/// `error` with what discovery says when it is a `404` for `gvr`'s collection; else `error`.
pub(crate) async fn explain(client: &Client, gvr: &GroupVersionResource, error: Error) -> Error {
    let Error::Api(status) = &error else { return error };
    if status.code != 404 {
        return error;
    }
    let resource = gvr.qualified_name();
    let api_version = gvr.api_version();
    let group = if gvr.group.is_empty() {
        "the core group".to_owned()
    } else {
        format!("the group {}", gvr.group)
    };
    let why = match get(client, &version_path(&gvr.group, &gvr.version)).await {
        Ok(list) => {
            if resources_of(&list).any(|r| r.name == gvr.resource) {
                // Discovery lists it: something else answered 404 (a proxy, a namespace path).
                return error;
            }
            format!(
                "{api_version} is served, but has no resource {}: is the \
                 CustomResourceDefinition that defines it installed?",
                gvr.resource
            )
        }
        Err(Error::Api(s)) if s.code == 404 && !gvr.group.is_empty() => {
            match get(client, &format!("/apis/{}", gvr.group)).await {
                Ok(group_doc) => {
                    let versions = versions_of(&group_doc);
                    format!(
                        "{group} is served, but not its version {} (served: {}): use a served version",
                        gvr.version,
                        versions.join(", ")
                    )
                }
                Err(Error::Api(s)) if s.code == 404 => format!(
                    "the server does not know {group}: install the CustomResourceDefinition that \
                     defines {resource}"
                ),
                Err(_) => return error,
            }
        }
        Err(_) => return error,
    };
    let message = format!(
        "{resource} ({api_version}) is not served by the API server: {why}; the informer \
         retries, and syncs once it is served (the server said: {})",
        status.message
    );
    Error::Api(Status { message, ..status.clone() })
}

/// A discovery document; an error answer is [`Error::Api`], a body too large, cut off or not
/// JSON is [`Error::Decode`] or [`Error::Transport`].
async fn get(client: &Client, path: &str) -> Result<Value, Error> {
    let mut url = client.base_url().clone();
    let base = url.path().trim_end_matches('/').to_owned();
    url.set_path(&format!("{base}{path}"));
    url.set_query(None);
    let response = client.send(Method::GET, url, None).await?;
    let mut body = BodyReader::new(response, client.limits().read_idle_timeout);
    let (bytes, read) = body.read_prefix(MAX_DISCOVERY_BODY).await;
    match read {
        Ok(true) => parse_document(path, &bytes),
        Ok(false) => Err(Error::Decode(format!(
            "discovery document {path}: larger than {MAX_DISCOVERY_BODY} bytes"
        ))),
        Err(ReadError::Idle(idle)) => Err(Error::Transport(format!(
            "discovery document {path}: the server sent nothing for {idle:?} \
             (Config::read_idle_timeout)"
        ))),
        Err(ReadError::Failed(e)) => Err(transport_error(e.cause())),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn found(list: &Value) -> Vec<(String, String, bool, String, Vec<String>)> {
        resources_of(list)
            .map(|r| (r.name, r.singular_name, r.namespaced, r.kind, r.short_names))
            .collect()
    }

    /// Fuzz target `discovery_documents`, seed 0xc2989e1500001fb6: a resource with
    /// `"namespaced": null` (an aggregated API server not written in Go may send one) was not
    /// found at all; Go reads `null` as the zero value.
    #[test]
    fn a_null_field_of_a_resource_reads_as_its_zero_value() {
        let list = json!({"resources": [
            {"name": "widgets", "singularName": null, "namespaced": null, "kind": "Widget",
                "shortNames": null},
            {"name": "gadgets", "kind": null, "namespaced": true, "shortNames": [null, "gd"]},
        ]});
        assert_eq!(
            found(&list),
            [
                ("widgets".to_owned(), String::new(), false, "Widget".to_owned(), vec![]),
                (
                    "gadgets".to_owned(),
                    String::new(),
                    true,
                    String::new(),
                    vec![String::new(), "gd".to_owned()]
                ),
            ]
        );
    }

    /// Fuzz target `discovery_documents`: serde's derive reads a struct from an array of its
    /// fields in order, so `["cm"]` was a resource named `cm`; an entry without a name names
    /// nothing that can be asked for.
    #[test]
    fn an_entry_that_is_no_object_or_has_no_name_is_skipped() {
        let list =
            json!({"resources": [["cm"], {"kind": "Pod"}, {"name": null}, {"name": "pods"}]});
        assert_eq!(
            found(&list),
            [("pods".to_owned(), String::new(), false, String::new(), vec![])]
        );
    }
}
