//! The JSON patch (RFC 6902) a mutating webhook answers with, made from the object its handler
//! changed, for [`AdmissionResponse::patch_from`](crate::admission::AdmissionResponse::patch_from).
//!
//! The API server applies the patch to the object it sent, as it sent it. The handler's typed
//! object is not that object: a type may drop fields it does not know, write `null` for a
//! field the request left out, or spell a quantity differently. A patch made by comparing two
//! serialisations of the typed object could then name a path the sent object lacks (a
//! `replace` of `/metadata/labels` where the request had no labels fails to apply), or undo
//! what the type dropped. So the patch is made in two steps:
//!
//! 1. The handler's change (its `original` and `changed` objects, serialised) is merged into
//!    the object as sent ([`merge`]): where the two serialisations agree, the sent JSON stays
//!    untouched; where they differ, the changed value goes in (a field set to `null` or
//!    removed is removed, as Kubernetes treats `null`).
//! 2. The patch is json-patch's diff from the sent object to that merge: every path it names
//!    exists in the object the API server patches.

use serde_json::{Map, Value};

/// The RFC 6902 operations that turn `sent` (the object as the API server sent it) into
/// `sent` with the change from `original` to `changed` applied; empty when the handler changed
/// nothing.
pub(crate) fn patch_from(sent: &Value, original: &Value, changed: &Value) -> json_patch::Patch {
    let merged = merge(Some(sent), original, changed).unwrap_or(Value::Null);
    json_patch::diff(sent, &merged)
}

/// `sent` with the change from `original` to `changed` applied; `None` when the change removes
/// the value (it became `null`, or was removed).
fn merge(sent: Option<&Value>, original: &Value, changed: &Value) -> Option<Value> {
    if original == changed {
        return sent.cloned();
    }
    match (sent, original, changed) {
        (_, _, Value::Null) => None,
        (Some(Value::Object(sent)), Value::Object(original), Value::Object(changed)) => {
            Some(Value::Object(merge_objects(sent, original, changed)))
        }
        (Some(Value::Array(sent)), Value::Array(original), Value::Array(changed))
            if sent.len() == original.len() && original.len() == changed.len() =>
        {
            let items = sent.iter().zip(original).zip(changed);
            // An element the change removes (set to null) stays as null: removing it would
            // shift every index after it.
            let merged = items.map(|((s, o), c)| merge(Some(s), o, c).unwrap_or(Value::Null));
            Some(Value::Array(merged.collect()))
        }
        (_, _, changed) => Some(without_nulls(changed.clone())),
    }
}

fn merge_objects(
    sent: &Map<String, Value>,
    original: &Map<String, Value>,
    changed: &Map<String, Value>,
) -> Map<String, Value> {
    let mut merged = Map::new();
    // The sent object's keys, in its order, then the keys the change adds.
    for key in sent.keys().chain(changed.keys().filter(|k| !sent.contains_key(*k))) {
        let (o, c) = (original.get(key), changed.get(key));
        let value = if absent(o) && absent(c) || o == c {
            sent.get(key).cloned()
        } else {
            merge(sent.get(key), o.unwrap_or(&Value::Null), c.unwrap_or(&Value::Null))
        };
        if let Some(value) = value {
            merged.insert(key.clone(), value);
        }
    }
    merged
}

/// Missing and `null` are one to Kubernetes: a `null` field is not set.
fn absent(value: Option<&Value>) -> bool {
    matches!(value, None | Some(Value::Null))
}

/// `value` without the `null` fields of its objects: what a type writes for its unset
/// optional fields, which the sent object did not have either.
fn without_nulls(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k, without_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(without_nulls).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn applied(sent: &Value, patch: &json_patch::Patch) -> Value {
        let mut doc = sent.clone();
        json_patch::patch(&mut doc, patch).unwrap();
        doc
    }

    #[test]
    fn a_label_added_where_the_sent_object_has_none_is_an_add_of_the_whole_map() {
        // The typed object wrote `labels: null`, the sent one has no `labels` at all: a
        // `replace` there would not apply.
        let sent = json!({"metadata": {"name": "a"}, "spec": {"size": 1}});
        let original = json!({"metadata": {"name": "a", "labels": null}, "spec": {"size": 1}});
        let changed =
            json!({"metadata": {"name": "a", "labels": {"team": "x"}}, "spec": {"size": 1}});
        let patch = patch_from(&sent, &original, &changed);
        assert_eq!(
            serde_json::to_value(&patch).unwrap(),
            json!([{"op": "add", "path": "/metadata/labels", "value": {"team": "x"}}])
        );
        assert_eq!(applied(&sent, &patch)["metadata"]["labels"], json!({"team": "x"}));
    }

    #[test]
    fn fields_the_type_does_not_know_are_kept() {
        let sent = json!({"spec": {"size": 1, "extra": {"kept": true}}, "status": {"x": 1}});
        let original = json!({"spec": {"size": 1}});
        let changed = json!({"spec": {"size": 2}});
        let patch = patch_from(&sent, &original, &changed);
        assert_eq!(
            serde_json::to_value(&patch).unwrap(),
            json!([{"op": "replace", "path": "/spec/size", "value": 2}])
        );
    }

    #[test]
    fn a_field_set_to_null_is_removed_and_nulls_of_new_values_are_left_out() {
        let sent = json!({"spec": {"color": "red", "size": 1}});
        let original = json!({"spec": {"color": "red", "size": 1, "shape": null}});
        let changed =
            json!({"spec": {"color": null, "size": 1, "shape": {"sides": 3, "name": null}}});
        let patched = applied(&sent, &patch_from(&sent, &original, &changed));
        assert_eq!(patched, json!({"spec": {"size": 1, "shape": {"sides": 3}}}));
    }

    #[test]
    fn an_unchanged_object_is_an_empty_patch_whatever_the_type_wrote() {
        let sent = json!({"spec": {"cpu": "1000m"}});
        let typed = json!({"spec": {"cpu": "1"}});
        assert!(patch_from(&sent, &typed, &typed).0.is_empty());
    }

    #[test]
    fn list_items_of_the_same_length_are_patched_item_by_item() {
        let sent = json!({"spec": {"containers": [{"name": "a", "x": 1}, {"name": "b", "x": 2}]}});
        let original = json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}]}});
        let changed = json!({"spec": {"containers": [{"name": "a"}, {"name": "b", "image": "i"}]}});
        let patch = patch_from(&sent, &original, &changed);
        assert_eq!(
            serde_json::to_value(&patch).unwrap(),
            json!([{"op": "add", "path": "/spec/containers/1/image", "value": "i"}])
        );
        // A list that grows is replaced whole, with the changed items.
        let grown = json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}, {"name": "c"}]}});
        let patched = applied(&sent, &patch_from(&sent, &original, &grown));
        assert_eq!(patched["spec"]["containers"].as_array().unwrap().len(), 3);
    }

    #[test]
    fn keys_with_slashes_and_tildes_are_escaped() {
        let sent = json!({"metadata": {"annotations": {}}});
        let original = sent.clone();
        let changed = json!({"metadata": {"annotations": {"example.com/a~b": "v"}}});
        let patch = patch_from(&sent, &original, &changed);
        assert_eq!(
            serde_json::to_value(&patch).unwrap(),
            json!([{"op": "add", "path": "/metadata/annotations/example.com~1a~0b", "value": "v"}])
        );
    }
}
