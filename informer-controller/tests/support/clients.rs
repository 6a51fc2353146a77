//! The two clients the tests write through, both reading the embedded API server's address:
//! this project's `Client`, and the `kube::Client` a kube-rs program gets from its kubeconfig.

#![allow(dead_code, reason = "each test file uses the clients it needs")]

use embedded_apiserver::ApiServer;
use informer_client::{Client, Config};
use kube::config::{KubeConfigOptions, Kubeconfig};

/// This project's client of `server`.
pub fn our_client(server: &ApiServer) -> Client {
    Client::new(Config::new(server.url().parse().unwrap())).unwrap()
}

/// The `kube::Client` a kube-rs program reading `server`'s kubeconfig gets.
pub async fn kube_client(server: &ApiServer) -> kube::Client {
    let kubeconfig = Kubeconfig::from_yaml(&server.kubeconfig_yaml()).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .unwrap();
    kube::Client::try_from(config).unwrap()
}
