//! The list verb: resourceVersion semantics, pagination and continue tokens.
//!
//! The rules are kube-apiserver 1.37's (checked against it by the workspace's conformance
//! tests), where a list is served either by the watch cache or by etcd:
//!
//! | resourceVersion | match | limit | served |
//! |---|---|---|---|
//! | `""` | – | any | current state, paginated |
//! | `"0"` (by default) | – / `NotOlderThan` | ignored | current state, all at once (the watch cache ignores `limit`) |
//! | `"0"` with [`paginate_cached_lists`](crate::Config::paginate_cached_lists) | – / `NotOlderThan` | any | current state, paginated (not kube-apiserver's rule: see below) |
//! | `N` | `NotOlderThan`, or – without limit | any | current state; `N` in the future: 504 |
//! | `N` (any match) in the future | | | 504 `Timeout`, cause `ResourceVersionTooLarge` |
//! | `N` | `Exact`, or – with limit | any | the state at `N` (a snapshot); compacted: 410 |
//!
//! A page is cut after `limit` items when more objects follow in the listed scope (matching the
//! selectors or not, as the storage pages before it filters); its continue token encodes the list's
//! resourceVersion and the last key, in the API server's format (base64 of
//! `{"v":"meta.k8s.io/v1","rv":N,"start":"<key>\u0000"}`), so every page of a list reads the
//! same snapshot. A token whose version has been compacted gets `410 Expired` with a fresh
//! token in `metadata.continue` that resumes from the current state, as etcd's store does.
//!
//! [`Config::paginate_cached_lists`](crate::Config::paginate_cached_lists) (off by default;
//! switched at run time by [`ServerHandle::set_paginate_cached_lists`](crate::ServerHandle::set_paginate_cached_lists))
//! makes `"0"` lists paged like `""` ones: first page at the current version, continue tokens
//! with that version. kube-apiserver's cache pages every list it serves but those at `"0"`
//! (`computeListLimit` in its cacher), and since `ListFromCacheSnapshot` (1.33, KEP-4988) it
//! serves the continuations from snapshots of itself; the option models a server that pages
//! `"0"` lists too, for benchmarks of clients that meet pages where they asked for them.

use serde_json::{Value, json};

use crate::catalog::ApiResource;
use crate::query::{Filter, ListParams, RvMatch};
use crate::served::ListMeta;
use crate::state::State;
use crate::status::ApiError;
use crate::storage::Object;
use crate::util::{base64_decode, base64_encode};

/// What the list read and where the next page starts.
pub(crate) struct Page {
    pub(crate) items: Vec<Object>,
    pub(crate) meta: ListMeta,
}

