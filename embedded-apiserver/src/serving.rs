//! Accepting connections and serving them: the accept loop, one task per connection, restarts
//! that keep the data, and shutdown.
//!
//! Each connection is served by hyper in its own task (`connection.rs`), which drops the
//! connection when the server restarts: the socket closes in the middle of whatever it was
//! sending, as when an API server process dies. (axum's own `serve` can only let connections
//! finish, which is what shutdown does here.)

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::connection::serve_connection;
use crate::error::{Error, Result};
use crate::state::{Restart, Shared};

/// How long shutdown lets open connections finish their responses before it closes them (a
/// client that never reads would hold shutdown up forever otherwise).
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// How long a restart keeps trying to listen on its address again.
const REBIND_FOR: Duration = Duration::from_secs(10);

/// The connections of one life of the server, closed together by a restart.
struct Connections {
    tasks: TaskTracker,
    /// Cancelled to close every connection at once, in the middle of what it sends.
    close: CancellationToken,
}

impl Connections {
    fn new() -> Self {
        Self { tasks: TaskTracker::new(), close: CancellationToken::new() }
    }

    fn serve(&self, stream: TcpStream, app: Router, shared: Arc<Shared>) {
        self.tasks.spawn(serve_connection(stream, app, shared, self.close.clone()));
    }

    /// Closes every connection now, and waits until their tasks have ended.
    async fn close_all(self) {
        self.close.cancel();
        self.tasks.close();
        self.tasks.wait().await;
    }

    /// Waits for the connections to finish (they were asked to) for up to `grace`, then
    /// closes the others.
    async fn finish(self, grace: Duration) {
        self.tasks.close();
        if tokio::time::timeout(grace, self.tasks.wait()).await.is_err() {
            tracing::warn!(open = self.tasks.len(), "closing connections still open at shutdown");
            self.close_all().await;
        }
    }
}

/// Accepts connections on `listener` (bound to `addr`) and serves `app` on each, until
/// shutdown; restarts when asked.
///
/// # Errors
///
/// [`Error::Bind`] when a restart cannot listen on `addr` again: the server has stopped.
pub(crate) async fn run(
    mut listener: TcpListener,
    addr: SocketAddr,
    app: Router,
    shared: Arc<Shared>,
    mut restarts: mpsc::Receiver<Restart>,
) -> Result<()> {
    let shutdown = shared.shutdown.clone();
    let mut connections = Connections::new();
    loop {
        tokio::select! {
            biased;
            () = shutdown.cancelled() => break,
            Some(restart) = restarts.recv() => {
                // Refused from now on: nothing listens.
                drop(listener);
                std::mem::replace(&mut connections, Connections::new()).close_all().await;
                {
                    let mut state = shared.state.lock();
                    let rv = state.store.resource_version();
                    state.hub.restart(rv);
                }
                tracing::info!(%addr, down_for = ?restart.down_for, "embedded API server restarting");
                tokio::select! {
                    () = tokio::time::sleep(restart.down_for) => {}
                    () = shutdown.cancelled() => {
                        let _ = restart.done.send(Err(Error::Stopped));
                        return Ok(());
                    }
                }
                match listen(addr).await {
                    Ok(bound) => {
                        listener = bound;
                        tracing::info!(%addr, "embedded API server serving again");
                        let _ = restart.done.send(Ok(()));
                    }
                    Err(error) => {
                        tracing::error!(%error, "the embedded API server could not restart");
                        let _ = restart.done.send(Err(error.duplicate()));
                        return Err(error);
                    }
                }
            }
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => connections.serve(stream, app.clone(), Arc::clone(&shared)),
                // One connection's failure (reset before it was accepted) concerns no other.
                Err(error) if is_connection_error(&error) => {}
                Err(error) => {
                    // Out of file descriptors, say: wait for some to be released, as axum does.
                    tracing::warn!(%error, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    }
    drop(listener);
    connections.finish(SHUTDOWN_GRACE).await;
    Ok(())
}

/// Listens on `addr` again after a restart, retrying for [`REBIND_FOR`]: the address was just
/// released, and its closed connections linger (`SO_REUSEADDR` lets it be bound meanwhile).
async fn listen(addr: SocketAddr) -> Result<TcpListener> {
    let bind = || -> io::Result<TcpListener> {
        let socket = if addr.is_ipv4() { TcpSocket::new_v4()? } else { TcpSocket::new_v6()? };
        socket.set_reuseaddr(true)?;
        socket.bind(addr)?;
        socket.listen(1024)
    };
    let deadline = tokio::time::Instant::now() + REBIND_FOR;
    loop {
        match bind() {
            Ok(listener) => return Ok(listener),
            Err(source) if tokio::time::Instant::now() >= deadline => {
                return Err(Error::Bind { addr, source });
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

/// Whether an `accept` error concerns only the connection being accepted.
fn is_connection_error(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    )
}
