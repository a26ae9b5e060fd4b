//! The methodology runner.
//!
//! - [`run`]: drives a [`device::VirtualDevice`] with a closed loop of
//!   threads × queue depth in virtual time and returns a [`RunResult`]:
//!   a [`Summary`] and one [`IntervalStats`] per reporting interval.
//! - [`openloop::run_arrivals`]: the open loop: I/Os issued at their
//!   arrival times (a trace, a rate), latency from arrival.
//! - [`precondition_fill`]: the reviews' sequential fill before a test.
//! - [`review`]: a whole review of one target: preconditioning to steady
//!   state, the thread/queue matrix and every standard test.
//! - [`validate`]: the SYSTEM.md §4 table, model vs measured.
//! - [`steady`]: SNIA PTS steady-state detection over rounds.
//! - [`LatencyStats`]: exact mean / max / standard deviation plus
//!   HDR-histogram percentiles.

pub mod bursts;
pub mod dbpages;
pub mod fiostat;
pub mod fit;
pub mod openloop;
pub mod pts;
pub mod review;
mod runner;
mod stats;
pub mod steady;
pub mod validate;

pub use fiostat::FioStats;
pub use runner::{
    precondition_fill, run, run_fio, RunError, RunOptions, RunResult, Summary, Think,
};
pub use stats::{IntervalStats, LatencyStats};
