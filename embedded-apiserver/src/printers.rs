//! Table printers of built-in types: the columns and cells kube-apiserver's own printers
//! (`pkg/printers/internalversion`) give `kubectl get`.
//!
//! Only some built-ins have one here (config maps, secrets, namespaces, service accounts,
//! leases, pods); the others keep the generic convertor's `Name` and `Created At` (see
//! `table.rs`). Cells follow the real printers for what this server stores: a pod that no
//! kubelet runs is `Pending`, `0/N` ready, with no IP and no node.

use serde_json::{Value, json};

use crate::catalog::ApiResource;
use crate::util::{human_duration, parse_rfc3339, unix_now};

/// `ObjectMeta.name`'s description, as the printers copy it from the API's documentation.
pub(crate) const NAME_DESCRIPTION: &str = "Name must be unique within a namespace. Is required \
when creating resources, although some resources may allow a client to request the generation \
of an appropriate name automatically. Name is primarily intended for creation idempotence and \
configuration definition. Cannot be updated. More info: \
https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";

/// `ObjectMeta.creationTimestamp`'s description (the `Age` and `Created At` columns).
pub(crate) const CREATED_DESCRIPTION: &str = "CreationTimestamp is a timestamp representing the \
server time when this object was created. It is not guaranteed to be set in happens-before order \
across separate operations. Clients may not set this value. It is represented in RFC3339 form \
and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: \
https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/// One column of a built-in printer: name, priority (1: only in `-o wide`), description.
type Column = (&'static str, i64, &'static str);

/// The cells of one object, after `Name`.
type Cells = fn(&Value) -> Vec<Value>;

/// A built-in type's printer: its columns after `Name`, and how to fill them.
pub(crate) struct Printer {
    columns: &'static [Column],
    cells: Cells,
}

impl Printer {
    /// The `columnDefinitions` of a table (every printer column is a string column).
    pub(crate) fn column_definitions(&self) -> Vec<Value> {
        let column = |name: &str, format: &str, priority: i64, description: &str| {
            json!({"name": name, "type": "string", "format": format, "description": description,
                   "priority": priority})
        };
        let mut columns = vec![column("Name", "name", 0, NAME_DESCRIPTION)];
        columns.extend(
            self.columns
                .iter()
                .map(|(name, priority, description)| column(name, "", *priority, description)),
        );
        columns
    }

    /// The cells of one row: the name, then the printer's cells.
    pub(crate) fn cells(&self, obj: &Value) -> Value {
        let name = obj.pointer("/metadata/name").cloned().unwrap_or_else(|| json!(""));
        let mut cells = vec![name];
        cells.extend((self.cells)(obj));
        Value::Array(cells)
    }
}

/// The printer of a built-in type, if this server has its real one.
pub(crate) fn printer(resource: &ApiResource) -> Option<Printer> {
    if !resource.builtin {
        return None;
    }
    let printer = match (resource.ty.group.as_str(), resource.ty.plural.as_str()) {
        ("", "configmaps") => Printer { columns: CONFIG_MAP, cells: config_map },
        ("", "secrets") => Printer { columns: SECRET, cells: secret },
        ("", "namespaces") => Printer { columns: NAMESPACE, cells: namespace },
        ("", "serviceaccounts") => Printer { columns: AGE_ONLY, cells: age_only },
        ("coordination.k8s.io", "leases") => Printer { columns: LEASE, cells: lease },
        ("", "pods") => Printer { columns: POD, cells: pod },
        _ => return None,
    };
    Some(printer)
}

const AGE: Column = ("Age", 0, CREATED_DESCRIPTION);

const CONFIG_MAP: &[Column] = &[
    (
        "Data",
        0,
        "Data contains the configuration data. Each key must consist of alphanumeric characters, \
         '-', '_' or '.'. Values with non-UTF-8 byte sequences must use the BinaryData field. The \
         keys stored in Data must not overlap with the keys in the BinaryData field, this is \
         enforced during validation process.",
    ),
    AGE,
];

