//! `AdmissionReview` (`admission.k8s.io/v1`): what kube-apiserver sends a validating or
//! mutating admission webhook, and the answer it expects.
//!
//! The request's `object` and `oldObject` arrive decoded into the handler's own type `K` (a
//! derived kind, a k8s-openapi type, or `serde_json::Value` for any object). The answer is
//! built from the request, so that it carries the request's `uid` as the API server requires:
//!
//! ```
//! use informer_webhook::admission::{AdmissionRequest, AdmissionResponse};
//! use k8s_openapi::api::core::v1::ConfigMap;
//!
//! fn admit(request: &AdmissionRequest<ConfigMap>) -> AdmissionResponse {
//!     let Some(config_map) = &request.object else { return request.allow() };
//!     match config_map.data.as_ref().and_then(|data| data.get("mode")) {
//!         Some(mode) if mode == "fast" || mode == "safe" => request.allow(),
//!         Some(mode) => request.deny(format!("data.mode: {mode:?} is neither \"fast\" nor \"safe\"")),
//!         None => request.allow().warning("data.mode is not set: \"safe\" is assumed"),
//!     }
//! }
//! # let request: AdmissionRequest<ConfigMap> = serde_json::from_value(serde_json::json!({
//! #     "uid": "u", "kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
//! #     "resource": {"group": "", "version": "v1", "resource": "configmaps"},
//! #     "operation": "CREATE", "userInfo": {},
//! #     "object": {"metadata": {"name": "c"}, "data": {"mode": "slow"}},
//! # })).unwrap();
//! # assert!(!admit(&request).allowed);
//! ```
//!
//! A mutating webhook changes a copy of the object and answers with
//! [`patch_from`](AdmissionResponse::patch_from), which writes the JSON patch (RFC 6902) from
//! the object as the API server sent it.
//!
//! Field names are those of `k8s.io/api/admission/v1/types.go`; kube-rs's `kube-core`
//! `admission` module has the same shape.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::authentication::v1::UserInfo;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::status;

/// The `apiVersion` of an `AdmissionReview` this crate answers.
pub const API_VERSION: &str = "admission.k8s.io/v1";

/// The `kind` of an `AdmissionReview`.
pub const KIND: &str = "AdmissionReview";

/// An admission review: the request kube-apiserver posts, or the response a webhook returns.
///
/// `K` is the type the request's objects are decoded into.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(
    rename_all = "camelCase",
    bound(serialize = "K: Serialize", deserialize = "K: DeserializeOwned")
)]
pub struct AdmissionReview<K> {
    /// `admission.k8s.io/v1` ([`API_VERSION`]).
    #[serde(default)]
    pub api_version: String,
    /// `AdmissionReview` ([`KIND`]).
    #[serde(default)]
    pub kind: String,
    /// What is being admitted; set in what the API server sends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<AdmissionRequest<K>>,
    /// The webhook's verdict; set in what it returns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<AdmissionResponse>,
}

impl AdmissionReview<()> {
    /// The review that carries `response` back, as `admission.k8s.io/v1`.
    #[must_use]
    pub fn answer(response: AdmissionResponse) -> Self {
        Self {
            api_version: API_VERSION.to_owned(),
            kind: KIND.to_owned(),
            request: None,
            response: Some(response),
        }
    }
}

/// A group, version and kind (`kind` and `requestKind` of a request).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct GroupVersionKind {
    /// The API group, empty for the core group.
    #[serde(default)]
    pub group: String,
    /// The version (`v1`).
    pub version: String,
    /// The kind (`Pod`).
    pub kind: String,
}

/// A group, version and resource (`resource` and `requestResource` of a request).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct GroupVersionResource {
    /// The API group, empty for the core group.
    #[serde(default)]
    pub group: String,
    /// The version (`v1`).
    pub version: String,
    /// The resource, plural and lowercase (`pods`).
    pub resource: String,
}

/// The operation a request admits (`operation`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Operation {
    /// A create: `object` is set, `oldObject` is not.
    Create,
    /// An update (a patch or a replace): both are set.
    Update,
    /// A delete: `oldObject` is set, `object` is not.
    Delete,
    /// A connect (`pods/exec`, `pods/portforward`...): `object` holds the connect options.
    Connect,
}

impl Operation {
    /// The name the API sends (`CREATE`).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Create => "CREATE",
            Self::Update => "UPDATE",
            Self::Delete => "DELETE",
            Self::Connect => "CONNECT",
        }
    }
}

