//! `object_decoder`: the fast object decoder ([`ObjectDecoder`], simd-json with a `serde_json`
//! fallback) against `serde_json` alone, on recorded pods laid out anew, mutated, nested deeper
//! than any parser's limit, or replaced by random bytes.
//!
//! Properties:
//! - it returns what `serde_json` returns: the same pod (with or without `managedFields`), or an
//!   error with `serde_json`'s message, except for the two inputs its documentation lists
//!   (`-0` as an integer, a `+` in an integer map key);
//! - a decoder that has decoded other objects (its buffers grown and reused) decodes the next
//!   one as a fresh decoder does;
//! - nesting thousands deep neither overflows the 2 MiB stack nor is accepted.

use std::sync::OnceLock;

use fastrand::Rng;
use informer_fuzz::json::{self, Layout};
use informer_fuzz::{Unstructured, arbitrary, bytes};

use crate::test_fixtures::recorded_pods;
use k8s_openapi::api::core::v1::Pod;
use serde::de::DeserializeSeed;
use serde_json::Value;

use crate::codec::object_decoder::ObjectDecoder;
use crate::codec::prune::ObjectSeed;

struct Seeds {
    pods: Vec<Value>,
    raw: Vec<Vec<u8>>,
}

fn seeds() -> &'static Seeds {
    static SEEDS: OnceLock<Seeds> = OnceLock::new();
    SEEDS.get_or_init(|| {
        let raw: Vec<Vec<u8>> = recorded_pods().into_iter().map(|(_, body)| body).collect();
        let pods = raw.iter().map(|body| serde_json::from_slice(body).unwrap()).collect();
        Seeds { pods, raw }
    })
}

/// A pod's JSON: a seed re-laid out, its values changed, its bytes mutated, or random bytes.
fn input(u: &mut Unstructured<'_>, rng: &mut Rng) -> arbitrary::Result<Vec<u8>> {
    let seeds = seeds();
    let mode = u.int_in_range(0..=4)?;
    if mode == 4 {
        return Ok(u.bytes(u.len())?.to_vec());
    }
    let mut value = seeds.pods[rng.usize(0..seeds.pods.len())].clone();
    if mode >= 1 {
        let ops = rng.usize(1..=4);
        json::mutate(rng, &mut value, &seeds.pods, ops);
    }
    let layout = Layout { newlines: true, duplicates: mode >= 1, reorder: true };
    let mut body = Vec::new();
    json::write(rng, &value, layout, &mut body);
    if mode >= 2 {
        let raw: Vec<&[u8]> = seeds.raw.iter().map(Vec::as_slice).collect();
        let ops = rng.usize(1..=4);
        bytes::mutate(rng, &mut body, &raw, bytes::JSON_TOKENS, ops);
    }
    Ok(body)
}

/// `serde_json`'s decode of one object, as the fast decoder's fallback runs it.
fn reference(json: &[u8], keep: bool) -> Result<Pod, String> {
    let mut deserializer = serde_json::Deserializer::from_slice(json);
    ObjectSeed::<Pod>::new(keep)
        .deserialize(&mut deserializer)
        .and_then(|pod| deserializer.end().map(|()| pod))
        .map_err(|e| e.to_string())
}

pub(super) fn property(u: &mut Unstructured<'_>) -> arbitrary::Result<()> {
    let mut rng = Rng::with_seed(u.arbitrary()?);
    let keep = u.ratio(1, 2)?;
    let first = input(u, &mut rng)?;
    let second = input(u, &mut rng)?;
    let mut reused = ObjectDecoder::<Pod>::new(keep);
    informer_fuzz::note("first.json", &first);
    informer_fuzz::note("second.json", &second);
    for json in [&first, &second] {
        let fast = reused.decode(json).map_err(|e| e.to_string());
        let fresh = ObjectDecoder::<Pod>::new(keep).decode(json).map_err(|e| e.to_string());
        assert!(fast == fresh, "a reused decoder differs from a fresh one");
        if json::negative_zero_or_plus_key(json) {
            continue;
        }
        let expected = reference(json, keep);
        match (&fast, &expected) {
            (Ok(pod), Ok(expected)) => {
                assert!(pod == expected, "simd-json and serde_json decode different pods");
            }
            (Err(message), Err(expected)) => {
                assert_eq!(message, expected, "the error is not serde_json's");
            }
            (Ok(_), Err(expected)) => {
                panic!("the fast decoder took what serde_json refuses: {expected}")
            }
            (Err(message), Ok(_)) => {
                panic!("the fast decoder refused what serde_json takes: {message}")
            }
        }
    }
    Ok(())
}
