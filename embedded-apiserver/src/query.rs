//! Query parameters of list, watch and write requests, validated as the API server does, and
//! the [`Filter`] a list or watch applies (namespace, label and field selectors).

use informer_runtime::LabelSelector;
use serde_json::Value;

use crate::catalog::ApiResource;
use crate::status::ApiError;
use crate::storage::meta_str;

/// The decoded query string of a request.
#[derive(Debug, Default)]
pub(crate) struct Query {
    pairs: Vec<(String, String)>,
}

impl Query {
    /// Decodes `a=b&c=d` (percent-encoding and `+` for space).
    pub(crate) fn parse(raw: Option<&str>) -> Self {
        let pairs = raw
            .unwrap_or_default()
            .split('&')
            .filter(|p| !p.is_empty())
            .map(|pair| {
                let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
                (decode(k), decode(v))
            })
            .collect();
        Self { pairs }
    }

    /// The first value of a parameter.
    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        self.pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// A boolean parameter, as Go's `strconv.ParseBool` reads it.
    pub(crate) fn bool(&self, name: &str) -> Result<Option<bool>, ApiError> {
        match self.get(name) {
            None => Ok(None),
            Some("1" | "t" | "T" | "true" | "TRUE" | "True") => Ok(Some(true)),
            Some("0" | "f" | "F" | "false" | "FALSE" | "False" | "") => Ok(Some(false)),
            Some(other) => Err(ApiError::bad_request(format!(
                "invalid value for {name}: strconv.ParseBool: parsing {other:?}: invalid syntax"
            ))),
        }
    }

    /// An integer parameter.
    pub(crate) fn int(&self, name: &str) -> Result<Option<i64>, ApiError> {
        match self.get(name).filter(|v| !v.is_empty()) {
            None => Ok(None),
            Some(v) => v.parse().map(Some).map_err(|_| {
                ApiError::bad_request(format!(
                    "invalid value for {name}: strconv.ParseInt: parsing {v:?}: invalid syntax"
                ))
            }),
        }
    }

    /// Whether `dryRun=All` was asked for.
    pub(crate) fn dry_run(&self) -> Result<bool, ApiError> {
        match self.get("dryRun") {
            None | Some("") => Ok(false),
            Some("All") => Ok(true),
            Some(other) => Err(ApiError::bad_request(format!(
                "dryRun: Unsupported value: {other:?}: supported values: \"All\""
            ))),
        }
    }
}

/// The longest label or field selector served, in bytes. kube-apiserver sets no limit of its
/// own besides the URL's; this server does, so that a selector cannot make every list and
/// every watch event cost what thousands of requirements cost (16 KiB still holds a hundred
/// requirements on the longest keys and values labels allow).
pub(crate) const MAX_SELECTOR_BYTES: usize = 16 * 1024;

/// The most requirements a label or field selector may have (the comma-separated terms
/// outside parentheses). Real selectors have a handful.
pub(crate) const MAX_SELECTOR_REQUIREMENTS: usize = 100;

/// Refuses a selector too long or with too many requirements, with 400, before it is parsed.
fn check_selector_size(parameter: &str, selector: &str) -> Result<(), ApiError> {
    if selector.len() > MAX_SELECTOR_BYTES {
        return Err(ApiError::bad_request(format!(
            "{parameter} is {} bytes long: this server takes selectors of at most \
             {MAX_SELECTOR_BYTES} bytes; select with fewer or shorter requirements",
            selector.len()
        )));
    }
    let (mut depth, mut escaped, mut requirements) = (0_usize, false, 1_usize);
    for c in selector.chars() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '(' => depth = depth.saturating_add(1),
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => requirements += 1,
            _ => {}
        }
    }
    if requirements > MAX_SELECTOR_REQUIREMENTS {
        return Err(ApiError::bad_request(format!(
            "{parameter} has {requirements} requirements: this server takes at most \
             {MAX_SELECTOR_REQUIREMENTS}; select with fewer"
        )));
    }
    Ok(())
}

/// Percent-decodes one query component.
fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = |b: u8| char::from(b).to_digit(16);
                match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                    (Some(hi), Some(lo)) => {
                        out.push(u8::try_from(hi * 16 + lo).unwrap_or(b'?'));
                        i += 2;
                    }
                    _ => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `resourceVersionMatch`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RvMatch {
    Exact,
    NotOlderThan,
}

