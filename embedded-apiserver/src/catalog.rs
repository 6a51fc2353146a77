//! What the server serves: resource types by group/version/resource, built-ins and CRDs.
//!
//! The catalog is the embedded server's scheme and `RESTMapper` in one: discovery documents,
//! path routing and storage all start from an [`ApiResource`] found here. Built-ins come from a
//! table; CRDs add and remove entries at run time (see `crd.rs`).

use std::cmp::Ordering;
use std::sync::Arc;

use informer_runtime::Resource;

use crate::field_labels::FieldLabels;
use crate::status::GroupResource;
use crate::webhook_config::ConversionWebhook;

/// A resource type the server serves: one group/version/resource with its kind and names, as
/// discovery describes it (`APIResource`).
///
/// The built-in types and those of CRDs created through the API are served without being
/// declared; declare other types with
/// [`Config::resource`](crate::Config::resource) or [`ServerHandle::register`](crate::ServerHandle::register).
///
/// ```
/// use embedded_apiserver::ResourceType;
///
/// let crontabs = ResourceType::new("stable.example.com", "v1", "CronTab", "crontabs", true)
///     .short_names(&["ct"])
///     .status_subresource(true);
/// assert_eq!(crontabs.singular, "crontab");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceType {
    /// API group, `""` for the core group.
    pub group: String,
    /// Version within the group, for example `v1`.
    pub version: String,
    /// Kind of the objects, for example `Pod`.
    pub kind: String,
    /// Plural name as it appears in URLs, for example `pods`.
    pub plural: String,
    /// Singular name (`kubectl get pod`); the lowercased kind by default.
    pub singular: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// Short names (`po`), for kubectl.
    pub short_names: Vec<String>,
    /// Categories (`all`), for kubectl.
    pub categories: Vec<String>,
    /// Whether `status` is written only through the `/status` subresource: updates of the main
    /// resource keep the stored status, updates of `/status` change nothing but the status.
    pub status_subresource: bool,
}

impl ResourceType {
    /// A type with no short names, no categories and no status subresource.
    #[must_use]
    pub fn new(group: &str, version: &str, kind: &str, plural: &str, namespaced: bool) -> Self {
        Self {
            group: group.to_owned(),
            version: version.to_owned(),
            kind: kind.to_owned(),
            plural: plural.to_owned(),
            singular: kind.to_lowercase(),
            namespaced,
            short_names: Vec::new(),
            categories: Vec::new(),
            status_subresource: false,
        }
    }

    /// The type of a k8s-openapi resource (or of a custom resource type implementing its
    /// `Resource` trait).
    ///
    /// ```
    /// # use embedded_apiserver::ResourceType;
    /// use k8s_openapi::api::apps::v1::Deployment;
    /// let deployments = ResourceType::of::<Deployment>();
    /// assert_eq!((deployments.group.as_str(), deployments.plural.as_str()), ("apps", "deployments"));
    /// ```
    #[must_use]
    pub fn of<K: Resource>() -> Self {
        let namespaced = informer_runtime::is_namespaced::<K>();
        Self::new(K::GROUP, K::VERSION, K::KIND, K::PLURAL, namespaced)
    }

    /// Sets the short names.
    #[must_use]
    pub fn short_names(mut self, names: &[&str]) -> Self {
        self.short_names = names.iter().map(|&n| n.to_owned()).collect();
        self
    }

    /// Sets the categories.
    #[must_use]
    pub fn categories(mut self, categories: &[&str]) -> Self {
        self.categories = categories.iter().map(|&c| c.to_owned()).collect();
        self
    }

    /// Sets the singular name.
    #[must_use]
    pub fn singular(mut self, singular: &str) -> Self {
        singular.clone_into(&mut self.singular);
        self
    }

    /// Sets whether the type has a `/status` subresource.
    #[must_use]
    pub fn status_subresource(mut self, yes: bool) -> Self {
        self.status_subresource = yes;
        self
    }

    /// `apps/v1`, or `v1` in the core group.
    pub(crate) fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

/// A CRD's `additionalPrinterColumns` entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PrinterColumn {
    pub(crate) name: String,
    pub(crate) type_: String,
    pub(crate) format: String,
    pub(crate) description: String,
    pub(crate) priority: i64,
    pub(crate) json_path: String,
}

