//! Synthetic block workloads.
//!
//! - [`WorkloadSpec`]: what to issue — pattern, read mix, block sizes,
//!   address distribution, target region — spelled as fio spells it.
//! - [`Profile`]: the reviews' named workloads (SYSTEM.md §3).
//! - [`Generator`]: one per thread; draws the next I/O from a [`sim::Prng`].
//! - [`Trace`]: block traces (MSR Cambridge CSV, synthetic mail server) for replay.
//! - [`tracefmt`]: streaming readers of block traces (fio iolog, blkparse,
//!   MSR, SNIA IOTTA, MQSim) for replay.
//! - [`units`]: human units (`4k`, `8G`, `6h`, `36%`).
//! - [`jobfile`]: fio job files read into [`PlannedSpec`]s and run options,
//!   driven by one option table ([`jobfile::OPTIONS`]).

mod generator;
pub mod jobfile;
mod profile;
mod spec;
pub mod trace;
pub mod tracefmt;
pub mod units;

pub use generator::{Generator, Io};
pub use profile::Profile;
pub use spec::{BlockSizes, Distribution, Extent, Pattern, PlannedSpec, SpecError, WorkloadSpec};
pub use trace::{Trace, TraceIo};
pub use tracefmt::OpKind;
