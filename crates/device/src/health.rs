//! Health, endurance, power and temperature of one ioMemory device.
//!
//! - [`Environment`]: ambient temperature, airflow and whether a Duo has
//!   its external power cable: what the card's surroundings impose.
//! - [`Health`]: per member; observes the FTL's media counters after every
//!   I/O ([`Health::observe`]), retires worn-out erase units, derives the
//!   [`HealthState`], integrates power into temperature ([`crate::thermal`])
//!   and throttles write admission ([`Health::throttle_write`]).
//! - [`HealthReport`]: the status fields (`vsl status`, dashboards).
//!
//! Every parameter, its value and its source: docs/MODEL.md, "Health,
//! endurance, power and temperature".

use crate::thermal::Environment;
use crate::thermal::{Thermal, THROTTLE_OFF_C, THROTTLE_ON_C};
use ftl::{FtlConfig, Vsl};
use serde::{Deserialize, Serialize};
use sim::{Nanos, Prng, Resource};

/// Share of erase units set aside to replace worn or failed ones (part of
/// the reserved fraction). "Reserves" report what is left of it.
pub const BAD_BLOCK_POOL_FRACTION: f64 = 0.02;
/// Reserve-space warning when this share of the pool is left.
pub const RESERVE_WARN_FRACTION: f64 = 0.10;
/// Reduced-write mode below this share of healthy erase units.
pub const REDUCED_WRITE_HEALTHY: f64 = 0.96;
/// Read-only below this share of healthy erase units.
pub const READ_ONLY_HEALTHY: f64 = 0.94;
/// Failed below this share (reachable only by restored wear or failures,
/// since a read-only device wears no further).
pub const FAILED_HEALTHY: f64 = 0.90;
/// A unit's real endurance is its rated cycles times 1 + this × U(0, 1):
/// the data sheet's figure is a guaranteed minimum.
pub const ENDURANCE_SPREAD: f64 = 0.5;
/// NAND program bandwidth while reduced-write or thermally throttled, as a
/// share of the controller's write data path: host writes are capped at
/// this share divided by the write amplification of the last step, so the
/// media work (and the power it costs) falls even while GC amplifies.
pub const THROTTLED_WRITE_FRACTION: f64 = 0.25;
/// What a PCIe slot may draw without the external power cable; the driver
/// caps a card at it (ioDrive Duo installation guide: 24.75 W).
pub const SLOT_POWER_W: f64 = 24.75;
/// Power and temperature are integrated over steps of this much virtual time.
pub const STEP_NS: u64 = 100_000_000;

/// Energy per byte read from the NAND array and moved to the host, J.
pub const READ_J_PER_BYTE: f64 = 5e-9;
/// Energy per byte programmed, J.
pub const PROGRAM_J_PER_BYTE: f64 = 16e-9;
/// Energy per byte of an erase unit erased, J.
pub const ERASE_J_PER_BYTE: f64 = 1e-9;

/// Energy per byte programmed on `card`: [`PROGRAM_J_PER_BYTE`] for the
/// ioDrives; for a slot-powered card, what lets it write at its data-sheet
/// bandwidth within the slot's power ((24.75 W − idle) / write bandwidth):
/// its data sheet rates it at 25 W doing so, so this is calibrated on the
/// data sheet's write bandwidth and power rating (docs/MODEL.md).
pub fn program_j_per_byte(card: &crate::Preset) -> f64 {
    if card.slot_powered {
        let idle = card.idle_w * card.members as f64;
        (SLOT_POWER_W - idle) / (card.datasheet.write_mb_s as f64 * 1e6)
    } else {
        PROGRAM_J_PER_BYTE
    }
}

/// Health states, in the order a wearing device passes through them.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HealthState {
    Healthy,
    ReserveWarning,
    ReducedWrite,
    ReadOnly,
    Failed,
}

impl std::fmt::Display for HealthState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            HealthState::Healthy => "healthy",
            HealthState::ReserveWarning => "reserve space warning",
            HealthState::ReducedWrite => "reduced write",
            HealthState::ReadOnly => "read-only",
            HealthState::Failed => "failed",
        })
    }
}

/// Why writes are slowed, if they are.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Throttle {
    None,
    ReducedWrite,
    Thermal,
    Power,
}

