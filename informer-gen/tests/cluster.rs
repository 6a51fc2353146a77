//! `informer-gen crd --from-cluster` and `--all-from-cluster`, run for real against the embedded
//! API server over HTTP: three CRDs of the corpus are created on it, the binary finds the server
//! through a kubeconfig (`KUBECONFIG`, or `--kubeconfig` and `--context`), and what it generates
//! is what the same CRDs' files generate. Errors: a missing name, a group that matches nothing,
//! an unknown context, a refused connection and a server that never answers, each naming the
//! server, the last within `--request-timeout`.

// Helpers outside the `#[test]` functions fail the test on a broken expectation, too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/output.rs"]
mod output;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use embedded_apiserver::ApiServer;
use informer_runtime::GroupVersionResource;
use output::stdout;

/// The CRDs installed, from `tests/fixtures/crd-corpus`, with their names on the server.
const CRDS: [(&str, &str); 3] = [
    ("strimzi-kafkatopic.yaml", "kafkatopics.kafka.strimzi.io"),
    ("crossplane-provider.yaml", "providers.pkg.crossplane.io"),
    ("knative-route.yaml", "routes.serving.knative.dev"),
];

/// How long one run of the binary may take before the test fails.
const DEADLINE: Duration = Duration::from_secs(60);

fn corpus(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/crd-corpus").join(file)
}

/// An embedded API server with [`CRDS`] created on it (as `kubectl apply` would create them: the
/// files' `apiVersion`, `kind`, `metadata.name` and `spec`), and a temporary directory holding
/// a kubeconfig for it.
async fn cluster() -> (ApiServer, tempfile::TempDir) {
    let server = ApiServer::start().await.unwrap();
    let crds = GroupVersionResource::new("apiextensions.k8s.io", "v1", "customresourcedefinitions");
    for (file, _) in CRDS {
        for loaded in informer_gen::schema::load(&[corpus(file)]).unwrap() {
            server.create(&crds, loaded.manifest).unwrap();
        }
    }
    let temp = tempfile::tempdir().unwrap();
    fs::write(temp.path().join("kubeconfig"), server.kubeconfig_yaml()).unwrap();
    (server, temp)
}

/// Runs the binary in `dir` with `KUBECONFIG=dir/kubeconfig`, failing the test if it has not
/// finished within [`DEADLINE`].
async fn run(dir: &Path, args: &[&str]) -> Output {
    let run = tokio::process::Command::new(env!("CARGO_BIN_EXE_informer-gen"))
        .current_dir(dir)
        .env("KUBECONFIG", dir.join("kubeconfig"))
        .args(args)
        .kill_on_drop(true)
        .output();
    tokio::time::timeout(DEADLINE, run).await.expect("informer-gen finishes").unwrap()
}

/// The stderr of a run that failed with exit status 1 and printed nothing.
fn failure(output: &Output) -> String {
    let stderr = String::from_utf8(output.stderr.clone()).unwrap();
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(output.stdout.is_empty());
    stderr
}

/// `--list` lines without their last column (the CRD's file or URL), and that column.
fn split_list(list: &str) -> (Vec<String>, Vec<String>) {
    list.lines()
        .map(|line| {
            let (resource, source) = line.rsplit_once('\t').unwrap();
            (resource.to_owned(), source.to_owned())
        })
        .unzip()
}

