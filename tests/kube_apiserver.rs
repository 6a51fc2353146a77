//! The runtime end to end against a real kube-apiserver and etcd (`tests/kube-apiserver/`):
//! informers for built-in kinds and custom resources sync, follow churn, and recover from a
//! restarted API server and a compacted etcd; the client authenticates with a certificate and
//! with a bearer token to a server that checks both, and writes as controllers do (server-side
//! apply and its conflicts, patches, status, conditional deletes).
//!
//! Tests share one server and keep to a namespace of their own; the disruptive test starts its
//! own server. Without Go these tests print one line and pass (see `informer_tests::kube_apiserver`).

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    reason = "in a test, a failed expect is a failed assertion"
)]

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use informer_client::{Auth, Client, ClientError, Config, Identity, Patch, PatchParams};
use informer_controller::leader_election::{LeaderElection, Leadership};
use informer_runtime::listwatch::ListOptions;
use informer_runtime::shared_informer::{DeletedObject, ResourceEventHandler};
use informer_runtime::{LabelSelector, SharedInformerFactory};
use informer_tests::eventually;
use informer_tests::kube_apiserver::KubeApiServer;
use informer_tests::kube_program::KubeProgram;
use k8s_openapi::api::core::v1::{ConfigMap, Container, Namespace, Pod, PodSpec};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{DeleteOptions, ObjectMeta, Preconditions};
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

/// The generated code for the CRDs of `build.rs`, as it writes it.
mod crds {
    include!(concat!(env!("OUT_DIR"), "/custom_resources.rs"));
}

use crds::CustomResourceInformers as _;
use crds::cert_manager::v1::{Certificate, CertificateSpec, CertificateSpecIssuerRef};

/// How long any wait may take: the real server is slower to converge than the embedded one.
const DEADLINE: Duration = Duration::from_secs(60);

/// The shared server, or `None` (and the test passes) where Go is missing and allowed to be.
async fn shared() -> Option<&'static KubeApiServer> {
    tokio::task::spawn_blocking(KubeApiServer::shared).await.expect("the harness thread")
}

/// A namespace name no other test (or earlier run on the same server) uses.
fn unique(prefix: &str) -> String {
    format!("{prefix}-{:08x}", fastrand::u32(..))
}

async fn create_namespace(client: &Client, name: &str) {
    let ns = Namespace {
        metadata: ObjectMeta { name: Some(name.to_owned()), ..ObjectMeta::default() },
        ..Namespace::default()
    };
    client.create(None, &ns).await.expect("the namespace is created");
}

fn configmap(namespace: &str, name: &str, value: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some(namespace.to_owned()),
            labels: Some(BTreeMap::from([("app".to_owned(), "churn".to_owned())])),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([("value".to_owned(), value.to_owned())])),
        ..ConfigMap::default()
    }
}

fn pod(namespace: &str, name: &str, node: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some(namespace.to_owned()),
            labels: Some(BTreeMap::from([("node".to_owned(), node.to_owned())])),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "app".to_owned(),
                image: Some("registry.k8s.io/pause:3.10".to_owned()),
                ..Container::default()
            }],
            ..PodSpec::default()
        }),
        ..Pod::default()
    }
}

/// name → resourceVersion of every object of `K` in `namespace`, read from the server.
async fn server_state<K: informer_runtime::Resource>(
    client: &Client,
    namespace: &str,
) -> BTreeMap<String, String> {
    let list = client
        .lister_watcher::<K>(Some(namespace))
        .list(&ListOptions::default())
        .await
        .expect("the server lists");
    list.items
        .iter()
        .map(|o| {
            let meta = o.meta();
            (
                meta.name.clone().unwrap_or_default(),
                meta.resource_version.clone().unwrap_or_default(),
            )
        })
        .collect()
}

/// name → resourceVersion of what a handler last saw of each object (deleted ones removed).
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<HashMap<String, String>>>);

fn name_and_rv<K: informer_runtime::Resource>(obj: &K) -> (String, String) {
    let meta = obj.meta();
    (meta.name.clone().unwrap_or_default(), meta.resource_version.clone().unwrap_or_default())
}

impl<K: informer_runtime::Resource> ResourceEventHandler<K> for Seen {
    fn on_add(&self, obj: Arc<K>, _: bool) {
        let (name, rv) = name_and_rv(&*obj);
        self.0.lock().insert(name, rv);
    }

    fn on_update(&self, _: Arc<K>, new: Arc<K>) {
        let (name, rv) = name_and_rv(&*new);
        self.0.lock().insert(name, rv);
    }

