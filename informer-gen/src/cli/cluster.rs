//! `informer-gen crd --from-cluster NAME...` and `--all-from-cluster [--group G]...`: the CRDs
//! read from a live API server, through informer-runtime's own [`Client`] and its configuration
//! loading (kubeconfig as kubectl reads it, else the in-cluster service account).
//!
//! The CRDs are listed as JSON (informer-runtime's `DynamicObject`), not through k8s-openapi's
//! `CustomResourceDefinition`, which would drop schema fields newer than it and write integer
//! bounds back as floats. Each is encoded as JSON text again and handed to
//! [`schema::parse_str_as`], so it is checked and converted exactly as a file would be.
//! Its "file", in errors and in `--list`, is its URL on the server
//! (`https://10.0.0.1:6443/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com`).
//! Every request runs under a deadline (`--request-timeout`), so an unreachable server is an
//! error naming it, never a hang.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use informer_client::{Client, ClientError, Config, ConfigError, KubeconfigOptions};
use informer_gen::schema::{self, Format, Loaded};
use informer_runtime::GroupVersionResource;
use informer_runtime::dynamic::DynamicObject;
use informer_runtime::listwatch::{DynamicScope, ListOptions};

/// The path of CRDs on an API server.
const CRDS_PATH: &str = "apis/apiextensions.k8s.io/v1/customresourcedefinitions";

/// CRDs per list page: kubectl's page size. A page of large CRDs is tens of MiB at most, well
/// within the client's bounds.
const PAGE_SIZE: u32 = 500;

/// The options that read CRDs from an API server instead of files.
#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("cluster").args(["from_cluster", "all_from_cluster"])))]
#[command(next_help_heading = "Reading CRDs from an API server")]
#[allow(clippy::doc_markdown, reason = "doc comments are --help text, shown verbatim")]
pub(crate) struct ClusterArgs {
    /// Reads the named CustomResourceDefinitions (widgets.example.com) from the API server
    /// instead of files
    ///
    /// The server is the one of the current kubeconfig context (KUBECONFIG, else
    /// ~/.kube/config; see --kubeconfig, --context), else of the in-cluster service account.
    /// Files and the cluster are not read together.
    #[arg(
        long,
        value_name = "NAME",
        num_args = 1..,
        value_parser = parse_crd_name,
        conflicts_with_all = ["files", "all_from_cluster"]
    )]
    pub(crate) from_cluster: Vec<String>,

    /// Reads every CustomResourceDefinition of the API server (as --from-cluster), or those of
    /// the groups --group names
    #[arg(long, conflicts_with = "files")]
    pub(crate) all_from_cluster: bool,

    /// With --all-from-cluster, reads only the CRDs of group G (repeatable): the group itself
    /// (cert-manager.io), or *.SUFFIX for the groups that end in .SUFFIX (*.istio.io matches
    /// networking.istio.io, not istio.io)
    #[arg(
        long,
        value_name = "G",
        requires = "cluster",
        conflicts_with = "from_cluster",
        value_parser = parse_group
    )]
    pub(crate) group: Vec<String>,

    /// With --from-cluster or --all-from-cluster, the kubeconfig file to read instead of
    /// KUBECONFIG or ~/.kube/config
    #[arg(long, value_name = "FILE", requires = "cluster")]
    pub(crate) kubeconfig: Option<PathBuf>,

    /// With --from-cluster or --all-from-cluster, the kubeconfig context to use instead of its
    /// current-context
    #[arg(long, value_name = "NAME", requires = "cluster")]
    pub(crate) context: Option<String>,

    /// With --from-cluster or --all-from-cluster, how long each request to the API server may
    /// take: seconds (30, 30s) or minutes (2m)
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    pub(crate) request_timeout: Duration,
}

impl ClusterArgs {
    /// Whether CRDs come from the cluster.
    pub(crate) fn selected(&self) -> bool {
        !self.from_cluster.is_empty() || self.all_from_cluster
    }
}