/// `code` without the CRD manifests embedded as JSON (a server adds defaults to what it stores).
fn without_manifests(code: &str) -> String {
    code.lines().filter(|line| !line.contains("_CRD: &str = ")).collect::<Vec<_>>().join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn from_cluster_generates_what_the_files_generate() {
    let (server, temp) = cluster().await;
    let files: Vec<String> =
        CRDS.iter().map(|(file, _)| corpus(file).to_str().unwrap().to_owned()).collect();
    let files: Vec<&str> = files.iter().map(String::as_str).collect();
    let names: Vec<&str> = CRDS.iter().map(|(_, name)| *name).collect();

    let mut args = vec!["crd", "--list", "--from-cluster"];
    args.extend(&names);
    let from_cluster = stdout(&run(temp.path(), &args).await);
    let mut args = vec!["crd", "--list"];
    args.extend(&files);
    let from_files = stdout(&run(temp.path(), &args).await);
    let (cluster_resources, urls) = split_list(&from_cluster);
    let (file_resources, _) = split_list(&from_files);
    assert_eq!(cluster_resources, file_resources);
    assert_eq!(cluster_resources.len(), 3, "{from_cluster}");
    for url in &urls {
        let name = url
            .strip_prefix(&format!(
                "{}/apis/apiextensions.k8s.io/v1/customresourcedefinitions/",
                server.url()
            ))
            .unwrap_or_else(|| panic!("{url} is not a CRD's URL on {}", server.url()));
        assert!(names.contains(&name), "{url}");
    }

    // The same types, accessors and docs; only the embedded manifests differ.
    let mut args = vec!["crd", "--from-cluster"];
    args.extend(&names);
    let cluster_code = stdout(&run(temp.path(), &args).await);
    let mut args = vec!["crd"];
    args.extend(&files);
    let file_code = stdout(&run(temp.path(), &args).await);
    assert_eq!(without_manifests(&cluster_code), without_manifests(&file_code));
    assert!(cluster_code.contains("pub struct KafkaTopic {"), "{cluster_code}");

    // The kubeconfig and its context named on the command line instead of `KUBECONFIG`.
    let kubeconfig = temp.path().join("kubeconfig");
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_informer-gen"))
        .env_remove("KUBECONFIG")
        .env("HOME", temp.path())
        .args(["crd", "--list", "--from-cluster", names[0], "--kubeconfig"])
        .arg(&kubeconfig)
        .args(["--context", "informer-runtime"])
        .output();
    let output = tokio::time::timeout(DEADLINE, output).await.unwrap().unwrap();
    assert_eq!(split_list(&stdout(&output)).0, file_resources[..1]);
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_from_cluster_reads_every_crd_or_those_of_the_groups() {
    let (server, temp) = cluster().await;
    let kinds = |list: &str| -> Vec<String> {
        list.lines().map(|line| line.split('\t').nth(2).unwrap().to_owned()).collect()
    };
    let all = stdout(&run(temp.path(), &["crd", "--list", "--all-from-cluster"]).await);
    assert_eq!(kinds(&all), ["KafkaTopic", "Provider", "Route"], "{all}");

    let some = stdout(
        &run(
            temp.path(),
            &[
                "crd",
                "--list",
                "--all-from-cluster",
                "--group",
                "kafka.strimzi.io",
                "--group",
                "*.knative.dev",
            ],
        )
        .await,
    );
    assert_eq!(kinds(&some), ["KafkaTopic", "Route"], "{some}");

    let output = run(temp.path(), &["crd", "--all-from-cluster", "--group", "*.example.com"]).await;
    assert_eq!(
        failure(&output),
        format!("error: no CustomResourceDefinition on {} in group *.example.com\n", server.url())
    );
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_name_or_context_is_an_error_naming_it() {
    let (server, temp) = cluster().await;
    let output = run(
        temp.path(),
        &["crd", "--from-cluster", "kafkatopics.kafka.strimzi.io", "widgets.example.com"],
    )
    .await;
    assert_eq!(
        failure(&output),
        format!(
            "error: no CustomResourceDefinition widgets.example.com on {} (the name is \
             plural.group, as `kubectl get crd` lists them)\n",
            server.url()
        )
    );

    let output = run(temp.path(), &["crd", "--all-from-cluster", "--context", "elsewhere"]).await;
    let stderr = failure(&output);
    assert!(
        stderr.starts_with(
            "error: cannot load the cluster configuration: context `elsewhere` not found in "
        ),
        "{stderr}"
    );
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_server_is_an_error_naming_it_within_the_deadline() {
    // A server that accepts connections (the kernel does, into the backlog) and never answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_url = format!("http://{}", silent.local_addr().unwrap());
    // A port nobody listens on: the connection is refused.
    let closed_url = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    };
    let temp = tempfile::tempdir().unwrap();
    let kubeconfig = |url: &str| {
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {url}\n\
             contexts:\n- name: c\n  context:\n    cluster: c\n    user: u\n\
             current-context: c\nusers:\n- name: u\n  user: {{}}\n"
        )
    };

    fs::write(temp.path().join("kubeconfig"), kubeconfig(&silent_url)).unwrap();
    let started = Instant::now();
    let output = run(
        temp.path(),
        &["crd", "--from-cluster", "widgets.example.com", "--request-timeout", "1s"],
    )
    .await;
    assert_eq!(
        failure(&output),
        format!(
            "error: LIST customresourcedefinitions?fieldSelector=metadata.name=widgets.example.com on {silent_url}: no answer \
             within 1 s (is the server reachable? --request-timeout sets the deadline)\n"
        )
    );
    assert!(started.elapsed() < Duration::from_secs(30), "{:?}", started.elapsed());

    fs::write(temp.path().join("kubeconfig"), kubeconfig(&closed_url)).unwrap();
    let output = run(temp.path(), &["crd", "--all-from-cluster"]).await;
    let stderr = failure(&output);
    assert!(
        stderr.starts_with(&format!("error: LIST customresourcedefinitions on {closed_url}: ")),
        "{stderr}"
    );
    drop(silent);
}
