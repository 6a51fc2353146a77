//! `peer-informer`: this project's informer as a benchmark peer, over this project's own
//! `Client` (reqwest, HTTP/2 when offered). What it runs and its flags are in
//! [`informer_bench::informer_peer`]; the protocol is in [`informer_bench`]'s crate docs.

use std::process::ExitCode;

use informer_bench::PeerArgs;
use informer_runtime::Client;
use informer_runtime::client::Config;

const PEER: &str = "informer";

fn main() -> ExitCode {
    informer_bench::main(PEER, run)
}

async fn run(args: PeerArgs) -> Result<(), String> {
    let url = args.server.parse().map_err(|e| format!("--server {}: {e}", args.server))?;
    let client =
        Client::new(Config::new(url)).map_err(|e| format!("client for {}: {e}", args.server))?;
    informer_bench::informer_peer::run(PEER, args, client).await
}
