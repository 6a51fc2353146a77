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

use serde::Serialize;

#[cfg(feature = "client")]
use crate::client::object_decoder::ObjectDecoder;
use crate::resource::Resource;

/// `obj`'s compact form: its JSON, compressed, at its exact length.
///
/// # Errors
///
/// What `obj`'s `Serialize` refuses (a map with non-string keys, a custom impl's error).
pub(crate) fn encode<K: Serialize>(obj: &K) -> Result<Box<[u8]>, serde_json::Error> {
    let json = serde_json::to_vec(obj)?;
    Ok(lz4_flex::block::compress_prepend_size(&json).into_boxed_slice())
}

/// What turns JSON into a `K`: the HTTP client's decoder with the `client` feature.
#[cfg(feature = "client")]
type Decoder<K> = ObjectDecoder<K>;

/// What turns JSON into a `K`: `serde_json` without the `client` feature.
#[cfg(not(feature = "client"))]
type Decoder<K> = SerdeJson<K>;

/// `serde_json`, with the decoding call of the client's `ObjectDecoder`.
#[cfg(not(feature = "client"))]
struct SerdeJson<K>(std::marker::PhantomData<fn() -> K>);

#[cfg(not(feature = "client"))]
impl<K: Resource> SerdeJson<K> {
    fn new(_keep_managed_fields: bool) -> Self {
        Self(std::marker::PhantomData)
    }

    #[allow(
        clippy::unused_self,
        clippy::needless_pass_by_ref_mut,
        reason = "the client's decoder's call"
    )]
    fn decode(&mut self, json: &[u8]) -> Result<K, serde_json::Error> {
        serde_json::from_slice(json)
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

impl<K: Resource> Decoders<K> {
    /// Decodes a compact form made by [`encode`]. With the `client` feature, through the HTTP
    /// client's decoder: simd-json, about twice as fast as `serde_json` on pods, and every
    /// `Vec` of the object at its exact length, so an object decoded here is as small as one the
    /// watch decoded. It keeps `managedFields`: the JSON holds what the object held.
    ///
    /// # Errors
    ///
    /// A `serde_json` error saying why `compact` is not the compact form of a `K`.
    pub(crate) fn decode(&self, compact: &[u8]) -> Result<K, serde_json::Error> {
        let taken = self.pool.lock().pop();
        let mut slot =
            taken.unwrap_or_else(|| Slot { decoder: Decoder::new(true), json: Vec::new() });
        let decoded =
            decompress(compact, &mut slot.json).and_then(|()| slot.decoder.decode(&slot.json));
        let mut pool = self.pool.lock();
        if pool.len() < POOLED_DECODERS {
            pool.push(slot);
        }
        decoded
    }
}

/// Decompresses `compact` into `json`, which keeps its allocation from one call to the next.
fn decompress(compact: &[u8], json: &mut Vec<u8>) -> Result<(), serde_json::Error> {
    let corrupt = |error: lz4_flex::block::DecompressError| {
        <serde_json::Error as serde::de::Error>::custom(format!(
            "the compact form of a cached object does not decompress: {error}"
        ))
    };
    let (size, block) = lz4_flex::block::uncompressed_size(compact).map_err(corrupt)?;
    // LZ4 expands a block at most about 255 times: a larger size is not ours, and allocating
    // it could take all the memory there is.
    if size > block.len().saturating_mul(255).saturating_add(16) {
        return Err(corrupt(lz4_flex::block::DecompressError::OutputTooSmall {
            expected: size,
            actual: block.len().saturating_mul(255),
        }));
    }
    json.clear();
    json.resize(size, 0);
    let written = lz4_flex::block::decompress_into(block, json).map_err(corrupt)?;
    json.truncate(written);
    Ok(())
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
        let compact = encode(&original).unwrap();
        let json = serde_json::to_vec(&original).unwrap();
        assert_ne!(&*compact, &json[..], "compressed");
        let decoders = Decoders::<Pod>::default();
        for _ in 0..8 {
            assert_eq!(decoders.decode(&compact).unwrap(), original);
        }
    }

    #[test]
    fn what_is_not_a_compact_form_is_an_error_not_a_panic() {
        let decoders = Decoders::<Pod>::default();
        let not_an_object = lz4_flex::block::compress_prepend_size(b"{\"metadata\":7}");
        assert!(decoders.decode(&not_an_object).is_err());
        for junk in [&b""[..], b"\x01", b"\xff\xff\xff\x7f1234", b"\x05\0\0\0\xf0"] {
            let error = decoders.decode(junk).unwrap_err().to_string();
            assert!(error.contains("does not decompress"), "{junk:?}: {error}");
        }
    }
}
