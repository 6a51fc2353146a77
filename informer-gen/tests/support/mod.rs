//! What `cli.rs` and `builder.rs` share: the two CRDs their tests generate code from.

/// A namespaced `Widget` in `example.com`, served as `v1beta1` and `v1` (the storage version),
/// with a documented `spec.size`.
pub const WIDGETS: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions:
  - name: v1beta1
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: integer}}}
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer, format: int32, description: How big it is.}
";

/// A cluster-scoped `Gadget` in `tools.example.org`, one version.
pub const GADGETS: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.tools.example.org}
spec:
  group: tools.example.org
  names: {kind: Gadget, plural: gadgets}
  scope: Cluster
  versions:
  - name: v1alpha1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {name: {type: string}}}
";
