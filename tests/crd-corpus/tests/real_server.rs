//! The generator against real validation (issue 6): every CRD of `tests/fixtures/crd-corpus` is
//! installed on a private kube-apiserver, and the objects `informer_gen::sample` synthesises from
//! each served version's schema (required-only, all-fields, one per enum value) are created
//! there. The server validates, prunes and defaults them; what it answers, and what a GET reads
//! back, must decode into the generated Rust type and encode back to the same JSON, defaults and
//! metadata included.
//!
//! A sample the server rejects (422) is repaired where taking something out is enough: the fields
//! and list items the server names are dropped, objects and lists with too many entries trimmed,
//! and the create is tried again, so that the rest of the sample still meets the server. Each
//! rule broken is recorded with its kind (pattern, format, CEL, maxProperties, ...).
//!
//! What was sent is compared with what came back: defaults the server added are expected and
//! listed; fields it pruned and values it changed are classified. Rejections, prunings, changes
//! and cross-version differences are pinned in `tests/real_server/pins.tsv`: anything not
//! pinned fails the test, and so does a pin that no longer happens. `UPDATE_PINS=1` rewrites the
//! file from the run instead (review its diff).
//!
//! Then one `SharedInformerFactory`, through `register_custom_resources()` and `for_resource`,
//! runs an informer for every served version of every CRD; each syncs, and each lister holds
//! exactly the objects created for its resource, each equal to what a GET at its version reads.
//!
//! Skipped with one line where Go is absent (see `informer_tests::kube_apiserver`); a missing
//! corpus fails the build of the crate instead.

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    reason = "in a test, a failed expect is a failed assertion"
)]

mod real {
    use std::collections::{BTreeMap, BTreeSet};
    use std::fmt::{self, Write as _};
    use std::marker::PhantomData;
    use std::path::{Path, PathBuf};
    use std::time::{Duration, Instant};

    use futures::future::BoxFuture;
    use futures::{StreamExt as _, stream};
    use informer_client::{Client, ClientError};
    use informer_crd_corpus::corpus::CustomResourceInformers as _;
    use informer_gen::sample;
    use informer_runtime::factory::GenericInformer;
    use informer_runtime::listwatch::Status;
    use informer_runtime::{GroupVersionResource, LabelSelector, Resource, SharedInformerFactory};
    use informer_tests::kube_apiserver::KubeApiServer;
    use k8s_openapi::api::core::v1::Namespace;
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use serde::de::Error as _;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use serde_json::{Map, Value, json};

    /// How long one wait may take (a CRD to be established and served, informers to sync): the
    /// largest CRDs of the corpus take the server seconds to compile on a loaded machine.
    const DEADLINE: Duration = Duration::from_secs(180);

    /// How many resource versions have their samples created at once.
    const CONCURRENCY: usize = 4;

    /// How many times a rejected sample is repaired and sent again before it counts as rejected.
    const REPAIRS: usize = 20;

    /// The pinned findings, relative to this package.
    const PINS: &str = "tests/real_server/pins.tsv";

    // ---------------------------------------------------------------------------------------
    // The wire: objects as the server's JSON, and the generated types.

    /// An object of `K`'s resource kept as the JSON that went over the wire, untouched by any
    /// Rust type: what the sampler made, and what the server answered, exactly. Its metadata is
    /// decoded alongside only because the client's `Resource` bound asks for it.
    struct Raw<K> {
        json: Value,
        metadata: ObjectMeta,
        kind: PhantomData<fn() -> K>,
    }

    impl<K> Raw<K> {
        fn new(json: Value) -> Result<Self, serde_json::Error> {
            let metadata = json.get("metadata").cloned().unwrap_or_else(|| json!({}));
            let metadata = serde_json::from_value(metadata)?;
            Ok(Self { json, metadata, kind: PhantomData })
        }
    }

    impl<K> Clone for Raw<K> {
        fn clone(&self) -> Self {
            Self { json: self.json.clone(), metadata: self.metadata.clone(), kind: PhantomData }
        }
    }

    impl<K: Resource> Resource for Raw<K> {
        const API_VERSION: &'static str = K::API_VERSION;
        const GROUP: &'static str = K::GROUP;
        const VERSION: &'static str = K::VERSION;
        const KIND: &'static str = K::KIND;
        const PLURAL: &'static str = K::PLURAL;
        type Scope = K::Scope;
    }

    impl<K: Resource> informer_runtime::Object for Raw<K> {
        fn meta(&self) -> &ObjectMeta {
            &self.metadata
        }

        // Nothing here changes metadata (no transforms); the JSON is what is sent.
        fn meta_mut(&mut self) -> &mut ObjectMeta {
            &mut self.metadata
        }
    }

    // The whole object, as JSON: what `Client::create` sends.
    impl<K: Resource> informer_runtime::resource::WholeObject for Raw<K> {}

