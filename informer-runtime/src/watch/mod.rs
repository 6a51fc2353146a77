//! Watch streams off the wire.

pub(crate) mod decode;
