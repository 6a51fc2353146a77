//! Kubernetes' own types in custom resources (issue 34), both ways:
//! - generated kinds: where a CRD's schema is one of k8s-openapi's types, the generated field is
//!   that type, so code written for Kubernetes' types takes it unchanged (informer-controller's
//!   condition helpers on a status's `conditions`, a `Taint`);
//! - derived kinds: a field of a k8s-openapi type gets that type's schema in `crd()` (through
//!   k8s-openapi's `schemars` feature), which the real kube-apiserver accepts and keeps objects
//!   of, and which informer-gen reads back to the same types.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "in a test, a failed unwrap is a failed assertion"
)]

use std::time::{Duration, Instant};

use informer_controller::conditions::{self, ConditionStatus};
use informer_crd_corpus::corpus::karpenter::v1::NodePool;
use informer_derive::Informer;
use informer_tests::kube_apiserver::KubeApiServer;
use k8s_openapi::api::core::v1::{Container, Probe, Taint, Toleration};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta, Time};
use serde::{Deserialize, Serialize};

/// A `NodePool` as Karpenter's API server holds one: a taint, and a status with a condition.
fn node_pool() -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "default"},
        "spec": {
            "template": {
                "spec": {
                    "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                    "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}],
                    "taints": [{"key": "gpu", "value": "true", "effect": "NoSchedule"}],
                },
            },
        },
        "status": {
            "conditions": [{
                "type": "Ready",
                "status": "False",
                "reason": "NodeClassNotReady",
                "message": "waiting",
                "lastTransitionTime": "2025-06-01T12:00:00Z",
                "observedGeneration": 1,
            }],
        },
    })
}

#[test]
fn a_generated_status_takes_informer_controllers_condition_helpers() {
    let mut pool: NodePool = serde_json::from_value(node_pool()).unwrap();
    let status = pool.status.as_mut().unwrap();
    // `Vec<meta::v1::Condition>`, not a struct of the CRD's own.
    let list: &mut Vec<Condition> = status.conditions.as_mut().unwrap();
    assert!(conditions::is_false(list, "Ready"));
    let noon = Time("2025-06-02T12:00:00Z".parse().unwrap());
    let ready = conditions::new("Ready", ConditionStatus::True, "NodeClassReady", "");
    assert!(conditions::set_at(list, ready, noon.clone()));
    assert!(conditions::is_true(list, "Ready"));
    assert_eq!(conditions::find(list, "Ready").unwrap().last_transition_time, noon);

    let written = serde_json::to_value(&pool).unwrap();
    assert_eq!(
        written["status"]["conditions"],
        serde_json::json!([{
            "type": "Ready",
            "status": "True",
            "reason": "NodeClassReady",
            "message": "",
            "lastTransitionTime": "2025-06-02T12:00:00Z",
        }])
    );
}

#[test]
fn a_generated_pod_spec_field_is_kubernetes_own_type_and_round_trips() {
    let json = node_pool();
    let pool: NodePool = serde_json::from_value(json.clone()).unwrap();
    let taints: &[Taint] = pool.spec.template.spec.taints.as_deref().unwrap();
    assert_eq!(taints[0].effect, "NoSchedule");
    assert_eq!(serde_json::to_value(&pool).unwrap(), json);
}

/// A kind of this test's own, written in Rust, with Kubernetes' types in its spec and status.
#[derive(Clone, Debug, PartialEq, Deserialize, Informer)]
#[informer(group = "k8s-types.example.com", version = "v1", status)]
pub struct Workload {
    /// Standard object metadata.
    pub metadata: ObjectMeta,
    /// The desired state.
    pub spec: WorkloadSpec,
    /// The observed state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<WorkloadStatus>,
}

/// The desired state of a workload.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadSpec {
    /// What runs.
    pub containers: Vec<Container>,
    /// Where it may run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<Toleration>,
    /// How the workload is checked as a whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe: Option<Probe>,
}

/// The observed state of a workload.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WorkloadStatus {
    /// The latest observations.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