    fn on_delete(&self, obj: DeletedObject<K>) {
        let name = obj.key().to_string();
        let name = name.rsplit('/').next().unwrap_or_default().to_owned();
        self.0.lock().remove(&name);
    }
}

impl Seen {
    fn state(&self) -> BTreeMap<String, String> {
        self.0.lock().iter().map(|(k, v)| (k.clone(), v.clone())).collect()
    }
}

fn lister_state<K: informer_runtime::Resource>(
    lister: &informer_runtime::Lister<K>,
) -> BTreeMap<String, String> {
    lister.list(&LabelSelector::everything()).iter().map(|o| name_and_rv(&**o)).collect()
}

/// Adds, updates and deletes config maps in `namespace`, seeded so a failure can be replayed.
async fn churn(client: &Client, namespace: &str, seed: u64, operations: usize) {
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut live: Vec<String> = Vec::new();
    for i in 0..operations {
        match rng.u8(..10) {
            0..=3 => {
                let name = format!("cm-{seed}-{i}");
                client
                    .create(Some(namespace), &configmap(namespace, &name, "new"))
                    .await
                    .expect("a config map is created");
                live.push(name);
            }
            4..=7 if !live.is_empty() => {
                let name = &live[rng.usize(..live.len())];
                client
                    .patch_merge::<ConfigMap>(
                        Some(namespace),
                        name,
                        &serde_json::json!({"data": {"value": format!("v{i}")}}),
                    )
                    .await
                    .expect("a config map is patched");
            }
            _ if !live.is_empty() => {
                let name = live.swap_remove(rng.usize(..live.len()));
                client.delete::<ConfigMap>(Some(namespace), &name).await.expect("deleted");
            }
            _ => {}
        }
    }
}

// client-go: informers_test.go TestSharedInformerFactory-style sync against a live server, and
// shared_informer_test.go's "handlers see the final state" property, on kube-apiserver itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn builtin_informers_sync_and_follow_churn() {
    let Some(server) = shared().await else { return };
    let client = server.client("cert");
    let namespace = unique("churn");
    create_namespace(&client, &namespace).await;
    for i in 0..30 {
        client
            .create(Some(namespace.as_str()), &configmap(&namespace, &format!("seed-{i}"), "0"))
            .await
            .expect("a config map is created");
    }
    for i in 0..10 {
        let node = format!("node-{}", i % 3);
        client
            .create(Some(namespace.as_str()), &pod(&namespace, &format!("pod-{i}"), &node))
            .await
            .expect("a pod is created");
    }

    let factory = SharedInformerFactory::builder(client.clone()).namespace(&namespace).build();
    let configmaps = factory.core().v1().config_maps();
    // As in client-go, asking for the lister is what makes the factory start an informer.
    let pods = factory.core().v1().pods().lister();
    let seen = Seen::default();
    configmaps.informer().add_event_handler(seen.clone()).expect("a handler");
    factory.start();
    assert!(factory.wait_for_cache_sync(DEADLINE).await.all_synced());
    let on_node_1 = LabelSelector::parse("node=node-1").unwrap();
    assert_eq!(pods.namespace(&namespace).list(&on_node_1).len(), 3);

    churn(&client, &namespace, 7, 300).await;

    let want = server_state::<ConfigMap>(&client, &namespace).await;
    let lister = configmaps.lister();
    eventually("the cache and the handler to equal the server", DEADLINE, || {
        let (cached, handled) = (lister_state(&lister), seen.state());
        if cached == want && handled == want {
            Ok(())
        } else {
            Err((want.len(), cached.len(), handled.len()))
        }
    })
    .await;
    factory.shutdown().await;
}

