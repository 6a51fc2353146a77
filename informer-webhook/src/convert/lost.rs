//! The fields a conversion to a spoke version loses, kept in the converted object's
//! `<group>/conversion-data` annotation and put back on the way to the hub.
//!
//! A field is lost when the hub's object and the hub's object sent through the spoke and back
//! (the *round trip*) differ there. Each lost field is recorded with its JSON pointer, the hub's
//! value and the round trip's value. Converting the spoke back, a field is restored only where
//! the object from the spoke still holds the round trip's value: a field the user changed
//! through the spoke keeps the change.
//!
//! Objects are compared key by key, and lists of the same length item by item; a list whose
//! length changed is one field. A `null` field and a missing one are the same, as they are to
//! Kubernetes.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// What the annotation holds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ConversionData {
    /// The hub's `apiVersion` the paths and values are of: data of an older hub is not
    /// restored into a new one.
    pub(crate) hub: String,
    /// The fields the spoke lost.
    pub(crate) lost: Vec<LostField>,
}

/// One field the spoke lost.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LostField {
    /// A JSON pointer (RFC 6901) into the hub's object.
    pub(crate) path: String,
    /// The hub's value; `None` when the hub had none (the round trip added one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) value: Option<Value>,
    /// The round trip's value; `None` when it had none (the spoke cannot hold the field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) round_trip: Option<Value>,
}

/// The fields where `hub` and `round_trip` differ.
pub(crate) fn lost(hub: &Value, round_trip: &Value) -> Vec<LostField> {
    let mut fields = Vec::new();
    diff(Some(hub), Some(round_trip), &mut String::new(), &mut fields);
    fields
}

fn diff(
    hub: Option<&Value>,
    round_trip: Option<&Value>,
    path: &mut String,
    out: &mut Vec<LostField>,
) {
    if same(hub, round_trip) {
        return;
    }
    match (hub, round_trip) {
        (Some(Value::Object(h)), Some(Value::Object(r))) => {
            for key in h.keys().chain(r.keys().filter(|k| !h.contains_key(*k))) {
                let len = path.len();
                path.push('/');
                path.push_str(&key.replace('~', "~0").replace('/', "~1"));
                diff(h.get(key), r.get(key), path, out);
                path.truncate(len);
            }
        }
        (Some(Value::Array(h)), Some(Value::Array(r))) if h.len() == r.len() => {
            for (index, (h, r)) in h.iter().zip(r).enumerate() {
                let len = path.len();
                path.push('/');
                path.push_str(&index.to_string());
                diff(Some(h), Some(r), path, out);
                path.truncate(len);
            }
        }
        _ => out.push(LostField {
            path: path.clone(),
            value: present(hub).cloned(),
            round_trip: present(round_trip).cloned(),
        }),
    }
}

/// Puts each of `fields` back into `hub` where it still holds the round trip's value. A field
/// whose parent is gone (a list item removed through the spoke) is dropped.
pub(crate) fn restore(hub: &mut Value, fields: &[LostField]) {
    for field in fields {
        if !same(hub.pointer(&field.path), field.round_trip.as_ref()) {
            continue;
        }
        let Some((parent, token)) = field.path.rsplit_once('/') else { continue };
        let token = token.replace("~1", "/").replace("~0", "~");
        match (hub.pointer_mut(parent), &field.value) {
            (Some(Value::Object(map)), Some(value)) => {
                map.insert(token, value.clone());
            }
            (Some(Value::Object(map)), None) => {
                map.remove(&token);
            }
            (Some(Value::Array(items)), value) => {
                if let Some(item) = token.parse::<usize>().ok().and_then(|i| items.get_mut(i)) {
                    *item = value.clone().unwrap_or(Value::Null);
                }
            }
            _ => {}
        }
    }
}

/// Missing and `null` are one.
fn present(value: Option<&Value>) -> Option<&Value> {
    value.filter(|v| !v.is_null())
}

fn same(a: Option<&Value>, b: Option<&Value>) -> bool {
    present(a) == present(b)
}

