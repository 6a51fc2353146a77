//! Server-side printing: `meta.k8s.io` `Table`s, as kubectl asks for them.
//!
//! Built-in types get their kube-apiserver printer's columns where this server has it (see
//! `printers.rs`), else the generic table convertor's (`Name`, `Created At`); custom resources
//! get `Name` plus their CRD's `additionalPrinterColumns` (or `Age` when it has none), evaluated
//! with simple `JSONPath` (`.a.b`, `.a[0]`, `.a[?(@.type=="Ready")].b`).

use serde_json::{Map, Value, json};

use crate::catalog::{ApiResource, PrinterColumn};
use crate::printers::{CREATED_DESCRIPTION, NAME_DESCRIPTION, printer};
use crate::served::{ListMeta, partial_metadata, served};
use crate::util::{human_duration, parse_rfc3339, unix_now};

/// What a table row carries as its `object` (`includeObject`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Include {
    None,
    Metadata,
    Object,
}

/// A `Table` of `rows`; `headers: false` leaves `columnDefinitions` null (the later events of
/// a table watch).
pub(crate) fn table(
    resource: &ApiResource,
    rows: &[&Value],
    api_version: &str,
    include: Include,
    headers: bool,
    meta: &ListMeta,
) -> Value {
    let crd = resource.crd.is_some();
    let builtin = printer(resource);
    let columns = match (&builtin, headers) {
        (_, false) => Value::Null,
        (Some(builtin), true) => Value::Array(builtin.column_definitions()),
        (None, true) => Value::Array(column_definitions(resource)),
    };
    let rows: Vec<Value> = rows
        .iter()
        .map(|obj| {
            let cells = match &builtin {
                Some(builtin) => builtin.cells(obj),
                None if crd || !resource.columns.is_empty() => crd_cells(obj, &resource.columns),
                None => generic_cells(obj),
            };
            let object = match include {
                Include::None => Value::Null,
                Include::Metadata => partial_metadata(obj, api_version),
                Include::Object => served(obj, resource).into_owned(),
            };
            json!({"cells": cells, "object": object})
        })
        .collect();
    json!({
        "kind": "Table",
        "apiVersion": api_version,
        "metadata": meta.to_json(),
        "columnDefinitions": columns,
        "rows": rows,
    })
}

fn column_definitions(resource: &ApiResource) -> Vec<Value> {
    let column = |name: &str, type_: &str, format: &str, description: &str, priority: i64| {
        json!({"name": name, "type": type_, "format": format, "description": description,
               "priority": priority})
    };
    let mut columns = vec![column("Name", "string", "name", NAME_DESCRIPTION, 0)];
    if resource.crd.is_none() && resource.columns.is_empty() {
        columns.push(column("Created At", "date", "", CREATED_DESCRIPTION, 0));
        return columns;
    }
    for c in &resource.columns {
        let description = if c.description.is_empty() {
            format!("Custom resource definition column (in JSONPath format): {}", c.json_path)
        } else {
            c.description.clone()
        };
        columns.push(column(&c.name, &c.type_, &c.format, &description, c.priority));
    }
    columns
}

/// `Name` and `Created At` (RFC 3339, Go's zero time when unset).
fn generic_cells(obj: &Value) -> Value {
    let meta = obj.get("metadata");
    let name = meta.and_then(|m| m.get("name")).cloned().unwrap_or_else(|| json!(""));
    let created = meta.and_then(|m| m.get("creationTimestamp")).and_then(Value::as_str);
    json!([name, created.unwrap_or("0001-01-01T00:00:00Z")])
}

/// `Name` and one cell per printer column, typed as the CRD convertor types them.
fn crd_cells(obj: &Value, columns: &[PrinterColumn]) -> Value {
    let name = obj.get("metadata").and_then(|m| m.get("name")).cloned();
    let mut cells = vec![name.unwrap_or_else(|| json!(""))];
    for column in columns {
        let value = json_path(obj, &column.json_path);
        cells.push(value.map_or(Value::Null, |v| cell(&column.type_, v)));
    }
    Value::Array(cells)
}

/// `cellForJSONValue` of the CRD table convertor.
fn cell(type_: &str, value: &Value) -> Value {
    match (type_, value) {
        ("integer", Value::Number(n)) => n
            .as_i64()
            .map(Value::from)
            .or_else(|| n.as_f64().map(|f| json!(f.trunc())))
            .unwrap_or(Value::Null),
        ("number", Value::Number(n)) => n.as_f64().map_or(Value::Null, Value::from),
        ("boolean", Value::Bool(b)) => Value::Bool(*b),
        ("string", Value::String(s)) => Value::String(s.clone()),
        // JSONPath prints other values as their JSON text.
        ("string", Value::Null) => Value::Null,
        ("string", other) => Value::String(other.to_string()),
        ("date", Value::String(s)) => match parse_rfc3339(s) {
            Some(t) => Value::String(human_duration(unix_now() - t)),
            None => Value::String("<invalid>".into()),
        },
        _ => Value::Null,
    }
}

/// Evaluates a simple `JSONPath` (`.a.b`, `.a[0].b`, `.a[?(@.k=="v")].b`); `None` if missing.
pub(crate) fn json_path<'v>(obj: &'v Value, path: &str) -> Option<&'v Value> {
    let path = path.trim().trim_start_matches('{').trim_end_matches('}').trim();
    let path = path.strip_prefix('$').unwrap_or(path);
    let mut current = obj;
    for segment in split_path(path) {
        let (name, selectors) = match segment.find('[') {
            Some(i) => (&segment[..i], &segment[i..]),
            None => (segment, ""),
        };
        if !name.is_empty() {
            current = current.get(name)?;
        }
        let mut rest = selectors;
        while let Some(open) = rest.strip_prefix('[') {
            let close = open.find(']')?;
            current = select(current, &open[..close])?;
            rest = &open[close + 1..];
        }
    }
    Some(current)
}

