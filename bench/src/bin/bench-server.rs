//! `bench-server`: the embedded API server with generated pods, driven over stdin.
//!
//! It runs in its own process so that its memory is not counted against a peer's. Started by
//! `cargo xtask bench` as `bench-server --objects-dir DIR [--history N]`; it prints
//! `{"url":"http://127.0.0.1:PORT"}`, then answers one JSON line per command line. With
//! `--tls` it serves TLS with HTTP/2 (ALPN, as kube-apiserver), at most `--max-streams N`
//! streams per connection (100 by default), and writes its CA's PEM to `--ca-out FILE`.
//! The commands:
//!
//! - `load N`: creates pods until the server holds `N` ([`informer_bench::pods`]);
//! - `load-scale NAMESPACES PER`: creates `PER` objects of each kind of
//!   [`informer_bench::scale::KINDS`] in each of `NAMESPACES` namespaces (the `scale`
//!   scenario);
//! - `traffic`: what the server has served: TLS connections accepted (one per TCP connection
//!   of a TLS server), requests over HTTP/1.1 and over HTTP/2;
//! - `warm`: reads the whole list once, untimed (a fresh server's first big answers are slow);
//! - `churn N`: stalls every watch, modifies `N` pods (round robin, an annotation each), and ends
//!   the watches: each peer's re-watch from its last version gets the `N` events at once, so
//!   the figure is the peer's throughput, not the pace of the writes; the answer carries the
//!   wall-clock time of that end (`dropped_unix_us`), from which the peer's events/s is taken;
//! - `replay N`: reads the last churn's `N` events from a raw watch, undecoded: the server's
//!   own ceiling for the churn figures;
//! - `relist NAME`: stalls every watch, creates the pod `NAME`, compacts the history and ends
//!   the watches: a re-watch from an older version gets `410 Expired`, and the peer relists;
//! - `unmark NAME`: deletes that pod again, so the next case sees the count it loaded;
//! - `watches`: how many watches are open; `wait-watches N`: waits until `N` are;
//! - `paginate on` / `paginate off`: whether `resourceVersion=0` lists honour `limit` from now
//!   on ([`ServerHandle::set_paginate_cached_lists`]; off at start, as kube-apiserver's watch
//!   cache serves them whole): on, a peer's paged sync gets pages with continue tokens, all at
//!   one version; the answer is `{"paginate":true}` or `{"paginate":false}`.
//!
//! Periodic bookmarks are off: no peer's version moves except through the commands.

// Counts, sizes and durations of a benchmark are far below 2^52: `as f64` is exact here.
#![allow(clippy::cast_precision_loss)]

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use embedded_apiserver::{ApiServer, ServerHandle};
use informer_bench::pods::{Templates, namespace};
use informer_bench::scale;
use informer_runtime::GroupVersionResource;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

const USAGE: &str = "usage: bench-server --objects-dir DIR [--history N] [--addr HOST:PORT] \
[--tls] [--max-streams N] [--ca-out FILE]";

fn main() -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("bench-server: cannot start the tokio runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(std::env::args().skip(1).collect())) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("bench-server: {message}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Vec<String>) -> Result<(), String> {
    let mut objects_dir = None;
    let mut history = 100_000;
    let mut addr = "127.0.0.1:0".to_owned();
    let (mut tls, mut max_streams, mut ca_out) = (false, 100, None);
    let mut args = args.into_iter();
    while let Some(flag) = args.next() {
        if flag == "--tls" {
            tls = true;
            continue;
        }
        let value = args.next().ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))?;
        match flag.as_str() {
            "--objects-dir" => objects_dir = Some(PathBuf::from(value)),
            "--history" => {
                history = value.parse().map_err(|e| format!("--history {value}: {e}"))?;
            }
            "--addr" => addr = value,
            "--max-streams" => {
                max_streams = value.parse().map_err(|e| format!("--max-streams {value}: {e}"))?;
            }
            "--ca-out" => ca_out = Some(PathBuf::from(value)),
            other => return Err(format!("unknown flag {other}\n{USAGE}")),
        }
    }
    let templates = Templates::load(&objects_dir.ok_or_else(|| USAGE.to_owned())?)?;
    let addr = addr.parse().map_err(|e| format!("--addr {addr}: {e}"))?;
    let server = ApiServer::builder()
        .addr(addr)
        .history_limit(history)
        .bookmark_interval(None)
        // The recorded pods name owners (ReplicaSets, DaemonSets, nodes) the bench does not
        // create, which the collector would delete.
        .garbage_collector(false)
        .tls(tls)
        .max_concurrent_streams(max_streams)
        .start()
        .await
        .map_err(|e| format!("cannot start the API server: {e}"))?;
    if let (Some(path), Some(pem)) = (&ca_out, server.ca_pem()) {
        std::fs::write(path, pem).map_err(|e| format!("--ca-out {}: {e}", path.display()))?;
    }
    println!("{}", json!({"url": server.url()}));
    let mut bench =
        Bench { server: server.handle(), templates, pods: 0, churned: 0, churn_from: None };
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    while let Some(line) = lines.next_line().await.map_err(|e| format!("stdin: {e}"))? {
        let started = Instant::now();
        let answer = match bench.command(line.trim()) {
            Ok(mut answer) => {
                answer["ok"] = json!(true);
                answer["ms"] = json!(started.elapsed().as_millis());
                answer
            }
            Err(error) => json!({"ok": false, "error": error}),
        };
        println!("{answer}");
    }
    server.shutdown().await.map_err(|e| format!("shutdown: {e}"))
}

