//! Owner references: which objects an object belongs to, and which one controls it, as
//! controller-runtime's `controllerutil.SetControllerReference` and `SetOwnerReference` and
//! apimachinery's `metav1.GetControllerOf` and `IsControlledBy` write and read them.
//!
//! **Who it is for.** Reconcile functions that create objects for the object they reconcile:
//! a child that names its parent in `metadata.ownerReferences` is deleted with it by the
//! garbage collector, and its changes reconcile the parent through
//! [`Controller::owns`](crate::controller::Controller::owns) or
//! [`EnqueueOwner`](crate::workqueue::EnqueueOwner).
//!
//! A reference names its owner by `apiVersion`, `kind`, `name` and `uid`. Two references are to
//! the same owner when their group (the `apiVersion` without its version), kind and name are
//! the same, as controller-runtime compares them: a reference written by an older version of
//! the owner's API is replaced, not doubled, and [`refers_to`], `owns` and `EnqueueOwner` all
//! match references so. At most one reference is the *controller* (`controller: true`): the
//! owner that manages the object, which [`set_controller_reference`] refuses to replace.
//!
//! The owner must be stored (it has a `uid`), and a namespaced owner can own only objects of
//! its own namespace, as the garbage collector requires: [`OwnerError`] says which rule failed.
//!
//! In a reconcile function that makes the object it wants to exist:
//!
//! ```
//! use informer_controller::owner_references::{self, OwnerError};
//! use k8s_openapi::api::apps::v1::Deployment;
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
//!
//! /// The ConfigMap a Deployment's reconcile keeps for it: it goes when the Deployment goes,
//! /// and its changes reconcile the Deployment (`Controller::owns::<ConfigMap>()`).
//! fn desired_config(deployment: &Deployment) -> Result<ConfigMap, OwnerError> {
//!     let meta = &deployment.metadata;
//!     let mut config = ConfigMap {
//!         metadata: ObjectMeta {
//!             name: meta.name.as_ref().map(|name| format!("{name}-config")),
//!             namespace: meta.namespace.clone(),
//!             ..ObjectMeta::default()
//!         },
//!         ..ConfigMap::default()
//!     };
//!     owner_references::set_controller_reference(deployment, &mut config)?;
//!     Ok(config)
//! }
//!
//! // The Deployment as the cache holds it: stored, so it has a uid.
//! let deployment = Deployment {
//!     metadata: ObjectMeta {
//!         name: Some("web".into()),
//!         namespace: Some("default".into()),
//!         uid: Some("6b1f6c35".into()),
//!         ..ObjectMeta::default()
//!     },
//!     ..Deployment::default()
//! };
//! let config = desired_config(&deployment)?;
//! let controller = owner_references::controller_of(&config);
//! assert_eq!(controller.map(|r| (r.kind.as_str(), r.name.as_str())), Some(("Deployment", "web")));
//! assert!(owner_references::is_controlled_by(&config, &deployment));
//! # Ok::<(), OwnerError>(())
//! ```

use std::borrow::Cow;

use informer_runtime::dynamic::DynamicObject;
use informer_runtime::resource::{ApiResource, Object, Resource, is_namespaced};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

/// What an owner reference is made from: an object of a kind known at compile time (every
/// [`Resource`]), or a [`DynamicObject`] with the resource it belongs to ([`DynamicOwner`]).
/// Sealed: those two are all there is.
pub trait Owner: sealed::Sealed {
    /// The owner's `apiVersion`.
    #[doc(hidden)]
    fn owner_api_version(&self) -> Cow<'_, str>;
    /// The owner's `kind`.
    #[doc(hidden)]
    fn owner_kind(&self) -> &str;
    /// Whether the owner's kind is namespaced.
    #[doc(hidden)]
    fn owner_namespaced(&self) -> bool;
    /// The owner's metadata.
    #[doc(hidden)]
    fn owner_meta(&self) -> &ObjectMeta;
}

mod sealed {
    pub trait Sealed {}
    impl<O: informer_runtime::resource::Resource> Sealed for O {}
    impl Sealed for super::DynamicOwner<'_> {}
}

