//! Fuzz targets for what the HTTP client reads from outside: the watch-stream decoder, the
//! list-page splitter and decoder, the kubeconfig loader, the error bodies of non-2xx answers,
//! discovery documents and exec credential plugins' output.
//!
//! Each `#[test]` here runs one target through [`informer_fuzz`] for a short time budget in
//! `cargo test` (2 s; `INFORMER_FUZZ_SECONDS` raises it) and for its share of
//! `cargo xtask fuzz --minutes N`. A failure prints its seed; `ARBTEST_SEED=0x… cargo test -p
//! informer-client --lib fuzz::NAME` replays it. Each target checks properties, not only the
//! absence of panics (see each module), and starts from the recorded streams, lists and
//! kubeconfigs of `informer-client/tests/fixtures/`.
//!
//! A crash one of them finds is fixed where it happened and kept as a test there, named after
//! what went wrong.

mod discovery;
// Exec plugins and kubeconfig files are the `http` feature's.
#[cfg(feature = "http")]
mod exec;
#[cfg(feature = "http")]
mod kubeconfig;
mod list;
mod status;
mod watch;

use informer_fuzz::Target;

/// The recorded body `name` of this crate's `tests/fixtures/` (a list page or a watch stream),
/// a seed of the list and watch targets.
fn recorded(name: &str) -> Vec<u8> {
    informer_fuzz::fixtures::read(&format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR")))
}

#[test]
fn watch_decoder() {
    Target::new("watch_decoder", watch::property).run();
}

#[test]
fn list_splitter() {
    Target::new("list_splitter", list::splitter_property).run();
}

#[test]
fn list_page_decoder() {
    Target::new("list_page_decoder", list::page_property).run();
}

#[cfg(feature = "http")]
#[test]
fn kubeconfig_loader() {
    /// Removes the inputs' directory, also when the run fails.
    struct Cleanup;
    impl Drop for Cleanup {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(kubeconfig::work_dir());
        }
    }
    let _cleanup = Cleanup;
    Target::new("kubeconfig_loader", kubeconfig::property).run();
}

#[test]
fn status_error() {
    Target::new("status_error", status::property).run();
}

#[test]
fn discovery_documents() {
    Target::new("discovery_documents", discovery::property).run();
}

#[cfg(feature = "http")]
#[test]
fn exec_credential() {
    Target::new("exec_credential", exec::property).run();
}
