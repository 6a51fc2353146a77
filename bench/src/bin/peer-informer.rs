//! `peer-informer`: this project's informer as a benchmark peer, over this project's own
//! `Client` (reqwest, HTTP/2 when offered). What it runs and its flags are in
//! [`informer_bench::informer_peer`] and, for `scale`, [`informer_bench::scale`]; the protocol
//! is in [`informer_bench`]'s crate docs.

use std::process::ExitCode;

use informer_bench::{PeerArgs, Scenario};
use informer_client::Client;
use informer_client::Config;

const PEER: &str = "informer";

fn main() -> ExitCode {
    informer_bench::main(PEER, run)
}

async fn run(args: PeerArgs) -> Result<(), String> {
    let url = args.server.parse().map_err(|e| format!("--server {}: {e}", args.server))?;
    let mut config = Config::new(url);
    if let Some(ca) = &args.ca_file {
        let pem = std::fs::read(ca).map_err(|e| format!("--ca-file {}: {e}", ca.display()))?;
        config.root_certs_pem = Some(pem);
    }
    let client = Client::new(config).map_err(|e| format!("client for {}: {e}", args.server))?;
    if args.scenario == Scenario::Scale {
        return informer_bench::scale::run(PEER, args, client).await;
    }
    informer_bench::informer_peer::run(PEER, args, client).await
}
