//! Written by `cargo xtask compare-kopium`: one tool's output for one CRD file (`generated.rs`,
//! untouched) and the round-trip entry point the runner calls.

#[allow(clippy::all, clippy::pedantic)]
pub mod generated;

/// The CRD versions the tool generated a root type for.
pub const VERSIONS: &[&str] = &[/*VERSIONS*/];

/// Deserialises `json` into the root type of `version` and serialises it back.
///
/// # Errors
///
/// The path and message of the first deserialisation error, or a serialisation error.
pub fn roundtrip(version: &str, json: &str) -> Result<String, String> {
    match version {
/*ARMS*/
        _ => Err(format!("no root type was generated for version {version}")),
    }
}

fn roundtrip_as<T: serde::de::DeserializeOwned + serde::Serialize>(
    json: &str,
) -> Result<String, String> {
    let deserializer = &mut serde_json::Deserializer::from_str(json);
    let object: T = serde_path_to_error::deserialize(deserializer).map_err(|e| {
        let path = e.path().to_string();
        format!("deserialise: {path}: {}", e.inner())
    })?;
    serde_json::to_string(&object).map_err(|e| format!("serialise: {e}"))
}
