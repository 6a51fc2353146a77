//! One object's JSON to the `K` the cache keeps: fast, pruned, and at exact capacities.
//!
//! Both decode paths of the HTTP lister-watcher end here, once per object: a list item cut out
//! by the [splitter](super::list_split), or the object of a watch event. An [`ObjectDecoder`]
//! decodes it with [`simd_json`], through the [`prune`](super::prune) wrapper that skips
//! `metadata.managedFields` unless told to keep it.
//!
//! # Why simd-json
//!
//! The cache holds every object for as long as it runs, so what matters is the heap each one
//! keeps, and that depends on how `Vec`s are built. JSON does not say how long an array is until
//! it ends, so a streaming parser (`serde_json`) builds every `Vec` by pushing onto it: the
//! vector ends with up to twice the capacity it needs, and with at least four slots when its
//! elements are at most 1 KiB (Rust's growth policy). k8s-openapi's structs are large inline (a
//! `Volume` is 3.2 KiB, a `Container` 2.3 KiB, a `ContainerStatus` 752 bytes on x86-64), so the
//! slack is a large part of a decoded pod: one container status alone carries three empty
//! 752-byte slots. simd-json first indexes the whole document (its "tape", which records how
//! many elements each array has), then hands serde each array with its exact length as the size
//! hint, so every `Vec` is allocated once, at exactly its length. Its SIMD parser is also about
//! twice as fast as `serde_json` on the benchmark's pods (`cargo xtask bench`), where the
//! alternative, decoding with `serde_json` and then cloning into exact capacities, cost half a
//! decode more.
//!
//! # `serde_json` has the last word
//!
//! Anything simd-json rejects is decoded again by `serde_json` (and then copied once into exact
//! capacities, as `Clone` allocates every vector at its length), so what is accepted, and every
//! error message with its position, is `serde_json`'s. Both paths see input the splitter or the
//! watch framing has already checked to be one JSON value, so the fallback runs only on objects
//! that do not fit `K`.
//!
//! Objects a relist finds unchanged in the cache are dropped right after decoding: the cached one
//! is kept (see [`ListerWatcher::list_reusing`](crate::listwatch::ListerWatcher::list_reusing)).

use std::fmt;
use std::marker::PhantomData;

use serde::de::{DeserializeOwned, DeserializeSeed};

use super::prune::ObjectSeed;

/// Decodes objects of type `K`, reusing its parse buffers from one object to the next.
pub(crate) struct ObjectDecoder<K> {
    keep_managed_fields: bool,
    /// simd-json parses in place (it unescapes strings where they lie), so each object is
    /// copied here first; the buffer keeps its allocation between objects.
    input: Vec<u8>,
    buffers: simd_json::Buffers,
    _kind: PhantomData<fn() -> K>,
}

impl<K> fmt::Debug for ObjectDecoder<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ObjectDecoder")
            .field("keep_managed_fields", &self.keep_managed_fields)
            .finish_non_exhaustive()
    }
}

impl<K: DeserializeOwned + Clone> ObjectDecoder<K> {
    /// A decoder whose objects keep `metadata.managedFields` only if `keep_managed_fields` is set.
    pub(crate) fn new(keep_managed_fields: bool) -> Self {
        Self {
            keep_managed_fields,
            input: Vec::new(),
            buffers: simd_json::Buffers::default(),
            _kind: PhantomData,
        }
    }

    /// Decodes `json`, one JSON value, into `K` with exact-capacity vectors.
    ///
    /// # Errors
    ///
    /// `serde_json`'s error when `json` is not a `K`, with its position within `json`.
    pub(crate) fn decode(&mut self, json: &[u8]) -> Result<K, serde_json::Error> {
        self.input.clear();
        self.input.extend_from_slice(json);
        let seed = ObjectSeed::<K>::new(self.keep_managed_fields);
        let fast =
            simd_json::Deserializer::from_slice_with_buffers(&mut self.input, &mut self.buffers)
                .and_then(|mut deserializer| seed.deserialize(&mut deserializer));
        match fast {
            Ok(object) => Ok(object),
            Err(_) => self.decode_with_serde_json(json),
        }
    }

