//! Fuzz target `crd_schema_reader`: the CRD schema reader ([`informer_gen::schema::parse_str`])
//! and the generator behind it ([`Generator::generate`]), on CRDs of the corpus in
//! `tests/fixtures/` mutated line by line and byte by byte (YAML's anchors, aliases, merge keys,
//! tags, flow collections, deep nesting, alias bombs), rewritten as JSON with changed values,
//! or replaced by random bytes.
//!
//! Properties: the reader reads or fails with an error that names the file; what it reads,
//! the generator turns into code or refuses with an error; neither panics, nor overflows the
//! 2 MiB stack.
//!
//! It runs in `cargo test` for a short budget and in `cargo xtask fuzz`; a failure prints its
//! seed, and `ARBTEST_SEED=0x… cargo test -p informer-gen --test fuzz` replays it.

use std::path::Path;
use std::sync::OnceLock;

use informer_fuzz::json::{self, Layout};
use informer_fuzz::{Rng, Target, Unstructured, arbitrary, bytes, fixtures, text};
use informer_gen::Generator;
use serde_json::Value;

#[test]
fn crd_schema_reader() {
    Target::new("crd_schema_reader", property).run();
}

/// The seeds: CRDs small enough to parse many times a second.
const MAX_SEED: usize = 40 * 1024;

struct Seeds {
    files: Vec<(String, Vec<u8>)>,
    values: Vec<Value>,
}

fn seeds() -> &'static Seeds {
    static SEEDS: OnceLock<Seeds> = OnceLock::new();
    SEEDS.get_or_init(|| {
        let mut files = fixtures::dir("tests/fixtures/crd-corpus", &[".yaml"]);
        files.push((
            "foobar.json".to_owned(),
            fixtures::read("informer-derive/tests/fixtures/foobar.json"),
        ));
        files.retain(|(_, text)| text.len() <= MAX_SEED);
        let values = files
            .iter()
            .map(|(name, text)| {
                serde_yaml_ng::from_slice(text).unwrap_or_else(|e| panic!("{name}: {e}"))
            })
            .collect();
        Seeds { files, values }
    })
}

fn property(u: &mut Unstructured<'_>) -> arbitrary::Result<()> {
    let mut rng = Rng::with_seed(u.arbitrary()?);
    let seeds = seeds();
    let (name, contents) = match u.int_in_range(0..=3)? {
        0 | 1 => {
            let (name, text) = &seeds.files[rng.usize(0..seeds.files.len())];
            let mut text = text.clone();
            let ops = rng.usize(0..=4);
            text::mutate_lines(&mut rng, &mut text, ops);
            let others: Vec<&[u8]> = seeds.files.iter().map(|(_, text)| text.as_slice()).collect();
            let ops = rng.usize(0..=4);
            bytes::mutate(&mut rng, &mut text, &others, text::YAML_TOKENS, ops);
            (name.clone(), text)
        }
        2 => {
            let mut value = seeds.values[rng.usize(0..seeds.values.len())].clone();
            let ops = rng.usize(1..=4);
            json::mutate(&mut rng, &mut value, &seeds.values, ops);
            let mut out = Vec::new();
            let layout = Layout { newlines: true, duplicates: rng.bool(), reorder: true };
            json::write(&mut rng, &value, layout, &mut out);
            // JSON is YAML too: read it both ways.
            (if rng.bool() { "mutated.json" } else { "mutated.yaml" }.to_owned(), out)
        }
        _ => ("random.yaml".to_owned(), u.bytes(u.len())?.to_vec()),
    };
    check(&name, &String::from_utf8_lossy(&contents));
    Ok(())
}

/// The properties, for one file.
fn check(name: &str, contents: &str) {
    informer_fuzz::note(name, contents.as_bytes());
    match informer_gen::schema::parse_str(Path::new(name), contents) {
        Ok(loaded) => {
            if let Err(error) = Generator::new().generate(&loaded) {
                assert!(!error.to_string().is_empty(), "a generator error without a message");
            }
        }
        Err(error) => {
            let message = error.to_string();
            assert!(message.starts_with(name), "an error that does not name the file: {message}");
        }
    }
}
