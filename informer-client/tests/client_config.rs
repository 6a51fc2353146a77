//! Loading client configuration: one kubeconfig fixture per form (tests/fixtures/kubeconfig),
//! merging several files with kubectl's precedence, context overrides, in-cluster service
//! accounts, and redaction of secrets in `Debug` output. Running exec plugins and rotating
//! token files is tested next to the authenticator (src/config/auth.rs).

// Every test here runs this crate's own HTTP client (`Client::new`, `Config`), which the
// `http` feature builds.
#![cfg(feature = "http")]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use informer_client::{Auth, Config, ConfigError, InClusterOptions, KubeconfigOptions};
use secrecy::ExposeSecret;

const CA_PEM: &str = "-----BEGIN CERTIFICATE-----\nZml4dHVyZS1jYQ==\n-----END CERTIFICATE-----\n";
const CLIENT_CERT_PEM: &str =
    "-----BEGIN CERTIFICATE-----\nZml4dHVyZS1jbGllbnQ=\n-----END CERTIFICATE-----\n";
const CLIENT_KEY_PEM: &str =
    "-----BEGIN PRIVATE KEY-----\nZml4dHVyZS1zZWNyZXQta2V5\n-----END PRIVATE KEY-----\n";

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/kubeconfig")
}

fn load(name: &str) -> Result<Config, ConfigError> {
    Config::from_kubeconfig_file(fixtures().join(name), &KubeconfigOptions::default())
}

fn merged(names: &[&str], options: &KubeconfigOptions) -> Result<Config, ConfigError> {
    let paths: Vec<PathBuf> = names.iter().map(|name| fixtures().join(name)).collect();
    Config::from_kubeconfig_files(&paths, options)
}

/// A directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> std::io::Result<Self> {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "client-config-{name}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir)?;
        Ok(Self(dir))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn token_with_inline_ca_and_context_namespace() {
    let config = load("token.yaml").unwrap();
    assert_eq!(config.cluster_url.as_str(), "https://10.0.0.1:6443/");
    assert_eq!(config.default_namespace, "team-a");
    assert_eq!(config.root_certs_pem.as_deref(), Some(CA_PEM.as_bytes()));
    assert!(!config.accept_invalid_certs);
    let Auth::Bearer(token) = &config.auth else { panic!("{:?}", config.auth) };
    assert_eq!(token.expose_secret(), "fixture-token-0123456789abcdef");
}

#[test]
fn file_references_resolve_against_the_kubeconfig_directory() {
    let config = load("files.yaml").unwrap();
    assert_eq!(config.cluster_url.as_str(), "https://kube.example.test/");
    assert_eq!(config.root_certs_pem.as_deref(), Some(CA_PEM.as_bytes()));
    assert_eq!(config.tls_server_name.as_deref(), Some("kubernetes.internal"));
    assert_eq!(
        config.proxy_url.as_ref().map(url::Url::as_str),
        Some("http://proxy.example.test:3128/")
    );
    assert_eq!(config.default_namespace, "default");
    let identity = config.identity.as_ref().unwrap();
    assert_eq!(identity.cert_pem, CLIENT_CERT_PEM.as_bytes());
    assert_eq!(identity.key_pem.expose_secret(), CLIENT_KEY_PEM);
    assert!(matches!(config.auth, Auth::None));
}

#[test]
fn inline_client_certificate_and_key() {
    let config = load("client-cert-data.yaml").unwrap();
    let identity = config.identity.as_ref().unwrap();
    assert_eq!(identity.cert_pem, CLIENT_CERT_PEM.as_bytes());
    assert_eq!(identity.key_pem.expose_secret(), CLIENT_KEY_PEM);
    assert_eq!(config.root_certs_pem.as_deref(), Some(CA_PEM.as_bytes()));
}

#[test]
fn insecure_skip_tls_verify_and_basic_auth() {
    let config = load("insecure-basic.yaml").unwrap();
    assert!(config.accept_invalid_certs);
    assert!(config.root_certs_pem.is_none());
    let Auth::Basic { username, password } = &config.auth else { panic!("{:?}", config.auth) };
    assert_eq!(username, "admin");
    assert_eq!(password.expose_secret(), "fixture-password-s3cr3t");
}

#[test]
fn token_file_is_kept_as_a_path() {
    let config = load("token-file.yaml").unwrap();
    let Auth::TokenFile(path) = &config.auth else { panic!("{:?}", config.auth) };
    assert_eq!(path, &fixtures().join("pki/token"));
}

#[test]
fn exec_v1_settings() {
    let config = load("exec-v1.yaml").unwrap();
    let Auth::Exec(exec) = &config.auth else { panic!("{:?}", config.auth) };
    assert_eq!(exec.api_version, "client.authentication.k8s.io/v1");
    // A command with a slash is relative to the kubeconfig; a bare name would be looked up in PATH.
    assert_eq!(Path::new(&exec.command), fixtures().join("./exec-plugin.sh"));
    assert_eq!(exec.args, ["--fixture"]);
    assert_eq!(exec.env[1], ("PLUGIN_SECRET".to_owned(), "fixture-env-secret".to_owned()));
    assert!(exec.provide_cluster_info);
    assert_eq!(exec.install_hint.as_deref(), Some("install the fixture plugin"));
    assert_eq!(exec.cluster_config, Some(serde_json::json!({"audience": "fixture-audience"})));
    assert_eq!(config.tls_server_name.as_deref(), Some("exec.internal"));
}

