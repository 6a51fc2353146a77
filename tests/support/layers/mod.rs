//! The check that keeps a crate's imports one way: it reads the module tree from `src/lib.rs`
//! ([`tree`]), resolves every `use` and every path in code to the file that defines the item
//! ([`resolve`]), and holds the edges against the layer order in the crate docs ([`order`]).
//! It fails on a module missing from the order, an edge pointing up, and any circle between
//! top-level modules or between files.

mod order;
mod resolve;
mod tree;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

use thiserror::Error;

pub use order::part_for;
use order::{Layers, OrderError};
use resolve::{Edges, Resolver};
use tree::{FileId, Tree};

/// The largest source file read (a generated file of every built-in resource is about 100 KiB).
const MAX_FILE_BYTES: u64 = 8 * 1024 * 1024;

/// Where a crate's source files come from: its folder, or a map of paths to text in tests.
pub trait Sources {
    /// The text of `path` (relative to the crate's folder), `None` if there is no such file.
    ///
    /// # Errors
    /// When the file exists but cannot be read.
    fn read(&self, path: &Path) -> Result<Option<String>, LoadError>;
}

/// A crate on disk.
pub struct Disk(pub PathBuf);

impl Sources for Disk {
    fn read(&self, path: &Path) -> Result<Option<String>, LoadError> {
        let full = self.0.join(path);
        if !full.is_file() {
            return Ok(None);
        }
        read_bounded(&full).map(Some)
    }
}

/// Reads a whole file of at most [`MAX_FILE_BYTES`].
///
/// # Errors
/// When the file cannot be read, is larger, or is not UTF-8.
pub fn read_bounded(path: &Path) -> Result<String, LoadError> {
    let io = |source| LoadError::Read { path: path.to_path_buf(), source };
    let file = std::fs::File::open(path).map_err(io)?;
    let mut text = String::new();
    file.take(MAX_FILE_BYTES + 1).read_to_string(&mut text).map_err(io)?;
    if text.len() as u64 > MAX_FILE_BYTES {
        return Err(LoadError::TooLarge { path: path.to_path_buf(), limit: MAX_FILE_BYTES });
    }
    Ok(text)
}

/// A crate held in memory: paths (`src/lib.rs`, ...) to their text.
#[cfg(test)]
impl Sources for BTreeMap<PathBuf, String> {
    fn read(&self, path: &Path) -> Result<Option<String>, LoadError> {
        Ok(self.get(path).cloned())
    }
}

/// Why a crate could not be read.
#[derive(Debug, Error)]
pub enum LoadError {
    /// A source file could not be read.
    #[error("cannot read {path}: {source}; check that the file exists and is readable UTF-8")]
    Read { path: PathBuf, source: std::io::Error },
    /// A source file is beyond the bound this check reads.
    #[error("{path} is larger than {limit} bytes, more than this check reads of a source file")]
    TooLarge { path: PathBuf, limit: u64 },
    /// The root of a module tree is missing.
    #[error("{path} does not exist: the check reads every crate from its src/lib.rs")]
    Missing { path: PathBuf },
    /// A source file is not Rust syn can parse.
    #[error("cannot parse {path}: {message}; the check reads only code that compiles")]
    Parse { path: PathBuf, message: String },
    /// `mod x;` names a file that is not there.
    #[error("{declared_in} declares `mod {name};` but neither {tried:?} exists")]
    ModuleFileMissing { declared_in: PathBuf, name: String, tried: Vec<PathBuf> },
    /// More module files than a crate of this workspace can have.
    #[error("more than {limit} module files: is a `#[path]` attribute making a loop?")]
    TooManyFiles { limit: usize },
}

/// One edge, by file paths and the names it takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edge {
    /// The importing file, relative to its crate's folder.
    pub from: String,
    /// The file that defines what it takes.
    pub to: String,
    /// The names it takes (the items, as their file defines them).
    pub names: Vec<String>,
}

impl fmt::Display for Edge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} -> {}: {}", self.from, self.to, self.names.join(", "))
    }
}

