//! The label index: object keys by label key and value, so that a label selector query reads the
//! objects that can match instead of every object.
//!
//! Unlike an [`Index`](super::index::Index), it does not call a function that formats
//! `key=value` strings per object: it diffs the old and new label maps and moves the key only
//! for the labels that changed, and it stores each distinct label key and value once, however
//! many objects carry it. Object keys are [`ObjectKey`] clones, sharing the store's allocation.
//!
//! Each entry also holds the stored entry (the object, or its compact form), as every index does
//! (see [`Members`]), so that a query reads its candidates straight from the index. The labels
//! it diffs are the decoded objects' (a compact store keeps them decoded beside the JSON).

use std::collections::HashMap;

use super::ObjectKey;
use super::index::Reindex;
use super::members::Members;
use super::storage::LabelsRef;
use crate::resource::Object;
use crate::selector::{LabelSelector, Operator};

fn labels_of<K: Object>(obj: Option<&K>) -> LabelsRef<'_> {
    LabelsRef::of(obj.and_then(|o| o.meta().labels.as_ref()))
}

/// Objects by label key, then label value.
pub(super) struct LabelIndex<E> {
    keys: HashMap<Box<str>, LabelKey<E>>,
}

impl<E> Default for LabelIndex<E> {
    fn default() -> Self {
        Self { keys: HashMap::new() }
    }
}

/// The objects that carry one label key.
struct LabelKey<E> {
    /// How many objects carry the key (the sum of the sizes of `values`).
    count: usize,
    /// Each object is under exactly one value, so the sets are disjoint.
    values: HashMap<Box<str>, Members<E>>,
}

impl<E> Default for LabelKey<E> {
    fn default() -> Self {
        Self { count: 0, values: HashMap::new() }
    }
}

/// The objects the index offers for a selector: a superset of its matches.
pub(super) struct Candidates<'a, E> {
    /// Disjoint sets: no key is in two of them.
    sets: Vec<&'a Members<E>>,
    len: usize,
    /// The requirement (by position in the selector) every candidate satisfies by construction,
    /// which the caller need not check again.
    pub(super) satisfied: Option<usize>,
}

impl<'a, E: Clone> Candidates<'a, E> {
    /// How many candidates there are.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// The candidates, each once.
    pub(super) fn into_iter(self) -> impl Iterator<Item = (&'a ObjectKey, &'a E)> {
        self.sets.into_iter().flat_map(Members::iter)
    }
}

impl<K: Object, E: Clone> Reindex<K, E> for LabelIndex<E> {
    /// Moves `key` from the labels of `old` to those of `new`, diffing the two label maps.
    fn update(&mut self, key: &ObjectKey, old: Option<&K>, new: Option<(&K, &E)>) {
        if let (Some(old), Some((new, _))) = (old, new)
            && std::ptr::eq(old, new)
        {
            return;
        }
        let new = new.map(|(n, entry)| (labels_of(Some(n)), entry));
        self.update_labels(key, labels_of(old), new);
    }

    fn clear(&mut self) {
        self.keys.clear();
    }
}

