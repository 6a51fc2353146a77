//! `peer-informer-kube`: this project's informer as a benchmark peer over kube-rs's
//! `kube::Client` (feature `kube` of `informer-client`):
//! `SharedInformerFactory::new(Client::from(kube_client))`, as a kube-rs program adds informers. The bytes travel through kube-rs's stack (hyper,
//! HTTP/1.1) and are decoded by this project's decoders; everything else is `peer-informer`'s
//! ([`informer_bench::informer_peer`]). The client is built as `peer-kube` builds its own
//! (`kube::Config::new(url)`, kube-rs's defaults). The protocol is in [`informer_bench`]'s
//! crate docs.

use std::process::ExitCode;

use informer_bench::{PeerArgs, Scenario, report};

const PEER: &str = "informer-kube";

fn main() -> ExitCode {
    informer_bench::main(PEER, run)
}

async fn run(args: PeerArgs) -> Result<(), String> {
    if args.scenario == Scenario::Scale {
        // kube-rs's stack speaks HTTP/1.1, a connection per watch: no stream limit to meet.
        return report::unsupported("kube-rs's client speaks HTTP/1.1 (a connection per watch)");
    }
    let url = args.server.parse().map_err(|e| format!("--server {}: {e}", args.server))?;
    let client = kube::Client::try_from(kube::Config::new(url))
        .map_err(|e| format!("kube client for {}: {e}", args.server))?;
    informer_bench::informer_peer::run(PEER, args, informer_client::Client::from(client)).await
}
