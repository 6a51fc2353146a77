//! The fuzzing harness of the workspace's tests: each target is a property over random input,
//! run for a time budget on stable Rust.
//!
//! A target is a [`Property`]: a function that draws its input from an [`Unstructured`] (a
//! slice of random bytes, through the `arbitrary` crate), runs the code under test, and panics
//! when a property does not hold. [`Target::run`] calls it with fresh random bytes until its
//! time is up. Each input comes from a 64-bit seed in [arbtest]'s format (the low 32 bits are
//! the number of bytes, the high 32 bits seed a xorshift that makes them), and runs through
//! `arbtest` on a thread of its own, named after the seed, with Rust's default 2 MiB stack: a
//! stack overflow, which aborts the process, still names the input that caused it.
//!
//! The mutators ([`bytes`], [`json`], [`text`]) turn real seeds (recorded watch streams, list
//! pages, kubeconfigs and CRDs from `tests/fixtures`, see [`fixtures`]) into inputs that get past
//! the first byte: they splice, truncate, flip bytes, duplicate members, deepen nesting and
//! insert invalid UTF-8.
//!
//! # Environment
//!
//! - `INFORMER_FUZZ_SECONDS`: each target's time budget in seconds (default 2, the test suite's
//!   share; `cargo xtask fuzz --minutes N` raises it).
//! - `ARBTEST_SEED=0x…`: run that one input (the seed a failure printed), then stop. With
//!   `INFORMER_FUZZ_MINIMIZE=1` as well, look for a smaller input that still fails instead
//!   (for the budget), and print its seed.
//! - `INFORMER_FUZZ_DUMP=DIR`: properties save the inputs they make there ([`note`]), to look
//!   at the input of a replayed seed.
//! - `INFORMER_FUZZ_KEEP_GOING=1`: do not stop at the first failure; run the whole budget,
//!   count the failures by where they happened, and fail at the end if there was any. This is
//!   how `cargo xtask fuzz` runs the targets.
//!
//! # Output
//!
//! On standard output, one line per target when it ends, which `cargo xtask fuzz` reads:
//!
//! ```text
//! fuzz-report target=watch_decoder inputs=18234 skipped=0 failures=0 distinct=0 seconds=60.0
//! ```
//!
//! and, with `INFORMER_FUZZ_KEEP_GOING`, one `fuzz-failure target=… seed=0x… at=FILE:LINE
//! message=…` line per distinct failure when it is first seen, and a `fuzz-progress target=…
//! inputs=N` line every second (what was counted before a crash).

pub mod bytes;
pub mod fixtures;
pub mod json;
pub mod text;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Once, mpsc};
use std::time::{Duration, Instant};

pub use arbtest::arbitrary::{self, Unstructured};
/// The generator the mutators draw positions from, seeded from an input's bytes.
pub use fastrand::Rng;

/// A fuzz target's property: it draws an input from the bytes it is given, runs the code under
/// test, and panics if the code panics or a property does not hold.
///
/// An `Err` means the bytes ran out before an input could be made: that run is not counted.
pub type Property = fn(&mut Unstructured<'_>) -> arbitrary::Result<()>;

/// The stack each input runs on: Rust's default for spawned threads, so that a recursion a
/// program's own threads would not survive fails here too.
const STACK_SIZE: usize = 2 * 1024 * 1024;

/// How long one input may take before it counts as a hang: far more than any input takes, even
/// the largest in a debug build on a loaded machine (milliseconds in release, a few seconds in
/// debug), so that only a loop that does not end trips it.
const INPUT_TIMEOUT: Duration = Duration::from_secs(60);

/// The time budget when `INFORMER_FUZZ_SECONDS` is not set: what the test suite spends.
const DEFAULT_SECONDS: f64 = 2.0;

/// The prefix of the name of the thread each input runs on.
const THREAD_PREFIX: &str = "fuzz-input ";

/// Whether the panic hook stays silent for inputs (keep-going mode reports failures itself).
static QUIET: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// Where the last panic on this thread happened, and its message.
    static LAST_PANIC: RefCell<Option<(String, String)>> = const { RefCell::new(None) };
}

/// One fuzz target: a name and a property; see the [crate documentation](crate).
#[derive(Clone, Copy, Debug)]
pub struct Target {
    name: &'static str,
    property: Property,
    size_min: u32,
    size_max: u32,
}

impl Target {
    /// A target named `name` (as `cargo xtask fuzz --target NAME` names it).
    #[must_use]
    pub fn new(name: &'static str, property: Property) -> Self {
        Self { name, property, size_min: 64, size_max: 16 * 1024 }
    }

    /// The most random bytes one input gets (default 16 KiB); sizes are drawn between 64 bytes
    /// and this, evenly on a log scale, so small inputs are tried as often as large ones.
    #[must_use]
    pub fn size_max(mut self, size: u32) -> Self {
        self.size_max = size.max(self.size_min);
        self
    }