/// Splits a path on the dots outside brackets.
fn split_path(path: &str) -> Vec<&str> {
    let mut segments = Vec::new();
    let (mut depth, mut start) = (0_i32, 0);
    for (i, c) in path.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            '.' if depth == 0 => {
                segments.push(&path[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    segments.push(&path[start..]);
    segments.into_iter().filter(|s| !s.is_empty()).collect()
}

/// One bracket selector: an index or an `?(@.field=="value")` filter (first match).
fn select<'v>(value: &'v Value, selector: &str) -> Option<&'v Value> {
    let items = value.as_array()?;
    if let Some(filter) = selector.strip_prefix("?(@.").and_then(|f| f.strip_suffix(')')) {
        let (field, expected) = filter.split_once("==")?;
        let expected = expected.trim().trim_matches(|c| c == '"' || c == '\'');
        return items.iter().find(|item| {
            json_path(item, field.trim()).is_some_and(|v| match v {
                Value::String(s) => s == expected,
                other => *other.to_string() == *expected,
            })
        });
    }
    let index: i64 = selector.trim().parse().ok()?;
    let len = i64::try_from(items.len()).ok()?;
    let index = if index < 0 { len + index } else { index };
    items.get(usize::try_from(index).ok()?)
}

/// Printer columns from a CRD version's `additionalPrinterColumns` (`Age` when there are none).
pub(crate) fn printer_columns(version: &Value) -> Vec<PrinterColumn> {
    let declared = version.get("additionalPrinterColumns").and_then(Value::as_array);
    let text = |c: &Map<String, Value>, k: &str| {
        c.get(k).and_then(Value::as_str).unwrap_or_default().to_owned()
    };
    let columns: Vec<PrinterColumn> = declared
        .into_iter()
        .flatten()
        .filter_map(Value::as_object)
        .map(|c| PrinterColumn {
            name: text(c, "name"),
            type_: text(c, "type"),
            format: text(c, "format"),
            description: text(c, "description"),
            priority: c.get("priority").and_then(Value::as_i64).unwrap_or(0),
            json_path: text(c, "jsonPath"),
        })
        .collect();
    if !columns.is_empty() {
        return columns;
    }
    vec![PrinterColumn {
        name: "Age".into(),
        type_: "date".into(),
        format: String::new(),
        description: CREATED_DESCRIPTION.into(),
        priority: 0,
        json_path: ".metadata.creationTimestamp".into(),
    }]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{Catalog, ResourceType};

    #[test]
    fn json_paths_of_printer_columns() {
        let obj = json!({"spec": {"replicas": 3, "items": ["a", "b"]},
                         "status": {"conditions": [{"type": "Synced", "status": "False"},
                                                   {"type": "Ready", "status": "True"}]}});
        assert_eq!(json_path(&obj, ".spec.replicas"), Some(&json!(3)));
        assert_eq!(json_path(&obj, "{.spec.items[1]}"), Some(&json!("b")));
        assert_eq!(json_path(&obj, ".spec.items[-1]"), Some(&json!("b")));
        assert_eq!(
            json_path(&obj, r#".status.conditions[?(@.type=="Ready")].status"#),
            Some(&json!("True"))
        );
        assert_eq!(json_path(&obj, ".spec.missing"), None);
    }

    #[test]
    fn generic_and_crd_tables() {
        let catalog = Catalog::builtin();
        // Deployments have no printer here: the generic convertor's columns.
        let pods = catalog.find("apps", "v1", "deployments").unwrap();
        let pod = json!({"metadata": {"name": "a", "creationTimestamp": "2024-01-01T00:00:00Z", "resourceVersion": "3"}});
        let t =
            table(&pods, &[&pod], "meta.k8s.io/v1", Include::Metadata, true, &ListMeta::default());
        assert_eq!(t["columnDefinitions"][1]["name"], "Created At");
        assert_eq!(t["rows"][0]["cells"], json!(["a", "2024-01-01T00:00:00Z"]));
        assert_eq!(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");
        let t = table(&pods, &[&pod], "meta.k8s.io/v1", Include::None, false, &ListMeta::default());
        assert_eq!(
            (t["columnDefinitions"].clone(), t["rows"][0]["object"].clone()),
            (Value::Null, Value::Null)
        );

        let mut crontabs =
            ApiResource::custom(ResourceType::new("x.io", "v1", "CronTab", "crontabs", true));
        crontabs.crd = Some("crontabs.x.io".into());
        let version = json!({"additionalPrinterColumns": [
            {"name": "Spec", "type": "string", "jsonPath": ".spec.cronSpec"},
            {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"}]});
        crontabs.columns = printer_columns(&version);
        let ct =
            json!({"metadata": {"name": "c"}, "spec": {"cronSpec": "* * * * */5", "replicas": 2}});
        let t =
            table(&crontabs, &[&ct], "meta.k8s.io/v1", Include::Object, true, &ListMeta::default());
        assert_eq!(t["rows"][0]["cells"], json!(["c", "* * * * */5", 2]));
        assert_eq!(t["columnDefinitions"][2]["name"], "Replicas");
        assert_eq!(printer_columns(&json!({}))[0].name, "Age");
    }
}