// client-go: reflector_test.go TestReflectorListAndWatchWithErrors / "too old resource version"
// relist, with the real causes: the API server restarts (its watch cache starts again at etcd's
// current revision, so the old resourceVersion is gone: 410) and etcd is compacted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn informers_recover_from_a_restarted_api_server_and_compaction() {
    // Skip or fail exactly as the shared server does.
    if shared().await.is_none() {
        return;
    }
    let server = tokio::task::spawn_blocking(KubeApiServer::start)
        .await
        .expect("the harness thread")
        .expect("a private server starts");
    let server = Arc::new(server);
    let client = server.client("token");
    let namespace = unique("restart");
    create_namespace(&client, &namespace).await;
    churn(&client, &namespace, 11, 60).await;

    let factory = SharedInformerFactory::builder(client.clone()).namespace(&namespace).build();
    let configmaps = factory.core().v1().config_maps();
    let seen = Seen::default();
    configmaps.informer().add_event_handler(seen.clone()).expect("a handler");
    let errors: Arc<Mutex<Vec<(bool, String)>>> = Arc::default();
    let log = Arc::clone(&errors);
    configmaps
        .informer()
        .set_watch_error_handler(move |e| log.lock().push((e.error().is_expired(), e.to_string())))
        .expect("an error handler");
    factory.start();
    assert!(factory.wait_for_cache_sync(DEADLINE).await.all_synced());
    let before = configmaps.informer().last_sync_resource_version();

    // A write the informer does not watch (another namespace) moves etcd past its version, so
    // the restarted server's watch cache starts after it: resuming there must answer 410.
    let elsewhere = unique("elsewhere");
    create_namespace(&client, &elsewhere).await;
    client
        .create(Some(elsewhere.as_str()), &configmap(&elsewhere, "unwatched", "0"))
        .await
        .expect("a config map elsewhere");
    let restarting = Arc::clone(&server);
    tokio::task::spawn_blocking(move || restarting.restart())
        .await
        .expect("the harness thread")
        .expect("the API server restarts");
    // Changes the informer cannot have watched happen, then the history behind them goes.
    churn(&client, &namespace, 12, 60).await;
    let compacting = Arc::clone(&server);
    let revision = tokio::task::spawn_blocking(move || compacting.compact())
        .await
        .expect("the harness thread")
        .expect("etcd compacts");
    assert!(revision > before.parse::<u64>().unwrap_or(0));
    churn(&client, &namespace, 13, 30).await;

    let want = server_state::<ConfigMap>(&client, &namespace).await;
    let lister = configmaps.lister();
    eventually("the cache and the handler to equal the server after the restart", DEADLINE, || {
        let (cached, handled) = (lister_state(&lister), seen.state());
        if cached == want && handled == want {
            Ok(())
        } else {
            Err((want.len(), cached.len(), handled.len()))
        }
    })
    .await;
    factory.shutdown().await;
}

// The generated informer for a CRD (cert-manager's Certificate, from `fixtures/crd-corpus`) against
// the real server, which validates the objects against the CRD's schema.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generated_crd_informers_sync_from_kube_apiserver() {
    let Some(server) = shared().await else { return };
    let client = server.client("cert");
    let crd: CustomResourceDefinition = informer_gen_fixture("cert-manager-certificate.yaml");
    let name = crd.metadata.name.clone().expect("a CRD name");
    let crd = CustomResourceDefinition {
        metadata: ObjectMeta { name: Some(name.clone()), ..ObjectMeta::default() },
        spec: crd.spec,
        status: None,
    };
    match client.create(None, &crd).await {
        Ok(_) => {}
        Err(e) if e.status().is_some_and(|s| s.code == 409) => {} // another test run's
        Err(e) => panic!("creating the CRD {name}: {e}"),
    }
    let namespace = unique("crd");
    create_namespace(&client, &namespace).await;

    // The CRD is served once it is Established; until then creates answer 404.
    let certificate = |n: usize| Certificate {
        metadata: ObjectMeta {
            name: Some(format!("cert-{n}")),
            namespace: Some(namespace.clone()),
            ..ObjectMeta::default()
        },
        spec: Some(CertificateSpec {
            secret_name: format!("cert-{n}-tls"),
            issuer_ref: CertificateSpecIssuerRef { name: "ca".to_owned(), ..Default::default() },
            dns_names: Some(vec![format!("cert-{n}.example.com")]),
            ..Default::default()
        }),
        status: None,
    };
    let start = tokio::time::Instant::now();
    loop {
        match client.create(Some(namespace.as_str()), &certificate(0)).await {
            Ok(_) => break,
            Err(e) if e.is_not_found() && start.elapsed() < DEADLINE => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("creating a Certificate: {e}"),
        }
    }
    let factory = SharedInformerFactory::builder(client.clone()).namespace(&namespace).build();
    let certificates = factory.cert_manager().v1().certificates();
    let seen = Seen::default();
    certificates.informer().add_event_handler(seen.clone()).expect("a handler");
    factory.start();
    assert!(factory.wait_for_cache_sync(DEADLINE).await.all_synced());
    for n in 1..5 {
        client.create(Some(namespace.as_str()), &certificate(n)).await.expect("a Certificate");
    }
    client.delete::<Certificate>(Some(namespace.as_str()), "cert-2").await.expect("deleted");

    let want = server_state::<Certificate>(&client, &namespace).await;
    assert_eq!(want.len(), 4);
    let lister = certificates.lister();
    eventually("the Certificate cache and handler to equal the server", DEADLINE, || {
        let (cached, handled) = (lister_state(&lister), seen.state());
        if cached == want && handled == want { Ok(()) } else { Err((cached, handled)) }
    })
    .await;
    let cached = lister.namespace(&namespace).get("cert-1").expect("cert-1 is cached");
    assert_eq!(
        cached.spec.as_ref().and_then(|s| s.dns_names.clone()),
        Some(vec!["cert-1.example.com".to_owned()])
    );
    factory.shutdown().await;
}