/// The options of a list or watch (metav1 `ListOptions`).
#[derive(Debug, Default)]
pub(crate) struct ListParams {
    pub(crate) label_selector: Option<LabelSelector>,
    pub(crate) field_selector: Vec<FieldRequirement>,
    pub(crate) resource_version: String,
    pub(crate) resource_version_match: Option<RvMatch>,
    pub(crate) limit: Option<u64>,
    pub(crate) continue_token: Option<String>,
    pub(crate) watch: bool,
    pub(crate) allow_watch_bookmarks: bool,
    pub(crate) send_initial_events: Option<bool>,
    pub(crate) timeout_seconds: Option<u64>,
}

impl ListParams {
    /// Decodes and validates the options of a list or watch of `resource`.
    pub(crate) fn parse(
        query: &Query,
        resource: &ApiResource,
        watch: bool,
    ) -> Result<Self, ApiError> {
        let label_selector = match query.get("labelSelector").filter(|s| !s.trim().is_empty()) {
            Some(s) => {
                check_selector_size("labelSelector", s)?;
                Some(LabelSelector::parse(s).map_err(|e| {
                    ApiError::bad_request(format!("unable to parse requirement: {e}"))
                })?)
            }
            None => None,
        };
        let field_selector = match query.get("fieldSelector") {
            Some(s) => {
                check_selector_size("fieldSelector", s)?;
                parse_field_selector(s, resource)?
            }
            None => Vec::new(),
        };
        let watch = watch || query.bool("watch")?.unwrap_or(false);
        let match_text = query.get("resourceVersionMatch").unwrap_or_default();
        let params = Self {
            label_selector,
            field_selector,
            resource_version: query.get("resourceVersion").unwrap_or_default().to_owned(),
            resource_version_match: match match_text {
                "Exact" => Some(RvMatch::Exact),
                "NotOlderThan" => Some(RvMatch::NotOlderThan),
                _ => None,
            },
            limit: query.int("limit")?.and_then(|l| u64::try_from(l).ok()).filter(|&l| l > 0),
            continue_token: query.get("continue").filter(|c| !c.is_empty()).map(str::to_owned),
            watch,
            allow_watch_bookmarks: query.bool("allowWatchBookmarks")?.unwrap_or(false),
            send_initial_events: query.bool("sendInitialEvents")?,
            timeout_seconds: query.int("timeoutSeconds")?.and_then(|t| u64::try_from(t).ok()),
        };
        params.validate(match_text)?;
        Ok(params)
    }

