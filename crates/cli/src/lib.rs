//! The `vsl` command line as a library: argument parsing ([`args`]) and the
//! glue that turns parsed options into runs, reviews and reports. The
//! binary (`src/main.rs`) and the Python package (`crates/py`) both call
//! these functions, so an option means the same thing everywhere.
//!
//! Main entry points: [`cmd_run::execute`] (one run from `vsl run` options,
//! as the JSON `vsl run --json` writes) and [`sweep`] (`vsl sweep`: a plan of
//! runs on a local pool of worker threads, resumable).

pub mod app_report;
pub mod args;
pub mod cmd_devices;
pub mod cmd_fit;
pub mod cmd_pts;
pub mod cmd_rate;
pub mod cmd_replay;
pub mod cmd_review;
pub mod cmd_run;
pub mod cmd_torture;
pub mod cmd_validate;
pub mod fio_output;
pub mod health_series;
pub mod output;
pub mod pts_real;
pub mod pts_report;
pub mod realdev;
pub mod review_report;
pub mod sweep;