/// An edge from a module to one of a higher layer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upward {
    /// The edge.
    pub edge: Edge,
    /// The importing top-level module.
    pub from_module: String,
    /// Its layer, counted from 1 at the bottom.
    pub from_layer: usize,
    /// The imported top-level module (or the crate root).
    pub to_module: String,
    /// Its layer; `usize::MAX` for the crate root, above every layer.
    pub to_layer: usize,
}

/// A circle: its members (modules or files) and the edges between them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Circle {
    /// The modules or files in it, sorted.
    pub members: Vec<String>,
    /// Every edge between two of them, as `from -> to: names`.
    pub edges: Vec<String>,
    /// A file circle that is a module circle, one file per module: its edges are listed there.
    pub repeats_modules: bool,
}

/// What the check found in one crate.
#[derive(Debug)]
pub struct Report {
    /// The crate's name (its folder in the workspace).
    pub krate: String,
    /// Where the layer order was read.
    pub origin: String,
    /// How many module files it has (test-only ones left out).
    pub files: usize,
    /// How many file-to-file edges.
    pub edges: usize,
    /// Its top-level modules.
    pub top_level: Vec<String>,
    /// The order, or why it could not be read.
    pub layers: Result<Layers, OrderError>,
    /// Top-level modules not in the order.
    pub missing: Vec<String>,
    /// Modules on more than one layer line.
    pub twice: Vec<String>,
    /// Names in the order that are no top-level module of the crate.
    pub absent: Vec<String>,
    /// Edges from a module up to a higher layer.
    pub upward: Vec<Upward>,
    /// Circles between top-level modules.
    pub module_circles: Vec<Circle>,
    /// Circles between files.
    pub file_circles: Vec<Circle>,
}

/// Checks one crate: `sources` hold its files; `layers_text` is the crate-doc text holding its
/// `# Layers` section (its `src/lib.rs`, or a part of `INFORMER_LAYERS_FILE`), read from
/// `origin`.
///
/// # Errors
/// When the crate's files cannot be read or parsed.
pub fn check(
    krate: &str,
    sources: &dyn Sources,
    layers_text: &str,
    origin: &str,
) -> Result<Report, LoadError> {
    let tree = Tree::load(sources)?;
    let edges = Resolver::new(&tree).edges();
    let layers = order::parse(layers_text, origin);
    let top_level: Vec<String> = tree.top_level_modules().into_iter().map(str::to_owned).collect();
    let mut report = Report {
        krate: krate.to_owned(),
        origin: origin.to_owned(),
        files: tree.files.len(),
        edges: edges.len(),
        top_level,
        layers,
        missing: Vec::new(),
        twice: Vec::new(),
        absent: Vec::new(),
        upward: Vec::new(),
        module_circles: Vec::new(),
        file_circles: Vec::new(),
    };
    report.module_circles = module_circles(&tree, &edges);
    report.file_circles = file_circles(&tree, &edges, &report.module_circles);
    if let Ok(layers) = &report.layers {
        let mut layer_of = BTreeMap::new();
        for (index, line) in layers.lines.iter().enumerate() {
            for name in line {
                if layer_of.insert(name.clone(), index + 1).is_some() {
                    report.twice.push(name.clone());
                }
                // Test-only modules and inline modules of lib.rs may be listed, need not be.
                let known = report.top_level.contains(name)
                    || tree.test_only_top.contains(name)
                    || tree
                        .modules
                        .iter()
                        .any(|m| m.parent == Some(0) && m.file == 0 && m.name == *name);
                if !known {
                    report.absent.push(name.clone());
                }
            }
        }
        report.missing =
            report.top_level.iter().filter(|m| !layer_of.contains_key(*m)).cloned().collect();
        for ((from, to), names) in &edges {
            let Some(&from_layer) = tree.top_level(*from).and_then(|m| layer_of.get(m)) else {
                continue;
            };
            // The crate root sits above every layer: an edge into it points up from anywhere.
            let (to_module, to_layer) = match tree.top_level(*to) {
                None => ("crate root (lib.rs)", usize::MAX),
                Some(module) => match layer_of.get(module) {
                    Some(&layer) => (module, layer),
                    None => continue,
                },
            };
            if to_layer > from_layer {
                let from_module = tree.top_level(*from).unwrap_or_default();
                report.upward.push(Upward {
                    edge: edge(&tree, *from, *to, names),
                    from_module: from_module.to_owned(),
                    from_layer,
                    to_module: to_module.to_owned(),
                    to_layer,
                });
            }
        }
    }
    Ok(report)
}