/// GETs the whole pod list at resourceVersion 0, and its first page of 500; returns the bytes
/// read. Plain HTTP/1.1 over a socket: the command loop is not async, the server's workers are.
fn warm(addr: std::net::SocketAddr) -> Result<usize, String> {
    let mut total = 0;
    for query in ["resourceVersion=0", "limit=500"] {
        let mut socket =
            std::net::TcpStream::connect(addr).map_err(|e| format!("warm-up {addr}: {e}"))?;
        let request = format!(
            "GET /api/v1/pods?{query} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
        );
        socket.write_all(request.as_bytes()).map_err(|e| format!("warm-up {addr}: {e}"))?;
        let mut body = Vec::new();
        socket.read_to_end(&mut body).map_err(|e| format!("warm-up {addr}: {e}"))?;
        total += body.len();
    }
    Ok(total)
}

/// Watches pods from `from` over HTTP/1.0 (no chunk framing: one line per event) until `n`
/// events have arrived; returns the bytes read.
fn replay(addr: std::net::SocketAddr, from: u64, n: usize) -> Result<usize, String> {
    let mut socket =
        std::net::TcpStream::connect(addr).map_err(|e| format!("replay {addr}: {e}"))?;
    let request = format!(
        "GET /api/v1/pods?watch=true&resourceVersion={from}&timeoutSeconds=60 HTTP/1.0\r\nHost: {addr}\r\n\r\n"
    );
    socket.write_all(request.as_bytes()).map_err(|e| format!("replay {addr}: {e}"))?;
    let mut reader = std::io::BufReader::with_capacity(1 << 20, socket);
    let mut line = Vec::new();
    let (mut bytes, mut events, mut in_body) = (0, 0, false);
    while events < n {
        line.clear();
        let read = std::io::BufRead::read_until(&mut reader, b'\n', &mut line)
            .map_err(|e| format!("replay {addr}: {e}"))?;
        if read == 0 {
            return Err(format!("replay {addr}: the watch ended after {events} of {n} events"));
        }
        bytes += read;
        if in_body {
            events += 1;
        } else if line == b"\r\n" {
            in_body = true;
        }
    }
    Ok(bytes)
}

/// Now, in microseconds since the Unix epoch: the one clock server and peers share.
fn unix_us() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

struct Bench {
    server: ServerHandle,
    templates: Templates,
    /// Pods `0..pods` exist.
    pods: usize,
    /// Modifications made so far, to stamp each with its own value.
    churned: usize,
    /// The resourceVersion the last churn started from.
    churn_from: Option<u64>,
}

