//! The label index: object keys by label key and value, so that a label selector query reads the
//! objects that can match instead of every object.
//!
//! Unlike an [`Index`](super::index::Index), it does not call a function that formats
//! `key=value` strings per object: it diffs the old and new label maps and moves the key only
//! for the labels that changed, and it stores each distinct label key and value once, however
//! many objects carry it. Object keys are [`ObjectKey`] clones, sharing the store's allocation.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::ObjectKey;
use crate::selector::{LabelSelector, Operator};

type Labels = BTreeMap<String, String>;

/// Object keys by label key, then label value.
#[derive(Default)]
pub(super) struct LabelIndex {
    keys: HashMap<Box<str>, LabelKey>,
}

/// The objects that carry one label key.
#[derive(Default)]
struct LabelKey {
    /// How many objects carry the key (the sum of the sizes of `values`).
    count: usize,
    /// Each object is under exactly one value, so the sets are disjoint.
    values: HashMap<Box<str>, Members>,
}

/// The keys of the objects with one label value.
///
/// Many label values are carried by a single object (`statefulset.kubernetes.io/pod-name`,
/// per-object hashes); a set per such value would cost an allocation of four buckets.
enum Members {
    One(ObjectKey),
    Many(HashSet<ObjectKey>),
}

impl Members {
    fn len(&self) -> usize {
        match self {
            Self::One(_) => 1,
            Self::Many(set) => set.len(),
        }
    }

    fn iter(&self) -> impl Iterator<Item = &ObjectKey> {
        let (one, many) = match self {
            Self::One(key) => (Some(key), None),
            Self::Many(set) => (None, Some(set)),
        };
        one.into_iter().chain(many.into_iter().flatten())
    }

    /// Adds `key`; whether it was absent.
    fn insert(&mut self, key: &ObjectKey) -> bool {
        match self {
            Self::One(only) if only == key => false,
            Self::One(only) => {
                let set = HashSet::from([only.clone(), key.clone()]);
                *self = Self::Many(set);
                true
            }
            Self::Many(set) => set.insert(key.clone()),
        }
    }

    /// Removes `key`; whether it was present, and whether no key is left.
    fn remove(&mut self, key: &ObjectKey) -> (bool, bool) {
        let set = match self {
            Self::One(only) => {
                let found = only == key;
                return (found, found);
            }
            Self::Many(set) => set,
        };
        let found = set.remove(key);
        let empty = set.is_empty();
        if set.len() == 1 {
            // Back to the compact form, so that a value's memory follows its current members.
            let last = set.drain().next();
            if let Some(last) = last {
                *self = Self::One(last);
            }
        }
        (found, empty)
    }
}

/// The objects the index offers for a selector: a superset of its matches.
pub(super) struct Candidates<'a> {
    /// Disjoint sets: no key is in two of them.
    sets: Vec<&'a Members>,
    len: usize,
    /// The requirement (by position in the selector) every candidate satisfies by construction,
    /// which the caller need not check again.
    pub(super) satisfied: Option<usize>,
}

impl<'a> Candidates<'a> {
    /// How many candidates there are.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// The candidates' keys, each once.
    pub(super) fn into_keys(self) -> impl Iterator<Item = &'a ObjectKey> {
        self.sets.into_iter().flat_map(Members::iter)
    }
}

impl LabelIndex {
    /// Moves `key` from the labels of `old` to those of `new` (`None`: no object).
    pub(super) fn update(&mut self, key: &ObjectKey, old: Option<&Labels>, new: Option<&Labels>) {
        // Most updates (status, resource version) leave the labels alone.
        if old == new {
            return;
        }
        let empty = Labels::new();
        let (old, new) = (old.unwrap_or(&empty), new.unwrap_or(&empty));
        for (name, value) in old {
            if new.get(name) != Some(value) {
                self.remove(key, name, value);
            }
        }
        for (name, value) in new {
            if old.get(name) != Some(value) {
                self.insert(key, name, value);
            }
        }
    }

    fn insert(&mut self, key: &ObjectKey, name: &str, value: &str) {
        // Look up before inserting: the strings are copied only for a key or value never seen.
        let label = match self.keys.get_mut(name) {
            Some(label) => label,
            None => self.keys.entry(name.into()).or_default(),
        };
        let added = if let Some(members) = label.values.get_mut(value) {
            members.insert(key)
        } else {
            label.values.insert(value.into(), Members::One(key.clone()));
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

    pub(super) fn clear(&mut self) {
        self.keys.clear();
    }

    /// The smallest set of candidates the index can offer for `selector`, or `None` when no
    /// requirement of it narrows the search (only `!=`, `notin` and `!key`, which match objects
    /// without the label, or no requirement at all).
    pub(super) fn candidates(&self, selector: &LabelSelector) -> Option<Candidates<'_>> {
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

impl std::fmt::Debug for LabelIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LabelIndex").field("keys", &self.keys.len()).finish()
    }
}

#[cfg(test)]
impl LabelIndex {
    /// The keys under `name=value`, sorted.
    pub(super) fn keys_of(&self, name: &str, value: &str) -> Vec<ObjectKey> {
        let members = self.keys.get(name).and_then(|l| l.values.get(value));
        let mut keys: Vec<ObjectKey> =
            members.into_iter().flat_map(Members::iter).cloned().collect();
        keys.sort();
        keys
    }

    /// Checks the index against `objects`: what it would be if built from scratch.
    pub(super) fn assert_consistent<'a>(
        &self,
        objects: impl IntoIterator<Item = (&'a ObjectKey, Option<&'a Labels>)>,
    ) {
        let mut rebuilt = Self::default();
        for (key, labels) in objects {
            rebuilt.update(key, None, labels);
        }
        let flatten = |index: &Self| {
            let mut entries: Vec<(String, String, Vec<ObjectKey>, usize)> = Vec::new();
            for (name, label) in &index.keys {
                let mut total = 0;
                for (value, members) in &label.values {
                    assert!(members.len() > 0, "an empty set for {name}={value}");
                    assert!(
                        !matches!(members, Members::Many(set) if set.len() < 2),
                        "a set of one for {name}={value}"
                    );
                    let mut keys: Vec<ObjectKey> = members.iter().cloned().collect();
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
