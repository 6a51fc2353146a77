//! Field ownership: `metadata.managedFields` and server-side apply, as kube-apiserver's field
//! manager (`apiserver/pkg/endpoints/handlers/fieldmanager`) and structured-merge-diff do it.
//!
//! A field set is a set of paths in the `FieldsV1` vocabulary: `f:<name>` for a field of an
//! object, `k:{...}` for an element of an associative list by its keys, `v:<json>` for an
//! element of a set list. What a type's lists are comes from [`ListKind::of`]: built-in types
//! merge lists of named objects by `name` (the strategic-merge metadata this server knows),
//! `metadata.finalizers` is a set, everything else (and every list of a custom resource) is
//! atomic.
//!
//! An Update (create, update, any non-apply patch) gives its manager the fields it added or
//! changed and takes them from every other manager; an Apply owns exactly the fields of its
//! configuration, conflicts with other owners of fields whose value it changes (unless forced),
//! and removes the fields it applied before and no longer applies when nobody else owns them.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use serde_json::{Map, Value, json};

use crate::status::{ApiError, Cause};
use crate::util::now_rfc3339;

/// One step of a path: an element in its `FieldsV1` spelling (`f:name`, `k:{"name":"c"}`,
/// `v:"x"`, `i:0`).
type Element = String;
/// A path from the root of an object.
pub(crate) type Path = Vec<Element>;
/// A set of paths.
pub(crate) type FieldSet = BTreeSet<Path>;

/// Built-in list fields keyed by `name`: what an empty one of them is.
const NAMED_LISTS: [&str; 8] = [
    "f:containers",
    "f:initContainers",
    "f:ephemeralContainers",
    "f:volumes",
    "f:env",
    "f:volumeMounts",
    "f:volumeDevices",
    "f:resourceClaims",
];

/// How a list's elements are told apart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ListKind {
    /// One value: the list as a whole.
    Atomic,
    /// Elements by the values of these key fields.
    Map(Vec<String>),
    /// Scalar elements by value.
    Set,
}

impl ListKind {
    /// The kind of the list at `path` with these items: see the module docs.
    pub(crate) fn of(path: &[Element], items: &[Value], builtin: bool) -> Self {
        if !builtin {
            return Self::Atomic;
        }
        if path == ["f:metadata", "f:finalizers"] {
            return Self::Set;
        }
        let named = if items.is_empty() {
            // Nothing to tell by: the well-known lists keyed by name.
            path.last().is_some_and(|field| NAMED_LISTS.contains(&field.as_str()))
        } else {
            items.iter().all(|i| i.get("name").is_some_and(Value::is_string))
        };
        if named { Self::Map(vec!["name".to_owned()]) } else { Self::Atomic }
    }
}

/// Whether the object at `path` is atomic: a built-in type's `selector` (`LabelSelector` and a
/// Service's selector are both `atomic` in their `OpenAPI` schema).
fn atomic_object(path: &[Element], builtin: bool) -> bool {
    builtin && path.last().is_some_and(|e| e == "f:selector")
}

/// The element naming `item` of a list of `kind`.
fn item_element(kind: &ListKind, index: usize, item: &Value) -> Element {
    match kind {
        ListKind::Map(keys) => {
            let mut key = Map::new();
            for k in keys {
                key.insert(k.clone(), item.get(k).cloned().unwrap_or(Value::Null));
            }
            format!("k:{}", Value::Object(key))
        }
        ListKind::Set => format!("v:{item}"),
        ListKind::Atomic => format!("i:{index}"),
    }
}

fn child(path: &[Element], element: Element) -> Path {
    let mut path = path.to_vec();
    path.push(element);
    path
}

/// The fields a configuration sets (structured-merge-diff's `ToFieldSet`): every leaf, every
/// element of a non-atomic list, never an object itself.
pub(crate) fn field_set(value: &Value, builtin: bool) -> FieldSet {
    let mut out = FieldSet::new();
    walk(value, &[], builtin, false, &mut out);
    out
}

