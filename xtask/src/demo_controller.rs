//! `cargo xtask demo-controller`: the `ConfigMapSet` controller of `examples/controller` on the
//! embedded API server, with progress lines: two replicas behind a Lease, sets created, changed
//! and deleted while the server fails and conflicts updates, drops watches and compacts its
//! history, and the leader killed; the world is checked against what the sets ask for. Then
//! the failover is timed twice, from the leader's kill to the new leader's first reconcile:
//! with warm standbys (the manager's: informers synced on every replica) and with cold ones
//! (informers started on taking the Lease), over `--noise` config maps the controller's
//! informers cache besides its own.
//!
//! Before the sets, the controller's validating admission webhook is served on loopback TLS
//! (informer-webhook's server, a throwaway CA in the configuration's `caBundle`), and an
//! invalid set is refused by the API server with the webhook's message.

use std::time::{Duration, Instant};

use embedded_apiserver::{ApiServer, Failure};
use example_controller::{ConfigMapSet, ConfigMapSetSpec, Settings, Standby, difference};
use informer_client::{Client, Config};
use informer_controller::leader_election::Leadership;
use informer_runtime::GroupVersionResource;
use informer_runtime::metrics::Metrics;
use informer_webhook::WebhookServer;
use informer_webhook::crd::WebhookTarget;
use informer_webhook::testing::TestCa;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// How long each phase may take to converge.
const DEADLINE: Duration = Duration::from_secs(60);

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let mut sets = 20;
    let mut noise = 5000;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--sets" => {
                let n = args.next().ok_or("--sets needs a value")?;
                sets = n.parse().map_err(|e| format!("--sets {n:?}: {e}"))?;
            }
            "--noise" => {
                let n = args.next().ok_or("--noise needs a value")?;
                noise = n.parse().map_err(|e| format!("--noise {n:?}: {e}"))?;
            }
            other => {
                return Err(format!(
                    "unknown demo-controller option {other:?}; use --sets N, --noise N"
                ));
            }
        }
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("could not start the tokio runtime: {e}"))?;
    runtime.block_on(demo(sets, noise))
}

struct Replica {
    identity: &'static str,
    stop: CancellationToken,
    task: JoinHandle<Result<Leadership, example_controller::RunError>>,
    metrics: Metrics,
}

fn replica(client: &Client, identity: &'static str, standby: Standby) -> Replica {
    let metrics = Metrics::new();
    let mut settings = Settings::new(identity);
    settings.standby = standby;
    settings.lease = (Duration::from_secs(3), Duration::from_secs(2), Duration::from_millis(250));
    settings.metrics = Some(metrics.clone());
    let stop = CancellationToken::new();
    let task = tokio::spawn(example_controller::run(client.clone(), settings, stop.clone()));
    Replica { identity, stop, task, metrics }
}

fn named(name: &str) -> ObjectMeta {
    ObjectMeta { name: Some(name.to_owned()), ..ObjectMeta::default() }
}

fn all<K: informer_runtime::Resource>(server: &ApiServer) -> Vec<K> {
    let objects = server.objects(&GroupVersionResource::of::<K>());
    objects.into_iter().filter_map(|o| serde_json::from_value(o).ok()).collect()
}

