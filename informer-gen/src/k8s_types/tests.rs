//! The safety rules, each with a schema that differs from a matching one in exactly that way
//! (on a small catalog of made-up types, so that the rules are tested whatever Kubernetes
//! changes), and the choice among types and the versions (on the real catalog).

use super::catalog::{Catalog, Minors};
use super::matcher::{Found, Matcher};
use crate::schema::openapi::Schema;

/// Types shaped to exercise one rule each. `Widget`'s `added` exists from 1.35 on.
const CATALOG: &str = "\
T\t33-37\tapi::core::v1::Widget\tstruct\tdefault=33-37\t-
F\t33-37\tblob\toptional\tbytes\t-\t-
F\t33-37\tcount\toptional\tint32\t-\t-
F\t33-37\tmode\toptional\tstring\t-\t-
F\t33-37\tenabled\toptional\tbool\t-\t-
F\t33-37\tratio\toptional\tdouble\t-\t-
F\t33-37\tlabels\toptional\t{string}\t-\t-
F\t33-37\tlimits\toptional\t{@apimachinery::pkg::api::resource::Quantity}\t-\t-
F\t33-37\tname\trequired\tstring\t-\t-
F\t33-37\tports\toptional\t[@api::core::v1::Port]\tmap:port\t-
F\t33-37\tsize\toptional\tint64\t-\t-
F\t33-37\ttags\toptional\t[string]\tset\t-
F\t33-37\ttarget\toptional\t@apimachinery::pkg::util::intstr::IntOrString\t-\t-
F\t33-37\ttemplate\toptional\t@api::core::v1::Template\t-\t-
F\t33-37\twhen\toptional\t@apimachinery::pkg::apis::meta::v1::Time\t-\t-
F\t33-37\tstamp\toptional\t@apimachinery::pkg::apis::meta::v1::MicroTime\t-\t-
F\t35-37\tadded\toptional\tstring\t-\t-
T\t33-37\tapi::core::v1::Port\tstruct\tdefault=33-37\t-
F\t33-37\tport\trequired\tint32\t-\t-
F\t33-37\tprotocol\toptional\tstring\t-\t-
T\t33-37\tapi::core::v1::Template\tstruct\tdefault=33-37\t-
F\t33-37\tmetadata\toptional\t@apimachinery::pkg::apis::meta::v1::ObjectMeta\t-\t-
F\t33-37\tspec\toptional\t@api::core::v1::Port\t-\t-
T\t33-37\tapimachinery::pkg::apis::meta::v1::ObjectMeta\tstruct\tdefault=33-37\t-
F\t33-37\tannotations\toptional\t{string}\t-\t-
F\t33-37\tlabels\toptional\t{string}\t-\t-
F\t33-37\tname\toptional\tstring\t-\t-
F\t33-37\tnamespace\toptional\tstring\t-\t-
F\t33-37\tuid\toptional\tstring\t-\t-
T\t33-37\tapimachinery::pkg::api::resource::Quantity\tquantity\tdefault=33-37\t-
T\t33-37\tapimachinery::pkg::util::intstr::IntOrString\tint-or-string\t-\t-
T\t33-37\tapimachinery::pkg::apis::meta::v1::Time\ttime\t-\t-
T\t33-37\tapimachinery::pkg::apis::meta::v1::MicroTime\tmicro-time\t-\t-
";

/// A `Widget` schema every rule passes: every field but `added` (1.35+) and the two that never
/// match (`limits`, `stamp`), with its types.
const WIDGET: &str = "
type: object
required: [name]
properties:
  blob: {type: string, format: byte}
  count: {type: integer, format: int32, maximum: 100}
  enabled: {type: boolean}
  mode: {type: string}
  ratio: {type: number}
  labels: {type: object, additionalProperties: {type: string}}
  name: {type: string}
  ports:
    type: array
    x-kubernetes-list-type: map
    x-kubernetes-list-map-keys: [port, protocol]
    items:
      type: object
      required: [port]
      properties:
        port: {type: integer, format: int32}
        protocol: {type: string, enum: [TCP, UDP]}
  size: {type: integer, format: int64}
  tags: {type: array, x-kubernetes-list-type: set, items: {type: string}}
  target: {x-kubernetes-int-or-string: true, anyOf: [{type: integer}, {type: string}]}
  template:
    type: object
    properties:
      metadata: {type: object}
      spec: {type: object, required: [port], properties: {port: {type: integer, format: int32}, protocol: {type: string}}}
  when: {type: string, format: date-time}