const SECRET: &[Column] = &[
    (
        "Type",
        0,
        "Used to facilitate programmatic handling of secret data. More info: \
         https://kubernetes.io/docs/concepts/configuration/secret/#secret-types",
    ),
    (
        "Data",
        0,
        "Data contains the secret data. Each key must consist of alphanumeric characters, '-', '_' \
         or '.'. The serialized form of the secret data is a base64 encoded string, representing \
         the arbitrary (possibly non-string) data value here. Described in \
         https://tools.ietf.org/html/rfc4648#section-4",
    ),
    AGE,
];

const NAMESPACE: &[Column] = &[("Status", 0, "The status of the namespace"), AGE];

const AGE_ONLY: &[Column] = &[AGE];

const LEASE: &[Column] = &[
    (
        "Holder",
        0,
        "holderIdentity contains the identity of the holder of a current lease. If Coordinated \
         Leader Election is used, the holder identity must be equal to the elected \
         LeaseCandidate.metadata.name field.",
    ),
    AGE,
];

const POD: &[Column] = &[
    ("Ready", 0, "The aggregate readiness state of this pod for accepting traffic."),
    ("Status", 0, "The aggregate status of the containers in this pod."),
    (
        "Restarts",
        0,
        "The number of times the containers in this pod have been restarted and when the last \
         container in this pod has restarted.",
    ),
    AGE,
    (
        "IP",
        1,
        "podIP address allocated to the pod. Routable at least within the cluster. Empty if not \
         yet allocated.",
    ),
    (
        "Node",
        1,
        "NodeName indicates in which node this pod is scheduled. If empty, this pod is a \
         candidate for scheduling by the scheduler defined in schedulerName. Once this field is \
         set, the kubelet for this node becomes responsible for the lifecycle of this pod. This \
         field should not be used to express a desire for the pod to be scheduled on a specific \
         node. https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#nodename",
    ),
    (
        "Nominated Node",
        1,
        "nominatedNodeName is set only when this pod preempts other pods on the node, but it \
         cannot be scheduled right away as preemption victims receive their graceful termination \
         periods. This field does not guarantee that the pod will be scheduled on this node. \
         Scheduler may decide to place the pod elsewhere if other nodes become available sooner. \
         Scheduler may also decide to give the resources on this node to a higher priority pod \
         that is created after preemption. As a result, this field may be different than \
         PodSpec.nodeName when the pod is scheduled.",
    ),
    (
        "Readiness Gates",
        1,
        "If specified, all readiness gates will be evaluated for pod readiness. A pod is ready \
         when all its containers are ready AND all conditions specified in the readiness gates \
         have status equal to \"True\" More info: \
         https://git.k8s.io/enhancements/keps/sig-network/580-pod-readiness-gates",
    ),
];

/// `translateTimestampSince`: the age of the object, `<unknown>` without a timestamp.
fn age(obj: &Value) -> Value {
    let created = obj.pointer("/metadata/creationTimestamp").and_then(Value::as_str);
    match created.and_then(parse_rfc3339) {
        Some(t) => json!(human_duration(unix_now() - t)),
        None => json!("<unknown>"),
    }
}

/// The number of entries of an object-valued field.
fn entries(obj: &Value, field: &str) -> usize {
    obj.get(field).and_then(Value::as_object).map_or(0, serde_json::Map::len)
}

/// A string field, or `<none>` when it is unset or empty.
fn or_none(value: Option<&Value>) -> Value {
    json!(value.and_then(Value::as_str).filter(|s| !s.is_empty()).unwrap_or("<none>"))
}

fn config_map(obj: &Value) -> Vec<Value> {
    vec![json!(entries(obj, "data") + entries(obj, "binaryData")), age(obj)]
}

