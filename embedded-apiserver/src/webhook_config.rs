//! Webhook configurations: the `admissionregistration.k8s.io/v1` `MutatingWebhookConfiguration`
//! and `ValidatingWebhookConfiguration` objects (defaulted and validated as they are stored,
//! read back as [`Webhook`]s at admission time) and a CRD's `spec.conversion.webhook`.
//!
//! This is the data half of admission: what a webhook is, where it is reached, and whether a
//! request is one it asked for (its rules, namespace and object selectors). The calls
//! themselves are `admission.rs` and `conversion.rs`, over `webhook_client.rs`.
//!
//! Matching follows kube-apiserver's `ShouldCallHook` (`k8s.io/apiserver/pkg/admission/plugin/
//! webhook/generic/webhook.go`) and its predicates (`predicates/rules/rules.go`,
//! `predicates/namespace/matcher.go`, `predicates/object/matcher.go`), with two differences:
//! `matchPolicy: Equivalent` is treated as `Exact` (this server serves each resource in one
//! group version, but a CRD's other versions are not tried against the rules), and
//! `matchConditions` (CEL) are not evaluated: a webhook is called as if they matched.

use std::collections::BTreeMap;
use std::time::Duration;

use informer_runtime::LabelSelector;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector as WireSelector;
use serde_json::{Map, Value, json};

use crate::status::{ApiError, GroupResource};
use crate::storage::meta_str;
use crate::util::base64_decode;

/// The group of the webhook configurations.
pub(crate) const GROUP: &str = "admissionregistration.k8s.io";

/// The resource of the mutating webhook configurations.
pub(crate) const MUTATING: &str = "mutatingwebhookconfigurations";

/// The resource of the validating webhook configurations.
pub(crate) const VALIDATING: &str = "validatingwebhookconfigurations";

/// What `ValidateWebhookURL` appends to its URL errors.
const FORM: &str = "; desired format: https://host[/path]";

/// The timeout of a webhook that sets none (the v1 default, `SetDefaults_ValidatingWebhook`).
const DEFAULT_TIMEOUT_SECONDS: i64 = 10;

/// Where a webhook is reached: the `clientConfig` of an admission webhook or of a CRD's
/// conversion webhook.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ClientConfig {
    pub(crate) target: Target,
    /// The decoded `caBundle`: PEM certificates that sign the webhook's serving certificate.
    /// Empty when the configuration gives none.
    pub(crate) ca_bundle: Vec<u8>,
}

/// The address half of a [`ClientConfig`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    /// `url`: `https://host[:port][/path]`.
    Url(String),
    /// `service`: a Service the server resolves (here: through the addresses a test gives,
    /// [`Config::webhook_service_address`](crate::Config::webhook_service_address)).
    Service { namespace: String, name: String, path: String, port: u16 },
}

impl ClientConfig {
    /// The URL kube-apiserver's client posts to, before its `?timeout=` parameter: the `url`
    /// as configured, or `https://NAME.NAMESPACE.svc:PORT/PATH` for a service (the host and
    /// port its `hookClientConfig` builds, `k8s.io/apiserver/pkg/util/webhook/client.go`).
    pub(crate) fn url(&self) -> String {
        match &self.target {
            Target::Url(url) => url.clone(),
            Target::Service { namespace, name, path, port } => {
                format!("https://{name}.{namespace}.svc:{port}{path}")
            }
        }
    }

    /// A `clientConfig` as stored (defaulted and validated); `None` for one that is not.
    fn parse(config: &Value) -> Option<Self> {
        let ca_bundle = config
            .get("caBundle")
            .and_then(Value::as_str)
            .and_then(base64_decode)
            // A bundle of whitespace is none (`webhookClientConfigForCRD`).
            .filter(|pem| !pem.iter().all(u8::is_ascii_whitespace))
            .unwrap_or_default();
        let target = if let Some(url) = config.get("url").and_then(Value::as_str) {
            Target::Url(url.to_owned())
        } else {
            let service = config.get("service")?;
            let text = |k: &str| service.get(k).and_then(Value::as_str).unwrap_or_default();
            let port = service.get("port").and_then(Value::as_u64).unwrap_or(443);
            Target::Service {
                namespace: text("namespace").to_owned(),
                name: text("name").to_owned(),
                path: text("path").to_owned(),
                port: u16::try_from(port).ok()?,
            }
        };
        Some(Self { target, ca_bundle })
    }
}