";

fn schema(yaml: &str) -> Schema {
    serde_yaml_ng::from_str(yaml).unwrap()
}

fn catalog() -> Catalog {
    Catalog::parse(CATALOG).unwrap()
}

/// `WIDGET` with the value at `pointer` (`/properties/size/format`) set to `value`, or taken
/// out for `None`.
fn widget(pointer: &str, value: Option<serde_json::Value>) -> Schema {
    let mut document: serde_json::Value = serde_yaml_ng::from_str(WIDGET).unwrap();
    let (parent, key) = pointer.rsplit_once('/').unwrap();
    let parent = document.pointer_mut(parent).unwrap().as_object_mut().unwrap();
    match value {
        Some(value) => parent.insert(key.to_owned(), value),
        None => parent.remove(key),
    };
    serde_json::from_value(document).unwrap()
}

/// Why `schema` is not a `Widget` in 1.37, or `None` if it is.
fn miss(schema: &Schema) -> Option<String> {
    let catalog = catalog();
    let matcher = Matcher::new(&catalog, Minors::one(37));
    matcher.check(schema, &catalog.types["api::core::v1::Widget"], 37).err()
}

#[track_caller]
fn assert_miss(schema: &Schema, expected: &str) {
    let reason = miss(schema).expect("the schema must not be mapped");
    assert!(reason.contains(expected), "{reason}");
}

#[test]
fn a_schema_with_the_types_fields_kinds_and_list_types_is_the_type() {
    assert_eq!(miss(&schema(WIDGET)), None);
    // Fields the schema lacks are optional in the type (written before Kubernetes added them).
    assert_eq!(miss(&widget("/properties/blob", None)), None);
    // An int32 fits an int64 field; a list without a declared list type fits any.
    assert_eq!(miss(&widget("/properties/size/format", Some("int32".into()))), None);
    assert_eq!(miss(&widget("/properties/tags/x-kubernetes-list-type", None)), None);
}

#[test]
fn a_property_the_type_lacks_is_not_mapped() {
    // As for a CRD written for a newer Kubernetes: the type would drop the field.
    assert_miss(
        &widget("/properties/color", Some(serde_json::json!({"type": "string"}))),
        "`color` is no field of Widget",
    );
}

#[test]
fn a_field_the_type_requires_and_the_schema_does_not_is_not_mapped() {
    // k8s-openapi reads a missing `name` as "" and writes it back: the object changes.
    assert_miss(
        &widget("/required", Some(serde_json::json!([]))),
        "Widget requires `name`, which the schema does not",
    );
    assert_miss(
        &widget("/properties/ports/items/required", Some(serde_json::json!([]))),
        ".ports[*]: Port requires `port`",
    );
    // Required in the type, but null allowed by the schema.
    assert_miss(&widget("/properties/name/nullable", Some(true.into())), ".name: nullable");
}

#[test]
fn a_property_of_another_type_or_format_is_not_mapped() {
    assert_miss(
        &widget("/properties/size", Some(serde_json::json!({"type": "string"}))),
        ".size: string where k8s-openapi has an integer (int64)",
    );
    // An int64 (or an integer of no format) may not fit an int32 field.
    assert_miss(
        &widget("/properties/ports/items/properties/port/format", Some("int64".into())),
        ".ports[*].port: integer (int64) where k8s-openapi has an integer (int32)",
    );
    // format: date-time is Time; a plain string is not.
    assert_miss(
        &widget("/properties/when", Some(serde_json::json!({"type": "string"}))),
        ".when: string where k8s-openapi has Time",
    );
    // format: byte is ByteString; a plain string is not.
    assert_miss(
        &widget("/properties/blob", Some(serde_json::json!({"type": "string"}))),
        ".blob: string where k8s-openapi has a string (byte)",
    );
    // int-or-string is IntOrString; a string is not.
    assert_miss(
        &widget("/properties/target", Some(serde_json::json!({"type": "string"}))),
        ".target: string where k8s-openapi has IntOrString",
    );
    assert_miss(
        &widget(
            "/properties/labels",
            Some(serde_json::json!({"type": "array", "items": {"type": "string"}})),
        ),
        ".labels: a map is given as array",
    );
}

