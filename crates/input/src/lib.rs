//! softspin-input: every file a user hands softspin is read with a cap.
//!
//! A path may name `/dev/zero`, a FIFO or a huge sparse file: reading it
//! whole would run the process out of memory (issue 24). Each input is
//! capped by what it can legitimately be (the caller says what and how
//! much); no read takes more than cap + 1 bytes, and the error names the
//! file and the cap. Streamed inputs read line by line with [`read_line`],
//! which bounds a line the same way.

use std::fs::File;
use std::io::{BufRead, Read};
use std::path::Path;

/// Text inputs (TOML configurations and scenarios, rules files): a few MiB
/// is far more than any hand-written or generated one needs.
pub const TEXT_CAP: u64 = 4 << 20;

/// One line of a streamed text input (a trace line is six short fields).
pub const LINE_CAP: u64 = 64 << 10;

#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: larger than {cap} bytes, the most a {what} can be")]
    TooLarge {
        path: String,
        what: String,
        cap: u64,
    },
    #[error("{path}: out of memory after {read} bytes (a {what} may have up to {cap})")]
    NoMemory {
        path: String,
        what: String,
        cap: u64,
        read: usize,
    },
    #[error("{path}: not UTF-8 text")]
    NotText { path: String },
}

/// Read `path` whole, refusing more than `cap` bytes; `what` names the
/// input in the error ("handler image", "packet file").
pub fn read(path: &Path, cap: u64, what: &str) -> Result<Vec<u8>, InputError> {
    let p = || path.display().to_string();
    let io = |source| InputError::Io { path: p(), source };
    let too_large = || InputError::TooLarge {
        path: p(),
        what: what.to_string(),
        cap,
    };
    let f = File::open(path).map_err(io)?;
    let meta = f.metadata().map_err(io)?;
    // A regular file says its size: refuse a big one without reading it.
    // Others (devices, FIFOs, /proc) are read up to cap + 1 bytes.
    if meta.is_file() && meta.len() > cap {
        return Err(too_large());
    }
    let hint = if meta.is_file() { meta.len() } else { 0 };
    let mut data = Vec::new();
    data.try_reserve_exact(hint.min(cap) as usize + 1)
        .map_err(|_| too_large())?;
    match f.take(cap + 1).read_to_end(&mut data) {
        Err(e) if e.kind() == std::io::ErrorKind::OutOfMemory => {
            return Err(InputError::NoMemory {
                path: p(),
                what: what.to_string(),
                cap,
                read: data.len(),
            })
        }
        r => r.map_err(io)?,
    };
    if data.len() as u64 > cap {
        return Err(too_large());
    }
    Ok(data)
}

/// [`read`] for text files.
pub fn read_text(path: &Path, cap: u64, what: &str) -> Result<String, InputError> {
    String::from_utf8(read(path, cap, what)?).map_err(|_| InputError::NotText {
        path: path.display().to_string(),
    })
}

/// Read one line (through its `\n`) into `buf`, at most `cap` bytes with
/// the `\n`: `Ok(0)` at the end, the byte count otherwise, and an
/// `InvalidData` error for a longer line.
pub fn read_line<R: BufRead>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    cap: u64,
) -> std::io::Result<usize> {
    let n = reader.by_ref().take(cap + 1).read_until(b'\n', buf)?;
    if n as u64 > cap {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("line longer than {cap} bytes"),
        ));
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dev_zero_stops_at_the_cap() {
        let e = read(Path::new("/dev/zero"), 1000, "test input").unwrap_err();
        assert_eq!(
            e.to_string(),
            "/dev/zero: larger than 1000 bytes, the most a test input can be"
        );
    }

    #[test]
    fn a_file_at_the_cap_reads_whole() {
        let d = std::env::temp_dir().join(format!("softspin-input-{}", std::process::id()));
        std::fs::write(&d, [7u8; 100]).unwrap();
        assert_eq!(read(&d, 100, "x").unwrap(), vec![7u8; 100]);
        assert!(matches!(
            read(&d, 99, "x"),
            Err(InputError::TooLarge { cap: 99, .. })
        ));
        std::fs::remove_file(&d).unwrap();
    }

    #[test]
    fn lines_are_bounded() {
        let mut r = std::io::Cursor::new(b"abc\ndefgh\nij".to_vec());
        let mut b = Vec::new();
        assert_eq!(read_line(&mut r, &mut b, 4).unwrap(), 4);
        assert_eq!(b, b"abc\n");
        b.clear();
        assert!(read_line(&mut r, &mut b, 4).is_err());
        let mut r = std::io::Cursor::new(b"ij".to_vec());
        b.clear();
        assert_eq!(read_line(&mut r, &mut b, 4).unwrap(), 2);
        let mut z = std::io::BufReader::new(File::open("/dev/zero").unwrap());
        b.clear();
        assert!(read_line(&mut z, &mut b, LINE_CAP).is_err());
    }
}
