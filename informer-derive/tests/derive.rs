//! `#[derive(Informer)]` on example resources: the resource identity, the serialization, and the
//! `crd()` manifest checked attribute group by attribute group, against its JSON.

#![allow(clippy::expect_used, reason = "in a test, a failed expect is a failed assertion")]

use std::collections::BTreeMap;

use informer_derive::Informer;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::{ListableResource as _, Resource as _};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// A widget: the example custom resource, with every attribute.
#[derive(Clone, Debug, PartialEq, Deserialize, Informer)]
#[informer(
    group = "widgets.example.com",
    version = "v1alpha1",
    kind = "Widget",
    plural = "widgets",
    singular = "widget",
    shortname = "wd",
    shortname = "wdg",
    category = "all",
    category = "example",
    namespaced,
    status = "WidgetStatus",
    scale(
        spec_replicas_path = ".spec.replicas",
        status_replicas_path = ".status.replicas",
        label_selector_path = ".status.selector"
    ),
    printcolumn(
        name = "Replicas",
        type = "integer",
        json_path = ".spec.replicas",
        description = "Desired replicas"
    ),
    printcolumn(
        name = "Age",
        type = "date",
        json_path = ".metadata.creationTimestamp",
        priority = 1
    ),
    selectable = ".spec.color",
    selectable = ".spec.size",
    served,
    storage,
    deprecated,
    deprecation_warning = "widgets.example.com/v1alpha1 is deprecated; use v1",
    annotation("example.com/owner", "team-a"),
    label("app.kubernetes.io/part-of", "tests"),
    validation = "self.spec.replicas <= 100"
)]
pub struct Widget {
    /// Standard object metadata.
    pub metadata: ObjectMeta,
    /// What the widget should be.
    pub spec: WidgetSpec,
    /// What the widget is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<WidgetStatus>,
}

/// The desired state of a widget.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WidgetSpec {
    /// How many.
    pub replicas: i32,
    /// Which color.
    pub color: Color,
    /// A free-form size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<String>,
    /// Labels to add.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra_labels: BTreeMap<String, String>,
    /// Anything at all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<Value>,
    /// How to place the widgets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<Placement>,
    /// Where the widget comes from.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<Source>,
    /// A port, by number or name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<Port>,
}

/// An internally tagged enum: the tag's values are merged into one string enum.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Source {
    /// From a Git repository.
    Git {
        /// The repository.
        url: String,
    },
    /// From an image.
    Image {
        /// The image reference.
        reference: String,
    },
}

/// A type with a hand-written schema, as k8s-openapi's `IntOrString` has.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Port {
    /// By number.
    Number(i32),
    /// By name.
    Name(String),
}

impl JsonSchema for Port {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Port".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "x-kubernetes-int-or-string": true })
    }
}

/// A color.
#[derive(Clone, Copy, Debug, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub enum Color {
    /// Red.
    #[default]
    Red,
    /// Green.
    Green,
}

/// An enum with data: externally tagged, one property per variant.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Placement {
    /// On the named nodes.
    Nodes {
        /// Node names.
        names: Vec<String>,
    },
    /// Spread over zones.
    Zones {
        /// How many zones.
        count: u32,
    },
}

/// The observed state of a widget.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct WidgetStatus {
    /// How many there are.
    pub replicas: i32,
    /// The label selector of the widget's pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,
}

/// A cluster-scoped kind with every default.
#[derive(Clone, Debug, Deserialize, Informer)]
#[informer(group = "example.com", version = "v1", cluster)]
pub struct Policy {
    metadata: ObjectMeta,
    spec: PolicySpec,
}

/// The rules of a policy.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
pub struct PolicySpec {
    /// Rules.
    pub rules: Vec<String>,
}

/// Without a derived schema: the spec's type has no `JsonSchema`.
#[derive(Clone, Debug, Deserialize, Informer)]
#[informer(group = "example.com", version = "v1", schema = "disabled")]
pub struct Opaque {
    metadata: ObjectMeta,
    spec: BTreeMap<String, Value>,
}

