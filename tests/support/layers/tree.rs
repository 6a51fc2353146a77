//! A crate's module tree as the compiler walks it from `src/lib.rs`: each module's file, the
//! names it defines and imports, and the code whose paths make the edges. Test-only code
//! (`#[cfg(test)]`, `mod tests`) is left out, since it is not part of what the layers order.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::punctuated::Punctuated;
use syn::{Attribute, ImplItem, Item, Meta, TraitItem, UseTree, Visibility};

use super::{LoadError, Sources};

/// Index of a module in [`Tree::modules`]; the crate root is 0.
pub type ModId = usize;
/// Index of a file in [`Tree::files`]; `src/lib.rs` is 0.
pub type FileId = usize;

/// How many module files one crate may have: a bound against a `#[path]` loop.
const MAX_FILES: usize = 5_000;

/// What a name in a module's namespace stands for.
#[derive(Debug, Clone)]
pub enum Binding {
    /// A module (declared with `mod`, from a file or inline).
    Module(ModId),
    /// An item defined in this file (a type, function, constant, trait or macro).
    Item(FileId),
    /// A `use` import: its path, read from the importing module.
    Use(Vec<String>),
}

/// One binding of a name, with whether it is visible outside its module (`pub` in any form).
#[derive(Debug, Clone)]
pub struct Entry {
    /// What the name stands for.
    pub binding: Binding,
    /// Visible outside the module: a glob from another module imports only these.
    pub public: bool,
}

/// One leaf of a `use` tree: `use a::b::{C, D as E, f::*}` has three.
#[derive(Debug, Clone)]
pub struct UseLeaf {
    /// The path, as written (`["a", "b", "C"]`; for a glob, the module's path).
    pub path: Vec<String>,
    /// Whether this is a glob (`*`).
    pub glob: bool,
    /// `pub`, `pub(crate)`, `pub(super)`...: a re-export rather than a private import.
    pub public: bool,
}

/// One module: a file or an inline `mod x { }` inside one.
#[derive(Debug, Default)]
pub struct Module {
    /// Its name (`crate` for the root).
    pub name: String,
    /// The module that declares it; `None` for the root.
    pub parent: Option<ModId>,
    /// The file it is written in (an inline module's is its parent's).
    pub file: FileId,
    /// Everything the module defines or imports by name.
    pub names: BTreeMap<String, Vec<Entry>>,
    /// Glob imports: the module path and whether the glob is a re-export.
    pub globs: Vec<(Vec<String>, bool)>,
    /// Every leaf of its `use` items, each an edge unless it re-exports a descendant.
    pub uses: Vec<UseLeaf>,
    /// The module's code outside `use` and `mod` items, as tokens to scan for paths.
    pub code: Vec<TokenStream>,
}

/// One source file of the crate.
#[derive(Debug)]
pub struct FileInfo {
    /// Relative to the crate's folder (`src/store/mod.rs`).
    pub path: PathBuf,
    /// The module whose file this is.
    pub module: ModId,
}

/// The whole tree.
#[derive(Debug, Default)]
pub struct Tree {
    /// Every module file, `src/lib.rs` first.
    pub files: Vec<FileInfo>,
    /// Every module, the root first.
    pub modules: Vec<Module>,
    /// Top-level modules declared only under `#[cfg(test)]`: neither checked nor required.
    pub test_only_top: BTreeSet<String>,
    /// `macro_rules!` macros by name: where each is defined, for invocations by textual scope.
    pub macros: BTreeMap<String, BTreeSet<FileId>>,
}

impl Tree {
    /// Reads the crate from `src/lib.rs` down.
    pub fn load(sources: &dyn Sources) -> Result<Self, LoadError> {
        let mut tree = Self::default();
        tree.load_file(sources, Path::new("src/lib.rs"), None, "crate", true)?;
        Ok(tree)
    }