#[test]
fn a_declared_list_type_other_than_the_types_is_not_mapped() {
    assert_miss(
        &widget("/properties/tags/x-kubernetes-list-type", Some("atomic".into())),
        ".tags: x-kubernetes-list-type atomic, where Kubernetes has set",
    );
    // A map list must be keyed by the type's keys.
    assert_miss(
        &widget(
            "/properties/ports/x-kubernetes-list-map-keys",
            Some(serde_json::json!(["protocol"])),
        ),
        ".ports: x-kubernetes-list-type map (keys protocol), where Kubernetes has map (keys port)",
    );
    assert_miss(
        &widget("/properties/ports/items/nullable", Some(true.into())),
        ".ports: nullable list items",
    );
}

#[test]
fn values_k8s_openapi_would_not_write_back_as_read_are_not_mapped() {
    // A quantity written as a number comes back as a string.
    let quantity = serde_json::json!({
        "type": "object",
        "additionalProperties": {
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "pattern": "^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$",
            "x-kubernetes-int-or-string": true,
        },
    });
    assert_miss(
        &widget("/properties/limits", Some(quantity)),
        ".limits.*: a quantity: k8s-openapi's Quantity reads a number",
    );
    // A MicroTime is written with microseconds.
    assert_miss(
        &widget(
            "/properties/stamp",
            Some(serde_json::json!({"type": "string", "format": "date-time"})),
        ),
        ".stamp: a MicroTime",
    );
    // Fields beyond the properties would be dropped.
    assert_miss(
        &widget("/x-kubernetes-preserve-unknown-fields", Some(true.into())),
        "x-kubernetes-preserve-unknown-fields",
    );
    assert_miss(
        &widget("/additionalProperties", Some(serde_json::json!({"type": "string"}))),
        "additionalProperties",
    );
    assert_miss(
        &widget("/oneOf", Some(serde_json::json!([{"properties": {"color": {"type": "string"}}}]))),
        "only inside oneOf",
    );
}

#[test]
fn a_nested_node_that_is_not_its_fields_type_is_not_mapped() {
    // As a Container whose `resources` is not a ResourceRequirements is not a Container.
    assert_miss(
        &widget(
            "/properties/template/properties/spec/properties/port",
            Some(serde_json::json!({"type": "string"})),
        ),
        ".template.spec.port: string where k8s-openapi has an integer (int32)",
    );
    // A bare object is an embedded ObjectMeta (controller-gen writes it so), nowhere else.
    assert_miss(
        &widget(
            "/properties/template/properties/spec",
            Some(serde_json::json!({"type": "object"})),
        ),
        ".template.spec: Port requires `port`",
    );
}

#[test]
fn a_schema_lacking_many_of_the_types_fields_is_another_type() {
    let catalog = catalog();
    let matcher = Matcher::new(&catalog, Minors::one(37));
    let meta = &catalog.types["apimachinery::pkg::apis::meta::v1::ObjectMeta"];
    // `{labels, annotations}` alone, where nothing says it is an ObjectMeta.
    let partial = schema(
        "{type: object, properties: {labels: {type: object, additionalProperties: {type: string}}, \
         annotations: {type: object, additionalProperties: {type: string}}}}",
    );
    let reason = matcher.check(&partial, meta, 37).unwrap_err();
    assert!(reason.contains("the schema has 2 of ObjectMeta's 5 fields"), "{reason}");
    // A `Port` with `protocol` only lacks as many fields as it has.
    let port = schema("{type: object, properties: {protocol: {type: string}}}");
    assert!(matcher.check(&port, &catalog.types["api::core::v1::Port"], 37).is_err());
}

