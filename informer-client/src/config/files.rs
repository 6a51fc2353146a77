//! Reading the files a configuration names (kubeconfigs, certificates, keys, tokens), bounded.
//!
//! A path is user input: it can name `/dev/zero`, a huge log or a device that never ends. Every
//! such file is read through here, up to a size no real one comes near, so a wrong path is an
//! error naming the file and the limit rather than a process that eats its memory.

use std::io::{self, Read};
use std::path::Path;

/// The largest configuration file read: kubeconfigs with hundreds of contexts stay far below
/// it, and certificates, keys and tokens are a few KiB.
pub(crate) const MAX_FILE_SIZE: u64 = 16 * 1024 * 1024;

/// The bytes of `path`, or an error if it holds more than [`MAX_FILE_SIZE`].
pub(crate) fn read(path: &Path) -> io::Result<Vec<u8>> {
    read_at_most(path, MAX_FILE_SIZE)
}

/// The text of `path` (UTF-8), or an error if it holds more than [`MAX_FILE_SIZE`].
pub(crate) fn read_to_string(path: &Path) -> io::Result<String> {
    String::from_utf8(read(path)?).map_err(|err| io::Error::new(io::ErrorKind::InvalidData, err))
}

fn read_at_most(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    let mut data = Vec::new();
    // One byte more than the limit tells a file of exactly `limit` bytes from a larger one.
    std::fs::File::open(path)?.take(limit.saturating_add(1)).read_to_end(&mut data)?;
    if u64::try_from(data.len()).unwrap_or(u64::MAX) > limit {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "it holds more than {limit} bytes, more than any configuration file needs: \
                 check that the path names the right file"
            ),
        ));
    }
    Ok(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_without_end_is_an_error_at_the_limit() {
        // `/dev/zero` never ends: unbounded, this read would take all memory.
        let err = read_at_most(Path::new("/dev/zero"), 4096).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert!(err.to_string().contains("more than 4096 bytes"), "{err}");
    }

    #[test]
    fn a_file_at_the_limit_is_read_whole() {
        let dir = std::env::temp_dir().join(format!("informer-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("exact");
        std::fs::write(&path, vec![b'x'; 4096]).unwrap();
        assert_eq!(read_at_most(&path, 4096).unwrap().len(), 4096);
        assert!(read_at_most(&path, 4095).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