    /// Whether `module` is `ancestor` or inside it.
    pub fn is_within(&self, mut module: ModId, ancestor: ModId) -> bool {
        loop {
            if module == ancestor {
                return true;
            }
            match self.modules[module].parent {
                Some(parent) => module = parent,
                None => return false,
            }
        }
    }

    /// The top-level module a file belongs to (`store` for `src/store/table.rs`); `None` for
    /// the crate root.
    pub fn top_level(&self, file: FileId) -> Option<&str> {
        let mut module = self.files[file].module;
        while let Some(parent) = self.modules[module].parent {
            if parent == 0 {
                // An inline module of lib.rs (`__private`) is part of the root's file.
                return (self.modules[module].file != 0)
                    .then_some(self.modules[module].name.as_str());
            }
            module = parent;
        }
        None
    }

    /// The top-level modules the crate declares: the children of lib.rs with files of their
    /// own (test-only ones left out).
    pub fn top_level_modules(&self) -> Vec<&str> {
        self.modules
            .iter()
            .filter(|m| m.parent == Some(0) && m.file != 0)
            .map(|m| m.name.as_str())
            .collect()
    }

    fn new_module(&mut self, name: &str, parent: Option<ModId>, file: FileId) -> ModId {
        self.modules.push(Module { name: name.to_owned(), parent, file, ..Module::default() });
        self.modules.len() - 1
    }

    fn bind(&mut self, module: ModId, name: String, binding: Binding, public: bool) {
        self.modules[module].names.entry(name).or_default().push(Entry { binding, public });
    }

    /// Loads one module file; `mod_rs` says whether its children live beside it (`lib.rs`,
    /// `mod.rs`, a `#[path]` file) rather than in a folder named after it.
    fn load_file(
        &mut self,
        sources: &dyn Sources,
        path: &Path,
        parent: Option<ModId>,
        name: &str,
        mod_rs: bool,
    ) -> Result<ModId, LoadError> {
        if self.files.len() >= MAX_FILES {
            return Err(LoadError::TooManyFiles { limit: MAX_FILES });
        }
        let text =
            sources.read(path)?.ok_or_else(|| LoadError::Missing { path: path.to_path_buf() })?;
        let syntax = syn::parse_file(&text).map_err(|source| LoadError::Parse {
            path: path.to_path_buf(),
            message: source.to_string(),
        })?;
        let file = self.files.len();
        let module = self.new_module(name, parent, file);
        self.files.push(FileInfo { path: path.to_path_buf(), module });
        let folder = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let children = if mod_rs {
            folder.clone()
        } else {
            let stem =
                path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
            folder.join(stem)
        };
        let at = Place { file, path, folder: &folder, children, inline: false };
        self.items(sources, &syntax.items, module, &at).map(|()| module)
    }