    /// Runs the target for its time budget (or replays `ARBTEST_SEED`) and prints its report.
    ///
    /// # Panics
    ///
    /// On the first failing input, with its seed and how to replay it; with
    /// `INFORMER_FUZZ_KEEP_GOING`, at the end if any input failed.
    pub fn run(self) {
        install_panic_hook();
        let settings = Settings::from_env();
        if let Some(seed) = settings.replay {
            if settings.minimize {
                self.minimize(seed, settings.budget);
            } else {
                self.replay(seed);
            }
            return;
        }
        QUIET.store(settings.keep_going, Ordering::Relaxed);
        let report = self.search(&settings);
        println!("{report}");
        assert!(
            report.failures == 0,
            "fuzz target {}: {} of {} inputs failed, {} distinct failures (seeds above); replay one \
             with ARBTEST_SEED=<seed> and this test",
            self.name,
            report.failures,
            report.inputs,
            report.distinct.len()
        );
    }

    fn search(&self, settings: &Settings) -> Report {
        let start = Instant::now();
        let mut report = Report::new(self.name);
        let mut last_progress = start;
        while start.elapsed() < settings.budget {
            let seed = Seed::random(self.size_min, self.size_max);
            match self.run_one(seed) {
                Outcome::Passed => report.inputs += 1,
                Outcome::Skipped => report.skipped += 1,
                Outcome::Failed(failure) => {
                    report.inputs += 1;
                    report.failures += 1;
                    let new = report.add(seed, &failure);
                    if new && settings.keep_going {
                        println!("{}", report.failure_line(seed, &failure));
                    }
                    if !settings.keep_going {
                        report.seconds = start.elapsed().as_secs_f64();
                        println!("{report}");
                        // The message may quote whole objects: the panic above printed it all.
                        let message: String = failure.message.chars().take(2000).collect();
                        panic!(
                            "fuzz target {}: input {seed} failed at {}: {message}\n\
                             replay: ARBTEST_SEED={seed} and this test (cargo test ... {})",
                            self.name, failure.at, self.name
                        );
                    }
                }
                Outcome::Hung => {
                    report.inputs += 1;
                    report.failures += 1;
                    let failure = Failure {
                        at: "(hang)".to_owned(),
                        message: format!("the input ran longer than {INPUT_TIMEOUT:?}"),
                    };
                    report.add(seed, &failure);
                    println!("{}", report.failure_line(seed, &failure));
                    // Its thread still runs: stop here rather than pile up more.
                    break;
                }
            }
            if settings.keep_going && last_progress.elapsed() >= Duration::from_secs(1) {
                last_progress = Instant::now();
                println!("fuzz-progress target={} inputs={}", self.name, report.inputs);
            }
        }
        report.seconds = start.elapsed().as_secs_f64();
        report
    }

    fn replay(&self, seed: Seed) {
        match self.run_one(seed) {
            Outcome::Passed => println!("fuzz target {}: input {seed} passed", self.name),
            Outcome::Skipped => {
                println!("fuzz target {}: input {seed} has too few bytes to run", self.name);
            }
            Outcome::Failed(failure) => panic!(
                "fuzz target {}: input {seed} failed at {}: {}",
                self.name, failure.at, failure.message
            ),
            Outcome::Hung => {
                panic!("fuzz target {}: input {seed} ran longer than {INPUT_TIMEOUT:?}", self.name)
            }
        }
    }

    /// arbtest's minimisation: smaller inputs of the same failure, for `budget`.
    fn minimize(&self, seed: Seed, budget: Duration) {
        let property = self.property;
        let thread = std::thread::Builder::new()
            .name(format!("{THREAD_PREFIX}{} minimize", self.name))
            .stack_size(STACK_SIZE)
            .spawn(move || {
                arbtest::arbtest(move |u| {
                    let _ = property(u);
                    Ok(())
                })
                .seed(seed.0)
                .minimize()
                .budget(budget)
                .run();
            });
        match thread.map(std::thread::JoinHandle::join) {
            Ok(Ok(())) => {}
            Ok(Err(_)) => panic!("fuzz target {}: minimizing {seed} failed", self.name),
            Err(error) => panic!("fuzz target {}: cannot start a thread: {error}", self.name),
        }
    }

