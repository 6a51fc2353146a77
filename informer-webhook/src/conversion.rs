//! `ConversionReview` (`apiextensions.k8s.io/v1`): what kube-apiserver sends a CRD's conversion
//! webhook, and the answer it expects.
//!
//! The API server sends objects of one kind in any of its served versions, and the version it
//! wants them in (`desiredAPIVersion`). The answer holds every object converted, in the same
//! order, each with `apiVersion` set to the desired version; or, when any one fails, no
//! objects and a `Failure` result whose message the user sees. A webhook may change labels and
//! annotations; the API server ignores every other change to `metadata`.
//!
//! [`Conversions`](crate::convert::Conversions) answers these for kinds whose versions convert
//! through a hub; a handler of your own answers with [`ConversionRequest::success`] or
//! [`ConversionRequest::failure`]:
//!
//! ```
//! use informer_webhook::conversion::{ConversionRequest, ConversionResponse};
//!
//! /// Versions whose schemas are the same: only `apiVersion` changes.
//! fn relabel(request: &ConversionRequest) -> ConversionResponse {
//!     let mut converted = Vec::with_capacity(request.objects.len());
//!     for object in &request.objects {
//!         let mut object = object.clone();
//!         let Some(fields) = object.as_object_mut() else {
//!             return request.failure("an object to convert is not a JSON object");
//!         };
//!         fields.insert("apiVersion".into(), request.desired_api_version.clone().into());
//!         converted.push(object);
//!     }
//!     request.success(converted)
//! }
//! # let request: ConversionRequest = serde_json::from_value(serde_json::json!({
//! #     "uid": "u", "desiredAPIVersion": "example.com/v2",
//! #     "objects": [{"apiVersion": "example.com/v1", "kind": "Widget"}],
//! # })).unwrap();
//! # assert_eq!(relabel(&request).converted_objects[0]["apiVersion"], "example.com/v2");
//! ```
//!
//! Field names are those of `apiextensions-apiserver`'s `pkg/apis/apiextensions/v1/types.go`.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use crate::status;

/// The `apiVersion` of a `ConversionReview` this crate answers.
pub const API_VERSION: &str = "apiextensions.k8s.io/v1";

/// The `kind` of a `ConversionReview`.
pub const KIND: &str = "ConversionReview";

/// A conversion review: the request kube-apiserver posts, or the response a webhook returns.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConversionReview {
    /// `apiextensions.k8s.io/v1` ([`API_VERSION`]).
    #[serde(default)]
    pub api_version: String,
    /// `ConversionReview` ([`KIND`]).
    #[serde(default)]
    pub kind: String,
    /// What to convert; set in what the API server sends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<ConversionRequest>,
    /// The converted objects; set in what the webhook returns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<ConversionResponse>,
}

impl ConversionReview {
    /// The review that carries `response` back, as `apiextensions.k8s.io/v1`.
    #[must_use]
    pub fn answer(response: ConversionResponse) -> Self {
        Self {
            api_version: API_VERSION.to_owned(),
            kind: KIND.to_owned(),
            request: None,
            response: Some(response),
        }
    }
}

/// What to convert (`ConversionRequest`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ConversionRequest {
    /// Identifies this round trip; the response must carry it back.
    pub uid: String,
    /// The version to convert every object to (`example.com/v2`).
    #[serde(rename = "desiredAPIVersion")]
    pub desired_api_version: String,
    /// The objects, each whole (`apiVersion`, `kind`, `metadata`...), in any served version.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub objects: Vec<Value>,
}

impl ConversionRequest {
    /// A request to convert `objects` to `desired_api_version` (for tests, and for an API
    /// server of your own).
    #[must_use]
    pub fn new(
        uid: impl Into<String>,
        desired_api_version: impl Into<String>,
        objects: Vec<Value>,
    ) -> Self {
        Self { uid: uid.into(), desired_api_version: desired_api_version.into(), objects }
    }

    /// The answer with `converted`, in the order of [`objects`](Self::objects).
    #[must_use]
    pub fn success(&self, converted: Vec<Value>) -> ConversionResponse {
        ConversionResponse {
            uid: self.uid.clone(),
            converted_objects: converted,
            result: status::success(),
        }
    }

    /// The answer that nothing was converted, with `message` for the user.
    #[must_use]
    pub fn failure(&self, message: impl Into<String>) -> ConversionResponse {
        ConversionResponse::failure(self.uid.clone(), message)
    }
}

/// The converted objects, or why there are none (`ConversionResponse`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ConversionResponse {
    /// The request's `uid`.
    pub uid: String,
    /// The objects converted, in the request's order; empty on failure.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub converted_objects: Vec<Value>,
    /// `status: Success`, or `status: Failure` with a `message`.
    pub result: Status,
}

impl ConversionResponse {
    /// A failure for the request with `uid`.
    pub(crate) fn failure(uid: String, message: impl Into<String>) -> Self {
        Self { uid, converted_objects: Vec::new(), result: status::failure(500, message) }
    }

    /// Whether the result is `Success`.
    #[must_use]
    pub fn is_success(&self) -> bool {
        self.result.status.as_deref() == Some(status::SUCCESS)
    }
}

/// A Go slice may be written as `null`.
fn null_as_empty<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<Value>, D::Error> {
    Ok(Option::<Vec<Value>>::deserialize(deserializer)?.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_review_as_the_api_server_sends_it_decodes() {
        let review: ConversionReview = serde_json::from_value(json!({
            "kind": "ConversionReview",
            "apiVersion": "apiextensions.k8s.io/v1",
            "request": {
                "uid": "0000-1111",
                "desiredAPIVersion": "example.com/v2",
                "objects": [{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "a"}}],
            },
        }))
        .unwrap();
        let request = review.request.unwrap();
        assert_eq!(request.desired_api_version, "example.com/v2");
        assert_eq!(request.objects.len(), 1);
    }

    #[test]
    fn the_answer_echoes_the_uid_and_says_success_or_failure() {
        let request = ConversionRequest::new("0000-1111", "example.com/v2", vec![]);
        let ok = serde_json::to_value(ConversionReview::answer(request.success(vec![json!({})])))
            .unwrap();
        assert_eq!(ok["response"]["uid"], "0000-1111");
        assert_eq!(ok["response"]["result"]["status"], "Success");
        assert_eq!(ok["response"]["convertedObjects"], json!([{}]));
        let failed = request.failure("no converter for example.com/v9");
        assert!(!failed.is_success());
        let failed = serde_json::to_value(&failed).unwrap();
        assert_eq!(failed["result"]["status"], "Failure");
        assert_eq!(failed["result"]["message"], "no converter for example.com/v9");
        assert_eq!(failed["convertedObjects"], json!([]));
    }
}