    fn items(
        &mut self,
        sources: &dyn Sources,
        items: &[Item],
        module: ModId,
        at: &Place<'_>,
    ) -> Result<(), LoadError> {
        for item in items {
            let attrs = item_attrs(item);
            if is_test_only(attrs) {
                if let (Item::Mod(m), 0) = (item, module) {
                    self.test_only_top.insert(m.ident.to_string());
                }
                continue;
            }
            match item {
                Item::Mod(m) => self.module_item(sources, m, module, at)?,
                Item::Use(u) => {
                    if u.leading_colon.is_none() {
                        let public = !matches!(u.vis, Visibility::Inherited);
                        let mut leaves = Vec::new();
                        flatten_use(&u.tree, &mut Vec::new(), &mut leaves);
                        for (leaf, bound_as) in leaves {
                            let leaf = UseLeaf { public, ..leaf };
                            match bound_as {
                                Some(name) => {
                                    self.bind(
                                        module,
                                        name,
                                        Binding::Use(leaf.path.clone()),
                                        public,
                                    );
                                }
                                // `use x as _` binds no name: only a `*` imports a module's.
                                None if leaf.glob => {
                                    self.modules[module].globs.push((leaf.path.clone(), public));
                                }
                                None => {}
                            }
                            self.modules[module].uses.push(leaf);
                        }
                    }
                }
                Item::Macro(m) if m.mac.path.is_ident("macro_rules") => {
                    // A macro's body expands where it is invoked: its paths are the caller's.
                    if let Some(ident) = &m.ident {
                        let name = ident.to_string();
                        self.macros.entry(name.clone()).or_default().insert(at.file);
                        let exported = m.attrs.iter().any(|a| a.path().is_ident("macro_export"));
                        if exported {
                            self.bind(0, name.clone(), Binding::Item(at.file), true);
                        }
                        self.bind(module, name, Binding::Item(at.file), exported);
                    }
                }
                Item::Impl(i) => {
                    let mut head = TokenStream::new();
                    i.generics.to_tokens(&mut head);
                    if let Some((_, path, _)) = &i.trait_ {
                        path.to_tokens(&mut head);
                    }
                    i.self_ty.to_tokens(&mut head);
                    let code = &mut self.modules[module].code;
                    code.push(head);
                    for member in &i.items {
                        if !is_test_only(impl_item_attrs(member)) {
                            code.push(without_test_statements(member));
                        }
                    }
                }
                Item::Trait(t) => {
                    let public = !matches!(t.vis, Visibility::Inherited);
                    self.bind(module, t.ident.to_string(), Binding::Item(at.file), public);
                    let mut head = TokenStream::new();
                    t.generics.to_tokens(&mut head);
                    t.supertraits.to_tokens(&mut head);
                    let code = &mut self.modules[module].code;
                    code.push(head);
                    for member in &t.items {
                        if !is_test_only(trait_item_attrs(member)) {
                            code.push(without_test_statements(member));
                        }
                    }
                }
                other => {
                    if let Some((name, vis)) = item_name(other) {
                        let public = !matches!(vis, Visibility::Inherited);
                        self.bind(module, name, Binding::Item(at.file), public);
                    }
                    self.modules[module].code.push(without_test_statements(other));
                }
            }
        }
        Ok(())
    }

    fn module_item(
        &mut self,
        sources: &dyn Sources,
        m: &syn::ItemMod,
        module: ModId,
        at: &Place<'_>,
    ) -> Result<(), LoadError> {
        let name = m.ident.to_string();
        if name == "tests" {
            return Ok(());
        }
        let public = !matches!(m.vis, Visibility::Inherited);
        let child = if let Some((_, content)) = &m.content {
            let child = self.new_module(&name, Some(module), at.file);
            let inner = Place { children: at.children.join(&name), inline: true, ..*at };
            self.items(sources, content, child, &inner)?;
            child
        } else if let Some(relative) = path_attr(&m.attrs) {
            // `#[path]` is relative to the declaring file's folder, or, inside an inline
            // module, to that module's folder.
            let base = if at.inline { &at.children } else { at.folder };
            self.load_file(sources, &normalize(&base.join(relative)), Some(module), &name, true)?
        } else {
            let flat = normalize(&at.children.join(format!("{name}.rs")));
            let nested = normalize(&at.children.join(&name).join("mod.rs"));
            if sources.read(&flat)?.is_some() {
                self.load_file(sources, &flat, Some(module), &name, false)?
            } else if sources.read(&nested)?.is_some() {
                self.load_file(sources, &nested, Some(module), &name, true)?
            } else {
                return Err(LoadError::ModuleFileMissing {
                    declared_in: at.path.to_path_buf(),
                    name,
                    tried: vec![flat, nested],
                });
            }
        };
        self.bind(module, name, Binding::Module(child), public);
        Ok(())
    }
}

/// Where items being read sit: their file, its folder, and the folder of child modules.
#[derive(Clone)]
struct Place<'a> {
    file: FileId,
    path: &'a Path,
    folder: &'a Path,
    children: PathBuf,
    inline: bool,
}

