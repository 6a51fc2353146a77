//! [`merge`]: the CRDs of a kind's versions, one per derived struct, into one CRD.

use std::collections::BTreeMap;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde::Serialize;

use super::{Error, Mismatch, Result};

/// One `CustomResourceDefinition` with the versions of all of `crds`, in the order given: what
/// to install for a kind that has a `#[derive(Informer)]` struct per version.
///
/// Each version keeps its own schema, subresources, printer columns, `served`, `deprecated`
/// and `deprecationWarning`. What a CRD has once must be the same in all of them: the group,
/// the scope, the names (kind, plural, singular, list kind) and the conversion strategy; the
/// short names, categories, labels and annotations are the union of theirs (a label or an
/// annotation given two values is a mismatch). The result must have exactly one storage
/// version: write `storage = false` in the `#[informer(...)]` of every version's struct but
/// one (`storage` is their default). See the [module docs](crate::crd) for an example.
///
/// # Errors
///
/// [`Error::Empty`] for no CRD, [`Error::Mismatch`] naming the field and the two versions that
/// disagree, [`Error::DuplicateVersion`] for a version given twice, and
/// [`Error::StorageVersion`] unless exactly one version is the storage version.
#[doc(alias = "merge_crds")]
pub fn merge(
    crds: impl IntoIterator<Item = CustomResourceDefinition>,
) -> Result<CustomResourceDefinition> {
    let mut crds = crds.into_iter();
    let mut merged = crds.next().ok_or(Error::Empty)?;
    let name = merged.metadata.name.clone().unwrap_or_default();
    let first_version = versions_of(&merged);
    for crd in crds {
        let pair = Pair { crd: &name, first_version: &first_version, version: versions_of(&crd) };
        pair.same_once_fields(&merged, &crd)?;
        let labels = "#[informer(label(...))]";
        pair.union("metadata.labels", labels, &mut merged.metadata.labels, crd.metadata.labels)?;
        let annotations = "#[informer(annotation(...))]";
        let (ours, theirs) = (&mut merged.metadata.annotations, crd.metadata.annotations);
        pair.union("metadata.annotations", annotations, ours, theirs)?;
        append_new(&mut merged.spec.names.short_names, crd.spec.names.short_names);
        append_new(&mut merged.spec.names.categories, crd.spec.names.categories);
        for added in crd.spec.versions {
            if merged.spec.versions.iter().any(|v| v.name == added.name) {
                return Err(Error::DuplicateVersion { crd: name, version: added.name });
            }
            merged.spec.versions.push(added);
        }
    }
    let storage: Vec<String> =
        merged.spec.versions.iter().filter(|v| v.storage).map(|v| v.name.clone()).collect();
    if storage.len() != 1 {
        let versions = merged.spec.versions.iter().map(|v| v.name.clone()).collect();
        return Err(Error::StorageVersion { crd: name, storage, versions });
    }
    Ok(merged)
}

/// The first CRD and another, compared: what a mismatch between them reports.
struct Pair<'a> {
    crd: &'a str,
    first_version: &'a str,
    version: String,
}

impl Pair<'_> {
    fn mismatch(
        &self,
        field: String,
        attribute: &'static str,
        first: String,
        value: String,
    ) -> Error {
        Error::Mismatch(Box::new(Mismatch {
            crd: self.crd.to_owned(),
            field,
            attribute,
            first_version: self.first_version.to_owned(),
            first,
            version: self.version.clone(),
            value,
        }))
    }

    /// `Ok` if `first` and `value`, the two CRDs' `field`, are equal.
    fn same(
        &self,
        field: &str,
        attribute: &'static str,
        first: &dyn Json,
        value: &dyn Json,
    ) -> Result<()> {
        let (first, value) = (first.json(), value.json());
        if first == value {
            Ok(())
        } else {
            Err(self.mismatch(field.to_owned(), attribute, first, value))
        }
    }

    /// The fields a CRD has once for all its versions, in `ours` and `theirs`.
    fn same_once_fields(
        &self,
        ours: &CustomResourceDefinition,
        theirs: &CustomResourceDefinition,
    ) -> Result<()> {
        let kind = "kind (the struct's name, or #[informer(kind = ...)])";
        let (a, b) = (&ours.spec, &theirs.spec);
        self.same("spec.group", "#[informer(group = ...)]", &a.group, &b.group)?;
        self.same("spec.names.kind", kind, &a.names.kind, &b.names.kind)?;
        self.same("spec.names.listKind", kind, &a.names.list_kind, &b.names.list_kind)?;
        self.same(
            "spec.names.plural",
            "#[informer(plural = ...)]",
            &a.names.plural,
            &b.names.plural,
        )?;
        let singular = "#[informer(singular = ...)]";
        self.same("spec.names.singular", singular, &a.names.singular, &b.names.singular)?;
        let scope = "scope (`namespaced`, the default, or `cluster`)";
        self.same("spec.scope", scope, &a.scope, &b.scope)?;
        self.same("spec.conversion", "spec.conversion", &a.conversion, &b.conversion)?;
        self.same("metadata.name", "group and plural", &ours.metadata.name, &theirs.metadata.name)
    }

    /// `theirs` added to `ours`, unless a key has two values.
    fn union(
        &self,
        field: &str,
        attribute: &'static str,
        ours: &mut Option<BTreeMap<String, String>>,
        theirs: Option<BTreeMap<String, String>>,
    ) -> Result<()> {
        for (key, value) in theirs.into_iter().flatten() {
            let ours = ours.get_or_insert_with(BTreeMap::new);
            match ours.get(&key) {
                Some(existing) if *existing != value => {
                    let field = format!("{field}[{key:?}]");
                    return Err(self.mismatch(field, attribute, existing.json(), value.json()));
                }
                Some(_) => {}
                None => {
                    ours.insert(key, value);
                }
            }
        }
        Ok(())
    }
}