/// Everything the server knows about one served group/version/resource.
#[derive(Clone, Debug)]
pub(crate) struct ApiResource {
    pub(crate) ty: ResourceType,
    pub(crate) list_kind: String,
    /// Where objects are kept: one store per group and resource, whatever the version.
    pub(crate) storage: GroupResource,
    /// The apiVersion objects are stored with (a CRD's storage version).
    pub(crate) storage_version: String,
    /// Built-in lists omit `kind` and `apiVersion` on their items, as typed lists do.
    pub(crate) builtin: bool,
    /// DELETE answers with the object (pods, namespaces, custom resources) rather than a
    /// `Status` (configmaps, deployments).
    pub(crate) returns_deleted_object: bool,
    /// The field selector labels the type takes.
    pub(crate) field_labels: FieldLabels,
    /// The verbs discovery lists, in the API server's order: alphabetical for built-ins, the
    /// apiextensions server's own order for custom resources. Namespaces have no
    /// `deletecollection`.
    pub(crate) verbs: &'static [&'static str],
    /// The type's strategy sets `metadata.generation` and bumps it when the spec changes
    /// (workloads, CRDs, custom resources; not pods or configmaps).
    pub(crate) generation: bool,
    /// Table columns after `Name`; empty means the generic `Name`, `Created At`.
    pub(crate) columns: Vec<PrinterColumn>,
    /// The CRD that defines this type, if any.
    pub(crate) crd: Option<String>,
    /// That CRD's `metadata.uid`: a CRD deleted and created again under its name is another
    /// one, whose storage the old one's requests must not reach (see [`Catalog::serves`]).
    pub(crate) crd_uid: Option<String>,
    /// Where the `/scale` subresource reads and writes, for the types that have one.
    pub(crate) scale: Option<ScalePaths>,
    /// The conversion webhook of a CRD whose `spec.conversion.strategy` is `Webhook`, which
    /// converts its objects between this version and the storage version (`conversion.rs`).
    pub(crate) conversion: Option<Arc<ConversionWebhook>>,
}

/// Where a type's `/scale` subresource (`autoscaling/v1` `Scale`) finds its numbers: a CRD
/// version's `subresources.scale`, or the fixed fields of the built-in workloads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ScalePaths {
    /// `specReplicasPath`, as a JSON pointer (`/spec/replicas`).
    pub(crate) spec_replicas: String,
    /// `statusReplicasPath`, as a JSON pointer.
    pub(crate) status_replicas: String,
    /// Where `status.selector` comes from.
    pub(crate) selector: ScaleSelector,
}

/// The source of a `Scale`'s `status.selector`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ScaleSelector {
    /// A built-in workload's `spec.selector` (a `LabelSelector`), in its string form.
    SpecSelector,
    /// A CRD's `labelSelectorPath` (JSON pointer): a string field, served as it is.
    Path(String),
    /// None declared: the selector is empty.
    None,
}

impl ScalePaths {
    /// The paths of a built-in workload (`Deployment`, `ReplicaSet`, `StatefulSet`).
    fn workload() -> Self {
        Self {
            spec_replicas: "/spec/replicas".to_owned(),
            status_replicas: "/status/replicas".to_owned(),
            selector: ScaleSelector::SpecSelector,
        }
    }

    /// A CRD's `.spec.replicas`-style path as a JSON pointer; `None` for a path that is not a
    /// plain field path (the CRD validation of kube-apiserver refuses those).
    pub(crate) fn pointer(json_path: &str) -> Option<String> {
        let rest = json_path.strip_prefix('.')?;
        let fields: Vec<&str> = rest.split('.').collect();
        if fields.iter().any(|f| f.is_empty() || f.contains(['[', ']', '/', '~'])) {
            return None;
        }
        let mut pointer = String::with_capacity(json_path.len());
        for field in fields {
            pointer.push('/');
            pointer.push_str(field);
        }
        Some(pointer)
    }
}