impl<O: Resource> Owner for O {
    fn owner_api_version(&self) -> Cow<'_, str> {
        Cow::Borrowed(O::API_VERSION)
    }

    fn owner_kind(&self) -> &str {
        O::KIND
    }

    fn owner_namespaced(&self) -> bool {
        is_namespaced::<O>()
    }

    fn owner_meta(&self) -> &ObjectMeta {
        self.meta()
    }
}

/// A [`DynamicObject`] as an owner: its kind, version and scope come from its resource (a
/// dynamic controller's [`ApiResource`]), not from the object, which may lack them.
///
/// ```
/// use informer_controller::owner_references::{self, DynamicOwner};
/// use informer_runtime::dynamic::DynamicObject;
/// use informer_runtime::resource::ApiResource;
/// use k8s_openapi::api::core::v1::ConfigMap;
///
/// let widgets = ApiResource {
///     group: "example.com".into(),
///     version: "v1".into(),
///     kind: "Widget".into(),
///     plural: "widgets".into(),
///     namespaced: true,
/// };
/// let mut widget = DynamicObject::new("blue", &widgets);
/// widget.metadata.namespace = Some("apps".into());
/// widget.metadata.uid = Some("0d9e4a6c".into());
///
/// let mut config = ConfigMap::default();
/// config.metadata.namespace = Some("apps".into());
/// owner_references::set_controller_reference(&DynamicOwner::new(&widget, &widgets), &mut config)?;
/// let owner = owner_references::controller_of(&config).unwrap();
/// assert_eq!((owner.api_version.as_str(), owner.kind.as_str()), ("example.com/v1", "Widget"));
/// # Ok::<(), owner_references::OwnerError>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct DynamicOwner<'a> {
    object: &'a DynamicObject,
    resource: &'a ApiResource,
}

impl<'a> DynamicOwner<'a> {
    /// `object`, an object of `resource`, as an owner.
    #[must_use]
    pub fn new(object: &'a DynamicObject, resource: &'a ApiResource) -> Self {
        Self { object, resource }
    }
}

impl Owner for DynamicOwner<'_> {
    fn owner_api_version(&self) -> Cow<'_, str> {
        if self.resource.group.is_empty() {
            Cow::Borrowed(&self.resource.version)
        } else {
            Cow::Owned(format!("{}/{}", self.resource.group, self.resource.version))
        }
    }

    fn owner_kind(&self) -> &str {
        &self.resource.kind
    }

    fn owner_namespaced(&self) -> bool {
        self.resource.namespaced
    }

    fn owner_meta(&self) -> &ObjectMeta {
        &self.object.metadata
    }
}

/// Why an owner reference was not set. Each names the objects as `Kind namespace/name`.
///
/// None is worth retrying as it is: each says what to change.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OwnerError {
    /// The owner has no `uid` or `name` (or, of a namespaced kind, no `namespace`): it was not
    /// read from the API server, and a reference to it would name no object.
    #[error(
        "owner {owner} is not stored yet (it has no uid, name or namespace): reference the owner \
         as the API server or the cache returns it, not one built in the program"
    )]
    OwnerNotStored {
        /// The owner, as `Kind namespace/name`.
        owner: String,
    },
    /// The owner is namespaced, and the object is cluster-scoped or in another namespace: the
    /// garbage collector would take the reference to name a missing object, and delete the
    /// dependent.
    #[error(
        "{object} cannot have owner {owner}: a namespaced owner can own only objects of its own \
         namespace; set the object's namespace to the owner's, or choose a cluster-scoped owner"
    )]
    CrossNamespace {
        /// The owner, as `Kind namespace/name`.
        owner: String,
        /// The object, as `Kind namespace/name` (`Kind name` if cluster-scoped).
        object: String,
    },
    /// The object already has a controller, and another one: an object has one controller.
    #[error(
        "{object} is already controlled by {controller}, not by {owner}: an object has one \
         controller; remove that reference first, or add {owner} with `set_owner_reference`"
    )]
    AlreadyOwned {
        /// The object, as `Kind namespace/name`.
        object: String,
        /// The object's controller, as its reference names it: `Kind name`.
        controller: String,
        /// The owner that was to become the controller, as `Kind namespace/name`.
        owner: String,
    },
}

