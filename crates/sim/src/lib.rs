//! Deterministic simulation primitives.
//!
//! - [`Nanos`]: virtual time (and durations) in nanoseconds, a `u64` newtype.
//! - [`Prng`]: the one seeded pseudo-random generator every random choice in
//!   the model draws from (xoshiro256**, seeded through SplitMix64).
//! - [`EventQueue`]: a bounded min-queue of timed events with a FIFO
//!   tie-break, so equal timestamps pop in insertion order.
//! - [`Resource`]: a FIFO server (a die, a bus, a DMA engine) that knows when
//!   it is next free; reserving it returns when the work finishes.
//!
//! Nothing here reads the OS clock: virtual time is passed in.

mod prng;
mod queue;
mod time;

pub use prng::Prng;
pub use queue::EventQueue;
pub use time::{Nanos, Resource};
