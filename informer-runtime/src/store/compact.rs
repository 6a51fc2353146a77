//! The compact form of an object: its JSON, LZ4-compressed, and the decoders that turn it back
//! into the object.
//!
//! Used wherever objects wait in memory unread: the entries of a cache in compact storage
//! ([`storage`](super::storage)), and the items of a list that a compact cache takes only once
//! the list is complete (the [reflector](crate::reflector)). A pod without `managedFields` is
//! about 7 KB of JSON, where the decoded `Pod` takes about 26 KB of heap (`bench/PROFILES.md`:
//! k8s-openapi's structs hold every optional sub-struct inline); compressed, about 3 KB.
//!
//! Why JSON: it is self-describing, which k8s-openapi's serde needs (it skips `None` fields, so
//! a format that relies on field positions, such as bincode, cannot read its own output back),
//! and `serde_json` is already a dependency. Why LZ4, each object on its own: any one object
//! must read back alone, and a pod's JSON repeats its own field names (every container and
//! volume spells out the same keys), which LZ4 finds within the object: 2.3 to 4.9 times
//! smaller on the recorded pods, for 1.5 to 4 µs to decompress against about 20 µs to decode.
//!
//! What objects of one cache have in common, their shape, a [`Dictionary`] gives every object
//! of a cache to refer to: the *skeletons* of the first objects, which are their JSON with
//! every value blanked (strings `""`, numbers `0`, booleans `true`), only field names and
//! punctuation left, up to 16 KiB ([`DICTIONARY_BYTES`] says why not LZ4's window of 64 KiB).
//! A skeleton keeps two kinds of string, neither of them an object's data: the values of
//! `apiVersion` and `kind` (type names), and the values of a fixed [vocabulary](VOCABULARY) of
//! constants the Kubernetes API itself defines and fills in (`IfNotPresent`, `ClusterFirst`,
//! `/dev/termination-log`, …). Map keys that are not spelt like field names
//! (`app.kubernetes.io/name`, `tls.crt`) are blanked too.
//!
//! # No object data outlives its object
//!
//! The dictionary lives as long as the cache, since every form made with it needs it to be read
//! back: learnt from raw JSON, it would keep the data of the first objects (for Secrets, the
//! values of deleted or rotated Secrets) for the cache's life. Learnt from skeletons, it holds
//! no value of any object; what can remain is a map key spelt like a field name (a label key
//! `app`, a Secret's item name `password`): a name, never a value. The pooled decoders'
//! buffers, which hold the JSON of the last objects read, are wiped after each read (zeroed, or
//! let go where simd-json owns them).
//!
//! The price is the values the objects of a cache share (namespaces, images, node names, label
//! values, owner names), which a dictionary of raw JSON let every object refer to. The recorded
//! kind pods and the every-field pod of `tests/fixtures`, without `managedFields`, each
//! compressed with a dictionary learnt from the seven others, come out 4.0 times smaller than
//! their JSON with 16 KiB of skeletons, against 4.4 times with 16 KiB of the others' raw JSON
//! (4.8 with the 64 KiB this module learnt before) and 2.8 times without a dictionary
//! (`cargo test --release -p informer-runtime --lib store::compact::tests::dictionary_figures
//! -- --ignored --nocapture`, which also times encoding and decoding).

use std::sync::{Arc, OnceLock, Weak};

use serde::Serialize;

#[cfg(feature = "simd-json")]
use crate::codec::object_decoder::ObjectDecoder;
use crate::resource::Object;

/// The first byte of a compact form: compressed on its own.
const PLAIN: u8 = 0;
/// The first byte of a compact form: compressed with its cache's [`Dictionary`].
const WITH_DICTIONARY: u8 = 1;

/// How many bytes of skeletons a [`Dictionary`] holds: a quarter of LZ4's window of 64 KiB.
///
/// LZ4 hashes every third position of the dictionary into a fresh table of 4,096 slots on each
/// encode, so a long dictionary costs time on every object and gains little: its early
/// positions are overwritten in the table by later ones. On the recorded pods, 16 KiB encodes
/// in 14.6 µs and compresses 3.96 times, where 38 KiB (the eight pods' whole skeletons, which
/// 64 KiB allowed) took 18.7 µs for 3.81 times, and no dictionary 12.2 µs for 2.78 times
/// (`dictionary_length_figures` in the tests).
const DICTIONARY_BYTES: usize = 16 * 1024;

/// How much of one object's skeleton goes into a [`Dictionary`], so that it learns from at least
/// four objects.
const DICTIONARY_BYTES_PER_OBJECT: usize = DICTIONARY_BYTES / 4;

/// How many objects a [`Dictionary`] learns from at most: objects of one shape give the same
/// skeleton, which is learnt once, so a cache of alike objects would otherwise never fill it.
const DICTIONARY_OBJECTS: usize = 256;

/// Skeletons typical of one cache's objects, which every compact form of the cache may refer to.
///
/// It learns from the first objects encoded with it (until it holds [`DICTIONARY_BYTES`], at
/// most [`DICTIONARY_BYTES_PER_OBJECT`] of each, or has seen [`DICTIONARY_OBJECTS`]), which are
/// compressed on their own; once learnt it never changes, since every form made with it needs it
/// to be read back. It holds [skeletons](skeleton) only: no value of any object.
#[derive(Default)]
pub(crate) struct Dictionary {
    learning: parking_lot::Mutex<Learning>,
    learnt: OnceLock<Box<[u8]>>,
}

/// What a [`Dictionary`] has learnt so far.
#[derive(Default)]
struct Learning {
    /// The distinct skeletons seen, one after the other.
    skeletons: Vec<u8>,
    /// The hash of each skeleton in `skeletons`: an object of a shape seen before adds nothing.
    seen: Vec<u64>,
    /// How many objects were offered.
    objects: usize,
}

