//! Written by `cargo xtask compare-kopium`: round-trips the samples of one CRD through the types
//! one tool generated.
//!
//! `runner CRATE SAMPLES OUT`: for each version the crate generated, reads
//! `SAMPLES/<version>/*.json` and writes `OUT/<version>/<name>.json` (the object serialised back)
//! or `OUT/<version>/<name>.err` (why it could not be).

use std::path::Path;
use std::process::ExitCode;

type Roundtrip = fn(&str, &str) -> Result<String, String>;

const CRATES: &[(&str, &[&str], Roundtrip)] = &[
/*CRATES*/
];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [name, samples, out] = args.as_slice() else {
        eprintln!("usage: runner CRATE SAMPLES OUT");
        return ExitCode::FAILURE;
    };
    let Some((_, versions, roundtrip)) =
        CRATES.iter().find(|(crate_name, _, _)| crate_name == name)
    else {
        eprintln!("runner: no crate {name}");
        return ExitCode::FAILURE;
    };
    for version in *versions {
        if let Err(e) = run(
            *roundtrip,
            version,
            &Path::new(samples).join(version),
            &Path::new(out).join(version),
        ) {
            eprintln!("runner: {name} {version}: {e}");
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}

fn run(roundtrip: Roundtrip, version: &str, samples: &Path, out: &Path) -> std::io::Result<()> {
    if !samples.is_dir() {
        return Ok(());
    }
    std::fs::create_dir_all(out)?;
    let mut files: Vec<_> = std::fs::read_dir(samples)?
        .map(|entry| entry.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    files.sort();
    for file in files.iter().filter(|f| f.extension().is_some_and(|e| e == "json")) {
        let json = std::fs::read_to_string(file)?;
        let stem = file.file_stem().unwrap_or_default();
        let result = std::panic::catch_unwind(|| roundtrip(version, &json))
            .unwrap_or_else(|_| Err("panicked".to_owned()));
        match result {
            Ok(back) => std::fs::write(out.join(stem).with_extension("json"), back)?,
            Err(why) => std::fs::write(out.join(stem).with_extension("err"), why)?,
        }
    }
    Ok(())
}