/// Waits until the world is what the sets ask for; how long it took.
async fn converge(server: &ApiServer, what: &str) -> Result<Duration, String> {
    let start = Instant::now();
    loop {
        let sets: Vec<ConfigMapSet> = all(server);
        let Some(left) = difference(&sets, &all::<ConfigMap>(server), &all::<Namespace>(server))
        else {
            let took = start.elapsed();
            println!("demo-controller: {what}: converged in {} ms", took.as_millis());
            return Ok(took);
        };
        if start.elapsed() > DEADLINE {
            return Err(format!("{what}: not converged within {DEADLINE:?}: {left}"));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The sum of a counter family in `metrics`, for one label value.
fn counted(metrics: &Metrics, family: &str, label: &str) -> f64 {
    metrics
        .encode()
        .lines()
        .filter(|l| l.starts_with(family) && l.contains(label))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

fn text(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// The holder of the controller's Lease, as the server has it.
fn leader(server: &ApiServer) -> String {
    server
        .get(&GroupVersionResource::of::<Lease>(), "default", example_controller::CONTROLLER)
        .and_then(|lease| lease["spec"]["holderIdentity"].as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// How a failover went: from the kill to the Lease changing hands, and from that to the new
/// leader's first reconcile.
struct Failover {
    lease: Duration,
    first_reconcile: Duration,
}

/// Kills `leader` without a word and times the failover to `standby`, which has reconciled
/// nothing before. Polls every millisecond.
async fn fail_over(
    server: &ApiServer,
    leader: Replica,
    standby: &Replica,
) -> Result<Failover, String> {
    if counted(&standby.metrics, "controller_runtime_reconcile_total", "configmapsets") > 0.0 {
        return Err(format!("the standby {} reconciled before leading", standby.identity));
    }
    leader.task.abort();
    let _ = leader.task.await;
    let killed = Instant::now();
    let mut lease = None;
    loop {
        if lease.is_none() && self::leader(server) == standby.identity {
            lease = Some(killed.elapsed());
        }
        if counted(&standby.metrics, "controller_runtime_reconcile_total", "configmapsets") > 0.0 {
            let first_reconcile = killed.elapsed();
            let lease = lease.unwrap_or(first_reconcile);
            return Ok(Failover { lease, first_reconcile: first_reconcile.saturating_sub(lease) });
        }
        if killed.elapsed() > DEADLINE {
            return Err(format!("{} did not take over within {DEADLINE:?}", standby.identity));
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// Two replicas of `standby`: the first leads and converges, the second waits; the leader is
/// killed and the failover timed.
async fn timed_failover(
    server: &ApiServer,
    client: &Client,
    standby: Standby,
    names: [&'static str; 2],
) -> Result<Failover, String> {
    let first = replica(client, names[0], standby);
    let start = Instant::now();
    while leader(server) != names[0] {
        if start.elapsed() > DEADLINE {
            return Err(format!("{} did not lead within {DEADLINE:?}", names[0]));
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    converge(server, &format!("{} leads", names[0])).await?;
    let second = replica(client, names[1], standby);
    if standby == Standby::Warm {
        // A warm standby is one whose caches synced: wait for its lists.
        let start = Instant::now();
        while counted(&second.metrics, "informer_lists_total", "configmaps") < 1.0 {
            if start.elapsed() > DEADLINE {
                return Err(format!("{} did not sync within {DEADLINE:?}", names[1]));
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    let failover = fail_over(server, first, &second).await?;
    converge(server, &format!("{} took over", names[1])).await?;
    second.stop.cancel();
    second.task.await.map_err(text)?.map_err(text)?;
    Ok(failover)
}

/// `noise` config maps of other programs, which the controller's informers cache too.
async fn add_noise(server: &ApiServer, client: &Client, noise: usize) -> Result<(), String> {
    let noise_namespace = Namespace { metadata: named("noise"), ..Namespace::default() };
    client.create(None, &noise_namespace).await.map_err(text)?;
    let configmaps = GroupVersionResource::of::<ConfigMap>();
    for i in 0..noise {
        let cm = serde_json::json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": format!("noise-{i}"), "namespace": "noise"},
            "data": {"payload": "x".repeat(512)},
        });
        server.create(&configmaps, cm).map_err(text)?;
    }
    println!("demo-controller: {noise} config maps of other programs in namespace noise");
    Ok(())
}

/// Times a failover with warm standbys, then with cold ones.
async fn compare_failovers(
    server: &ApiServer,
    client: &Client,
    noise: usize,
) -> Result<(), String> {
    println!(
        "demo-controller: failover timed, warm standby against cold, over {noise} config maps"
    );
    let warm = timed_failover(server, client, Standby::Warm, ["warm-a", "warm-b"]).await?;
    let cold = timed_failover(server, client, Standby::Cold, ["cold-a", "cold-b"]).await?;
    for (what, failover) in [("warm", &warm), ("cold", &cold)] {
        println!(
            "demo-controller: {what} standby: the Lease changed hands {} ms after the kill; the first reconcile came {} ms after that",
            failover.lease.as_millis(),
            failover.first_reconcile.as_millis()
        );
    }
    Ok(())
}

/// Serves the controller's validating webhook on loopback TLS, registers it, and shows an
/// invalid set refused with its message. The webhook serves until `stop`.
async fn admission_webhook(
    client: &Client,
    stop: CancellationToken,
) -> Result<JoinHandle<()>, String> {
    let ca = TestCa::new().map_err(text)?;
    let certificate = ca.issue(&["127.0.0.1"]).map_err(text)?;
    let server = example_controller::webhook::webhooks(WebhookServer::builder())
        .certificate_pem(certificate.cert_pem.clone(), certificate.key_pem.clone())
        .build()
        .map_err(text)?;
    // Bound before the configuration exists: the API server's first call finds it listening.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.map_err(text)?;
    let addr = listener.local_addr().map_err(text)?;
    let task = tokio::spawn(async move { server.serve(listener, stop).await });
    let url = format!("https://{addr}{}", example_controller::webhook::PATH);
    let target = WebhookTarget::url(url.clone());
    let configuration = example_controller::webhook::configuration(&target, ca.ca_pem().as_bytes());
    client.create(None, &configuration).await.map_err(text)?;
    println!("demo-controller: validating webhook {} at {url}", example_controller::webhook::NAME);

    let spec = ConfigMapSetSpec {
        namespaces: vec!["Shop".to_owned()],
        data: [("app/mode".to_owned(), "fast".to_owned())].into(),
    };
    let invalid = ConfigMapSet { metadata: named("invalid"), spec, status: None };
    match client.create(None, &invalid).await {
        Ok(_) => Err("the webhook let an invalid set in".to_owned()),
        Err(e) if e.to_string().contains("denied the request") => {
            println!("demo-controller: an invalid set is refused: {e}");
            Ok(task)
        }
        Err(e) => Err(format!("creating an invalid set failed otherwise than by the webhook: {e}")),
    }
}

async fn demo(count: usize, noise: usize) -> Result<(), String> {
    let server = ApiServer::start().await.map_err(text)?;
    let client = Client::new(Config::new(server.url().parse().map_err(text)?)).map_err(text)?;
    println!("demo-controller: embedded API server at {}", server.url());
    client.create(None, &ConfigMapSet::crd()).await.map_err(text)?;
    let webhook_stop = CancellationToken::new();
    let webhook = admission_webhook(&client, webhook_stop.clone()).await?;
    let namespaces = ["shop", "blog", "docs", "mail"];
    for ns in namespaces {
        let namespace = Namespace { metadata: named(ns), ..Namespace::default() };
        client.create(None, &namespace).await.map_err(text)?;
    }
    add_noise(&server, &client, noise).await?;
    let mut replicas = vec![
        replica(&client, "replica-a", Standby::Warm),
        replica(&client, "replica-b", Standby::Warm),
    ];
    println!(
        "demo-controller: two replicas campaign for the Lease default/configmapset-controller"
    );

    for i in 0..count {
        // Every third set also lists a namespace that does not exist yet.
        let mut listed: Vec<String> = (0..2).map(|k| namespaces[(i + k) % 4].to_owned()).collect();
        if i % 3 == 0 {
            listed.push("later".to_owned());
        }
        let spec = ConfigMapSetSpec {
            namespaces: listed,
            data: [("version".to_owned(), "1".to_owned())].into(),
        };
        let set = ConfigMapSet { metadata: named(&format!("set-{i}")), spec, status: None };
        client.create(None, &set).await.map_err(text)?;
    }
    converge(&server, &format!("{count} sets created")).await?;
    let leader = || leader(&server);
    println!("demo-controller: the leader is {}", leader());

    println!(
        "demo-controller: faults: 5 updates fail (500), 3 conflict (409), watches dropped, history compacted"
    );
    let configmaps = "configmaps";
    server
        .fail_next(5, Failure::internal_error("etcd timeout").verb("update").resource(configmaps));
    let conflict = Failure::new(409, "Conflict", "the object has been modified");
    server.fail_next(3, conflict.verb("update").resource(configmaps));
    for i in (0..count).step_by(2) {
        let name = format!("set-{i}");
        let mut set: ConfigMapSet = client.get(None, &name).await.map_err(text)?;
        set.spec.data.insert("version".to_owned(), "2".to_owned());
        client.replace(None, &name, &set).await.map_err(text)?;
    }
    server.drop_watches();
    server.compact();
    let later = Namespace { metadata: named("later"), ..Namespace::default() };
    client.create(None, &later).await.map_err(text)?;
    converge(&server, &format!("{} sets changed, namespace later created", count.div_ceil(2)))
        .await?;

    let old = leader();
    let index = replicas.iter().position(|r| r.identity == old).ok_or("no leader")?;
    let killed = replicas.remove(index);
    killed.task.abort();
    let _ = killed.task.await;
    println!("demo-controller: {old} killed without releasing the Lease");
    for i in (0..count).step_by(3) {
        client.delete::<ConfigMapSet>(None, &format!("set-{i}")).await.map_err(text)?;
    }
    let took = converge(&server, "a third of the sets deleted (finalizers)").await?;
    let left = all::<ConfigMapSet>(&server).len();
    if left != count - count.div_ceil(3) {
        return Err(format!("{left} sets left after deleting a third of {count}"));
    }
    let survivor = replicas.pop().ok_or("no replica left")?;
    println!(
        "demo-controller: {} leads now; the work was done {} ms after the deletes",
        leader(),
        took.as_millis()
    );
    let ok = counted(&survivor.metrics, "controller_runtime_reconcile_total", "result=\"success\"");
    let failed =
        counted(&survivor.metrics, "controller_runtime_reconcile_errors_total", "configmapsets");
    println!(
        "demo-controller: {} reconciled {ok} times, {failed} failed and were retried",
        survivor.identity
    );
    survivor.stop.cancel();
    match survivor.task.await.map_err(text)?.map_err(text)? {
        Leadership::Released => {}
        other => return Err(format!("the survivor ended with {other:?}")),
    }

    compare_failovers(&server, &client, noise).await?;
    webhook_stop.cancel();
    webhook.await.map_err(text)?;
    println!("demo-controller: OK: every set's config maps, status and finalizer are as it asks");
    Ok(())
}