/// Crate paths given by `crates(...)`, as when a facade crate re-exports them.
mod facade {
    pub use ::informer_runtime as rt;
    pub use ::k8s_openapi as k8s;
    pub use ::schemars as schema;
    pub use ::serde as ser;
    pub use ::serde_json as json;
}

/// Uses only the facade's paths.
#[derive(Clone, Debug, Deserialize, Informer)]
#[informer(
    group = "example.com",
    version = "v1",
    kind = "Box",
    crates(
        informer_runtime = crate::facade::rt,
        k8s_openapi = crate::facade::k8s,
        schemars = crate::facade::schema,
        serde = crate::facade::ser,
        serde_json = crate::facade::json
    )
)]
pub struct Crate {
    metadata: ObjectMeta,
}

fn manifest() -> Value {
    serde_json::to_value(Widget::crd()).expect("a manifest encodes")
}

fn version() -> Value {
    manifest()["spec"]["versions"][0].clone()
}

fn schema() -> Value {
    version()["schema"]["openAPIV3Schema"].clone()
}

#[test]
fn resource_identity() {
    assert_eq!(Widget::API_VERSION, "widgets.example.com/v1alpha1");
    assert_eq!(Widget::GROUP, "widgets.example.com");
    assert_eq!(Widget::VERSION, "v1alpha1");
    assert_eq!(Widget::KIND, "Widget");
    assert_eq!(Widget::URL_PATH_SEGMENT, "widgets");
    assert_eq!(Widget::LIST_KIND, "WidgetList");
    assert!(informer_runtime::resource::is_namespaced::<Widget>());
    assert!(!informer_runtime::resource::is_namespaced::<Policy>());
    assert_eq!(Crate::KIND, "Box");
    assert_eq!(Crate::URL_PATH_SEGMENT, "boxes");
}

#[test]
fn aliases_name_the_runtime_types() {
    fn same<T>(_: Option<T>, _: Option<T>) {}
    same(None::<WidgetLister>, None::<informer_runtime::Lister<Widget>>);
    same(None::<WidgetNamespaceLister>, None::<informer_runtime::NamespaceLister<Widget>>);
    same(None::<PolicyLister>, None::<informer_runtime::Lister<Policy>>);
    same(
        None::<WidgetInformer<'static, informer_client::Client>>,
        None::<informer_runtime::informers::TypedInformer<'static, informer_client::Client, Widget>>,
    );
}

#[test]
fn serialize_writes_api_version_and_kind_first() {
    let widget = Widget {
        metadata: ObjectMeta { name: Some("w".into()), ..ObjectMeta::default() },
        spec: WidgetSpec { replicas: 2, ..WidgetSpec::default() },
        status: None,
    };
    let text = serde_json::to_string(&widget).unwrap();
    assert!(
        text.starts_with(r#"{"apiVersion":"widgets.example.com/v1alpha1","kind":"Widget","#),
        "{text}"
    );
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap(),
        json!({
            "apiVersion": "widgets.example.com/v1alpha1",
            "kind": "Widget",
            "metadata": {"name": "w"},
            "spec": {"replicas": 2, "color": "Red"},
        })
    );
    // The user's Deserialize reads it back, ignoring apiVersion and kind.
    assert_eq!(serde_json::from_str::<Widget>(&text).unwrap(), widget);
}

#[test]
fn crd_identity_and_names() {
    let crd = manifest();
    assert_eq!(crd["apiVersion"], "apiextensions.k8s.io/v1");
    assert_eq!(crd["kind"], "CustomResourceDefinition");
    assert_eq!(crd["metadata"]["name"], "widgets.widgets.example.com");
    assert_eq!(crd["spec"]["group"], "widgets.example.com");
    assert_eq!(
        crd["spec"]["names"],
        json!({
            "kind": "Widget",
            "listKind": "WidgetList",
            "plural": "widgets",
            "singular": "widget",
            "shortNames": ["wd", "wdg"],
            "categories": ["all", "example"],
        })
    );
    assert_eq!(version()["name"], "v1alpha1");
}

