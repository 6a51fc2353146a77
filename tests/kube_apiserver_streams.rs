//! A `Client` past a real kube-apiserver's HTTP/2 stream limit: the server is started with
//! `--http2-max-streams-per-connection=10` (production servers advertise 250, proxies in front of
//! them often 100) and one client runs three times as many watches. Every watch must deliver
//! events, and the requests a controller makes beside them (a get, a create, a Lease renewal)
//! must not queue behind the watches' streams: a leader whose renewal waits loses its Lease.
//!
//! The test starts a server of its own (the flag is the server's); outside `cargo xtask ci` it prints
//! one line and passes (see `informer_tests::kube_apiserver`).

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    reason = "in a test, a failed expect is a failed assertion"
)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use informer_client::{Client, Config, KubeconfigOptions};
use informer_runtime::SharedInformerFactory;
use informer_tests::eventually;
use informer_tests::kube_apiserver::KubeApiServer;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret, ServiceAccount};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;

/// The server's per-connection stream limit in this test.
const STREAM_LIMIT: usize = 10;

/// Namespaces watched; three types each make three times [`STREAM_LIMIT`] watches.
const NAMESPACES: usize = 10;

/// How long a get, a create and a Lease renewal may take beside the watches: the renew deadline
/// of a leader elector is of this order (client-go's default is 10 s of a 15 s Lease, and
/// tighter settings are common).
const REQUEST_DEADLINE: Duration = Duration::from_secs(2);

/// How long syncing and event delivery may take on a real server.
const DEADLINE: Duration = Duration::from_secs(60);

fn meta(namespace: Option<&str>, name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_owned()),
        namespace: namespace.map(str::to_owned),
        ..ObjectMeta::default()
    }
}

fn configmap(namespace: &str, name: &str) -> ConfigMap {
    ConfigMap {
        metadata: meta(Some(namespace), name),
        data: Some(BTreeMap::from([("k".to_owned(), "v".to_owned())])),
        ..ConfigMap::default()
    }
}

/// `future`, or a description of how it failed or that it took longer than
/// [`REQUEST_DEADLINE`].
async fn timed<T, E: std::fmt::Display>(
    what: &str,
    future: impl Future<Output = Result<T, E>>,
) -> Result<T, String> {
    let start = Instant::now();
    match tokio::time::timeout(REQUEST_DEADLINE, future).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => Err(format!("{what} failed after {:?}: {e}", start.elapsed())),
        Err(_) => Err(format!("{what} did not finish within {REQUEST_DEADLINE:?}")),
    }
}

/// A renewal as a leader elector makes it: the Lease replaced with a new `renewTime`.
async fn renew(client: &Client, namespace: &str) -> Result<Lease, String> {
    let mut lease: Lease =
        timed("reading the Lease", client.get(Some(namespace), "leader")).await?;
    let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
    spec.renew_time = Some(MicroTime(Timestamp::now()));
    timed("renewing the Lease", client.replace(Some(namespace), "leader", &lease)).await
}

/// Objects named `probe` of the three watched types in every namespace, and the ones the
/// informers have not received yet.
async fn probe_every_watch(
    client: &Client,
    factory: &SharedInformerFactory<Client>,
    namespaces: &[String],
    name: &str,
) {
    for namespace in namespaces {
        let ns = Some(namespace.as_str());
        client.create(ns, &configmap(namespace, name)).await.expect("a config map");
        let secret = Secret { metadata: meta(ns, name), ..Secret::default() };
        client.create(ns, &secret).await.expect("a secret");
        let account = ServiceAccount { metadata: meta(ns, name), ..ServiceAccount::default() };
        client.create(ns, &account).await.expect("a service account");
    }
    let configmaps = factory.core().v1().config_maps().lister();
    let secrets = factory.core().v1().secrets().lister();
    let accounts = factory.core().v1().service_accounts().lister();
    eventually("every watch to deliver its namespace's new objects", DEADLINE, || {
        let missing: Vec<String> = namespaces
            .iter()
            .flat_map(|ns| {
                let key = |kind: &str| format!("{kind} {ns}/{name}");
                [
                    configmaps.namespace(ns).get(name).is_err().then(|| key("configmap")),
                    secrets.namespace(ns).get(name).is_err().then(|| key("secret")),
                    accounts.namespace(ns).get(name).is_err().then(|| key("serviceaccount")),
                ]
            })
            .flatten()
            .collect();
        if missing.is_empty() { Ok(()) } else { Err(missing) }
    })
    .await;
}