impl std::fmt::Display for Operation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What is being admitted (`AdmissionRequest`), with `object` and `oldObject` decoded into `K`.
///
/// Answer it with [`allow`](Self::allow), [`deny`](Self::deny) or
/// [`deny_with_code`](Self::deny_with_code): each response carries this request's `uid`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(
    rename_all = "camelCase",
    try_from = "RequestOnTheWire",
    bound(serialize = "K: Serialize", deserialize = "K: DeserializeOwned")
)]
#[non_exhaustive]
pub struct AdmissionRequest<K> {
    /// Identifies this round trip between the API server and the webhook (not the user's
    /// request); the response must carry it back.
    pub uid: String,
    /// The kind of the object as the webhook's rule matched it (`apps/v1` `Deployment`).
    pub kind: GroupVersionKind,
    /// The resource being requested (`apps/v1` `deployments`).
    pub resource: GroupVersionResource,
    /// The subresource being requested (`status`, `scale`), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sub_resource: Option<String>,
    /// The kind of the user's request, when the API server converted it to match the rule
    /// (`matchPolicy: Equivalent`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_kind: Option<GroupVersionKind>,
    /// The resource of the user's request, when the API server converted it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_resource: Option<GroupVersionResource>,
    /// The subresource of the user's request, when the API server converted it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_sub_resource: Option<String>,
    /// The object's name; empty on a create whose name the server generates (`generateName`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The object's namespace; `None` for a cluster-scoped resource.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The operation; a patch can be a [`Create`](Operation::Create) or an
    /// [`Update`](Operation::Update).
    pub operation: Operation,
    /// Who asked.
    pub user_info: UserInfo,
    /// The object as it would be stored: set for CREATE, UPDATE and CONNECT, `None` for DELETE.
    pub object: Option<K>,
    /// The object as it is stored: set for UPDATE and DELETE, `None` for CREATE.
    pub old_object: Option<K>,
    /// Whether nothing will be persisted (`?dryRun=All`): a webhook with side effects must
    /// make none.
    pub dry_run: bool,
    /// The operation's options (`meta.k8s.io/v1` `CreateOptions`, `UpdateOptions` or
    /// `DeleteOptions`), as JSON.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub options: Option<Value>,
    /// `object` as the API server sent it: what a patch applies to.
    #[serde(skip)]
    sent_object: Option<Arc<Value>>,
}

/// A review as JSON has it, before its request's objects are decoded: what the server reads
/// first, so that it has the `uid` to answer with even when the objects do not decode.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ReviewOnTheWire {
    #[serde(default)]
    pub(crate) api_version: String,
    #[serde(default)]
    pub(crate) request: Option<RequestOnTheWire>,
}

/// The request as JSON has it, before its objects are decoded into `K`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RequestOnTheWire {
    pub(crate) uid: String,
    kind: GroupVersionKind,
    resource: GroupVersionResource,
    #[serde(default)]
    sub_resource: Option<String>,
    #[serde(default)]
    request_kind: Option<GroupVersionKind>,
    #[serde(default)]
    request_resource: Option<GroupVersionResource>,
    #[serde(default)]
    request_sub_resource: Option<String>,
    #[serde(default)]
    name: String,
    #[serde(default)]
    namespace: Option<String>,
    operation: Operation,
    #[serde(default)]
    user_info: UserInfo,
    #[serde(default)]
    object: Option<Value>,
    #[serde(default)]
    old_object: Option<Value>,
    #[serde(default)]
    dry_run: Option<bool>,
    #[serde(default)]
    options: Option<Value>,
}

/// Why an `AdmissionRequest`'s object did not decode into the handler's type.
#[derive(Debug, thiserror::Error)]
#[error("request.{field} does not decode as {type_name}: {source}")]
pub struct DecodeError {
    field: &'static str,
    type_name: &'static str,
    #[source]
    source: serde_json::Error,
}

impl<K: DeserializeOwned> TryFrom<RequestOnTheWire> for AdmissionRequest<K> {
    type Error = DecodeError;

