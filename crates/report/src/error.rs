//! [`ReportError`]: everything that can stop a report from being written.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReportError {
    #[error("cannot write {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("results JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("{what} id {id:?} is not usable: {reason}")]
    InvalidId {
        what: &'static str,
        id: String,
        reason: &'static str,
    },
    #[error("{what} id {id:?} is used twice")]
    DuplicateId { what: &'static str, id: String },
    #[error("chart {chart:?} could not be drawn: {message}")]
    Plot { chart: String, message: String },
}