/// Flattens a `use` tree into its leaves, each with the name it binds (`None` for a glob).
fn flatten_use(tree: &UseTree, prefix: &mut Vec<String>, out: &mut Vec<(UseLeaf, Option<String>)>) {
    let leaf = |path: Vec<String>, glob| UseLeaf { path, glob, public: false };
    match tree {
        UseTree::Path(p) => {
            prefix.push(ident(&p.ident));
            flatten_use(&p.tree, prefix, out);
            prefix.pop();
        }
        UseTree::Name(n) => {
            let name = ident(&n.ident);
            if name == "self" {
                // `use a::b::{self}` binds `b`.
                if let Some(last) = prefix.last().cloned() {
                    out.push((leaf(prefix.clone(), false), Some(last)));
                }
            } else {
                let mut path = prefix.clone();
                path.push(name.clone());
                out.push((leaf(path, false), Some(name)));
            }
        }
        UseTree::Rename(r) => {
            let mut path = prefix.clone();
            let name = ident(&r.ident);
            if name != "self" {
                path.push(name);
            }
            let bound = ident(&r.rename);
            // `use x as _` imports a trait's methods only; the import is still an edge.
            out.push((leaf(path, false), (bound != "_").then_some(bound)));
        }
        UseTree::Glob(_) => out.push((leaf(prefix.clone(), true), None)),
        UseTree::Group(g) => {
            for tree in &g.items {
                flatten_use(tree, prefix, out);
            }
        }
    }
}

/// An identifier as a name, without the `r#` of a raw identifier.
pub fn ident(id: &proc_macro2::Ident) -> String {
    let text = id.to_string();
    text.strip_prefix("r#").map_or(text.clone(), str::to_owned)
}

/// An item's tokens without the `#[cfg(test)]` statements of its function bodies (blocks
/// within them are scanned as written: test-only code that deep is a smell of its own).
fn without_test_statements<T: Clone + ToTokens + FnBody>(item: &T) -> TokenStream {
    let mut item = item.clone();
    if let Some(block) = item.body() {
        block.stmts.retain(|stmt| !is_test_only(statement_attrs(stmt)));
    }
    item.to_token_stream()
}

/// The body of an item that is a function.
trait FnBody {
    fn body(&mut self) -> Option<&mut syn::Block>;
}

impl FnBody for Item {
    fn body(&mut self) -> Option<&mut syn::Block> {
        match self {
            Item::Fn(f) => Some(&mut f.block),
            _ => None,
        }
    }
}

impl FnBody for ImplItem {
    fn body(&mut self) -> Option<&mut syn::Block> {
        match self {
            ImplItem::Fn(f) => Some(&mut f.block),
            _ => None,
        }
    }
}

impl FnBody for TraitItem {
    fn body(&mut self) -> Option<&mut syn::Block> {
        match self {
            TraitItem::Fn(f) => f.default.as_mut(),
            _ => None,
        }
    }
}

fn statement_attrs(stmt: &syn::Stmt) -> &[Attribute] {
    match stmt {
        syn::Stmt::Local(local) => &local.attrs,
        syn::Stmt::Item(item) => item_attrs(item),
        syn::Stmt::Macro(mac) => &mac.attrs,
        syn::Stmt::Expr(expr, _) => expr_attrs(expr),
    }
}

/// The outer attributes of the expressions a statement can start with.
fn expr_attrs(expr: &syn::Expr) -> &[Attribute] {
    use syn::Expr;
    match expr {
        Expr::Block(e) => &e.attrs,
        Expr::Call(e) => &e.attrs,
        Expr::MethodCall(e) => &e.attrs,
        Expr::Macro(e) => &e.attrs,
        Expr::Path(e) => &e.attrs,
        Expr::Assign(e) => &e.attrs,
        Expr::If(e) => &e.attrs,
        Expr::Match(e) => &e.attrs,
        Expr::ForLoop(e) => &e.attrs,
        Expr::While(e) => &e.attrs,
        Expr::Loop(e) => &e.attrs,
        Expr::Unsafe(e) => &e.attrs,
        Expr::Await(e) => &e.attrs,
        Expr::Try(e) => &e.attrs,
        Expr::Return(e) => &e.attrs,
        _ => &[],
    }
}