    /// Runs one input on a thread of its own, named after it.
    fn run_one(&self, seed: Seed) -> Outcome {
        let property = self.property;
        let (sender, receiver) = mpsc::channel();
        let spawned = std::thread::Builder::new()
            .name(format!("{THREAD_PREFIX}{} {seed}", self.name))
            .stack_size(STACK_SIZE)
            .spawn(move || {
                let mut ran = false;
                let result = panic::catch_unwind(AssertUnwindSafe(|| {
                    arbtest::arbtest(|u| {
                        ran = property(u).is_ok();
                        Ok(())
                    })
                    .seed(seed.0)
                    .run();
                }));
                let outcome = match result {
                    Ok(()) if ran => Outcome::Passed,
                    Ok(()) => Outcome::Skipped,
                    Err(payload) => Outcome::Failed(Failure::of(payload.as_ref())),
                };
                let _ = sender.send(outcome);
            });
        let thread = match spawned {
            Ok(thread) => thread,
            Err(error) => panic!("fuzz target {}: cannot start a thread: {error}", self.name),
        };
        match receiver.recv_timeout(INPUT_TIMEOUT) {
            Ok(outcome) => {
                let _ = thread.join();
                outcome
            }
            Err(mpsc::RecvTimeoutError::Timeout) => Outcome::Hung,
            Err(mpsc::RecvTimeoutError::Disconnected) => Outcome::Failed(Failure {
                at: "(harness)".to_owned(),
                message: "the input's thread ended without an outcome".to_owned(),
            }),
        }
    }
}

/// What one input did.
enum Outcome {
    Passed,
    /// The bytes ran out before an input was made.
    Skipped,
    Failed(Failure),
    Hung,
}

/// A panic: where it happened and what it said.
struct Failure {
    /// `file:line:column`.
    at: String,
    message: String,
}

impl Failure {
    fn of(payload: &(dyn std::any::Any + Send)) -> Self {
        let recorded = LAST_PANIC.with(|last| last.borrow_mut().take());
        let (at, message) = recorded.unwrap_or_else(|| ("(unknown)".to_owned(), message(payload)));
        Self { at, message }
    }

    /// What makes two failures the same: the place, and the message's first line with its
    /// numbers taken out (offsets and lengths differ from one input to the next).
    fn signature(&self) -> String {
        let first = self.message.lines().next().unwrap_or_default();
        let shape: String = first
            .chars()
            .filter(|c| !c.is_ascii_digit())
            .take(120)
            .collect::<String>()
            .split(['"', '`'])
            .step_by(2)
            .collect();
        format!("{} {shape}", self.at)
    }
}

/// The text of a panic payload.
fn message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_else(|| "(a panic without a message)".to_owned())
}

/// Records where inputs panic (the payload alone does not say), and keeps them quiet in
/// keep-going mode; every other panic goes to the hook that was there before.
fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            let input = std::thread::current().name().is_some_and(|n| n.starts_with(THREAD_PREFIX));
            if input {
                let at = info.location().map_or_else(
                    || "(unknown)".to_owned(),
                    |l| format!("{}:{}:{}", l.file(), l.line(), l.column()),
                );
                let text = message(info.payload());
                LAST_PANIC.with(|last| *last.borrow_mut() = Some((at, text)));
                if QUIET.load(Ordering::Relaxed) {
                    return;
                }
            }
            previous(info);
        }));
    });
}

/// A seed in arbtest's format; shown as `0x` and 16 hex digits, as arbtest prints it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seed(pub u64);

impl Seed {
    /// A random seed for between `min` and `max` bytes, evenly on a log scale.
    fn random(min: u32, max: u32) -> Self {
        let (low, high) = (f64::from(min.max(1)).ln(), f64::from(max.max(min).max(1)).ln());
        let size = (low + fastrand::f64() * (high - low)).exp();
        // Within [min, max] by construction; the cast only drops the fraction.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "in range")]
        let size = size as u32;
        Self(u64::from(size.clamp(min, max)) | (u64::from(fastrand::u32(..)) << 32))
    }

    /// Reads `0x…` or bare hex, as arbtest reads `ARBTEST_SEED`.
    fn parse(text: &str) -> Option<Self> {
        let digits = text.trim().trim_start_matches("0x");
        u64::from_str_radix(digits, 16).ok().map(Self)
    }
}

impl fmt::Display for Seed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "0x{:016x}", self.0)
    }
}

/// What the environment asks for; see the [crate documentation](crate).
struct Settings {
    budget: Duration,
    replay: Option<Seed>,
    minimize: bool,
    keep_going: bool,
}

impl Settings {
    fn from_env() -> Self {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let seconds = var("INFORMER_FUZZ_SECONDS").map_or(DEFAULT_SECONDS, |text| {
            text.trim().parse::<f64>().unwrap_or_else(|_| {
                panic!("INFORMER_FUZZ_SECONDS={text:?} is not a number of seconds")
            })
        });
        let replay = var("ARBTEST_SEED").map(|text| {
            Seed::parse(&text)
                .unwrap_or_else(|| panic!("ARBTEST_SEED={text:?} is not a hex seed like 0x1f…"))
        });
        let flag = |name: &str| var(name).is_some_and(|v| v != "0");
        Self {
            budget: Duration::try_from_secs_f64(seconds.max(0.0)).unwrap_or(Duration::MAX),
            replay,
            minimize: flag("INFORMER_FUZZ_MINIMIZE"),
            keep_going: flag("INFORMER_FUZZ_KEEP_GOING"),
        }
    }
}