fn informer_gen_fixture(file: &str) -> CustomResourceDefinition {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/crd-corpus").join(file);
    let text = std::fs::read_to_string(&path).expect("the fixture reads");
    serde_yaml_ng::from_str(&text).expect("a CustomResourceDefinition")
}

/// The status code of a failed request, or a panic naming what was expected.
fn status_code(result: Result<Namespace, ClientError>) -> u16 {
    match result {
        Ok(_) => panic!("the request succeeded"),
        Err(e) => e.status().map_or_else(|| panic!("no API status in {e}"), |s| s.code),
    }
}

// The client's TLS and authentication paths against a server that checks them: the harness's
// CA is trusted, its client certificate and its token authenticate, and anything else is
// refused the way kube-apiserver refuses it (401 for bad credentials, 403 for anonymous).
#[tokio::test]
async fn client_certificates_and_bearer_tokens_authenticate() {
    let Some(server) = shared().await else { return };
    for context in ["cert", "token"] {
        let ns: Namespace =
            server.client(context).get(None, "kube-system").await.expect("kube-system is read");
        assert_eq!(ns.metadata.name.as_deref(), Some("kube-system"), "context {context}");
    }

    let good = Config::from_kubeconfig_file(
        server.kubeconfig(),
        &informer_client::KubeconfigOptions::default().context("cert"),
    )
    .expect("the kubeconfig loads");
    let client_with = |change: &dyn Fn(&mut Config)| {
        let mut config = good.clone();
        change(&mut config);
        Client::new(config).expect("a client")
    };

    let wrong_token = client_with(&|c| {
        c.identity = None;
        c.auth = Auth::Bearer("not-the-token".to_owned().into());
    });
    assert_eq!(status_code(wrong_token.get(None, "kube-system").await), 401);

    let anonymous = client_with(&|c| {
        c.identity = None;
        c.auth = Auth::None;
    });
    assert_eq!(status_code(anonymous.get(None, "kube-system").await), 403);

    // A certificate the server's CA did not sign authenticates no one.
    let dir = &server.endpoints().dir;
    let cert_pem = std::fs::read(dir.join("foreign-client.crt")).expect("the foreign certificate");
    let key_pem = std::fs::read_to_string(dir.join("foreign-client.key")).expect("its key");
    let stranger = client_with(&|c| {
        c.identity = Some(Identity { cert_pem: cert_pem.clone(), key_pem: key_pem.clone().into() });
    });
    assert_eq!(status_code(stranger.get(None, "kube-system").await), 401);

    // Without the harness's CA the server's certificate is not trusted: a TLS failure, no status.
    let untrusting = client_with(&|c| c.root_certs_pem = None);
    let error = untrusting.get::<Namespace>(None, "kube-system").await.expect_err("TLS fails");
    assert!(error.status().is_none(), "{error}");
}