    /// apimachinery's `ValidateListOptions` (1.37), in its order of checks: 422
    /// `ListOptions.meta.k8s.io "" is invalid`.
    ///
    /// A streaming list (`sendInitialEvents`) does not require `allowWatchBookmarks`: without
    /// it, the initial events come without the bookmark that ends them.
    fn validate(&self, match_text: &str) -> Result<(), ApiError> {
        let mut errors: Vec<(&str, &str, String)> = Vec::new();
        let forbidden = |why: &str| format!("Forbidden: {why}");
        let has_match = !match_text.is_empty();
        let unsupported = |supported: &str| {
            format!("Unsupported value: {match_text:?}: supported values: {supported}")
        };
        if self.watch {
            if self.send_initial_events.is_some()
                && self.resource_version_match != Some(RvMatch::NotOlderThan)
            {
                let why = "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan";
                errors.push(("resourceVersionMatch", "FieldValueForbidden", forbidden(why)));
            }
            if has_match {
                if self.send_initial_events.is_none() {
                    let why = "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided";
                    errors.push(("resourceVersionMatch", "FieldValueForbidden", forbidden(why)));
                }
                if self.resource_version_match != Some(RvMatch::NotOlderThan) {
                    let message = unsupported("\"NotOlderThan\"");
                    errors.push(("resourceVersionMatch", "FieldValueNotSupported", message));
                }
                if self.continue_token.is_some() {
                    let why = "resourceVersionMatch is forbidden when continue is provided";
                    errors.push(("resourceVersionMatch", "FieldValueForbidden", forbidden(why)));
                }
            }
        } else {
            if has_match {
                if self.resource_version.is_empty() {
                    let why =
                        "resourceVersionMatch is forbidden unless resourceVersion is provided";
                    errors.push(("resourceVersionMatch", "FieldValueForbidden", forbidden(why)));
                }
                if self.continue_token.is_some() {
                    let why = "resourceVersionMatch is forbidden when continue is provided";
                    errors.push(("resourceVersionMatch", "FieldValueForbidden", forbidden(why)));
                }
                if self.resource_version_match.is_none() {
                    let message = unsupported("\"Exact\", \"NotOlderThan\", \"\"");
                    errors.push(("resourceVersionMatch", "FieldValueNotSupported", message));
                }
                if self.resource_version_match == Some(RvMatch::Exact)
                    && self.resource_version == "0"
                {
                    let why =
                        "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"";
                    errors.push(("resourceVersionMatch", "FieldValueForbidden", forbidden(why)));
                }
            }
            if self.send_initial_events.is_some() {
                let why = "sendInitialEvents is forbidden for list";
                errors.push(("sendInitialEvents", "FieldValueForbidden", forbidden(why)));
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(ApiError::invalid("ListOptions", "meta.k8s.io", "", &errors))
        }
    }

    /// The resourceVersion parameter of a list as a number: `None` for `""`.
    ///
    /// # Errors
    ///
    /// 400 `invalid resource version: ...` when it is not a number, as the list handler
    /// reports it.
    pub(crate) fn parsed_version(&self) -> Result<Option<u64>, ApiError> {
        parse_version(&self.resource_version)
            .map_err(|why| ApiError::bad_request(format!("invalid resource version: {why}")))
    }
}

/// Parses a resourceVersion parameter; `""` is `None`. The error is apimachinery's field
/// error, which handlers wrap differently: a list answers 400 ([`ListParams::parsed_version`]),
/// while a get or a watch passes it up from the storage layer as a plain error, which the API
/// server reports as a 500 without a reason ([`ApiError::internal`]).
pub(crate) fn parse_version(rv: &str) -> Result<Option<u64>, String> {
    if rv.is_empty() {
        return Ok(None);
    }
    rv.parse::<u64>().map(Some).map_err(|_| {
        format!(
            "resourceVersion: Invalid value: {rv:?}: strconv.ParseUint: parsing {rv:?}: invalid syntax"
        )
    })
}

/// One `field=value` or `field!=value` term of a field selector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FieldRequirement {
    pub(crate) field: String,
    pub(crate) equals: bool,
    pub(crate) value: String,
}

/// Parses a field selector as apimachinery's `fields.ParseSelector` does, then converts its
/// labels as kube-apiserver does: accepting the fields every resource has (`metadata.name`,
/// `metadata.namespace`) and those the resource indexes.
///
/// The rules, in apimachinery's order: terms are split on commas not escaped by `\` and sorted;
/// empty terms are skipped; each term is split at its first `!=`, `==` or `=`, whatever
/// follows; the value's only escapes are `\\`, `\,` and `\=`, and a bare `,` or `=` in it is
/// an error. Nothing is trimmed: `metadata.name= a` selects the name ` a`. Syntax errors come
/// before label errors, as apimachinery parses every term before it converts any.
fn parse_field_selector(
    selector: &str,
    resource: &ApiResource,
) -> Result<Vec<FieldRequirement>, ApiError> {
    let mut terms = split_unescaped(selector, ',');
    terms.sort_unstable();
    let mut parsed = Vec::new();
    for term in terms.into_iter().filter(|term| !term.is_empty()) {
        let Some((field, equals, value)) = split_term(term) else {
            return Err(ApiError::bad_request(format!(
                "invalid selector: '{selector}'; can't understand '{term}'"
            )));
        };
        parsed.push((field, equals, unescape(value).map_err(ApiError::bad_request)?));
    }
    parsed
        .into_iter()
        .map(|(field, equals, value)| {
            let field = resource.field_labels.convert(field).map_err(ApiError::bad_request)?;
            Ok(FieldRequirement { field: field.to_owned(), equals, value })
        })
        .collect()
}

/// Splits `term` at its first operator, `!=`, `==` or `=` (the longest where they start
/// alike): the field, whether it is an equality, and the escaped value.
fn split_term(term: &str) -> Option<(&str, bool, &str)> {
    term.char_indices().find_map(|(i, _)| {
        let rest = &term[i..];
        [("!=", false), ("==", true), ("=", true)]
            .into_iter()
            .find(|(op, _)| rest.starts_with(op))
            .map(|(op, equals)| (&term[..i], equals, &rest[op.len()..]))
    })
}

