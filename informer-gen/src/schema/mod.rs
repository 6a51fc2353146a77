//! CRD documents in, typed schema model out: reading files, directories and multi-document YAML
//! or JSON, and checking that each document is a CRD the generator can use.

pub mod crd;
mod load;
pub mod openapi;
mod v1beta1;

pub use load::{Format, Loaded, load, parse_str, parse_str_as};