impl Dictionary {
    /// The dictionary to compress `json` with, once there is one; until then, learns from
    /// `json`'s skeleton.
    fn for_encoding(&self, json: &[u8]) -> Option<&[u8]> {
        if let Some(learnt) = self.learnt.get() {
            return Some(learnt);
        }
        let mut learning = self.learning.lock();
        // Another thread may have finished learning while this one waited for the lock.
        if self.learnt.get().is_some() {
            return None;
        }
        let mut shape = Vec::with_capacity(json.len().min(DICTIONARY_BYTES_PER_OBJECT));
        skeleton(json, &mut shape);
        let room = DICTIONARY_BYTES
            .saturating_sub(learning.skeletons.len())
            .min(DICTIONARY_BYTES_PER_OBJECT);
        shape.truncate(room);
        let hash = {
            use std::hash::{BuildHasher, BuildHasherDefault};
            BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default()
                .hash_one(&shape)
        };
        if !learning.seen.contains(&hash) {
            learning.seen.push(hash);
            learning.skeletons.extend_from_slice(&shape);
        }
        learning.objects += 1;
        if learning.skeletons.len() >= DICTIONARY_BYTES || learning.objects >= DICTIONARY_OBJECTS {
            let learnt = std::mem::take(&mut *learning);
            let _ = self.learnt.set(learnt.skeletons.into_boxed_slice());
        }
        None
    }

    /// The dictionary, once learnt.
    fn learnt(&self) -> Option<&[u8]> {
        self.learnt.get().map(|learnt| &**learnt)
    }

    /// Every byte the dictionary holds: what it is learning from, and what it learnt.
    #[cfg(test)]
    pub(crate) fn held_bytes(&self) -> Vec<u8> {
        let mut held = self.learning.lock().skeletons.clone();
        held.extend_from_slice(self.learnt().unwrap_or_default());
        held
    }
}

/// Strings a [skeleton](skeleton) keeps as they are: constants that the Kubernetes API defines
/// (enumerations and the defaults the API server fills in), which most objects of their kinds
/// spell out, and which are no object's data.
const VOCABULARY: &[&str] = &[
    // Conditions and phases.
    "True",
    "False",
    "Unknown",
    "Running",
    "Pending",
    "Succeeded",
    "Failed",
    "Ready",
    "PodScheduled",
    "Initialized",
    "ContainersReady",
    "PodReadyToStartContainers",
    "Available",
    "Progressing",
    "NewReplicaSetAvailable",
    "MinimumReplicasAvailable",
    "ReplicaSetUpdated",
    "Complete",
    "Bound",
    "Active",
    "Terminating",
    // Pod and container defaults.
    "Always",
    "IfNotPresent",
    "Never",
    "OnFailure",
    "ClusterFirst",
    "ClusterFirstWithHostNet",
    "Default",
    "None",
    "File",
    "FallbackToLogsOnError",
    "/dev/termination-log",
    "default-scheduler",
    "PreemptLowerPriority",
    "BestEffort",
    "Burstable",
    "Guaranteed",
    "RuntimeDefault",
    "Unconfined",
    "Localhost",
    "TCP",
    "UDP",
    "SCTP",
    "NoSchedule",
    "NoExecute",
    "PreferNoSchedule",
    "Exists",
    "Equal",
    "node.kubernetes.io/not-ready",
    "node.kubernetes.io/unreachable",
    "kube-root-ca.crt",
    "ca.crt",
    "namespace",
    "token",
    "metadata.namespace",
    "metadata.name",
    "spec.nodeName",
    "status.podIP",
    "status.hostIP",
    "/var/run/secrets/kubernetes.io/serviceaccount",
    "cpu",
    "memory",
    "ephemeral-storage",
    "kubernetes.io/hostname",
    "kubernetes.io/os",
    "linux",
    // Workloads, services, volumes, secrets, events.
    "RollingUpdate",
    "Recreate",
    "OnDelete",
    "25%",
    "OrderedReady",
    "Parallel",
    "ClusterIP",
    "NodePort",
    "LoadBalancer",
    "ExternalName",
    "SingleStack",
    "PreferDualStack",
    "RequireDualStack",
    "IPv4",
    "IPv6",
    "Cluster",
    "Local",
    "Retain",
    "Delete",
    "Recycle",
    "ReadWriteOnce",
    "ReadWriteMany",
    "ReadOnlyMany",
    "ReadWriteOncePod",
    "Filesystem",
    "Block",
    "Immediate",
    "WaitForFirstConsumer",
    "Opaque",
    "kubernetes.io/service-account-token",
    "kubernetes.io/dockerconfigjson",
    "kubernetes.io/tls",
    "Normal",
    "Warning",
];

/// Whether a JSON object's key is spelt like a field name: ASCII letters and digits, a letter
/// first. Kubernetes field names are; the keys of maps often are not (`app.kubernetes.io/name`,
/// `tls.crt`), and those a skeleton blanks.
fn is_field_name(key: &[u8]) -> bool {
    key.first().is_some_and(u8::is_ascii_alphabetic)
        && key.len() <= 64
        && key.iter().all(u8::is_ascii_alphanumeric)
}

/// Whether the value of an `apiVersion` or `kind` is spelt like a type name (`apps/v1`,
/// `ReplicaSet`, `example.com/v1alpha1`).
fn is_type_name(value: &[u8]) -> bool {
    !value.is_empty()
        && value.len() <= 128
        && value.iter().all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'/' | b'-'))
}

/// Where the JSON string that starts at `json[start]` (a `"`) ends: the index of its closing
/// `"`, or `None` if it does not end.
fn string_end(json: &[u8], start: usize) -> Option<usize> {
    let mut at = start + 1;
    while let Some(&byte) = json.get(at) {
        match byte {
            b'\\' => at += 2,
            b'"' => return Some(at),
            _ => at += 1,
        }
    }
    None
}