/// What a controller writes, where only the real server can say it is right: server-side
/// apply records the field manager and conflicts with another manager's fields unless forced;
/// a strategic merge patch merges containers by name; status goes through its subresource;
/// a delete conditional on a UID that is not the object's conflicts.
#[tokio::test]
async fn controller_writes_have_kube_apiservers_semantics() {
    let Some(server) = shared().await else { return };
    let client = server.client("cert");
    let namespace = unique("writes");
    create_namespace(&client, &namespace).await;
    let ns = Some(namespace.as_str());
    let apply = |mode: &str| {
        serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "applied", "namespace": namespace},
            "data": {"mode": mode},
        })
    };
    let applied: ConfigMap = client
        .patch(ns, "applied", &Patch::Apply(apply("fast")), &PatchParams::apply("controller-a"))
        .await
        .expect("the first apply creates");
    let managers: Vec<_> = applied
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .map(|m| (m.manager.as_deref(), m.operation.as_deref()))
        .collect();
    assert_eq!(managers, [(Some("controller-a"), Some("Apply"))]);
    let conflict = client
        .patch::<ConfigMap, _>(
            ns,
            "applied",
            &Patch::Apply(apply("slow")),
            &PatchParams::apply("controller-b"),
        )
        .await
        .expect_err("controller-a owns data.mode");
    assert!(conflict.is_conflict(), "{conflict}");
    let forced: ConfigMap = client
        .patch(
            ns,
            "applied",
            &Patch::Apply(apply("slow")),
            &PatchParams::apply("controller-b").force(),
        )
        .await
        .expect("a forced apply takes the field over");
    assert_eq!(forced.data.as_ref().and_then(|d| d.get("mode")).map(String::as_str), Some("slow"));

    let mut two_containers = pod(&namespace, "web", "node-1");
    if let Some(spec) = two_containers.spec.as_mut() {
        let sidecar = Container { name: "sidecar".to_owned(), ..spec.containers[0].clone() };
        spec.containers.push(sidecar);
    }
    let created = client.create(ns, &two_containers).await.expect("the pod");
    // Containers merge by name: the image of `app` changes (a pod allows that) and `sidecar`
    // stays. A merge patch replaces the list with `app` alone, which a pod refuses (its
    // containers cannot be removed).
    let image = serde_json::json!({"spec": {"containers": [
        {"name": "app", "image": "registry.k8s.io/pause:3.9"},
    ]}});
    let merged = client
        .patch::<Pod, _>(ns, "web", &Patch::Merge(&image), &PatchParams::default())
        .await
        .expect_err("a merge patch replaces the whole list");
    assert!(merged.status().is_some_and(|s| s.code == 422), "{merged}");
    let patched: Pod = client
        .patch(ns, "web", &Patch::Strategic(&image), &PatchParams::default())
        .await
        .expect("a strategic merge patch merges the container by name");
    let containers = &patched.spec.as_ref().expect("spec").containers;
    let images: Vec<_> = containers.iter().map(|c| (c.name.as_str(), c.image.as_deref())).collect();
    assert_eq!(
        images,
        [
            ("app", Some("registry.k8s.io/pause:3.9")),
            ("sidecar", Some("registry.k8s.io/pause:3.10"))
        ]
    );

    let status = serde_json::json!({"status": {"phase": "Running"}});
    let running: Pod = client
        .patch_status(ns, "web", &Patch::Merge(&status), &PatchParams::default())
        .await
        .expect("the status subresource");
    assert_eq!(running.status.as_ref().and_then(|s| s.phase.as_deref()), Some("Running"));

    let wrong_uid = DeleteOptions {
        preconditions: Some(Preconditions {
            uid: Some("not-the-uid".to_owned()),
            ..Preconditions::default()
        }),
        ..DeleteOptions::default()
    };
    let refused = client.delete_with::<Pod>(ns, "web", &wrong_uid).await.expect_err("wrong UID");
    assert!(refused.is_conflict(), "{refused}");
    let right_uid = DeleteOptions {
        preconditions: Some(Preconditions {
            uid: created.metadata.uid.clone(),
            ..Preconditions::default()
        }),
        grace_period_seconds: Some(0),
        ..DeleteOptions::default()
    };
    client.delete_with::<Pod>(ns, "web", &right_uid).await.expect("the right UID deletes");
}

/// Leader election against the real server's Leases: one of two candidates leads; when it
/// stops, it releases the Lease and the other takes over, after the first stopped working.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leader_election_hands_over_through_a_real_lease() {
    let Some(server) = shared().await else { return };
    let client = server.client("cert");
    let namespace = unique("election");
    create_namespace(&client, &namespace).await;
    let log = Arc::new(Mutex::new(Vec::<String>::new()));
    let candidate = |identity: &'static str| {
        let election = LeaderElection::builder(client.clone(), &namespace, "controller", identity)
            .lease_duration(Duration::from_secs(3))
            .renew_deadline(Duration::from_secs(2))
            .retry_period(Duration::from_millis(200))
            .build()
            .expect("valid settings");
        let stop = CancellationToken::new();
        let log = Arc::clone(&log);
        let task = tokio::spawn({
            let stop = stop.clone();
            async move {
                election
                    .run(stop, |leading| async move {
                        log.lock().push(format!("{identity} started"));
                        leading.cancelled().await;
                        log.lock().push(format!("{identity} stopped"));
                    })
                    .await
            }
        });
        (stop, task)
    };
    let (stop_a, task_a) = candidate("a");
    eventually("a to lead", DEADLINE, || log.lock().contains(&"a started".to_owned())).await;
    let (stop_b, task_b) = candidate("b");
    stop_a.cancel();
    assert_eq!(task_a.await.expect("a's run"), Leadership::Released);
    eventually("b to lead", DEADLINE, || log.lock().contains(&"b started".to_owned())).await;
    assert_eq!(*log.lock(), ["a started", "a stopped", "b started"]);
    stop_b.cancel();
    assert_eq!(task_b.await.expect("b's run"), Leadership::Released);
}

