//! Fuzz targets for what reads bytes from outside: the watch-stream decoder, the list-page
//! splitter and decoder, the object decoder they share, the label-selector parser, the
//! kubeconfig loader, the error bodies of non-2xx answers, discovery documents, exec credential
//! plugins' output, and compact storage's forms.
//!
//! Each `#[test]` here runs one target through [`informer_fuzz`] for a short time budget in
//! `cargo test` (2 s; `INFORMER_FUZZ_SECONDS` raises it) and for its share of
//! `cargo xtask fuzz --minutes N`. A failure prints its seed; `ARBTEST_SEED=0x… cargo test -p
//! informer-runtime --lib fuzz::NAME` replays it. Each target checks properties, not only the
//! absence of panics (see each module), and starts from the recorded streams, lists, objects and
//! kubeconfigs of `tests/fixtures/` and `informer-runtime/tests/fixtures/`.
//!
//! A crash one of them finds is fixed where it happened and kept as a test there, named after
//! what went wrong.

mod compact;
mod discovery;
mod exec;
mod kubeconfig;
mod list;
mod object;
mod selector;
mod status;
mod watch;

use informer_fuzz::Target;

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

#[test]
fn object_decoder() {
    Target::new("object_decoder", object::property).run();
}

#[test]
fn label_selector() {
    Target::new("label_selector", selector::property).run();
}

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

#[test]
fn exec_credential() {
    Target::new("exec_credential", exec::property).run();
}

#[test]
fn compact_form() {
    Target::new("compact_form", compact::property).run();
}

use crate::client::list_watch::watch_decode::tests::FooBar;