#[test]
fn crd_defaults() {
    let crd = serde_json::to_value(Policy::crd()).unwrap();
    assert_eq!(crd["metadata"], json!({"name": "policies.example.com"}));
    assert_eq!(
        crd["spec"]["names"],
        json!({"kind": "Policy", "listKind": "PolicyList", "plural": "policies", "singular": "policy"})
    );
    assert_eq!(crd["spec"]["scope"], "Cluster");
    let version = &crd["spec"]["versions"][0];
    assert_eq!(version["served"], true);
    assert_eq!(version["storage"], true);
    for absent in [
        "deprecated",
        "deprecationWarning",
        "subresources",
        "additionalPrinterColumns",
        "selectableFields",
    ] {
        assert!(version.get(absent).is_none(), "{absent} in {version}");
    }
    assert_eq!(Policy::URL_PATH_SEGMENT, "policies");
}

#[test]
fn crd_scope() {
    assert_eq!(manifest()["spec"]["scope"], "Namespaced");
}

#[test]
fn crd_subresources() {
    assert_eq!(
        version()["subresources"],
        json!({
            "status": {},
            "scale": {
                "specReplicasPath": ".spec.replicas",
                "statusReplicasPath": ".status.replicas",
                "labelSelectorPath": ".status.selector",
            },
        })
    );
}