#[test]
fn exec_v1beta1_settings() {
    let config = load("exec-v1beta1.yaml").unwrap();
    let Auth::Exec(exec) = &config.auth else { panic!("{:?}", config.auth) };
    assert_eq!(exec.api_version, "client.authentication.k8s.io/v1beta1");
    assert!(!exec.provide_cluster_info);
    assert!(exec.install_hint.is_none());
}

#[test]
fn exec_with_a_bare_command_keeps_it_for_path_lookup() {
    let config = load("exec-missing.yaml").unwrap();
    let Auth::Exec(exec) = &config.auth else { panic!("{:?}", config.auth) };
    assert_eq!(exec.command, "informer-runtime-fixture-plugin-that-is-not-installed");
    assert!(
        exec.install_hint
            .as_deref()
            .is_some_and(|hint| hint.contains("cargo install fixture-plugin"))
    );
}

#[test]
fn legacy_auth_provider_names_the_replacement_and_not_its_tokens() {
    let err = load("auth-provider.yaml").unwrap_err();
    assert!(matches!(err, ConfigError::AuthProvider { .. }), "{err:?}");
    let message = err.to_string();
    assert!(
        message.contains(
            "users[0].user.auth-provider: the `gcp` auth provider is no longer supported"
        ),
        "{message}"
    );
    assert!(
        message
            .contains("exec credential plugin (user.exec) instead such as gke-gcloud-auth-plugin"),
        "{message}"
    );
    assert!(!message.contains("fixture-cached-access-token"), "{message}");
}

#[test]
fn invalid_base64_names_the_file_and_field() {
    let err = load("bad-base64.yaml").unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "{}: users[2].user.client-key-data: invalid base64",
            fixtures().join("bad-base64.yaml").display()
        )
    );
}

#[test]
fn malformed_yaml_names_the_file_and_field() {
    let err = load("malformed.yaml").unwrap_err();
    assert!(
        matches!(&err, ConfigError::Parse { path, .. } if path == &fixtures().join("malformed.yaml")),
        "{err:?}"
    );
    let expected = format!(
        "{}: clusters[0].cluster.server: invalid type: sequence",
        fixtures().join("malformed.yaml").display()
    );
    assert!(err.to_string().starts_with(&expected), "{err}");
}

#[test]
fn a_missing_explicit_file_is_an_io_error() {
    let err = load("does-not-exist.yaml").unwrap_err();
    assert!(
        matches!(&err, ConfigError::Io { path, .. } if path.ends_with("does-not-exist.yaml")),
        "{err:?}"
    );
}

#[test]
fn merge_first_non_empty_current_context_wins() {
    // merge-first.yaml sets `current-context: ""`, so the second file's context is used, with the
    // second file's entries and its token file resolved against the second file's directory.
    let config =
        merged(&["merge-first.yaml", "merge/second.yaml"], &KubeconfigOptions::default()).unwrap();
    assert_eq!(config.cluster_url.as_str(), "https://second-only.example.test:6443/");
    assert_eq!(config.default_namespace, "from-second");
    let Auth::TokenFile(path) = &config.auth else { panic!("{:?}", config.auth) };
    assert_eq!(path, &fixtures().join("merge/token"));
}

#[test]
fn merge_first_file_to_define_a_name_wins_the_whole_entry() {
    // Both files define context, cluster and user `shared`/`shared-user`: the first file's are
    // used whole (the second's `insecure-skip-tls-verify` is not merged in).
    let shared = KubeconfigOptions::default().context("shared");
    let config = merged(&["merge-first.yaml", "merge/second.yaml"], &shared).unwrap();
    assert_eq!(config.cluster_url.as_str(), "https://first.example.test:6443/");
    assert!(!config.accept_invalid_certs);
    assert_eq!(config.default_namespace, "from-first");
    let Auth::Bearer(token) = &config.auth else { panic!("{:?}", config.auth) };
    assert_eq!(token.expose_secret(), "first-token");

    // A context only the second file has still gets the first file's cluster and user.
    let config = merged(
        &["merge-first.yaml", "merge/second.yaml"],
        &KubeconfigOptions::default().context("mixed"),
    )
    .unwrap();
    assert_eq!(config.cluster_url.as_str(), "https://first.example.test:6443/");
    let Auth::Bearer(token) = &config.auth else { panic!("{:?}", config.auth) };
    assert_eq!(token.expose_secret(), "first-token");

    // In the other order, the second file's entries win.
    let config = merged(&["merge/second.yaml", "merge-first.yaml"], &shared).unwrap();
    assert_eq!(config.cluster_url.as_str(), "https://second-only.example.test:6443/");
    assert!(matches!(config.auth, Auth::TokenFile(_)));
}