/// A `Result` with an [`OwnerError`].
pub type Result<T, E = OwnerError> = std::result::Result<T, E>;

/// A reference to `owner` as its controller: `controller: true`, and
/// `blockOwnerDeletion: true`, so that a foreground deletion of the owner waits for the
/// dependent.
///
/// # Errors
///
/// [`OwnerError::OwnerNotStored`] if `owner` has no `uid` or `name`, or is of a namespaced kind
/// and has no `namespace`.
#[doc(alias = "NewControllerRef")]
pub fn controller_reference<O: Owner + ?Sized>(owner: &O) -> Result<OwnerReference> {
    let mut reference = owner_reference(owner)?;
    reference.controller = Some(true);
    reference.block_owner_deletion = Some(true);
    Ok(reference)
}

/// A plain reference to `owner`: `controller` and `blockOwnerDeletion` unset.
///
/// # Errors
///
/// [`OwnerError::OwnerNotStored`] if `owner` has no `uid` or `name`, or is of a namespaced kind
/// and has no `namespace`.
pub fn owner_reference<O: Owner + ?Sized>(owner: &O) -> Result<OwnerReference> {
    let meta = owner.owner_meta();
    let stored = |field: &Option<String>| field.as_deref().is_some_and(|value| !value.is_empty());
    if !stored(&meta.uid)
        || !stored(&meta.name)
        || (owner.owner_namespaced() && !stored(&meta.namespace))
    {
        return Err(OwnerError::OwnerNotStored { owner: describe(owner.owner_kind(), meta) });
    }
    Ok(OwnerReference {
        api_version: owner.owner_api_version().into_owned(),
        kind: owner.owner_kind().to_owned(),
        name: meta.name.clone().unwrap_or_default(),
        uid: meta.uid.clone().unwrap_or_default(),
        controller: None,
        block_owner_deletion: None,
    })
}

/// Makes `owner` the controller of `object`: sets [`controller_reference`]`(owner)` in its
/// owner references, in place of any reference to the same owner (same group, kind and name,
/// whatever the version or uid).
///
/// # Errors
///
/// - [`OwnerError::OwnerNotStored`] if `owner` has no `uid` or `name` (or namespace).
/// - [`OwnerError::CrossNamespace`] if `owner` is namespaced and `object` is cluster-scoped or
///   in another namespace.
/// - [`OwnerError::AlreadyOwned`] if another owner is `object`'s controller.
///
/// `object` is unchanged on error.
#[doc(alias = "SetControllerReference")]
pub fn set_controller_reference<O: Owner + ?Sized, K: Resource>(
    owner: &O,
    object: &mut K,
) -> Result<()> {
    let reference = controller_reference(owner)?;
    check_namespace(owner, object)?;
    if let Some(existing) = controller_of(object)
        && !same_owner(existing, &reference)
    {
        return Err(OwnerError::AlreadyOwned {
            object: describe(K::KIND, object.meta()),
            controller: format!("{} {}", existing.kind, existing.name),
            owner: describe(owner.owner_kind(), owner.owner_meta()),
        });
    }
    upsert(object.meta_mut(), reference);
    Ok(())
}

/// Adds `owner` to `object`'s owners, not as its controller: sets
/// [`owner_reference`]`(owner)` in place of any reference to the same owner (same group, kind
/// and name), a controller one included.
///
/// # Errors
///
/// - [`OwnerError::OwnerNotStored`] if `owner` has no `uid` or `name` (or namespace).
/// - [`OwnerError::CrossNamespace`] if `owner` is namespaced and `object` is cluster-scoped or
///   in another namespace.
///
/// `object` is unchanged on error.
#[doc(alias = "SetOwnerReference")]
pub fn set_owner_reference<O: Owner + ?Sized, K: Resource>(
    owner: &O,
    object: &mut K,
) -> Result<()> {
    let reference = owner_reference(owner)?;
    check_namespace(owner, object)?;
    upsert(object.meta_mut(), reference);
    Ok(())
}

