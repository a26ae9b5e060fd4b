//! Real-time serving of the modelled card: `vsl attach` puts the same FTL
//! and NAND model that runs in virtual time behind real Linux block devices.
//!
//! - [`store::Store`]: the on-disk store — user data by physical NAND slot
//!   (so garbage collection really moves it), out-of-band records, trims,
//!   wear; versioned and checked against the card on open.
//! - [`engine::Engine`]: one ioMemory device: the model, its store, and the
//!   mapping of the model's completion times onto wall time
//!   ([`engine::Timing`]); recovers the map from the store on open.
//! - [`timer::Timer`]: acknowledges I/Os at their completion time;
//!   [`trim`] keeps the reads' lead on the model's latency as seen by
//!   the loop device.
//! - [`fs::CardFs`]: the FUSE filesystem with one direct-I/O device file per
//!   ioMemory device.
//! - [`daemon::Daemon`]: mounts, attaches loop devices, serves the control
//!   socket ([`control`]: the request parser, owner-only access);
//!   [`status::StatusReport`] is what `status` returns; [`logging`]:
//!   `tracing` to stderr (daemon.log or the journal) and `sd_notify`;
//!   [`record::AttachRecord`]: what `vsl attach --restore` re-attaches
//!   after a reboot.
//! - [`cli`]: the `attach` / `detach` / `status` arguments and commands for
//!   the `vsl` binary.
//! - [`atomic`]: atomic writes on an attached card ([`atomic::atomic_write`]
//!   through the control socket, `vsl atomic`): a vector of writes and
//!   trims applied all-or-nothing, journalled in the store.
//! - [`manage`]: `vsl status` (every status field, stable JSON), `vsl
//!   format`, `vsl erase` (the runs simulations publish are read from
//!   `rundir::live`).
//!
//! Durability: data and its out-of-band record are written to the store
//! (the host page cache) before an I/O is acknowledged, so a `kill -9` of
//! the daemon loses no acknowledged write; flush and FUA reach the store
//! as `fdatasync`. The model below this crate stays deterministic; wall
//! time is read only here.

pub mod atomic;
pub mod capture;
pub mod cli;
pub mod control;
pub mod counters;
pub mod daemon;
pub mod engine;
pub mod fs;
pub mod logging;
pub mod manage;
pub mod record;
pub mod recycle;
pub mod sched;
pub mod state;
pub mod status;
pub mod store;
pub mod timer;
pub mod trace_cli;
pub mod trim;
pub mod uring;
pub mod wakeup;
pub mod warm;
