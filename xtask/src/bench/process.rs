//! The child processes of a benchmark: the API server (driven over its stdin) and one peer run
//! at a time (read from its stdout), each killed if it outlives its use.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::Value;

/// A child process whose stdout lines arrive on a channel; killed when dropped.
struct Lines {
    name: String,
    child: Child,
    received: Receiver<String>,
    stderr: Option<std::thread::JoinHandle<String>>,
}

impl Lines {
    fn spawn(name: &str, mut command: Command, capture_stderr: bool) -> Result<Self, String> {
        command.stdout(Stdio::piped());
        command.stderr(if capture_stderr { Stdio::piped() } else { Stdio::inherit() });
        let mut child = command.spawn().map_err(|e| format!("cannot start {name}: {e}"))?;
        let stdout = child.stdout.take().ok_or_else(|| format!("{name}: no stdout"))?;
        let (tx, received) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = child.stderr.take().map(|mut stderr| {
            std::thread::spawn(move || {
                let mut text = String::new();
                let _ = stderr.read_to_string(&mut text);
                text
            })
        });
        Ok(Self { name: name.to_owned(), child, received, stderr })
    }

    /// The next stdout line that is a JSON object, within `timeout`.
    fn next_json(&mut self, timeout: Duration) -> Result<Value, String> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.received.recv_timeout(left) {
                Ok(line) => match serde_json::from_str::<Value>(&line) {
                    Ok(value) if value.is_object() => return Ok(value),
                    _ => eprintln!("  {}: {line}", self.name),
                },
                Err(RecvTimeoutError::Timeout) => {
                    return Err(format!("{}: no answer within {timeout:?}", self.name));
                }
                Err(RecvTimeoutError::Disconnected) => {
                    let status =
                        self.child.wait().map_or_else(|e| e.to_string(), |s| s.to_string());
                    let tail = self.stderr_tail();
                    return Err(format!("{} ended ({status}){tail}", self.name));
                }
            }
        }
    }

    /// The last lines the child wrote on stderr, after it ended.
    fn stderr_tail(&mut self) -> String {
        let Some(reader) = self.stderr.take() else { return String::new() };
        let text = reader.join().unwrap_or_default();
        // Backtrace frames are indented: the messages are the lines that are not.
        let lines: Vec<&str> =
            text.lines().filter(|l| !l.starts_with(' ') && !l.trim().is_empty()).collect();
        let tail = lines[lines.len().saturating_sub(8)..].join("\n    ");
        if tail.is_empty() { String::new() } else { format!(":\n    {tail}") }
    }
}