/// Splits on `sep` where it is not escaped by a backslash.
fn split_unescaped(text: &str, sep: char) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut start = 0;
    let mut escaped = false;
    for (i, c) in text.char_indices() {
        match c {
            '\\' if !escaped => escaped = true,
            c if c == sep && !escaped => {
                parts.push(&text[start..i]);
                start = i + c.len_utf8();
            }
            _ => escaped = false,
        }
    }
    parts.push(&text[start..]);
    parts
}

/// Removes a field selector value's escapes (`\,`, `\=`, `\\`), as apimachinery's
/// `fields.UnescapeValue`, with its error messages.
fn unescape(text: &str) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(next @ ('\\' | ',' | '=')) => out.push(next),
                Some(next) => {
                    return Err(format!(
                        "invalid field selector: invalid escape sequence: \\{next}"
                    ));
                }
                None => {
                    return Err("invalid field selector: invalid escape sequence: \\".to_owned());
                }
            },
            // Go formats the rune with `%v`: its code point.
            ',' | '=' => {
                return Err(format!(
                    "invalid field selector: unescaped character in value: {}",
                    u32::from(c)
                ));
            }
            c => out.push(c),
        }
    }
    Ok(out)
}

/// Which objects a list or watch sees: its namespace and selectors.
#[derive(Debug, Default)]
pub(crate) struct Filter {
    /// `None`: all namespaces (or a cluster-scoped resource).
    pub(crate) namespace: Option<String>,
    pub(crate) labels: Option<LabelSelector>,
    pub(crate) fields: Vec<FieldRequirement>,
}

impl Filter {
    /// The filter of a request in `namespace` with these options.
    pub(crate) fn new(namespace: Option<&str>, params: &ListParams) -> Self {
        Self {
            namespace: namespace.filter(|ns| !ns.is_empty()).map(str::to_owned),
            labels: params.label_selector.clone(),
            fields: params.field_selector.clone(),
        }
    }

    /// Whether there are no selectors (the namespace aside).
    pub(crate) fn selects_everything(&self) -> bool {
        self.labels.as_ref().is_none_or(LabelSelector::is_everything) && self.fields.is_empty()
    }

    /// Whether `obj` passes the filter.
    pub(crate) fn matches(&self, obj: &Value) -> bool {
        if self.namespace.as_deref().is_some_and(|ns| meta_str(obj, "namespace") != ns) {
            return false;
        }
        if let Some(selector) = &self.labels {
            let labels = obj.get("metadata").and_then(|m| m.get("labels"));
            let labels = labels
                .and_then(Value::as_object)
                .map(|m| {
                    m.iter()
                        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                        .collect()
                })
                .unwrap_or_default();
            if !selector.matches(&labels) {
                return false;
            }
        }
        self.fields.iter().all(|req| (field_value(obj, &req.field) == req.value) == req.equals)
    }
}

