//! `informer-gen crd -`: CRDs read from standard input, YAML or JSON as from a file, named
//! `<stdin>` in errors and in `--list`.

use std::io::{self, Read};
use std::path::Path;

use informer_gen::Result;
use informer_gen::schema::{self, Format, Loaded};

/// The argument that stands for standard input among the files.
pub(crate) const ARGUMENT: &str = "-";

/// How standard input is named in errors and in `--list`'s file column.
const NAME: &str = "<stdin>";

/// The most read from standard input: far more than the largest published CRD bundles (a few
/// MiB), while a stream that never ends (`yes | informer-gen crd -`) fails instead of filling
/// memory.
pub(crate) const MAX_BYTES: u64 = 64 * 1024 * 1024;

/// Whether `path` is the argument that stands for standard input (a file named `-` is `./-`).
pub(crate) fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == ARGUMENT
}

/// The CRDs on standard input: JSON when the text starts with `{`, YAML (possibly several
/// documents) otherwise.
///
/// # Errors
///
/// [`informer_gen::Error::Read`] naming `<stdin>` when it cannot be read, is not UTF-8 or holds
/// more than [`MAX_BYTES`]; otherwise the errors of [`schema::parse_str_as`], naming `<stdin>`.
pub(crate) fn load() -> Result<Vec<Loaded>> {
    parse(io::stdin().lock())
}

fn parse(input: impl Read) -> Result<Vec<Loaded>> {
    let name = Path::new(NAME);
    let read_error = |source| informer_gen::Error::Read { path: name.to_owned(), source };
    let mut bytes = Vec::new();
    input.take(MAX_BYTES + 1).read_to_end(&mut bytes).map_err(read_error)?;
    if bytes.len() as u64 > MAX_BYTES {
        return Err(read_error(io::Error::new(
            io::ErrorKind::FileTooLarge,
            format!(
                "more than {} MiB, the most informer-gen reads from standard input; pass the \
                 file's path instead",
                MAX_BYTES / 1024 / 1024
            ),
        )));
    }
    let text = String::from_utf8(bytes)
        .map_err(|e| read_error(io::Error::new(io::ErrorKind::InvalidData, e)))?;
    schema::parse_str_as(name, &text, Format::of_text(&text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_past_the_bound_is_refused_without_reading_it_all() {
        // An endless stream: only MAX_BYTES + 1 bytes are read before the refusal.
        let error = parse(io::repeat(b' ')).unwrap_err().to_string();
        assert_eq!(
            error,
            "cannot read <stdin>: more than 64 MiB, the most informer-gen reads from standard \
             input; pass the file's path instead"
        );
    }

    #[test]
    fn text_that_is_not_utf8_is_a_read_error() {
        let error = parse(&b"kind: \xff\n"[..]).unwrap_err().to_string();
        assert!(error.starts_with("cannot read <stdin>: invalid utf-8"), "{error}");
    }
}