#[test]
fn a_field_of_a_newer_kubernetes_maps_only_in_that_version() {
    let catalog = catalog();
    let added = widget("/properties/added", Some(serde_json::json!({"type": "string"})));
    let def = &catalog.types["api::core::v1::Widget"];
    assert!(Matcher::new(&catalog, Minors::one(35)).check(&added, def, 35).is_ok());
    let reason = Matcher::new(&catalog, Minors::one(34)).check(&added, def, 34).unwrap_err();
    assert!(reason.contains("`added` is no field of Widget in Kubernetes 1.34"), "{reason}");
    // Without a version, every version must match.
    match Matcher::new(&catalog, Minors::range(33, 37)).identify(&added) {
        Found::Miss(def, reason) => {
            assert_eq!(def.path, "api::core::v1::Widget");
            assert!(reason.contains("in Kubernetes 1.33"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        Matcher::new(&catalog, Minors::range(35, 37)).identify(&added),
        Found::Type(_)
    ));
}

/// The real catalog, for Kubernetes `1.minor` (all versions for `None`).
fn identify(minor: Option<u32>, yaml: &str) -> Result<String, String> {
    let matcher = super::matcher(minor).unwrap();
    match matcher.identify(&schema(yaml)) {
        Found::Type(def) => Ok(def.path.clone()),
        Found::Miss(def, reason) => Err(format!("{}: {reason}", def.path)),
        Found::Nothing => Err("nothing".to_owned()),
    }
}

/// `metav1.Condition` as controller-gen writes it (descriptions cut to their first sentence).
const CONDITION: &str = "
type: object
description: Condition contains details for one aspect of the current state of this API Resource.
required: [lastTransitionTime, message, reason, status, type]
properties:
  lastTransitionTime:
    type: string
    format: date-time
    description: |-
      lastTransitionTime is the last time the condition transitioned from one status to another.
      This should be when the underlying condition changed.
  message:
    type: string
    maxLength: 32768
    description: message is a human readable message indicating details about the transition.
  observedGeneration:
    type: integer
    format: int64
    minimum: 0
    description: observedGeneration represents the .metadata.generation that the condition was set based upon.
  reason:
    type: string
    maxLength: 1024
    minLength: 1
    description: reason contains a programmatic identifier indicating the reason for the condition's last transition.
  status:
    type: string
    enum: ['True', 'False', Unknown]
    description: status of the condition, one of True, False, Unknown.
  type: {type: string, maxLength: 316, description: type of condition in CamelCase or in foo.example.com/CamelCase.}
";

#[test]
fn the_real_catalog_knows_conditions_tolerations_and_probes() {
    assert_eq!(identify(None, CONDITION).unwrap(), "apimachinery::pkg::apis::meta::v1::Condition");
    // A condition of the CRD's own, where only type and status are required: by its
    // descriptions a Condition (not the PodCondition its shape would also fit), which it is not.
    let own = CONDITION.replace(
        "required: [lastTransitionTime, message, reason, status, type]",
        "required: [status, type]",
    );
    let reason = identify(None, &own).unwrap_err();
    assert!(
        reason.contains("Condition requires `lastTransitionTime`, `message`, `reason`"),
        "{reason}"
    );
    let toleration = "
type: object
properties:
  effect: {type: string}
  key: {type: string}
  operator: {type: string}
  tolerationSeconds: {type: integer, format: int64}
  value: {type: string}
";
    assert_eq!(identify(None, toleration).unwrap(), "api::core::v1::Toleration");
    // HTTPGetAction's `protocol` is new in 1.37.
    let get = "
type: object
required: [port]
properties:
  host: {type: string}
  path: {type: string}
  port: {x-kubernetes-int-or-string: true, anyOf: [{type: integer}, {type: string}]}
  protocol: {type: string}
  scheme: {type: string}
";
    assert_eq!(identify(Some(37), get).unwrap(), "api::core::v1::HTTPGetAction");
    let reason = identify(Some(36), get).unwrap_err();
    assert!(
        reason.contains("`protocol` is no field of HTTPGetAction in Kubernetes 1.36"),
        "{reason}"
    );
}

#[test]
fn small_or_ambiguous_schemas_are_not_mapped() {
    // `{name, value}`, without descriptions: a Sysctl, an HTTPHeader, or the CRD's own.
    let pair = "{type: object, required: [name, value], properties: {name: {type: string}, value: {type: string}}}";
    assert_eq!(identify(None, pair).unwrap_err(), "nothing");
    // With HTTPHeader's descriptions, it is one.
    let header = "
type: object
required: [name, value]
properties:
  name: {type: string, description: 'The header field name. This will be canonicalized upon output.'}
  value: {type: string, description: The header field value}
";
    assert_eq!(identify(None, header).unwrap(), "api::core::v1::HTTPHeader");
    // The shape of both SecretKeySelector and ConfigMapKeySelector.
    let selector = "
type: object
required: [key, name]
properties:
  key: {type: string}
  name: {type: string}
  optional: {type: boolean}
";
    let reason = identify(None, selector).unwrap_err();
    assert!(reason.contains("equally well"), "{reason}");
    assert!(
        reason.contains("ConfigMapKeySelector") && reason.contains("SecretKeySelector"),
        "{reason}"
    );
}
