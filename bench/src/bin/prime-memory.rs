//! `prime-memory GIB`: fills `GIB` GiB of heap through the peers' allocator, then exits.
//!
//! `cargo xtask bench` runs it right before every measured peer, so that each peer starts with
//! the machine's free memory in the same state. On a virtual machine, memory the guest has not
//! touched lately may be unbacked on the host (free page reporting hands freed memory back
//! after about two seconds), and the first process to fault it in pays the host's cost: on the
//! machine `BENCHMARKS.md` was measured on, 3.3 s of system time for a 20k-pod sync, where the
//! same binary against the same server took 0.2 s when it started right after another process
//! had freed as much. Whichever peer ran first after an idle pause paid it. Filling and freeing
//! the memory here, untimed, moves that cost out of every peer's figures alike.

use std::process::ExitCode;
use std::time::Instant;

/// The blocks are the size of a heap that a cache fills, not one huge mapping, so they are
/// served the way the peers' objects are.
const BLOCK: usize = 64 * 1024;
/// [`BLOCK`]s in a GiB.
const BLOCKS_PER_GIB: f64 = 16_384.0;

fn main() -> ExitCode {
    let gib = std::env::args().nth(1).and_then(|a| a.parse::<f64>().ok());
    let Some(gib) = gib.filter(|g| g.is_finite() && *g > 0.0) else {
        eprintln!("usage: prime-memory GIB (a positive number)");
        return ExitCode::FAILURE;
    };
    let started = Instant::now();
    // Truncation is intended: a count of 64 KiB blocks.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let blocks = (gib * BLOCKS_PER_GIB) as usize;
    let mut held: Vec<Vec<u8>> = Vec::with_capacity(blocks);
    for _ in 0..blocks {
        // Written, not just allocated: a page is only backed once it is touched.
        held.push(vec![1; BLOCK]);
    }
    std::hint::black_box(&held);
    println!("{{\"gib\":{gib},\"ms\":{}}}", started.elapsed().as_millis());
    ExitCode::SUCCESS
}

// The peers' allocator (mimalloc) comes with the library.
use informer_bench as _;
