//! The compact form of an object: its JSON, at its exact length, and the decoders that turn it
//! back into the object.
//!
//! Used wherever objects wait in memory unread: the entries of a cache in compact storage
//! ([`storage`](super::storage)), and the items of a list that a compact cache takes only once
//! the list is complete (the [reflector](crate::reflector)). A pod without `managedFields` is
//! about 7 KB of JSON, where the decoded `Pod` takes about 26 KB of heap (`bench/PROFILES.md`:
//! k8s-openapi's structs hold every optional sub-struct inline).
//!
//! Why JSON: it is self-describing, which k8s-openapi's serde needs (it skips `None` fields, so
//! a format that relies on field positions, such as bincode, cannot read its own output back),
//! and `serde_json` is already a dependency.

use serde::Serialize;

#[cfg(feature = "client")]
use crate::client::object_decoder::ObjectDecoder;
use crate::resource::Resource;

/// `obj` as JSON, at its exact length.
///
/// # Errors
///
/// What `obj`'s `Serialize` refuses (a map with non-string keys, a custom impl's error).
pub(crate) fn encode<K: Serialize>(obj: &K) -> Result<Box<[u8]>, serde_json::Error> {
    serde_json::to_vec(obj).map(Vec::into_boxed_slice)
}

/// Decodes compact forms back into objects, with decoders (and their parse buffers) kept for
/// reuse: each decode takes one or makes one and puts it back, so there are about as many as
/// callers at once, and at most [`POOLED_DECODERS`] are kept.
pub(crate) struct Decoders<K> {
    #[cfg(feature = "client")]
    pool: parking_lot::Mutex<Vec<ObjectDecoder<K>>>,
    #[cfg(not(feature = "client"))]
    _kind: std::marker::PhantomData<fn() -> K>,
}

/// How many idle decoders are kept (each holds buffers the size of the largest object it
/// decoded, up to 256 KiB).
#[cfg(feature = "client")]
const POOLED_DECODERS: usize = 4;

impl<K> Default for Decoders<K> {
    fn default() -> Self {
        Self {
            #[cfg(feature = "client")]
            pool: parking_lot::Mutex::new(Vec::new()),
            #[cfg(not(feature = "client"))]
            _kind: std::marker::PhantomData,
        }
    }
}

impl<K: Resource> Decoders<K> {
    /// Decodes `json` with the HTTP client's decoder when the `client` feature is on: simd-json,
    /// about twice as fast as `serde_json` on pods, and every `Vec` of the object at its exact
    /// length, so an object decoded here is as small as one the watch decoded. It keeps
    /// `managedFields`: the JSON holds what the object held.
    ///
    /// # Errors
    ///
    /// `serde_json`'s reading of why `json` is not a `K`.
    #[cfg(feature = "client")]
    pub(crate) fn decode(&self, json: &[u8]) -> Result<K, serde_json::Error> {
        let taken = self.pool.lock().pop();
        let mut decoder = taken.unwrap_or_else(|| ObjectDecoder::new(true));
        let decoded = decoder.decode(json);
        let mut pool = self.pool.lock();
        if pool.len() < POOLED_DECODERS {
            pool.push(decoder);
        }
        decoded
    }

    /// Decodes `json` with `serde_json`.
    ///
    /// # Errors
    ///
    /// `serde_json`'s reading of why `json` is not a `K`.
    #[cfg(not(feature = "client"))]
    #[allow(clippy::unused_self, reason = "the same call as with the `client` feature")]
    pub(crate) fn decode(&self, json: &[u8]) -> Result<K, serde_json::Error> {
        serde_json::from_slice(json)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

    use k8s_openapi::api::core::v1::Pod;

    use super::*;
    use crate::testing::objects::pod;

    #[test]
    fn an_object_decodes_from_its_compact_form_as_it_was() {
        let mut original = pod("default", "web-0", "7");
        original.metadata.labels = Some([("app".to_owned(), "web".to_owned())].into());
        let json = encode(&original).unwrap();
        assert_eq!(json.len(), serde_json::to_vec(&original).unwrap().len());
        let decoders = Decoders::<Pod>::default();
        for _ in 0..8 {
            assert_eq!(decoders.decode(&json).unwrap(), original);
        }
        assert!(decoders.decode(b"{\"metadata\":7}").is_err());
    }
}