/// A custom resource whose CRD the real server does not have: the list's 404 says so, from
/// the server's discovery documents (no test installs the `FooBar` CRD on the shared server).
#[tokio::test]
async fn a_resource_the_real_server_does_not_serve_is_an_error_that_says_why() {
    use crds::k8s_openapi_tests_custom_resource_definition::v1::FooBar;
    use informer_runtime::Resource as _;
    let Some(server) = shared().await else { return };
    let client = server.client("cert");
    let error = client
        .lister_watcher::<FooBar>(None)
        .list(&ListOptions::default())
        .await
        .expect_err("not served");
    let message = error.to_string();
    assert!(
        message.contains(&format!("the server does not know the group {}", FooBar::GROUP)),
        "{message}"
    );
    assert_eq!(error.status().map(|s| s.code), Some(404));
}

/// A custom resource the test defines at run time, written through a type of its own; the
/// informer under test knows it only by group, version and resource.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct Gadget {
    #[serde(rename = "apiVersion")]
    api_version: String,
    kind: String,
    metadata: ObjectMeta,
    spec: serde_json::Value,
}
informer_runtime::impl_resource!(
    Gadget,
    group = "dynamic.informers.test",
    version = "v1",
    kind = "Gadget",
    plural = "gadgets",
    namespaced
);

fn gadget(namespace: &str, name: &str, size: i64) -> Gadget {
    Gadget {
        api_version: "dynamic.informers.test/v1".to_owned(),
        kind: "Gadget".to_owned(),
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some(namespace.to_owned()),
            ..ObjectMeta::default()
        },
        spec: serde_json::json!({"size": size}),
    }
}

/// client-go's `dynamicinformer` against the real server: informers of a built-in and of a CRD
/// created while the informer already runs, known by group, version and resource only, with
/// handlers and listers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dynamic_informers_follow_a_built_in_and_a_crd_created_at_run_time() {
    use informer_runtime::dynamic::DynamicObject;
    use informer_runtime::{GroupVersionResource, HandlerFuncs};
    let Some(server) = shared().await else { return };
    let client = server.client("cert");
    let namespace = unique("dynamic");
    create_namespace(&client, &namespace).await;
    client.create(Some(&namespace), &configmap(&namespace, "listed", "1")).await.unwrap();

    let factory = SharedInformerFactory::builder(client.clone()).namespace(&namespace).build();
    let config_maps = factory.dynamic_informer(&GroupVersionResource::of::<ConfigMap>()).unwrap();
    let gadgets_gvr = GroupVersionResource::new("dynamic.informers.test", "v1", "gadgets");
    let gadgets = factory.dynamic_informer(&gadgets_gvr).unwrap();
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let (adds, updates, deletes) = (Arc::clone(&seen), Arc::clone(&seen), Arc::clone(&seen));
    let name = |o: &DynamicObject| o.metadata.name.clone().unwrap_or_default();
    gadgets
        .add_event_handler(
            HandlerFuncs::new()
                .on_add(move |o: Arc<DynamicObject>, _| {
                    adds.lock().push(format!("add {}", name(&o)));
                })
                .on_update(move |_, o: Arc<DynamicObject>| {
                    updates.lock().push(format!("update {} {}", name(&o), o.data["spec"]["size"]));
                })
                .on_delete(move |o| deletes.lock().push(format!("delete {}", o.key()))),
        )
        .unwrap();
    factory.start();

    // The CRD appears after the informer started (it may exist from an earlier run).
    let crd: CustomResourceDefinition = serde_json::from_value(serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.dynamic.informers.test"},
        "spec": {
            "group": "dynamic.informers.test",
            "names": {"kind": "Gadget", "plural": "gadgets", "singular": "gadget", "listKind": "GadgetList"},
            "scope": "Namespaced",
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]
        }
    }))
    .unwrap();
    match client.create(None, &crd).await {
        Ok(_) => {}
        Err(e) if e.status().is_some_and(|s| s.code == 409) => {}
        Err(e) => panic!("the CRD: {e}"),
    }
    // Served once established: created as soon as the server takes it.
    let first = gadget(&namespace, "first", 1);
    let deadline = tokio::time::Instant::now() + DEADLINE;
    while let Err(error) = client.create(Some(&namespace), &first).await {
        assert!(tokio::time::Instant::now() < deadline, "gadgets never served: {error}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(factory.wait_for_cache_sync(DEADLINE).await.all_synced());

    let listed = config_maps.lister().namespace(&namespace).get("listed").unwrap();
    assert_eq!((listed.kind(), listed.data["data"]["value"].as_str()), ("ConfigMap", Some("1")));
    eventually("the first gadget", DEADLINE, || seen.lock().contains(&"add first".to_owned()))
        .await;
    client
        .patch_merge::<Gadget>(Some(&namespace), "first", &serde_json::json!({"spec": {"size": 2}}))
        .await
        .unwrap();
    // Seen before the delete: a watch that ends between the two could fold them into one relist.
    let updated = "update first 2".to_owned();
    eventually("the update", DEADLINE, || seen.lock().contains(&updated)).await;
    client.delete::<Gadget>(Some(&namespace), "first").await.unwrap();
    let key = format!("delete {namespace}/first");
    eventually("the update and the delete", DEADLINE, || seen.lock().contains(&key)).await;
    assert_eq!(*seen.lock(), ["add first".to_owned(), "update first 2".to_owned(), key]);
    assert!(gadgets.lister().namespace(&namespace).get("first").is_err());
    factory.shutdown().await;
}

/// A kube-rs custom resource, as a kube-rs program declares it (kube-derive), for the kube-rs
/// program below.
#[derive(
    kube::CustomResource, Clone, Debug, serde::Deserialize, serde::Serialize, schemars::JsonSchema,
)]
#[kube(group = "kube-source.informer.test", version = "v1", kind = "Gizmo", namespaced)]
pub struct GizmoSpec {
    /// How many.
    pub size: i32,
}

