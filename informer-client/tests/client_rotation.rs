//! Credentials that change while a client runs, against a real local TLS server that records
//! the client certificate of each connection: exec plugin certificates that expire or are
//! refused with a 401, client certificate and key files rewritten on disk, and a CA bundle
//! rewritten on disk. client-go follows all of them; a client that kept its first certificate
//! or CA would fail for good once they rotate.

// Every test here runs this crate's own HTTP client (`Client::new`, `Config`), which the
// `http` feature builds.
#![cfg(feature = "http")]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed unwrap is a failed test"
)]

mod client_support;

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

use client_support::pki::{Ca, Leaf, TempDir, server_config, swappable_server_config};
use client_support::{Reply, Server, within};
use informer_client::{
    Auth, Client, ClientError, Config, ExecConfig, InClusterOptions, KubeconfigOptions,
};
use k8s_openapi::api::core::v1::Namespace;

const NAMESPACE: &str = r#"{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"kube-system","resourceVersion":"7"}}"#;

/// Answers 401 to connections that present `refused` (DER), and the namespace to the others.
fn refusing(refused: Option<Vec<u8>>) -> impl Fn(&client_support::Request) -> Reply {
    move |request| {
        if refused.is_some() && request.client_cert_der == refused {
            Reply::json(
                401,
                r#"{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Unauthorized","code":401}"#,
            )
        } else {
            Reply::json(200, NAMESPACE)
        }
    }
}

async fn get(client: &Client) -> Result<Namespace, ClientError> {
    within(client.get::<Namespace>(None, "kube-system")).await
}

/// An exec plugin that prints `out-N.json` of its directory on its N-th run (the last one
/// written when there is no `out-N.json`), and counts its runs in `runs`.
struct Plugin {
    dir: TempDir,
    outputs: usize,
}

impl Plugin {
    fn new(name: &str) -> Self {
        let dir = TempDir::new(name);
        let script = dir.write(
            "plugin.sh",
            "#!/bin/sh\nset -eu\ndir=$(dirname \"$0\")\necho run >> \"$dir/runs\"\n\
             n=$(wc -l < \"$dir/runs\" | tr -d ' ')\n\
             if [ -f \"$dir/out-$n.json\" ]; then cat \"$dir/out-$n.json\"; else cat \"$dir/out-last.json\"; fi\n",
        );
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        Self { dir, outputs: 0 }
    }

    /// The next run prints `leaf` as its client certificate, valid until `expires`.
    fn then_issue(&mut self, leaf: &Leaf, expires: &str) -> &mut Self {
        self.outputs += 1;
        let credential = serde_json::json!({
            "apiVersion": "client.authentication.k8s.io/v1",
            "kind": "ExecCredential",
            "status": {
                "clientCertificateData": leaf.cert_pem,
                "clientKeyData": leaf.key_pem(),
                "expirationTimestamp": expires,
            },
        })
        .to_string();
        self.dir.write(&format!("out-{}.json", self.outputs), &credential);
        self.dir.write("out-last.json", &credential);
        self
    }

    fn runs(&self) -> usize {
        std::fs::read_to_string(self.dir.path().join("runs")).map_or(0, |t| t.lines().count())
    }

    fn config(&self, server: &Server, ca: &Ca) -> Config {
        let mut config = Config::new(server.url("https"));
        config.root_certs_pem = Some(ca.pem());
        let command = self.dir.path().join("plugin.sh").to_string_lossy().into_owned();
        config.auth = Auth::Exec(ExecConfig::new("client.authentication.k8s.io/v1", command));
        config
    }
}

/// Long past: a credential that has expired when it arrives.
const EXPIRED: &str = "2000-01-01T00:00:00Z";
const FAR_AHEAD: &str = "2100-01-01T00:00:00Z";