/// Why CRDs could not be read from the cluster.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    /// No usable configuration: no kubeconfig, a broken one, an unknown context.
    #[error("cannot load the cluster configuration: {0}")]
    Config(#[source] ConfigError),
    /// The client could not be built from the configuration.
    #[error("cannot set up a client for {server}: {source}")]
    Client {
        /// The server's URL.
        server: String,
        /// Why.
        #[source]
        source: ClientError,
    },
    /// The server has no CRD of that name.
    #[error(
        "no CustomResourceDefinition {name} on {server} (the name is plural.group, as \
         `kubectl get crd` lists them)"
    )]
    NotFound {
        /// The name asked for.
        name: String,
        /// The server's URL.
        server: String,
    },
    /// A request failed.
    #[error("{request} on {server}: {message}")]
    Request {
        /// `LIST customresourcedefinitions`, with `?fieldSelector=metadata.name=NAME` for a
        /// named one.
        request: String,
        /// The server's URL.
        server: String,
        /// The client's error.
        message: String,
    },
    /// A request took longer than `--request-timeout`.
    #[error(
        "{request} on {server}: no answer within {} s (is the server reachable? \
         --request-timeout sets the deadline)",
        timeout.as_secs_f64()
    )]
    Timeout {
        /// As for [`Error::Request`].
        request: String,
        /// The server's URL.
        server: String,
        /// The deadline.
        timeout: Duration,
    },
    /// `--all-from-cluster` found nothing to generate.
    #[error("no CustomResourceDefinition on {server}{}", groups_suffix(groups))]
    NoneFound {
        /// The server's URL.
        server: String,
        /// The `--group` patterns.
        groups: Vec<String>,
    },
    /// The runtime the requests run on could not be started.
    #[error("cannot start the async runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// A CRD the server sent could not be encoded again (never expected).
    #[error("{file}: cannot encode the CustomResourceDefinition as JSON: {source}")]
    Encode {
        /// Its URL.
        file: String,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// A CRD read from the server is not one the generator can use.
    #[error(transparent)]
    Schema(#[from] informer_gen::Error),
}

fn groups_suffix(groups: &[String]) -> String {
    if groups.is_empty() { String::new() } else { format!(" in group {}", groups.join(", ")) }
}

/// The CRDs `args` select, read from the server of the configuration, in the order named
/// (`--from-cluster`) or by name (`--all-from-cluster`).
///
/// # Errors
///
/// See [`Error`].
pub(crate) fn load(args: &ClusterArgs) -> Result<Vec<Loaded>, Error> {
    let config = config(args)?;
    let mut url = config.cluster_url.clone();
    // Credentials never appear in messages.
    let _ = url.set_username("");
    let _ = url.set_password(None);
    let server = url.as_str().trim_end_matches('/').to_owned();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(Error::Runtime)?;
    let crds = runtime.block_on(async {
        let client = Client::new(config)
            .map_err(|source| Error::Client { server: server.clone(), source })?;
        let reader = Reader { client, server: &server, timeout: args.request_timeout };
        if args.all_from_cluster {
            reader.all(&args.group).await
        } else {
            reader.named(&args.from_cluster).await
        }
    })?;
    let mut loaded = Vec::new();
    for crd in &crds {
        let name = crd.metadata.name.as_deref().unwrap_or_default();
        let file = format!("{server}/{CRDS_PATH}/{name}");
        let text = serde_json::to_string(crd)
            .map_err(|source| Error::Encode { file: file.clone(), source })?;
        loaded.extend(schema::parse_str_as(Path::new(&file), &text, Format::Json)?);
    }
    Ok(loaded)
}

/// The configuration `--kubeconfig` and `--context` choose, else the one kubectl would use.
fn config(args: &ClusterArgs) -> Result<Config, Error> {
    let mut options = KubeconfigOptions::default();
    if let Some(context) = &args.context {
        options = options.context(context);
    }
    match (&args.kubeconfig, &args.context) {
        (Some(file), _) => Config::from_kubeconfig_file(file, &options),
        // A context is a kubeconfig's: no in-cluster fallback.
        (None, Some(_)) => Config::from_kubeconfig(&options),
        (None, None) => Config::infer(),
    }
    .map_err(Error::Config)
}

/// One server's CRDs, each request under the deadline.
struct Reader<'a> {
    client: Client,
    server: &'a str,
    timeout: Duration,
}

impl Reader<'_> {
    /// The CRDs named, each once, in the order first named.
    async fn named(&self, names: &[String]) -> Result<Vec<DynamicObject>, Error> {
        let mut crds = Vec::new();
        let mut seen = std::collections::BTreeSet::new();
        for name in names.iter().filter(|name| seen.insert(name.as_str())) {
            let mut found = self.list(Some(format!("metadata.name={name}"))).await?;
            match found.pop() {
                Some(crd) => crds.push(crd),
                None => {
                    return Err(Error::NotFound {
                        name: name.clone(),
                        server: self.server.to_owned(),
                    });
                }
            }
        }
        Ok(crds)
    }

    async fn all(&self, groups: &[String]) -> Result<Vec<DynamicObject>, Error> {
        let mut crds: Vec<DynamicObject> = self
            .list(None)
            .await?
            .into_iter()
            .filter(|crd| {
                let group = crd.data.get("spec").and_then(|spec| spec.get("group"));
                groups.is_empty()
                    || group.and_then(|g| g.as_str()).is_some_and(|g| group_matches(groups, g))
            })
            .collect();
        if crds.is_empty() {
            return Err(Error::NoneFound {
                server: self.server.to_owned(),
                groups: groups.to_vec(),
            });
        }
        crds.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        Ok(crds)
    }

    /// Every CRD the field selector selects, page by page, as the server wrote them: read as
    /// JSON, not through k8s-openapi's type, which would drop schema fields newer than it and
    /// write integer bounds back as floats.
    async fn list(&self, field_selector: Option<String>) -> Result<Vec<DynamicObject>, Error> {
        let resource =
            GroupVersionResource::new("apiextensions.k8s.io", "v1", "customresourcedefinitions");
        let lister = self.client.dynamic_lister_watcher(&resource, DynamicScope::All, false);
        let request = match &field_selector {
            Some(selector) => format!("LIST customresourcedefinitions?fieldSelector={selector}"),
            None => "LIST customresourcedefinitions".to_owned(),
        };
        let mut options =
            ListOptions { limit: Some(PAGE_SIZE), field_selector, ..ListOptions::default() };
        let mut crds = Vec::new();
        loop {
            let request = request.clone();
            let page = self
                .deadline(&request, lister.list(&options))
                .await?
                .map_err(|error| self.request_error(request, &error))?;
            crds.extend(page.items.into_iter().map(Arc::unwrap_or_clone).map(|mut crd| {
                // Items of a list may leave their type out; the loader checks it.
                crd.api_version.get_or_insert_with(|| "apiextensions.k8s.io/v1".to_owned());
                crd.kind.get_or_insert_with(|| "CustomResourceDefinition".to_owned());
                crd
            }));
            match page.continue_token {
                Some(token) if !token.is_empty() => options.continue_token = Some(token),
                _ => break,
            }
        }
        Ok(crds)
    }

    async fn deadline<T>(
        &self,
        request: &str,
        future: impl Future<Output = T>,
    ) -> Result<T, Error> {
        tokio::time::timeout(self.timeout, future).await.map_err(|_| Error::Timeout {
            request: request.to_owned(),
            server: self.server.to_owned(),
            timeout: self.timeout,
        })
    }

    fn request_error(&self, request: String, error: &dyn std::error::Error) -> Error {
        Error::Request { request, server: self.server.to_owned(), message: error.to_string() }
    }
}