#[test]
fn crd_printer_columns() {
    assert_eq!(
        version()["additionalPrinterColumns"],
        json!([
            {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas", "description": "Desired replicas"},
            {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp", "priority": 1},
        ])
    );
}

#[test]
fn crd_selectable_fields() {
    assert_eq!(
        version()["selectableFields"],
        json!([{"jsonPath": ".spec.color"}, {"jsonPath": ".spec.size"}])
    );
}

#[test]
fn crd_served_storage_deprecated() {
    let version = version();
    assert_eq!(version["served"], true);
    assert_eq!(version["storage"], true);
    assert_eq!(version["deprecated"], true);
    assert_eq!(version["deprecationWarning"], "widgets.example.com/v1alpha1 is deprecated; use v1");
}

#[test]
fn crd_annotations_and_labels() {
    let metadata = &manifest()["metadata"];
    assert_eq!(metadata["annotations"], json!({"example.com/owner": "team-a"}));
    assert_eq!(metadata["labels"], json!({"app.kubernetes.io/part-of": "tests"}));
}

#[test]
fn crd_validation_rules() {
    assert_eq!(
        schema()["x-kubernetes-validations"],
        json!([{"rule": "self.spec.replicas <= 100"}])
    );
}

#[test]
fn crd_schema_root() {
    let schema = schema();
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["properties"]["apiVersion"], json!({"type": "string"}));
    assert_eq!(schema["properties"]["kind"], json!({"type": "string"}));
    assert_eq!(schema["properties"]["metadata"], json!({"type": "object"}));
    assert_eq!(schema["required"], json!(["spec"]));
    assert_eq!(schema["properties"]["spec"]["description"], "What the widget should be.");
    assert_eq!(schema["properties"]["status"]["nullable"], true);
    for absent in ["$schema", "title", "$defs", "definitions"] {
        assert!(schema.get(absent).is_none(), "{absent} in {schema}");
    }
}

#[test]
fn crd_schema_is_structural() {
    let spec = &schema()["properties"]["spec"];
    let properties = &spec["properties"];
    assert_eq!(spec["type"], "object");
    assert_eq!(properties["replicas"]["type"], "integer");
    assert_eq!(properties["color"]["type"], "string");
    assert_eq!(properties["color"]["enum"], json!(["Red", "Green"]));
    assert_eq!(properties["extraLabels"]["additionalProperties"], json!({"type": "string"}));
    // `serde_json::Value`: any JSON, kept as it is.
    assert_eq!(properties["raw"]["x-kubernetes-preserve-unknown-fields"], true);
    // An enum with data: the variants' properties hoisted, each variant keeps its `required`.
    let placement = &properties["placement"];
    assert_eq!(placement["type"], "object");
    assert_eq!(placement["description"], "How to place the widgets.");
    assert_eq!(placement["nullable"], true);
    assert_eq!(placement["properties"]["nodes"]["properties"]["names"]["type"], "array");
    assert_eq!(placement["properties"]["zones"]["properties"]["count"]["type"], "integer");
    assert_eq!(placement["oneOf"], json!([{"required": ["nodes"]}, {"required": ["zones"]}]));
    // An internally tagged enum: one property set, the tag's values merged.
    let sources = &properties["sources"]["items"];
    assert_eq!(sources["type"], "object");
    assert_eq!(sources["required"], json!(["type"]));
    assert_eq!(sources["properties"]["type"]["enum"], json!(["git", "image"]));
    assert_eq!(sources["properties"]["url"]["type"], "string");
    assert_eq!(sources["properties"]["reference"]["type"], "string");
    // Each variant says its tag's value, so `oneOf` tells the variants apart.
    assert_eq!(
        sources["oneOf"],
        json!([
            {"required": ["type", "url"], "properties": {"type": {"enum": ["git"]}}},
            {"required": ["type", "reference"], "properties": {"type": {"enum": ["image"]}}},
        ])
    );
    // A hand-written schema that needs no type.
    assert_eq!(properties["port"]["x-kubernetes-int-or-string"], true);
    assert_no_unions_with_types(&schema());
}

/// No `$ref`, and every schema has a type or says why it need not.
fn assert_no_unions_with_types(schema: &Value) {
    let Value::Object(map) = schema else { panic!("a schema is an object: {schema}") };
    assert!(!map.contains_key("$ref"), "{schema}");
    let untyped_ok = ["x-kubernetes-preserve-unknown-fields", "x-kubernetes-int-or-string"]
        .iter()
        .any(|k| map.contains_key(*k));
    assert!(map.contains_key("type") || untyped_ok, "no type: {schema}");
    if let Some(Value::Object(properties)) = map.get("properties") {
        properties.values().for_each(assert_no_unions_with_types);
    }
    if let Some(items) = map.get("items") {
        assert_no_unions_with_types(items);
    }
    if let Some(additional @ Value::Object(_)) = map.get("additionalProperties") {
        assert_no_unions_with_types(additional);
    }
    // A union variant may only require properties and restrict their values.
    for union in ["oneOf", "anyOf"] {
        for variant in map.get(union).and_then(Value::as_array).into_iter().flatten() {
            let variant = variant.as_object().expect("an object");
            for (key, value) in variant {
                match key.as_str() {
                    "required" => {}
                    "properties" => {
                        for restated in value.as_object().expect("properties").values() {
                            let keys: Vec<&String> =
                                restated.as_object().expect("a schema").keys().collect();
                            assert_eq!(keys, ["enum"], "{value}");
                        }
                    }
                    _ => panic!("a union variant may only require and restrict: {key}"),
                }
            }
        }
    }
}

/// The other front end reads the manifest: informer-gen generates code from it, and objects it
/// synthesises from the schema decode as the derived type and encode back unchanged.
#[test]
fn informer_gen_reads_the_manifest() {
    let text = serde_json::to_string(&Widget::crd()).expect("a manifest encodes");
    let loaded = informer_gen::schema::parse_str(std::path::Path::new("widgets.json"), &text)
        .expect("informer-gen reads the manifest");
    let output = informer_gen::Generator::new().generate(&loaded).expect("and generates code");
    assert_eq!(output.resources()[0].rust_path, "widgets::v1alpha1::Widget");
    let samples = informer_gen::sample::samples(&loaded[0].crd, "v1alpha1");
    assert!(samples.len() >= 2);
    for mut sample in samples {
        // informer-gen's samples fill every hoisted property of a `oneOf` (or none), where a
        // serde enum takes exactly one variant's: these are checked by the tests above.
        if let Some(Value::Object(spec)) = sample.object.get_mut("spec") {
            spec.remove("placement");
            spec.remove("sources");
        }
        let widget: Widget = serde_json::from_value(sample.object.clone())
            .unwrap_or_else(|e| panic!("{}: {e}\n{}", sample.name, sample.object));
        let back = serde_json::to_value(&widget).expect("encodes");
        if let Some(diff) = informer_gen::sample::json_diff(&sample.object, &back) {
            panic!("{}: {diff}", sample.name);
        }
    }
}

#[test]
fn crd_schema_disabled() {
    let crd = serde_json::to_value(Opaque::crd()).expect("a manifest encodes");
    assert_eq!(
        crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"],
        json!({
            "type": "object",
            "properties": {
                "apiVersion": {"type": "string"},
                "kind": {"type": "string"},
                "metadata": {"type": "object"},
            },
            "x-kubernetes-preserve-unknown-fields": true,
        })
    );
}

/// A container `#[serde(default)]`: any field may be absent, and reads as the root's default.
#[derive(Clone, Debug, Default, Deserialize, Informer)]
#[informer(group = "example.com", version = "v1")]
#[serde(default)]
pub struct Defaulted {
    metadata: ObjectMeta,
    spec: DefaultedSpec,
}

/// A spec whose default is not all zeroes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DefaultedSpec {
    /// How many.
    pub size: i32,
}