    fn try_from(wire: RequestOnTheWire) -> Result<Self, DecodeError> {
        let decode = |field, value: Option<&Value>| match value {
            None | Some(Value::Null) => Ok(None),
            Some(value) => K::deserialize(value).map(Some).map_err(|source| DecodeError {
                field,
                type_name: std::any::type_name::<K>(),
                source,
            }),
        };
        let object = decode("object", wire.object.as_ref())?;
        let old_object = decode("oldObject", wire.old_object.as_ref())?;
        Ok(Self {
            uid: wire.uid,
            kind: wire.kind,
            resource: wire.resource,
            sub_resource: wire.sub_resource.filter(|s| !s.is_empty()),
            request_kind: wire.request_kind,
            request_resource: wire.request_resource,
            request_sub_resource: wire.request_sub_resource.filter(|s| !s.is_empty()),
            name: wire.name,
            namespace: wire.namespace.filter(|s| !s.is_empty()),
            operation: wire.operation,
            user_info: wire.user_info,
            object,
            old_object,
            dry_run: wire.dry_run.unwrap_or(false),
            options: wire.options.filter(|o| !o.is_null()),
            sent_object: wire.object.filter(|o| !o.is_null()).map(Arc::new),
        })
    }
}

impl<K> AdmissionRequest<K> {
    /// Admits the request as it is.
    #[must_use]
    pub fn allow(&self) -> AdmissionResponse {
        AdmissionResponse {
            uid: self.uid.clone(),
            allowed: true,
            status: None,
            patch: None,
            patch_type: None,
            audit_annotations: BTreeMap::new(),
            warnings: Vec::new(),
            sent_object: self.sent_object.clone(),
        }
    }

    /// Refuses the request with `message`, as `403 Forbidden` (controller-runtime's
    /// `admission.Denied`). The user sees `admission webhook "<name>" denied the request:
    /// <message>`.
    #[must_use]
    pub fn deny(&self, message: impl Into<String>) -> AdmissionResponse {
        self.deny_with_code(403, message)
    }

    /// Refuses the request with `message` and an HTTP `code` for the user's error (`422` for an
    /// invalid object, say); the API server raises a code below 400 to 400.
    #[must_use]
    pub fn deny_with_code(&self, code: u16, message: impl Into<String>) -> AdmissionResponse {
        let mut response = self.allow();
        response.allowed = false;
        response.status = Some(status::failure(code, message));
        response.sent_object = None;
        response
    }
}

/// The type of [`AdmissionResponse::patch`]: JSON patch is the only one the API accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum PatchType {
    /// RFC 6902 JSON patch (`JSONPatch`).
    #[serde(rename = "JSONPatch")]
    JsonPatch,
}

/// A webhook's verdict (`AdmissionResponse`); made by [`AdmissionRequest::allow`],
/// [`deny`](AdmissionRequest::deny) or [`deny_with_code`](AdmissionRequest::deny_with_code),
/// then refined with the methods below.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct AdmissionResponse {
    /// The request's `uid`, which the API server checks.
    pub uid: String,
    /// Whether the request is admitted.
    pub allowed: bool,
    /// Why it was denied (the API server ignores it when `allowed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Status>,
    /// The JSON patch (RFC 6902) a mutating webhook applies, as bytes (base64 in JSON).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "base64_bytes")]
    pub patch: Option<Vec<u8>>,
    /// [`PatchType::JsonPatch`] when there is a patch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch_type: Option<PatchType>,
    /// Keys and values for the audit log; the API server prefixes each key with the
    /// webhook's name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub audit_annotations: BTreeMap<String, String>,
    /// Warnings for the user's client (`kubectl` prints them); keep each under 120
    /// characters, the API server truncates long ones.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// The request's object as sent, for `patch_from`.
    #[serde(skip)]
    sent_object: Option<Arc<Value>>,
}

/// Why [`AdmissionResponse::patch_from`] made no patch.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PatchError {
    /// The response was not made from a request that has an object: only CREATE, UPDATE
    /// and CONNECT requests carry one, and a denial patches nothing.
    #[error(
        "patch_from: there is no object to patch: the response was not made by `allow()` \
         from a CREATE or UPDATE request"
    )]
    NoObject,
    /// The original or the changed object did not serialise.
    #[error("patch_from: the {which} object does not serialise as JSON: {source}")]
    Serialize {
        /// `original` or `changed`.
        which: &'static str,
        /// What serde said.
        #[source]
        source: serde_json::Error,
    },
}

impl AdmissionResponse {
    /// A denial for a request that could not be read: `uid` is whatever could be read of it.
    pub(crate) fn failure(uid: String, code: u16, message: impl Into<String>) -> Self {
        Self {
            uid,
            allowed: false,
            status: Some(status::failure(code, message)),
            patch: None,
            patch_type: None,
            audit_annotations: BTreeMap::new(),
            warnings: Vec::new(),
            sent_object: None,
        }
    }