impl<E: Clone> LabelIndex<E> {
    /// Moves `key` from `old_labels` to the labels of `new` (labels and entry; `None`: no
    /// object), diffing the two label maps.
    pub(super) fn update_labels(
        &mut self,
        key: &ObjectKey,
        old_labels: LabelsRef<'_>,
        new: Option<(LabelsRef<'_>, &E)>,
    ) {
        let new_labels = new.map_or(LabelsRef::none(), |(labels, _)| labels);
        for (name, value) in old_labels.iter() {
            if new_labels.get(name) != Some(value) {
                self.remove(key, name, value);
            }
        }
        let Some((_, entry)) = new else { return };
        for (name, value) in new_labels.iter() {
            // Unchanged labels too: their entries still hold the old object.
            self.insert(key, name, value, entry);
        }
    }

    fn insert(&mut self, key: &ObjectKey, name: &str, value: &str, entry: &E) {
        // Look up before inserting: the strings are copied only for a key or value never seen.
        let label = match self.keys.get_mut(name) {
            Some(label) => label,
            None => self.keys.entry(name.into()).or_default(),
        };
        let added = if let Some(members) = label.values.get_mut(value) {
            members.insert(key, entry)
        } else {
            label.values.insert(value.into(), Members::new(key, entry));
            true
        };
        if added {
            label.count += 1;
        }
    }

    fn remove(&mut self, key: &ObjectKey, name: &str, value: &str) {
        let Some(label) = self.keys.get_mut(name) else { return };
        let Some(members) = label.values.get_mut(value) else { return };
        let (found, emptied) = members.remove(key);
        if emptied {
            label.values.remove(value);
        }
        if found {
            label.count -= 1;
        }
        // As with the other indices: no empty entry may outlive its last object.
        if label.values.is_empty() {
            self.keys.remove(name);
        }
    }

    /// The smallest set of candidates the index can offer for `selector`, or `None` when no
    /// requirement of it narrows the search (only `!=`, `notin` and `!key`, which match objects
    /// without the label, or no requirement at all).
    pub(super) fn candidates(&self, selector: &LabelSelector) -> Option<Candidates<'_, E>> {
        // Sizes first: building the set list of a requirement that loses would be wasted work.
        let mut best: Option<(usize, usize, bool)> = None;
        for (position, requirement) in selector.requirements().iter().enumerate() {
            let label = self.keys.get(requirement.key());
            let (len, exact) = match requirement.operator() {
                Operator::Equals | Operator::DoubleEquals | Operator::In => {
                    let sizes = requirement.values().filter_map(|v| label?.values.get(v));
                    (sizes.map(Members::len).sum(), true)
                }
                Operator::Exists => (label.map_or(0, |l| l.count), true),
                // They need the label, but also an integer value the index does not know.
                Operator::GreaterThan | Operator::LessThan => (label.map_or(0, |l| l.count), false),
                Operator::NotEquals | Operator::NotIn | Operator::DoesNotExist => continue,
            };
            // Ties go to an exact requirement: its candidates need no check.
            let better = best.is_none_or(|(best_len, _, best_exact)| {
                len < best_len || len == best_len && exact && !best_exact
            });
            if better {
                best = Some((len, position, exact));
            }
        }
        let (len, position, exact) = best?;
        let requirement = &selector.requirements()[position];
        let sets = match (self.keys.get(requirement.key()), requirement.operator()) {
            (None, _) => Vec::new(),
            (Some(label), Operator::Equals | Operator::DoubleEquals | Operator::In) => {
                requirement.values().filter_map(|v| label.values.get(v)).collect()
            }
            (Some(label), _) => label.values.values().collect(),
        };
        Some(Candidates { sets, len, satisfied: exact.then_some(position) })
    }
}

impl<E> std::fmt::Debug for LabelIndex<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LabelIndex").field("keys", &self.keys.len()).finish()
    }
}

#[cfg(test)]
impl<E: Clone> LabelIndex<E> {
    /// The keys under `name=value`, sorted.
    pub(super) fn keys_of(&self, name: &str, value: &str) -> Vec<ObjectKey> {
        let members = self.keys.get(name).and_then(|l| l.values.get(value));
        let mut keys: Vec<ObjectKey> =
            members.into_iter().flat_map(Members::iter).map(|(k, _)| k.clone()).collect();
        keys.sort();
        keys
    }

    /// Checks the index against `objects` (key, labels, stored entry): what it would be if
    /// built from scratch, with each entry holding the stored entry itself (`same`).
    pub(super) fn assert_consistent(
        &self,
        objects: &[(ObjectKey, LabelsRef<'_>, E)],
        same: impl Fn(&E, &E) -> bool,
    ) {
        let mut rebuilt = Self::default();
        let mut stored = HashMap::new();
        for (key, labels, entry) in objects {
            rebuilt.update_labels(key, LabelsRef::none(), Some((*labels, entry)));
            stored.insert(key.clone(), entry.clone());
        }
        for label in self.keys.values() {
            for (key, entry) in label.values.values().flat_map(Members::iter) {
                assert!(same(entry, &stored[key]), "{key} holds a stale object");
            }
        }
        let flatten = |index: &Self| {
            let mut entries: Vec<(String, String, Vec<ObjectKey>, usize)> = Vec::new();
            for (name, label) in &index.keys {
                let mut total = 0;
                for (value, members) in &label.values {
                    assert!(members.len() > 0, "an empty set for {name}={value}");
                    assert!(members.is_compact(), "a set of one for {name}={value}");
                    let mut keys: Vec<ObjectKey> = members.iter().map(|(k, _)| k.clone()).collect();
                    keys.sort();
                    total += keys.len();
                    entries.push((name.to_string(), value.to_string(), keys, label.count));
                }
                assert_eq!(total, label.count, "the count of {name}");
            }
            entries.sort();
            entries
        };
        assert_eq!(flatten(self), flatten(&rebuilt));
    }
}