/// Appends to `out` the skeleton of `json`: the same JSON with every value blanked (strings to
/// `""`, numbers to `0`, booleans to `true`) except the [`VOCABULARY`] and the type names of
/// `apiVersion` and `kind`, and with the keys that are not [field names](is_field_name) blanked.
/// What a [`Dictionary`] learns from: an object's shape without its data.
///
/// `json` is compact JSON, as `serde_json` and API servers write it (a key followed by white
/// space before its `:` is blanked as a value is); anything else gives bytes no longer than it
/// too, and never a panic.
fn skeleton(json: &[u8], out: &mut Vec<u8>) {
    let mut at = 0;
    // Whether the value being read is that of an `apiVersion` or a `kind`.
    let mut type_name = false;
    while let Some(&byte) = json.get(at) {
        match byte {
            b'"' => {
                let Some(end) = string_end(json, at) else { return };
                let content = &json[at + 1..end];
                let kept = if json.get(end + 1) == Some(&b':') {
                    type_name = matches!(content, b"apiVersion" | b"kind");
                    is_field_name(content)
                } else {
                    let kept = (type_name && is_type_name(content))
                        || VOCABULARY.iter().any(|word| word.as_bytes() == content);
                    type_name = false;
                    kept
                };
                out.extend_from_slice(if kept { &json[at..=end] } else { b"\"\"" });
                at = end + 1;
            }
            b'-' | b'0'..=b'9' => {
                while json
                    .get(at)
                    .is_some_and(|b| matches!(b, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'))
                {
                    at += 1;
                }
                out.push(b'0');
                type_name = false;
            }
            b'f' if json[at..].starts_with(b"false") => {
                out.extend_from_slice(b"true");
                at += 5;
                type_name = false;
            }
            _ => {
                out.push(byte);
                at += 1;
            }
        }
    }
}

/// `obj`'s compact form: its JSON, compressed (with `dictionary`'s help once it has learnt),
/// at its exact length: a tag byte, the JSON's length, the LZ4 block.
///
/// # Errors
///
/// What `obj`'s `Serialize` refuses (a map with non-string keys, a custom impl's error), and
/// JSON over 4 GiB.
pub(crate) fn encode<K: Serialize>(
    obj: &K,
    dictionary: Option<&Dictionary>,
) -> Result<Box<[u8]>, serde_json::Error> {
    compress(&serde_json::to_vec(obj)?, dictionary)
}

/// The compact form of an object whose JSON is `json` (see [`encode`]).
///
/// # Errors
///
/// JSON over 4 GiB.
pub(crate) fn compress(
    json: &[u8],
    dictionary: Option<&Dictionary>,
) -> Result<Box<[u8]>, serde_json::Error> {
    let length = u32::try_from(json.len()).map_err(|_| {
        <serde_json::Error as serde::ser::Error>::custom("an object of over 4 GiB of JSON")
    })?;
    let dictionary = dictionary.and_then(|d| d.for_encoding(json));
    let mut form = vec![0; 5 + lz4_flex::block::get_maximum_output_size(json.len())];
    form[0] = if dictionary.is_some() { WITH_DICTIONARY } else { PLAIN };
    form[1..5].copy_from_slice(&length.to_le_bytes());
    let compressed = match dictionary {
        Some(dictionary) => {
            lz4_flex::block::compress_into_with_dict(json, &mut form[5..], dictionary)
        }
        None => lz4_flex::block::compress_into(json, &mut form[5..]),
    };
    // The output has the room LZ4 says the worst case needs.
    let compressed = compressed.map_err(|error| {
        <serde_json::Error as serde::ser::Error>::custom(format!("compressing an object: {error}"))
    })?;
    form.truncate(5 + compressed);
    Ok(form.into_boxed_slice())
}

/// An object held in its compact form, with what the cache reads without decoding it.
pub(crate) struct Encoded {
    /// The object's [compact form](encode).
    json: Box<[u8]>,
    /// The object's labels, decoded: the label index and selector matching read them without
    /// decoding the object.
    labels: FlatLabels,
    /// The object's `resourceVersion` (empty when it has none): a relist finds an unchanged
    /// object by it without decoding it.
    resource_version: Box<str>,
}

/// Label maps, as objects carry them.
pub(crate) type Labels = std::collections::BTreeMap<String, String>;

/// An object's labels as a compact entry keeps them: every key and value one after the other in
/// one string, in the map's order (sorted by key), and where each ends. Two allocations, about
/// 100 bytes for a few labels, where a `BTreeMap` of `String`s takes a node of about 550 bytes
/// and one allocation per string: at 20,000 pods, about 10 MiB of a compact cache's 120.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct FlatLabels {
    /// Keys and values, in the order key, value, key, value ...
    text: Box<str>,
    /// Where each key and each value ends in `text`.
    ends: Box<[usize]>,
}

impl FlatLabels {
    /// `labels`, flattened.
    pub(crate) fn new(labels: Option<&Labels>) -> Self {
        let Some(labels) = labels.filter(|l| !l.is_empty()) else { return Self::default() };
        let mut text = String::with_capacity(labels.iter().map(|(k, v)| k.len() + v.len()).sum());
        let mut ends = Vec::with_capacity(labels.len() * 2);
        for (key, value) in labels {
            text.push_str(key);
            ends.push(text.len());
            text.push_str(value);
            ends.push(text.len());
        }
        Self { text: text.into_boxed_str(), ends: ends.into_boxed_slice() }
    }

    /// How many labels there are.
    pub(crate) fn len(&self) -> usize {
        self.ends.len() / 2
    }

    /// The `i`th label (in key order): its key and its value.
    pub(crate) fn at(&self, i: usize) -> (&str, &str) {
        let start = match i {
            0 => 0,
            i => self.ends.get(2 * i - 1).copied().unwrap_or_default(),
        };
        let key_end = self.ends.get(2 * i).copied().unwrap_or_default();
        let value_end = self.ends.get(2 * i + 1).copied().unwrap_or_default();
        // Ends made by `new` fall on the boundaries of the strings it copied.
        let text = |from, to| self.text.get(from..to).unwrap_or_default();
        (text(start, key_end), text(key_end, value_end))
    }

    /// The value of the label `key`.
    pub(crate) fn get(&self, key: &str) -> Option<&str> {
        // Sorted by key, as the map was: `str`'s order is `String`'s.
        let mut range = 0..self.len();
        while !range.is_empty() {
            let middle = range.start + range.len() / 2;
            let (name, value) = self.at(middle);
            match name.cmp(key) {
                std::cmp::Ordering::Equal => return Some(value),
                std::cmp::Ordering::Less => range.start = middle + 1,
                std::cmp::Ordering::Greater => range.end = middle,
            }
        }
        None
    }
}

impl Encoded {
    /// `obj`, held as `json`, its compact form.
    pub(crate) fn new<K: Object>(obj: &K, json: Box<[u8]>) -> Self {
        let meta = obj.meta();
        Self {
            json,
            labels: FlatLabels::new(meta.labels.as_ref()),
            resource_version: meta.resource_version.as_deref().unwrap_or_default().into(),
        }
    }

    /// The compact form.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.json
    }

    /// The object's labels.
    pub(crate) fn labels(&self) -> &FlatLabels {
        &self.labels
    }

    /// Whether this is the form of the object at `resource_version` (never for an empty one).
    pub(crate) fn is_at(&self, resource_version: &str) -> bool {
        !resource_version.is_empty() && *self.resource_version == *resource_version
    }

    /// This entry with `json` for its compact form, whatever `json` is: a corrupt one, for a
    /// test.
    #[cfg(test)]
    pub(crate) fn with_bytes(&self, json: Box<[u8]>) -> Self {
        Self { json, labels: self.labels.clone(), resource_version: self.resource_version.clone() }
    }
}