/// The schema of `spec.<field>` in `Workload::crd()`.
fn spec_property(field: &str) -> serde_json::Value {
    let crd = serde_json::to_value(Workload::crd()).unwrap();
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
        [field]
        .clone()
}

#[test]
fn a_derived_field_of_a_kubernetes_type_gets_that_types_schema() {
    let containers = spec_property("containers");
    let container = &containers["items"];
    assert_eq!(container["type"], "object");
    assert_eq!(container["required"], serde_json::json!(["name"]));
    // Inlined all the way down (the API server takes no `$ref`), with k8s-openapi's markers.
    let text = container.to_string();
    assert!(!text.contains("$ref"), "{text}");
    let limits = &container["properties"]["resources"]["properties"]["limits"];
    assert_eq!(limits["additionalProperties"]["x-kubernetes-int-or-string"], true);
    let port = &container["properties"]["ports"]["items"]["properties"]["containerPort"];
    assert_eq!((&port["type"], &port["format"]), (&"integer".into(), &"int32".into()));
    let http_port =
        &container["properties"]["livenessProbe"]["properties"]["httpGet"]["properties"]["port"];
    assert_eq!(http_port["x-kubernetes-int-or-string"], true);

    // informer-gen reads the manifest back in strict mode (a structural schema), and maps
    // the types it can to k8s-openapi's again.
    let manifest = serde_json::to_string(&Workload::crd()).unwrap();
    let crds = informer_gen::schema::parse_str("workload.json".as_ref(), &manifest).unwrap();
    let output =
        informer_gen::Generator::new().strict(true).k8s_version(37).generate(&crds).unwrap();
    let mapped: Vec<&str> = output
        .type_mappings()
        .iter()
        .filter(|m| m.miss.is_none())
        .map(|m| m.rust_type.as_str())
        .collect();
    for expected in [
        "::k8s_openapi::api::core::v1::Probe",
        "::k8s_openapi::api::core::v1::Toleration",
        "::k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition",
    ] {
        assert!(mapped.contains(&expected), "{expected} in {mapped:?}");
    }
}

/// How long the real server may take to establish the CRD.
const DEADLINE: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_derived_kind_with_kubernetes_types_is_accepted_and_kept_by_the_real_kube_apiserver() {
    let Some(server) = KubeApiServer::shared() else { return };
    let client = server.client("cert");
    let crd = Workload::crd();
    let name = crd.metadata.name.clone().unwrap();
    match client.create(None, &crd).await {
        Ok(_) => {}
        // A shared server may have it from an earlier run of this test.
        Err(e) if e.to_string().contains("already exists") => {}
        Err(e) => panic!("the real kube-apiserver refused Workload::crd(): {e}"),
    }
    let start = Instant::now();
    loop {
        let read: CustomResourceDefinition = client.get(None, &name).await.unwrap();
        let conditions = read.status.and_then(|s| s.conditions).unwrap_or_default();
        if conditions.iter().any(|c| c.type_ == "Established" && c.status == "True") {
            break;
        }
        assert!(start.elapsed() < DEADLINE, "{name} is not established: {conditions:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // A numeric quantity, an int-or-string port and a nested probe, as a user writes them.
    let object = serde_json::json!({
        "apiVersion": "k8s-types.example.com/v1",
        "kind": "Workload",
        "metadata": {"name": format!("w-{:08x}", fastrand::u32(..)), "namespace": "default"},
        "spec": {
            "containers": [{
                "name": "app",
                "image": "nginx:1.27",
                "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                "resources": {"limits": {"cpu": "500m", "memory": "128Mi"}},
                "livenessProbe": {"httpGet": {"path": "/healthz", "port": "http"}, "periodSeconds": 5},
            }],
            "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
        },
    });
    let workload: Workload = serde_json::from_value(object.clone()).unwrap();
    let created = client.create(Some("default"), &workload).await.unwrap();
    // Nothing pruned: every field the user set is in the schema.
    assert_eq!(created.spec, workload.spec);
    let written = serde_json::to_value(&created).unwrap();
    assert_eq!(written["spec"], object["spec"]);
}