/// Whether `group` is one of `patterns`: equal to one, or ending in `.SUFFIX` for a `*.SUFFIX`.
fn group_matches(patterns: &[String], group: &str) -> bool {
    patterns.iter().any(|pattern| match pattern.strip_prefix('*') {
        Some(suffix) => group.len() > suffix.len() && group.ends_with(suffix),
        None => pattern == group,
    })
}

/// A `--group`: a group name, or `*.` and a suffix.
fn parse_group(value: &str) -> Result<String, String> {
    let name = value.strip_prefix("*.").unwrap_or(value);
    if name.is_empty() || name.contains(['*', '/', ' ']) {
        return Err("expected an API group (cert-manager.io) or *.SUFFIX (*.istio.io)".into());
    }
    Ok(value.to_owned())
}

/// A `--from-cluster` name: `plural.group`, which a file path (`crds/`, `widget.yaml`) is not
/// often, so that a path given after the names is not taken for one.
fn parse_crd_name(value: &str) -> Result<String, String> {
    let file_extension = Path::new(value).extension().is_some_and(|extension| {
        ["yaml", "yml", "json"].iter().any(|file| extension.eq_ignore_ascii_case(file))
    });
    if value.contains(['/', '\\']) || file_extension {
        return Err(format!(
            "{value:?} looks like a file: --from-cluster takes CRD names (widgets.example.com), \
             and files and the cluster are not read together"
        ));
    }
    if !value.contains('.') {
        return Err(format!(
            "{value:?} is not a CRD name: a CRD is named plural.group (widgets.example.com)"
        ));
    }
    Ok(value.to_owned())
}

/// `30`, `30s` or `2m`.
fn parse_duration(value: &str) -> Result<Duration, String> {
    let (number, unit) = match value.strip_suffix('m') {
        Some(minutes) => (minutes, 60),
        None => (value.strip_suffix('s').unwrap_or(value), 1),
    };
    match number.parse::<u64>() {
        Ok(n) if n > 0 => n.checked_mul(unit).map(Duration::from_secs).ok_or_else(|| {
            format!("{value} is longer than this program can wait; give at most {} s", u64::MAX)
        }),
        _ => Err("expected a positive number of seconds (30, 30s) or minutes (2m)".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_match_whole_or_by_suffix() {
        let patterns = ["cert-manager.io".to_owned(), "*.istio.io".to_owned()];
        assert!(group_matches(&patterns, "cert-manager.io"));
        assert!(group_matches(&patterns, "networking.istio.io"));
        assert!(!group_matches(&patterns, "istio.io"));
        assert!(!group_matches(&patterns, "acme.cert-manager.io"));
        assert!(!group_matches(&patterns, "notistio.io"));
        assert!(parse_group("*istio.io").is_err());
        assert!(parse_group("*.").is_err());
    }

    #[test]
    fn names_that_look_like_files_are_refused() {
        assert!(parse_crd_name("widgets.example.com").is_ok());
        assert!(parse_crd_name("crds/").is_err());
        assert!(parse_crd_name("widgets.yaml").is_err());
        assert!(parse_crd_name("widgets").is_err());
    }

    #[test]
    fn durations_are_seconds_or_minutes() {
        assert_eq!(parse_duration("30"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("5s"), Ok(Duration::from_secs(5)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert!(parse_duration("0").is_err());
        assert!(parse_duration("1h").is_err());
        let overflow = parse_duration("999999999999999999m").unwrap_err();
        assert!(overflow.starts_with("999999999999999999m is longer than"), "{overflow}");
    }
}