informer_runtime::impl_resource!(
    Gizmo,
    group = "kube-source.informer.test",
    version = "v1",
    kind = "Gizmo",
    plural = "gizmos",
    namespaced
);

// A kube-rs program adds informers over the `kube::Client` it has (feature `kube`): built as
// kube-rs builds one from the kubeconfig (its TLS, its client certificate), it is the factory's
// source; a Pod informer and one of a kube-derive type sync and follow adds, updates and deletes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kube_rs_program_runs_informers_over_its_kube_client() {
    use kube::CustomResourceExt as _;
    use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
    use kube::runtime::wait::{await_condition, conditions};

    let Some(server) = shared().await else { return };
    let kubeconfig =
        kube::config::Kubeconfig::read_from(server.kubeconfig()).expect("a kubeconfig");
    let options =
        kube::config::KubeConfigOptions { context: Some("cert".to_owned()), ..Default::default() };
    let config =
        kube::Config::from_custom_kubeconfig(kubeconfig, &options).await.expect("a kube config");
    let kube_client = kube::Client::try_from(config.clone()).expect("a kube client");

    // The program's CRD, applied and waited for as a kube-rs program does.
    let crds: Api<CustomResourceDefinition> = Api::all(kube_client.clone());
    let crd = Gizmo::crd();
    let name = crd.metadata.name.clone().expect("a CRD name");
    let apply = PatchParams::apply("kube-source-test").force();
    crds.patch(&name, &apply, &Patch::Apply(&crd)).await.expect("the CRD is applied");
    let established = await_condition(crds, &name, conditions::is_crd_established());
    tokio::time::timeout(DEADLINE, established)
        .await
        .expect("the CRD is established in time")
        .expect("the CRD's condition is watched");

    let namespace = unique("kube-source");
    // This crate's typed requests, over the same kube-rs client.
    let client = Client::from(kube_client.clone());
    create_namespace(&client, &namespace).await;
    client.create(Some(namespace.as_str()), &pod(&namespace, "p1", "node-1")).await.expect("p1");
    let gizmos: Api<Gizmo> = Api::namespaced(kube_client.clone(), &namespace);
    gizmos
        .create(&PostParams::default(), &Gizmo::new("g1", GizmoSpec { size: 1 }))
        .await
        .expect("g1 is created");

    let factory = SharedInformerFactory::builder(Client::from(kube_client.clone()))
        .namespace(&namespace)
        .build();
    let (pods_seen, gizmos_seen) = (Seen::default(), Seen::default());
    factory.informer::<Pod>().add_event_handler(pods_seen.clone()).expect("a pod handler");
    factory.informer::<Gizmo>().add_event_handler(gizmos_seen.clone()).expect("a gizmo handler");
    factory.start();
    assert!(factory.wait_for_cache_sync(DEADLINE).await.all_synced());
    let gizmo_lister = factory.lister::<Gizmo>();
    assert_eq!(gizmo_lister.namespace(&namespace).get("g1").expect("cached").spec.size, 1);
    assert!(factory.lister::<Pod>().namespace(&namespace).get("p1").is_ok());

    gizmos
        .create(&PostParams::default(), &Gizmo::new("g2", GizmoSpec { size: 2 }))
        .await
        .expect("g2 is created");
    let resize = serde_json::json!({"spec": {"size": 10}});
    gizmos.patch("g1", &PatchParams::default(), &Patch::Merge(&resize)).await.expect("g1");
    gizmos.delete("g2", &DeleteParams::default()).await.expect("g2 is deleted");
    client.create(Some(namespace.as_str()), &pod(&namespace, "p2", "node-2")).await.expect("p2");
    let labels = serde_json::json!({"metadata": {"labels": {"tier": "edge"}}});
    client.patch_merge::<Pod>(Some(&namespace), "p1", &labels).await.expect("p1 is patched");

    let want_gizmos = server_state::<Gizmo>(&client, &namespace).await;
    let want_pods = server_state::<Pod>(&client, &namespace).await;
    assert_eq!(want_gizmos.len(), 1);
    assert_eq!(want_pods.len(), 2);
    eventually("the handlers to equal the server", DEADLINE, || {
        let (gizmos, pods) = (gizmos_seen.state(), pods_seen.state());
        if gizmos == want_gizmos && pods == want_pods {
            Ok(())
        } else {
            Err((gizmos.len(), pods.len()))
        }
    })
    .await;
    assert_eq!(gizmo_lister.namespace(&namespace).get("g1").expect("cached").spec.size, 10);
    assert!(gizmo_lister.namespace(&namespace).get("g2").is_err());

    // And this crate's own client, from the same kube::Config, reaches the same server.
    let ours = Client::try_from(config).expect("our client from the kube::Config");
    assert_eq!(server_state::<Gizmo>(&ours, &namespace).await, want_gizmos);
    factory.shutdown().await;
}

