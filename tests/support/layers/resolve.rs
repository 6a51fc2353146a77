//! Name resolution over a [`Tree`] and the edges it yields: which file's items each file
//! uses. Paths resolve as the compiler resolves them (from `crate`, `super`, `self` or a name
//! in scope), through `use` re-exports and globs to the file that defines the item.

use std::collections::{BTreeMap, BTreeSet};

use proc_macro2::{Spacing, TokenStream, TokenTree};

use super::tree::{Binding, FileId, ModId, Tree};

/// How deep a chain of re-exports may go before it is taken for a loop.
const MAX_DEPTH: usize = 64;

/// What a path resolves to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A module itself (`crate::store`): an edge only once something inside it is used.
    Module(ModId),
    /// An item, by the file that defines it and its name there.
    Item { file: FileId, name: String },
    /// A module was found but not the name inside it (an item a macro makes, say): the edge
    /// goes to the deepest module file the path names.
    Unresolved { module: ModId, name: String },
    /// Outside the crate (another crate, the prelude, a local variable).
    External,
}

/// Edges from file to file, each with the names it takes.
pub type Edges = BTreeMap<(FileId, FileId), BTreeSet<String>>;

/// Resolves paths in a tree.
pub struct Resolver<'t> {
    tree: &'t Tree,
}

impl<'t> Resolver<'t> {
    pub fn new(tree: &'t Tree) -> Self {
        Self { tree }
    }

    /// Resolves `path` as written in module `from`.
    pub fn resolve(&self, from: ModId, path: &[String]) -> Target {
        self.resolve_in(from, path, &mut Vec::new())
    }

    fn resolve_in(&self, from: ModId, path: &[String], stack: &mut Vec<(ModId, String)>) -> Target {
        let Some((first, rest)) = path.split_first() else {
            return Target::External;
        };
        let mut current = match first.as_str() {
            "crate" => Target::Module(0),
            "self" => Target::Module(from),
            "super" => match self.tree.modules[from].parent {
                Some(parent) => Target::Module(parent),
                None => return Target::External,
            },
            "Self" => return Target::External,
            name => match self.lookup(from, name, !rest.is_empty(), false, stack) {
                Some(target) => target,
                None => return Target::External,
            },
        };
        for segment in rest {
            let Target::Module(module) = current else {
                // An item's associated item or an enum's variant: the item is what is taken.
                break;
            };
            current = match segment.as_str() {
                "self" => Target::Module(module),
                "super" => match self.tree.modules[module].parent {
                    Some(parent) => Target::Module(parent),
                    None => return Target::External,
                },
                name => match self.lookup(module, name, true, false, stack) {
                    Some(target) => target,
                    None => return Target::Unresolved { module, name: name.to_owned() },
                },
            };
        }
        current
    }

    /// Finds `name` in `module`'s namespace: what it defines, then what it imports by name,
    /// then its globs. `want_module` prefers a module where a name is both (more path follows).
    fn lookup(
        &self,
        module: ModId,
        name: &str,
        want_module: bool,
        public_only: bool,
        stack: &mut Vec<(ModId, String)>,
    ) -> Option<Target> {
        let key = (module, name.to_owned());
        if stack.len() >= MAX_DEPTH || stack.contains(&key) {
            return None;
        }
        let entries = self.tree.modules[module].names.get(name);
        let mut found = Vec::new();
        for entry in entries.into_iter().flatten() {
            if public_only && !entry.public {
                continue;
            }
            let target = match &entry.binding {
                Binding::Module(id) => Target::Module(*id),
                Binding::Item(file) => Target::Item { file: *file, name: name.to_owned() },
                Binding::Use(path) => {
                    stack.push(key.clone());
                    let target = self.resolve_in(module, path, stack);
                    stack.pop();
                    target
                }
            };
            found.push(target);
        }
        if let Some(best) = pick(found, want_module) {
            return Some(best);
        }
        let globs = &self.tree.modules[module].globs;
        for (index, (path, public)) in globs.iter().enumerate() {
            if public_only && !public {
                continue;
            }
            let glob_key = (module, format!("*{index}"));
            if stack.contains(&glob_key) {
                continue;
            }
            stack.push(glob_key);
            let source = self.resolve_in(module, path, stack);
            let hit = match source {
                // A glob imports what the importing module may see: everything of an
                // ancestor, only the public names of any other module.
                Target::Module(from) => {
                    let all = self.tree.is_within(module, from);
                    self.lookup(from, name, want_module, !all, stack)
                }
                _ => None,
            };
            stack.pop();
            if hit.is_some() {
                return hit;
            }
        }
        None
    }