impl Default for DefaultedSpec {
    fn default() -> Self {
        Self { size: 3 }
    }
}

#[test]
fn container_default_makes_every_field_optional() {
    let crd = serde_json::to_value(Defaulted::crd()).expect("a manifest encodes");
    let schema = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
    assert!(schema.get("required").is_none(), "{schema}");
    // schemars writes the root's default, as it would for a JsonSchema root.
    assert_eq!(schema["properties"]["spec"]["default"], json!({"size": 3}));
    let read: Defaulted =
        serde_json::from_value(json!({"apiVersion": "example.com/v1", "kind": "Defaulted"}))
            .expect("decodes");
    assert_eq!(read.spec, DefaultedSpec { size: 3 });
}

/// A flattened map beside fields.
#[derive(Clone, Debug, Deserialize, Informer)]
#[informer(group = "example.com", version = "v1")]
pub struct Open {
    metadata: ObjectMeta,
    spec: OpenSpec,
}

/// Known fields, and the rest kept.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct OpenSpec {
    /// How many.
    pub size: i32,
    /// Everything else.
    #[serde(flatten)]
    pub rest: BTreeMap<String, Value>,
}

#[test]
fn flattened_map_beside_fields_preserves_unknown_fields() {
    let crd = serde_json::to_value(Open::crd()).expect("a manifest encodes");
    let spec = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
    // Structural: `properties` and `additionalProperties` never together.
    assert!(spec.get("additionalProperties").is_none(), "{spec}");
    assert_eq!(spec["x-kubernetes-preserve-unknown-fields"], true);
    assert_eq!(spec["properties"]["size"]["type"], "integer");
}

/// A recursive type in the spec.
#[derive(Clone, Debug, Deserialize, Informer)]
#[informer(group = "example.com", version = "v1")]
pub struct Tree {
    metadata: ObjectMeta,
    spec: Node,
}

/// A node of a tree.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct Node {
    /// The children.
    pub children: Vec<Node>,
}

#[test]
fn recursive_type_is_an_error_naming_it() {
    let error = Tree::try_crd().expect_err("a recursive schema has no CRD");
    assert!(
        matches!(&error, informer_runtime::crd::Error::Recursive { type_name, path, .. }
            if type_name == "Node" && path == ".spec.children[*]"),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(
        message.starts_with(
            "the schema of Tree cannot be written out: `Node` contains itself (Node → Node) at \
             `.spec.children[*]`"
        ),
        "{message}"
    );
    assert!(message.contains("serde_json::Value"), "{message}");
    assert!(message.contains("schema_with"), "{message}");
}

/// A recursion through two types and a map.
#[derive(Clone, Debug, Deserialize, Informer)]
#[informer(group = "example.com", version = "v1")]
pub struct Graph {
    metadata: ObjectMeta,
    spec: GraphSpec,
}

/// The root of a graph.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct GraphSpec {
    /// The first vertex.
    pub root: Option<Vertex>,
}

