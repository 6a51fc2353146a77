//! A custom resource written in Rust with `#[derive(Informer)]`: [`Database`], with nested
//! structs, string enums, enums with data (externally and internally tagged), maps, optional and
//! required fields, int-or-string, k8s-openapi's `Condition`, free-form JSON, unknown fields kept
//! through a flattened map, and the status and scale subresources.
//!
//! It is also the workspace's check that the two front ends agree. `cargo xtask codegen` writes
//! [`Database::crd()`] to `crds/databases.example.com.json` (from `cargo run -p example-derive
//! --example manifest`, which prints it for `kubectl apply -f -`) and runs informer-gen on that
//! manifest into `tests/generated/databases.rs`; `tests/round_trip.rs` checks that the manifest
//! is current and that objects decode through both the derived and the generated type and encode
//! back to the same JSON.
//!
//! ```
//! use example_derive::{Database, Engine};
//!
//! let db: Database = serde_json::from_value(serde_json::json!({
//!     "apiVersion": "example.com/v1",
//!     "kind": "Database",
//!     "metadata": {"name": "orders", "namespace": "shop"},
//!     "spec": {"engine": "postgres", "version": "16.2", "replicas": 3, "storage": {"size": "10Gi"}},
//! }))?;
//! assert_eq!(db.spec.engine, Engine::Postgres);
//! // Serialize writes apiVersion and kind back.
//! assert_eq!(serde_json::to_value(&db)?["kind"], "Database");
//! # Ok::<(), serde_json::Error>(())
//! ```

use std::collections::BTreeMap;

use informer_derive::Informer;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A database cluster.
#[derive(Clone, Debug, PartialEq, Deserialize, Informer)]
#[informer(
    group = "example.com",
    version = "v1",
    shortname = "db",
    category = "example",
    status,
    scale(
        spec_replicas_path = ".spec.replicas",
        status_replicas_path = ".status.readyReplicas",
        label_selector_path = ".status.selector"
    ),
    printcolumn(name = "Engine", type = "string", json_path = ".spec.engine"),
    printcolumn(name = "Ready", type = "integer", json_path = ".status.readyReplicas"),
    selectable = ".spec.engine",
    validation = "self.spec.replicas <= 9"
)]
pub struct Database {
    /// Standard object metadata.
    pub metadata: ObjectMeta,
    /// What the database should be.
    pub spec: DatabaseSpec,
    /// What the database is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<DatabaseStatus>,
}

/// The desired state of a database.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DatabaseSpec {
    /// The database engine.
    pub engine: Engine,
    /// The engine's version, like "16.2".
    pub version: String,
    /// How many instances to run.
    pub replicas: i32,
    /// Whether writes are refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    /// The share of memory given to caches, between 0 and 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_ratio: Option<f64>,
    /// The port to listen on, by number or by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<IntOrString>,
    /// Where the data lives.
    pub storage: Storage,
    /// Engine parameters, by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub parameters: BTreeMap<String, String>,
    /// Who may connect.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub users: Vec<User>,
    /// How the database is backed up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backup: Option<Backup>,
    /// Where the initial data comes from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<Source>,
    /// Changes to the pods' template, applied as they are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_overrides: Option<Value>,
    /// Settings this version does not know, kept as they are (the schema says
    /// `x-kubernetes-preserve-unknown-fields`).
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

/// A database engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    /// The `postgres` engine.
    Postgres,
    /// The `mysql` engine.
    MySql,
}

/// Where the data lives.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Storage {
    /// The size of each instance's volume, like "10Gi".
    // k8s-openapi's schema of `Quantity` is int-or-string, but its `Deserialize` reads only
    // strings: a string schema makes the API server refuse what this type could not read.
    #[schemars(with = "String")]
    pub size: Quantity,
    /// The storage class; the cluster's default if absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class_name: Option<String>,
}

/// A database user.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct User {
    /// The user's name.
    pub name: String,
    /// What the user may do.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub privileges: Vec<Privilege>,
    /// The secret that holds the user's password.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password_secret: Option<SecretKey>,
}

/// What a user may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Privilege {
    /// Read data.
    Read,
    /// Write data.
    Write,
    /// Change the schema and the users.
    Admin,
}

/// A key of a secret in the database's namespace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SecretKey {
    /// The secret's name.
    pub name: String,
    /// The key in the secret.
    pub key: String,
}

/// How a database is backed up: an externally tagged enum, one property per variant.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Backup {
    /// Snapshots on a schedule.
    Scheduled {
        /// When, as a cron expression.
        cron: String,
        /// How many snapshots to keep.
        keep: u32,
    },
    /// Continuous archiving of the write-ahead log.
    Continuous {
        /// How many days of history to keep.
        days: u32,
    },
}

/// Where a database's initial data comes from: an internally tagged enum.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Source {
    /// Nowhere: the database starts empty.
    Empty,
    /// A backup of another database.
    Backup {
        /// The other database's name.
        database: String,
    },
    /// A dump file.
    Dump {
        /// Where to download it from.
        url: String,
    },
}

/// The observed state of a database.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DatabaseStatus {
    /// How many instances serve.
    pub ready_replicas: i32,
    /// Where in its life the database is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<Phase>,
    /// The label selector of the database's pods, for the scale subresource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,
    /// The latest observations.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Where to connect, by role (`primary`, `replica`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub endpoints: BTreeMap<String, Endpoint>,
}

/// Where in its life a database is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum Phase {
    /// Being created.
    Pending,
    /// Serving.
    Running,
    /// Not serving, and not recovering by itself.
    Failed,
}

/// A network endpoint.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Endpoint {
    /// The host name.
    pub host: String,
    /// The port.
    pub port: i32,
}

/// The grouped factory accessors of this crate's resources, `factory.example().v1().databases()`
/// (what informer-gen writes for CRDs; see `informer_derive::informers!`).
///
/// ```no_run
/// use example_derive::informers::CustomResourceInformers as _;
/// use example_derive::{Database, DatabaseLister};
///
/// # async fn run(client: informer_client::Client) {
/// client.create(None, &Database::crd()).await.expect("the CRD is installed");
/// let factory = informer_runtime::SharedInformerFactory::new(client);
/// let databases = factory.example().v1().databases();
/// databases.informer(); // add handlers here
/// factory.start();
/// let lister: DatabaseLister = databases.lister();
/// # }
/// ```
pub mod informers {
    informer_derive::informers!(super::Database);
}