/// The value of a field label: a dotted path into the object, as a string (`""` if absent).
fn field_value(obj: &Value, field: &str) -> String {
    let value = field.split('.').try_fold(obj, |v, part| v.get(part));
    match value {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Bool(b)) => b.to_string(),
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;
    use serde_json::json;

    fn pods() -> std::sync::Arc<ApiResource> {
        Catalog::builtin().find("", "v1", "pods").unwrap()
    }

    #[test]
    fn query_strings_decode() {
        let q = Query::parse(Some("labelSelector=app%3Dweb%2Ctier+in+(a)&watch=1&x"));
        assert_eq!(q.get("labelSelector"), Some("app=web,tier in (a)"));
        assert_eq!(q.bool("watch").unwrap(), Some(true));
        assert_eq!(q.get("x"), Some(""));
        assert_eq!(q.bool("x").unwrap(), Some(false));
        assert!(Query::parse(Some("watch=yes")).bool("watch").is_err());
        assert_eq!(Query::parse(Some("a=%zz%")).get("a"), Some("%zz%"));
    }

    #[test]
    fn list_options_are_validated_as_the_api_server_does() {
        let parse = |q: &str, watch| ListParams::parse(&Query::parse(Some(q)), &pods(), watch);
        let err = parse("resourceVersionMatch=Exact", false).unwrap_err();
        assert_eq!(err.code, 422);
        assert_eq!(
            err.message,
            "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: \
             resourceVersionMatch is forbidden unless resourceVersion is provided"
        );
        assert_eq!(
            parse("resourceVersion=0&resourceVersionMatch=Exact", false).unwrap_err().code,
            422
        );
        assert_eq!(parse("sendInitialEvents=true", false).unwrap_err().code, 422);
        // kube-apiserver 1.37 streams without bookmarks too (and then sends no end bookmark).
        assert!(parse("sendInitialEvents=true&resourceVersionMatch=NotOlderThan", true).is_ok());
        let exact = parse(
            "sendInitialEvents=true&resourceVersionMatch=Exact&allowWatchBookmarks=true",
            true,
        )
        .unwrap_err();
        assert_eq!(exact.causes.len(), 2, "{exact:?}");
        let ok = parse(
            "sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true",
            true,
        )
        .unwrap();
        assert_eq!(ok.send_initial_events, Some(true));
        assert_eq!(parse("labelSelector=a+in+(b", false).unwrap_err().code, 400);
        assert_eq!(
            parse("fieldSelector=spec.foo%3Dx", false).unwrap_err().message,
            "field label not supported: spec.foo"
        );
    }

    /// Found by the `field_selector` fuzz target: the server trimmed spaces, took any escape
    /// and unescaped `=`, and split a term at its first `!=` wherever it was, where
    /// kube-apiserver (apimachinery's `fields.ParseSelector`) does none of that.
    #[test]
    fn field_selectors_are_read_as_apimachinery_reads_them() {
        let parse = |selector: &str| {
            let query =
                format!("fieldSelector={}", selector.replace('=', "%3D").replace(' ', "%20"));
            ListParams::parse(&Query::parse(Some(&query)), &pods(), false)
                .map(|p| p.field_selector)
                .map_err(|e| (e.code, e.message))
        };
        let one = |field: &str, equals, value: &str| {
            vec![FieldRequirement { field: field.to_owned(), equals, value: value.to_owned() }]
        };
        // A value keeps its spaces.
        assert_eq!(parse("metadata.name!= "), Ok(one("metadata.name", false, " ")));
        assert_eq!(parse("metadata.name= a b "), Ok(one("metadata.name", true, " a b ")));
        // The escapes are `\\`, `\,` and `\=`, and no other.
        assert_eq!(parse(r"metadata.name=a\,b\=c\\d"), Ok(one("metadata.name", true, r"a,b=c\d")));
        let invalid_escape = parse(r"metadata.name=a\x").unwrap_err();
        assert_eq!(
            invalid_escape,
            (400, r"invalid field selector: invalid escape sequence: \x".to_owned())
        );
        assert_eq!(
            parse(r"metadata.name=a\").unwrap_err().1,
            r"invalid field selector: invalid escape sequence: \"
        );
        // A bare `=` in a value is refused (kube-apiserver prints the character's code).
        assert_eq!(
            parse("metadata.name==a=b").unwrap_err().1,
            "invalid field selector: unescaped character in value: 61"
        );
        // A term splits at the first operator: here `=`, which leaves `!=b` in the value.
        assert_eq!(
            parse("metadata.name=a!=b").unwrap_err().1,
            "invalid field selector: unescaped character in value: 61"
        );
        // A field is not trimmed either.
        assert_eq!(
            parse(" metadata.name=a").unwrap_err().1,
            "field label not supported:  metadata.name"
        );
        // Empty terms are skipped.
        assert_eq!(parse(",metadata.name=a,"), Ok(one("metadata.name", true, "a")));
    }

    #[test]
    fn filters_match_namespace_labels_and_fields() {
        let params = ListParams::parse(
            &Query::parse(Some("labelSelector=app%3Dweb&fieldSelector=status.phase!%3DFailed,metadata.name%3Dweb-0")),
            &pods(),
            false,
        )
        .unwrap();
        let filter = Filter::new(Some("ns"), &params);
        let pod = |ns: &str, name: &str, app: &str, phase: &str| json!({"metadata": {"namespace": ns, "name": name, "labels": {"app": app}}, "status": {"phase": phase}});
        assert!(filter.matches(&pod("ns", "web-0", "web", "Running")));
        assert!(!filter.matches(&pod("other", "web-0", "web", "Running")));
        assert!(!filter.matches(&pod("ns", "web-0", "db", "Running")));
        assert!(!filter.matches(&pod("ns", "web-0", "web", "Failed")));
        assert!(!filter.matches(&pod("ns", "web-1", "web", "Running")));
        assert!(!filter.selects_everything());
        assert_eq!(split_unescaped(r"a=b\,c,d=e", ','), [r"a=b\,c", "d=e"]);
    }
}
