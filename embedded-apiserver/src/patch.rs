//! PATCH bodies: JSON merge patch (RFC 7386), JSON patch (RFC 6902), and strategic merge
//! patch for the simple cases.
//!
//! Strategic merge patch needs each field's patch strategy from the Go types; without them this
//! server applies it as a merge patch with two refinements that cover what kubectl sends:
//! lists whose elements are all objects with a `name` are merged by name (containers, env,
//! volumes...) honouring `$patch: delete` on elements, and directive keys (`$patch`,
//! `$setElementOrder/...`, `$retainKeys`, `$deleteFromPrimitiveList/...`) are applied or
//! dropped rather than stored. Other lists are replaced.

use serde_json::{Map, Value};

use crate::status::ApiError;

/// The patch formats the server accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PatchKind {
    /// `application/merge-patch+json`.
    Merge,
    /// `application/strategic-merge-patch+json`.
    StrategicMerge,
    /// `application/json-patch+json`.
    Json,
    /// `application/apply-patch+yaml` (server-side apply; JSON bodies only).
    Apply,
}

impl PatchKind {
    /// The kind of a `Content-Type`, if the server accepts it.
    pub(crate) fn from_content_type(content_type: &str) -> Option<Self> {
        let media = content_type.split(';').next().unwrap_or_default().trim();
        match media.to_ascii_lowercase().as_str() {
            "application/merge-patch+json" => Some(Self::Merge),
            "application/strategic-merge-patch+json" => Some(Self::StrategicMerge),
            "application/json-patch+json" => Some(Self::Json),
            "application/apply-patch+yaml" => Some(Self::Apply),
            _ => None,
        }
    }
}

/// RFC 7386: objects merge recursively, `null` removes, anything else replaces.
pub(crate) fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    if let Value::Object(target) = target {
        for (key, value) in patch {
            if value.is_null() {
                target.remove(key);
            } else {
                merge_patch(target.entry(key.clone()).or_insert(Value::Null), value);
            }
        }
    }
}

/// Strategic merge patch, approximated as described in the module docs.
pub(crate) fn strategic_merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    match patch.get("$patch").and_then(Value::as_str) {
        Some("delete") => {
            *target = Value::Object(Map::new());
            return;
        }
        Some("replace") => {
            *target = Value::Object(without_directives(patch));
            return;
        }
        _ => {}
    }
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Value::Object(target) = target else { return };
    for (key, value) in patch {
        if key.starts_with('$') {
            continue;
        }
        if value.is_null() {
            target.remove(key);
            continue;
        }
        let slot = target.entry(key.clone()).or_insert(Value::Null);
        match (&mut *slot, value) {
            (Value::Array(current), Value::Array(items)) if named(current) && named(items) => {
                merge_named_lists(current, items);
            }
            (_, Value::Array(items)) => {
                *slot = Value::Array(
                    items
                        .iter()
                        .filter(|i| i.get("$patch").and_then(Value::as_str) != Some("delete"))
                        .map(|i| strip(i.clone()))
                        .collect(),
                );
            }
            (_, Value::Object(_)) => strategic_merge_patch(slot, value),
            (_, other) => *slot = other.clone(),
        }
    }
}

/// Whether every element is an object with a string `name` (the common merge key).
fn named(items: &[Value]) -> bool {
    items.iter().all(|i| i.get("name").is_some_and(Value::is_string))
}

fn merge_named_lists(current: &mut Vec<Value>, patch: &[Value]) {
    for item in patch {
        let name = item.get("name");
        let position = current.iter().position(|c| c.get("name") == name);
        let delete = item.get("$patch").and_then(Value::as_str) == Some("delete");
        match (position, delete) {
            (Some(i), true) => {
                current.remove(i);
            }
            (Some(i), false) => strategic_merge_patch(&mut current[i], item),
            (None, true) => {}
            (None, false) => current.push(strip(item.clone())),
        }
    }
}