#[test]
fn missing_files_in_the_list_are_skipped() {
    let paths = [fixtures().join("nope.yaml"), fixtures().join("token.yaml")];
    let config = Config::from_kubeconfig_files(&paths, &KubeconfigOptions::default()).unwrap();
    assert_eq!(config.default_namespace, "team-a");
    let err = Config::from_kubeconfig_files(
        &[fixtures().join("nope.yaml")],
        &KubeconfigOptions::default(),
    )
    .unwrap_err();
    assert!(matches!(err, ConfigError::NoConfig { .. }), "{err:?}");
}

#[test]
fn context_cluster_and_user_overrides() {
    let files = ["merge-first.yaml", "merge/second.yaml"];
    let config = merged(
        &files,
        &KubeconfigOptions::default().context("second-only").cluster("shared").user("shared-user"),
    )
    .unwrap();
    assert_eq!(config.cluster_url.as_str(), "https://first.example.test:6443/");
    assert_eq!(config.default_namespace, "from-second");
    assert!(matches!(config.auth, Auth::Bearer(_)));

    let paths: Vec<PathBuf> = files.iter().map(|name| fixtures().join(name)).collect();
    let err = Config::from_kubeconfig_files(&paths, &KubeconfigOptions::default().context("nope"))
        .unwrap_err();
    assert!(err.to_string().starts_with("context `nope` not found in "), "{err}");
    let err = Config::from_kubeconfig_files(&paths, &KubeconfigOptions::default().user("nobody"))
        .unwrap_err();
    assert!(err.to_string().starts_with("user `nobody` not found in "), "{err}");
}

#[test]
fn in_cluster_reads_the_service_account() {
    let dir = TempDir::new("sa").unwrap();
    std::fs::write(dir.0.join("token"), "sa-token").unwrap();
    std::fs::write(dir.0.join("ca.crt"), CA_PEM).unwrap();
    std::fs::write(dir.0.join("namespace"), "payments\n").unwrap();
    let mut options = InClusterOptions {
        service_host: Some("10.96.0.1".to_owned()),
        service_port: Some("6443".to_owned()),
        namespace: None,
        service_account_dir: dir.0.clone(),
    };
    let config = Config::incluster_with(&options).unwrap();
    assert_eq!(config.cluster_url.as_str(), "https://10.96.0.1:6443/");
    assert_eq!(config.root_certs_pem.as_deref(), Some(CA_PEM.as_bytes()));
    assert_eq!(config.default_namespace, "payments");
    assert!(matches!(&config.auth, Auth::TokenFile(path) if path == &dir.0.join("token")));

    options.service_host = Some("fd00:10:96::1".to_owned());
    options.namespace = Some("from-env".to_owned());
    let config = Config::incluster_with(&options).unwrap();
    assert_eq!(config.cluster_url.as_str(), "https://[fd00:10:96::1]:6443/");
    assert_eq!(config.default_namespace, "from-env");

    options.service_port = None;
    assert!(matches!(Config::incluster_with(&options), Err(ConfigError::NotInCluster)));

    options.service_port = Some("6443".to_owned());
    std::fs::remove_file(dir.0.join("token")).unwrap();
    assert!(matches!(Config::incluster_with(&options), Err(ConfigError::Io { .. })));
}

#[test]
fn debug_output_never_contains_secrets() {
    let secrets = [
        "fixture-token-0123456789abcdef",
        "fixture-password-s3cr3t",
        "Zml4dHVyZS1zZWNyZXQta2V5",
        "fixture-env-secret",
    ];
    for name in
        ["token.yaml", "files.yaml", "client-cert-data.yaml", "insecure-basic.yaml", "exec-v1.yaml"]
    {
        let config = load(name).unwrap();
        let debug = format!("{config:?} {:?} {:?}", config.auth, config.identity);
        for secret in secrets {
            assert!(!debug.contains(secret), "{name}: {debug}");
        }
    }
}

/// A kubeconfig is user input, and so are the paths in it: one that names a file without end
/// (`/dev/zero`) is an error naming the field and the file, not a read that takes all memory.
#[test]
fn a_certificate_path_to_a_file_without_end_is_an_error_not_a_memory_hog() {
    let dir = TempDir::new("endless").unwrap();
    let path = dir.0.join("config");
    std::fs::write(
        &path,
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n\
         clusters: [{name: k, cluster: {server: 'https://10.0.0.1', certificate-authority: /dev/zero}}]\n\
         contexts: [{name: c, context: {cluster: k, user: u}}]\n\
         users: [{name: u, user: {token: t}}]\n",
    )
    .unwrap();
    let err = Config::from_kubeconfig_file(&path, &KubeconfigOptions::default()).unwrap_err();
    let message = err.to_string();
    assert!(message.contains("certificate-authority"), "{message}");
    assert!(message.contains("/dev/zero") && message.contains("more than"), "{message}");
}
