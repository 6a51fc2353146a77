//! What a typical pod controller reads of a pod: the shape of the view peers cache with
//! `--view`. Each library declares its own root type around these (this project through
//! `#[derive(Informer)]`, kube-rs through `kube::Resource`); the JSON they decode is the same.

use serde::{Deserialize, Serialize};

/// The spec fields read: where the pod runs and what it runs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodViewSpec {
    /// `spec.nodeName`.
    pub node_name: Option<String>,
    /// `spec.containers`, names and images only.
    #[serde(default)]
    pub containers: Vec<ContainerView>,
}

/// A container's name and image.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ContainerView {
    /// `name`.
    pub name: String,
    /// `image`.
    pub image: Option<String>,
}

/// The status fields read: the phase, the address and the conditions.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodViewStatus {
    /// `status.phase`.
    pub phase: Option<String>,
    /// `status.podIP`.
    #[serde(rename = "podIP")]
    pub pod_ip: Option<String>,
    /// `status.conditions`, type and status only.
    #[serde(default)]
    pub conditions: Vec<ConditionView>,
}

/// A condition's type and status.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ConditionView {
    /// `type`.
    #[serde(rename = "type")]
    pub type_: String,
    /// `status`.
    pub status: String,
}