impl std::fmt::Debug for Encoded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Encoded").field("bytes", &self.json.len()).finish_non_exhaustive()
    }
}

/// The compact forms of one cache: its [`Dictionary`] and [`Decoders`], shared by the cache's
/// storage and by its reflector, which encodes a list's items as they arrive so that the cache
/// can take each form as it is instead of encoding the object a second time.
///
/// A form made for an object that is about to be stored is [prepared](Self::prepare) with that
/// object: the storage takes it back when that very allocation (`Arc`) is stored, and encodes
/// any other object itself (one a transform replaced, say). Prepared forms wait in a bounded
/// queue: a form nobody takes is dropped once [`PREPARED`] newer ones wait.
pub(crate) struct Codec<K> {
    dictionary: Dictionary,
    decoders: Decoders<K>,
    prepared: parking_lot::Mutex<std::collections::VecDeque<Prepared<K>>>,
}

/// A form made ahead, and the object it is the form of.
type Prepared<K> = (Weak<K>, Arc<Encoded>);

/// How many [prepared](Codec::prepare) forms wait at most: more than the informer's queue takes
/// at once while a list is handed over, so that none it will take is dropped first.
const PREPARED: usize = 1024;

impl<K> Default for Codec<K> {
    fn default() -> Self {
        Self {
            dictionary: Dictionary::default(),
            decoders: Decoders::default(),
            prepared: parking_lot::Mutex::default(),
        }
    }
}

impl<K: Object> Codec<K> {
    /// `obj`'s compact form, with this cache's dictionary (see [`encode`]).
    pub(crate) fn encode(&self, obj: &K) -> Result<Box<[u8]>, serde_json::Error> {
        encode(obj, Some(&self.dictionary))
    }

    /// The compact form of an object whose JSON is `json`, with this cache's dictionary: the
    /// form of a listed item kept as the server sent it (the reflector's `raw_item`).
    pub(crate) fn encode_json(&self, json: &[u8]) -> Result<Box<[u8]>, serde_json::Error> {
        compress(json, Some(&self.dictionary))
    }

    /// The object of a form this codec made (see [`Decoders::decode`]).
    pub(crate) fn decode(&self, form: &[u8]) -> Result<K, Undecodable> {
        self.decoders.decode(form, Some(&self.dictionary))
    }

    /// `form` is `obj`'s compact form: the storage takes it when it stores `obj`.
    pub(crate) fn prepare(&self, obj: &Arc<K>, form: Arc<Encoded>) {
        let mut prepared = self.prepared.lock();
        if prepared.len() >= PREPARED {
            prepared.pop_front();
        }
        prepared.push_back((Arc::downgrade(obj), form));
    }

    /// The form [prepared](Self::prepare) for `obj`, this very allocation, if one waits.
    pub(crate) fn take_prepared(&self, obj: &Arc<K>) -> Option<Arc<Encoded>> {
        self.take_prepared_where(obj, |_| true)
    }

    /// Whether the form prepared for `obj` is `held`, the very entry a cache holds (a relist
    /// found the object unchanged); if so, it is taken.
    pub(crate) fn take_prepared_if(&self, obj: &Arc<K>, held: &Arc<Encoded>) -> bool {
        self.take_prepared_where(obj, |form| Arc::ptr_eq(form, held)).is_some()
    }

    /// The form prepared for `obj` if `accept` takes it.
    ///
    /// The `Weak` a prepared form keeps holds its object's allocation, so no other object can
    /// have its address while it waits.
    fn take_prepared_where(
        &self,
        obj: &Arc<K>,
        accept: impl Fn(&Arc<Encoded>) -> bool,
    ) -> Option<Arc<Encoded>> {
        let mut prepared = self.prepared.lock();
        let at = prepared.iter().position(|(weak, form)| {
            std::ptr::eq(weak.as_ptr(), Arc::as_ptr(obj)) && accept(form)
        })?;
        prepared.remove(at).map(|(_, form)| form)
    }

