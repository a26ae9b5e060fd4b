use std::io;
use std::path::PathBuf;

/// Everything that can go wrong opening or driving a real target. Each
/// message is one line a user can act on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RealtimeError {
    #[error("invalid target '{spec}': {reason}")]
    BadTarget { spec: String, reason: String },
    #[error("{}: no such file or device", path.display())]
    NotFound { path: PathBuf },
    #[error("{}: permission denied (run as root or as a member of the device's group)", path.display())]
    PermissionDenied { path: PathBuf },
    #[error("{}: device is mounted at {at} (itself or a partition); refusing to write over it", path.display())]
    Mounted { path: PathBuf, at: String },
    #[error("{}: not a block device", path.display())]
    NotBlockDevice { path: PathBuf },
    #[error("{}: device is busy (mounted or held open exclusively); refusing to use it", path.display())]
    Busy { path: PathBuf },
    #[error("{}: filesystem is full: need {needed_bytes} more bytes for the target, {available_bytes} available", path.display())]
    NoSpace {
        path: PathBuf,
        needed_bytes: u64,
        available_bytes: u64,
    },
    #[error("{}: O_DIRECT is not supported on this filesystem; buffered I/O would measure the page cache (ask for it explicitly: vsl run --direct 0, fio --direct=0)", path.display())]
    DirectUnsupported { path: PathBuf },
    #[error("{}: {what}: {source}", path.display())]
    Io {
        path: PathBuf,
        what: &'static str,
        #[source]
        source: io::Error,
    },
    #[error("cannot map the I/O buffers: {0}")]
    Buffers(#[source] io::Error),
    #[error("{op} of {len} bytes at offset {offset} failed: {source}")]
    IoFailed {
        op: &'static str,
        offset: u64,
        len: u64,
        #[source]
        source: io::Error,
    },
    #[error("short {op} at offset {offset}: {done_bytes} of {len} bytes")]
    ShortTransfer {
        op: &'static str,
        offset: u64,
        len: u64,
        done_bytes: u64,
    },
    #[error("io_uring is not available: {0}")]
    NoIoUring(#[source] io::Error),
    #[error("invalid run options: {0}")]
    Options(String),
    #[error("workload: {0}")]
    Workload(#[from] workload::SpecError),
    #[error("worker thread panicked")]
    WorkerPanicked,
}

impl From<lab::RunError> for RealtimeError {
    fn from(e: lab::RunError) -> Self {
        match e {
            lab::RunError::Options(m) => RealtimeError::Options(m),
            lab::RunError::Workload(w) => RealtimeError::Workload(w),
            other => RealtimeError::Options(other.to_string()),
        }
    }
}

/// Maps an `open(2)` failure on `path` to the typed error a user can act on.
pub(crate) fn open_error(path: &std::path::Path, e: io::Error) -> RealtimeError {
    let path = path.to_path_buf();
    match e.raw_os_error() {
        Some(libc::ENOENT) | Some(libc::ENXIO) | Some(libc::ENODEV) => {
            RealtimeError::NotFound { path }
        }
        Some(libc::EACCES) | Some(libc::EPERM) | Some(libc::EROFS) => {
            RealtimeError::PermissionDenied { path }
        }
        Some(libc::EBUSY) => RealtimeError::Busy { path },
        _ => RealtimeError::Io {
            path,
            what: "open",
            source: e,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_errors_map_to_typed_variants() {
        let p = std::path::Path::new("/dev/x");
        let e = |n| open_error(p, io::Error::from_raw_os_error(n));
        assert!(matches!(e(libc::ENOENT), RealtimeError::NotFound { .. }));
        assert!(matches!(
            e(libc::EACCES),
            RealtimeError::PermissionDenied { .. }
        ));
        assert!(matches!(e(libc::EBUSY), RealtimeError::Busy { .. }));
        assert!(matches!(e(libc::EIO), RealtimeError::Io { .. }));
        let msg = e(libc::EACCES).to_string();
        assert!(msg.starts_with("/dev/x: permission denied"), "{msg}");
        assert!(!msg.contains('\n'));
    }
}