/// The custom resource of the kube-rs program `support/bin/kube_program.rs`.
mod program {
    /// `widgets.example.com`, as the program declares it.
    #[derive(
        kube::CustomResource,
        Clone,
        Debug,
        serde::Deserialize,
        serde::Serialize,
        schemars::JsonSchema,
    )]
    #[kube(group = "example.com", version = "v1", kind = "Widget", namespaced)]
    pub struct WidgetSpec {
        /// How many.
        pub size: i32,
    }
}

/// The kube-rs program, started as its users start it (`kube::Client::try_default()` reads
/// `KUBECONFIG`: the server's, whose current context authenticates with a client certificate),
/// caches pods and widgets through the `kube` feature against the real server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kube_rs_program_from_client_try_default_runs_informers() {
    use kube::CustomResourceExt as _;
    use kube::api::{Api, Patch, PatchParams, PostParams};
    use kube::runtime::wait::{await_condition, conditions};
    use program::{Widget, WidgetSpec};
    let Some(server) = shared().await else { return };
    let client = server.client("cert");
    let namespace = unique("kube-program");
    create_namespace(&client, &namespace).await;
    client.create(Some(&namespace), &pod(&namespace, "p1", "node-1")).await.unwrap();

    let kubeconfig = kube::config::Kubeconfig::read_from(server.kubeconfig()).unwrap();
    let options = kube::config::KubeConfigOptions::default();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &options).await.unwrap();
    let kube_client = kube::Client::try_from(config).unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(kube_client.clone());
    let crd = Widget::crd();
    let name = crd.metadata.name.clone().unwrap();
    let apply = PatchParams::apply("kube-program-test").force();
    crds.patch(&name, &apply, &Patch::Apply(&crd)).await.unwrap();
    let established = await_condition(crds, &name, conditions::is_crd_established());
    tokio::time::timeout(DEADLINE, established).await.unwrap().unwrap();
    let widgets: Api<Widget> = Api::namespaced(kube_client, &namespace);
    widgets
        .create(&PostParams::default(), &Widget::new("early", WidgetSpec { size: 1 }))
        .await
        .unwrap();

    let exe = env!("CARGO_BIN_EXE_kube-program");
    let mut program = KubeProgram::start(exe, server.kubeconfig(), &namespace, DEADLINE);
    assert_eq!(program.line().await, "synced pods=1 widgets=1");
    let late = Widget::new("late", WidgetSpec { size: 2 });
    widgets.create(&PostParams::default(), &late).await.unwrap();
    assert_eq!(program.line().await, "saw late");
    program.exits_successfully().await;
}
