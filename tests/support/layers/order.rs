//! The layer order as a crate's docs write it: the `# Layers` section of `src/lib.rs`, one
//! `//! - ` line per layer, the bottom layer first, its modules backticked before the first `:`.

use thiserror::Error;

/// The layers, bottom first; each a list of top-level module names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layers {
    /// One entry per `//! - ` line, bottom first: the modules it names.
    pub lines: Vec<Vec<String>>,
}

/// Why a layer list could not be read.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum OrderError {
    /// The docs have no such section.
    #[error(
        "{origin} has no `# Layers` section in its crate docs: add one, a `//! # Layers` heading and then \
         one `//! - ` line per layer, bottom layer first, naming its top-level modules in backticks before \
         a colon; or point INFORMER_LAYERS_FILE at a file that holds one for this crate (see tests/layers.rs)"
    )]
    Missing { origin: String },
    /// The section has no `- ` lines.
    #[error(
        "the `# Layers` section of {origin} lists no layer: write one `//! - ` line per layer, bottom first"
    )]
    Empty { origin: String },
    /// A layer line names no module before its `:`.
    #[error(
        "layer line {line:?} in {origin} names no module: put the modules in backticks before the first `:`"
    )]
    NoModule { origin: String, line: String },
    /// A backticked name is not a module name.
    #[error(
        "layer line {line:?} in {origin} lists `{name}`, which is not a top-level module name (no paths)"
    )]
    NotAName { origin: String, line: String, name: String },
}

/// Reads the `# Layers` (or `## Layers`) section of crate docs written as `//!` lines;
/// `origin` names where they come from, for messages.
pub fn parse(text: &str, origin: &str) -> Result<Layers, OrderError> {
    let mut inside = false;
    let mut fenced = false;
    let mut found = false;
    let mut lines = Vec::new();
    for raw in text.lines() {
        let Some(doc) = raw.trim_start().strip_prefix("//!") else { continue };
        let doc = doc.strip_prefix(' ').unwrap_or(doc);
        if doc.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        if doc.starts_with('#') {
            let title = doc.trim_start_matches('#').trim();
            inside = title == "Layers" && (doc.starts_with("# ") || doc.starts_with("## "));
            found |= inside;
            continue;
        }
        if !inside {
            continue;
        }
        if let Some(line) = doc.strip_prefix("- ") {
            lines.push(modules_of(line, origin)?);
        }
    }
    if !found {
        return Err(OrderError::Missing { origin: origin.to_owned() });
    }
    if lines.is_empty() {
        return Err(OrderError::Empty { origin: origin.to_owned() });
    }
    Ok(Layers { lines })
}

/// The backticked names before the first `:` of one layer line.
fn modules_of(line: &str, origin: &str) -> Result<Vec<String>, OrderError> {
    let head = line.split(':').next().unwrap_or_default();
    // Between backticks are the odd-numbered pieces.
    let names: Vec<String> = head.split('`').skip(1).step_by(2).map(str::to_owned).collect();
    if names.is_empty() {
        return Err(OrderError::NoModule { origin: origin.to_owned(), line: line.to_owned() });
    }
    for name in &names {
        let is_name = name.chars().next().is_some_and(|c| c.is_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_alphanumeric() || c == '_');
        if !is_name {
            return Err(OrderError::NotAName {
                origin: origin.to_owned(),
                line: line.to_owned(),
                name: name.clone(),
            });
        }
    }
    Ok(names)
}

/// The part of an `INFORMER_LAYERS_FILE` for one crate: the lines after its `[crate-name]`
/// line, up to the next such line. `None` when the file has no part for it.
pub fn part_for<'a>(file: &'a str, krate: &str) -> Option<String> {
    let mut part: Option<Vec<&'a str>> = None;
    for line in file.lines() {
        let trimmed = line.trim();
        if let Some(name) = trimmed.strip_prefix('[').and_then(|rest| rest.strip_suffix(']')) {
            if part.is_some() {
                break;
            }
            if name.trim() == krate {
                part = Some(Vec::new());
            }
            continue;
        }
        if let Some(lines) = &mut part {
            lines.push(line);
        }
    }
    part.map(|lines| lines.join("\n"))
}
