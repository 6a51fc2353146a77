//! The command line every peer takes (see the [protocol](crate#the-peer-protocol)).

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// The usage line of every peer.
pub const USAGE: &str = "usage: PEER --server URL --scenario sync|churn|relist|lister|scale --objects N \
[--events N] [--handlers N] [--transform strip-managed-fields] [--metadata-only] [--view] [--compact-storage RECENT] [--streaming-list] [--reconcile] [--marker NAME] \
[--namespace NS] [--selector KEY=VALUE] [--queries N] [--settle-ms N] [--timeout-s N] \
[--ca-file PEM] [--watch namespaced|cluster|none] [--namespaces N] [--get NS/NAME]";

/// What a peer measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scenario {
    /// The initial list into the cache.
    Sync,
    /// Modifications through the watch.
    Churn,
    /// A relist after `410 Expired`.
    Relist,
    /// Queries answered from the cache.
    Lister,
    /// One client, a watch per kind and namespace (see [`crate::scale`]).
    Scale,
}

impl Scenario {
    /// The name on the command line and in results.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Sync => "sync",
            Self::Churn => "churn",
            Self::Relist => "relist",
            Self::Lister => "lister",
            Self::Scale => "scale",
        }
    }
}

impl fmt::Display for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Scenario {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "sync" => Ok(Self::Sync),
            "churn" => Ok(Self::Churn),
            "relist" => Ok(Self::Relist),
            "lister" => Ok(Self::Lister),
            "scale" => Ok(Self::Scale),
            other => Err(format!("unknown scenario {other:?}")),
        }
    }
}

/// `scale`: which watches the peer opens (see [`crate::scale`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScaleWatch {
    /// One watch per kind and namespace: the scenario itself.
    Namespaced,
    /// One cluster-wide watch per kind, of the same objects: the memory of the objects
    /// without the per-namespace watches.
    Cluster,
    /// No watch at all: the memory of the client alone, and the latency of a get on an idle
    /// client.
    None,
}

impl ScaleWatch {
    /// The name on the command line.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Namespaced => "namespaced",
            Self::Cluster => "cluster",
            Self::None => "none",
        }
    }
}

impl FromStr for ScaleWatch {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "namespaced" => Ok(Self::Namespaced),
            "cluster" => Ok(Self::Cluster),
            "none" => Ok(Self::None),
            other => Err(format!("unknown --watch {other:?} (namespaced, cluster or none)")),
        }
    }
}

/// A peer's parsed command line.
#[derive(Clone, Debug)]
#[allow(clippy::struct_excessive_bools, reason = "independent flags of the command line")]
pub struct PeerArgs {
    /// The API server's base URL (`http://127.0.0.1:PORT`).
    pub server: String,
    /// What to measure.
    pub scenario: Scenario,
    /// How many pods the server holds: the cache is synced when it holds this many.
    pub objects: usize,
    /// `churn`: how many modifications to wait for.
    pub events: usize,
    /// `churn` and `sync`: how many event handlers (where the library has handlers).
    pub handlers: usize,
    /// Drop `metadata.managedFields` from every object before it is cached.
    pub strip_managed_fields: bool,
    /// Cache only metadata (`PartialObjectMetadata`), where the library can.
    pub metadata_only: bool,
    /// Cache a view of each pod (the fields a typical controller reads), decoded straight from
    /// the JSON, where the library can.
    pub view: bool,
    /// Hold the cache in compact storage (each object as JSON) with this many recently read
    /// objects kept decoded, where the library can.
    pub compact_storage: Option<usize>,
    /// List with a streaming list (a watch with `sendInitialEvents=true`), where the library
    /// can.
    pub streaming_list: bool,
    /// `churn`: each handler hands the key of each modified pod to a worker thread, which
    /// reads the pod back from the lister by that key before it counts it, as a controller's
    /// reconcile loop does (where the library has a lister).
    pub reconcile: bool,
    /// `relist`: the name of the pod the server creates before it compacts.
    pub marker: String,
    /// `lister`: the namespace to list.
    pub namespace: String,
    /// `lister`: the label selector, `key=value`.
    pub selector: String,
    /// `lister`: how many times each query runs.
    pub queries: usize,
    /// How long to wait after the sync before reading the steady RSS.
    pub settle: Duration,
    /// How long any phase may take before the peer gives up.
    pub timeout: Duration,
    /// A PEM file of the CA to trust (a TLS server's); `None`: the system roots.
    pub ca_file: Option<std::path::PathBuf>,
    /// `scale`: which watches to open.
    pub watch: ScaleWatch,
    /// `scale`: how many namespaces (`scale-000` ..) hold the objects.
    pub namespaces: usize,
    /// `scale`: the config map to get, `namespace/name`, `--queries` times.
    pub get: String,
}

