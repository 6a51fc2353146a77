//! Exact-capacity objects: each decoded object is copied once into allocations of exactly its
//! size before the cache keeps it.
//!
//! JSON does not say how long an array is until it ends, so serde builds every `Vec` of a
//! decoded object by pushing onto it: the vector ends with up to twice the capacity it needs, and
//! with at least four slots when its elements are at most 1 KiB (Rust's growth policy).
//! k8s-openapi's structs are large inline (a `Volume` is 3.2 KiB, a `Container` 2.3 KiB, a
//! `ContainerStatus` 752 bytes on x86-64), so the slack is a large part of a decoded pod: one
//! container status alone carries three empty 752-byte slots. `Clone` allocates every vector at
//! exactly its length, so one copy right after decoding, while the object is still in the CPU's
//! cache, drops the slack for as long as the cache holds the object. On the benchmark's pods
//! (`cargo xtask bench`) it is about a quarter of the heap of a pod without `managedFields`, and
//! a seventh of one with them.
//!
//! Objects a relist finds unchanged in the cache are not copied: the cached one is kept (see
//! [`ListerWatcher::list_reusing`](crate::listwatch::ListerWatcher::list_reusing)).

/// `decoded`, copied into exact-capacity allocations.
pub(crate) fn compacted<K: Clone>(decoded: &K) -> K {
    decoded.clone()
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Pod;

    use super::*;

    #[test]
    fn vectors_are_exactly_as_long_as_their_content() {
        let json = br#"{"metadata":{"name":"a"},
            "spec":{"containers":[{"name":"c"}],"volumes":[{"name":"v1"},{"name":"v2"},{"name":"v3"}]},
            "status":{"containerStatuses":[{"name":"c","image":"i","imageID":"","ready":true,"restartCount":0}]}}"#;
        let decoded: Pod = serde_json::from_slice(json).unwrap();
        let statuses = |p: &Pod| p.status.as_ref().unwrap().container_statuses.clone().unwrap();
        let volumes = |p: &Pod| p.spec.as_ref().unwrap().volumes.as_ref().map(Vec::capacity);
        // What serde leaves: room to grow.
        let decoded_statuses = decoded.status.as_ref().unwrap().container_statuses.as_ref();
        assert!(decoded_statuses.unwrap().capacity() > 1);
        assert!(volumes(&decoded).unwrap() > 3);

        let kept = compacted(&decoded);
        assert_eq!(kept, decoded);
        assert_eq!(
            kept.status.as_ref().unwrap().container_statuses.as_ref().unwrap().capacity(),
            1
        );
        assert_eq!(volumes(&kept), Some(3));
        assert_eq!(statuses(&kept).len(), 1);
    }
}