/// The client certificate each request came with, by the name given in `known`.
fn presented(server: &Server, known: &[(&'static str, &Leaf)]) -> Vec<&'static str> {
    let name = |der: Option<Vec<u8>>| {
        let Some(der) = der else { return "(none)" };
        known.iter().find(|(_, leaf)| leaf.cert_der.as_ref() == der).map_or("(unknown)", |(n, _)| n)
    };
    server.requests().into_iter().map(|request| name(request.client_cert_der)).collect()
}

#[tokio::test]
async fn an_expired_exec_certificate_is_replaced_on_the_next_request() {
    let (ca, client_ca) = (Ca::new("cluster ca"), Ca::new("client ca"));
    let (first, second) = (client_ca.leaf(&["first"]), client_ca.leaf(&["second"]));
    let server = Server::start_tls(
        server_config(&ca.leaf(&["127.0.0.1"]), Some(&client_ca)),
        refusing(None),
    )
    .await;
    let mut plugin = Plugin::new("exec-cert-expiry");
    plugin.then_issue(&first, EXPIRED).then_issue(&second, FAR_AHEAD);
    let client = Client::new(plugin.config(&server, &ca)).unwrap();

    get(&client).await.unwrap();
    // The first certificate has expired: the plugin runs again, and the request goes out on a
    // new connection with the new certificate, not on the pooled one.
    get(&client).await.unwrap();
    get(&client).await.unwrap();
    let known = [("first", &first), ("second", &second)];
    assert_eq!(presented(&server, &known), ["first", "second", "second"]);
    assert_eq!(plugin.runs(), 2);
}

#[tokio::test]
async fn a_401_runs_the_plugin_again_and_the_next_request_presents_its_certificate() {
    let (ca, client_ca) = (Ca::new("cluster ca"), Ca::new("client ca"));
    let (revoked, fresh) = (client_ca.leaf(&["revoked"]), client_ca.leaf(&["fresh"]));
    let server = Server::start_tls(
        server_config(&ca.leaf(&["127.0.0.1"]), Some(&client_ca)),
        refusing(Some(revoked.cert_der.to_vec())),
    )
    .await;
    let mut plugin = Plugin::new("exec-cert-401");
    plugin.then_issue(&revoked, FAR_AHEAD).then_issue(&fresh, FAR_AHEAD);
    let client = Client::new(plugin.config(&server, &ca)).unwrap();

    let refused = get(&client).await.unwrap_err();
    assert_eq!(refused.status().map(|s| s.code), Some(401), "{refused:?}");
    get(&client).await.unwrap();
    let known = [("revoked", &revoked), ("fresh", &fresh)];
    assert_eq!(presented(&server, &known), ["revoked", "fresh"]);
    assert_eq!(plugin.runs(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_requests_after_expiry_share_one_plugin_run_and_its_certificate() {
    let (ca, client_ca) = (Ca::new("cluster ca"), Ca::new("client ca"));
    let (first, second) = (client_ca.leaf(&["first"]), client_ca.leaf(&["second"]));
    let server = Server::start_tls(
        server_config(&ca.leaf(&["127.0.0.1"]), Some(&client_ca)),
        refusing(None),
    )
    .await;
    let mut plugin = Plugin::new("exec-cert-concurrent");
    plugin.then_issue(&first, EXPIRED).then_issue(&second, FAR_AHEAD);
    let client = Client::new(plugin.config(&server, &ca)).unwrap();
    get(&client).await.unwrap();

    let requests: Vec<_> = (0..8)
        .map(|_| {
            let client = client.clone();
            tokio::spawn(async move { get(&client).await })
        })
        .collect();
    for request in requests {
        request.await.unwrap().unwrap();
    }
    assert_eq!(plugin.runs(), 2, "the eight requests shared one run");
    let known = [("first", &first), ("second", &second)];
    assert_eq!(presented(&server, &known), [&["first"][..], &["second"; 8]].concat());
}

#[tokio::test]
async fn rewritten_client_certificate_files_are_presented_on_new_connections() {
    let (ca, client_ca) = (Ca::new("cluster ca"), Ca::new("client ca"));
    let (first, second) = (client_ca.leaf(&["first"]), client_ca.leaf(&["second"]));
    let server = Server::start_tls(
        server_config(&ca.leaf(&["127.0.0.1"]), Some(&client_ca)),
        refusing(None),
    )
    .await;
    let dir = TempDir::new("cert-files");
    dir.write("ca.crt", ca.pem());
    dir.write("client.crt", &first.cert_pem);
    dir.write("client.key", first.key_pem());
    let kubeconfig = dir.write(
        "kubeconfig",
        format!(
            "current-context: c\nclusters: [{{name: k, cluster: {{server: '{}', certificate-authority: ca.crt}}}}]\n\
             users: [{{name: u, user: {{client-certificate: client.crt, client-key: client.key}}}}]\n\
             contexts: [{{name: c, context: {{cluster: k, user: u}}}}]\n",
            server.url("https")
        ),
    );
    let config = Config::from_kubeconfig_file(&kubeconfig, &KubeconfigOptions::default()).unwrap();
    let client = Client::new(config).unwrap();
    get(&client).await.unwrap();

    // Rotated as cert-manager or kubelet do: key and certificate rewritten in place.
    dir.write("client.key", second.key_pem());
    dir.write("client.crt", &second.cert_pem);
    get(&client).await.unwrap();
    assert_eq!(presented(&server, &[("first", &first), ("second", &second)]), ["first", "second"]);
}

/// The in-cluster configuration of a service account directory `sa` for `server`.
fn in_cluster(sa: &Path, server: &Server) -> Config {
    Config::incluster_with(&InClusterOptions {
        service_host: Some(server.addr.ip().to_string()),
        service_port: Some(server.addr.port().to_string()),
        namespace: None,
        service_account_dir: sa.to_path_buf(),
    })
    .unwrap()
}

#[tokio::test]
async fn a_rewritten_service_account_ca_is_trusted_for_new_connections() {
    let (old_ca, new_ca) = (Ca::new("old cluster ca"), Ca::new("new cluster ca"));
    let (config, serving) = swappable_server_config(&old_ca.leaf(&["127.0.0.1"]));
    // One request per connection: each request verifies the server certificate again.
    let server = Server::start_tls(config, |_| {
        Reply::json(200, NAMESPACE).with_header("Connection", "close")
    })
    .await;
    let sa = TempDir::new("ca-rotation");
    sa.write("token", "sa-token");
    sa.write("ca.crt", old_ca.pem());
    let client = Client::new(in_cluster(sa.path(), &server)).unwrap();
    get(&client).await.unwrap();

    // The API server's certificate is reissued by a new CA before the pod's bundle has it.
    serving.set(&new_ca.leaf(&["127.0.0.1"]));
    let error = get(&client).await.unwrap_err();
    assert!(format!("{error:?}").contains("UnknownIssuer"), "{error:?}");

    // The kubelet rewrites ca.crt (the root CA ConfigMap): new connections trust it.
    sa.write("ca.crt", [old_ca.pem(), new_ca.pem()].concat());
    get(&client).await.unwrap();
    assert_eq!(server.requests().len(), 2);
}
