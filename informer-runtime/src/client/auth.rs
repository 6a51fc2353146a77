//! Credentials at request time: static tokens, rotating token files, exec plugins.