/// One webhook of a configuration, as admission calls it.
#[derive(Clone, Debug)]
pub(crate) struct Webhook {
    /// The configuration's `metadata.name`.
    pub(crate) configuration: String,
    /// The webhook's `name`, which messages quote.
    pub(crate) name: String,
    pub(crate) client: ClientConfig,
    rules: Vec<Rule>,
    /// `failurePolicy: Ignore`: a failed call admits the request.
    pub(crate) fail_open: bool,
    namespace_selector: Selector,
    object_selector: Selector,
    /// `sideEffects`: `None`, `NoneOnDryRun` (or the v1beta1 `Some`, `Unknown`).
    pub(crate) side_effects: String,
    /// `timeoutSeconds`.
    pub(crate) timeout: Duration,
    /// `admissionReviewVersions`, in the webhook's order of preference.
    pub(crate) review_versions: Vec<String>,
}

/// A `LabelSelector` of a webhook, with whether it is empty (selects everything).
#[derive(Clone, Debug)]
struct Selector {
    selector: LabelSelector,
    empty: bool,
}

impl Selector {
    fn parse(value: Option<&Value>) -> Option<Self> {
        let wire: WireSelector = match value {
            None | Some(Value::Null) => WireSelector::default(),
            Some(value) => serde_json::from_value(value.clone()).ok()?,
        };
        let empty = wire.match_labels.as_ref().is_none_or(BTreeMap::is_empty)
            && wire.match_expressions.as_ref().is_none_or(Vec::is_empty);
        let selector = LabelSelector::from_label_selector(&wire).ok()?;
        Some(Self { selector, empty })
    }

    fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.empty || self.selector.matches(labels)
    }
}

/// One entry of a webhook's `rules`.
#[derive(Clone, Debug)]
struct Rule {
    operations: Vec<String>,
    api_groups: Vec<String>,
    api_versions: Vec<String>,
    resources: Vec<String>,
    /// `*`, `Cluster` or `Namespaced`.
    scope: String,
}

/// The admission operations a rule names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Operation {
    Create,
    Update,
    Delete,
}

impl Operation {
    /// As `AdmissionRequest.operation` and a rule's `operations` spell it.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Create => "CREATE",
            Self::Update => "UPDATE",
            Self::Delete => "DELETE",
        }
    }
}

/// What a request is, as the rules see it (the parts of kube's `admission.Attributes` that
/// matching reads).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Attributes<'a> {
    pub(crate) operation: Operation,
    pub(crate) group: &'a str,
    pub(crate) version: &'a str,
    pub(crate) resource: &'a str,
    /// `""` for the main resource, else `status` and the like.
    pub(crate) subresource: &'a str,
    /// The request's namespace: `""` for a cluster-scoped object, a namespace's own name for
    /// a namespace (as kube-apiserver's handlers set it).
    pub(crate) namespace: &'a str,
}

impl Attributes<'_> {
    /// The request is for a `namespaces` object itself.
    fn is_namespace(&self) -> bool {
        self.group.is_empty() && self.version == "v1" && self.resource == "namespaces"
    }
}