impl Drop for Lines {
    fn drop(&mut self) {
        // Only this child, which this process started.
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

/// The benchmark API server (`bench-server`), with its command channel.
pub(crate) struct Server {
    process: Lines,
    stdin: ChildStdin,
    /// Its base URL.
    pub(crate) url: String,
}

impl Server {
    /// Starts `bench-server` with pods made from the templates in `objects`, and `extra`
    /// flags (`--tls`, ...).
    pub(crate) fn start(
        exe: &Path,
        objects: &Path,
        history: usize,
        extra: &[String],
    ) -> Result<Self, String> {
        let mut command = Command::new(exe);
        command
            .arg("--objects-dir")
            .arg(objects)
            .args(["--history", &history.to_string()])
            .args(extra)
            .stdin(Stdio::piped());
        let mut process = Lines::spawn("bench-server", command, false)?;
        let stdin = process.child.stdin.take().ok_or("bench-server: no stdin")?;
        let hello = process.next_json(Duration::from_secs(60))?;
        let url = hello["url"].as_str().ok_or("bench-server: no url in its first line")?.to_owned();
        Ok(Self { process, stdin, url })
    }

    /// Sends one command and waits for its answer.
    pub(crate) fn command(&mut self, command: &str, timeout: Duration) -> Result<Value, String> {
        writeln!(self.stdin, "{command}")
            .and_then(|()| self.stdin.flush())
            .map_err(|e| format!("bench-server {command:?}: {e}"))?;
        let answer = self.process.next_json(timeout)?;
        if answer["ok"] == true {
            Ok(answer)
        } else {
            Err(format!("bench-server {command:?}: {}", answer["error"]))
        }
    }
}

/// What one peer run ended with.
#[derive(Debug, Clone)]
pub(crate) enum Outcome {
    /// Its `result` line.
    Result(Value),
    /// The peer cannot run this variant, and why.
    Unsupported(String),
}

/// One peer run's command line.
pub(crate) struct PeerCommand<'a> {
    /// The peer's name, for messages.
    pub(crate) name: &'a str,
    /// Its executable.
    pub(crate) exe: &'a Path,
    /// Its arguments.
    pub(crate) args: &'a [String],
    /// A command (a profiler) the peer runs under, the peer's command line appended; empty:
    /// none.
    pub(crate) wrap: &'a [String],
}

/// Runs one peer to its end. `on_synced` is called when it prints its `synced` line (the
/// scenario's action on the server); what it returns is added to the result as `server`.
pub(crate) fn run_peer(
    peer_command: &PeerCommand<'_>,
    timeout: Duration,
    mut on_synced: impl FnMut() -> Result<Value, String>,
) -> Result<Outcome, String> {
    let PeerCommand { name, exe, args, wrap } = *peer_command;
    let mut command = match wrap.split_first() {
        Some((program, wrap_args)) => {
            let mut command = Command::new(program);
            command.args(wrap_args).arg(exe);
            command
        }
        None => Command::new(exe),
    };
    command.args(args).stdin(Stdio::null());
    let mut peer = Lines::spawn(name, command, true)?;
    let deadline = Instant::now() + timeout;
    let mut server = Value::Null;
    loop {
        let mut line = peer.next_json(deadline.saturating_duration_since(Instant::now()))?;
        match line["phase"].as_str() {
            Some("synced") => server = on_synced()?,
            Some("result") => {
                line["server"] = server;
                let status = peer.child.wait().map_err(|e| format!("{name}: {e}"))?;
                if !status.success() {
                    return Err(format!("{name} ended ({status}){}", peer.stderr_tail()));
                }
                return Ok(Outcome::Result(line));
            }
            Some("unsupported") => {
                let reason = line["reason"].as_str().unwrap_or("unsupported").to_owned();
                return Ok(Outcome::Unsupported(reason));
            }
            _ => eprintln!("  {name}: unexpected line {line}"),
        }
    }
}

/// Heap to prime per object: a little more than the largest peer's peak per pod (the floor's,
/// about 71 KiB at 20k pods with managedFields).
const PRIME_PER_OBJECT: f64 = 80.0 * 1024.0;
/// The least that is primed, for small counts.
const PRIME_MIN_GIB: f64 = 0.25;

/// Fills and frees, in a child process with the peers' allocator (`prime-memory`), about as much
/// memory as a peer syncing `objects` pods will use, so that each peer starts with the machine's
/// free memory backed alike (see that binary's docs for why a VM needs this). Never more than
/// half the memory available now.
pub(crate) fn prime_memory(exe: &Path, objects: usize) -> Result<(), String> {
    let wanted = (objects as f64 * PRIME_PER_OBJECT / f64::from(1u32 << 30)).max(PRIME_MIN_GIB);
    let gib = available_gib().map_or(wanted, |available| wanted.min(available / 2.0));
    if gib < 0.01 {
        // Next to no memory is free: nothing to prime, and a peer will struggle anyway.
        return Ok(());
    }
    let output = Command::new(exe)
        .arg(format!("{gib:.3}"))
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{}: {e}", exe.display()))?;
    if !output.status.success() {
        return Err(format!(
            "{} {gib:.3} ended ({}): {}",
            exe.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    Ok(())
}

/// `MemAvailable` from `/proc/meminfo`, in GiB; `None` where there is no such file.
fn available_gib() -> Option<f64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / f64::from(1u32 << 20))
}