/// The status fields of one member.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HealthReport {
    pub state: HealthState,
    pub throttle: Throttle,
    pub powered_off: bool,
    pub total_blocks: u32,
    pub retired_blocks: u32,
    pub healthy_blocks_pct: f64,
    pub reserve_pct: f64,
    pub rated_endurance_bytes: u64,
    pub physical_bytes_written: u64,
    pub physical_bytes_read: u64,
    pub endurance_remaining_pct: f64,
    pub erase_count_min: u32,
    pub erase_count_avg: f64,
    pub erase_count_max: u32,
    pub temperature_c: f64,
    pub temperature_max_c: f64,
    pub power_w: f64,
    pub power_avg_w: f64,
    pub power_max_w: f64,
    pub ambient_c: f64,
    pub airflow_lfm: f64,
    pub external_power: bool,
}

/// One sample of a card's health series (`vsl run` per interval, the
/// review per phase).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HealthPoint {
    /// Seconds since the measured run (or the target's review) started.
    pub t_s: f64,
    /// Hottest member, °C.
    pub temperature_c: f64,
    /// All members, W.
    pub power_w: f64,
    /// Most-used member: 100 − rated endurance remaining %.
    pub endurance_used_pct: f64,
}

impl HealthPoint {
    /// The sample of a card whose members report `reports`.
    pub fn of(t_s: f64, reports: &[HealthReport]) -> HealthPoint {
        HealthPoint {
            t_s,
            temperature_c: reports
                .iter()
                .map(|h| h.temperature_c)
                .fold(f64::MIN, f64::max),
            power_w: reports.iter().map(|h| h.power_w).sum(),
            endurance_used_pct: reports
                .iter()
                .map(|h| 100.0 - h.endurance_remaining_pct)
                .fold(0.0, f64::max),
        }
    }
}

/// Media counters at the start of the current step.
#[derive(Copy, Clone, Default)]
struct Snapshot {
    at: Nanos,
    bytes_read: u64,
    bytes_programmed: u64,
    erases: u64,
    host_sectors_written: u64,
}

impl Snapshot {
    fn of(at: Nanos, vsl: &Vsl) -> Snapshot {
        let c = vsl.media_counters();
        Snapshot {
            at,
            bytes_read: c.bytes_read,
            bytes_programmed: c.bytes_programmed,
            erases: c.leb_erases,
            host_sectors_written: vsl.stats().host_sectors_written,
        }
    }
}

/// Health, wear, power and temperature of one member.
pub struct Health {
    env: Environment,
    /// Power this member may draw (its share of the slot without external
    /// power), W; infinite when uncapped.
    power_budget_w: f64,
    /// Idle power of this member, W.
    idle_w: f64,
    /// Energy per byte programmed, J.
    program_j_per_byte: f64,
    write_bps: f64,
    leb_bytes: f64,
    sector_bytes: u64,
    user_sectors: u64,
    usable_lebs: u32,
    slots_per_leb: u64,
    gc_reserve_lebs: u32,
    /// Erase count at which each unit wears out.
    leb_limit: Vec<u32>,
    retired: Vec<bool>,
    retired_count: u32,
    /// Units the log may use: the usable ones and the reserved ones
    /// brought in as spares.
    in_service: Vec<bool>,
    /// Reserved units brought in to replace retired ones.
    spares_in_service: u32,
    /// Erase-unit equivalents of spare blocks given to failed dies
    /// (Flashback): they come out of the bad-block pool.
    die_lebs: u32,
    pool_lebs: u32,
    rated_bytes: u64,
    state: HealthState,
    thermal: Thermal,
    thermal_throttled: bool,
    power_cap_bps: Option<f64>,
    /// NAND bytes programmed per host byte written in the last step (≥ 1).
    step_wa: f64,
    throttle: Resource,
    step: Snapshot,
    erases_seen: u64,
    powered_off: bool,
    power_w: f64,
    power_max_w: f64,
    energy_j: f64,
    /// Physical bytes written and read before this instance (a store's
    /// lifetime counters).
    base_programmed: u64,
    base_read: u64,
}