/// Whether an item's attributes keep it out of every non-test build.
fn is_test_only(attrs: &[Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("cfg")
            && attr.parse_args::<Meta>().is_ok_and(|meta| requires_test(&meta))
    })
}

/// Whether a `cfg` predicate holds only under `test`.
fn requires_test(meta: &Meta) -> bool {
    match meta {
        Meta::Path(path) => path.is_ident("test"),
        Meta::List(list) => {
            let Ok(nested) =
                list.parse_args_with(Punctuated::<Meta, syn::Token![,]>::parse_terminated)
            else {
                return false;
            };
            if list.path.is_ident("all") {
                nested.iter().any(requires_test)
            } else if list.path.is_ident("any") {
                !nested.is_empty() && nested.iter().all(requires_test)
            } else {
                false
            }
        }
        Meta::NameValue(_) => false,
    }
}

fn path_attr(attrs: &[Attribute]) -> Option<String> {
    attrs.iter().find_map(|attr| match &attr.meta {
        Meta::NameValue(nv) if nv.path.is_ident("path") => match &nv.value {
            syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) => Some(s.value()),
            _ => None,
        },
        _ => None,
    })
}

/// Resolves `.` and `..` without touching the disk, so in-memory and on-disk crates agree.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

fn item_name(item: &Item) -> Option<(String, &Visibility)> {
    let (id, vis) = match item {
        Item::Struct(i) => (&i.ident, &i.vis),
        Item::Enum(i) => (&i.ident, &i.vis),
        Item::Union(i) => (&i.ident, &i.vis),
        Item::Type(i) => (&i.ident, &i.vis),
        Item::Fn(i) => (&i.sig.ident, &i.vis),
        Item::Const(i) => (&i.ident, &i.vis),
        Item::Static(i) => (&i.ident, &i.vis),
        Item::TraitAlias(i) => (&i.ident, &i.vis),
        _ => return None,
    };
    Some((ident(id), vis))
}

fn item_attrs(item: &Item) -> &[Attribute] {
    match item {
        Item::Const(i) => &i.attrs,
        Item::Enum(i) => &i.attrs,
        Item::ExternCrate(i) => &i.attrs,
        Item::Fn(i) => &i.attrs,
        Item::ForeignMod(i) => &i.attrs,
        Item::Impl(i) => &i.attrs,
        Item::Macro(i) => &i.attrs,
        Item::Mod(i) => &i.attrs,
        Item::Static(i) => &i.attrs,
        Item::Struct(i) => &i.attrs,
        Item::Trait(i) => &i.attrs,
        Item::TraitAlias(i) => &i.attrs,
        Item::Type(i) => &i.attrs,
        Item::Union(i) => &i.attrs,
        Item::Use(i) => &i.attrs,
        _ => &[],
    }
}

fn impl_item_attrs(item: &ImplItem) -> &[Attribute] {
    match item {
        ImplItem::Const(i) => &i.attrs,
        ImplItem::Fn(i) => &i.attrs,
        ImplItem::Type(i) => &i.attrs,
        ImplItem::Macro(i) => &i.attrs,
        _ => &[],
    }
}

fn trait_item_attrs(item: &TraitItem) -> &[Attribute] {
    match item {
        TraitItem::Const(i) => &i.attrs,
        TraitItem::Fn(i) => &i.attrs,
        TraitItem::Type(i) => &i.attrs,
        TraitItem::Macro(i) => &i.attrs,
        _ => &[],
    }
}
