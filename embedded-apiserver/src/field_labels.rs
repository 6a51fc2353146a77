//! Field selector labels: which ones each type takes, and how it refuses the others.
//!
//! kube-apiserver converts every label of a field selector with the kind's field label
//! conversion function (`pkg/apis/*/v1/conversion.go`), or apimachinery's default one for kinds
//! without one; custom resources take `metadata.name` and `metadata.namespace`. The error
//! message differs between them, and clients show it (`kubectl get --field-selector`), so each
//! type keeps its own.

/// The field selector labels of a type, and the message for the others.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FieldLabels {
    /// No conversion function: `metadata.name` and `metadata.namespace`; any other label is
    /// `"x" is not a known field selector: only "metadata.name", "metadata.namespace"`.
    Default,
    /// A conversion function that takes these labels; any other is
    /// `field label not supported: x`.
    Listed(&'static [&'static str]),
    /// The Job's conversion function: these labels; any other is
    /// `field label "x" not supported for Job`.
    ListedFor(&'static [&'static str], &'static str),
}

/// Pods: `spec.host` is the old name of `spec.nodeName`.
const POD: &[&str] = &[
    "metadata.name",
    "metadata.namespace",
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.schedulerName",
    "spec.serviceAccountName",
    "spec.hostNetwork",
    "status.phase",
    "status.podIP",
    "status.podIPs",
    "status.nominatedNodeName",
    "spec.host",
];
/// core/v1 events.
const EVENT: &[&str] = &[
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
    "metadata.namespace",
    "metadata.name",
];

impl FieldLabels {
    /// What custom resources (and types declared to the server) take.
    pub(crate) const CUSTOM: Self = Self::Listed(&["metadata.name", "metadata.namespace"]);

    /// The labels of a built-in kind, as kube-apiserver registers them. Nodes and namespaces
    /// take no `metadata.namespace`.
    pub(crate) fn builtin(group: &str, kind: &str) -> Self {
        match (group, kind) {
            ("", "Pod") => Self::Listed(POD),
            ("", "Node") => Self::Listed(&["metadata.name", "spec.unschedulable"]),
            ("", "Event") => Self::Listed(EVENT),
            ("", "Namespace") => Self::Listed(&["status.phase", "metadata.name"]),
            ("", "Secret") => Self::Listed(&["type", "metadata.namespace", "metadata.name"]),
            ("", "Service") => Self::Listed(&[
                "metadata.namespace",
                "metadata.name",
                "spec.clusterIP",
                "spec.type",
            ]),
            ("batch", "Job") => Self::ListedFor(
                &["metadata.name", "metadata.namespace", "status.successful"],
                "Job",
            ),
            _ => Self::Default,
        }
    }

    /// The field a label selects on (`spec.host` is `spec.nodeName`).
    ///
    /// # Errors
    ///
    /// The message of the 400 `BadRequest` for a label the type does not take.
    pub(crate) fn convert<'a>(&self, label: &'a str) -> Result<&'a str, String> {
        let known = match self {
            Self::Default => matches!(label, "metadata.name" | "metadata.namespace"),
            Self::Listed(labels) | Self::ListedFor(labels, _) => labels.contains(&label),
        };
        if known {
            return Ok(if label == "spec.host" { "spec.nodeName" } else { label });
        }
        Err(match self {
            Self::Default => format!(
                "{label:?} is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
            ),
            Self::Listed(_) => format!("field label not supported: {label}"),
            Self::ListedFor(_, kind) => format!("field label {label:?} not supported for {kind}"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_refuses_unknown_labels_with_its_own_message() {
        let pods = FieldLabels::builtin("", "Pod");
        assert_eq!(pods.convert("spec.host"), Ok("spec.nodeName"));
        assert_eq!(pods.convert("x").unwrap_err(), "field label not supported: x");
        let configmaps = FieldLabels::builtin("", "ConfigMap");
        assert_eq!(configmaps.convert("metadata.namespace"), Ok("metadata.namespace"));
        assert_eq!(
            configmaps.convert("data.k").unwrap_err(),
            "\"data.k\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
        );
        let jobs = FieldLabels::builtin("batch", "Job");
        assert_eq!(jobs.convert("x").unwrap_err(), "field label \"x\" not supported for Job");
        assert!(FieldLabels::builtin("", "Node").convert("metadata.namespace").is_err());
    }
}