    impl<K> Serialize for Raw<K> {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            self.json.serialize(serializer)
        }
    }

    impl<'de, K> Deserialize<'de> for Raw<K> {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            Self::new(Value::deserialize(deserializer)?).map_err(D::Error::custom)
        }
    }

    /// Why a request failed: the server's status, or something else.
    #[derive(Debug)]
    enum Failure {
        Api(Status),
        Other(String),
    }

    impl From<ClientError> for Failure {
        fn from(error: ClientError) -> Self {
            match error.status() {
                Some(status) => Self::Api(status.clone()),
                None => Self::Other(error.to_string()),
            }
        }
    }

    impl fmt::Display for Failure {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            match self {
                Self::Api(status) => {
                    write!(f, "{} {}: {}", status.code, status.reason, status.message)
                }
                Self::Other(message) => f.write_str(message),
            }
        }
    }

    type Answer = BoxFuture<'static, Result<Value, Failure>>;
    type Done = BoxFuture<'static, Result<(), Failure>>;

    /// One generated type and the generic code the test runs on it.
    struct Generated {
        file: &'static str,
        version: &'static str,
        gvr: GroupVersionResource,
        namespaced: bool,
        /// Decodes JSON into the generated type and encodes the value back.
        typed: fn(&Value) -> Result<Value, String>,
        /// Creates an object from its JSON; the server's answer.
        create: fn(Client, Option<String>, Value) -> Answer,
        /// Reads an object at this version.
        get: fn(Client, Option<String>, String) -> Answer,
        /// Deletes an object.
        delete: fn(Client, Option<String>, String) -> Done,
    }

    fn generated<K: Resource>(file: &'static str, version: &'static str) -> Generated {
        Generated {
            file,
            version,
            gvr: GroupVersionResource::of::<K>(),
            namespaced: informer_runtime::resource::is_namespaced::<K>(),
            typed: typed::<K>,
            create: create::<K>,
            get: get::<K>,
            delete: delete::<K>,
        }
    }

    fn typed<K: Resource>(json: &Value) -> Result<Value, String> {
        let value: K = serde_path_to_error::deserialize(json)
            .map_err(|e| format!("decode: {}: {}", e.path(), e.inner()))?;
        serde_json::to_value(&value).map_err(|e| format!("encode: {e}"))
    }

    fn create<K: Resource>(client: Client, namespace: Option<String>, object: Value) -> Answer {
        Box::pin(async move {
            let raw = Raw::<K>::new(object).map_err(|e| Failure::Other(e.to_string()))?;
            Ok(client.create(namespace.as_deref(), &raw).await?.json)
        })
    }

    /// A GET, tried again (up to three times in all) when no answer came: a server busy
    /// compiling 128 CRDs' schemas on a loaded machine has let one go unanswered for the client's
    /// whole read deadline. An answer, even an error status, is final.
    fn get<K: Resource>(client: Client, namespace: Option<String>, name: String) -> Answer {
        Box::pin(async move {
            let mut attempt = 1;
            loop {
                match client.get::<Raw<K>>(namespace.as_deref(), &name).await {
                    Ok(read) => return Ok(read.json),
                    Err(error) if error.status().is_none() && attempt < 3 => attempt += 1,
                    Err(error) => return Err(error.into()),
                }
            }
        })
    }

    fn delete<K: Resource>(client: Client, namespace: Option<String>, name: String) -> Done {
        Box::pin(async move { Ok(client.delete::<Raw<K>>(namespace.as_deref(), &name).await?) })
    }

    macro_rules! generated_types {
        ($(($file:literal, $version:literal, $ty:ty)),* $(,)?) => {
            /// Every type the build script generated.
            fn generated_types() -> Vec<Generated> {
                vec![$(generated::<$ty>($file, $version)),*]
            }
        };
    }

    informer_crd_corpus::with_resources!(generated_types);

    // ---------------------------------------------------------------------------------------
    // The corpus.

    /// One CRD file: the manifest as JSON (to install it and to read its schemas) and as
    /// informer-gen reads it (to synthesise samples).
    struct Crd {
        file: String,
        json: Value,
        loaded: informer_gen::schema::crd::CustomResourceDefinition,
    }

    impl Crd {
        fn name(&self) -> &str {
            self.json["metadata"]["name"].as_str().unwrap_or_default()
        }

        fn versions(&self) -> &[Value] {
            self.json["spec"]["versions"].as_array().map_or(&[], Vec::as_slice)
        }

        fn version(&self, name: &str) -> Option<&Value> {
            self.versions().iter().find(|v| v["name"] == name)
        }

        fn served(&self, version: &str) -> bool {
            self.version(version).is_some_and(|v| v["served"] == true)
        }

        fn storage_version(&self) -> &str {
            self.versions()
                .iter()
                .find(|v| v["storage"] == true)
                .and_then(|v| v["name"].as_str())
                .unwrap_or_default()
        }

        fn schema(&self, version: &str) -> &Value {
            self.version(version).map_or(&Value::Null, |v| &v["schema"]["openAPIV3Schema"])
        }

        fn has_status_subresource(&self, version: &str) -> bool {
            self.version(version).is_some_and(|v| v["subresources"].get("status").is_some())
        }

        /// The manifest to install: the spec, and of the metadata only what the server reads
        /// (the name, and annotations such as `api-approved.kubernetes.io` that protected groups
        /// need). Conversion webhooks are not running here, so versions convert by their
        /// `apiVersion` only (`strategy: None`).
        fn manifest(&self) -> Value {
            let mut metadata = Map::new();
            for key in ["name", "labels", "annotations"] {
                if let Some(value) = self.json["metadata"].get(key) {
                    metadata.insert(key.to_owned(), value.clone());
                }
            }
            let mut spec = self.json["spec"].clone();
            if spec.get("conversion").is_some() {
                spec["conversion"] = json!({"strategy": "None"});
            }
            json!({
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "metadata": metadata,
                "spec": spec,
            })
        }
    }

    /// The corpus, part of the repository: a missing directory fails the test, naming the path.
    fn corpus() -> PathBuf {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fixtures/crd-corpus");
        assert!(dir.is_dir(), "the CRD corpus {} is absent", dir.display());
        dir
    }

    fn load(dir: &Path) -> Vec<Crd> {
        informer_gen::schema::load(&[dir])
            .unwrap()
            .into_iter()
            .map(|loaded| {
                let text = std::fs::read_to_string(&loaded.file).unwrap();
                let json: Value = serde_yaml_ng::from_str(&text).unwrap();
                let file = loaded.file.file_name().unwrap().to_string_lossy().into_owned();
                Crd { file, json, loaded: loaded.crd }
            })
            .collect()
    }

    // ---------------------------------------------------------------------------------------
    // Paths and schemas.

    #[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
    enum Segment {
        Key(String),
        Index(usize),
    }

    /// `spec.ports[*].name`: indexes left out, so that findings group across list items.
    fn show(path: &[Segment]) -> String {
        let mut text = String::new();
        for segment in path {
            match segment {
                Segment::Key(key) => {
                    if !text.is_empty() {
                        text.push('.');
                    }
                    text.push_str(key);
                }
                Segment::Index(_) => text.push_str("[*]"),
            }
        }
        text
    }

    /// A field path as the server writes it (`spec.rules[0].matches[key]`).
    fn parse_path(field: &str) -> Vec<Segment> {
        let mut path = Vec::new();
        let mut key = String::new();
        let mut chars = field.chars();
        while let Some(c) = chars.next() {
            match c {
                '.' | '[' => {
                    if !key.is_empty() {
                        path.push(Segment::Key(std::mem::take(&mut key)));
                    }
                    if c == '[' {
                        let inner: String = chars.by_ref().take_while(|c| *c != ']').collect();
                        path.push(inner.parse().map_or(Segment::Key(inner), Segment::Index));
                    }
                }
                _ => key.push(c),
            }
        }
        if !key.is_empty() {
            path.push(Segment::Key(key));
        }
        path
    }

    /// A path as `json_diff` writes it, with indexes left out as in [`show`].
    fn without_indexes(path: &str) -> String {
        show(&parse_path(path))
    }

    /// The schema of the value at `path`.
    fn schema_at<'a>(schema: &'a Value, path: &[Segment]) -> Option<&'a Value> {
        let Some((first, rest)) = path.split_first() else { return Some(schema) };
        let next = match first {
            Segment::Index(_) => schema.get("items")?,
            Segment::Key(key) => schema["properties"]
                .get(key)
                .or_else(|| schema.get("additionalProperties").filter(|a| a.is_object()))?,
        };
        schema_at(next, rest)
    }

    /// Whether pruning keeps `path` under `schema`: a property, an `additionalProperties` entry,
    /// or anything under a node that preserves unknown fields; `apiVersion`, `kind` and
    /// `metadata` of embedded resources.
    fn keeps(schema: &Value, path: &[Segment]) -> bool {
        let Some((first, rest)) = path.split_first() else { return true };
        let preserves = schema["x-kubernetes-preserve-unknown-fields"] == true;
        match first {
            Segment::Index(_) => match schema.get("items") {
                Some(items) => keeps(items, rest),
                None => preserves,
            },
            Segment::Key(key) => {
                if let Some(property) = schema["properties"].get(key) {
                    return keeps(property, rest);
                }
                if schema["x-kubernetes-embedded-resource"] == true
                    && matches!(key.as_str(), "apiVersion" | "kind" | "metadata")
                {
                    return true;
                }
                match schema.get("additionalProperties") {
                    Some(additional @ Value::Object(_)) => keeps(additional, rest),
                    Some(Value::Bool(true)) => true,
                    _ => preserves,
                }
            }
        }
    }

    /// Why the server dropped `path`.
    fn why_pruned(crd: &Crd, version: &str, path: &[Segment]) -> &'static str {
        let storage = crd.storage_version();
        if !keeps(crd.schema(version), path) {
            "not-in-schema"
        } else if version != storage && !keeps(crd.schema(storage), path) {
            "not-in-storage-version"
        } else {
            "in-schema-yet-dropped"
        }
    }

    // ---------------------------------------------------------------------------------------
    // Rejections.

    /// One rule a rejected object broke, as the server reports it.
    #[derive(Debug)]
    struct Cause {
        /// The field, as the server writes it (`spec.rules[0].name`); empty if not found.
        field: String,
        /// `FieldValueInvalid`, `FieldValueTooMany`, ...
        reason: String,
        message: String,
    }

    /// What the server adds to the causes when it skipped CEL rules: not a rule broken.
    const RULES_NOT_CHECKED: &str = "some validation rules were not checked";

    /// The causes of a 422. The client keeps each cause's reason and message; the field is
    /// found in the status message, which lists `field: message` for each cause in order:
    /// `Kind.group "name" is invalid: [f1: m1, f2: m2]` (no brackets for one cause). `oneOf`,
    /// `anyOf` and `allOf` causes have no field (`<nil>`) but quote it in their message.
    fn causes(status: &Status) -> Vec<Cause> {
        let list = status.message.split_once(" is invalid: ").map_or("", |(_, list)| list);
        let mut rest = list.strip_prefix('[').unwrap_or(list);
        let mut causes = Vec::new();
        for (reason, message) in &status.causes {
            let needle = format!(": {message}");
            let field = match rest.find(&needle) {
                Some(at) => {
                    let field = rest[..at].trim_start_matches(", ").to_owned();
                    rest = &rest[at + needle.len()..];
                    field
                }
                None => String::new(),
            };
            if message.contains(RULES_NOT_CHECKED) {
                continue;
            }
            let field = match quoted_field(message) {
                Some(quoted) if field.is_empty() || field == "<nil>" => quoted.to_owned(),
                _ => field,
            };
            causes.push(Cause { field, reason: reason.clone(), message: message.clone() });
        }
        if status.causes.is_empty() {
            causes.push(Cause {
                field: String::new(),
                reason: status.reason.clone(),
                message: status.message.clone(),
            });
        }
        causes
    }

    /// `spec.a[0]` in `Invalid value: "": "spec.a[0]" must validate one and only one schema`.
    fn quoted_field(message: &str) -> Option<&str> {
        let end = message.find("\" must ")?;
        let start = message[..end].rfind('"')? + 1;
        Some(&message[start..end])
    }

    /// Which kind of rule a cause is: a schema keyword the sampler does not follow, or a CEL
    /// rule (`x-kubernetes-validations`) it cannot know.
    fn rule(cause: &Cause, schema: &Value) -> &'static str {
        let message = cause.message.as_str();
        let node = schema_at(schema, &parse_path(&cause.field));
        let is_object = node.is_some_and(|n| n["type"] == "object");
        let openapi = [
            (" should match '", "pattern"),
            (" in body must be of type ", "format"),
            ("(oneOf)", "oneOf"),
            ("(anyOf)", "anyOf"),
            ("(not)", "not"),
            ("(allOf)", "allOf"),
            (" should be greater than", "minimum"),
            (" should be less than", "maximum"),
            (" should be a multiple of", "multipleOf"),
            (" chars long", "minLength"),
            (" should have at least ", if is_object { "minProperties" } else { "minItems" }),
        ];
        if let Some((_, kind)) = openapi.iter().find(|(text, _)| message.contains(text)) {
            return kind;
        }
        match cause.reason.as_str() {
            "FieldValueTooMany" if is_object => "maxProperties",
            "FieldValueTooMany" => "maxItems",
            "FieldValueTooLong" => "maxLength",
            "FieldValueNotSupported" => "enum",
            // The schema's `required` (the sampler always fills it, so a repair or a sampler
            // bug), a branch of `oneOf`/`anyOf`/`allOf` (the branch the object was checked
            // against), or a CEL rule that reports a missing field.
            "FieldValueRequired" => {
                let path = parse_path(&cause.field);
                let Some((Segment::Key(name), parent)) = path.split_last() else { return "other" };
                let Some(parent) = schema_at(schema, parent) else { return "other" };
                let requires = |node: &Value| {
                    node["required"]
                        .as_array()
                        .is_some_and(|r| r.iter().any(|n| n == name.as_str()))
                };
                let branch = |keyword: &str| {
                    parent[keyword].as_array().is_some_and(|branches| branches.iter().any(requires))
                };
                if requires(parent) {
                    "required"
                } else if let Some(keyword) =
                    ["oneOf", "anyOf", "allOf"].into_iter().find(|k| branch(k))
                {
                    keyword
                } else if parent.get("x-kubernetes-validations").is_some() {
                    "CEL"
                } else {
                    "other"
                }
            }
            _ if node.is_some_and(|n| n.get("x-kubernetes-validations").is_some()) => "CEL",
            "FieldValueDuplicate" => "duplicate",
            _ => "other",
        }
    }

    /// Makes `object` pass the rules the server named where taking something out is enough:
    /// drops each offending field or list item below the root (for a missing required field,
    /// the object that lacks it: typically one whose required field an earlier repair dropped),
    /// trims objects and lists with too many entries. `false` when a cause cannot be met so (a
    /// rule on a root field such as `spec`, a field the message does not name).
    ///
    /// Adds the paths it takes out to `removed`.
    fn repair(object: &mut Value, causes: &[Cause], removed: &mut BTreeSet<Vec<Segment>>) -> bool {
        let mut drop = BTreeSet::new();
        for cause in causes {
            let mut path = parse_path(&cause.field);
            if cause.reason == "FieldValueRequired" {
                path.pop();
            }
            if cause.reason == "FieldValueTooMany" {
                let limit = cause
                    .message
                    .split_once("at most ")
                    .and_then(|(_, rest)| rest.split(' ').next()?.parse::<usize>().ok());
                match (value_at(object, &path), limit) {
                    (Some(Value::Object(map)), Some(limit)) => {
                        let extra: Vec<String> = map.keys().skip(limit).cloned().collect();
                        for key in extra {
                            map.remove(&key);
                        }
                    }
                    (Some(Value::Array(items)), Some(limit)) => items.truncate(limit),
                    _ => return false,
                }
            } else if path.len() < 2 {
                return false;
            } else {
                drop.insert(path);
            }
        }
        // Last items first, so that removing one does not move the others; a field under one
        // already removed goes with it.
        for path in drop.iter().rev() {
            if drop.iter().any(|other| other.len() < path.len() && path.starts_with(other)) {
                continue;
            }
            let Some((last, parent)) = path.split_last() else { return false };
            let taken = match (value_at(object, parent), last) {
                (Some(Value::Object(map)), Segment::Key(key)) => map.remove(key).is_some(),
                (Some(Value::Array(items)), Segment::Index(i)) if *i < items.len() => {
                    items.remove(*i);
                    true
                }
                _ => false,
            };
            if !taken {
                return false;
            }
            removed.insert(path.clone());
        }
        true
    }

    /// Whether the server complains of what a repair did (a required field or the last list
    /// item taken out) rather than of a rule the sample broke.
    fn caused_by_repair(cause: &Cause, kind: &str, removed: &BTreeSet<Vec<Segment>>) -> bool {
        let path = parse_path(&cause.field);
        match kind {
            "required" => removed.contains(&path),
            "minItems" | "minProperties" => {
                removed.iter().any(|r| r.len() == path.len() + 1 && r.starts_with(&path))
            }
            _ => false,
        }
    }

    fn value_at<'a>(value: &'a mut Value, path: &[Segment]) -> Option<&'a mut Value> {
        path.iter().try_fold(value, |value, segment| match segment {
            Segment::Key(key) => value.get_mut(key.as_str()),
            Segment::Index(i) => value.get_mut(*i),
        })
    }

    // ---------------------------------------------------------------------------------------
    // What happened to each sample.

    /// A finding pinned in `PINS`: what happened (`rejected`, `pruned`, `changed`,
    /// `cross-version`), where, and of which kind.
    #[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
    struct Key {
        class: &'static str,
        file: String,
        version: String,
        path: String,
        kind: String,
    }

    /// The samples (or objects) a finding was seen in, and an example of what the server said.
    #[derive(Clone, Debug, Default)]
    struct Seen {
        samples: BTreeSet<String>,
        example: String,
    }

    /// What happened to the samples.
    #[derive(Default)]
    struct Tally {
        /// Samples created as synthesised.
        created: usize,
        /// Samples created once the offending fields were taken out.
        repaired: usize,
        /// Samples never created: (file, version, sample).
        rejected: Vec<String>,
        /// Created samples that came back as sent (but for the server's metadata and, with the
        /// status subresource, the status a create ignores).
        exact: usize,
        /// Created samples to which the server added defaults (and did nothing else).
        defaulted: usize,
        /// Created samples whose status the status subresource dropped.
        status_reset: usize,
        findings: BTreeMap<Key, Seen>,
        /// (file, version) → defaulted paths.
        defaults: BTreeMap<(String, String), BTreeSet<String>>,
        /// Failures: decoding, encoding, requests.
        failures: Vec<String>,
        /// Every created object: (group/version/resource it was created through, namespace,
        /// name).
        objects: Vec<(GroupVersionResource, Option<String>, String)>,
    }

    impl Tally {
        fn find(&mut self, key: Key, sample: &str, example: impl FnOnce() -> String) {
            let seen = self.findings.entry(key).or_default();
            if seen.example.is_empty() {
                seen.example = example();
            }
            seen.samples.insert(sample.to_owned());
        }

        fn merge(&mut self, other: Tally) {
            self.created += other.created;
            self.repaired += other.repaired;
            self.rejected.extend(other.rejected);
            self.exact += other.exact;
            self.defaulted += other.defaulted;
            self.status_reset += other.status_reset;
            for (key, seen) in other.findings {
                let mine = self.findings.entry(key).or_default();
                mine.samples.extend(seen.samples);
                if mine.example.is_empty() {
                    mine.example = seen.example;
                }
            }
            for (key, paths) in other.defaults {
                self.defaults.entry(key).or_default().extend(paths);
            }
            self.failures.extend(other.failures);
            self.objects.extend(other.objects);
        }
    }

    /// Creates, with retries while the version is not served yet (404 until the CRD's handler
    /// serves it, some time after `Established`).
    async fn create_when_served(
        g: &Generated,
        client: &Client,
        namespace: Option<&String>,
        object: &Value,
    ) -> Result<Value, Failure> {
        let start = Instant::now();
        loop {
            match (g.create)(client.clone(), namespace.cloned(), object.clone()).await {
                Err(Failure::Api(status)) if status.code == 404 && start.elapsed() < DEADLINE => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                outcome => return outcome,
            }
        }
    }

    /// Creates every sample of one served version, checks the answers and classifies them.
    async fn run_samples(g: &Generated, crd: &Crd, client: &Client, namespace: &str) -> Tally {
        let mut tally = Tally::default();
        let namespace = g.namespaced.then(|| namespace.to_owned());
        let key = |class: &'static str, path: String, kind: &str| Key {
            class,
            file: g.file.to_owned(),
            version: g.version.to_owned(),
            path,
            kind: kind.to_owned(),
        };
        for sample in sample::samples(&crd.loaded, g.version) {
            let label = format!("{} {} {}", g.file, g.version, sample.name);
            // Versions of one resource share its objects: the version keeps the names apart.
            let name = format!("{}-{}", sample.name, g.version);
            let mut sent = sample.object;
            sent["metadata"]["name"] = json!(name);
            if let Some(namespace) = &namespace {
                sent["metadata"]["namespace"] = json!(namespace);
            }
            let mut repairs = 0;
            let mut removed = BTreeSet::new();
            let answer = loop {
                match create_when_served(g, client, namespace.as_ref(), &sent).await {
                    Ok(answer) => break Some(answer),
                    Err(Failure::Api(status)) if matches!(status.code, 400 | 422) => {
                        let causes = causes(&status);
                        for cause in &causes {
                            let kind = rule(cause, crd.schema(g.version));
                            if caused_by_repair(cause, kind, &removed) {
                                continue;
                            }
                            let path = without_indexes(&cause.field);
                            tally.find(key("rejected", path, kind), &sample.name, || {
                                cause.message.clone()
                            });
                        }
                        repairs += 1;
                        if repairs > REPAIRS || !repair(&mut sent, &causes, &mut removed) {
                            tally.rejected.push(label.clone());
                            break None;
                        }
                    }
                    Err(e) => {
                        tally.failures.push(format!("{label}: create: {e}"));
                        break None;
                    }
                }
            };
            let Some(answer) = answer else { continue };
            if repairs == 0 {
                tally.created += 1;
            } else {
                tally.repaired += 1;
            }
            tally.objects.push((g.gvr.clone(), namespace.clone(), name.clone()));

            // The generated type keeps everything the server says, as the server says it.
            let what = format!("{label}: the create answer");
            check_typed(g, crd, &sample.name, &answer, &what, &mut tally);
            match (g.get)(client.clone(), namespace.clone(), name.clone()).await {
                Ok(read) => {
                    check_typed(g, crd, &sample.name, &read, &format!("{label}: GET"), &mut tally);
                }
                Err(e) => tally.failures.push(format!("{label}: GET: {e}")),
            }
            classify(g, crd, &sample.name, &sent, &answer, &mut tally);
        }
        tally
    }

    /// Sorts the differences between what was sent and what the server answered.
    fn classify(
        g: &Generated,
        crd: &Crd,
        sample: &str,
        sent: &Value,
        answer: &Value,
        tally: &mut Tally,
    ) {
        let mut found = Vec::new();
        differences(sent, answer, &mut Vec::new(), &mut found);
        let status_subresource = crd.has_status_subresource(g.version);
        let (mut other, mut defaulted, mut reset) = (false, false, false);
        for difference in found {
            let path = match &difference {
                Difference::Pruned(path)
                | Difference::Added(path)
                | Difference::Changed(path, ..) => path,
            };
            let root = match path.first() {
                Some(Segment::Key(key)) => key.as_str(),
                _ => "",
            };
            let key = |class: &'static str, kind: &str| Key {
                class,
                file: g.file.to_owned(),
                version: g.version.to_owned(),
                path: show(path),
                kind: kind.to_owned(),
            };
            match &difference {
                // The server's own metadata: uid, resourceVersion, managedFields, ...
                Difference::Added(_) if root == "metadata" => {}
                // A create through the main resource ignores the status subresource's part.
                _ if root == "status" && status_subresource => reset = true,
                Difference::Added(_) => {
                    defaulted = true;
                    let file_version = (g.file.to_owned(), g.version.to_owned());
                    tally.defaults.entry(file_version).or_default().insert(show(path));
                }
                Difference::Pruned(_) => {
                    other = true;
                    tally.find(
                        key("pruned", why_pruned(crd, g.version, path)),
                        sample,
                        String::new,
                    );
                }
                Difference::Changed(_, from, to) => {
                    other = true;
                    tally.find(key("changed", "value"), sample, || format!("{from} → {to}"));
                }
            }
        }
        tally.status_reset += usize::from(reset);
        if !other {
            if defaulted {
                tally.defaulted += 1;
            } else {
                tally.exact += 1;
            }
        }
    }

    /// One difference between the object sent and the server's answer.
    #[derive(Debug)]
    enum Difference {
        /// Sent, not returned.
        Pruned(Vec<Segment>),
        /// Returned, not sent.
        Added(Vec<Segment>),
        /// Returned with another value.
        Changed(Vec<Segment>, Value, Value),
    }

    fn differences(sent: &Value, got: &Value, path: &mut Vec<Segment>, out: &mut Vec<Difference>) {
        match (sent, got) {
            (Value::Object(sent), Value::Object(got)) => {
                for (key, value) in sent {
                    path.push(Segment::Key(key.clone()));
                    match got.get(key) {
                        Some(answer) => differences(value, answer, path, out),
                        None => out.push(Difference::Pruned(path.clone())),
                    }
                    path.pop();
                }
                for key in got.keys().filter(|key| !sent.contains_key(*key)) {
                    path.push(Segment::Key(key.clone()));
                    out.push(Difference::Added(path.clone()));
                    path.pop();
                }
            }
            (Value::Array(sent), Value::Array(got)) if sent.len() == got.len() => {
                for (i, (value, answer)) in sent.iter().zip(got).enumerate() {
                    path.push(Segment::Index(i));
                    differences(value, answer, path, out);
                    path.pop();
                }
            }
            _ if sample::json_eq(sent, got) => {}
            _ => out.push(Difference::Changed(path.clone(), sent.clone(), got.clone())),
        }
    }

    /// Decodes `json`, the server's answer at `g`'s version, into the generated type, and checks
    /// that the value encodes back to the same JSON.
    ///
    /// Through a version other than the storage version an object keeps only what the storage
    /// version knows (conversion None); a required field it lost that way comes back from the
    /// type as the field's default: pinned, not a failure.
    fn check_typed(
        g: &Generated,
        crd: &Crd,
        sample: &str,
        json: &Value,
        what: &str,
        tally: &mut Tally,
    ) {
        let back = match (g.typed)(json) {
            Ok(back) => back,
            Err(e) => return tally.failures.push(format!("{what}: {e}")),
        };
        let Some(diff) = sample::json_diff(json, &back) else { return };
        let storage = crd.storage_version();
        match diff.strip_suffix(": missing on the left") {
            Some(path) if g.version != storage => {
                let key = Key {
                    class: "cross-version",
                    file: g.file.to_owned(),
                    version: g.version.to_owned(),
                    path: without_indexes(path),
                    kind: format!("type-adds-what-{storage}-dropped"),
                };
                let example = || back.pointer(&pointer(path)).map(Value::to_string);
                tally.find(key, sample, || example().unwrap_or_default());
            }
            _ => tally.failures.push(format!("{what} changes through the generated type: {diff}")),
        }
    }

    // ---------------------------------------------------------------------------------------
    // The server.

    /// A private server (128 CRDs are more than a shared one should carry), or `None` where
    /// the real-server tests are not run here (`KubeApiServer::run_here`).
    async fn private_server() -> Option<KubeApiServer> {
        tokio::task::spawn_blocking(|| KubeApiServer::private(&[]))
            .await
            .expect("the harness thread")
    }

    async fn install(client: &Client, crd: &Crd) {
        let manifest = Raw::<CustomResourceDefinition>::new(crd.manifest()).unwrap();
        if let Err(e) = client.create(None, &manifest).await {
            panic!("{}: installing the CRD: {e}", crd.file);
        }
    }

    /// Waits until the CRD is `Established`; fails at once if its names are not accepted.
    async fn established(client: &Client, crd: &Crd) {
        let start = Instant::now();
        loop {
            let read = client
                .get::<Raw<CustomResourceDefinition>>(None, crd.name())
                .await
                .unwrap_or_else(|e| panic!("{}: reading the CRD: {e}", crd.file));
            let conditions =
                read.json["status"]["conditions"].as_array().cloned().unwrap_or_default();
            let condition = |kind: &str| conditions.iter().find(|c| c["type"] == kind).cloned();
            if condition("Established").is_some_and(|c| c["status"] == "True") {
                return;
            }
            if let Some(names) = condition("NamesAccepted").filter(|c| c["status"] == "False") {
                panic!("{}: names not accepted: {}", crd.file, names["message"]);
            }
            assert!(start.elapsed() < DEADLINE, "{}: not established: {conditions:?}", crd.file);
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    // ---------------------------------------------------------------------------------------
    // The test.

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn generated_types_against_a_real_server() {
        let dir = corpus();
        let Some(server) = private_server().await else { return };
        let started = Instant::now();
        let client = server.client("cert");
        let crds = load(&dir);
        assert_eq!(crds.len(), 128);
        let types = generated_types();

        for crd in &crds {
            install(&client, crd).await;
        }
        for crd in &crds {
            established(&client, crd).await;
        }
        let installed = started.elapsed();
        let namespace = format!("corpus-{:08x}", fastrand::u32(..));
        let ns = Namespace {
            metadata: ObjectMeta { name: Some(namespace.clone()), ..ObjectMeta::default() },
            ..Namespace::default()
        };
        client.create(None, &ns).await.expect("the namespace is created");

        let crd_of = |g: &Generated| crds.iter().find(|c| c.file == g.file).expect("a corpus file");
        let served: Vec<&Generated> =
            types.iter().filter(|g| crd_of(g).served(g.version)).collect();
        let tallies: Vec<Tally> = stream::iter(&served)
            .map(|g| run_samples(g, crd_of(g), &client, &namespace))
            .buffer_unordered(CONCURRENCY)
            .collect()
            .await;
        let mut tally = Tally::default();
        for one in tallies {
            tally.merge(one);
        }
        let sampled = started.elapsed();

        cross_version_reads(&client, &served, &mut tally).await;
        informers_sync(&client, &namespace, &served, &crds, &mut tally).await;
        let synced = started.elapsed();

        report(&tally, &crds, &served, [installed, sampled, synced]);
        let mut problems = tally.failures.clone();
        problems.extend(check_pins(&tally.findings));
        assert!(problems.is_empty(), "{} problems:\n{}", problems.len(), problems.join("\n"));
        drop(server);
    }

    /// Reads every object through every other served version of its resource. With conversion
    /// None an object need not fit another version's schema; one that version's generated type
    /// cannot decode would fail each list of that version's informer, so it is pinned and deleted
    /// before the informers start.
    async fn cross_version_reads(client: &Client, served: &[&Generated], tally: &mut Tally) {
        for (gvr, namespace, name) in std::mem::take(&mut tally.objects) {
            let mut readable = true;
            let views = served.iter().filter(|g| {
                g.gvr.group == gvr.group
                    && g.gvr.resource == gvr.resource
                    && g.gvr.version != gvr.version
            });
            for g in views {
                let read = match (g.get)(client.clone(), namespace.clone(), name.clone()).await {
                    Ok(read) => read,
                    Err(e) => {
                        tally.failures.push(format!("{} {name}: GET: {e}", g.gvr));
                        continue;
                    }
                };
                if let Err(e) = (g.typed)(&read) {
                    readable = false;
                    let error = e.strip_prefix("decode: ").unwrap_or(&e);
                    let (path, why) = error.split_once(": ").unwrap_or(("", error));
                    let key = Key {
                        class: "cross-version",
                        file: g.file.to_owned(),
                        version: g.version.to_owned(),
                        path: without_indexes(path),
                        kind: format!("undecodable-{}-objects", gvr.version),
                    };
                    tally.find(key, &name, || why.to_owned());
                }
            }
            if readable {
                tally.objects.push((gvr, namespace, name));
                continue;
            }
            let creator = served.iter().find(|g| g.gvr == gvr).expect("the creating version");
            if let Err(e) = (creator.delete)(client.clone(), namespace, name.clone()).await {
                tally.failures.push(format!("{gvr} {name}: delete: {e}"));
            }
        }
    }

    /// Item 2: one factory, every served version's informer found through `for_resource`; all
    /// sync, and each lister holds exactly its resource's objects, as a GET at its version reads
    /// them.
    async fn informers_sync(
        client: &Client,
        namespace: &str,
        served: &[&Generated],
        crds: &[Crd],
        tally: &mut Tally,
    ) {
        // Cached objects are compared with a GET field by field, managedFields included.
        let factory = SharedInformerFactory::builder(client.clone())
            .namespace(namespace)
            .keep_managed_fields(true)
            .build();
        factory.register_custom_resources();
        let informers: Vec<(&Generated, GenericInformer)> = served
            .iter()
            .map(|g| {
                let informer = factory.for_resource(&g.gvr).expect("a generated resource");
                (*g, informer)
            })
            .collect();
        factory.start();
        let report = factory.wait_for_cache_sync(DEADLINE).await;
        for gvr in report.not_synced() {
            tally.failures.push(format!("{gvr}: the informer did not sync"));
        }
        let start = Instant::now();

        let objects = tally.objects.clone();
        for (g, informer) in informers.iter().filter(|(_, informer)| informer.has_synced()) {
            // Versions of one resource are views of the same objects.
            let created: BTreeMap<(Option<String>, String), &str> = objects
                .iter()
                .filter(|(gvr, _, _)| gvr.group == g.gvr.group && gvr.resource == g.gvr.resource)
                .map(|(gvr, ns, name)| ((ns.clone(), name.clone()), gvr.version.as_str()))
                .collect();
            let want: BTreeSet<&(Option<String>, String)> = created.keys().collect();
            let lister = informer.lister();
            let cached = || -> BTreeSet<(Option<String>, String)> {
                lister
                    .list(&LabelSelector::everything())
                    .iter()
                    .map(|o| {
                        let meta = o.metadata();
                        (meta.namespace.clone(), meta.name.clone().unwrap_or_default())
                    })
                    .collect()
            };
            // The first list may come from the watch cache a moment behind etcd; the watch
            // brings the rest.
            while cached().iter().ne(want.iter().copied()) && start.elapsed() < DEADLINE {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            let have = cached();
            if have.iter().ne(want.iter().copied()) {
                tally.failures.push(format!(
                    "{}: the lister holds {:?}, not the {} objects created: {:?}",
                    g.gvr,
                    have,
                    want.len(),
                    want
                ));
                continue;
            }
            for ((ns, name), created_through) in &created {
                let object = lister.get(ns.as_deref(), name).expect("listed");
                let cached = object.to_json().expect("a cached object encodes");
                let read = match (g.get)(client.clone(), ns.clone(), name.clone()).await {
                    Ok(read) => read,
                    Err(e) => {
                        tally.failures.push(format!("{} {name}: GET: {e}", g.gvr));
                        continue;
                    }
                };
                let Some(diff) = sample::json_diff(&read, &cached) else { continue };
                // With `conversion: None` an object created through another version need not
                // have what this version requires, nor one created through this version what
                // the storage version dropped; the generated type writes a required field it
                // did not get back as its default (see `check_typed`).
                let storage =
                    crds.iter().find(|c| c.file == g.file).map_or("", |c| c.storage_version());
                let (kind, sample) = if created_through == &g.version {
                    let sample = name.strip_suffix(&format!("-{}", g.version)).unwrap_or(name);
                    (format!("type-adds-what-{storage}-dropped"), sample)
                } else {
                    (format!("added-by-the-type-to-{created_through}-objects"), name.as_str())
                };
                match diff.strip_suffix(": missing on the left") {
                    Some(path) if created_through != &g.version || g.version != storage => {
                        let key = Key {
                            class: "cross-version",
                            file: g.file.to_owned(),
                            version: g.version.to_owned(),
                            path: without_indexes(path),
                            kind,
                        };
                        let example = || cached.pointer(&pointer(path)).map(Value::to_string);
                        tally.find(key, sample, || example().unwrap_or_default());
                    }
                    _ => tally.failures.push(format!("{} {name}: cache != GET: {diff}", g.gvr)),
                }
            }
        }
        factory.shutdown().await;
    }

    /// A JSON pointer for a `json_diff` path (`spec.a[0].b` → `/spec/a/0/b`).
    fn pointer(path: &str) -> String {
        parse_path(path).iter().fold(String::new(), |mut pointer, segment| {
            match segment {
                Segment::Key(key) => {
                    let _ = write!(pointer, "/{}", key.replace('~', "~0").replace('/', "~1"));
                }
                Segment::Index(i) => {
                    let _ = write!(pointer, "/{i}");
                }
            }
            pointer
        })
    }

    // ---------------------------------------------------------------------------------------
    // Reporting and pins.

    fn report(tally: &Tally, crds: &[Crd], served: &[&Generated], times: [Duration; 3]) {
        let created = tally.created + tally.repaired;
        let samples = created + tally.rejected.len();
        println!(
            "{} CRDs installed in {:.1?}; {} served versions; {samples} samples in {:.1?}; \
             {} informers synced and checked in {:.1?}",
            crds.len(),
            times[0],
            served.len(),
            times[1].saturating_sub(times[0]),
            served.len(),
            times[2].saturating_sub(times[1]),
        );
        println!(
            "samples: {} created as synthesised, {} after taking out what the server rejected, \
             {} rejected",
            tally.created,
            tally.repaired,
            tally.rejected.len()
        );
        println!(
            "created: {} came back exactly, {} with defaults added, {} pruned or changed; {} had \
             their status reset by the status subresource",
            tally.exact,
            tally.defaulted,
            created - tally.exact - tally.defaulted,
            tally.status_reset
        );
        let mut kinds: BTreeMap<(&str, &str), (usize, usize)> = BTreeMap::new();
        for (key, seen) in &tally.findings {
            let entry = kinds.entry((key.class, key.kind.as_str())).or_default();
            entry.0 += 1;
            entry.1 += seen.samples.len();
        }
        for ((class, kind), (paths, samples)) in kinds {
            println!("  {class} {kind}: {paths} paths, {samples} sample-paths");
        }
        let mut never: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
        for label in &tally.rejected {
            let (version, sample) = label.rsplit_once(' ').unwrap_or_default();
            never.entry(version).or_default().insert(sample.to_owned());
        }
        for (version, samples) in &never {
            println!("  never created: {version} {}", show_samples(samples));
        }
        for ((file, version), paths) in &tally.defaults {
            let paths: Vec<&str> = paths.iter().map(String::as_str).collect();
            println!("  defaulted: {file} {version}: {}", paths.join(", "));
        }
    }

    /// `enum-variant-1..16` for a run of enum variants, so that rows stay short.
    fn show_samples(samples: &BTreeSet<String>) -> String {
        let mut variants: Vec<usize> =
            samples.iter().filter_map(|s| s.strip_prefix("enum-variant-")?.parse().ok()).collect();
        variants.sort_unstable();
        let mut parts: Vec<String> =
            samples.iter().filter(|s| !s.starts_with("enum-variant-")).cloned().collect();
        let mut i = 0;
        while i < variants.len() {
            let mut j = i;
            while j + 1 < variants.len() && variants[j + 1] == variants[j] + 1 {
                j += 1;
            }
            parts.push(if i == j {
                format!("enum-variant-{}", variants[i])
            } else {
                format!("enum-variant-{}..{}", variants[i], variants[j])
            });
            i = j + 1;
        }
        parts.join(",")
    }

    fn pin_row(key: &Key, seen: &Seen) -> String {
        format!(
            "{}\t{}\t{}\t{}\t{}\t{}",
            key.class,
            key.file,
            key.version,
            key.path,
            key.kind,
            show_samples(&seen.samples)
        )
    }

    /// Compares the findings with the pins, or rewrites the pins with `UPDATE_PINS=1`.
    fn check_pins(findings: &BTreeMap<Key, Seen>) -> Vec<String> {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(PINS);
        let found: Vec<String> = findings.iter().map(|(key, seen)| pin_row(key, seen)).collect();
        if std::env::var("UPDATE_PINS").is_ok_and(|v| v == "1") {
            let mut text = String::from(PINS_HEADER);
            for ((_, seen), row) in findings.iter().zip(&found) {
                let example: String = seen.example.chars().take(200).collect();
                let example = example.replace(['\t', '\n'], " ");
                let _ = writeln!(text, "{row}\t{example}");
            }
            std::fs::write(&path, text).unwrap();
            println!("rewrote {}", path.display());
            return Vec::new();
        }
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        // The last column (an example message) is for the reader.
        let pinned: BTreeSet<String> = text
            .lines()
            .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
            .map(|line| line.rsplit_once('\t').map_or(line, |(row, _)| row).to_owned())
            .collect();
        let found: BTreeSet<String> = found.into_iter().collect();
        let mut problems: Vec<String> =
            found.difference(&pinned).map(|row| format!("not pinned: {row}")).collect();
        problems.extend(pinned.difference(&found).map(|row| format!("pinned, not seen: {row}")));
        if !problems.is_empty() {
            problems.push(format!("(UPDATE_PINS=1 rewrites {PINS}; review its diff)"));
        }
        problems
    }

    const PINS_HEADER: &str = "\
# What the real kube-apiserver did to informer-gen's samples that the sampler did not foresee,
# written by tests/real_server.rs with UPDATE_PINS=1; the test fails on any difference.
#
# class: rejected (a rule the sampler does not follow; the field was then taken out and the
#   sample sent again), pruned (sent, not returned), changed (returned with another value),
#   cross-version (with conversion None, what one version's generated type makes of objects
#   that went through another version).
# kind: for rejected, the rule: pattern, format, maxProperties, oneOf, anyOf, allOf, not, CEL
#   (x-kubernetes-validations), ...; for pruned: not-in-schema (the sampler invented it),
#   not-in-storage-version (conversion None keeps only what the storage version knows),
#   in-schema-yet-dropped; for cross-version: undecodable-V-objects (objects created through
#   V do not decode; they are deleted before the informers start), added-by-the-type-to-V-objects
#   and type-adds-what-V-dropped (a required field the object lacks comes back from the type as
#   its default).
# Columns: class, file, version, path ([*] for any index), kind, samples (or objects), an
#   example (the server's message, or the value the type added); the last one is not compared.
";
}