    /// Adds a warning for the user's client.
    #[must_use]
    pub fn warning(mut self, warning: impl Into<String>) -> Self {
        self.warnings.push(warning.into());
        self
    }

    /// Adds an audit annotation.
    #[must_use]
    pub fn audit_annotation(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.audit_annotations.insert(key.into(), value.into());
        self
    }

    /// Sets the patch that turns the request's object into `changed`, where `original` is
    /// that object as the handler received it ([`AdmissionRequest::object`]); with no
    /// difference, no patch.
    ///
    /// The patch applies to the object as the API server sent it: fields the type does not
    /// know are kept, and a field the change sets to `null` (an `Option` set to `None`) is
    /// removed. Items of a list whose length did not change are patched one by one; a list
    /// that grew or shrank is replaced.
    ///
    /// ```
    /// use informer_webhook::admission::AdmissionRequest;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let request: AdmissionRequest<ConfigMap> = serde_json::from_value(serde_json::json!({
    /// #     "uid": "u", "kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
    /// #     "resource": {"group": "", "version": "v1", "resource": "configmaps"},
    /// #     "operation": "CREATE", "userInfo": {}, "object": {"metadata": {"name": "c"}},
    /// # }))?;
    /// let original = request.object.as_ref().expect("a create has an object");
    /// let mut changed = original.clone();
    /// changed.data.get_or_insert_default().entry("mode".into()).or_insert_with(|| "safe".into());
    /// let response = request.allow().patch_from(original, &changed)?;
    /// let patch: serde_json::Value = serde_json::from_slice(response.patch.as_deref().unwrap())?;
    /// assert_eq!(patch, serde_json::json!([{"op": "add", "path": "/data", "value": {"mode": "safe"}}]));
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// [`PatchError::NoObject`] when the response was not made by
    /// [`allow`](AdmissionRequest::allow) from a request with an object, and
    /// [`PatchError::Serialize`] when either object does not serialise.
    pub fn patch_from<T: Serialize>(self, original: &T, changed: &T) -> Result<Self, PatchError> {
        let sent = self.sent_object.as_deref().ok_or(PatchError::NoObject)?;
        let json = |which, value: &T| {
            serde_json::to_value(value).map_err(|source| PatchError::Serialize { which, source })
        };
        let patch = crate::patch::patch_from(
            sent,
            &json("original", original)?,
            &json("changed", changed)?,
        );
        self.with_patch(&patch)
    }

    /// Sets `patch` (RFC 6902 operations) as the patch; an empty one sets none.
    ///
    /// # Errors
    ///
    /// [`PatchError::Serialize`] if the patch does not serialise (it always does).
    pub fn with_patch(mut self, patch: &json_patch::Patch) -> Result<Self, PatchError> {
        if patch.0.is_empty() {
            self.patch = None;
            self.patch_type = None;
            return Ok(self);
        }
        let bytes = serde_json::to_vec(patch)
            .map_err(|source| PatchError::Serialize { which: "patch", source })?;
        self.patch = Some(bytes);
        self.patch_type = Some(PatchType::JsonPatch);
        Ok(self)
    }
}

/// `[]byte` as Go's `encoding/json` writes it: standard base64.
mod base64_bytes {
    use base64::Engine as _;

    use super::{Deserialize, Deserializer, Serializer};