fn edge(tree: &Tree, from: FileId, to: FileId, names: &BTreeSet<String>) -> Edge {
    Edge {
        from: tree.files[from].path.display().to_string(),
        to: tree.files[to].path.display().to_string(),
        names: names.iter().cloned().collect(),
    }
}

/// Circles between top-level modules: strongly connected groups of more than one.
fn module_circles(tree: &Tree, edges: &Edges) -> Vec<Circle> {
    let mut graph: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (from, to) in edges.keys() {
        if let (Some(a), Some(b)) = (tree.top_level(*from), tree.top_level(*to))
            && a != b
        {
            graph.entry(a).or_default().insert(b);
        }
    }
    strongly_connected(&graph)
        .into_iter()
        .map(|group| {
            let edges = edges
                .iter()
                .filter_map(|((from, to), names)| {
                    let (a, b) = (tree.top_level(*from)?, tree.top_level(*to)?);
                    (a != b && group.contains(&a) && group.contains(&b))
                        .then(|| format!("{a} -> {b}: {}", edge(tree, *from, *to, names)))
                })
                .collect();
            Circle {
                members: group.iter().map(|m| (*m).to_owned()).collect(),
                edges,
                repeats_modules: false,
            }
        })
        .collect()
}

/// Circles between files.
fn file_circles(tree: &Tree, edges: &Edges, module_circles: &[Circle]) -> Vec<Circle> {
    let mut graph: BTreeMap<FileId, BTreeSet<FileId>> = BTreeMap::new();
    for (from, to) in edges.keys() {
        graph.entry(*from).or_default().insert(*to);
    }
    strongly_connected(&graph)
        .into_iter()
        .map(|group| {
            let modules: BTreeSet<&str> = group.iter().filter_map(|f| tree.top_level(*f)).collect();
            let repeats_modules = modules.len() == group.len()
                && module_circles
                    .iter()
                    .any(|c| c.members.iter().map(String::as_str).eq(modules.iter().copied()));
            Circle {
                members: {
                    let mut paths: Vec<String> =
                        group.iter().map(|f| tree.files[*f].path.display().to_string()).collect();
                    paths.sort();
                    paths
                },
                edges: edges
                    .iter()
                    .filter(|((from, to), _)| {
                        !repeats_modules && group.contains(from) && group.contains(to)
                    })
                    .map(|((from, to), names)| edge(tree, *from, *to, names).to_string())
                    .collect(),
                repeats_modules,
            }
        })
        .collect()
}

/// The strongly connected groups of more than one node (Tarjan's algorithm), each sorted.
fn strongly_connected<N: Ord + Copy>(graph: &BTreeMap<N, BTreeSet<N>>) -> Vec<Vec<N>> {
    struct State<N> {
        index: BTreeMap<N, usize>,
        low: BTreeMap<N, usize>,
        stack: Vec<N>,
        on_stack: BTreeSet<N>,
        groups: Vec<Vec<N>>,
    }
    fn visit<N: Ord + Copy>(node: N, graph: &BTreeMap<N, BTreeSet<N>>, s: &mut State<N>) {
        let next = s.index.len();
        s.index.insert(node, next);
        s.low.insert(node, next);
        s.stack.push(node);
        s.on_stack.insert(node);
        for &to in graph.get(&node).into_iter().flatten() {
            if !s.index.contains_key(&to) {
                visit(to, graph, s);
                let low = s.low[&node].min(s.low[&to]);
                s.low.insert(node, low);
            } else if s.on_stack.contains(&to) {
                let low = s.low[&node].min(s.index[&to]);
                s.low.insert(node, low);
            }
        }
        if s.low[&node] == s.index[&node] {
            let mut group = Vec::new();
            while let Some(member) = s.stack.pop() {
                s.on_stack.remove(&member);
                group.push(member);
                if member == node {
                    break;
                }
            }
            if group.len() > 1 {
                group.sort();
                s.groups.push(group);
            }
        }
    }
    let mut state = State {
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        groups: Vec::new(),
    };
    for &node in graph.keys() {
        if !state.index.contains_key(&node) {
            visit(node, graph, &mut state);
        }
    }
    state.groups.sort();
    state.groups
}