impl Health {
    /// The health of member `member_id` of a `card`, whose controller
    /// writes at most `write_bps`.
    pub fn new(
        cfg: &FtlConfig,
        env: Environment,
        card: &crate::Preset,
        member_id: u32,
        write_bps: u64,
    ) -> Health {
        let members_on_card = card.members;
        let slot_powered = card.slot_powered;
        let cooling_share = card.cooling_share;
        let lebs = cfg.geometry.lebs();
        let cycles = cfg.timing.endurance_cycles as f64;
        let mut prng = Prng::from_seed(0x4845_414c_5448 ^ member_id as u64);
        let leb_limit = (0..lebs)
            .map(|_| (cycles * (1.0 + ENDURANCE_SPREAD * prng.next_f64())).round() as u32)
            .collect();
        let twin = members_on_card >= 2;
        let power_budget_w = if slot_powered || (twin && !env.external_power) {
            SLOT_POWER_W / members_on_card as f64
        } else {
            f64::INFINITY
        };
        let leb_bytes = cfg.geometry.write_unit_bytes() * cfg.geometry.units_per_leb() as u64;
        Health {
            env,
            power_budget_w,
            idle_w: card.idle_w,
            program_j_per_byte: program_j_per_byte(card),
            write_bps: write_bps as f64,
            leb_bytes: leb_bytes as f64,
            sector_bytes: cfg.sector_bytes as u64,
            user_sectors: cfg.user_sectors,
            usable_lebs: cfg.usable_lebs(),
            slots_per_leb: cfg.slots_per_leb() as u64,
            gc_reserve_lebs: cfg.gc_reserve_lebs,
            leb_limit,
            retired: vec![false; lebs as usize],
            retired_count: 0,
            in_service: (0..lebs).map(|l| l < cfg.usable_lebs()).collect(),
            spares_in_service: 0,
            die_lebs: 0,
            pool_lebs: ((lebs as f64 * BAD_BLOCK_POOL_FRACTION).round() as u32).max(1),
            rated_bytes: cfg.geometry.data_bytes() * cfg.timing.endurance_cycles as u64,
            state: HealthState::Healthy,
            thermal: Thermal::new(env, cooling_share),
            thermal_throttled: false,
            power_cap_bps: None,
            step_wa: 1.0,
            throttle: Resource::default(),
            step: Snapshot::default(),
            erases_seen: 0,
            powered_off: false,
            power_w: card.idle_w,
            power_max_w: card.idle_w,
            energy_j: 0.0,
            base_programmed: 0,
            base_read: 0,
        }
    }

    /// Counts physical bytes written and read before this instance (a
    /// store's lifetime) towards endurance, and its hottest temperature.
    pub fn set_lifetime_base(&mut self, programmed: u64, read: u64, temperature_max_c: f64) {
        self.base_programmed = programmed;
        self.base_read = read;
        self.thermal.raise_max(temperature_max_c);
    }

    /// Spare erase units left in the bad-block pool.
    pub fn pool_left(&self) -> u32 {
        self.pool_lebs
            .saturating_sub(self.retired_count + self.die_lebs)
    }

    pub fn state(&self) -> HealthState {
        self.state
    }

    pub fn powered_off(&self) -> bool {
        self.powered_off
    }

    /// Internal temperature now, °C.
    pub fn temperature_c(&self) -> f64 {
        self.thermal.temperature_c()
    }

    /// When a write of `bytes`, in the buffer at `admitted`, may complete
    /// under the current write throttle.
    #[inline]
    pub fn throttle_write(&mut self, admitted: Nanos, bytes: u64) -> Nanos {
        match self.cap_bps() {
            None => admitted,
            Some(bps) => {
                let (_, end) = self
                    .throttle
                    .reserve(admitted, Nanos::for_bytes(bytes, bps.max(1.0) as u64));
                end
            }
        }
    }