/// Adds the paths of `value` at `path`: with `containers`, objects and lists too (what
/// `Compare` reports for a value that appears or disappears as a whole).
fn walk(value: &Value, path: &[Element], builtin: bool, containers: bool, out: &mut FieldSet) {
    match value {
        Value::Object(_) if atomic_object(path, builtin) => {
            out.insert(path.to_vec());
        }
        Value::Object(map) => {
            if containers && !path.is_empty() {
                out.insert(path.to_vec());
            }
            for (k, v) in map {
                walk(v, &child(path, format!("f:{k}")), builtin, containers, out);
            }
        }
        Value::Array(items) => match ListKind::of(path, items, builtin) {
            ListKind::Atomic => {
                out.insert(path.to_vec());
            }
            kind => {
                if containers {
                    out.insert(path.to_vec());
                }
                for (i, item) in items.iter().enumerate() {
                    let item_path = child(path, item_element(&kind, i, item));
                    walk(item, &item_path, builtin, containers, out);
                    out.insert(item_path);
                }
            }
        },
        _ => {
            out.insert(path.to_vec());
        }
    }
}

/// What changed between two versions of an object (structured-merge-diff's `Compare`).
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Comparison {
    pub(crate) added: FieldSet,
    pub(crate) modified: FieldSet,
    pub(crate) removed: FieldSet,
}

impl Comparison {
    fn is_same(&self) -> bool {
        self.added.is_empty() && self.modified.is_empty() && self.removed.is_empty()
    }
}

/// Compares `old` with `new`.
pub(crate) fn compare(old: &Value, new: &Value, builtin: bool) -> Comparison {
    let mut out = Comparison::default();
    compare_at(&[], Some(old), Some(new), builtin, &mut out);
    out
}

fn compare_at(
    path: &[Element],
    old: Option<&Value>,
    new: Option<&Value>,
    builtin: bool,
    out: &mut Comparison,
) {
    match (old, new) {
        (None, None) => {}
        (None, Some(new)) => walk(new, path, builtin, true, &mut out.added),
        (Some(old), None) => walk(old, path, builtin, true, &mut out.removed),
        (Some(a @ Value::Object(_)), Some(b @ Value::Object(_)))
            if atomic_object(path, builtin) =>
        {
            if a != b {
                out.modified.insert(path.to_vec());
            }
        }
        (Some(Value::Object(a)), Some(Value::Object(b))) => {
            let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for k in keys {
                compare_at(&child(path, format!("f:{k}")), a.get(k), b.get(k), builtin, out);
            }
        }
        (Some(Value::Array(a)), Some(Value::Array(b))) => {
            let (kind_a, kind_b) = (ListKind::of(path, a, builtin), ListKind::of(path, b, builtin));
            if a.is_empty() && b.is_empty() {
                return;
            }
            let kind = if a.is_empty() { kind_b } else { kind_a };
            if kind == ListKind::Atomic
                || (!a.is_empty() && !b.is_empty() && { ListKind::of(path, b, builtin) != kind })
            {
                if a != b {
                    out.modified.insert(path.to_vec());
                }
                return;
            }
            let keyed = |items: &[Value]| -> Vec<(Element, Value)> {
                let kind = &kind;
                items
                    .iter()
                    .enumerate()
                    .map(|(i, v)| (item_element(kind, i, v), v.clone()))
                    .collect()
            };
            let (a, b) = (keyed(a), keyed(b));
            let find = |list: &[(Element, Value)], e: &Element| {
                list.iter().find(|(k, _)| k == e).map(|(_, v)| v.clone())
            };
            let elements: BTreeSet<&Element> = a.iter().chain(b.iter()).map(|(e, _)| e).collect();
            for e in elements {
                let (old, new) = (find(&a, e), find(&b, e));
                let item = child(path, e.clone());
                compare_at(&item, old.as_ref(), new.as_ref(), builtin, out);
            }
        }
        (Some(a), Some(b)) => {
            if a != b {
                if a.is_object() || b.is_object() || a.is_array() || b.is_array() {
                    walk(a, path, builtin, true, &mut out.removed);
                    walk(b, path, builtin, true, &mut out.added);
                    out.removed.remove(path);
                    out.added.remove(path);
                }
                out.modified.insert(path.to_vec());
            }
        }
    }
}