/// A value as JSON, for messages and comparisons.
trait Json {
    fn json(&self) -> String;
}

impl<T: Serialize> Json for T {
    fn json(&self) -> String {
        // Strings, lists and k8s-openapi's types always serialize.
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// A CRD's versions, for messages: `v1` (a derived struct's), or `v1, v2`.
fn versions_of(crd: &CustomResourceDefinition) -> String {
    let names: Vec<&str> = crd.spec.versions.iter().map(|v| v.name.as_str()).collect();
    names.join(", ")
}

/// The items of `more` not in `list` yet, at its end.
fn append_new(list: &mut Option<Vec<String>>, more: Option<Vec<String>>) {
    for item in more.into_iter().flatten() {
        let list = list.get_or_insert_with(Vec::new);
        if !list.contains(&item) {
            list.push(item);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A derived-style CRD of `widgets.example.com` with one version.
    fn crd(version: &str, storage: bool) -> CustomResourceDefinition {
        serde_json::from_value(json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {
                "group": "example.com",
                "names": {"kind": "Widget", "listKind": "WidgetList", "plural": "widgets", "singular": "widget"},
                "scope": "Namespaced",
                "versions": [{"name": version, "served": true, "storage": storage,
                              "schema": {"openAPIV3Schema": {"type": "object"}}}],
            },
        }))
        .unwrap()
    }

    #[test]
    fn versions_keep_their_order_and_flags() {
        let mut v1 = crd("v1", false);
        v1.spec.versions[0].served = false;
        v1.spec.names.short_names = Some(vec!["wd".into()]);
        let mut v2 = crd("v2", true);
        v2.spec.names.short_names = Some(vec!["wd".into(), "w".into()]);
        let merged = merge([v1, v2, crd("v3alpha1", false)]).unwrap();
        let versions: Vec<(&str, bool, bool)> =
            merged.spec.versions.iter().map(|v| (v.name.as_str(), v.served, v.storage)).collect();
        assert_eq!(versions, [("v1", false, false), ("v2", true, true), ("v3alpha1", true, false)]);
        assert_eq!(merged.spec.names.short_names, Some(vec!["wd".into(), "w".into()]));
    }

    #[test]
    fn nothing_to_merge_is_an_error() {
        assert!(matches!(merge([]), Err(Error::Empty)));
    }

    #[test]
    fn two_storage_versions_are_named() {
        let error = merge([crd("v1", true), crd("v2", true)]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "widgets.example.com needs exactly one storage version, and the \
             CustomResourceDefinitions to merge have v1, v2: keep `storage` on one and write \
             `storage = false` in the #[informer(...)] of the others"
        );
    }

    #[test]
    fn no_storage_version_is_an_error() {
        let error = merge([crd("v1", false), crd("v2", false)]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "widgets.example.com needs exactly one storage version, and the \
             CustomResourceDefinitions to merge have none: remove `storage = false` from the \
             #[informer(...)] of one of v1, v2"
        );
    }

    #[test]
    fn a_version_given_twice_is_an_error() {
        let error = merge([crd("v1", true), crd("v1", false)]).unwrap_err();
        assert!(
            matches!(&error, Error::DuplicateVersion { version, .. } if version == "v1"),
            "{error}"
        );
    }

    #[test]
    fn another_group_kind_or_scope_is_a_mismatch() {
        let mut other_group = crd("v2", false);
        other_group.spec.group = "example.org".into();
        let error = merge([crd("v1", true), other_group]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "the CustomResourceDefinitions to merge into widgets.example.com differ in \
             spec.group: version v1 has \"example.com\", version v2 has \"example.org\"; give \
             every version's struct the same #[informer(group = ...)]"
        );

        let mut other_kind = crd("v2", false);
        other_kind.spec.names.kind = "Gadget".into();
        let error = merge([crd("v1", true), other_kind]).unwrap_err();
        assert!(matches!(&error, Error::Mismatch(m) if m.field == "spec.names.kind"), "{error}");

        let mut other_scope = crd("v2", false);
        other_scope.spec.scope = "Cluster".into();
        let error = merge([crd("v1", true), other_scope]).unwrap_err();
        assert!(
            error.to_string().contains("scope (`namespaced`, the default, or `cluster`)"),
            "{error}"
        );
    }

    #[test]
    fn labels_are_joined_unless_they_disagree() {
        let mut v1 = crd("v1", true);
        v1.metadata.labels = Some([("team".into(), "a".into())].into());
        let mut v2 = crd("v2", false);
        v2.metadata.labels = Some([("tier".into(), "b".into())].into());
        let merged = merge([v1.clone(), v2]).unwrap();
        assert_eq!(merged.metadata.labels.unwrap().len(), 2);

        let mut v2 = crd("v2", false);
        v2.metadata.labels = Some([("team".into(), "b".into())].into());
        let error = merge([v1, v2]).unwrap_err();
        assert!(error.to_string().contains("differ in metadata.labels[\"team\"]"), "{error}");
    }
}