    /// Every byte the dictionary and the pooled decoders hold.
    #[cfg(test)]
    pub(crate) fn held_bytes(&self) -> Vec<u8> {
        let mut held = self.dictionary.held_bytes();
        held.extend(self.decoders.held_bytes());
        held
    }
}

/// What turns JSON into a `K`: the [`codec`](crate::codec)'s decoder with the `simd-json` feature.
#[cfg(feature = "simd-json")]
type Decoder<K> = ObjectDecoder<K>;

/// What turns JSON into a `K`: `serde_json` without the `simd-json` feature.
#[cfg(not(feature = "simd-json"))]
type Decoder<K> = SerdeJson<K>;

/// `serde_json`, with the decoding call of the codec's `ObjectDecoder`.
#[cfg(not(feature = "simd-json"))]
struct SerdeJson<K>(std::marker::PhantomData<fn() -> K>);

#[cfg(not(feature = "simd-json"))]
impl<K: Object> SerdeJson<K> {
    fn new(_keep_managed_fields: bool) -> Self {
        Self(std::marker::PhantomData)
    }

    #[allow(
        clippy::unused_self,
        clippy::needless_pass_by_ref_mut,
        reason = "the codec's decoder's call"
    )]
    fn decode(&mut self, json: &[u8]) -> Result<K, serde_json::Error> {
        serde_json::from_slice(json)
    }

    /// Nothing to forget: `serde_json` keeps no buffer.
    #[allow(clippy::unused_self, reason = "the codec's decoder's call")]
    fn forget(&mut self) {}
}

/// Why a compact form could not be decoded, in words that quote none of the object's data
/// (`serde_json`'s messages may quote a value: only its category and position are kept).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Undecodable(String);

impl std::fmt::Display for Undecodable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Undecodable {
    /// The compact form did not decompress, for the reason `why`.
    fn corrupt(why: &dyn std::fmt::Display) -> Self {
        Self(format!("the compact form of a cached object does not decompress: {why}"))
    }

    /// The decompressed JSON did not decode, as `error` says.
    fn json(error: &serde_json::Error) -> Self {
        use serde_json::error::Category;
        let what = match error.classify() {
            Category::Io => "an I/O error",
            Category::Syntax => "a syntax error",
            Category::Data => "a value of a type it does not take, or a missing field",
            Category::Eof => "an early end",
        };
        Self(format!(
            "its JSON does not decode: {what} at line {} column {}",
            error.line(),
            error.column()
        ))
    }
}

/// A decoder and the buffer it decompresses into, kept together for reuse.
struct Slot<K> {
    decoder: Decoder<K>,
    json: Vec<u8>,
}

/// Decodes compact forms back into objects, with decoders (and their buffers) kept for reuse:
/// each decode takes one or makes one and puts it back, so there are about as many as callers
/// at once, and at most [`POOLED_DECODERS`] are kept.
pub(crate) struct Decoders<K> {
    pool: parking_lot::Mutex<Vec<Slot<K>>>,
}

/// How many idle decoders are kept (each holds buffers the size of the largest object it
/// decoded, up to 256 KiB, and of the largest JSON it decompressed).
const POOLED_DECODERS: usize = 4;

impl<K> Default for Decoders<K> {
    fn default() -> Self {
        Self { pool: parking_lot::Mutex::new(Vec::new()) }
    }
}

impl<K: Object> Decoders<K> {
    /// Decodes a compact form made by [`encode`] with `dictionary`. With the `simd-json` feature,
    /// through the codec's decoder: simd-json, about twice as fast as `serde_json` on pods, and every
    /// `Vec` of the object at its exact length, so an object decoded here is as small as one the
    /// watch decoded. It keeps `managedFields`: the JSON holds what the object held.
    ///
    ///
    /// The JSON it decompressed, and the decoder's copy of it, are wiped before the decoder
    /// goes back to the pool: no object's data stays in the pool after its read.
    ///
    /// # Errors
    ///
    /// [`Undecodable`], saying why `compact` is not the compact form of a `K`.
    pub(crate) fn decode(
        &self,
        compact: &[u8],
        dictionary: Option<&Dictionary>,
    ) -> Result<K, Undecodable> {
        let taken = self.pool.lock().pop();
        let mut slot =
            taken.unwrap_or_else(|| Slot { decoder: Decoder::new(true), json: Vec::new() });
        let decoded = decompress(compact, dictionary, &mut slot.json)
            .and_then(|()| slot.decoder.decode(&slot.json).map_err(|e| Undecodable::json(&e)));
        // Everything past the length was zeroed by an earlier read, or never written.
        slot.json.fill(0);
        slot.decoder.forget();
        let mut pool = self.pool.lock();
        if pool.len() < POOLED_DECODERS {
            pool.push(slot);
        }
        decoded
    }
}

#[cfg(test)]
impl<K: Object> Decoders<K> {
    /// Every byte the pooled decoders hold between reads that a test can see: their
    /// decompression buffers and, with the `simd-json` feature, their decoders' copies.
    pub(crate) fn held_bytes(&self) -> Vec<u8> {
        let mut held = Vec::new();
        for slot in &*self.pool.lock() {
            held.extend_from_slice(&slot.json);
            #[cfg(feature = "simd-json")]
            held.extend_from_slice(slot.decoder.held_bytes());
        }
        held
    }
}