impl Webhook {
    /// Whether the request is one this webhook asked for (`ShouldCallHook`): its namespace
    /// selector and object selector select it and one of its rules matches; `Err` when the
    /// namespace selector must be evaluated for a namespace that does not exist.
    ///
    /// `namespace` holds the labels of the request's namespace, `None` when it does not exist
    /// (kube-apiserver then answers `404`, for backwards compatibility, if the selector must
    /// read them); `object` and `old` are the request's objects (either may be absent).
    pub(crate) fn matches(
        &self,
        attrs: &Attributes<'_>,
        namespace: Option<&BTreeMap<String, String>>,
        object: Option<&Value>,
        old: Option<&Value>,
    ) -> Result<bool, ApiError> {
        if !self.rules.iter().any(|rule| rule.matches(attrs)) {
            return Ok(false);
        }
        // `MatchObjectSelector`: the new or the old object's labels.
        let selected =
            |obj: Option<&Value>| obj.is_some_and(|o| self.object_selector.matches(&labels(o)));
        if !self.object_selector.empty && !selected(object) && !selected(old) {
            return Ok(false);
        }
        // `MatchNamespaceSelector`: cluster-scoped objects other than namespaces always match.
        if (attrs.namespace.is_empty() && !attrs.is_namespace()) || self.namespace_selector.empty {
            return Ok(true);
        }
        let own_labels;
        let namespace_labels = if attrs.is_namespace()
            && attrs.subresource.is_empty()
            && matches!(attrs.operation, Operation::Create | Operation::Update)
        {
            // A namespace being created or updated: its own (new) labels.
            own_labels = object.map(labels).unwrap_or_default();
            &own_labels
        } else {
            namespace.ok_or_else(|| {
                ApiError::not_found(&GroupResource::new("", "namespaces"), attrs.namespace)
            })?
        };
        Ok(self.namespace_selector.matches(namespace_labels))
    }
}

impl Rule {
    /// `rules.Matcher.Matches`: scope, operation, group, version and resource.
    fn matches(&self, attrs: &Attributes<'_>) -> bool {
        let scope = match self.scope.as_str() {
            "" | "*" => true,
            "Namespaced" => !attrs.is_namespace() && !attrs.namespace.is_empty(),
            "Cluster" => attrs.is_namespace() || attrs.namespace.is_empty(),
            _ => false,
        };
        let any = |items: &[String], wanted: &str| items.iter().any(|i| i == "*" || i == wanted);
        scope
            && any(&self.operations, attrs.operation.as_str())
            && any(&self.api_groups, attrs.group)
            && any(&self.api_versions, attrs.version)
            && self.resources.iter().any(|entry| {
                // `pods` is the main resource only, `pods/*` every subresource and the
                // main resource, `*/status` every status, `*/*` everything.
                let (resource, sub) = entry.split_once('/').unwrap_or((entry.as_str(), ""));
                (resource == "*" || resource == attrs.resource)
                    && (sub == "*" || sub == attrs.subresource)
            })
    }
}

/// An object's `metadata.labels`.
pub(crate) fn labels(obj: &Value) -> BTreeMap<String, String> {
    obj.pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|labels| {
            labels.iter().filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned()))).collect()
        })
        .unwrap_or_default()
}

/// The webhooks of stored configurations, in the order kube-apiserver calls them: by
/// configuration name, then in each configuration's order. Webhooks that do not parse (none
/// do once stored: [`prepare`] validated them) are left out.
pub(crate) fn webhooks<'a>(configurations: impl Iterator<Item = &'a Value>) -> Vec<Webhook> {
    let mut configurations: Vec<&Value> = configurations.collect();
    configurations.sort_by(|a, b| meta_str(a, "name").cmp(meta_str(b, "name")));
    let mut hooks = Vec::new();
    for configuration in configurations {
        let entries = configuration.get("webhooks").and_then(Value::as_array);
        for hook in entries.into_iter().flatten() {
            if let Some(hook) = parse_webhook(meta_str(configuration, "name"), hook) {
                hooks.push(hook);
            }
        }
    }
    hooks
}