/// Informers of three types in every namespace over `client`, started, and whether they
/// synced within [`DEADLINE`].
async fn informers(
    client: &Client,
    namespaces: &[String],
) -> (SharedInformerFactory<Client>, Result<(), String>) {
    let factory = SharedInformerFactory::builder(client.clone()).namespaces(namespaces).build();
    factory.core().v1().config_maps().informer();
    factory.core().v1().secrets().informer();
    factory.core().v1().service_accounts().informer();
    factory.start();
    let synced = factory.wait_for_cache_sync(DEADLINE).await.all_synced();
    let synced = if synced { Ok(()) } else { Err(format!("not synced within {DEADLINE:?}")) };
    (factory, synced)
}

// client-go opens another connection when one reaches the server's SETTINGS_MAX_CONCURRENT_STREAMS
// (Go's http2 transport without StrictMaxConcurrentStreams); hyper queues the request instead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches_past_the_servers_stream_limit_do_not_stall_requests() {
    let flag = format!("--http2-max-streams-per-connection={STREAM_LIMIT}");
    let Some(server) =
        tokio::task::spawn_blocking(move || KubeApiServer::private(&[flag.as_str()]))
            .await
            .expect("the harness thread")
    else {
        return;
    };
    let client = server.client("cert");
    let namespaces: Vec<String> = (0..NAMESPACES).map(|i| format!("streams-{i}")).collect();
    for namespace in &namespaces {
        client
            .create(None, &Namespace { metadata: meta(None, namespace), ..Namespace::default() })
            .await
            .expect("a namespace is created");
    }
    let lease = Lease { metadata: meta(Some("streams-0"), "leader"), ..Lease::default() };
    client.create(Some("streams-0"), &lease).await.expect("the Lease is created");

    // A client with the default settings: 3 × 10 watches, each holding its stream until the
    // server ends it minutes later, and beside them the requests of a controller.
    let (factory, synced) = informers(&client, &namespaces).await;
    let get = timed("a get", client.get::<Namespace>(None, "streams-1")).await;
    let create =
        timed("a create", client.create(Some("streams-2"), &configmap("streams-2", "created")))
            .await;
    let renewal = renew(&client, "streams-0").await;
    assert!(
        synced.is_ok() && get.is_ok() && create.is_ok() && renewal.is_ok(),
        "beside 30 watches, with a stream limit of 10: informers {synced:?}, {:?}, {:?}, {:?}",
        get.err(),
        create.err(),
        renewal.err()
    );
    factory.shutdown().await;

    // Set to the server's limit, every watch runs: an object created in each namespace reaches
    // each informer.
    let config = Config::from_kubeconfig_file(
        server.kubeconfig(),
        &KubeconfigOptions::default().context("cert"),
    )
    .expect("the harness's kubeconfig")
    .watches_per_connection(STREAM_LIMIT);
    let client = Client::new(config).expect("a client");
    let (factory, synced) = informers(&client, &namespaces).await;
    assert_eq!(synced, Ok(()), "with watches_per_connection at the server's limit");
    probe_every_watch(&client, &factory, &namespaces, "probe").await;
    let renewal = renew(&client, "streams-0").await;
    assert!(renewal.is_ok(), "with every watch running: {:?}", renewal.err());
    factory.shutdown().await;
}