impl Report {
    /// What fails the check, one message per finding, each saying what to do.
    pub fn failures(&self) -> Vec<String> {
        let lib = format!("{}/src/lib.rs", self.krate);
        let mut out = Vec::new();
        if let Err(error) = &self.layers {
            out.push(format!("{}: {error}", self.krate));
        }
        for name in &self.missing {
            out.push(format!(
                "{}: top-level module `{name}` is not in the layer order ({}): add it to the line of its layer",
                self.krate, self.origin
            ));
        }
        for name in &self.twice {
            out.push(format!(
                "{}: `{name}` is listed in more than one layer line ({}): keep it on one",
                self.krate, self.origin
            ));
        }
        for name in &self.absent {
            out.push(format!(
                "{}: `{name}` is in the layer order ({}) but the crate declares no such top-level module: \
                 remove it or correct its name",
                self.krate, self.origin
            ));
        }
        for up in &self.upward {
            out.push(format!(
                "{}: upward edge {} (from layer {} `{}` up to layer {} `{}`): move {} below, or move the \
                 importing code up; the layer order is in {lib}",
                self.krate,
                up.edge,
                up.from_layer,
                up.from_module,
                layer_number(up.to_layer),
                up.to_module,
                up.edge.names.join(", "),
            ));
        }
        for circle in &self.module_circles {
            out.push(format!(
                "{}: top-level modules in a circle: {}; break it by moving what the lower one needs \
                 down:\n    {}",
                self.krate,
                circle.members.join(", "),
                circle.edges.join("\n    ")
            ));
        }
        for circle in &self.file_circles {
            if circle.repeats_modules {
                out.push(format!(
                    "{}: files in a circle: {}: the circle of their top-level modules above, one file each",
                    self.krate,
                    circle.members.join(", ")
                ));
                continue;
            }
            out.push(format!(
                "{}: files in a circle: {}; break it by moving what both need into a file of its own \
                 or into the lower one:\n    {}",
                self.krate,
                circle.members.join(", "),
                circle.edges.join("\n    ")
            ));
        }
        out
    }
}

fn layer_number(layer: usize) -> String {
    if layer == usize::MAX { "top".to_owned() } else { layer.to_string() }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let layers = match &self.layers {
            Ok(layers) => format!("{} layers", layers.lines.len()),
            Err(_) => "no layer order".to_owned(),
        };
        writeln!(
            f,
            "{}: {} files, {} edges, {} top-level modules, {layers} (read from {})",
            self.krate,
            self.files,
            self.edges,
            self.top_level.len(),
            self.origin
        )?;
        if let Ok(layers) = &self.layers {
            for (index, line) in layers.lines.iter().enumerate() {
                writeln!(f, "  layer {}: {}", index + 1, line.join(", "))?;
            }
        }
        for (what, names) in [
            ("not in the order", &self.missing),
            ("listed twice", &self.twice),
            ("listed, absent", &self.absent),
        ] {
            if !names.is_empty() {
                writeln!(f, "  {what}: {}", names.join(", "))?;
            }
        }
        writeln!(f, "  upward edges: {}", self.upward.len())?;
        for up in &self.upward {
            writeln!(
                f,
                "    {} (layer {} `{}` -> layer {} `{}`)",
                up.edge,
                up.from_layer,
                up.from_module,
                layer_number(up.to_layer),
                up.to_module
            )?;
        }
        for (what, circles) in
            [("module circles", &self.module_circles), ("file circles", &self.file_circles)]
        {
            writeln!(f, "  {what}: {}", circles.len())?;
            for circle in circles {
                writeln!(f, "    {}", circle.members.join(", "))?;
                if circle.repeats_modules {
                    writeln!(f, "      (the module circle above, one file per module)")?;
                }
                for edge in &circle.edges {
                    writeln!(f, "      {edge}")?;
                }
            }
        }
        Ok(())
    }
}
