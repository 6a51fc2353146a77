//! How a watch ended, and what the reflector does next: the rewatch-or-relist table.

use std::time::Duration;

use crate::listwatch::Error;

/// Why [`handle_watch`](super::Reflector) stopped reading a watch stream.
#[derive(Debug)]
pub(super) enum WatchEnd {
    /// The reflector was asked to stop.
    Stopped,
    /// The server closed the stream (its timeout, or a dropped connection without an error).
    Closed {
        /// Events received on this stream.
        events: usize,
        /// How long the stream lasted.
        lasted: Duration,
    },
    /// The client-side deadline passed: the server's timeout plus a margin, or a streaming
    /// list's bounded wait. A half-open connection ends here instead of hanging forever.
    DeadlineExceeded,
    /// A streaming list delivered its initial-events-end bookmark.
    InitialEventsEnd,
    /// The stream failed: an `ERROR` event or a transport or decode error.
    Failed(Error),
}

/// What follows the end of a watch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Next {
    /// Stop: the reflector is shutting down.
    Stop,
    /// Watch again from the last seen version, at once.
    Rewatch,
    /// Back off, then watch again from the last seen version (never relist on throttling).
    BackoffThenRewatch,
    /// Give up this watch: back off and relist at the last seen version.
    Relist,
}

/// A watch that closes this fast with no events is broken, not done.
pub(super) const MIN_WATCH_DURATION: Duration = Duration::from_secs(1);

/// The table of section 4 of the informer contract.
///
/// | end of watch | next |
/// |---|---|
/// | clean close or timeout | watch again from the last version, at once, no relist |
/// | 429 | back off, watch again |
/// | 410 in the stream | back off, relist at the last version |
/// | closed within 1 s with no events, decode errors, other errors | back off, relist |
pub(super) fn next_after(end: &WatchEnd) -> Next {
    match end {
        WatchEnd::Stopped => Next::Stop,
        WatchEnd::Closed { events: 0, lasted } if *lasted < MIN_WATCH_DURATION => Next::Relist,
        WatchEnd::Closed { .. } | WatchEnd::DeadlineExceeded | WatchEnd::InitialEventsEnd => {
            Next::Rewatch
        }
        WatchEnd::Failed(e) if e.is_too_many_requests() => Next::BackoffThenRewatch,
        WatchEnd::Failed(_) => Next::Relist,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::listwatch::Status;

    fn closed(events: usize, millis: u64) -> WatchEnd {
        WatchEnd::Closed { events, lasted: Duration::from_millis(millis) }
    }

    #[test]
    fn clean_close_or_timeout_rewatches_without_relist() {
        assert_eq!(next_after(&closed(3, 10)), Next::Rewatch, "short but with events");
        assert_eq!(next_after(&closed(0, 1000)), Next::Rewatch, "long enough without events");
        assert_eq!(next_after(&WatchEnd::DeadlineExceeded), Next::Rewatch);
    }

    // TestBackoffOnTooManyRequests / TestNoRelistOnTooManyRequests: 429 never relists.
    #[test]
    fn too_many_requests_backs_off_and_rewatches() {
        let end = WatchEnd::Failed(Error::Api(Status::too_many_requests("slow down", None)));
        assert_eq!(next_after(&end), Next::BackoffThenRewatch);
    }

    #[test]
    fn expired_in_stream_relists() {
        let end = WatchEnd::Failed(Error::Api(Status::expired("too old resource version")));
        assert_eq!(next_after(&end), Next::Relist);
    }

    #[test]
    fn very_short_watch_decode_and_other_errors_relist() {
        assert_eq!(next_after(&closed(0, 999)), Next::Relist);
        assert_eq!(next_after(&WatchEnd::Failed(Error::Decode("bad json".into()))), Next::Relist);
        let internal = WatchEnd::Failed(Error::Api(Status::new(500, "InternalError", "boom")));
        assert_eq!(next_after(&internal), Next::Relist);
    }

    #[test]
    fn stop_stops() {
        assert_eq!(next_after(&WatchEnd::Stopped), Next::Stop);
    }
}