/// Lists `resource` (in `namespace`, for a namespaced resource listed in one).
pub(crate) fn list(
    state: &State,
    resource: &ApiResource,
    namespace: Option<&str>,
    params: &ListParams,
) -> Result<Page, ApiError> {
    let store = &state.store;
    let (current, compacted) = (store.resource_version(), store.compacted());
    let prefix = namespace.map(|ns| format!("{ns}/")).unwrap_or_default();
    let expired_snapshot =
        || ApiError::expired("The resourceVersion for the provided list is too old.");

    // (version read, first key, page size)
    let (at, start, limit) = if let Some(token) = &params.continue_token {
        if !matches!(params.resource_version.as_str(), "" | "0") {
            let message = "specifying resource version is not allowed when using continue";
            return Err(ApiError::bad_request(message));
        }
        let (rv, start) = decode_continue(token, &prefix)?;
        let at = match u64::try_from(rv) {
            Err(_) => current,
            Ok(rv) if rv > current => {
                return Err(ApiError::bad_request(
                    "invalid continue token: continue key is not valid",
                ));
            }
            Ok(rv) if rv < compacted => {
                let mut error = ApiError::expired(
                    "The provided continue parameter is too old to display a consistent list \
                     result. You can start a new list without the continue parameter, or use the \
                     continue token in this response to retrieve the remainder of the results. \
                     Continuing with the provided token results in an inconsistent list - objects \
                     that were created, modified, or deleted between the time the first chunk was \
                     returned and now may show up in the list.",
                );
                error.continue_token = Some(encode_continue(-1, &start, &prefix));
                return Err(error);
            }
            Ok(rv) => rv,
        };
        (at, start, params.limit)
    } else {
        match params.parsed_version()? {
            None => (current, prefix.clone(), params.limit),
            Some(n) if n > current => {
                return Err(ApiError::too_large_resource_version(n, current));
            }
            // Served by the watch cache, which ignores the limit; unless this server pages
            // such lists, as the cache pages its other lists: from the current state, the
            // token carrying that version so the next pages read the same snapshot.
            Some(0) => {
                let limit = params.limit.filter(|_| state.paginate_cached_lists);
                (current, prefix.clone(), limit)
            }
            Some(n) => {
                // Exact, or the legacy "exact when paginated" of an unset match.
                let exact = match params.resource_version_match {
                    Some(RvMatch::Exact) => true,
                    Some(RvMatch::NotOlderThan) => false,
                    None => params.limit.is_some(),
                };
                if exact && n < compacted {
                    return Err(expired_snapshot());
                }
                (if exact { n } else { current }, prefix.clone(), params.limit)
            }
        }
    };

    let filter = Filter::new(namespace, params);
    let snapshot;
    let candidates: Box<dyn Iterator<Item = (&String, &Object)>> = if at >= current {
        Box::new(store.range(&resource.storage, &start))
    } else {
        snapshot = store.snapshot(&resource.storage, at);
        let from = snapshot.partition_point(|(k, _)| *k < start);
        Box::new(snapshot[from..].iter().map(|(k, o)| (k, o)))
    };
    let mut in_scope = candidates.take_while(|(k, _)| k.starts_with(&prefix));

    let mut items = Vec::new();
    let mut last_key = None;
    for (key, obj) in in_scope.by_ref() {
        if !filter.matches(obj) {
            continue;
        }
        items.push(Object::clone(obj));
        if limit.is_some_and(|l| items.len() as u64 >= l) {
            last_key = Some(key);
            break;
        }
    }
    let mut continue_token = None;
    let mut remaining = None;
    if let Some(key) = last_key {
        // Whether more follows counts every object in scope, matching or not: the storage
        // pages by key before it filters, so a full page of a selective list carries a token
        // even when nothing after it matches.
        let rest = in_scope.count() as u64;
        if rest > 0 {
            let rv = i64::try_from(at).unwrap_or(i64::MAX);
            continue_token = Some(encode_continue(rv, &format!("{key}\u{0}"), &prefix));
            remaining = filter.selects_everything().then_some(rest);
        }
    }
    let meta = ListMeta { resource_version: at.to_string(), continue_token, remaining };
    Ok(Page { items, meta })
}

/// Encodes a continue token; `start` is a full key and is stored relative to `prefix`.
fn encode_continue(rv: i64, start: &str, prefix: &str) -> String {
    let relative = start.strip_prefix(prefix).unwrap_or(start);
    let token = json!({"v": "meta.k8s.io/v1", "rv": rv, "start": relative});
    base64_encode(token.to_string().as_bytes(), true)
}

/// Decodes a continue token into its version (`-1`: the current state) and full start key.
fn decode_continue(token: &str, prefix: &str) -> Result<(i64, String), ApiError> {
    let invalid = |why: &str| ApiError::bad_request(format!("invalid continue token: {why}"));
    let bytes = base64_decode(token)
        .ok_or_else(|| invalid("continue key is not valid: illegal base64 data"))?;
    let value: Value = serde_json::from_slice(&bytes)
        .map_err(|e| invalid(&format!("continue key is not valid: {e}")))?;
    if value.get("v").and_then(Value::as_str) != Some("meta.k8s.io/v1") {
        return Err(invalid("server does not recognize this encoded version"));
    }
    let rv = value.get("rv").and_then(Value::as_i64).unwrap_or(0);
    if rv == 0 {
        return Err(invalid(
            "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
        ));
    }
    let start = value.get("start").and_then(Value::as_str).unwrap_or_default();
    if start.is_empty() {
        return Err(invalid(
            "continue key is not valid: encoded start key empty (version meta.k8s.io/v1)",
        ));
    }
    if start.split('/').any(|part| part == ".." || part == ".") || start.starts_with('/') {
        return Err(invalid(&format!("continue key is not valid: {start}")));
    }
    Ok((rv, format!("{prefix}{start}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continue_tokens_round_trip_in_the_api_server_format() {
        let token = encode_continue(12, "ns/web-0\u{0}", "ns/");
        let json = String::from_utf8(base64_decode(&token).unwrap()).unwrap();
        assert_eq!(json, r#"{"rv":12,"start":"web-0\u0000","v":"meta.k8s.io/v1"}"#);
        assert_eq!(decode_continue(&token, "ns/").unwrap(), (12, "ns/web-0\u{0}".to_owned()));
        assert_eq!(decode_continue(&token, "").unwrap(), (12, "web-0\u{0}".to_owned()));
        assert_eq!(decode_continue("!!", "").unwrap_err().code, 400);
        let traversal = base64_encode(br#"{"v":"meta.k8s.io/v1","rv":3,"start":"../x"}"#, true);
        assert_eq!(decode_continue(&traversal, "ns/").unwrap_err().code, 400);
    }
}