/// Whether `prefix` is `path` or an ancestor of it.
fn is_prefix(prefix: &[Element], path: &[Element]) -> bool {
    path.len() >= prefix.len() && path[..prefix.len()] == *prefix
}

/// `set` without `remove` and everything under it (structured-merge-diff's
/// `RecursiveDifference`).
pub(crate) fn recursive_difference(set: &FieldSet, remove: &[Path]) -> FieldSet {
    set.iter().filter(|p| !remove.iter().any(|r| is_prefix(r, p))).cloned().collect()
}

/// The `FieldsV1` JSON of a set.
pub(crate) fn to_fields_v1(set: &FieldSet) -> Value {
    let mut root = Map::new();
    for path in set {
        let mut node = &mut root;
        for element in path {
            let next = node.entry(element.clone()).or_insert_with(|| json!({}));
            let Value::Object(next) = next else { break };
            node = next;
        }
    }
    mark(&mut root, set, &mut Vec::new());
    Value::Object(root)
}

/// Marks the members that have children with `.`; a member without children is an empty
/// object, which is read back as a member too.
fn mark(node: &mut Map<String, Value>, set: &FieldSet, path: &mut Path) {
    let keys: Vec<String> = node.keys().filter(|k| *k != ".").cloned().collect();
    for k in keys {
        path.push(k.clone());
        if let Some(Value::Object(child)) = node.get_mut(&k) {
            mark(child, set, path);
            let has_children = child.keys().any(|c| c != ".");
            if has_children && set.contains(path.as_slice()) {
                child.insert(".".into(), json!({}));
            } else if has_children {
                child.remove(".");
            }
        }
        path.pop();
    }
}

/// The set a `FieldsV1` JSON describes; `None` when it is not one.
pub(crate) fn from_fields_v1(value: &Value) -> Option<FieldSet> {
    fn read(node: &Map<String, Value>, path: &mut Path, out: &mut FieldSet) -> Option<()> {
        for (k, v) in node {
            if k == "." {
                if !path.is_empty() {
                    out.insert(path.clone());
                }
                continue;
            }
            if !(k.starts_with("f:")
                || k.starts_with("k:")
                || k.starts_with("v:")
                || k.starts_with("i:"))
            {
                return None;
            }
            let child = v.as_object()?;
            path.push(k.clone());
            if child.is_empty() {
                out.insert(path.clone());
            } else {
                read(child, path, out)?;
            }
            path.pop();
        }
        Some(())
    }
    let mut out = FieldSet::new();
    read(value.as_object()?, &mut Vec::new(), &mut out)?;
    Some(out)
}

/// A path as structured-merge-diff prints it: `.spec.containers[name="c"].image`.
pub(crate) fn path_string(path: &[Element]) -> String {
    let mut out = String::new();
    for element in path {
        let (tag, rest) = element.split_at(2.min(element.len()));
        match tag {
            "f:" => {
                out.push('.');
                out.push_str(rest);
            }
            "k:" => {
                let fields = serde_json::from_str::<Map<String, Value>>(rest).unwrap_or_default();
                let parts: Vec<String> = fields.iter().map(|(k, v)| format!("{k}={v}")).collect();
                let _ = write!(out, "[{}]", parts.join(","));
            }
            "v:" => {
                let _ = write!(out, "[={rest}]");
            }
            _ => {
                let _ = write!(out, "[{rest}]");
            }
        }
    }
    out
}

/// One `managedFields` entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) manager: String,
    /// `Apply` or `Update`.
    pub(crate) operation: String,
    pub(crate) api_version: String,
    pub(crate) subresource: String,
    pub(crate) time: String,
    pub(crate) fields: FieldSet,
}

impl Entry {
    /// Whether `other` is the same manager (kube-apiserver's manager identifier: appliers
    /// are one manager whatever their API version).
    fn same_manager(&self, manager: &str, operation: &str, api_version: &str, sub: &str) -> bool {
        self.manager == manager
            && self.operation == operation
            && self.subresource == sub
            && (operation == "Apply" || self.api_version == api_version)
    }