impl Bench {
    fn command(&mut self, line: &str) -> Result<Value, String> {
        let pods = GroupVersionResource::new("", "v1", "pods");
        let (verb, arg) = line.split_once(' ').unwrap_or((line, ""));
        let number = || arg.parse::<usize>().map_err(|e| format!("{line:?}: {e}"));
        match verb {
            "load" => {
                let target = number()?;
                for i in self.pods..target {
                    let pod = self.templates.pod(i);
                    self.server.create(&pods, pod).map_err(|e| format!("create pod {i}: {e}"))?;
                }
                self.pods = self.pods.max(target);
                Ok(json!({"pods": self.pods, "rv": self.server.resource_version()}))
            }
            "load-scale" => {
                let (namespaces, per) = arg.split_once(' ').ok_or("load-scale NAMESPACES PER")?;
                let count = |n: &str| n.parse::<usize>().map_err(|e| format!("{line:?}: {e}"));
                let (namespaces, per) = (count(namespaces)?, count(per)?);
                for kind in scale::KINDS {
                    let gvr = GroupVersionResource::new("", "v1", kind);
                    for n in 0..namespaces {
                        for i in 0..per {
                            let object = scale::object(&self.templates, kind, n, i);
                            self.server
                                .create(&gvr, object)
                                .map_err(|e| format!("create {kind} {i} in namespace {n}: {e}"))?;
                        }
                    }
                }
                let objects = namespaces * per * scale::KINDS.len();
                Ok(json!({"objects": objects, "rv": self.server.resource_version()}))
            }
            "traffic" => {
                let traffic = self.server.traffic();
                Ok(json!({"tls_connections": traffic.tls_connections,
                          "http1_requests": traffic.http1_requests,
                          "http2_requests": traffic.http2_requests,
                          "watches": self.server.open_watches()}))
            }
            "warm" => {
                // The first large responses of a fresh server are slower (its allocator grows);
                // one of each kind of list, untimed, keeps that out of the first peer's figures.
                let warmed = warm(self.server.addr())?;
                Ok(json!({"bytes": warmed}))
            }
            "churn" => self.churn(number()?),
            "replay" => {
                // The server's own ceiling: the last churn's events read raw, not decoded.
                let n = number()?;
                let from = self.churn_from.ok_or("replay before churn")?;
                let started = Instant::now();
                let bytes = replay(self.server.addr(), from, n)?;
                let seconds = started.elapsed().as_secs_f64();
                Ok(
                    json!({"events": n, "bytes": bytes, "events_per_s": n as f64 / seconds.max(1e-9)}),
                )
            }
            "relist" => self.relist(arg),
            "unmark" => {
                // Absent when the peer failed before the relist: nothing to undo then.
                let deleted = self.server.get(&pods, &namespace(0), arg).is_some();
                if deleted {
                    self.server
                        .delete(&pods, &namespace(0), arg)
                        .map_err(|e| format!("delete {arg}: {e}"))?;
                }
                Ok(json!({"deleted": deleted, "rv": self.server.resource_version()}))
            }
            "watches" => Ok(json!({"watches": self.server.open_watches()})),
            "wait-watches" => {
                // Blocks this command loop, not the server: it runs on the runtime's workers.
                let n = number()?;
                let deadline = Instant::now() + Duration::from_secs(60);
                while self.server.open_watches() < n {
                    if Instant::now() > deadline {
                        return Err(format!("fewer than {n} watches open after 60 s"));
                    }
                    std::thread::sleep(Duration::from_millis(2));
                }
                Ok(json!({"watches": self.server.open_watches()}))
            }
            "paginate" => {
                let on = match arg {
                    "on" => true,
                    "off" => false,
                    _ => return Err(format!("{line:?}: paginate takes on or off")),
                };
                self.server.set_paginate_cached_lists(on);
                Ok(json!({"paginate": on}))
            }
            other => Err(format!("unknown command {other:?}")),
        }
    }

    /// Stalls the watches, modifies `n` pods round robin, and ends the watches.
    fn churn(&mut self, n: usize) -> Result<Value, String> {
        let pods = GroupVersionResource::new("", "v1", "pods");
        if self.pods == 0 {
            return Err("churn before load".to_owned());
        }
        let stalled = self.server.stall_watches();
        let from_rv = self.server.resource_version();
        self.churn_from = Some(from_rv);
        for _ in 0..n {
            let i = self.churned % self.pods;
            let name = self.templates.pod(i)["metadata"]["name"].clone();
            let name = name.as_str().unwrap_or_default();
            let mut pod = self
                .server
                .get(&pods, &namespace(i), name)
                .ok_or_else(|| format!("pod {i} ({name}) is gone"))?;
            pod["metadata"]["annotations"]["bench/churn"] = json!(self.churned.to_string());
            self.server.update(&pods, pod).map_err(|e| format!("update {name}: {e}"))?;
            self.churned += 1;
        }
        let dropped_unix_us = unix_us();
        let dropped = self.server.drop_watches();
        Ok(json!({"stalled": stalled, "dropped": dropped, "from_rv": from_rv,
                  "rv": self.server.resource_version(), "dropped_unix_us": dropped_unix_us}))
    }

    /// Stalls the watches, creates the pod `marker`, compacts, and ends the watches.
    fn relist(&mut self, marker: &str) -> Result<Value, String> {
        let pods = GroupVersionResource::new("", "v1", "pods");
        if marker.is_empty() {
            return Err("relist needs the marker's name".to_owned());
        }
        let stalled = self.server.stall_watches();
        let mut pod = self.templates.pod(0);
        pod["metadata"]["name"] = json!(marker);
        self.server.create(&pods, pod).map_err(|e| format!("create {marker}: {e}"))?;
        self.server.compact();
        let dropped = self.server.drop_watches();
        Ok(json!({"stalled": stalled, "dropped": dropped, "rv": self.server.resource_version()}))
    }
}
