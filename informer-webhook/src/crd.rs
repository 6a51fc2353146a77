//! The CRD's `spec.conversion` stanza that sends its conversions to a webhook: what a kind
//! with [`Conversions`](crate::convert::Conversions) installs with its
//! `CustomResourceDefinition`. The same [`WebhookTarget`] writes the `clientConfig` of a
//! `ValidatingWebhookConfiguration`'s or `MutatingWebhookConfiguration`'s webhooks
//! ([`WebhookTarget::admission_client_config`]).
//!
//! ```
//! use informer_webhook::crd::{WebhookTarget, with_conversion_webhook};
//! # use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
//! # fn merged() -> CustomResourceDefinition { CustomResourceDefinition::default() }
//! # let ca_bundle = b"-----BEGIN CERTIFICATE-----\n...\n-----END CERTIFICATE-----\n";
//!
//! // `merged()`: every version's `crd()`, through `informer_runtime::crd::merge`.
//! let crd = with_conversion_webhook(
//!     merged(),
//!     &WebhookTarget::service("widgets-system", "widgets-webhook").path("/convert"),
//!     ca_bundle,
//! );
//! let conversion = crd.spec.conversion.as_ref().unwrap();
//! assert_eq!(conversion.strategy, "Webhook");
//! let webhook = conversion.webhook.as_ref().unwrap();
//! assert_eq!(webhook.conversion_review_versions, ["v1"]);
//! let service = webhook.client_config.as_ref().unwrap().service.as_ref().unwrap();
//! assert_eq!((service.namespace.as_str(), service.path.as_deref()), ("widgets-system", Some("/convert")));
//! ```

use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1 as admission;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceConversion, CustomResourceDefinition, ServiceReference, WebhookClientConfig,
    WebhookConversion,
};

/// Where the API server reaches a webhook: a Service in the cluster, or a URL
/// (`WebhookClientConfig`'s `service` or `url`).
#[derive(Clone, Debug, PartialEq, Eq)]
#[must_use]
pub enum WebhookTarget {
    /// A Service, reached over HTTPS.
    Service {
        /// The Service's namespace.
        namespace: String,
        /// The Service's name.
        name: String,
        /// The URL path the webhook serves (`/convert`); `/` when `None`.
        path: Option<String>,
        /// The Service's port; 443 when `None`.
        port: Option<i32>,
    },
    /// An `https://` URL, for a webhook outside the cluster (or on the API server's loopback
    /// in tests). It may not hold a user, a query or a fragment.
    Url(String),
}

impl WebhookTarget {
    /// The Service `name` in `namespace`, at path `/` and port 443 until set.
    pub fn service(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        Self::Service { namespace: namespace.into(), name: name.into(), path: None, port: None }
    }

    /// The `https://` URL `url`.
    pub fn url(url: impl Into<String>) -> Self {
        Self::Url(url.into())
    }

    /// The path on the Service (ignored for a URL, which holds its own path).
    pub fn path(mut self, path: impl Into<String>) -> Self {
        if let Self::Service { path: p, .. } = &mut self {
            *p = Some(path.into());
        }
        self
    }

    /// The Service's port (ignored for a URL, which holds its own port).
    pub fn port(mut self, port: i32) -> Self {
        if let Self::Service { port: p, .. } = &mut self {
            *p = Some(port);
        }
        self
    }

    /// The `clientConfig` of an admission webhook (`admissionregistration.k8s.io/v1`
    /// `WebhookClientConfig`), with `ca_bundle` (PEM) as the CA the API server trusts for it.
    #[must_use]
    pub fn admission_client_config(&self, ca_bundle: &[u8]) -> admission::WebhookClientConfig {
        let ca_bundle = Some(ByteString(ca_bundle.to_vec()));
        match self {
            Self::Service { namespace, name, path, port } => admission::WebhookClientConfig {
                ca_bundle,
                service: Some(admission::ServiceReference {
                    name: name.clone(),
                    namespace: namespace.clone(),
                    path: path.clone(),
                    port: *port,
                }),
                url: None,
            },
            Self::Url(url) => {
                admission::WebhookClientConfig { ca_bundle, service: None, url: Some(url.clone()) }
            }
        }
    }

    /// The `clientConfig` of a CRD's conversion webhook (`apiextensions.k8s.io/v1`
    /// `WebhookClientConfig`), with `ca_bundle` (PEM) as the CA the API server trusts for it.
    #[must_use]
    pub fn client_config(&self, ca_bundle: &[u8]) -> WebhookClientConfig {
        let ca_bundle = Some(ByteString(ca_bundle.to_vec()));
        match self {
            Self::Service { namespace, name, path, port } => WebhookClientConfig {
                ca_bundle,
                service: Some(ServiceReference {
                    name: name.clone(),
                    namespace: namespace.clone(),
                    path: path.clone(),
                    port: *port,
                }),
                url: None,
            },
            Self::Url(url) => {
                WebhookClientConfig { ca_bundle, service: None, url: Some(url.clone()) }
            }
        }
    }
}

/// `crd` with its `spec.conversion` set to the webhook at `target`, trusted through
/// `ca_bundle` (the PEM of the CA that signed the webhook's certificate), speaking
/// `ConversionReview` `v1` (the version this crate answers).
#[must_use]
pub fn with_conversion_webhook(
    mut crd: CustomResourceDefinition,
    target: &WebhookTarget,
    ca_bundle: &[u8],
) -> CustomResourceDefinition {
    crd.spec.conversion = Some(CustomResourceConversion {
        strategy: "Webhook".to_owned(),
        webhook: Some(WebhookConversion {
            client_config: Some(target.client_config(ca_bundle)),
            conversion_review_versions: vec!["v1".to_owned()],
        }),
    });
    crd
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_target_writes_the_url_and_the_ca_bundle_as_base64() {
        let crd = with_conversion_webhook(
            CustomResourceDefinition::default(),
            &WebhookTarget::url("https://127.0.0.1:9443/convert").path("/ignored"),
            b"PEM",
        );
        let json = serde_json::to_value(&crd).unwrap();
        let conversion = &json["spec"]["conversion"];
        assert_eq!(conversion["strategy"], "Webhook");
        assert_eq!(conversion["webhook"]["conversionReviewVersions"], serde_json::json!(["v1"]));
        let config = &conversion["webhook"]["clientConfig"];
        assert_eq!(config["url"], "https://127.0.0.1:9443/convert");
        assert_eq!(config["caBundle"], "UEVN");
        assert!(config.get("service").is_none());
    }

    #[test]
    fn a_service_target_has_its_path_and_port() {
        let config =
            WebhookTarget::service("ns", "svc").path("/convert").port(8443).client_config(b"");
        let service = config.service.unwrap();
        assert_eq!(service.port, Some(8443));
        assert_eq!(service.path.as_deref(), Some("/convert"));
        assert!(config.url.is_none());
        let admission =
            WebhookTarget::url("https://127.0.0.1:9443/validate").admission_client_config(b"CA");
        assert_eq!(admission.url.as_deref(), Some("https://127.0.0.1:9443/validate"));
        assert_eq!(admission.ca_bundle.map(|b| b.0), Some(b"CA".to_vec()));
    }
}