    /// How conflict messages name this manager (`printManager`).
    fn printed(&self) -> String {
        let mut out = format!("{:?}", self.manager);
        if !self.subresource.is_empty() {
            let _ = write!(out, " with subresource {:?}", self.subresource);
        }
        if self.operation == "Update" {
            let _ = write!(out, " using {}", self.api_version);
        }
        out
    }

    fn to_json(&self) -> Value {
        let mut entry = Map::new();
        entry.insert("manager".into(), json!(self.manager));
        entry.insert("operation".into(), json!(self.operation));
        entry.insert("apiVersion".into(), json!(self.api_version));
        // Go's `omitempty` on a nil `*metav1.Time`: an entry a client wrote without one.
        if !self.time.is_empty() {
            entry.insert("time".into(), json!(self.time));
        }
        entry.insert("fieldsType".into(), json!("FieldsV1"));
        entry.insert("fieldsV1".into(), to_fields_v1(&self.fields));
        if !self.subresource.is_empty() {
            entry.insert("subresource".into(), json!(self.subresource));
        }
        Value::Object(entry)
    }

    fn from_json(value: &Value) -> Option<Self> {
        let text = |k: &str| value.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
        let fields = match value.get("fieldsV1") {
            Some(v) => from_fields_v1(v)?,
            None => FieldSet::new(),
        };
        Some(Self {
            manager: text("manager"),
            operation: text("operation"),
            api_version: text("apiVersion"),
            subresource: text("subresource"),
            time: text("time"),
            fields,
        })
    }
}

/// The managedFields of an object; `None` when they do not decode.
pub(crate) fn decode(obj: &Value) -> Option<Vec<Entry>> {
    match obj.pointer("/metadata/managedFields") {
        None | Some(Value::Null) => Some(Vec::new()),
        Some(Value::Array(entries)) => entries.iter().map(Entry::from_json).collect(),
        Some(_) => None,
    }
}

/// Stores `entries` in `obj`, sorted as kube-apiserver sorts them; none removes the field.
pub(crate) fn encode(obj: &mut Value, mut entries: Vec<Entry>) {
    entries.retain(|e| !e.fields.is_empty());
    entries.sort_by(|p, q| {
        (&p.operation, &p.time, &p.manager, &p.api_version, &p.subresource).cmp(&(
            &q.operation,
            &q.time,
            &q.manager,
            &q.api_version,
            &q.subresource,
        ))
    });
    let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) else { return };
    if entries.is_empty() {
        meta.remove("managedFields");
    } else {
        meta.insert("managedFields".into(), entries.iter().map(Entry::to_json).collect());
    }
}

/// The metadata fields nobody owns (the field manager's `stripMeta`).
const STRIPPED: [&str; 9] = [
    "name",
    "namespace",
    "creationTimestamp",
    "selfLink",
    "uid",
    "clusterName",
    "generation",
    "managedFields",
    "resourceVersion",
];

/// `obj` as ownership sees it: without managedFields (an object's ownership is not a field
/// of it).
fn for_ownership(obj: &Value) -> Value {
    let mut obj = obj.clone();
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
    obj
}

/// Drops what nobody owns: `apiVersion`, `kind`, `metadata` itself and the server's metadata,
/// and the fields the endpoint resets (`ignored`, recursively).
fn strip(set: &FieldSet, ignored: &[Path]) -> FieldSet {
    let set = recursive_difference(set, ignored);
    set.into_iter()
        .filter(|p| {
            let s: Vec<&str> = p.iter().map(String::as_str).collect();
            let server_metadata = s.len() == 2
                && s[0] == "f:metadata"
                && STRIPPED.iter().any(|f| s[1] == format!("f:{f}"));
            !matches!(s.as_slice(), ["f:apiVersion" | "f:kind" | "f:metadata"]) && !server_metadata
        })
        .collect()
}

/// Who writes, and through which endpoint.
#[derive(Clone, Debug)]
pub(crate) struct Writer {
    /// The field manager (`fieldManager`, else the User-Agent's product).
    pub(crate) manager: String,
    /// The API version of the endpoint.
    pub(crate) api_version: String,
    /// `status` for the status subresource, else empty.
    pub(crate) subresource: String,
    /// Whether the type is built in (its lists' kinds are known).
    pub(crate) builtin: bool,
    /// Paths the endpoint resets, whose changes nobody owns.
    pub(crate) ignored: Vec<Path>,
}