/// Removes `object`'s references to `owner` (same group, kind and name, whatever the version
/// or uid), controller or not; true if there was one.
#[doc(alias = "RemoveOwnerReference")]
pub fn remove_owner_reference<O: Owner + ?Sized, K: Object>(owner: &O, object: &mut K) -> bool {
    let name = owner.owner_meta().name.as_deref().unwrap_or_default();
    let api_version = owner.owner_api_version();
    let (group, kind) = (group_of(&api_version), owner.owner_kind());
    let Some(references) = object.meta_mut().owner_references.as_mut() else { return false };
    let before = references.len();
    references.retain(|r| !(refers_to_kind(r, group, kind) && r.name == name));
    references.len() != before
}

/// `object`'s controller: its owner reference that says `controller: true`, if any.
#[doc(alias = "GetControllerOf", alias = "HasControllerReference")]
#[must_use]
pub fn controller_of<K: Object>(object: &K) -> Option<&OwnerReference> {
    object.meta().owner_references.iter().flatten().find(|r| r.controller == Some(true))
}

/// Whether `owner` is `object`'s controller: the uid of `object`'s controller reference is
/// `owner`'s.
#[doc(alias = "IsControlledBy")]
#[must_use]
pub fn is_controlled_by<K: Object, O: Object>(object: &K, owner: &O) -> bool {
    let Some(uid) = uid_of(owner) else { return false };
    controller_of(object).is_some_and(|r| r.uid == uid)
}

/// Whether `owner` is one of `object`'s owners, its controller or not: one of `object`'s owner
/// references has `owner`'s uid.
#[must_use]
pub fn is_owned_by<K: Object, O: Object>(object: &K, owner: &O) -> bool {
    let Some(uid) = uid_of(owner) else { return false };
    object.meta().owner_references.iter().flatten().any(|r| r.uid == uid)
}

/// `owner`'s uid; none if empty, so that an owner not stored yet owns nothing, even through a
/// reference with an empty uid.
fn uid_of<O: Object>(owner: &O) -> Option<&str> {
    owner.meta().uid.as_deref().filter(|uid| !uid.is_empty())
}

/// Whether `reference` is to an object of `O`'s group and kind, in any version: the rule
/// [`Controller::owns`](crate::controller::Controller::owns) and
/// [`EnqueueOwner`](crate::workqueue::EnqueueOwner) find owners by, as controller-runtime
/// compares `GroupKind`s.
#[must_use]
pub fn refers_to<O: Resource>(reference: &OwnerReference) -> bool {
    refers_to_kind(reference, O::GROUP, O::KIND)
}

/// [`refers_to`], for an owner whose group and kind are known at run time (a
/// `DynamicObject`'s `ApiResource`): the one place the rule is written.
pub(crate) fn refers_to_kind(reference: &OwnerReference, group: &str, kind: &str) -> bool {
    reference.kind == kind && group_of(&reference.api_version) == group
}

/// The group of an `apiVersion`: `apps` of `apps/v1`, `""` of the core group's `v1`.
// The last `/` splits: a malformed `a/b/v1` gives `a/b`, which is no group, where the first
// would give `a` and match one (apimachinery's parser rejects it, and the match fails there too).
pub(crate) fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(group, _)| group)
}

/// Whether two references are to the same owner: same group, kind and name (controller-runtime's
/// `referSameObject`).
fn same_owner(a: &OwnerReference, b: &OwnerReference) -> bool {
    group_of(&a.api_version) == group_of(&b.api_version) && a.kind == b.kind && a.name == b.name
}

/// Puts `reference` in place of the reference to the same owner, or after the others.
fn upsert(meta: &mut ObjectMeta, reference: OwnerReference) {
    let references = meta.owner_references.get_or_insert_with(Vec::new);
    match references.iter_mut().find(|r| same_owner(r, &reference)) {
        Some(existing) => *existing = reference,
        None => references.push(reference),
    }
}

/// A namespaced owner can own only objects of its namespace (controller-runtime's
/// `validateOwner`); a cluster-scoped owner, any object.
fn check_namespace<O: Owner + ?Sized, K: Resource>(owner: &O, object: &K) -> Result<()> {
    if !owner.owner_namespaced() {
        return Ok(());
    }
    if is_namespaced::<K>() && object.meta().namespace == owner.owner_meta().namespace {
        return Ok(());
    }
    Err(OwnerError::CrossNamespace {
        owner: describe(owner.owner_kind(), owner.owner_meta()),
        object: describe(K::KIND, object.meta()),
    })
}