    /// All edges of the tree.
    pub fn edges(&self) -> Edges {
        let mut edges = Edges::new();
        let tree = self.tree;
        for (module, m) in tree.modules.iter().enumerate() {
            let from = m.file;
            let mut add = |to: FileId, name: String| {
                if to != from {
                    edges.entry((from, to)).or_default().insert(name);
                }
            };
            for leaf in &m.uses {
                let target = self.resolve(module, &leaf.path);
                let defined_in = match &target {
                    Target::Module(id) | Target::Unresolved { module: id, .. } => Some(*id),
                    Target::Item { file, .. } => Some(tree.files[*file].module),
                    Target::External => None,
                };
                // A module's re-exports of its own descendants are its surface, not an import.
                if leaf.public && defined_in.is_some_and(|id| tree.is_within(id, module)) {
                    continue;
                }
                match target {
                    Target::Item { file, name } => add(file, name),
                    Target::Unresolved { module: id, name } => add(tree.modules[id].file, name),
                    Target::Module(id) if leaf.glob => add(tree.modules[id].file, "*".to_owned()),
                    Target::Module(_) | Target::External => {}
                }
            }
            let mut paths = Vec::new();
            for code in &m.code {
                scan(code.clone(), &mut paths);
            }
            for found in paths {
                match self.resolve(module, &found.segments) {
                    Target::Item { file, name } => add(file, name),
                    Target::Unresolved { module: id, name } => add(tree.modules[id].file, name),
                    Target::External if found.macro_call && found.segments.len() == 1 => {
                        // A `macro_rules!` macro in textual scope: counted when one file defines
                        // it, since which of several a call means depends on declaration order.
                        let name = &found.segments[0];
                        if let Some(files) = tree.macros.get(name)
                            && files.len() == 1
                            && let Some(file) = files.first()
                        {
                            add(*file, name.clone());
                        }
                    }
                    Target::Module(_) | Target::External => {}
                }
            }
        }
        edges
    }
}

/// Of the targets one name has (a type and a function, say), the one a path means.
fn pick(found: Vec<Target>, want_module: bool) -> Option<Target> {
    let rank = |target: &Target| match target {
        Target::Module(_) if want_module => 0,
        Target::Item { .. } if !want_module => 0,
        Target::Module(_) | Target::Item { .. } => 1,
        Target::Unresolved { .. } => 2,
        Target::External => 3,
    };
    found.into_iter().min_by_key(rank)
}

/// A path found in code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundPath {
    /// Its segments as written (`["crate", "store", "Cache"]`).
    pub segments: Vec<String>,
    /// Followed by `!`: a macro invocation.
    pub macro_call: bool,
}

/// Finds the paths in code, token by token, so that paths inside macro invocations count as
/// well as those in expressions, types, patterns and bounds. Field and method names (after a
/// `.`), lifetimes and paths from the extern prelude (`::std::..`) are not paths of the crate.
/// Serde's `with = "path"` attributes name functions too, and are read as paths.
pub fn scan(code: TokenStream, out: &mut Vec<FoundPath>) {
    let tokens: Vec<TokenTree> = code.into_iter().collect();
    let mut index = 0;
    while index < tokens.len() {
        match &tokens[index] {
            TokenTree::Group(group) => {
                scan(group.stream(), out);
                index += 1;
            }
            TokenTree::Ident(first) => {
                let after_dot_or_quote = index > 0
                    && matches!(&tokens[index - 1], TokenTree::Punct(p) if p.as_char() == '.' || p.as_char() == '\'');
                let after_colons = index > 1 && is_colons(&tokens, index - 2);
                let mut segments = vec![super::tree::ident(first)];
                let mut next = index + 1;
                while is_colons(&tokens, next) {
                    let Some(TokenTree::Ident(segment)) = tokens.get(next + 2) else { break };
                    segments.push(super::tree::ident(segment));
                    next += 3;
                }
                let macro_call = matches!(tokens.get(next), Some(TokenTree::Punct(p))
                    if p.as_char() == '!' && !matches!(tokens.get(next + 1), Some(TokenTree::Punct(q)) if q.as_char() == '='));
                if !after_dot_or_quote && !after_colons {
                    serde_path(&tokens, index, out);
                    out.push(FoundPath { segments, macro_call });
                }
                index = next.max(index + 1);
            }
            _ => index += 1,
        }
    }
}

/// Whether `tokens[at..]` starts with `::`.
fn is_colons(tokens: &[TokenTree], at: usize) -> bool {
    matches!(
        (tokens.get(at), tokens.get(at + 1)),
        (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)))
            if a.as_char() == ':' && a.spacing() == Spacing::Joint && b.as_char() == ':'
    )
}

/// `with = "path"`, `deserialize_with = "path"` and the like, starting at `tokens[at]`.
fn serde_path(tokens: &[TokenTree], at: usize, out: &mut Vec<FoundPath>) {
    const KEYS: [&str; 4] = ["with", "serialize_with", "deserialize_with", "default"];
    let (Some(TokenTree::Ident(key)), Some(TokenTree::Punct(eq)), Some(TokenTree::Literal(lit))) =
        (tokens.get(at), tokens.get(at + 1), tokens.get(at + 2))
    else {
        return;
    };
    if !KEYS.contains(&key.to_string().as_str()) || eq.as_char() != '=' {
        return;
    }
    let Ok(syn::Lit::Str(text)) = syn::parse_str::<syn::Lit>(&lit.to_string()) else { return };
    if let Ok(path) = syn::parse_str::<syn::Path>(&text.value())
        && path.leading_colon.is_none()
    {
        let segments = path.segments.iter().map(|s| super::tree::ident(&s.ident)).collect();
        out.push(FoundPath { segments, macro_call: false });
    }
}