/// Whether a body's managedFields ask for a reset: exactly one entry, entirely empty.
fn is_reset(obj: &Value) -> bool {
    match obj.pointer("/metadata/managedFields").and_then(Value::as_array) {
        Some(entries) if entries.len() == 1 => entries[0].as_object().is_none_or(|e| {
            e.values().all(|v| match v {
                Value::Null => true,
                Value::String(s) => s.is_empty(),
                Value::Object(o) => o.is_empty(),
                _ => false,
            })
        }),
        _ => false,
    }
}

/// The ownership an update starts from (`decodeLiveOrNew`): a subresource write keeps the
/// stored one; a body with `[{}]` resets it; a body with valid entries replaces it; anything
/// else (none, an empty list, entries that do not decode) keeps the stored one.
pub(crate) fn base(live: Option<&Value>, body: &Value, subresource: bool) -> Vec<Entry> {
    let stored = || live.and_then(decode).unwrap_or_default();
    if subresource {
        return stored();
    }
    if is_reset(body) {
        return Vec::new();
    }
    match decode(body) {
        Some(entries) if !entries.is_empty() => entries,
        _ => stored(),
    }
}

/// The live object of a create: the type's empty object. A built-in type's `spec` and
/// `status` are structs, there (empty) in any object of the type; a custom resource has
/// nothing.
pub(crate) fn zero_object(obj: &Value, builtin: bool) -> Value {
    let mut zero = json!({"metadata": {}});
    if builtin {
        for field in ["spec", "status"] {
            if obj.get(field).is_some_and(Value::is_object) {
                zero[field] = json!({});
            }
        }
    }
    zero
}

/// An Update's ownership: the writer gets what it added or changed, and loses what it
/// removed; the others lose what changed. Sets `new`'s managedFields.
///
/// An object that exists and has no ownership left is not tracked by Updates (kube-apiserver's
/// `skipNonAppliedManager`): only an apply starts tracking it again.
pub(crate) fn update(old: &Value, new: &mut Value, mut entries: Vec<Entry>, writer: &Writer) {
    let exists = old.pointer("/metadata/uid").is_some_and(|u| u.as_str() != Some(""));
    if entries.is_empty() && exists {
        encode(new, entries);
        return;
    }
    let mut old = for_ownership(old);
    if writer.builtin {
        // A built-in type's `spec` and `status` are structs: present, if empty, in any
        // object, so never added as a whole.
        for field in ["spec", "status"] {
            if new.get(field).is_some_and(Value::is_object)
                && let Some(old) = old.as_object_mut()
            {
                old.entry(field).or_insert_with(|| json!({}));
            }
        }
    }
    let comparison = compare(&old, &for_ownership(new), writer.builtin);
    if !comparison.is_same() {
        let changed: FieldSet = comparison.added.union(&comparison.modified).cloned().collect();
        for entry in &mut entries {
            if !entry.same_manager(
                &writer.manager,
                "Update",
                &writer.api_version,
                &writer.subresource,
            ) {
                entry.fields = &(&entry.fields - &changed) - &comparison.removed;
            }
        }
        let own = entries.iter_mut().find(|e| {
            e.same_manager(&writer.manager, "Update", &writer.api_version, &writer.subresource)
        });
        let fields = |mine: &FieldSet| {
            let kept = mine - &comparison.removed;
            strip(&(&kept | &changed), &writer.ignored)
        };
        match own {
            Some(entry) => {
                entry.fields = fields(&entry.fields);
                entry.time = now_rfc3339();
            }
            None => entries.push(Entry {
                manager: writer.manager.clone(),
                operation: "Update".into(),
                api_version: writer.api_version.clone(),
                subresource: writer.subresource.clone(),
                time: now_rfc3339(),
                fields: fields(&FieldSet::new()),
            }),
        }
    }
    encode(new, entries);
}