    fn decode_with_serde_json(&self, json: &[u8]) -> Result<K, serde_json::Error> {
        let mut deserializer = serde_json::Deserializer::from_slice(json);
        let decoded = ObjectSeed::<K>::new(self.keep_managed_fields)
            .deserialize(&mut deserializer)
            .and_then(|object| deserializer.end().map(|()| object))?;
        // `Clone` allocates every vector at exactly its length: the slack pushing left goes.
        Ok(decoded.clone())
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Pod;

    use super::*;

    const POD: &[u8] = br#"{"metadata":{"name":"a","managedFields":[{"manager":"m"}]},
        "spec":{"containers":[{"name":"c"}],"volumes":[{"name":"v1"},{"name":"v2"},{"name":"v3"}]},
        "status":{"containerStatuses":[{"name":"c","image":"i","imageID":"","ready":true,"restartCount":0}]}}"#;

    fn statuses_capacity(pod: &Pod) -> usize {
        pod.status.as_ref().unwrap().container_statuses.as_ref().unwrap().capacity()
    }

    fn volumes_capacity(pod: &Pod) -> usize {
        pod.spec.as_ref().unwrap().volumes.as_ref().unwrap().capacity()
    }

    #[test]
    fn vectors_are_exactly_as_long_as_their_content() {
        // What serde_json alone leaves: room to grow.
        let pushed: Pod = serde_json::from_slice(POD).unwrap();
        assert!(statuses_capacity(&pushed) > 1);
        assert!(volumes_capacity(&pushed) > 3);

        let mut decoder = ObjectDecoder::<Pod>::new(true);
        let decoded = decoder.decode(POD).unwrap();
        assert_eq!(decoded, pushed);
        assert_eq!(statuses_capacity(&decoded), 1);
        assert_eq!(volumes_capacity(&decoded), 3);
    }

    #[test]
    fn managed_fields_are_skipped_unless_kept() {
        let mut pruning = ObjectDecoder::<Pod>::new(false);
        let mut keeping = ObjectDecoder::<Pod>::new(true);
        // Twice each: the second decode runs on the grown, reused buffers.
        for _ in 0..2 {
            assert_eq!(pruning.decode(POD).unwrap().metadata.managed_fields, None);
            assert_eq!(
                keeping.decode(POD).unwrap().metadata.managed_fields.map(|m| m.len()),
                Some(1)
            );
        }
    }

    #[test]
    fn every_real_pod_decodes_as_serde_json_decodes_it() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/objects");
        let mut decoder = ObjectDecoder::<Pod>::new(true);
        let mut seen = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            if !(name.contains("-pod-") || name.ends_with("core.v1.Pod.json")) {
                continue;
            }
            let json = std::fs::read(dir.join(&name)).unwrap();
            let expected: Pod = serde_json::from_slice(&json).unwrap();
            assert_eq!(decoder.decode(&json).unwrap(), expected, "{name}");
            seen += 1;
        }
        assert!(seen >= 8, "found {seen} pod files in {}", dir.display());
    }

    #[test]
    fn what_does_not_fit_gets_serde_json_s_error_and_position() {
        let mut decoder = ObjectDecoder::<Pod>::new(false);
        let json = br#"{"metadata":{"name":"a"},"spec":{"containers":[{"name":7}]}}"#;
        let expected = serde_json::from_slice::<Pod>(json).unwrap_err();
        let error = decoder.decode(json).unwrap_err();
        assert_eq!(error.to_string(), expected.to_string());
        assert_eq!((error.line(), error.column()), (expected.line(), expected.column()));
        // The decoder is not left broken by a failure.
        assert_eq!(decoder.decode(POD).unwrap().metadata.name.as_deref(), Some("a"));
    }
}
