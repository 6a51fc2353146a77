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
//! What objects of one cache have in common (the same keys, namespaces, images, node names,
//! owner kinds, label keys and values) a [`Dictionary`] gives every object of a cache to refer
//! to: the first objects' JSON, up to LZ4's window of 64 KiB. This is what interning the
//! repeated strings would save, without a type of our own for every string of every
//! k8s-openapi struct: the recorded kind pods without `managedFields`, each compressed with the
//! others as the dictionary, come out 5.3 times smaller than their JSON, against 2.8 times
//! without it.

use std::sync::OnceLock;

use serde::Serialize;

#[cfg(feature = "client")]
use crate::client::object_decoder::ObjectDecoder;
use crate::resource::Object;

/// The first byte of a compact form: compressed on its own.
const PLAIN: u8 = 0;
/// The first byte of a compact form: compressed with its cache's [`Dictionary`].
const WITH_DICTIONARY: u8 = 1;

/// How much JSON a [`Dictionary`] holds: LZ4's window, beyond which no match can refer.
const DICTIONARY_BYTES: usize = 64 * 1024;

/// How much of one object's JSON goes into a [`Dictionary`], so that it learns from at least
/// four objects.
const DICTIONARY_BYTES_PER_OBJECT: usize = DICTIONARY_BYTES / 4;

/// JSON typical of one cache's objects, which every compact form of the cache may refer to.
///
/// It learns from the first objects encoded with it (up to [`DICTIONARY_BYTES`], at most
/// [`DICTIONARY_BYTES_PER_OBJECT`] of each), which are compressed on their own; once it is
/// full it never changes, since every form made with it needs it to be read back.
#[derive(Default)]
pub(crate) struct Dictionary {
    learning: parking_lot::Mutex<Vec<u8>>,
    learnt: OnceLock<Box<[u8]>>,
}

impl Dictionary {
    /// The dictionary to compress `json` with, once there is one; until then, learns from
    /// `json`.
    fn for_encoding(&self, json: &[u8]) -> Option<&[u8]> {
        if let Some(learnt) = self.learnt.get() {
            return Some(learnt);
        }
        let mut learning = self.learning.lock();
        let room = DICTIONARY_BYTES.saturating_sub(learning.len()).min(DICTIONARY_BYTES_PER_OBJECT);
        learning.extend_from_slice(&json[..json.len().min(room)]);
        if learning.len() >= DICTIONARY_BYTES {
            let _ = self.learnt.set(std::mem::take(&mut *learning).into_boxed_slice());
        }
        None
    }

    /// The dictionary, once learnt.
    fn learnt(&self) -> Option<&[u8]> {
        self.learnt.get().map(|learnt| &**learnt)
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
    let json = serde_json::to_vec(obj)?;
    let length = u32::try_from(json.len()).map_err(|_| {
        <serde_json::Error as serde::ser::Error>::custom("an object of over 4 GiB of JSON")
    })?;
    let dictionary = dictionary.and_then(|d| d.for_encoding(&json));
    let mut form = vec![0; 5 + lz4_flex::block::get_maximum_output_size(json.len())];
    form[0] = if dictionary.is_some() { WITH_DICTIONARY } else { PLAIN };
    form[1..5].copy_from_slice(&length.to_le_bytes());
    let compressed = match dictionary {
        Some(dictionary) => {
            lz4_flex::block::compress_into_with_dict(&json, &mut form[5..], dictionary)
        }
        None => lz4_flex::block::compress_into(&json, &mut form[5..]),
    };
    // The output has the room LZ4 says the worst case needs.
    let compressed = compressed.map_err(|error| {
        <serde_json::Error as serde::ser::Error>::custom(format!("compressing an object: {error}"))
    })?;
    form.truncate(5 + compressed);
    Ok(form.into_boxed_slice())
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
impl<K: Object> SerdeJson<K> {
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

impl<K: Object> Decoders<K> {
    /// Decodes a compact form made by [`encode`] with `dictionary`. With the `client` feature, through the HTTP
    /// client's decoder: simd-json, about twice as fast as `serde_json` on pods, and every
    /// `Vec` of the object at its exact length, so an object decoded here is as small as one the
    /// watch decoded. It keeps `managedFields`: the JSON holds what the object held.
    ///
    /// # Errors
    ///
    /// A `serde_json` error saying why `compact` is not the compact form of a `K`.
    pub(crate) fn decode(
        &self,
        compact: &[u8],
        dictionary: Option<&Dictionary>,
    ) -> Result<K, serde_json::Error> {
        let taken = self.pool.lock().pop();
        let mut slot =
            taken.unwrap_or_else(|| Slot { decoder: Decoder::new(true), json: Vec::new() });
        let decoded = decompress(compact, dictionary, &mut slot.json)
            .and_then(|()| slot.decoder.decode(&slot.json));
        let mut pool = self.pool.lock();
        if pool.len() < POOLED_DECODERS {
            pool.push(slot);
        }
        decoded
    }
}

/// Decompresses `compact` into `json`, which keeps its allocation from one call to the next.
pub(crate) fn decompress(
    compact: &[u8],
    dictionary: Option<&Dictionary>,
    json: &mut Vec<u8>,
) -> Result<(), serde_json::Error> {
    let corrupt = |why: &dyn std::fmt::Display| {
        <serde_json::Error as serde::de::Error>::custom(format!(
            "the compact form of a cached object does not decompress: {why}"
        ))
    };
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

    use k8s_openapi::api::core::v1::Pod;

    use super::*;
    use crate::testing::objects::pod;

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
        let learnt_at = learnt_at.expect("a dictionary once 64 KiB of JSON were seen");
        assert_eq!(dictionary.learnt().map(<[u8]>::len), Some(DICTIONARY_BYTES));
        let (first, last) = (&forms[0].0, &forms[1999].0);
        assert_eq!((first[0], last[0]), (PLAIN, WITH_DICTIONARY));
        assert!(last.len() * 2 < first.len(), "{} bytes, against {}", last.len(), first.len());
        for (i, (form, pod)) in forms.iter().enumerate() {
            assert_eq!(&decoders.decode(form, Some(&dictionary)).unwrap(), pod, "object {i}");
        }
        // A form made with a dictionary cannot be read without it.
        let error = decoders.decode(last, None).unwrap_err().to_string();
        assert!(error.contains("no dictionary"), "{error}");
        assert!(learnt_at < 2000);
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
