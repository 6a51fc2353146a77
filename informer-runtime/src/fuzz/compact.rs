//! `compact_form`: the decoding of compact storage's forms ([`Decoders::decode`], with
//! [`decompress`] underneath), on the compact forms of the recorded pods (compressed on their
//! own, or with a learnt [`Dictionary`]) with bytes changed, their declared length replaced,
//! their tag changed, cut off, or on random bytes; each read with and without the dictionary.
//!
//! Properties:
//! - a form as [`encode`] made it decodes to the pod it was made from, with the dictionary it
//!   was made with;
//! - any other bytes decode to a pod or fail with an error; a form that does not decompress
//!   fails with an error that says so;
//! - decompressing never takes more memory than LZ4 can expand the form into (255 times its
//!   size, and a few bytes): a form that declares more is refused before anything is allocated.

use std::sync::OnceLock;

use fastrand::Rng;
use informer_fuzz::{Unstructured, arbitrary, bytes};

use crate::test_fixtures::recorded_pods;
use k8s_openapi::api::core::v1::Pod;

use crate::store::compact::{Decoders, Dictionary, decompress, encode};

/// A pod and its compact forms.
struct Forms {
    pod: Pod,
    /// Compressed on its own.
    plain: Box<[u8]>,
    /// Compressed with [`Seeds::dictionary`].
    with: Box<[u8]>,
}

struct Seeds {
    pods: Vec<Forms>,
    dictionary: Dictionary,
}

fn seeds() -> &'static Seeds {
    static SEEDS: OnceLock<Seeds> = OnceLock::new();
    SEEDS.get_or_init(|| {
        let pods: Vec<Pod> = recorded_pods()
            .into_iter()
            .map(|(_, body)| serde_json::from_slice(&body).unwrap())
            .collect();
        // The dictionary learns from the first objects encoded with it: encode until a form
        // uses it (its tag, 1).
        let dictionary = Dictionary::default();
        while pods.iter().all(|pod| encode(pod, Some(&dictionary)).unwrap()[0] != 1) {}
        let pods = pods
            .into_iter()
            .map(|pod| {
                let plain = encode(&pod, None).unwrap();
                let with = encode(&pod, Some(&dictionary)).unwrap();
                Forms { pod, plain, with }
            })
            .collect();
        Seeds { pods, dictionary }
    })
}

pub(super) fn property(u: &mut Unstructured<'_>) -> arbitrary::Result<()> {
    let mut rng = Rng::with_seed(u.arbitrary()?);
    let seeds = seeds();
    let Forms { pod, plain, with } = &seeds.pods[rng.usize(0..seeds.pods.len())];
    let dictionary = u.ratio(1, 2)?.then_some(&seeds.dictionary);
    let uses_dictionary = u.ratio(1, 2)?;
    let seed: &[u8] = if uses_dictionary { with } else { plain };
    let mode = u.int_in_range(0..=5)?;
    let form: Vec<u8> = match mode {
        0 => seed.to_vec(),
        1 => {
            let mut form = seed.to_vec();
            let others: Vec<&[u8]> = seeds.pods.iter().map(|f| &*f.plain).collect();
            let ops = rng.usize(1..=4);
            bytes::mutate(&mut rng, &mut form, &others, &[], ops);
            form
        }
        2 => {
            // The declared length: at the edges of what LZ4's bound allows, and past it.
            let mut form = seed.to_vec();
            let block = form.len().saturating_sub(5);
            let declared = match rng.u8(0..5) {
                0 => 0,
                1 => u32::MAX,
                2 => u32::try_from(block * 255 + 16).unwrap_or(u32::MAX),
                3 => u32::try_from(block * 255 + 17).unwrap_or(u32::MAX),
                _ => rng.u32(..),
            };
            if form.len() >= 5 {
                form[1..5].copy_from_slice(&declared.to_le_bytes());
            }
            form
        }
        3 => {
            let mut form = seed.to_vec();
            let cut = rng.usize(0..=form.len());
            form.truncate(cut);
            form
        }
        4 => {
            let mut form = u.bytes(u.len())?.to_vec();
            if let Some(tag) = form.first_mut() {
                *tag %= 3;
            }
            form
        }
        _ => u.bytes(u.len())?.to_vec(),
    };
    informer_fuzz::note("compact.bin", &form);
    // A plain form needs no dictionary; one made with the dictionary needs it.
    let readable = !uses_dictionary || dictionary.is_some();
    check(&form, dictionary, (mode == 0 && readable).then_some(pod));
    Ok(())
}

/// The properties, for one form read with `dictionary`; `original` is the pod it is the
/// unchanged form of, read with the dictionary it was made with.
pub(super) fn check(form: &[u8], dictionary: Option<&Dictionary>, original: Option<&Pod>) {
    let mut json = Vec::new();
    let decompressed = decompress(form, dictionary, &mut json);
    // The most LZ4 can expand a block to, as `decompress` bounds it; a `Vec` grown from empty
    // by `resize` has exactly the capacity asked for, at least 8 bytes.
    let bound = form.len().saturating_mul(255).saturating_add(16).max(8);
    assert!(
        json.capacity() <= bound,
        "{} bytes allocated to decompress a form of {} bytes",
        json.capacity(),
        form.len()
    );
    let decoded = Decoders::<Pod>::default().decode(form, dictionary);
    match (&decompressed, &decoded) {
        (Err(_), Ok(_)) => panic!("a form that does not decompress decoded"),
        (Err(error), Err(decode_error)) => {
            let message = decode_error.to_string();
            assert!(message.contains("does not decompress"), "{message}");
            assert_eq!(error.to_string(), message, "decompressing fails otherwise in decode");
        }
        _ => {}
    }
    if let Some(original) = original {
        let pod = decoded.unwrap_or_else(|e| panic!("an unchanged form does not decode: {e}"));
        assert!(&pod == original, "an unchanged form decodes to another pod");
    }
}