/// Drops directive keys from an object, recursively.
fn strip(mut value: Value) -> Value {
    match &mut value {
        Value::Object(map) => {
            map.retain(|k, _| !k.starts_with('$'));
            for v in map.values_mut() {
                *v = strip(std::mem::take(v));
            }
        }
        Value::Array(items) => {
            for v in items {
                *v = strip(std::mem::take(v));
            }
        }
        _ => {}
    }
    value
}

fn without_directives(map: &Map<String, Value>) -> Map<String, Value> {
    match strip(Value::Object(map.clone())) {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// The most operations a JSON patch may have (kube-apiserver's `maxJSONPatchOperations`).
pub(crate) const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

/// How many bytes the `copy` operations of one JSON patch may add together (kube-apiserver's
/// `JSONPatchMaxCopyBytes`, 3 MiB): without a limit, each copy of the whole document into
/// itself doubles it, and forty of them ask for a terabyte.
const MAX_COPY_BYTES: usize = 3 * 1024 * 1024;

/// How deeply a patched object may nest: as deeply as a request body can (`serde_json`'s
/// recursion limit), so that every stored object can be read back by a JSON decoder, and
/// dropping or serializing it (both recursive) cannot exhaust a stack. Only JSON patches can
/// nest deeper than their body, by adding a value at a deep path, a patch at a time.
const MAX_DEPTH: usize = 128;

/// kube-apiserver's answer to a JSON patch that does not apply (a failed `test`, a missing
/// path, the copy limit): `errors.NewGenericServerResponse(422, ...)` of the library's error,
/// which is `422` with reason `Invalid`, the generic message below and empty details, and
/// drops the library's error. Clients tell a failed `test` by code and reason alone (kube-rs's
/// finalizer helper, `kubectl patch --type=json`). The answer is the same word for word (the
/// conformance suite compares it); why the patch did not apply goes to the log, at debug.
pub(crate) fn not_applied(why: &str) -> ApiError {
    tracing::debug!(why, "a JSON patch did not apply");
    let message = "the server rejected our request due to an error in our request";
    let mut error = ApiError::new(422, "Invalid", message.to_owned());
    error.details = Some(Box::default());
    error
}

/// The number of operations of a JSON patch (0 when it is not an array).
pub(crate) fn operations(patch: &Value) -> usize {
    patch.as_array().map_or(0, Vec::len)
}

/// How many arrays and objects nest in `value` at its deepest (0 for a scalar), counted
/// without recursion.
fn depth(value: &Value) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(value, 1)];
    while let Some((value, level)) = stack.pop() {
        let children: Box<dyn Iterator<Item = &Value>> = match value {
            Value::Array(items) => Box::new(items.iter()),
            Value::Object(map) => Box::new(map.values()),
            _ => continue,
        };
        deepest = deepest.max(level);
        stack.extend(children.map(|child| (child, level + 1)));
    }
    deepest
}

/// Checks that `value` placed at the JSON pointer `path` nests no deeper than [`MAX_DEPTH`].
fn check_depth(path: &str, value: &Value) -> Result<(), String> {
    let tokens = path.matches('/').count();
    // A value at `tokens` levels below the root adds its own depth to theirs.
    if tokens.saturating_add(depth(value)) > MAX_DEPTH {
        return Err(format!(
            "the patched object would nest deeper than {MAX_DEPTH} levels at {:?}, more than a \
             request body may: flatten the value",
            path.chars().take(100).collect::<String>()
        ));
    }
    Ok(())
}