fn parse_webhook(configuration: &str, hook: &Value) -> Option<Webhook> {
    let strings = |value: Option<&Value>| -> Vec<String> {
        value
            .and_then(Value::as_array)
            .map(|items| items.iter().filter_map(|i| i.as_str().map(str::to_owned)).collect())
            .unwrap_or_default()
    };
    let text = |key: &str| hook.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
    let rules = hook
        .get("rules")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|rule| Rule {
            operations: strings(rule.get("operations")),
            api_groups: strings(rule.get("apiGroups")),
            api_versions: strings(rule.get("apiVersions")),
            resources: strings(rule.get("resources")),
            scope: rule.get("scope").and_then(Value::as_str).unwrap_or("*").to_owned(),
        })
        .collect();
    let seconds = hook.get("timeoutSeconds").and_then(Value::as_i64);
    let seconds = seconds.unwrap_or(DEFAULT_TIMEOUT_SECONDS).clamp(1, 30);
    Some(Webhook {
        configuration: configuration.to_owned(),
        name: text("name"),
        client: ClientConfig::parse(hook.get("clientConfig")?)?,
        rules,
        fail_open: text("failurePolicy") == "Ignore",
        namespace_selector: Selector::parse(hook.get("namespaceSelector"))?,
        object_selector: Selector::parse(hook.get("objectSelector"))?,
        side_effects: text("sideEffects"),
        timeout: Duration::from_secs(seconds.unsigned_abs()),
        review_versions: strings(hook.get("admissionReviewVersions")),
    })
}

/// A CRD's conversion webhook: where it is and the `ConversionReview` versions it takes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ConversionWebhook {
    pub(crate) client: ClientConfig,
    /// `conversionReviewVersions`, in the webhook's order of preference.
    pub(crate) review_versions: Vec<String>,
}

/// The conversion webhook of a CRD whose `spec.conversion.strategy` is `Webhook`; `None` for
/// the `None` strategy (or none given), which rewrites `apiVersion` and nothing else.
pub(crate) fn conversion_webhook(crd: &Value) -> Option<ConversionWebhook> {
    let conversion = crd.pointer("/spec/conversion")?;
    if conversion.get("strategy").and_then(Value::as_str) != Some("Webhook") {
        return None;
    }
    let webhook = conversion.get("webhook")?;
    let versions = webhook.get("conversionReviewVersions").and_then(Value::as_array);
    Some(ConversionWebhook {
        client: ClientConfig::parse(webhook.get("clientConfig")?)?,
        review_versions: versions
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
    })
}