/// A target's counts, printed as the `fuzz-report` line.
struct Report {
    target: &'static str,
    inputs: u64,
    skipped: u64,
    failures: u64,
    /// Per failure signature: how often, and the first seed.
    distinct: BTreeMap<String, (u64, Seed)>,
    seconds: f64,
}

impl Report {
    fn new(target: &'static str) -> Self {
        Self { target, inputs: 0, skipped: 0, failures: 0, distinct: BTreeMap::new(), seconds: 0.0 }
    }

    /// Counts `failure`; whether it is the first of its kind.
    fn add(&mut self, seed: Seed, failure: &Failure) -> bool {
        let entry = self.distinct.entry(failure.signature()).or_insert((0, seed));
        entry.0 += 1;
        entry.0 == 1
    }

    fn failure_line(&self, seed: Seed, failure: &Failure) -> String {
        let message: String =
            failure.message.lines().next().unwrap_or_default().chars().take(300).collect();
        format!(
            "fuzz-failure target={} seed={seed} at={} message={message}",
            self.target, failure.at
        )
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "fuzz-report target={} inputs={} skipped={} failures={} distinct={} seconds={:.1}",
            self.target,
            self.inputs,
            self.skipped,
            self.failures,
            self.distinct.len(),
            self.seconds
        )
    }
}

/// Saves `data` as the file `name` in the directory `INFORMER_FUZZ_DUMP` names, if it is set:
/// how a property shows the input it made from a seed (the last input's files are kept).
pub fn note(name: &str, data: &[u8]) {
    static DIR: std::sync::OnceLock<Option<std::path::PathBuf>> = std::sync::OnceLock::new();
    let dir =
        DIR.get_or_init(|| std::env::var_os("INFORMER_FUZZ_DUMP").map(std::path::PathBuf::from));
    if let Some(dir) = dir {
        let path = dir.join(name);
        if let Err(e) = std::fs::create_dir_all(dir).and_then(|()| std::fs::write(&path, data)) {
            eprintln!("INFORMER_FUZZ_DUMP: {}: {e}", path.display());
        }
    }
}

/// Cuts `len` bytes into chunks, as a socket might deliver them: one byte at a time, a fixed
/// size, or sizes drawn from `u`. Returns the end of each chunk.
///
/// # Errors
///
/// Never: when `u` runs out, the remaining bytes form one chunk.
pub fn chunk_ends(u: &mut Unstructured<'_>, len: usize) -> arbitrary::Result<Vec<usize>> {
    let mut ends = Vec::new();
    let mut at = 0;
    match u.int_in_range(0..=3)? {
        0 => ends.push(len),
        1 => ends.extend(1..=len),
        2 => {
            let size = u.int_in_range(2..=4096)?;
            while at < len {
                at = (at + size).min(len);
                ends.push(at);
            }
        }
        _ => {
            while at < len && !u.is_empty() {
                at = (at + u.int_in_range(1..=512)?).min(len);
                ends.push(at);
            }
            if at < len {
                ends.push(len);
            }
        }
    }
    Ok(ends)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_print_and_parse_as_arbtest_writes_them() {
        let seed = Seed(0x1234_5678_0000_0040);
        assert_eq!(seed.to_string(), "0x1234567800000040");
        assert_eq!(Seed::parse("0x1234567800000040"), Some(seed));
        assert_eq!(Seed::parse("1234567800000040"), Some(seed));
        for _ in 0..1000 {
            let size = Seed::random(64, 4096).0 & 0xffff_ffff;
            assert!((64..=4096).contains(&size), "{size}");
        }
    }

    #[test]
    fn a_failure_s_signature_ignores_numbers_and_quoted_values() {
        let failure =
            |message: &str| Failure { at: "a.rs:1:2".to_owned(), message: message.to_owned() };
        assert_eq!(
            failure("index 7 out of range for \"abc\"\nmore").signature(),
            failure("index 12 out of range for \"x\"").signature()
        );
        assert_ne!(failure("left").signature(), failure("right").signature());
    }

    #[test]
    fn chunks_cover_the_input_in_order() {
        for seed in 0..200u64 {
            let bytes: Vec<u8> = (0..64).map(|i| (seed * 31 + i).to_le_bytes()[0]).collect();
            let mut u = Unstructured::new(&bytes);
            let ends = chunk_ends(&mut u, 1000).unwrap();
            assert_eq!(ends.last(), Some(&1000));
            assert!(ends.windows(2).all(|w| w[0] < w[1]), "{ends:?}");
        }
    }
}
