//! Object decoding: one object's JSON to the `K` a cache keeps, with nothing above it in the
//! crate.
//!
//! Where it sits in the data flow: under everything that turns bytes into objects. The HTTP
//! client's list pages and watch streams (`client`) decode each item and each event's object
//! here, and so does the compact cache ([`store`](crate::store)) each time it reads an object
//! back. It needs no HTTP and no informer type, so a cache and a source that is not our HTTP
//! client decode exactly as the client does.
//!
//! - `object_decoder`: an object's JSON to `K`, with simd-json and exact capacities, and
//!   `serde_json` for what simd-json would take differently;
//! - `prune`: the deserializer wrapper that skips `metadata.managedFields` while decoding.
//!
//! (List bodies are cut into their items by the client's read path, `client/list_watch/`, the
//! splitter's one user.)
//!
//! Compiled with the `simd-json` feature (on by default), which brings simd-json and memchr;
//! without it the compact cache decodes with `serde_json` alone.
//!
//! Public but hidden from the docs: the HTTP client's read path decodes through it, and is
//! written to become a crate of its own. Not a user API: it may change in any release.

pub mod object_decoder;
pub mod prune;