    #[allow(
        clippy::ref_option,
        reason = "serde's `with` passes the field by reference, as `&Option<_>`"
    )]
    pub(super) fn serialize<S: Serializer>(
        bytes: &Option<Vec<u8>>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match bytes {
            Some(bytes) => {
                serializer.serialize_str(&base64::engine::general_purpose::STANDARD.encode(bytes))
            }
            None => serializer.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<Vec<u8>>, D::Error> {
        let Some(text) = Option::<String>::deserialize(deserializer)? else { return Ok(None) };
        base64::engine::general_purpose::STANDARD
            .decode(text)
            .map(Some)
            .map_err(|e| serde::de::Error::custom(format!("patch is not base64: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use base64::Engine as _;
    use k8s_openapi::api::core::v1::ConfigMap;
    use serde_json::json;

    use super::*;

    fn create(object: &Value) -> Value {
        json!({
            "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
            "kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
            "resource": {"group": "", "version": "v1", "resource": "configmaps"},
            "requestKind": {"group": "", "version": "v1", "kind": "ConfigMap"},
            "requestResource": {"group": "", "version": "v1", "resource": "configmaps"},
            "name": "settings",
            "namespace": "default",
            "operation": "CREATE",
            "userInfo": {"username": "admin", "uid": "u-1", "groups": ["system:masters", "system:authenticated"]},
            "object": object,
            "oldObject": null,
            "dryRun": false,
            "options": {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1", "fieldManager": "kubectl-client-side-apply"},
        })
    }

    #[test]
    fn a_create_decodes_its_object_into_the_handlers_type_and_has_no_old_object() {
        let request: AdmissionRequest<ConfigMap> = serde_json::from_value(create(
            &json!({"metadata": {"name": "settings"}, "data": {"a": "b"}}),
        ))
        .unwrap();
        assert_eq!(request.operation, Operation::Create);
        assert_eq!(request.object.unwrap().data.unwrap()["a"], "b");
        assert!(request.old_object.is_none());
        assert_eq!(request.namespace.as_deref(), Some("default"));
        assert_eq!(request.user_info.username.as_deref(), Some("admin"));
        assert_eq!(request.options.unwrap()["kind"], "CreateOptions");
        assert!(!request.dry_run);
    }

    #[test]
    fn an_object_that_does_not_fit_the_type_names_the_field_and_the_type() {
        let error =
            serde_json::from_value::<AdmissionRequest<ConfigMap>>(create(&json!({"data": 7})))
                .unwrap_err()
                .to_string();
        assert!(error.contains("request.object does not decode as"), "{error}");
        assert!(error.contains("ConfigMap"), "{error}");
    }

    #[test]
    fn a_denial_echoes_the_uid_with_a_failure_status_and_no_patch() {
        let request: AdmissionRequest<Value> = serde_json::from_value(create(&json!({}))).unwrap();
        let response = request.deny("no");
        let json = serde_json::to_value(AdmissionReview::answer(response)).unwrap();
        assert_eq!(json["apiVersion"], "admission.k8s.io/v1");
        assert_eq!(json["kind"], "AdmissionReview");
        assert_eq!(json["response"]["uid"], "705ab4f5-6393-11e8-b7cc-42010a800002");
        assert_eq!(json["response"]["allowed"], false);
        assert_eq!(json["response"]["status"]["code"], 403);
        assert_eq!(json["response"]["status"]["reason"], "Forbidden");
        assert_eq!(json["response"]["status"]["message"], "no");
        assert!(json["response"].get("patch").is_none());
        assert!(request.deny("no").patch_from(&json!({}), &json!({"a": 1})).is_err());
    }

    #[test]
    fn a_patch_is_base64_of_the_operations_with_its_type() {
        let request: AdmissionRequest<Value> =
            serde_json::from_value(create(&json!({"metadata": {"name": "settings"}}))).unwrap();
        let original = request.object.clone().unwrap();
        let mut changed = original.clone();
        changed["metadata"]["labels"] = json!({"team": "a"});
        let response = request.allow().warning("w").patch_from(&original, &changed).unwrap();
        let json = serde_json::to_value(&response).unwrap();
        assert_eq!(json["patchType"], "JSONPatch");
        assert_eq!(json["warnings"], json!(["w"]));
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(json["patch"].as_str().unwrap())
            .unwrap();
        let ops: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(ops, json!([{"op": "add", "path": "/metadata/labels", "value": {"team": "a"}}]));
        // And back: what the API server's side reads.
        let read: AdmissionResponse = serde_json::from_value(json).unwrap();
        assert_eq!(read.patch.as_deref(), Some(bytes.as_slice()));
        // No change, no patch.
        let unchanged = request.allow().patch_from(&original, &original).unwrap();
        assert!(unchanged.patch.is_none() && unchanged.patch_type.is_none());
    }

    #[test]
    fn a_delete_has_only_the_old_object() {
        let mut json = create(&Value::Null);
        json["operation"] = json!("DELETE");
        json["oldObject"] = json!({"metadata": {"name": "settings"}});
        let request: AdmissionRequest<ConfigMap> = serde_json::from_value(json).unwrap();
        assert!(request.object.is_none());
        assert_eq!(request.old_object.unwrap().metadata.name.as_deref(), Some("settings"));
        assert!(matches!(
            AdmissionRequest::<Value>::allow(
                &serde_json::from_value(create(&Value::Null)).unwrap()
            )
            .patch_from(&json!({}), &json!({"a": 1})),
            Err(PatchError::NoObject)
        ));
    }
}
