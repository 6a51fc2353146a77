//! The kube-rs program of `support/bin/kube_program.rs`, started as a child process the way its
//! users start it (`KUBECONFIG` set), and the lines it prints, each awaited with a deadline.

#![allow(clippy::expect_used, reason = "test support: a failed expect is a failed test")]

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};

/// The running program; killed if dropped before it exits.
pub struct KubeProgram {
    child: Child,
    lines: Lines<BufReader<ChildStdout>>,
    deadline: Duration,
}

impl KubeProgram {
    /// Starts `exe` (the test's `env!("CARGO_BIN_EXE_kube-program")`) on `namespace` with
    /// `KUBECONFIG=kubeconfig`; each line and the exit must come within `deadline`.
    ///
    /// # Panics
    ///
    /// When it cannot be started: the test fails.
    #[must_use]
    pub fn start(exe: &str, kubeconfig: &Path, namespace: &str, deadline: Duration) -> Self {
        let mut child = Command::new(exe)
            .arg(namespace)
            .env("KUBECONFIG", kubeconfig)
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("the program starts");
        let stdout = child.stdout.take().expect("its stdout");
        Self { child, lines: BufReader::new(stdout).lines(), deadline }
    }

    /// The next line it prints.
    ///
    /// # Panics
    ///
    /// When none comes within the deadline, or its output ends: the test fails.
    pub async fn line(&mut self) -> String {
        tokio::time::timeout(self.deadline, self.lines.next_line())
            .await
            .expect("the program answers in time")
            .expect("its stdout is readable")
            .expect("a line, not the end of its output")
    }

    /// Waits for it to exit, and asserts it succeeded.
    ///
    /// # Panics
    ///
    /// When it does not exit within the deadline, or fails: the test fails.
    pub async fn exits_successfully(mut self) {
        let status = tokio::time::timeout(self.deadline, self.child.wait())
            .await
            .expect("the program exits in time")
            .expect("its status");
        assert!(status.success(), "the program failed: {status}");
    }
}
