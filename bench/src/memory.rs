//! The process's own memory, as the kernel counts it: `VmRSS` (now) and `VmHWM` (the peak).

/// Resident memory now and at its peak, in KiB.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Memory {
    /// `VmRSS`: resident now.
    pub rss_kib: u64,
    /// `VmHWM`: the most ever resident (since the start, or the last [`reset_peak`]).
    pub peak_kib: u64,
}

/// Reads `/proc/self/status`.
///
/// # Errors
///
/// The file cannot be read or lacks `VmRSS`/`VmHWM` (not Linux).
pub fn read() -> Result<Memory, String> {
    let status = std::fs::read_to_string("/proc/self/status")
        .map_err(|e| format!("/proc/self/status: {e}"))?;
    parse_status(&status).ok_or_else(|| "/proc/self/status has no VmRSS/VmHWM".to_owned())
}

fn parse_status(status: &str) -> Option<Memory> {
    let field = |name: &str| {
        let line = status.lines().find(|line| line.starts_with(name))?;
        line[name.len()..].trim().trim_end_matches("kB").trim().parse::<u64>().ok()
    };
    Some(Memory { rss_kib: field("VmRSS:")?, peak_kib: field("VmHWM:")? })
}

/// Resets the peak (`VmHWM`) to the current RSS, so that a later [`read`] gives the peak of
/// what came after (Linux 4.0+: `echo 5 > /proc/self/clear_refs`).
///
/// # Errors
///
/// The kernel refused the write.
pub fn reset_peak() -> Result<(), String> {
    std::fs::write("/proc/self/clear_refs", "5")
        .map_err(|e| format!("cannot reset the peak RSS (/proc/self/clear_refs): {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_lines_parse() {
        let status = "Name:\tx\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\n";
        assert_eq!(parse_status(status), Some(Memory { rss_kib: 1024, peak_kib: 2048 }));
        assert_eq!(parse_status("Name:\tx\n"), None);
    }

    #[test]
    fn this_process_has_memory() {
        let memory = read().unwrap();
        assert!(memory.rss_kib > 0 && memory.peak_kib >= memory.rss_kib);
        reset_peak().unwrap();
    }
}
