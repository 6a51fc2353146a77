//! What the generator knows about one resource, and the naming rules derived from it.

// The naming rules both front ends follow.
pub(crate) use informer_emit::names::{group_full_name, group_short_name};

/// The oldest Kubernetes minor version (`1.x`) k8s-openapi offers.
pub const OLDEST_MINOR: u32 = 33;
/// The newest Kubernetes minor version (`1.x`) k8s-openapi offers.
pub const NEWEST_MINOR: u32 = 37;

/// One listable resource type.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ResourceSpec {
    /// API group (`""` for the core group).
    pub group: String,
    /// API version (`v1`, `v1beta1`, …).
    pub version: String,
    /// Kind (`Pod`).
    pub kind: String,
    /// Plural resource name, as in URLs (`pods`).
    pub plural: String,
    /// Path of the Rust type (`::k8s_openapi::api::core::v1::Pod`).
    pub rust_path: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// The Kubernetes minor versions `(first, last)` (both inclusive, `1.first ..= 1.last`) in
    /// which the type exists, or `None` if it exists in every version from [`OLDEST_MINOR`] to
    /// [`NEWEST_MINOR`].
    pub versions: Option<(u32, u32)>,
}

impl ResourceSpec {
    /// The accessor method: the plural in snake case (`horizontal_pod_autoscalers`,
    /// `network_policies`, `endpoints`).
    ///
    /// The word boundaries come from the kind, the spelling of the plural from `plural`
    /// ([`informer_emit::names::method_name`], which `#[derive(Informer)]` uses too).
    #[must_use]
    pub fn method_name(&self) -> String {
        informer_emit::names::method_name(&self.kind, &self.plural)
    }

    /// The name of the Rust type (the last segment of `rust_path`).
    #[must_use]
    pub fn type_name(&self) -> &str {
        self.rust_path.rsplit("::").next().unwrap_or(&self.rust_path)
    }

    /// `group/version`, or just `version` for the core group.
    #[must_use]
    pub fn group_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

/// Accessor names for `groups` (sorted, deduplicated): the short name, unless an earlier group
/// (in sorted order) already took it; then the full name.
#[must_use]
pub fn group_names(groups: &[&str]) -> Vec<(String, String)> {
    let mut taken = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    for group in groups {
        let short = group_short_name(group);
        let name = if taken.contains(&short) { group_full_name(group) } else { short };
        taken.insert(name.clone());
        out.push(((*group).to_owned(), name));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(kind: &str, plural: &str) -> ResourceSpec {
        ResourceSpec {
            group: String::new(),
            version: "v1".into(),
            kind: kind.into(),
            plural: plural.into(),
            rust_path: format!("::k8s_openapi::api::core::v1::{kind}"),
            namespaced: true,
            versions: None,
        }
    }

    #[test]
    fn method_names_are_snake_case_plurals() {
        assert_eq!(spec("Pod", "pods").method_name(), "pods");
        assert_eq!(
            spec("HorizontalPodAutoscaler", "horizontalpodautoscalers").method_name(),
            "horizontal_pod_autoscalers"
        );
        assert_eq!(spec("NetworkPolicy", "networkpolicies").method_name(), "network_policies");
        assert_eq!(spec("Endpoints", "endpoints").method_name(), "endpoints");
        assert_eq!(spec("IngressClass", "ingressclasses").method_name(), "ingress_classes");
        assert_eq!(spec("CSIDriver", "csidrivers").method_name(), "csi_drivers");
        assert_eq!(spec("Pod", "pods").type_name(), "Pod");
    }

    #[test]
    fn group_names_follow_client_go() {
        assert_eq!(group_short_name(""), "core");
        assert_eq!(group_short_name("apps"), "apps");
        assert_eq!(group_short_name("networking.k8s.io"), "networking");
        assert_eq!(group_short_name("flowcontrol.apiserver.k8s.io"), "flowcontrol");
        assert_eq!(group_short_name("rbac.authorization.k8s.io"), "rbac");
        assert_eq!(group_short_name("storagemigration.k8s.io"), "storagemigration");
        assert_eq!(group_short_name("my-group.example.com"), "my_group");
    }

    #[test]
    fn clashing_group_names_are_resolved_in_order() {
        let names = group_names(&["", "apps", "apps.example.com", "core.example.com"]);
        let names: Vec<_> = names.iter().map(|(_, n)| n.as_str()).collect();
        assert_eq!(names, ["core", "apps", "apps_example_com", "core_example_com"]);
    }
}