impl ApiResource {
    /// An entry for a type declared by a test or defined by a CRD (not built in).
    pub(crate) fn custom(ty: ResourceType) -> Self {
        let storage = GroupResource::new(&ty.group, &ty.plural);
        Self {
            list_kind: format!("{}List", ty.kind),
            storage_version: ty.api_version(),
            storage,
            builtin: false,
            returns_deleted_object: true,
            field_labels: FieldLabels::CUSTOM,
            verbs: CUSTOM_RESOURCE_VERBS,
            generation: true,
            columns: Vec::new(),
            crd: None,
            crd_uid: None,
            scale: None,
            conversion: None,
            ty,
        }
    }

    /// The `apiVersion` of objects served at this entry.
    pub(crate) fn api_version(&self) -> String {
        self.ty.api_version()
    }

    /// The resource as messages name it (`deployments.apps`).
    pub(crate) fn group_resource(&self) -> &GroupResource {
        &self.storage
    }
}

/// The built-in table: (group, version, kind, plural, namespaced, short names, categories,
/// status subresource, delete returns the object).
type Builtin = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    bool,
    &'static [&'static str],
    &'static [&'static str],
    bool,
    bool,
);

const ALL: &[&str] = &["all"];
const NONE: &[&str] = &[];

#[rustfmt::skip]
const BUILTINS: &[Builtin] = &[
    ("", "v1", "Pod", "pods", true, &["po"], ALL, true, true),
    ("", "v1", "Namespace", "namespaces", false, &["ns"], NONE, true, true),
    ("", "v1", "ConfigMap", "configmaps", true, &["cm"], NONE, false, false),
    ("", "v1", "Secret", "secrets", true, NONE, NONE, false, false),
    ("", "v1", "Service", "services", true, &["svc"], ALL, true, true),
    ("", "v1", "ServiceAccount", "serviceaccounts", true, &["sa"], NONE, false, false),
    ("", "v1", "Node", "nodes", false, &["no"], NONE, true, true),
    ("", "v1", "Event", "events", true, &["ev"], NONE, false, false),
    ("", "v1", "Endpoints", "endpoints", true, &["ep"], NONE, false, false),
    ("", "v1", "PersistentVolume", "persistentvolumes", false, &["pv"], NONE, true, true),
    ("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", true, &["pvc"], NONE, true, true),
    ("apps", "v1", "Deployment", "deployments", true, &["deploy"], ALL, true, false),
    ("apps", "v1", "ReplicaSet", "replicasets", true, &["rs"], ALL, true, false),
    ("apps", "v1", "StatefulSet", "statefulsets", true, &["sts"], ALL, true, false),
    ("apps", "v1", "DaemonSet", "daemonsets", true, &["ds"], ALL, true, false),
    ("batch", "v1", "Job", "jobs", true, NONE, ALL, true, false),
    ("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", true, &["pdb"], NONE, true, false),
    ("batch", "v1", "CronJob", "cronjobs", true, &["cj"], ALL, true, false),
    ("coordination.k8s.io", "v1", "Lease", "leases", true, NONE, NONE, false, false),
    ("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices", true, NONE, NONE, false, false),
    ("events.k8s.io", "v1", "Event", "events", true, &["ev"], NONE, false, false),
    ("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", false, &["crd", "crds"], &["api-extensions"], true, true),
    ("admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration", "mutatingwebhookconfigurations", false, NONE, &["api-extensions"], false, false),
    ("admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration", "validatingwebhookconfigurations", false, NONE, &["api-extensions"], false, false),
];

