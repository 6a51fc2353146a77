//! The crate's [`Error`]: why the server could not start, or stopped.
//!
//! At the bottom of the crate, below every module that can fail to start or restart the
//! server (TLS, authentication, the accept loop, the handle), so that none of them imports
//! the module that starts the server.

use std::io;
use std::net::SocketAddr;

/// Why the server could not start, or stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The address could not be bound (in use, not local, no permission).
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// What the operating system said.
        #[source]
        source: io::Error,
    },
    /// Serving failed after the server started. (Not returned by this version: a failed
    /// restart is [`Error::Bind`].)
    #[error("the server failed: {0}")]
    Serve(#[source] io::Error),
    /// The server's TLS certificates or configuration could not be made
    /// ([`Config::tls`](crate::Config::tls)).
    #[error("cannot make {what} for the embedded API server's TLS: {source}")]
    Tls {
        /// What was being made.
        what: &'static str,
        /// What the TLS or certificate library said.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The server task panicked or was aborted.
    #[error("the server task ended abnormally: {0}")]
    Task(#[source] tokio::task::JoinError),
    /// The server was shut down (or had failed) before a restart could finish: start a new
    /// one.
    #[error("the embedded API server has stopped")]
    Stopped,
}

impl Error {
    /// The same error again, for a second party to report (an `io::Error` does not clone).
    pub(crate) fn duplicate(&self) -> Self {
        let copy = |e: &io::Error| io::Error::new(e.kind(), e.to_string());
        match self {
            Self::Bind { addr, source } => Self::Bind { addr: *addr, source: copy(source) },
            Self::Serve(source) => Self::Serve(copy(source)),
            Self::Tls { what, source } => Self::Tls { what, source: source.to_string().into() },
            Self::Task(_) | Self::Stopped => Self::Stopped,
        }
    }
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