/// Decompresses `compact` into `json`, which keeps its allocation from one call to the next.
pub(crate) fn decompress(
    compact: &[u8],
    dictionary: Option<&Dictionary>,
    json: &mut Vec<u8>,
) -> Result<(), Undecodable> {
    let corrupt = Undecodable::corrupt;
    let (tag, rest) = compact.split_first().ok_or_else(|| corrupt(&"it is empty"))?;
    let dictionary = match *tag {
        PLAIN => None,
        WITH_DICTIONARY => {
            Some(dictionary.and_then(Dictionary::learnt).ok_or_else(|| corrupt(&"no dictionary"))?)
        }
        other => return Err(corrupt(&format!("unknown tag {other}"))),
    };
    let (size, block) = lz4_flex::block::uncompressed_size(rest).map_err(|e| corrupt(&e))?;
    // LZ4 expands a block at most about 255 times: a larger size is not ours, and allocating
    // it could take all the memory there is.
    if size > block.len().saturating_mul(255).saturating_add(16) {
        return Err(corrupt(&format!("{size} bytes declared for a block of {}", block.len())));
    }
    json.clear();
    json.resize(size, 0);
    let written = match dictionary {
        Some(dictionary) => lz4_flex::block::decompress_into_with_dict(block, json, dictionary),
        None => lz4_flex::block::decompress_into(block, json),
    };
    let written = written.map_err(|e| corrupt(&e))?;
    json.truncate(written);
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

    use std::time::Instant;

    use k8s_openapi::api::core::v1::Pod;

    use super::*;
    use crate::testing::objects::{holds, pod, secret};

    fn labeled(name: &str) -> Pod {
        let mut pod = pod("default", name, "7");
        pod.metadata.labels = Some([("app".to_owned(), "web".to_owned())].into());
        pod
    }

    #[test]
    fn an_object_decodes_from_its_compact_form_as_it_was() {
        let original = labeled("web-0");
        let compact = encode(&original, None).unwrap();
        let json = serde_json::to_vec(&original).unwrap();
        assert_ne!(&*compact, &json[..], "compressed");
        let decoders = Decoders::<Pod>::default();
        for _ in 0..8 {
            assert_eq!(decoders.decode(&compact, None).unwrap(), original);
        }
    }

    #[test]
    fn a_dictionary_learns_from_the_first_objects_then_shrinks_the_rest() {
        let dictionary = Dictionary::default();
        let decoders = Decoders::<Pod>::default();
        let mut forms = Vec::new();
        let mut learnt_at = None;
        for i in 0..2000 {
            let pod = labeled(&format!("web-{i}"));
            forms.push((encode(&pod, Some(&dictionary)).unwrap(), pod));
            if learnt_at.is_none() && dictionary.learnt().is_some() {
                learnt_at = Some(i);
            }
        }
        // Pods of one shape: one skeleton, learnt once, and the dictionary is done once it
        // has seen as many objects as it learns from.
        assert_eq!(learnt_at, Some(DICTIONARY_OBJECTS - 1));
        let mut shape = Vec::new();
        skeleton(&serde_json::to_vec(&forms[0].1).unwrap(), &mut shape);
        assert_eq!(dictionary.learnt(), Some(&shape[..]));
        let (first, last) = (&forms[0].0, &forms[1999].0);
        assert_eq!((first[0], last[0]), (PLAIN, WITH_DICTIONARY));
        assert!(last.len() * 2 < first.len(), "{} bytes, against {}", last.len(), first.len());
        for (i, (form, pod)) in forms.iter().enumerate() {
            assert_eq!(&decoders.decode(form, Some(&dictionary)).unwrap(), pod, "object {i}");
        }
        // A form made with a dictionary cannot be read without it.
        let error = decoders.decode(last, None).unwrap_err().to_string();
        assert!(error.contains("no dictionary"), "{error}");
    }

    #[test]
    fn a_skeleton_keeps_the_shape_and_no_value() {
        let json = br#"{"apiVersion":"v1","kind":"Pod","metadata":{"labels":{"app":"web","app.kubernetes.io/name":"x"},"name":"web-0"},"spec":{"containers":[{"image":"nginx:1.27","imagePullPolicy":"IfNotPresent","name":"c","ports":[{"containerPort":8080,"protocol":"TCP"}],"tty":false}],"dnsPolicy":"ClusterFirst","hostNetwork":true,"x":-1.5e3,"y":null,"z":"a \"quoted\" \\ string"}}"#;
        let mut out = Vec::new();
        skeleton(json, &mut out);
        assert_eq!(
            String::from_utf8(out.clone()).unwrap(),
            r#"{"apiVersion":"v1","kind":"Pod","metadata":{"labels":{"app":"","":""},"name":""},"spec":{"containers":[{"image":"","imagePullPolicy":"IfNotPresent","name":"","ports":[{"containerPort":0,"protocol":"TCP"}],"tty":true}],"dnsPolicy":"ClusterFirst","hostNetwork":true,"x":0,"y":null,"z":""}}"#
        );
        // Whatever the input, no panic and no more bytes than it has.
        for junk in [&b""[..], b"\"", b"\"abc", b"{\"a\":\"\\", b"-", b"fals", b"\xff\xfe"] {
            let mut out = Vec::new();
            skeleton(junk, &mut out);
            assert!(out.len() <= junk.len(), "{junk:?} gave {out:?}");
        }
    }

    /// The recorded pods of the crate's `tests/fixtures` (kind's seven and the every-field pod),
    /// without `managedFields`, as JSON.
    fn recorded_pods() -> Vec<Vec<u8>> {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
        let names = [
            "kind-v1-36-pod-coredns.json",
            "kind-v1-36-pod-etcd.json",
            "kind-v1-36-pod-kindnet.json",
            "kind-v1-36-pod-kube-apiserver.json",
            "kind-v1-36-pod-kube-controller.json",
            "kind-v1-36-pod-kube-proxy.json",
            "kind-v1-36-pod-kube-scheduler.json",
            "k8s-api-allfields-core.v1.Pod.json",
        ];
        names
            .iter()
            .map(|name| {
                let body = std::fs::read(format!("{dir}/{name}")).unwrap();
                let mut pod: Pod = serde_json::from_slice(&body).unwrap();
                pod.metadata.managed_fields = None;
                serde_json::to_vec(&pod).unwrap()
            })
            .collect()
    }

    /// A dictionary made from `others` as a [`Dictionary`] learns it: each one's `learn`ed
    /// bytes, at most [`DICTIONARY_BYTES_PER_OBJECT`] of each.
    fn dictionary_of(others: &[&Vec<u8>], learn: impl Fn(&[u8]) -> Vec<u8>) -> Dictionary {
        dictionary_of_at_most(others, learn, DICTIONARY_BYTES, DICTIONARY_BYTES_PER_OBJECT)
    }

    /// [`dictionary_of`] with other limits: at most `total` bytes, `each` of one object.
    fn dictionary_of_at_most(
        others: &[&Vec<u8>],
        learn: impl Fn(&[u8]) -> Vec<u8>,
        total: usize,
        each: usize,
    ) -> Dictionary {
        let mut bytes = Vec::new();
        for json in others {
            let mut learnt = learn(json);
            learnt.truncate(each);
            bytes.extend_from_slice(&learnt);
        }
        bytes.truncate(total);
        Dictionary {
            learning: parking_lot::Mutex::default(),
            learnt: OnceLock::from(bytes.into_boxed_slice()),
        }
    }

    fn shape_of(json: &[u8]) -> Vec<u8> {
        let mut shape = Vec::new();
        skeleton(json, &mut shape);
        shape
    }

    /// What a dictionary learns from one object's JSON.
    type Learn = dyn Fn(&[u8]) -> Vec<u8>;

    /// Each recorded pod compressed with a dictionary learnt (by `learn`) from the seven
    /// others, or alone: its JSON's bytes and its compact forms', summed over the pods.
    fn leave_one_out(learn: Option<&Learn>) -> (usize, usize) {
        let pods = recorded_pods();
        let (mut json, mut compact) = (0, 0);
        for (i, pod) in pods.iter().enumerate() {
            let object: Pod = serde_json::from_slice(pod).unwrap();
            let others: Vec<&Vec<u8>> =
                pods.iter().enumerate().filter(|(j, _)| *j != i).map(|(_, p)| p).collect();
            let dictionary = learn.map(|learn| dictionary_of(&others, learn));
            json += pod.len();
            compact += encode(&object, dictionary.as_ref()).unwrap().len();
        }
        (json, compact)
    }

    #[test]
    fn a_dictionary_of_skeletons_still_shrinks_the_recorded_pods() {
        let (json, alone) = leave_one_out(None);
        let (_, with_shapes) = leave_one_out(Some(&shape_of));
        // A quarter smaller at least (the docs give the figure: `dictionary_figures`).
        assert!(with_shapes * 4 < alone * 3, "{with_shapes} bytes with skeletons, {alone} alone");
        assert!(with_shapes * 3 < json, "{with_shapes} bytes of {json}");
    }

    /// Microseconds `encode` takes for one of `objects`, averaged over `ROUNDS` of them all.
    #[allow(clippy::cast_precision_loss, reason = "figures for a person")]
    fn encode_us(objects: &[Pod], dictionary: Option<&Dictionary>) -> f64 {
        const ROUNDS: usize = 300;
        let start = Instant::now();
        for _ in 0..ROUNDS {
            for pod in objects {
                std::hint::black_box(encode(pod, dictionary).unwrap());
            }
        }
        start.elapsed().as_secs_f64() * 1e6 / (ROUNDS * objects.len()) as f64
    }

    /// The figures the module docs give: compression ratios, and encode and decode times,
    /// with a dictionary of the others' raw JSON (before skeletons), of their skeletons, and
    /// none. `cargo test --release -p informer-runtime --lib
    /// store::compact::tests::dictionary_figures -- --ignored --nocapture`
    #[test]
    #[ignore = "prints figures; times are only meaningful in a release build"]
    #[allow(clippy::cast_precision_loss, reason = "figures for a person")]
    fn dictionary_figures() {
        const ROUNDS: usize = 500;
        let raw = |json: &[u8]| json.to_vec();
        let schemes: [(&str, Option<&Learn>); 3] =
            [("none", None), ("raw JSON", Some(&raw)), ("skeletons", Some(&shape_of))];
        let pods = recorded_pods();
        let objects: Vec<Pod> = pods.iter().map(|p| serde_json::from_slice(p).unwrap()).collect();
        for (name, learn) in schemes {
            let (json, compact) = leave_one_out(learn);
            // Times: every pod against the dictionary of all eight (what a filled cache's is).
            let all: Vec<&Vec<u8>> = pods.iter().collect();
            let dictionary = learn.map(|learn| dictionary_of(&all, learn));
            let forms: Vec<Box<[u8]>> =
                objects.iter().map(|p| encode(p, dictionary.as_ref()).unwrap()).collect();
            let encode_us = encode_us(&objects, dictionary.as_ref());
            let decoders = Decoders::<Pod>::default();
            let start = std::time::Instant::now();
            for _ in 0..ROUNDS {
                for form in &forms {
                    std::hint::black_box(decoders.decode(form, dictionary.as_ref()).unwrap());
                }
            }
            let decode_us = start.elapsed().as_secs_f64() * 1e6 / (ROUNDS * pods.len()) as f64;
            // Decoding without wiping the buffers after each read, as before.
            let mut slot = Slot { decoder: Decoder::<Pod>::new(true), json: Vec::new() };
            let start = std::time::Instant::now();
            for _ in 0..ROUNDS {
                for form in &forms {
                    decompress(form, dictionary.as_ref(), &mut slot.json).unwrap();
                    std::hint::black_box(slot.decoder.decode(&slot.json).unwrap());
                }
            }
            let unwiped_us = start.elapsed().as_secs_f64() * 1e6 / (ROUNDS * pods.len()) as f64;
            println!(
                "dictionary of {name:<9}: {:.2} times smaller than JSON ({compact} of {json} bytes, \
                 each pod against the 7 others); encode {encode_us:.1} µs, decode {decode_us:.1} µs \
                 ({unwiped_us:.1} µs without wiping) a pod",
                json as f64 / compact as f64
            );
        }
    }

    /// Encoding time and size against the dictionary's length: LZ4 hashes the whole dictionary
    /// into a fresh table on every call, so its length is paid for on every encode. For each
    /// (dictionary bytes, bytes of one object), each recorded pod against the skeletons of the
    /// seven others, as a cache of these eight shapes learns them.
    /// `cargo test --release -p informer-runtime --lib
    /// store::compact::tests::dictionary_length_figures -- --ignored --nocapture --test-threads 1`
    #[test]
    #[ignore = "prints figures; times are only meaningful in a release build"]
    #[allow(clippy::cast_precision_loss, reason = "figures for a person")]
    fn dictionary_length_figures() {
        const KIB: usize = 1024;
        let pods = recorded_pods();
        let objects: Vec<Pod> = pods.iter().map(|p| serde_json::from_slice(p).unwrap()).collect();
        println!("no dictionary: encode {:.1} µs a pod", encode_us(&objects, None));
        for (total, each) in
            [(64 * KIB, 16 * KIB), (32 * KIB, 8 * KIB), (16 * KIB, 8 * KIB), (16 * KIB, 4 * KIB)]
        {
            let (mut json, mut compact) = (0, 0);
            for (i, pod) in objects.iter().enumerate() {
                let others: Vec<&Vec<u8>> =
                    pods.iter().enumerate().filter(|(j, _)| *j != i).map(|(_, p)| p).collect();
                let dictionary = dictionary_of_at_most(&others, shape_of, total, each);
                json += pods[i].len();
                compact += encode(pod, Some(&dictionary)).unwrap().len();
            }
            let all: Vec<&Vec<u8>> = pods.iter().collect();
            let dictionary = dictionary_of_at_most(&all, shape_of, total, each);
            println!(
                "dictionary of at most {} KiB, {} KiB an object ({} bytes here): {:.2} times \
                 smaller than JSON; encode {:.1} µs a pod",
                total / KIB,
                each / KIB,
                dictionary.learnt().map_or(0, <[u8]>::len),
                json as f64 / compact as f64,
                encode_us(&objects, Some(&dictionary)),
            );
        }
    }

    #[test]
    fn no_value_of_an_object_enters_the_dictionary() {
        let dictionary = Dictionary::default();
        let decoders = Decoders::<k8s_openapi::api::core::v1::Secret>::default();
        let value = |i: usize| format!("hunter2-{i:04}-s3cr3t");
        let name = |i: usize| format!("db-credentials-{i:04}");
        let mut forms = Vec::new();
        for i in 0..400 {
            let secret = secret("vault", &name(i), &value(i));
            forms.push((encode(&secret, Some(&dictionary)).unwrap(), secret));
        }
        assert!(dictionary.learnt().is_some(), "a dictionary, learnt from the first secrets");
        let held = dictionary.held_bytes();
        for i in 0..400 {
            assert!(!holds(&held, &value(i)), "secret {i}'s data is in the dictionary");
            assert!(!holds(&held, &name(i)), "secret {i}'s name is in the dictionary");
        }
        assert!(!holds(&held, "vault"), "the namespace is in the dictionary");
        for (form, secret) in &forms {
            assert_eq!(&decoders.decode(form, Some(&dictionary)).unwrap(), secret);
        }
        assert_eq!(forms[399].0[0], WITH_DICTIONARY);
    }

    /// A compact entry's flat labels answer every lookup and list every label as the map they
    /// were made from: random maps (keys that prefix one another, empty strings, multi-byte
    /// characters), looked up by their keys and by keys they lack.
    #[test]
    fn flat_labels_read_as_the_map_they_were_made_from() {
        // `INFORMER_COMPACT_SEED=0x…` replays a failure (each assertion prints the seed).
        let seed = std::env::var("INFORMER_COMPACT_SEED")
            .ok()
            .and_then(|s| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok())
            .unwrap_or_else(|| fastrand::u64(..));
        let mut rng = fastrand::Rng::with_seed(seed);
        let alphabet = ["", "a", "ab", "b", "é", "app", "app.kubernetes.io/name", "z"];
        let word = |rng: &mut fastrand::Rng| -> String {
            (0..rng.usize(0..3)).map(|_| alphabet[rng.usize(..alphabet.len())]).collect()
        };
        for _ in 0..500 {
            let map: Labels =
                (0..rng.usize(0..8)).map(|_| (word(&mut rng), word(&mut rng))).collect();
            let flat = FlatLabels::new(Some(&map));
            assert_eq!(flat.len(), map.len(), "seed {seed:#x}: {map:?}");
            let listed: Vec<(&str, &str)> = (0..flat.len()).map(|i| flat.at(i)).collect();
            let expected: Vec<(&str, &str)> =
                map.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            assert_eq!(listed, expected, "seed {seed:#x}");
            for _ in 0..8 {
                let key = word(&mut rng);
                assert_eq!(
                    flat.get(&key),
                    map.get(&key).map(String::as_str),
                    "seed {seed:#x}: {key:?} in {map:?}"
                );
            }
            for key in map.keys() {
                assert_eq!(flat.get(key), map.get(key).map(String::as_str), "seed {seed:#x}");
            }
        }
        assert_eq!(FlatLabels::new(None), FlatLabels::default());
        assert_eq!(FlatLabels::new(Some(&Labels::new())).get(""), None);
    }

    #[test]
    fn what_is_not_a_compact_form_is_an_error_not_a_panic() {
        let decoders = Decoders::<Pod>::default();
        let mut not_an_object = vec![PLAIN];
        not_an_object.extend(lz4_flex::block::compress_prepend_size(b"{\"metadata\":7}"));
        assert!(decoders.decode(&not_an_object, None).is_err());
        for junk in [&b""[..], b"\x00", b"\x07", b"\x00\xff\xff\xff\x7f1234", b"\x00\x05\0\0\0\xf0"]
        {
            let error = decoders.decode(junk, None).unwrap_err().to_string();
            assert!(error.contains("does not decompress"), "{junk:?}: {error}");
        }
    }
}