fn secret(obj: &Value) -> Vec<Value> {
    let type_ = obj.get("type").cloned().unwrap_or_else(|| json!(""));
    vec![type_, json!(entries(obj, "data")), age(obj)]
}

fn namespace(obj: &Value) -> Vec<Value> {
    let phase = obj.pointer("/status/phase").cloned().unwrap_or_else(|| json!(""));
    vec![phase, age(obj)]
}

fn age_only(obj: &Value) -> Vec<Value> {
    vec![age(obj)]
}

fn lease(obj: &Value) -> Vec<Value> {
    let holder = obj.pointer("/spec/holderIdentity").cloned().unwrap_or_else(|| json!(""));
    vec![holder, age(obj)]
}

/// `printPod` for what this server stores: readiness and restarts from the container
/// statuses, the phase (or the status' reason, or `Terminating` once deleted), addresses.
fn pod(obj: &Value) -> Vec<Value> {
    let list = |pointer: &str| {
        obj.pointer(pointer).and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default()
    };
    let statuses = list("/status/containerStatuses");
    let ready = statuses.iter().filter(|s| s.get("ready") == Some(&json!(true))).count();
    // Saturating: clients write statuses, `restartCount: i64::MAX` included.
    let restarts = statuses
        .iter()
        .filter_map(|s| s.get("restartCount").and_then(Value::as_i64))
        .fold(0_i64, i64::saturating_add);
    let total = list("/spec/containers").len();
    let reason = obj
        .pointer("/status/reason")
        .and_then(Value::as_str)
        .filter(|r| !r.is_empty())
        .or_else(|| obj.pointer("/status/phase").and_then(Value::as_str))
        .unwrap_or_default();
    let deleted = obj.pointer("/metadata/deletionTimestamp").is_some_and(|t| !t.is_null());
    let status = if deleted && reason != "NodeLost" { "Terminating" } else { reason };
    let gates = list("/spec/readinessGates");
    let readiness_gates = if gates.is_empty() {
        json!("<none>")
    } else {
        let conditions = list("/status/conditions");
        let passed = gates
            .iter()
            .filter(|gate| {
                conditions.iter().any(|c| {
                    c.get("type") == gate.get("conditionType")
                        && c.get("status") == Some(&json!("True"))
                })
            })
            .count();
        json!(format!("{passed}/{}", gates.len()))
    };
    vec![
        json!(format!("{ready}/{total}")),
        json!(status),
        json!(restarts.to_string()),
        age(obj),
        or_none(obj.pointer("/status/podIP")),
        or_none(obj.pointer("/spec/nodeName")),
        or_none(obj.pointer("/status/nominatedNodeName")),
        readiness_gates,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;

    #[test]
    fn built_in_printers_fill_their_columns() {
        let catalog = Catalog::builtin();
        let cells = |plural: &str, obj: Value| {
            let resource = catalog.find("", "v1", plural).unwrap();
            let printer = printer(&resource).unwrap();
            let columns = printer.column_definitions();
            let cells = printer.cells(&obj);
            assert_eq!(columns.len(), cells.as_array().unwrap().len(), "{plural}");
            cells
        };
        let cm = json!({"metadata": {"name": "a"}, "data": {"x": "1", "y": "2"}});
        assert_eq!(cells("configmaps", cm), json!(["a", 2, "<unknown>"]));
        let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]},
                         "status": {"phase": "Pending"}});
        assert_eq!(
            cells("pods", pod),
            json!([
                "p",
                "0/1",
                "Pending",
                "0",
                "<unknown>",
                "<none>",
                "<none>",
                "<none>",
                "<none>"
            ])
        );
        let ns = json!({"metadata": {"name": "n", "deletionTimestamp": "2024-01-01T00:00:00Z"},
                        "status": {"phase": "Terminating"}});
        assert_eq!(cells("namespaces", ns)[1], "Terminating");
        assert!(printer(&catalog.find("apps", "v1", "deployments").unwrap()).is_none());
    }
}