/// A vertex.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct Vertex {
    /// Its edges, by name.
    pub edges: BTreeMap<String, Edge>,
}

/// An edge.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct Edge {
    /// Where it leads.
    pub to: Option<Box<Vertex>>,
}

#[test]
fn indirect_recursion_names_the_cycle() {
    let message = Graph::try_crd().expect_err("a recursive schema has no CRD").to_string();
    assert!(
        message.contains(
            "`Vertex` contains itself (Vertex → Edge → Vertex) at `.spec.root.edges.*.to`"
        ),
        "{message}"
    );
}

#[test]
#[should_panic(expected = "the schema of Tree cannot be written out")]
fn crd_panics_with_the_same_message() {
    let _ = Tree::crd();
}

/// A container `#[serde(default)]` on a spec type (schemars reads it there itself), and a
/// flattened struct whose fields join the spec's.
#[derive(Clone, Debug, Deserialize, Informer)]
#[informer(group = "example.com", version = "v1")]
pub struct Tuned {
    metadata: ObjectMeta,
    spec: TunedSpec,
}

/// Every field may be absent.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, rename_all = "camelCase")]
pub struct TunedSpec {
    /// How many.
    pub max_size: i32,
    /// A name.
    pub name: Option<String>,
    /// Common fields.
    #[serde(flatten)]
    pub common: Common,
}

/// Fields several specs share.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Common {
    /// A priority.
    pub priority: Option<i32>,
}

#[test]
fn container_default_on_a_spec_type_and_a_flattened_struct() {
    let crd = serde_json::to_value(Tuned::crd()).expect("a manifest encodes");
    let spec = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
    assert!(spec.get("required").is_none(), "{spec}");
    assert_eq!(spec["properties"]["maxSize"]["default"], 0, "{spec}");
    // The flattened struct's fields are the spec's own; no map, so unknown fields are pruned.
    assert_eq!(spec["properties"]["priority"]["type"], "integer", "{spec}");
    assert!(spec.get("x-kubernetes-preserve-unknown-fields").is_none(), "{spec}");
    let read: Tuned = serde_json::from_value(json!({"metadata": {}, "spec": {}})).expect("decodes");
    assert_eq!(read.spec, TunedSpec::default());
}

/// A flattened map in a variant of an internally tagged enum.
#[derive(Clone, Debug, Deserialize, Informer)]
#[informer(group = "example.com", version = "v1")]
pub struct Plugin {
    metadata: ObjectMeta,
    spec: PluginSpec,
}

/// A plugin: a known one, or any other with its settings kept.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type")]
pub enum PluginSpec {
    /// A known plugin.
    Known {
        /// Its level.
        level: i32,
    },
    /// Another plugin.
    Other {
        /// Its name.
        name: String,
        /// Its settings, whatever they are.
        #[serde(flatten)]
        settings: BTreeMap<String, Value>,
    },
}

#[test]
fn flattened_map_in_an_enum_variant_preserves_unknown_fields() {
    let crd = serde_json::to_value(Plugin::crd()).expect("a manifest encodes");
    let spec = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
    // On the object, where the API server reads it, not inside `oneOf`, where it may not be.
    assert_eq!(spec["x-kubernetes-preserve-unknown-fields"], true, "{spec}");
    for variant in spec["oneOf"].as_array().expect("the variants") {
        assert!(variant.get("x-kubernetes-preserve-unknown-fields").is_none(), "{variant}");
        assert!(variant.get("additionalProperties").is_none(), "{variant}");
    }
}