/// Server-side apply: merges `config` into `live` and settles ownership. Returns the object
/// to store, its managedFields set, or the conflicts as kube-apiserver reports them.
pub(crate) fn apply(
    live: &Value,
    config: &Value,
    writer: &Writer,
    force: bool,
) -> Result<Value, ApiError> {
    if config.pointer("/metadata/managedFields").is_some_and(|m| !m.is_null()) {
        return Err(ApiError::bad_request("metadata.managedFields must be nil"));
    }
    let mut entries = decode(live).unwrap_or_default();
    let exists = live.pointer("/metadata/uid").is_some();
    if entries.is_empty() && exists {
        // An object nobody owns (created untracked, or reset) is first owned as a whole by
        // `before-first-apply` (kube-apiserver's `skipNonAppliedManager.Apply`), so that an
        // apply conflicts with what was there.
        let mut owned = live.clone();
        let before = Writer { manager: "before-first-apply".into(), ..writer.clone() };
        update(&zero_object(live, writer.builtin), &mut owned, Vec::new(), &before);
        entries = decode(&owned).unwrap_or_default();
    }
    let live = for_ownership(live);
    let applied = strip(&field_set(config, writer.builtin), &writer.ignored);
    let mut merged = live.clone();
    merge(&mut merged, config, &[], writer.builtin);
    let is_mine = |e: &Entry| e.same_manager(&writer.manager, "Apply", "", &writer.subresource);
    let last = entries.iter().find(|e| is_mine(e)).map(|e| e.fields.clone()).unwrap_or_default();
    // Prune what this manager applied before and no longer does, unless someone owns it.
    let others: Vec<&FieldSet> =
        entries.iter().filter(|e| !is_mine(e)).map(|e| &e.fields).collect();
    let owned = |p: &Path| {
        applied.iter().chain(others.iter().flat_map(|s| s.iter())).any(|q| is_prefix(p, q))
    };
    for path in last.difference(&applied) {
        if !owned(path) {
            remove_path(&mut merged, path, writer.builtin);
        }
    }
    let comparison = compare(&live, &merged, writer.builtin);
    let changed: FieldSet = comparison.added.union(&comparison.modified).cloned().collect();
    let mut conflicts: Vec<(String, Path)> = Vec::new();
    for entry in entries.iter().filter(|e| !is_mine(e)) {
        for path in entry.fields.intersection(&changed) {
            conflicts.push((entry.printed(), path.clone()));
        }
    }
    if !conflicts.is_empty() && !force {
        return Err(conflict_error(&conflicts));
    }
    for entry in entries.iter_mut().filter(|e| !is_mine(e)) {
        entry.fields = &(&entry.fields - &changed) - &comparison.removed;
    }
    entries.retain(|e| !is_mine(e));
    entries.push(Entry {
        manager: writer.manager.clone(),
        operation: "Apply".into(),
        api_version: writer.api_version.clone(),
        subresource: writer.subresource.clone(),
        time: now_rfc3339(),
        fields: applied,
    });
    encode(&mut merged, entries);
    Ok(merged)
}

/// kube-apiserver's `NewConflictError`: 409 Conflict, a cause per conflicting field.
fn conflict_error(conflicts: &[(String, Path)]) -> ApiError {
    let message = if let [(manager, path)] = conflicts {
        format!("Apply failed with 1 conflict: conflict with {manager}: {}", path_string(path))
    } else {
        let mut managers: Vec<&String> = conflicts.iter().map(|(m, _)| m).collect();
        managers.sort();
        managers.dedup();
        let mut lines = Vec::new();
        for manager in managers {
            lines.push(format!("conflicts with {manager}:"));
            for (_, path) in conflicts.iter().filter(|(m, _)| m == manager) {
                lines.push(format!("- {}", path_string(path)));
            }
        }
        format!("Apply failed with {} conflicts: {}", conflicts.len(), lines.join("\n"))
    };
    let mut error = ApiError::new(409, "Conflict", message);
    error.causes = conflicts
        .iter()
        .map(|(manager, path)| Cause {
            reason: "FieldManagerConflict".into(),
            message: format!("conflict with {manager}"),
            field: path_string(path),
        })
        .collect();
    error
}