impl PeerArgs {
    /// Parses `--flag value` pairs.
    ///
    /// # Errors
    ///
    /// An unknown flag, a flag without its value, an unparsable number, or a missing
    /// `--server`, `--scenario` or `--objects`.
    pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Self, String> {
        let mut server = None;
        let mut scenario = None;
        let mut objects = None;
        let mut parsed = Self {
            server: String::new(),
            scenario: Scenario::Sync,
            objects: 0,
            events: 0,
            handlers: 1,
            strip_managed_fields: false,
            metadata_only: false,
            view: false,
            compact_storage: None,
            streaming_list: false,
            reconcile: false,
            marker: "bench-marker".to_owned(),
            namespace: "ns-000".to_owned(),
            selector: "app=app-00".to_owned(),
            queries: 100,
            settle: Duration::from_secs(1),
            timeout: Duration::from_secs(600),
            ca_file: None,
            watch: ScaleWatch::Namespaced,
            namespaces: 0,
            get: String::new(),
        };
        let mut args = args.into_iter();
        while let Some(flag) = args.next() {
            if flag == "--metadata-only" {
                parsed.metadata_only = true;
                continue;
            }
            if flag == "--view" {
                parsed.view = true;
                continue;
            }
            if flag == "--streaming-list" {
                parsed.streaming_list = true;
                continue;
            }
            if flag == "--reconcile" {
                parsed.reconcile = true;
                continue;
            }
            let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
            let number =
                |value: &str| value.parse::<usize>().map_err(|e| format!("{flag} {value:?}: {e}"));
            match flag.as_str() {
                "--server" => server = Some(value),
                "--scenario" => scenario = Some(value.parse()?),
                "--objects" => objects = Some(number(&value)?),
                "--events" => parsed.events = number(&value)?,
                "--handlers" => parsed.handlers = number(&value)?.max(1),
                "--compact-storage" => parsed.compact_storage = Some(number(&value)?),
                "--transform" if value == "strip-managed-fields" => {
                    parsed.strip_managed_fields = true;
                }
                "--transform" => return Err(format!("unknown transform {value:?}")),
                "--marker" => parsed.marker = value,
                "--namespace" => parsed.namespace = value,
                "--selector" => parsed.selector = value,
                "--queries" => parsed.queries = number(&value)?.max(1),
                "--settle-ms" => parsed.settle = Duration::from_millis(number(&value)? as u64),
                "--timeout-s" => parsed.timeout = Duration::from_secs(number(&value)? as u64),
                "--ca-file" => parsed.ca_file = Some(value.into()),
                "--watch" => parsed.watch = value.parse()?,
                "--namespaces" => parsed.namespaces = number(&value)?,
                "--get" => parsed.get = value,
                other => return Err(format!("unknown flag {other}")),
            }
        }
        parsed.server = server.ok_or("--server is required")?;
        parsed.scenario = scenario.ok_or("--scenario is required")?;
        parsed.objects = objects.ok_or("--objects is required")?;
        Ok(parsed)
    }

    /// The `--get` as its namespace and name.
    ///
    /// # Errors
    ///
    /// A `--get` that is not `namespace/name`.
    pub fn get_pair(&self) -> Result<(&str, &str), String> {
        self.get
            .split_once('/')
            .ok_or_else(|| format!("--get {:?}: expected namespace/name", self.get))
    }

    /// The `--selector` as its key and value.
    ///
    /// # Errors
    ///
    /// A selector that is not `key=value`.
    pub fn selector_pair(&self) -> Result<(&str, &str), String> {
        self.selector
            .split_once('=')
            .ok_or_else(|| format!("--selector {:?}: expected key=value", self.selector))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Result<PeerArgs, String> {
        PeerArgs::parse(line.split_whitespace().map(str::to_owned))
    }

    #[test]
    fn flags_parse_with_defaults() {
        let args = parse(
            "--server http://x --scenario churn --objects 5 --events 7 --handlers 3 \
                          --transform strip-managed-fields --metadata-only",
        )
        .unwrap();
        assert_eq!(args.scenario, Scenario::Churn);
        assert_eq!((args.objects, args.events, args.handlers), (5, 7, 3));
        assert!(args.strip_managed_fields && args.metadata_only);
        assert_eq!(args.selector_pair().unwrap(), ("app", "app-00"));
    }

    #[test]
    fn bad_command_lines_say_what_is_wrong() {
        assert_eq!(parse("--server x --scenario sync").unwrap_err(), "--objects is required");
        assert_eq!(parse("--objects 1").unwrap_err(), "--server is required");
        assert!(parse("--server x --scenario fly --objects 1").unwrap_err().contains("fly"));
        assert_eq!(parse("--server").unwrap_err(), "--server needs a value");
        assert!(parse("--server x --scenario sync --objects many").unwrap_err().contains("many"));
    }
}