/// The size of `value` serialized, without writing it anywhere.
fn serialized_len(value: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 = self.0.saturating_add(bytes.len());
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing a `Value` into a counter cannot fail.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// RFC 6902. The error is the reason the patch does not apply.
///
/// Bounded as kube-apiserver bounds it: `copy` operations add at most [`MAX_COPY_BYTES`]
/// together, and no value may land deeper than [`MAX_DEPTH`] (the caller also refuses more
/// than [`MAX_JSON_PATCH_OPERATIONS`] operations, with a 413).
pub(crate) fn json_patch(target: &mut Value, patch: &Value) -> Result<(), String> {
    let ops = patch.as_array().ok_or("a JSON patch must be an array of operations")?;
    let mut copied = 0_usize;
    for op in ops {
        let name = op.get("op").and_then(Value::as_str).ok_or("operation has no \"op\"")?;
        let path = op.get("path").and_then(Value::as_str).ok_or("operation has no \"path\"")?;
        let value = || op.get("value").cloned().ok_or(format!("{name} operation has no \"value\""));
        let from = || {
            op.get("from")
                .and_then(Value::as_str)
                .ok_or(format!("{name} operation has no \"from\""))
        };
        match name {
            "add" => {
                let value = value()?;
                check_depth(path, &value)?;
                add(target, path, value)?;
            }
            "remove" => {
                remove(target, path)?;
            }
            "replace" => {
                let value = value()?;
                check_depth(path, &value)?;
                remove(target, path)?;
                add(target, path, value)?;
            }
            "move" => {
                let from = from()?;
                // Deeper than it was: the moved value may now nest too deep.
                if path.matches('/').count() > from.matches('/').count() {
                    let moved = target.pointer(from).ok_or(format!("missing value at {from}"))?;
                    check_depth(path, moved)?;
                }
                let moved = remove(target, from)?;
                add(target, path, moved)?;
            }
            "copy" => {
                let from = from()?;
                let source = target.pointer(from).ok_or(format!("missing value at {from}"))?;
                copied = copied.saturating_add(serialized_len(source));
                if copied > MAX_COPY_BYTES {
                    return Err(format!(
                        "unable to copy, exceeding the max accumulated copy size of \
                         {MAX_COPY_BYTES} bytes"
                    ));
                }
                check_depth(path, source)?;
                let source = source.clone();
                add(target, path, source)?;
            }
            "test" => test(target, path, &value()?)?,
            other => return Err(format!("unexpected kind of operation: {other:?}")),
        }
    }
    Ok(())
}

/// The `test` operation as kube-apiserver's JSON patch library (evanphx/json-patch v4,
/// `Patch.test`) runs it, errors worded as it words them:
///
/// 1. `""` compares the whole document.
/// 2. A path whose parent is missing, `null` or a scalar does not apply ("is missing path").
/// 3. In an object, a member that is missing or `null` compares as `null`: `{"op": "test",
///    "path": "/metadata/finalizers", "value": null}` passes on an object without finalizers
///    (what kube-rs's finalizer helper sends before adding the first one).
/// 4. In an array, the index must be an integer below its length (negative indices count
///    from the end, as the library allows); anything else is an error in the test.
/// 5. Otherwise the values must be equal.
fn test(target: &Value, path: &str, expected: &Value) -> Result<(), String> {
    let failed = || format!("testing value {path} failed: test failed");
    if path.is_empty() {
        return if target == expected { Ok(()) } else { Err(failed()) };
    }
    let (parent, token) = split_pointer(path)?;
    let missing =
        || format!("test operation does not apply: is missing path: {path}: missing value");
    let actual = match target.pointer(parent).ok_or_else(missing)? {
        Value::Object(map) => map.get(&token).unwrap_or(&Value::Null),
        Value::Array(items) => {
            let invalid = |why: String| format!("error in test for path: '{path}': {why}");
            let index: i64 = token
                .parse()
                .map_err(|_| invalid(format!("strconv.Atoi: parsing {token:?}: invalid syntax")))?;
            let len = i64::try_from(items.len()).unwrap_or(i64::MAX);
            let resolved = if index < 0 { index + len } else { index };
            usize::try_from(resolved).ok().and_then(|i| items.get(i)).ok_or_else(|| {
                invalid(format!(
                    "Unable to access invalid index: {index}: invalid index referenced"
                ))
            })?
        }
        _ => return Err(missing()),
    };
    if actual == expected { Ok(()) } else { Err(failed()) }
}

/// Splits a JSON pointer into its parent pointer and its unescaped last token.
fn split_pointer(path: &str) -> Result<(&str, String), String> {
    let i = path.rfind('/').ok_or(format!("invalid JSON pointer: {path:?}"))?;
    Ok((&path[..i], path[i + 1..].replace("~1", "/").replace("~0", "~")))
}

fn add(target: &mut Value, path: &str, value: Value) -> Result<(), String> {
    if path.is_empty() {
        *target = value;
        return Ok(());
    }
    let (parent, token) = split_pointer(path)?;
    let missing = || format!("doc is missing path: {path:?}");
    match target.pointer_mut(parent).ok_or_else(missing)? {
        Value::Object(map) => {
            map.insert(token, value);
        }
        Value::Array(items) => {
            let index =
                if token == "-" { items.len() } else { token.parse().map_err(|_| missing())? };
            if index > items.len() {
                return Err(format!("add operation index out of bounds: {index}"));
            }
            items.insert(index, value);
        }
        _ => return Err(missing()),
    }
    Ok(())
}

fn remove(target: &mut Value, path: &str) -> Result<Value, String> {
    let (parent, token) = split_pointer(path)?;
    let missing = || format!("remove operation does not apply: doc is missing path: {path:?}");
    match target.pointer_mut(parent).ok_or_else(missing)? {
        Value::Object(map) => map.remove(&token).ok_or_else(missing),
        Value::Array(items) => {
            let index: usize = token.parse().map_err(|_| missing())?;
            if index >= items.len() {
                return Err(missing());
            }
            Ok(items.remove(index))
        }
        _ => Err(missing()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_patch_follows_rfc_7386() {
        let mut doc = json!({"a": "b", "c": {"d": "e", "f": "g"}, "l": [1, 2]});
        merge_patch(&mut doc, &json!({"a": "z", "c": {"f": null}, "l": [3]}));
        assert_eq!(doc, json!({"a": "z", "c": {"d": "e"}, "l": [3]}));
        merge_patch(&mut doc, &json!(["x"]));
        assert_eq!(doc, json!(["x"]));
    }

    #[test]
    fn strategic_merge_patch_merges_named_lists_and_drops_directives() {
        let mut pod = json!({"spec": {"containers": [{"name": "a", "image": "1"}, {"name": "b", "image": "1"}]}});
        let patch = json!({"spec": {
            "$setElementOrder/containers": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
            "containers": [{"name": "a", "image": "2"}, {"name": "b", "$patch": "delete"}, {"name": "c", "image": "3"}]}});
        strategic_merge_patch(&mut pod, &patch);
        assert_eq!(
            pod,
            json!({"spec": {"containers": [{"name": "a", "image": "2"}, {"name": "c", "image": "3"}]}})
        );
        let mut doc = json!({"metadata": {"labels": {"a": "1"}}});
        strategic_merge_patch(
            &mut doc,
            &json!({"metadata": {"labels": {"$patch": "replace", "b": "2"}}}),
        );
        assert_eq!(doc, json!({"metadata": {"labels": {"b": "2"}}}));
    }

    #[test]
    fn json_patch_follows_rfc_6902() {
        let mut doc = json!({"metadata": {"labels": {"a/b": "1"}}, "items": [1, 2]});
        let patch = json!([
            {"op": "add", "path": "/items/-", "value": 3},
            {"op": "replace", "path": "/metadata/labels/a~1b", "value": "2"},
            {"op": "move", "from": "/items/0", "path": "/first"},
            {"op": "copy", "from": "/first", "path": "/second"},
            {"op": "test", "path": "/second", "value": 1},
            {"op": "remove", "path": "/items/0"}
        ]);
        json_patch(&mut doc, &patch).unwrap();
        assert_eq!(
            doc,
            json!({"metadata": {"labels": {"a/b": "2"}}, "items": [3], "first": 1, "second": 1})
        );
        assert!(json_patch(&mut doc, &json!([{"op": "remove", "path": "/nope"}])).is_err());
        assert!(
            json_patch(&mut doc, &json!([{"op": "test", "path": "/first", "value": 2}])).is_err()
        );
        assert!(json_patch(&mut doc, &json!({"op": "add"})).is_err());
    }

    /// evanphx/json-patch v4's `Patch.test`, which kube-apiserver runs: a missing member of an
    /// object compares as `null` (kube-rs's finalizer helper tests `/metadata/finalizers`
    /// against `null` before adding the first finalizer).
    #[test]
    fn test_of_a_missing_member_compares_as_null() {
        let doc = json!({"metadata": {"name": "a", "labels": null}, "items": ["x", "y"]});
        let test = |path: &str, value: Value| {
            json_patch(&mut doc.clone(), &json!([{"op": "test", "path": path, "value": value}]))
        };
        assert_eq!(test("/metadata/finalizers", Value::Null), Ok(()));
        assert_eq!(test("/metadata/labels", Value::Null), Ok(()), "a null member is null");
        assert_eq!(
            test("/metadata/finalizers", json!([])),
            Err("testing value /metadata/finalizers failed: test failed".to_owned())
        );
        assert_eq!(test("/metadata/name", json!("a")), Ok(()));
        assert_eq!(test("", doc.clone()), Ok(()));
        assert_eq!(test("", json!({})), Err("testing value  failed: test failed".to_owned()));
        // The parent must be there: a missing, null or scalar parent does not apply.
        for path in ["/spec/x", "/metadata/labels/app", "/metadata/name/x"] {
            assert_eq!(
                test(path, Value::Null),
                Err(format!(
                    "test operation does not apply: is missing path: {path}: missing value"
                )),
            );
        }
        // An array's index must name an element; negative ones count from the end.
        assert_eq!(test("/items/1", json!("y")), Ok(()));
        assert_eq!(test("/items/-1", json!("y")), Ok(()));
        assert_eq!(
            test("/items/2", Value::Null),
            Err("error in test for path: '/items/2': Unable to access invalid index: 2: invalid index referenced".to_owned())
        );
        assert_eq!(
            test("/items/-3", json!("x")),
            Err("error in test for path: '/items/-3': Unable to access invalid index: -3: invalid index referenced".to_owned())
        );
        assert!(test("/items/-", json!("x")).unwrap_err().contains("invalid syntax"));
    }

    /// kube-rs's finalizer helper: `test` then `add`, or `test` then `remove`, all or nothing.
    #[test]
    fn a_failed_test_leaves_the_object_as_it_was() {
        let mut doc = json!({"metadata": {"finalizers": ["a/x", "b/y"]}});
        let remove_second = json!([
            {"op": "test", "path": "/metadata/finalizers/1", "value": "b/y"},
            {"op": "remove", "path": "/metadata/finalizers/1"},
        ]);
        let mut first = doc.clone();
        json_patch(&mut first, &remove_second).unwrap();
        assert_eq!(first, json!({"metadata": {"finalizers": ["a/x"]}}));
        // Someone removed `a/x` in between: index 1 is gone, nothing is removed.
        doc["metadata"]["finalizers"] = json!(["b/y"]);
        let before = doc.clone();
        let error = json_patch(&mut doc, &remove_second).unwrap_err();
        assert!(error.contains("invalid index"), "{error}");
        assert_eq!(doc, before);
        let add_first = json!([
            {"op": "test", "path": "/metadata/finalizers", "value": null},
            {"op": "add", "path": "/metadata/finalizers", "value": ["c/z"]},
        ]);
        assert!(json_patch(&mut doc, &add_first).is_err(), "finalizers are there already");
        let mut bare = json!({"metadata": {}});
        json_patch(&mut bare, &add_first).unwrap();
        assert_eq!(bare, json!({"metadata": {"finalizers": ["c/z"]}}));
    }

    #[test]
    fn a_patch_that_does_not_apply_is_answered_as_kube_apiserver_answers_it() {
        let error = not_applied("testing value /x failed: test failed");
        assert_eq!((error.code, error.reason.as_str()), (422, "Invalid"));
        let status = error.to_json();
        assert_eq!(
            status["message"],
            "the server rejected our request due to an error in our request"
        );
        assert_eq!(status["details"], json!({}));
    }
}