    fn cap_bps(&self) -> Option<f64> {
        let slow = self.thermal_throttled || self.state == HealthState::ReducedWrite;
        let fixed = slow.then_some(self.write_bps * THROTTLED_WRITE_FRACTION / self.step_wa);
        match (fixed, self.power_cap_bps) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn throttle_kind(&self) -> Throttle {
        if self.state == HealthState::ReducedWrite {
            Throttle::ReducedWrite
        } else if self.thermal_throttled {
            Throttle::Thermal
        } else if self.power_cap_bps.is_some() {
            Throttle::Power
        } else {
            Throttle::None
        }
    }

    /// Brings wear, power and temperature up to `now` after an I/O: one
    /// comparison unless an erase happened or a step of time has passed.
    #[inline]
    pub fn observe(&mut self, now: Nanos, vsl: &mut Vsl) {
        let erases = vsl.media_counters().leb_erases;
        if erases != self.erases_seen {
            self.erases_seen = erases;
            self.retire_worn(now, vsl);
        }
        if now.0 >= self.step.at.0 + STEP_NS {
            self.advance(now, vsl);
        }
    }

    fn retire_worn(&mut self, now: Nanos, vsl: &mut Vsl) {
        let mut worn = self.worn(vsl.erase_counts());
        // Units whose reads found too many bit errors (media-error model).
        let media = vsl.reliability_stats().is_some();
        let lebs = if media {
            self.in_service.len() as u32
        } else {
            0
        };
        let bad: Vec<u32> = (0..lebs)
            .filter(|&l| self.in_service[l as usize] && !self.retired[l as usize])
            .filter(|&l| vsl.error_prone_leb(l))
            .filter(|l| !worn.contains(l))
            .collect();
        worn.extend(bad);
        for leb in worn {
            if self.derive_state() >= HealthState::ReadOnly {
                break;
            }
            // While the bad-block pool lasts, a reserved unit takes the
            // retired one's place; then the log shrinks.
            if self.pool_left() > 0 {
                if let Some(spare) = vsl.replace_leb(leb) {
                    self.mark_retired(leb);
                    self.in_service[spare as usize] = true;
                    self.spares_in_service += 1;
                    continue;
                }
            }
            if vsl.retire_leb(leb, now) {
                self.mark_retired(leb);
            }
        }
        self.state = self.state.max(self.derive_state());
    }

    /// Units in service whose erase count reached their endurance.
    fn worn(&self, erase_counts: &[u32]) -> Vec<u32> {
        (0..self.retired.len() as u32)
            .filter(|&l| {
                let i = l as usize;
                let worn = erase_counts.get(i).is_some_and(|&c| c >= self.leb_limit[i]);
                self.in_service[i] && !self.retired[i] && worn
            })
            .collect()
    }

    /// Counts reserved units `vsl` has in service as spares (a store's
    /// recovered log may hold data in them).
    pub fn adopt_spares(&mut self, vsl: &Vsl) {
        for l in self.usable_lebs..self.in_service.len() as u32 {
            if vsl.in_service(l) && !self.in_service[l as usize] {
                self.in_service[l as usize] = true;
                self.spares_in_service += 1;
            }
        }
    }

    /// Reserved units brought into service to replace retired ones.
    pub fn spares_in_service(&self) -> u32 {
        self.spares_in_service
    }

    fn mark_retired(&mut self, leb: u32) {
        self.retired[leb as usize] = true;
        self.retired_count += 1;
    }

    fn derive_state(&self) -> HealthState {
        let total = self.retired.len() as f64;
        let healthy = (total - (self.retired_count + self.die_lebs) as f64) / total;
        let serving =
            (self.usable_lebs + self.spares_in_service).saturating_sub(self.retired_count);
        let spare_slots = serving as u64 * self.slots_per_leb;
        let spare_lebs = spare_slots.saturating_sub(self.user_sectors) / self.slots_per_leb;
        if healthy < FAILED_HEALTHY {
            HealthState::Failed
        } else if healthy < READ_ONLY_HEALTHY || spare_lebs < self.gc_reserve_lebs as u64 + 2 {
            HealthState::ReadOnly
        } else if healthy < REDUCED_WRITE_HEALTHY {
            HealthState::ReducedWrite
        } else if self.reserve_fraction() <= RESERVE_WARN_FRACTION {
            HealthState::ReserveWarning
        } else {
            HealthState::Healthy
        }
    }

    fn reserve_fraction(&self) -> f64 {
        self.pool_left() as f64 / self.pool_lebs as f64
    }

    /// One step: power from the media work done since the last step, the
    /// temperature it leads to, and the throttles that follow.
    fn advance(&mut self, now: Nanos, vsl: &mut Vsl) {
        let die_lebs = vsl.die_spare_lebs();
        if die_lebs != self.die_lebs {
            self.die_lebs = die_lebs;
            self.state = self.state.max(self.derive_state());
        }
        vsl.set_die_spare_budget(self.pool_left());
        let next = Snapshot::of(now, vsl);
        let dt = (now.0 - self.step.at.0) as f64 / 1e9;
        let joules = (next.bytes_read - self.step.bytes_read) as f64 * READ_J_PER_BYTE
            + (next.bytes_programmed - self.step.bytes_programmed) as f64 * self.program_j_per_byte
            + (next.erases - self.step.erases) as f64 * self.leb_bytes * ERASE_J_PER_BYTE;
        let power = self.idle_w + joules / dt;
        let host_bps = (next.host_sectors_written - self.step.host_sectors_written) as f64
            * self.sector_bytes as f64
            / dt;
        let host_bytes = host_bps * dt;
        if host_bytes > 0.0 {
            let programmed = (next.bytes_programmed - self.step.bytes_programmed) as f64;
            self.step_wa = (programmed / host_bytes).max(1.0);
        }
        self.step = next;
        self.power_w = power;
        self.power_max_w = self.power_max_w.max(power);
        self.energy_j += power * dt;
        let t = self.thermal.advance(power, dt);
        if t >= crate::thermal::POWER_OFF_C {
            self.powered_off = true;
        }
        if t >= THROTTLE_ON_C {
            self.thermal_throttled = true;
        } else if t < THROTTLE_OFF_C {
            self.thermal_throttled = false;
        }
        self.control_power(power, host_bps);
    }

    /// Keeps the member under its share of the slot's power: scales the
    /// write bandwidth by the excess, and lets it back up 5 % per step.
    fn control_power(&mut self, power: f64, host_bps: f64) {
        let budget = self.power_budget_w;
        if !budget.is_finite() {
            return;
        }
        if power > budget {
            let scale = ((budget - self.idle_w) / (power - self.idle_w)).clamp(0.1, 1.0);
            let base = self
                .power_cap_bps
                .unwrap_or(self.write_bps)
                .min(host_bps.max(1e6));
            self.power_cap_bps = Some(base * scale);
        } else if let Some(cap) = self.power_cap_bps {
            let up = cap * 1.05;
            self.power_cap_bps = (up < self.write_bps).then_some(up);
        }
    }

    /// The status fields.
    pub fn report(&self, vsl: &Vsl) -> HealthReport {
        let c = vsl.media_counters();
        self.report_parts(c.bytes_programmed, c.bytes_read, vsl.erase_counts())
    }

    /// Marks the units `erase_counts` shows worn out as retired, as the
    /// next attach will (for the status of a device that is not running).
    pub fn restore_wear(&mut self, erase_counts: &[u32]) {
        // A reserved unit that was ever erased was brought in as a spare.
        for l in self.usable_lebs as usize..self.in_service.len() {
            if erase_counts.get(l).is_some_and(|&c| c > 0) && !self.in_service[l] {
                self.in_service[l] = true;
                self.spares_in_service += 1;
            }
        }
        for leb in self.worn(erase_counts) {
            self.mark_retired(leb);
        }
        self.state = self.state.max(self.derive_state());
    }

    /// The status fields, given the physical bytes programmed and read
    /// since this instance started and every unit's erase count.
    pub fn report_parts(&self, programmed: u64, read: u64, erase_counts: &[u32]) -> HealthReport {
        let programmed = self.base_programmed + programmed;
        let counts: Vec<u32> = erase_counts
            .iter()
            .zip(&self.in_service)
            .filter(|(_, &s)| s)
            .map(|(&c, _)| c)
            .collect();
        let total = self.retired.len() as u32;
        let seconds = self.step.at.as_secs_f64();
        let pct = |x: f64| (x * 1e4).round() / 100.0;
        HealthReport {
            state: self.state,
            throttle: self.throttle_kind(),
            powered_off: self.powered_off,
            total_blocks: total,
            retired_blocks: self.retired_count + self.die_lebs,
            healthy_blocks_pct: pct(
                (total - self.retired_count - self.die_lebs) as f64 / total as f64
            ),
            reserve_pct: pct(self.reserve_fraction()),
            rated_endurance_bytes: self.rated_bytes,
            physical_bytes_written: programmed,
            physical_bytes_read: self.base_read + read,
            endurance_remaining_pct: pct(
                (1.0 - programmed as f64 / self.rated_bytes as f64).max(0.0)
            ),
            erase_count_min: counts.iter().copied().min().unwrap_or(0),
            erase_count_avg: counts.iter().map(|&c| c as f64).sum::<f64>()
                / counts.len().max(1) as f64,
            erase_count_max: counts.iter().copied().max().unwrap_or(0),
            temperature_c: self.thermal.temperature_c(),
            temperature_max_c: self.thermal.temperature_max_c(),
            power_w: self.power_w,
            power_avg_w: if seconds > 0.0 {
                self.energy_j / seconds
            } else {
                self.power_w
            },
            power_max_w: self.power_max_w,
            ambient_c: self.env.ambient_c,
            airflow_lfm: self.env.airflow_lfm,
            external_power: self.env.external_power,
        }
    }
}