/// `Kind namespace/name`, or `Kind name` without a namespace, for messages.
fn describe(kind: &str, meta: &ObjectMeta) -> String {
    let name = meta.name.as_deref().or(meta.generate_name.as_deref()).unwrap_or("<unnamed>");
    match meta.namespace.as_deref() {
        Some(namespace) => format!("{kind} {namespace}/{name}"),
        None => format!("{kind} {name}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
    use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolume, Pod};
    use k8s_openapi::api::rbac::v1::ClusterRole;

    fn meta(namespace: Option<&str>, name: &str, uid: Option<&str>) -> ObjectMeta {
        ObjectMeta {
            namespace: namespace.map(str::to_owned),
            name: Some(name.to_owned()),
            uid: uid.map(str::to_owned),
            ..ObjectMeta::default()
        }
    }

    fn deployment(name: &str, uid: &str) -> Deployment {
        Deployment { metadata: meta(Some("default"), name, Some(uid)), ..Deployment::default() }
    }

    fn replica_set(owners: Vec<OwnerReference>) -> ReplicaSet {
        let mut metadata = meta(Some("default"), "rs", None);
        metadata.owner_references = (!owners.is_empty()).then_some(owners);
        ReplicaSet { metadata, ..ReplicaSet::default() }
    }

    /// A reference to a Deployment, in `api_version`.
    fn reference(
        api_version: &str,
        name: &str,
        uid: &str,
        controller: Option<bool>,
        block: Option<bool>,
    ) -> OwnerReference {
        OwnerReference {
            api_version: api_version.to_owned(),
            kind: "Deployment".to_owned(),
            name: name.to_owned(),
            uid: uid.to_owned(),
            controller,
            block_owner_deletion: block,
        }
    }

    fn owners(object: &impl Object) -> &[OwnerReference] {
        object.meta().owner_references.as_deref().unwrap_or_default()
    }

    // The Go tests' `extensions/v1beta1` Deployment is `apps/v1` here (k8s-openapi has no
    // older version); their older `extensions/v1alpha1` references are `apps/v1beta1` ones.

    // controllerutil_test.go SetOwnerReference "should set ownerRef on an empty list"
    #[test]
    fn set_owner_reference_on_an_empty_list() {
        let mut rs = replica_set(vec![]);
        set_owner_reference(&deployment("foo", "foo-uid"), &mut rs).unwrap();
        assert_eq!(owners(&rs), [reference("apps/v1", "foo", "foo-uid", None, None)]);
    }

    // SetOwnerReference "should not duplicate owner references"
    #[test]
    fn set_owner_reference_does_not_duplicate_owner_references() {
        let mut rs = replica_set(vec![reference("apps/v1", "foo", "foo-uid", None, None)]);
        set_owner_reference(&deployment("foo", "foo-uid"), &mut rs).unwrap();
        assert_eq!(owners(&rs), [reference("apps/v1", "foo", "foo-uid", None, None)]);
    }

    // SetOwnerReference "should update the reference"
    #[test]
    fn set_owner_reference_updates_the_reference() {
        let mut rs = replica_set(vec![reference("apps/v1beta1", "foo", "foo-uid-1", None, None)]);
        set_owner_reference(&deployment("foo", "foo-uid-2"), &mut rs).unwrap();
        assert_eq!(owners(&rs), [reference("apps/v1", "foo", "foo-uid-2", None, None)]);
    }

    // SetOwnerReference "should remove the owner reference"
    #[test]
    fn remove_owner_reference_removes_the_owner_reference() {
        let mut rs = replica_set(vec![reference("apps/v1beta1", "foo", "foo-uid-1", None, None)]);
        let dep = deployment("foo", "foo-uid-2");
        set_owner_reference(&dep, &mut rs).unwrap();
        assert_eq!(owners(&rs), [reference("apps/v1", "foo", "foo-uid-2", None, None)]);
        assert!(remove_owner_reference(&dep, &mut rs));
        assert!(owners(&rs).is_empty());
    }

    // SetOwnerReference "should remove the owner reference established by the
    // SetControllerReference function"
    #[test]
    fn remove_owner_reference_removes_a_controller_reference() {
        let mut rs = replica_set(vec![]);
        let dep = deployment("foo", "foo-uid");
        set_controller_reference(&dep, &mut rs).unwrap();
        assert_eq!(owners(&rs), [reference("apps/v1", "foo", "foo-uid", Some(true), Some(true))]);
        assert!(remove_owner_reference(&dep, &mut rs));
        assert!(owners(&rs).is_empty());
    }

    // SetOwnerReference "should error when trying to remove the reference that doesn't exist"
    #[test]
    fn remove_owner_reference_without_references_removes_nothing() {
        let mut rs = replica_set(vec![]);
        assert!(!remove_owner_reference(&deployment("foo", "foo-uid-2"), &mut rs));
        assert!(owners(&rs).is_empty());
    }

    // SetOwnerReference "should error when trying to remove an owner that doesn't exist"
    #[test]
    fn remove_owner_reference_of_another_owner_removes_nothing() {
        let mut rs = replica_set(vec![]);
        set_owner_reference(&deployment("foo", "foo-uid-2"), &mut rs).unwrap();
        assert!(!remove_owner_reference(&deployment("bar", "bar-uid-3"), &mut rs));
        assert_eq!(owners(&rs).len(), 1);
    }

    #[test]
    fn remove_owner_reference_leaves_other_kinds_of_the_same_name() {
        let mut rs = replica_set(vec![]);
        let mut other = reference("apps/v1", "foo", "ss-uid", None, None);
        other.kind = "StatefulSet".to_owned();
        rs.metadata.owner_references = Some(vec![other.clone()]);
        assert!(!remove_owner_reference(&deployment("foo", "foo-uid"), &mut rs));
        assert_eq!(owners(&rs), [other]);
    }

    // SetOwnerReference "should return true when HasControllerReference evaluates owner
    // reference set by SetControllerReference"
    #[test]
    fn controller_of_finds_the_reference_set_by_set_controller_reference() {
        let mut rs = replica_set(vec![]);
        set_controller_reference(&deployment("foo", "foo-uid-2"), &mut rs).unwrap();
        assert!(controller_of(&rs).is_some());
    }

    // SetOwnerReference "should return false when HasControllerReference evaluates owner
    // reference set by SetOwnerReference"
    #[test]
    fn controller_of_ignores_the_reference_set_by_set_owner_reference() {
        let mut rs = replica_set(vec![]);
        set_owner_reference(&deployment("foo", "foo-uid-2"), &mut rs).unwrap();
        assert!(controller_of(&rs).is_none());
    }

    // SetControllerReference "should set the OwnerReference if it can find the group version
    // kind"
    #[test]
    fn set_controller_reference_sets_the_owner_reference() {
        let mut rs = replica_set(vec![]);
        set_controller_reference(&deployment("foo", "foo-uid"), &mut rs).unwrap();
        assert_eq!(owners(&rs), [reference("apps/v1", "foo", "foo-uid", Some(true), Some(true))]);
    }

    // SetControllerReference "should return an error if it can't find the group version kind
    // of the owner": a typed owner always has one; its Go owner had no uid either, which is
    // what fails here.
    #[test]
    fn set_controller_reference_refuses_an_owner_not_stored() {
        let mut rs = replica_set(vec![]);
        let mut dep = deployment("foo", "");
        dep.metadata.uid = None;
        let error = set_controller_reference(&dep, &mut rs).unwrap_err();
        assert_eq!(error, OwnerError::OwnerNotStored { owner: "Deployment default/foo".into() });
        assert!(error.to_string().starts_with("owner Deployment default/foo is not stored yet"));
        assert!(owners(&rs).is_empty());

        dep.metadata.uid = Some("foo-uid".into());
        dep.metadata.namespace = None;
        assert!(matches!(
            set_controller_reference(&dep, &mut rs),
            Err(OwnerError::OwnerNotStored { .. })
        ));
        assert!(matches!(
            owner_reference(&Deployment::default()),
            Err(OwnerError::OwnerNotStored { .. })
        ));
    }

    // SetControllerReference "should return an error if object is already owned by another
    // controller"
    #[test]
    fn set_controller_reference_refuses_an_object_owned_by_another_controller() {
        let bar = reference("apps/v1", "bar", "bar-uid", Some(true), Some(true));
        let mut rs = replica_set(vec![bar.clone()]);
        let error = set_controller_reference(&deployment("foo", "foo-uid"), &mut rs).unwrap_err();
        assert_eq!(
            error,
            OwnerError::AlreadyOwned {
                object: "ReplicaSet default/rs".into(),
                controller: "Deployment bar".into(),
                owner: "Deployment default/foo".into(),
            }
        );
        assert!(
            error.to_string().starts_with(
                "ReplicaSet default/rs is already controlled by Deployment bar, not by Deployment default/foo"
            ),
            "{error}"
        );
        assert_eq!(owners(&rs), [bar]);
    }

    // SetControllerReference "should not duplicate existing owner reference"
    #[test]
    fn set_controller_reference_does_not_duplicate_an_existing_owner_reference() {
        let mut rs =
            replica_set(vec![reference("apps/v1", "foo", "foo-uid", Some(false), Some(true))]);
        set_controller_reference(&deployment("foo", "foo-uid"), &mut rs).unwrap();
        assert_eq!(owners(&rs), [reference("apps/v1", "foo", "foo-uid", Some(true), Some(true))]);
    }

    // SetControllerReference "should replace the owner reference if it's already present"
    #[test]
    fn set_controller_reference_replaces_the_owner_reference_already_present() {
        let mut rs =
            replica_set(vec![reference("apps/v1beta1", "foo", "foo-uid", Some(true), Some(true))]);
        set_controller_reference(&deployment("foo", "foo-uid"), &mut rs).unwrap();
        assert_eq!(owners(&rs), [reference("apps/v1", "foo", "foo-uid", Some(true), Some(true))]);
    }

    // SetControllerReference "should return an error if it's setting a cross-namespace owner
    // reference"
    #[test]
    fn set_controller_reference_refuses_a_cross_namespace_owner() {
        let mut rs = replica_set(vec![]);
        rs.metadata.namespace = Some("namespace1".into());
        let mut dep = deployment("foo", "foo-uid");
        dep.metadata.namespace = Some("namespace2".into());
        let error = set_controller_reference(&dep, &mut rs).unwrap_err();
        assert_eq!(
            error,
            OwnerError::CrossNamespace {
                owner: "Deployment namespace2/foo".into(),
                object: "ReplicaSet namespace1/rs".into(),
            }
        );
        assert!(owners(&rs).is_empty());
        // An object without a namespace is not taken to be in its owner's.
        rs.metadata.namespace = None;
        assert!(matches!(
            set_owner_reference(&dep, &mut rs),
            Err(OwnerError::CrossNamespace { .. })
        ));
    }

    // SetControllerReference "should return an error if it's owner is namespaced resource but
    // dependant is cluster-scoped resource"
    #[test]
    fn set_controller_reference_refuses_a_namespaced_owner_of_a_cluster_scoped_object() {
        let mut pv = PersistentVolume { metadata: meta(None, "foo", None), ..Default::default() };
        let pod = Pod { metadata: meta(Some("default"), "foo", Some("foo-uid")), ..Pod::default() };
        let error = set_controller_reference(&pod, &mut pv).unwrap_err();
        assert_eq!(
            error,
            OwnerError::CrossNamespace {
                owner: "Pod default/foo".into(),
                object: "PersistentVolume foo".into(),
            }
        );
        assert!(owners(&pv).is_empty());
    }

    // SetControllerReference "should not return any error if the existing owner has a
    // different version"
    #[test]
    fn set_controller_reference_replaces_a_reference_of_another_version() {
        let mut rs =
            replica_set(vec![reference("apps/v1beta1", "foo", "foo-uid", Some(false), Some(true))]);
        set_controller_reference(&deployment("foo", "foo-uid"), &mut rs).unwrap();
        assert_eq!(owners(&rs), [reference("apps/v1", "foo", "foo-uid", Some(true), Some(true))]);
    }

    #[test]
    fn a_cluster_scoped_owner_owns_objects_of_any_namespace() {
        let role = ClusterRole {
            metadata: meta(None, "reader", Some("role-uid")),
            ..ClusterRole::default()
        };
        let mut config =
            ConfigMap { metadata: meta(Some("team-a"), "settings", None), ..ConfigMap::default() };
        set_controller_reference(&role, &mut config).unwrap();
        assert_eq!(
            owners(&config),
            [OwnerReference {
                api_version: "rbac.authorization.k8s.io/v1".into(),
                kind: "ClusterRole".into(),
                name: "reader".into(),
                uid: "role-uid".into(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]
        );
    }

    #[test]
    fn set_owner_reference_keeps_other_owners_and_adds_after_them() {
        let bar = reference("apps/v1", "bar", "bar-uid", Some(true), Some(true));
        let mut rs = replica_set(vec![bar.clone()]);
        // Not a controller: the object's controller stays.
        set_owner_reference(&deployment("foo", "foo-uid"), &mut rs).unwrap();
        assert_eq!(owners(&rs), [bar, reference("apps/v1", "foo", "foo-uid", None, None)]);
    }

    #[test]
    fn controlled_and_owned_compare_uids() {
        let foo = deployment("foo", "foo-uid");
        let bar = deployment("bar", "bar-uid");
        let mut rs = replica_set(vec![]);
        assert!(!is_owned_by(&rs, &foo) && !is_controlled_by(&rs, &foo));
        set_controller_reference(&foo, &mut rs).unwrap();
        set_owner_reference(&bar, &mut rs).unwrap();
        assert!(is_controlled_by(&rs, &foo) && is_owned_by(&rs, &foo));
        assert!(!is_controlled_by(&rs, &bar) && is_owned_by(&rs, &bar));
        // A new object of the same name is another owner.
        let foo_again = deployment("foo", "foo-uid-2");
        assert!(!is_controlled_by(&rs, &foo_again) && !is_owned_by(&rs, &foo_again));
        // An owner without uid owns nothing, even through a reference without one.
        let mut unstored = Deployment::default();
        assert!(!is_owned_by(&rs, &unstored));
        unstored.metadata.uid = Some(String::new());
        rs.metadata.owner_references = Some(vec![reference("apps/v1", "x", "", Some(true), None)]);
        assert!(!is_owned_by(&rs, &unstored) && !is_controlled_by(&rs, &unstored));
    }

    #[test]
    fn refers_to_matches_group_and_kind_in_any_version() {
        assert!(refers_to::<Deployment>(&reference("apps/v1", "a", "u", None, None)));
        assert!(refers_to::<Deployment>(&reference("apps/v1beta2", "a", "u", None, None)));
        assert!(!refers_to::<Deployment>(&reference("extensions/v1beta1", "a", "u", None, None)));
        assert!(!refers_to::<ReplicaSet>(&reference("apps/v1", "a", "u", None, None)));
        let mut pod = reference("v1", "a", "u", None, None);
        pod.kind = "Pod".into();
        assert!(refers_to::<Pod>(&pod));
    }

    #[test]
    fn group_of_takes_what_comes_before_the_version() {
        assert_eq!(group_of("apps/v1"), "apps");
        assert_eq!(group_of("rbac.authorization.k8s.io/v1"), "rbac.authorization.k8s.io");
        assert_eq!(group_of("v1"), "");
        assert_eq!(group_of(""), "");
        assert_eq!(group_of("a/b/v1"), "a/b");
    }

    #[test]
    fn describe_names_unnamed_and_cluster_scoped_objects() {
        assert_eq!(describe("Pod", &meta(Some("ns"), "p", None)), "Pod ns/p");
        assert_eq!(describe("Node", &meta(None, "n", None)), "Node n");
        let generated = ObjectMeta { generate_name: Some("web-".into()), ..ObjectMeta::default() };
        assert_eq!(describe("Pod", &generated), "Pod web-");
        assert_eq!(describe("Pod", &ObjectMeta::default()), "Pod <unnamed>");
    }
}
