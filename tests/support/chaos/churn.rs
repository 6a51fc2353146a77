//! The workload: random creates, updates, deletes and re-creates, written straight into the
//! server through [`ServerHandle`] (the same code as HTTP writes, but never failed or slowed by
//! the injected faults, which are meant for the informers).

use std::collections::{BTreeMap, HashSet};

use embedded_apiserver::ServerHandle;

use super::objects::{Kind, NAMES, NAMESPACES};

/// What one step did, as counted in the report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Op {
    Create,
    /// A create under a name that was deleted before.
    Recreate,
    Update,
    Delete,
    /// A delete and a create of the same name back to back: a relist sees a new object (new
    /// uid) where the old one was.
    DeleteAndRecreate,
}

/// The random writer, and what it has written.
pub(crate) struct Churn {
    rng: fastrand::Rng,
    /// Per kind, the slots (namespace, name) that exist on the server now.
    live: Vec<HashSet<(usize, usize)>>,
    /// Per kind, the slots that ever existed.
    used: Vec<HashSet<(usize, usize)>>,
    generation: u64,
    /// Writes by kind and operation.
    pub(crate) counts: BTreeMap<(&'static str, Op), u64>,
}

impl Churn {
    pub(crate) fn new(seed: u64, kinds: usize) -> Self {
        Self {
            rng: fastrand::Rng::with_seed(seed),
            live: vec![HashSet::new(); kinds],
            used: vec![HashSet::new(); kinds],
            generation: 0,
            counts: BTreeMap::new(),
        }
    }

    /// Writes one random change. Pods, which carry the most handlers, get half the writes.
    ///
    /// # Panics
    ///
    /// When the server refuses a write the driver's own bookkeeping says is valid: a bug in
    /// the server or in this driver.
    pub(crate) fn step(&mut self, server: &ServerHandle, kinds: &[Kind]) {
        let k = if self.rng.bool() { 0 } else { self.rng.usize(1..kinds.len()) };
        let kind = &kinds[k];
        let slot = (self.rng.usize(0..NAMESPACES), self.rng.usize(0..NAMES));
        self.generation += 1;
        let op = if self.live[k].contains(&slot) {
            match self.rng.u32(0..100) {
                0..65 => Op::Update,
                65..90 => Op::Delete,
                _ => Op::DeleteAndRecreate,
            }
        } else if self.used[k].contains(&slot) {
            Op::Recreate
        } else {
            Op::Create
        };
        let (namespace, name) = kind.address(slot);
        let body = kind.object(slot, self.generation);
        let written = match op {
            Op::Create | Op::Recreate => server.create(&kind.gvr, body).map(drop),
            Op::Update => server.update(&kind.gvr, body).map(drop),
            Op::Delete => server.delete(&kind.gvr, &namespace, &name).map(drop),
            Op::DeleteAndRecreate => server
                .delete(&kind.gvr, &namespace, &name)
                .and_then(|_| server.create(&kind.gvr, body))
                .map(drop),
        };
        if let Err(status) = written {
            panic!("{op:?} of {} {namespace}/{name} refused: {status}", kind.name);
        }
        if op == Op::Delete {
            self.live[k].remove(&slot);
        } else {
            self.live[k].insert(slot);
            self.used[k].insert(slot);
        }
        *self.counts.entry((kind.name, op)).or_default() += 1;
    }

    /// Writes made so far.
    pub(crate) fn total(&self) -> u64 {
        self.counts.values().sum()
    }
}
