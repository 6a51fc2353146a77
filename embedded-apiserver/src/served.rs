//! An object as it is served, and the `metadata` of a list: what every representation (plain
//! JSON and `PartialObjectMetadata` in `render.rs`, tables in `table.rs`, watch events in
//! `watch.rs`) builds on. Its own module so that `render.rs` can call `table.rs` without
//! `table.rs` reaching back into `render.rs`.

use std::borrow::Cow;

use serde_json::{Map, Value, json};

use crate::catalog::ApiResource;

/// `obj` as served at `resource`'s version.
pub(crate) fn served<'a>(obj: &'a Value, resource: &ApiResource) -> Cow<'a, Value> {
    let api_version = resource.api_version();
    if obj.get("apiVersion").and_then(Value::as_str) == Some(api_version.as_str()) {
        return Cow::Borrowed(obj);
    }
    let mut owned = obj.clone();
    if let Value::Object(map) = &mut owned {
        map.insert("apiVersion".into(), Value::String(api_version));
    }
    Cow::Owned(owned)
}

/// `PartialObjectMetadata` of an object.
pub(crate) fn partial_metadata(obj: &Value, api_version: &str) -> Value {
    let metadata = obj.get("metadata").cloned().unwrap_or_else(|| json!({}));
    json!({"kind": "PartialObjectMetadata", "apiVersion": api_version, "metadata": metadata})
}

/// The `metadata` of a list.
#[derive(Debug, Default)]
pub(crate) struct ListMeta {
    pub(crate) resource_version: String,
    pub(crate) continue_token: Option<String>,
    pub(crate) remaining: Option<u64>,
}

impl ListMeta {
    pub(crate) fn to_json(&self) -> Value {
        let mut meta = Map::new();
        meta.insert("resourceVersion".into(), json!(self.resource_version));
        if let Some(token) = &self.continue_token {
            meta.insert("continue".into(), json!(token));
        }
        if let Some(remaining) = self.remaining {
            meta.insert("remainingItemCount".into(), json!(remaining));
        }
        Value::Object(meta)
    }
}