/// Removes `annotation` from `object`'s annotations (and the annotations when none are
/// left), returning its value.
pub(crate) fn take_annotation(object: &mut Value, annotation: &str) -> Option<Value> {
    let metadata = object.get_mut("metadata")?.as_object_mut()?;
    let annotations = metadata.get_mut("annotations")?.as_object_mut()?;
    let taken = annotations.remove(annotation);
    if annotations.is_empty() {
        metadata.remove("annotations");
    }
    taken
}

/// Sets `annotation` to `value` in `object`'s annotations.
pub(crate) fn set_annotation(object: &mut Value, annotation: &str, value: String) {
    let Some(object) = object.as_object_mut() else { return };
    let metadata = object.entry("metadata").or_insert_with(|| Value::Object(Map::new()));
    if !metadata.is_object() {
        *metadata = Value::Object(Map::new());
    }
    let Some(metadata) = metadata.as_object_mut() else { return };
    let annotations = metadata.entry("annotations").or_insert_with(|| Value::Object(Map::new()));
    if !annotations.is_object() {
        *annotations = Value::Object(Map::new());
    }
    if let Some(annotations) = annotations.as_object_mut() {
        annotations.insert(annotation.to_owned(), Value::String(value));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_field_the_spoke_cannot_hold_is_restored_when_the_spoke_left_it_alone() {
        let hub = json!({"spec": {"size": 3, "color": "red"}});
        let round_trip = json!({"spec": {"size": 3, "color": null}});
        let fields = lost(&hub, &round_trip);
        assert_eq!(
            fields,
            [LostField { path: "/spec/color".into(), value: Some(json!("red")), round_trip: None }]
        );
        let mut back = json!({"spec": {"size": 4}});
        restore(&mut back, &fields);
        assert_eq!(back, json!({"spec": {"size": 4, "color": "red"}}));
    }

    #[test]
    fn a_field_held_lossily_keeps_the_users_change_made_through_the_spoke() {
        // The hub's 2^40 does not fit the spoke's i32, which saturates.
        let hub = json!({"spec": {"replicas": 1_099_511_627_776_i64}});
        let round_trip = json!({"spec": {"replicas": 2_147_483_647}});
        let fields = lost(&hub, &round_trip);
        let mut untouched = round_trip.clone();
        restore(&mut untouched, &fields);
        assert_eq!(untouched, hub);
        let mut edited = json!({"spec": {"replicas": 5}});
        restore(&mut edited, &fields);
        assert_eq!(edited, json!({"spec": {"replicas": 5}}));
    }

    #[test]
    fn list_items_are_compared_one_by_one_and_a_removed_item_is_not_recreated() {
        let hub = json!({"spec": {"ports": [{"port": 80, "name": "http"}, {"port": 443, "name": "https"}]}});
        let round_trip = json!({"spec": {"ports": [{"port": 80}, {"port": 443}]}});
        let fields = lost(&hub, &round_trip);
        assert_eq!(fields.len(), 2);
        assert_eq!(fields[1].path, "/spec/ports/1/name");
        let mut one_left = json!({"spec": {"ports": [{"port": 80}]}});
        restore(&mut one_left, &fields);
        assert_eq!(one_left, json!({"spec": {"ports": [{"port": 80, "name": "http"}]}}));
    }

    #[test]
    fn keys_with_slashes_and_tildes_round_trip_through_their_pointers() {
        let hub = json!({"metadata": {"labels": {"example.com/a~b": "x"}}});
        let round_trip = json!({"metadata": {"labels": {}}});
        let fields = lost(&hub, &round_trip);
        assert_eq!(fields[0].path, "/metadata/labels/example.com~1a~0b");
        let mut back = round_trip.clone();
        restore(&mut back, &fields);
        assert_eq!(back, hub);
    }

    #[test]
    fn the_annotation_is_taken_out_and_put_in() {
        let mut object = json!({"metadata": {"name": "a"}});
        set_annotation(&mut object, "example.com/conversion-data", "{}".into());
        assert_eq!(object["metadata"]["annotations"]["example.com/conversion-data"], "{}");
        assert_eq!(take_annotation(&mut object, "example.com/conversion-data"), Some(json!("{}")));
        assert_eq!(object, json!({"metadata": {"name": "a"}}));
    }
}
