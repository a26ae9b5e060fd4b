//! Modelled cards.
//!
//! - [`Preset`]: a card from SYSTEM.md §2 with its NAND, geometry, data
//!   sheet and the controller / host-software parameters derived from it.
//! - [`Format`]: stock, high-performance, improved-write, max-write, a
//!   capacity or an over-provisioning percentage.
//! - [`Card`]: the modelled card: one [`Member`] (ioMemory device: FTL +
//!   controller) per ioDimm, and software RAID 0 across the selected
//!   members. It implements [`VirtualDevice`], the narrow interface the lab
//!   drives.
//!
//! - [`Health`](health::Health) and [`thermal::Thermal`]: per member,
//!   wear-out and block retirement, health states, power, temperature and
//!   write throttling; [`Card::health`] gives their [`HealthReport`]s.
//!
//! One I/O through a member: host VSL software cost → (writes) admission to
//! the power-cut-protected buffer → controller DMA; (reads) NAND array read
//! and bus transfer in parallel with the controller's command pipeline →
//! PCIe transfer to the host.

mod card;
mod dispatch;
pub mod flashback;
pub mod health;
pub mod placement;
mod preset;
pub mod preset_file;
pub mod spec;
pub mod thermal;

pub use card::{
    Card, CardConfig, DeviceError, DeviceStats, IoKind, Member, MemberSel, VirtualDevice,
};
pub use flashback::{DieFailure, MediaReport, ReliabilityOptions};
pub use health::{HealthPoint, HealthReport, HealthState, Throttle};
pub use preset::{DataSheet, Format, Preset, VslParams};
pub use preset_file::presets;
pub use spec::{
    card_config, parse_placement, set_reliability, CardSpec, CardSpecArgs, PolicyArgs,
    ReliabilityArgs,
};
pub use thermal::Environment;