/// Checks a CRD's `spec.conversion` as apiextensions validation does, for the fields this
/// server reads: a `Webhook` strategy needs a client configuration and review versions.
pub(crate) fn validate_conversion(crd: &Value, errors: &mut Vec<(String, &'static str, String)>) {
    let Some(conversion) = crd.pointer("/spec/conversion") else { return };
    let strategy = conversion.get("strategy").and_then(Value::as_str).unwrap_or("None");
    match strategy {
        "None" => {}
        "Webhook" => {
            let path = "spec.conversion.webhook";
            match conversion.get("webhook") {
                Some(webhook) if !webhook.is_null() => {
                    let versions = webhook.get("conversionReviewVersions");
                    if versions.and_then(Value::as_array).is_none_or(Vec::is_empty) {
                        errors.push((
                            format!("{path}.conversionReviewVersions"),
                            "FieldValueRequired",
                            "Required value: must specify one of v1, v1beta1".to_owned(),
                        ));
                    }
                    match webhook.get("clientConfig") {
                        Some(config) if !config.is_null() => {
                            validate_client_config(config, &format!("{path}.clientConfig"), errors);
                        }
                        _ => errors.push((
                            format!("{path}.clientConfig"),
                            "FieldValueRequired",
                            "Required value: required when strategy is set to Webhook".to_owned(),
                        )),
                    }
                }
                _ => errors.push((
                    path.to_owned(),
                    "FieldValueRequired",
                    "Required value: must be specified when strategy is set to Webhook".to_owned(),
                )),
            }
        }
        other => errors.push((
            "spec.conversion.strategy".to_owned(),
            "FieldValueNotSupported",
            format!("Unsupported value: {other:?}: supported values: \"None\", \"Webhook\""),
        )),
    }
}

/// Sets the defaults kube-apiserver's v1 defaulting gives a webhook configuration
/// (`SetDefaults_ValidatingWebhook`, `SetDefaults_MutatingWebhook`, `SetDefaults_Rule`,
/// `SetDefaults_ServiceReference`), then validates it as
/// `ValidateValidatingWebhookConfiguration` does for the fields this server reads; called
/// before a configuration is stored.
///
/// # Errors
///
/// `422 Invalid` with kube-apiserver's field errors.
pub(crate) fn prepare(obj: &mut Value, mutating: bool) -> Result<(), ApiError> {
    if let Some(hooks) = obj.get_mut("webhooks").and_then(Value::as_array_mut) {
        for hook in hooks.iter_mut().filter_map(Value::as_object_mut) {
            set_defaults(hook, mutating);
        }
    }
    let mut errors = Vec::new();
    let mut names: Vec<&str> = Vec::new();
    let hooks = obj.get("webhooks").and_then(Value::as_array);
    for (i, hook) in hooks.into_iter().flatten().enumerate() {
        let path = format!("webhooks[{i}]");
        validate_webhook(hook, &path, mutating, &mut errors);
        let name = hook.get("name").and_then(Value::as_str).unwrap_or_default();
        if !name.is_empty() {
            if names.contains(&name) {
                errors.push((
                    format!("{path}.name"),
                    "FieldValueDuplicate",
                    format!("Duplicate value: {name:?}"),
                ));
            } else {
                names.push(name);
            }
        }
    }
    if errors.is_empty() {
        return Ok(());
    }
    let kind =
        if mutating { "MutatingWebhookConfiguration" } else { "ValidatingWebhookConfiguration" };
    let errors: Vec<(&str, &str, String)> =
        errors.iter().map(|(f, r, m)| (f.as_str(), *r, m.clone())).collect();
    Err(ApiError::invalid(kind, GROUP, meta_str(obj, "name"), &errors))
}

fn set_defaults(hook: &mut Map<String, Value>, mutating: bool) {
    let mut default = |key: &str, value: Value| {
        if hook.get(key).is_none_or(Value::is_null) {
            hook.insert(key.to_owned(), value);
        }
    };
    default("failurePolicy", json!("Fail"));
    default("matchPolicy", json!("Equivalent"));
    default("namespaceSelector", json!({}));
    default("objectSelector", json!({}));
    default("timeoutSeconds", json!(DEFAULT_TIMEOUT_SECONDS));
    if mutating {
        default("reinvocationPolicy", json!("Never"));
    }
    if let Some(rules) = hook.get_mut("rules").and_then(Value::as_array_mut) {
        for rule in rules.iter_mut().filter_map(Value::as_object_mut) {
            if rule.get("scope").is_none_or(Value::is_null) {
                rule.insert("scope".into(), json!("*"));
            }
        }
    }
    let service = hook.get_mut("clientConfig").and_then(|c| c.get_mut("service"));
    if let Some(service) = service.and_then(Value::as_object_mut)
        && service.get("port").is_none_or(Value::is_null)
    {
        service.insert("port".into(), json!(443));
    }
}

/// Sets a CRD's conversion service port to its default (443), as apiextensions v1 defaulting
/// does.
pub(crate) fn default_conversion(crd: &mut Value) {
    let service = crd.pointer_mut("/spec/conversion/webhook/clientConfig/service");
    if let Some(service) = service.and_then(Value::as_object_mut)
        && service.get("port").is_none_or(Value::is_null)
    {
        service.insert("port".into(), json!(443));
    }
}

/// One webhook's field errors (`validateValidatingWebhook`, `validateMutatingWebhook`,
/// `validateAdmissionReviewVersions`): the fields whose values this server relies on.
fn validate_webhook(
    hook: &Value,
    path: &str,
    mutating: bool,
    errors: &mut Vec<(String, &'static str, String)>,
) {
    let text = |key: &str| hook.get(key).and_then(Value::as_str);
    let mut not_supported = |key: &str, supported: &[&str]| {
        if let Some(value) = text(key).filter(|v| !supported.contains(v)) {
            let list: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
            errors.push((
                format!("{path}.{key}"),
                "FieldValueNotSupported",
                format!("Unsupported value: {value:?}: supported values: {}", list.join(", ")),
            ));
        }
    };
    not_supported("failurePolicy", &["Fail", "Ignore"]);
    not_supported("matchPolicy", &["Equivalent", "Exact"]);
    if mutating {
        not_supported("reinvocationPolicy", &["IfNeeded", "Never"]);
    }
    match text("sideEffects") {
        None => errors.push((
            format!("{path}.sideEffects"),
            "FieldValueRequired",
            "Required value: must specify one of None, NoneOnDryRun".to_owned(),
        )),
        Some(value) if !matches!(value, "None" | "NoneOnDryRun") => errors.push((
            format!("{path}.sideEffects"),
            "FieldValueNotSupported",
            format!("Unsupported value: {value:?}: supported values: \"None\", \"NoneOnDryRun\""),
        )),
        Some(_) => {}
    }
    if let Some(seconds) = hook.get("timeoutSeconds").and_then(Value::as_i64)
        && !(1..=30).contains(&seconds)
    {
        errors.push((
            format!("{path}.timeoutSeconds"),
            "FieldValueInvalid",
            format!("Invalid value: {seconds}: the timeout value must be between 1 and 30 seconds"),
        ));
    }
    let versions: Vec<&str> = hook
        .get("admissionReviewVersions")
        .and_then(Value::as_array)
        .map(|v| v.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if versions.is_empty() {
        errors.push((
            format!("{path}.admissionReviewVersions"),
            "FieldValueRequired",
            "Required value: must specify one of v1, v1beta1".to_owned(),
        ));
    } else if !versions.iter().any(|v| matches!(*v, "v1" | "v1beta1")) {
        let quoted: Vec<String> = versions.iter().map(|v| format!("{v:?}")).collect();
        errors.push((
            format!("{path}.admissionReviewVersions"),
            "FieldValueInvalid",
            format!(
                "Invalid value: []string{{{}}}: must include at least one of v1, v1beta1",
                quoted.join(", ")
            ),
        ));
    }
    validate_rules(hook, path, errors);
    for key in ["namespaceSelector", "objectSelector"] {
        if Selector::parse(hook.get(key)).is_none() {
            errors.push((
                format!("{path}.{key}"),
                "FieldValueInvalid",
                "Invalid value: the selector does not parse as a metav1.LabelSelector".to_owned(),
            ));
        }
    }
    match hook.get("clientConfig") {
        Some(config) => validate_client_config(config, &format!("{path}.clientConfig"), errors),
        None => errors.push((
            format!("{path}.clientConfig"),
            "FieldValueRequired",
            "Required value: exactly one of url or service is required".to_owned(),
        )),
    }
}

/// A webhook's `rules` (`validateRuleWithOperations`): operations among those that exist,
/// and groups, versions and resources given.
fn validate_rules(hook: &Value, path: &str, errors: &mut Vec<(String, &'static str, String)>) {
    for (i, rule) in hook.get("rules").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let operations = rule.get("operations").and_then(Value::as_array);
        if operations.is_none_or(Vec::is_empty) {
            errors.push((
                format!("{path}.rules[{i}].operations"),
                "FieldValueRequired",
                "Required value".to_owned(),
            ));
        }
        for (j, op) in operations.into_iter().flatten().enumerate() {
            let op = op.as_str().unwrap_or_default();
            if !matches!(op, "*" | "CREATE" | "UPDATE" | "DELETE" | "CONNECT") {
                errors.push((
                    format!("{path}.rules[{i}].operations[{j}]"),
                    "FieldValueNotSupported",
                    format!(
                        "Unsupported value: {op:?}: supported values: \"*\", \"CONNECT\", \
                         \"CREATE\", \"DELETE\", \"UPDATE\""
                    ),
                ));
            }
        }
        for key in ["apiGroups", "apiVersions", "resources"] {
            if rule.get(key).and_then(Value::as_array).is_none_or(Vec::is_empty) {
                errors.push((
                    format!("{path}.rules[{i}].{key}"),
                    "FieldValueRequired",
                    "Required value".to_owned(),
                ));
            }
        }
    }
}

/// `url` xor `service`, an `https` URL with a host (`ValidateWebhookURL`), a service with a
/// name and a namespace (`ValidateWebhookService`), and a `caBundle` in base64.
fn validate_client_config(
    config: &Value,
    path: &str,
    errors: &mut Vec<(String, &'static str, String)>,
) {
    let url = config.get("url").filter(|u| !u.is_null());
    let service = config.get("service").filter(|s| !s.is_null());
    match (url, service) {
        (Some(url), None) => {
            let url = url.as_str().unwrap_or_default();
            let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
            if scheme != "https" {
                errors.push((
                    format!("{path}.url"),
                    "FieldValueInvalid",
                    format!(
                        "Invalid value: {scheme:?}: 'https' is the only allowed URL scheme{FORM}"
                    ),
                ));
            }
            let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
            if host.is_empty() {
                errors.push((
                    format!("{path}.url"),
                    "FieldValueInvalid",
                    format!("Invalid value: \"\": host must be specified{FORM}"),
                ));
            }
            if let Some((_, query)) = rest.split_once('?') {
                let query = query.split('#').next().unwrap_or_default();
                errors.push((
                    format!("{path}.url"),
                    "FieldValueInvalid",
                    format!(
                        "Invalid value: {query:?}: query parameters are not permitted in the URL"
                    ),
                ));
            }
        }
        (None, Some(service)) => {
            for key in ["name", "namespace"] {
                if service.get(key).and_then(Value::as_str).is_none_or(str::is_empty) {
                    errors.push((
                        format!("{path}.service.{key}"),
                        "FieldValueRequired",
                        "Required value".to_owned(),
                    ));
                }
            }
            let port = service.get("port").and_then(Value::as_i64).unwrap_or(443);
            if !(1..=65535).contains(&port) {
                errors.push((
                    format!("{path}.service.port"),
                    "FieldValueInvalid",
                    format!(
                        "Invalid value: {port}: port is not valid: must be between 1 and 65535, \
                         inclusive"
                    ),
                ));
            }
        }
        _ => errors.push((
            path.to_owned(),
            "FieldValueRequired",
            "Required value: exactly one of url or service is required".to_owned(),
        )),
    }
    if let Some(bundle) = config.get("caBundle").and_then(Value::as_str)
        && base64_decode(bundle).is_none()
    {
        errors.push((
            format!("{path}.caBundle"),
            "FieldValueInvalid",
            "Invalid value: the bundle is not base64".to_owned(),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs<'a>(op: Operation, resource: &'a str, sub: &'a str, ns: &'a str) -> Attributes<'a> {
        Attributes {
            operation: op,
            group: "example.com",
            version: "v1",
            resource,
            subresource: sub,
            namespace: ns,
        }
    }

    fn configuration(hook: &Value) -> Value {
        let mut obj = json!({"metadata": {"name": "c"}, "webhooks": [hook]});
        prepare(&mut obj, false).unwrap();
        obj
    }

    fn hook(rules: &Value) -> Value {
        json!({"name": "w.example.com", "sideEffects": "None", "admissionReviewVersions": ["v1"],
               "clientConfig": {"url": "https://127.0.0.1:1/v"}, "rules": rules})
    }

    /// The resource forms of `rules.Matcher.resource` (kube's `TestResource` in
    /// `predicates/rules/rules_test.go`).
    #[test]
    fn resources_match_with_their_subresources_as_kube_apiserver_matches_them() {
        let cases = [
            ("widgets", "", "widgets", true),
            ("widgets", "status", "widgets", false),
            ("widgets", "status", "widgets/status", true),
            ("widgets", "", "widgets/*", true),
            ("widgets", "scale", "widgets/*", true),
            ("widgets", "", "*", true),
            ("widgets", "status", "*", false),
            ("widgets", "status", "*/status", true),
            ("widgets", "status", "*/*", true),
            ("gadgets", "", "widgets", false),
        ];
        for (resource, sub, rule, expected) in cases {
            let rules = json!([{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"],
                                "resources": [rule]}]);
            let hooks = webhooks(std::iter::once(&configuration(&hook(&rules))));
            let a = attrs(Operation::Create, resource, sub, "ns");
            let got = hooks[0].matches(&a, None, None, None).unwrap();
            assert_eq!(got, expected, "{resource}/{sub} against {rule}");
        }
    }

    #[test]
    fn operations_scope_and_selectors_decide_too() {
        let rules = json!([{"operations": ["CREATE"], "apiGroups": ["example.com"],
                            "apiVersions": ["v1"], "resources": ["widgets"], "scope": "Namespaced"}]);
        let mut with_selectors = hook(&rules);
        with_selectors["namespaceSelector"] = json!({"matchLabels": {"team": "a"}});
        with_selectors["objectSelector"] =
            json!({"matchExpressions": [{"key": "skip", "operator": "DoesNotExist"}]});
        let hooks = webhooks(std::iter::once(&configuration(&with_selectors)));
        let hook = &hooks[0];
        let team_a = BTreeMap::from([("team".to_owned(), "a".to_owned())]);
        let in_a = Some(&team_a);
        let plain = json!({"metadata": {"name": "x"}});
        let skipped = json!({"metadata": {"name": "x", "labels": {"skip": "yes"}}});
        let create = attrs(Operation::Create, "widgets", "", "ns");
        assert!(hook.matches(&create, in_a, Some(&plain), None).unwrap());
        let update = attrs(Operation::Update, "widgets", "", "ns");
        assert!(!hook.matches(&update, in_a, Some(&plain), None).unwrap(), "operation");
        assert!(!hook.matches(&create, in_a, Some(&skipped), None).unwrap(), "object selector");
        let none = BTreeMap::new();
        let other = Some(&none);
        assert!(!hook.matches(&create, other, Some(&plain), None).unwrap(), "namespace selector");
        let missing = hook.matches(&create, None, Some(&plain), None);
        assert_eq!(missing.unwrap_err().message, "namespaces \"ns\" not found");
        let cluster = attrs(Operation::Create, "widgets", "", "");
        assert!(!hook.matches(&cluster, in_a, Some(&plain), None).unwrap(), "scope");
    }

    #[test]
    fn configurations_are_defaulted_and_validated() {
        let mut obj = json!({"metadata": {"name": "c"}, "webhooks": [
            {"name": "a.example.com", "sideEffects": "None", "admissionReviewVersions": ["v1"],
             "clientConfig": {"service": {"namespace": "ns", "name": "svc"}},
             "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                        "resources": ["pods"]}]}]});
        prepare(&mut obj, true).unwrap();
        let hook = &obj["webhooks"][0];
        assert_eq!(
            (&hook["failurePolicy"], &hook["matchPolicy"], &hook["timeoutSeconds"]),
            (&json!("Fail"), &json!("Equivalent"), &json!(10))
        );
        assert_eq!(hook["reinvocationPolicy"], "Never");
        assert_eq!(hook["rules"][0]["scope"], "*");
        assert_eq!(hook["clientConfig"]["service"]["port"], 443);
        let hooks = webhooks(std::iter::once(&obj));
        assert_eq!(hooks[0].client.url(), "https://svc.ns.svc:443");

        let mut bad = json!({"metadata": {"name": "c"}, "webhooks": [
            {"name": "a.example.com", "timeoutSeconds": 31, "admissionReviewVersions": ["v2"],
             "clientConfig": {"url": "http://x"}}]});
        let error = prepare(&mut bad, false).unwrap_err();
        assert_eq!(
            error.message,
            "ValidatingWebhookConfiguration.admissionregistration.k8s.io \"c\" is invalid: [\
             webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun, \
             webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 \
             and 30 seconds, webhooks[0].admissionReviewVersions: Invalid value: []string{\"v2\"}: \
             must include at least one of v1, v1beta1, webhooks[0].clientConfig.url: Invalid \
             value: \"http\": 'https' is the only allowed URL scheme; desired format: \
             https://host[/path]]"
        );
    }
}
