//! The validating admission webhook of `ConfigMapSet`: the API server asks it before it stores
//! a set that is created or updated, and refuses a set whose spec the controller could never
//! make true, with a message that says what to fix.
//!
//! Serve it with `informer-webhook`'s server ([`webhooks`] adds it to a builder), and register
//! it with the API server ([`configuration`]):
//!
//! ```
//! use example_controller::webhook;
//! use informer_webhook::WebhookServer;
//! use informer_webhook::crd::WebhookTarget;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // The certificate of a `kubernetes.io/tls` Secret (cert-manager's), mounted as a volume.
//! let server = webhook::webhooks(WebhookServer::builder())
//!     .certificate_files("/certs/tls.crt", "/certs/tls.key")
//!     .build()?;
//! // Serve it: `server.serve(listener, stop).await`, beside the controller.
//! # drop(server);
//! let target = WebhookTarget::service("sets-system", "configmapset-webhook").path(webhook::PATH);
//! # let ca_bundle = b"-----BEGIN CERTIFICATE-----\n...\n-----END CERTIFICATE-----\n";
//! let configuration = webhook::configuration(&target, ca_bundle);
//! // client.create(None, &configuration).await?
//! # assert_eq!(configuration.webhooks.unwrap()[0].name, "validate.sets.example.com");
//! # Ok(())
//! # }
//! ```

use std::collections::BTreeSet;
use std::convert::Infallible;

use informer_webhook::WebhookServerBuilder;
use informer_webhook::admission::AdmissionRequest;
use informer_webhook::crd::WebhookTarget;
use k8s_openapi::api::admissionregistration::v1::{
    RuleWithOperations, ValidatingWebhook, ValidatingWebhookConfiguration,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::{ConfigMapSet, ConfigMapSetSpec};

/// The URL path the webhook serves.
pub const PATH: &str = "/validate-configmapsets";

/// The webhook's name in its configuration, which the API server's messages quote.
pub const NAME: &str = "validate.sets.example.com";

/// The longest a namespace name may be (a DNS-1123 label).
const MAX_NAMESPACE: usize = 63;

/// The longest a config map key may be (`validation.IsConfigMapKey`: a DNS-1123 subdomain's
/// length).
const MAX_KEY: usize = 253;

/// Whether `spec` can be made true; else what is wrong with it, for the user.
///
/// A set must list at least one namespace, each a valid namespace name (a DNS-1123 label) and
/// listed once; each data key must be a valid config map key (letters, digits, `-`, `_`, `.`;
/// at most 253 characters), as the API server would refuse the config maps otherwise.
///
/// # Errors
///
/// Every problem found, joined by `; `.
pub fn validate(spec: &ConfigMapSetSpec) -> Result<(), String> {
    let mut problems = Vec::new();
    if spec.namespaces.is_empty() {
        problems.push("spec.namespaces is empty: list at least one namespace".to_owned());
    }
    let mut seen = BTreeSet::new();
    for (i, namespace) in spec.namespaces.iter().enumerate() {
        if !is_dns_label(namespace) {
            problems.push(format!(
                "spec.namespaces[{i}] {namespace:?} is not a namespace name: lowercase letters, \
                 digits and '-', starting and ending with a letter or digit, at most \
                 {MAX_NAMESPACE} characters"
            ));
        }
        if !seen.insert(namespace) {
            problems.push(format!("spec.namespaces[{i}] {namespace:?} is listed twice"));
        }
    }
    for key in spec.data.keys() {
        let ok = !key.is_empty()
            && key.len() <= MAX_KEY
            && key != "."
            && key != ".."
            && key.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !ok {
            problems.push(format!(
                "spec.data key {key:?} is not a config map key: letters, digits, '-', '_' and \
                 '.', at most {MAX_KEY} characters"
            ));
        }
    }
    if problems.is_empty() { Ok(()) } else { Err(problems.join("; ")) }
}

/// A DNS-1123 label: `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, at most 63 characters.
fn is_dns_label(name: &str) -> bool {
    let bytes = name.as_bytes();
    let edge = |b: Option<&u8>| b.is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    name.len() <= MAX_NAMESPACE
        && edge(bytes.first())
        && edge(bytes.last())
        && bytes.iter().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
}

/// `builder` with the validating webhook of `ConfigMapSet` at [`PATH`].
pub fn webhooks(builder: WebhookServerBuilder) -> WebhookServerBuilder {
    builder.validating(PATH, |request: AdmissionRequest<ConfigMapSet>| async move {
        // A delete carries no new object: nothing to check.
        let Some(set) = &request.object else { return Ok::<_, Infallible>(request.allow()) };
        Ok(match validate(&set.spec) {
            Ok(()) => request.allow(),
            Err(problems) => request.deny(format!("invalid ConfigMapSet: {problems}")),
        })
    })
}

/// The `ValidatingWebhookConfiguration` that has the API server call the webhook at `target`
/// (trusting `ca_bundle`, PEM) for every create and update of a `ConfigMapSet`; a set is
/// refused while the webhook cannot be reached (`failurePolicy: Fail`), as an unchecked set
/// would be stored otherwise.
#[must_use]
pub fn configuration(target: &WebhookTarget, ca_bundle: &[u8]) -> ValidatingWebhookConfiguration {
    let rule = RuleWithOperations {
        api_groups: Some(vec!["sets.example.com".to_owned()]),
        api_versions: Some(vec!["v1".to_owned()]),
        operations: Some(vec!["CREATE".to_owned(), "UPDATE".to_owned()]),
        // The main resource only: the controller's own status writes need no check.
        resources: Some(vec!["configmapsets".to_owned()]),
        scope: Some("Cluster".to_owned()),
    };
    ValidatingWebhookConfiguration {
        metadata: ObjectMeta { name: Some(NAME.to_owned()), ..ObjectMeta::default() },
        webhooks: Some(vec![ValidatingWebhook {
            name: NAME.to_owned(),
            admission_review_versions: vec!["v1".to_owned()],
            client_config: target.admission_client_config(ca_bundle),
            failure_policy: Some("Fail".to_owned()),
            side_effects: "None".to_owned(),
            rules: Some(vec![rule]),
            timeout_seconds: Some(5),
            ..ValidatingWebhook::default()
        }]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(namespaces: &[&str], keys: &[&str]) -> ConfigMapSetSpec {
        ConfigMapSetSpec {
            namespaces: namespaces.iter().map(|n| (*n).to_owned()).collect(),
            data: keys.iter().map(|k| ((*k).to_owned(), String::new())).collect(),
        }
    }

    #[test]
    fn a_set_of_valid_namespaces_and_keys_passes() {
        assert_eq!(validate(&spec(&["shop", "blog-2"], &["mode", "app.conf", "a_b-c"])), Ok(()));
    }

    #[test]
    fn every_problem_is_named_at_once() {
        let problems = validate(&spec(&["Shop", "blog", "blog", "-x"], &["a/b"])).unwrap_err();
        assert!(problems.contains(r#"spec.namespaces[0] "Shop" is not a namespace name"#));
        assert!(problems.contains(r#"spec.namespaces[2] "blog" is listed twice"#));
        assert!(problems.contains(r#"spec.namespaces[3] "-x" is not a namespace name"#));
        assert!(problems.contains(r#"spec.data key "a/b" is not a config map key"#));
        let empty = validate(&spec(&[], &[])).unwrap_err();
        assert!(empty.contains("spec.namespaces is empty"), "{empty}");
        assert!(!is_dns_label(&"a".repeat(64)));
        assert!(validate(&spec(&["a"], &[".."])).is_err());
    }
}