/// The verbs every served resource supports.
pub(crate) const VERBS: &[&str] =
    &["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];

/// The same verbs as the apiextensions server lists them for custom resources.
const CUSTOM_RESOURCE_VERBS: &[&str] =
    &["delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"];

/// The verbs of namespaces, which cannot be deleted as a collection.
const NAMESPACE_VERBS: &[&str] = &["create", "delete", "get", "list", "patch", "update", "watch"];

/// The served resources, in registration order (built-ins first).
#[derive(Clone, Debug)]
pub(crate) struct Catalog {
    resources: Vec<Arc<ApiResource>>,
}

impl Catalog {
    /// The built-in types.
    pub(crate) fn builtin() -> Self {
        let resources = BUILTINS
            .iter()
            .map(|&(group, version, kind, plural, namespaced, short, cats, status, ret)| {
                let mut ty = ResourceType::new(group, version, kind, plural, namespaced)
                    .short_names(short)
                    .categories(cats)
                    .status_subresource(status);
                if kind == "Endpoints" {
                    ty = ty.singular("endpoints");
                }
                let mut resource = ApiResource::custom(ty);
                resource.builtin = true;
                resource.generation =
                    matches!(group, "apps" | "batch" | "policy" | "apiextensions.k8s.io")
                        || group == crate::webhook_config::GROUP;
                resource.returns_deleted_object = ret;
                resource.field_labels = FieldLabels::builtin(group, kind);
                // The namespace registry has no DeleteCollection.
                resource.verbs = if plural == "namespaces" { NAMESPACE_VERBS } else { VERBS };
                if group == "apps" && kind != "DaemonSet" {
                    resource.scale = Some(ScalePaths::workload());
                }
                Arc::new(resource)
            })
            .collect();
        Self { resources }
    }

    /// Serves `resource`, replacing an entry with the same group/version/resource.
    pub(crate) fn add(&mut self, resource: ApiResource) {
        let resource = Arc::new(resource);
        let same = |r: &Arc<ApiResource>| {
            r.ty.group == resource.ty.group
                && r.ty.version == resource.ty.version
                && r.ty.plural == resource.ty.plural
        };
        match self.resources.iter_mut().find(|r| same(r)) {
            Some(slot) => *slot = resource,
            None => self.resources.push(resource),
        }
    }

    /// Stops serving the types a CRD defined; returns their storage.
    pub(crate) fn remove_crd(&mut self, crd: &str) -> Vec<GroupResource> {
        let mut removed: Vec<GroupResource> = Vec::new();
        self.resources.retain(|r| {
            let owned = r.crd.as_deref() == Some(crd);
            if owned && !removed.contains(&r.storage) {
                removed.push(r.storage.clone());
            }
            !owned
        });
        removed
    }

    /// The entry for a group/version/resource.
    pub(crate) fn find(
        &self,
        group: &str,
        version: &str,
        plural: &str,
    ) -> Option<Arc<ApiResource>> {
        self.resources
            .iter()
            .find(|r| r.ty.group == group && r.ty.version == version && r.ty.plural == plural)
            .cloned()
    }

    /// The entry of a storage, preferring the storage version.
    pub(crate) fn find_storage(&self, storage: &GroupResource) -> Option<Arc<ApiResource>> {
        let mut entries = self.resources.iter().filter(|r| &r.storage == storage);
        let first = entries.next()?;
        Some(
            std::iter::once(first)
                .chain(entries)
                .find(|r| r.api_version() == r.storage_version)
                .unwrap_or(first)
                .clone(),
        )
    }

    /// Whether `resource`, found by a request before it took the state's lock, is still what
    /// is served at its group, version and resource: not gone, and not a CRD deleted and
    /// created again meanwhile (its uid and maybe its scope changed). kube-apiserver serves
    /// a request from the storage its CRD had when the request arrived, and deleting the CRD
    /// ends that storage; a request here that finds it gone answers as a removed resource's
    /// path does, `404`. Updates of the same CRD (a version added, a status written) keep
    /// serving its requests.
    pub(crate) fn serves(&self, resource: &ApiResource) -> bool {
        let ty = &resource.ty;
        self.find(&ty.group, &ty.version, &ty.plural).is_some_and(|now| {
            now.crd_uid == resource.crd_uid && now.ty.namespaced == ty.namespaced
        })
    }

    /// Whether any version of `group` is served.
    pub(crate) fn serves_group(&self, group: &str) -> bool {
        self.resources.iter().any(|r| r.ty.group == group)
    }

    /// The entries of one group version, in registration order.
    pub(crate) fn in_group_version(&self, group: &str, version: &str) -> Vec<Arc<ApiResource>> {
        self.resources
            .iter()
            .filter(|r| r.ty.group == group && r.ty.version == version)
            .cloned()
            .collect()
    }

    /// The served groups in the order `/apis` lists them, each with its versions ordered by
    /// Kubernetes version priority (the first is the preferred one).
    ///
    /// The order is kube-aggregator's (`SortedByGroupAndVersion`): every group version is an
    /// `APIService` with a group priority, sorted by that priority (highest first) and then by
    /// the `APIService` name (`v1.apps`); a group takes the place of its first version. The
    /// built-in groups have the API server's fixed priorities, CRD groups and declared types
    /// the CRD priority (1000); the core group comes first.
    pub(crate) fn groups(&self) -> Vec<(String, Vec<String>)> {
        let mut services: Vec<(&str, &str)> = Vec::new();
        for r in &self.resources {
            let service = (r.ty.group.as_str(), r.ty.version.as_str());
            if !services.contains(&service) {
                services.push(service);
            }
        }
        services.sort_by(|(ga, va), (gb, vb)| {
            group_priority(gb)
                .cmp(&group_priority(ga))
                .then_with(|| format!("{va}.{ga}").cmp(&format!("{vb}.{gb}")))
        });
        let mut groups: Vec<(String, Vec<String>)> = Vec::new();
        for (group, version) in services {
            match groups.iter_mut().find(|(g, _)| g == group) {
                Some((_, versions)) => versions.push(version.to_owned()),
                None => groups.push((group.to_owned(), vec![version.to_owned()])),
            }
        }
        for (_, versions) in &mut groups {
            versions.sort_by(|a, b| compare_versions(a, b));
        }
        groups
    }
}

/// The `APIService` group priority of a group (`GroupPriorityMinimum`), as kube-apiserver
/// registers its built-in groups; everything else is served like a CRD's group.
fn group_priority(group: &str) -> u32 {
    match group {
        "" => 18_000,
        "apps" => 17_800,
        "events.k8s.io" => 17_750,
        "policy" => 17_600,
        "batch" => 17_400,
        "apiextensions.k8s.io" | "admissionregistration.k8s.io" => 16_700,
        "coordination.k8s.io" => 16_500,
        "discovery.k8s.io" => 16_200,
        _ => 1_000,
    }
}

/// Kubernetes version priority: GA before beta before alpha before anything else, higher
/// numbers first, other strings alphabetically (apimachinery's `CompareKubeAwareVersionStrings`,
/// reversed so that the preferred version sorts first).
pub(crate) fn compare_versions(a: &str, b: &str) -> Ordering {
    /// (stability rank, major, minor) for `v1`, `v2beta3`; `None` for other strings.
    fn parse(v: &str) -> Option<(u8, u64, u64)> {
        let rest = v.strip_prefix('v')?;
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let major = rest[..digits].parse().ok()?;
        let (rank, minor) = match &rest[digits..] {
            "" => (3, 0),
            tail => {
                let (rank, minor) = if let Some(m) = tail.strip_prefix("beta") {
                    (2, m)
                } else {
                    (1, tail.strip_prefix("alpha")?)
                };
                (rank, minor.parse().ok()?)
            }
        };
        Some((rank, major, minor))
    }
    match (parse(a), parse(b)) {
        (Some(x), Some(y)) => y.cmp(&x),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => a.cmp(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_sort_by_kubernetes_priority() {
        let mut versions = vec!["v1alpha1", "foo", "v1beta2", "v2", "v1", "v1beta1", "v10"];
        versions.sort_by(|a, b| compare_versions(a, b));
        assert_eq!(versions, ["v10", "v2", "v1", "v1beta2", "v1beta1", "v1alpha1", "foo"]);
    }

    #[test]
    fn builtins_are_grouped_with_core_first() {
        let catalog = Catalog::builtin();
        let groups = catalog.groups();
        assert_eq!(groups[0], (String::new(), vec!["v1".to_owned()]));
        assert!(groups.iter().any(|(g, _)| g == "apiextensions.k8s.io"));
        let pods = catalog.find("", "v1", "pods").unwrap();
        assert_eq!((pods.list_kind.as_str(), pods.ty.short_names[0].as_str()), ("PodList", "po"));
        assert!(catalog.find("apps", "v1", "pods").is_none());
        assert_eq!(catalog.find("", "v1", "endpoints").unwrap().ty.singular, "endpoints");
    }
}