/// Merges an applied configuration into an object (structured-merge-diff's `Merge`): objects
/// field by field, associative and set lists element by element, anything else replaced.
pub(crate) fn merge(target: &mut Value, config: &Value, path: &[Element], builtin: bool) {
    match (&mut *target, config) {
        (Value::Object(_), Value::Object(_)) if atomic_object(path, builtin) => {
            *target = config.clone();
        }
        (Value::Object(t), Value::Object(c)) => {
            for (k, v) in c {
                let p = child(path, format!("f:{k}"));
                match t.get_mut(k) {
                    Some(slot) => merge(slot, v, &p, builtin),
                    None => {
                        t.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (Value::Array(t), Value::Array(c)) => {
            let kind = ListKind::of(path, if c.is_empty() { t } else { c }, builtin);
            if kind == ListKind::Atomic || ListKind::of(path, t, builtin) != kind && !t.is_empty() {
                *target = config.clone();
                return;
            }
            for (i, item) in c.iter().enumerate() {
                let element = item_element(&kind, i, item);
                let found =
                    t.iter().enumerate().position(|(j, x)| item_element(&kind, j, x) == element);
                match found {
                    Some(j) => merge(&mut t[j], item, &child(path, element), builtin),
                    None => t.push(item.clone()),
                }
            }
        }
        _ => *target = config.clone(),
    }
}

/// Removes the field or element at `path` from `obj`.
fn remove_path(obj: &mut Value, path: &[Element], builtin: bool) {
    let Some((last, parents)) = path.split_last() else { return };
    let mut node = obj;
    for (depth, element) in parents.iter().enumerate() {
        let next = match node {
            Value::Object(map) => element.strip_prefix("f:").and_then(|k| map.get_mut(k)),
            Value::Array(items) => {
                let kind = ListKind::of(&path[..depth], items, builtin);
                let at = items
                    .iter()
                    .enumerate()
                    .position(|(i, x)| item_element(&kind, i, x) == *element);
                at.and_then(move |i| items.get_mut(i))
            }
            _ => None,
        };
        let Some(next) = next else { return };
        node = next;
    }
    match node {
        Value::Object(map) => {
            if let Some(k) = last.strip_prefix("f:") {
                map.remove(k);
            }
        }
        Value::Array(items) => {
            let kind = ListKind::of(parents, items, builtin);
            let keep: Vec<Value> = items
                .iter()
                .enumerate()
                .filter(|(i, x)| item_element(&kind, *i, x) != *last)
                .map(|(_, x)| x.clone())
                .collect();
            *items = keep;
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(elements: &[&str]) -> Path {
        elements.iter().map(|e| (*e).to_owned()).collect()
    }

    fn writer(manager: &str) -> Writer {
        Writer {
            manager: manager.into(),
            api_version: "v1".into(),
            subresource: String::new(),
            builtin: true,
            ignored: Vec::new(),
        }
    }

    #[test]
    fn field_sets_have_leaves_and_list_elements() {
        let obj = json!({"metadata": {"labels": {"a": "1"}, "finalizers": ["x"]},
                         "spec": {"containers": [{"name": "c", "image": "i"}], "args": ["1"]}});
        let set = field_set(&obj, true);
        let c = r#"k:{"name":"c"}"#;
        let want: FieldSet = [
            p(&["f:metadata", "f:labels", "f:a"]),
            p(&["f:metadata", "f:finalizers", r#"v:"x""#]),
            p(&["f:spec", "f:containers", c]),
            p(&["f:spec", "f:containers", c, "f:name"]),
            p(&["f:spec", "f:containers", c, "f:image"]),
            p(&["f:spec", "f:args"]),
        ]
        .into_iter()
        .collect();
        assert_eq!(set, want);
        let v1 = to_fields_v1(&set);
        assert_eq!(v1["f:spec"]["f:containers"][c], json!({".": {}, "f:name": {}, "f:image": {}}));
        assert_eq!(v1["f:spec"]["f:args"], json!({}));
        assert_eq!(from_fields_v1(&v1), Some(set));
        assert_eq!(
            path_string(&p(&["f:spec", "f:containers", c, "f:image"])),
            r#".spec.containers[name="c"].image"#
        );
    }

    #[test]
    fn comparisons_mark_added_containers() {
        let old = json!({"metadata": {}});
        let new = json!({"metadata": {"labels": {"a": "1"}}, "data": {"k": "v"}});
        let c = compare(&old, &new, true);
        assert!(c.added.contains(&p(&["f:data"])) && c.added.contains(&p(&["f:data", "f:k"])));
        let v1 = to_fields_v1(&c.added);
        assert_eq!(v1["f:data"], json!({".": {}, "f:k": {}}));
        let c = compare(&new, &json!({"metadata": {"labels": {"a": "2"}}}), true);
        assert_eq!(c.modified, [p(&["f:metadata", "f:labels", "f:a"])].into_iter().collect());
        assert!(c.removed.contains(&p(&["f:data", "f:k"])));
    }

    #[test]
    fn apply_conflicts_forces_and_prunes() {
        let live = json!({"metadata": {"name": "x"}});
        let a =
            apply(&live, &json!({"data": {"a": "1", "b": "1"}}), &writer("one"), false).unwrap();
        // The same value from another manager shares ownership; a new value conflicts.
        let b = apply(&a, &json!({"data": {"a": "1"}}), &writer("two"), false).unwrap();
        let error = apply(&b, &json!({"data": {"b": "2"}}), &writer("two"), false).unwrap_err();
        assert_eq!(error.code, 409);
        assert_eq!(error.message, r#"Apply failed with 1 conflict: conflict with "one": .data.b"#);
        assert_eq!(error.causes[0].field, ".data.b");
        let forced = apply(&b, &json!({"data": {"b": "2"}}), &writer("two"), true).unwrap();
        assert_eq!(forced["data"], json!({"a": "1", "b": "2"}));
        let entries = decode(&forced).unwrap();
        let one = entries.iter().find(|e| e.manager == "one").unwrap();
        assert_eq!(one.fields, [p(&["f:data", "f:a"])].into_iter().collect());
        // `one` leaves `a` out: `two` does not own it (it applied `b` last), so it goes.
        let pruned = apply(&forced, &json!({"data": {}}), &writer("one"), false).unwrap();
        assert_eq!(pruned["data"], json!({"b": "2"}));
    }

    #[test]
    fn an_empty_named_list_owns_nothing() {
        let set = field_set(&json!({"spec": {"containers": [], "args": []}}), true);
        assert_eq!(set, [p(&["f:spec", "f:args"])].into_iter().collect());
    }

    #[test]
    fn lists_merge_by_name() {
        let mut live = json!({"spec": {"containers": [{"name": "a", "image": "1"}]}});
        merge(
            &mut live,
            &json!({"spec": {"containers": [{"name": "b", "image": "2"}]}}),
            &[],
            true,
        );
        assert_eq!(live["spec"]["containers"].as_array().map(Vec::len), Some(2));
        let mut atomic = json!({"args": ["1", "2"]});
        merge(&mut atomic, &json!({"args": ["3"]}), &[], true);
        assert_eq!(atomic, json!({"args": ["3"]}));
    }

    #[test]
    fn updates_take_what_they_change() {
        let old = json!({"metadata": {"name": "x"}, "data": {"a": "1"}});
        let mut new = json!({"metadata": {"name": "x"}, "data": {"a": "2", "b": "1"}});
        let entries = vec![Entry {
            manager: "one".into(),
            operation: "Apply".into(),
            api_version: "v1".into(),
            subresource: String::new(),
            time: String::new(),
            fields: [p(&["f:data", "f:a"])].into_iter().collect(),
        }];
        update(&old, &mut new, entries, &writer("kubectl"));
        let entries = decode(&new).unwrap();
        assert_eq!(entries.len(), 1, "{new}");
        assert_eq!(entries[0].manager, "kubectl");
        assert_eq!(entries[0].fields.len(), 2);
        assert!(is_reset(&json!({"metadata": {"managedFields": [{}]}})));
        assert!(!is_reset(&json!({"metadata": {"managedFields": []}})));
    }
}
