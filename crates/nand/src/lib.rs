//! The modelled NAND array of one ioMemory device (one ioDimm).
//!
//! - [`Geometry`]: channels × banks × planes × blocks × pages, and what the
//!   log-structured layer sees of it: write units and erase units.
//! - [`CellTiming`]: read / program / erase times and rated endurance per
//!   cell type and era, with the data sheet each value comes from.
//! - [`NandArray`]: the timing state: one [`Server`] per bank and one
//!   for the (lockstep) channel bus, plus per-erase-unit erase counts.
//!
//! ## The Fusion-io layout this models
//!
//! An ioDimm has 25 NAND packages on 25 channels driven in lockstep by one
//! FPGA: a page is programmed on one die of *every* channel at once, 24 dies
//! carrying data and one carrying parity (Flashback, 24+1). A *bank* is the
//! set of dies, one per channel, that work together; a package stacks one
//! die of each bank. So the units the FTL sees are:
//!
//! - **write unit**: one page (× planes) on every die of one bank:
//!   `data_channels × planes × page_bytes` of user data;
//! - **erase unit** (logical erase block, LEB): one block (× planes) on every
//!   die of every bank. Consecutive write units of a LEB rotate over banks,
//!   so the log is striped across all dies.
//!
//! Contention is modelled per bank (the dies of a bank are busy together)
//! and on the channel bus (every channel moves its share of a transfer at
//! the same time, so the bus is one resource of `data_channels × bus rate`).

use serde::Serialize;
use sim::Nanos;

mod server;
pub use server::{ReadPolicy, Server};

/// NAND cell technology.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CellType {
    Slc,
    Mlc,
    Tlc,
}

impl std::fmt::Display for CellType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            CellType::Slc => "SLC",
            CellType::Mlc => "MLC",
            CellType::Tlc => "TLC",
        })
    }
}

/// Array timing of one die, typical (not worst-case) values.
#[derive(Copy, Clone, Debug, Serialize)]
pub struct CellTiming {
    pub cell: CellType,
    pub read_ns: u64,
    pub program_ns: u64,
    pub erase_ns: u64,
    /// Rated program/erase cycles per block.
    pub endurance_cycles: u32,
    /// Per-channel bus transfer rate.
    pub bus_bytes_per_s: u64,
    pub source: &'static str,
}

impl CellTiming {
    /// Large-page SLC of 2008–2009. Program/erase from the Numonyx
    /// NAND128/256-A SLC data sheet (200 µs program, 2 ms erase, 100 K
    /// cycles); array read 25 µs, the usual large-page SLC figure of the
    /// period; ONFI 1.0 asynchronous bus (25 ns cycle, 40 MB/s).
    pub const SLC_2009: CellTiming = CellTiming {
        cell: CellType::Slc,
        read_ns: 25_000,
        program_ns: 200_000,
        erase_ns: 2_000_000,
        endurance_cycles: 100_000,
        bus_bytes_per_s: 40_000_000,
        source: "Numonyx NAND128/256-A SLC data sheet (tPROG 200 us, tBERS 2 ms, 100K cycles); tR 25 us typical large-page SLC; ONFI 1.0 async 40 MB/s",
    };

    /// SLC of 2011 behind an ONFI 2.x synchronous bus (Micron's 34 nm SLC
    /// in the P320h): the array times of [`CellTiming::SLC_2009`] with a
    /// 200 MT/s bus. The array times are an assumption (no 34 nm SLC data
    /// sheet at hand); the bus is ONFI 2.1's fastest mode.
    pub const SLC_2011: CellTiming = CellTiming {
        cell: CellType::Slc,
        read_ns: 25_000,
        program_ns: 200_000,
        erase_ns: 2_000_000,
        endurance_cycles: 100_000,
        bus_bytes_per_s: 200_000_000,
        source: "SLC_2009 array times (assumed for 34 nm SLC); ONFI 2.1 sync 200 MT/s bus",
    };

    /// MLC of 2008–2009: Micron MT29F16G08MAA / MT29F32G08QAA (ONFI 1.0,
    /// 4 KiB page, 128 pages per block, 2 planes): tR 50 µs, tPROG 900 µs
    /// typ, tBERS 3.5 ms typ, 10 K cycles; asynchronous bus at 40 MB/s.
    pub const MLC_2009: CellTiming = CellTiming {
        cell: CellType::Mlc,
        read_ns: 50_000,
        program_ns: 900_000,
        erase_ns: 3_500_000,
        endurance_cycles: 10_000,
        bus_bytes_per_s: 40_000_000,
        source: "Micron MT29F16G08MAA/MT29F32G08QAA data sheet (ONFI 1.0 MLC): tR 50 us, tPROG 900 us typ, tBERS 3.5 ms typ, 10K cycles; async 40 MB/s",
    };

    /// MLC of 2011–2012: Micron MT29F64G08CBAAA class (ONFI 2.2, 8 KiB page,
    /// 256 pages per block): tR 50 µs, tPROG 1.3 ms typ, tBERS 3 ms typ,
    /// 5 K cycles; synchronous bus at 200 MT/s.
    pub const MLC_2012: CellTiming = CellTiming {
        cell: CellType::Mlc,
        read_ns: 50_000,
        program_ns: 1_300_000,
        erase_ns: 3_000_000,
        endurance_cycles: 5_000,
        bus_bytes_per_s: 200_000_000,
        source: "Micron MT29F64G08CBAAA data sheet (ONFI 2.2 MLC): tR 50 us, tPROG 1.3 ms typ, tBERS 3 ms typ, 5K cycles; sync 200 MT/s",
    };

    /// TLC of 2012 (not used by any preset; for experiments): roughly 1.5–2×
    /// MLC array times and 1 K cycles.
    pub const TLC_2012: CellTiming = CellTiming {
        cell: CellType::Tlc,
        read_ns: 80_000,
        program_ns: 2_200_000,
        erase_ns: 4_000_000,
        endurance_cycles: 1_000,
        bus_bytes_per_s: 200_000_000,
        source: "illustrative 2012 TLC: ~1.5-2x MLC_2012 array times, 1K cycles",
    };
}

/// Physical organisation of one ioMemory device.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Geometry {
    /// NAND channels, all driven in lockstep (25 on an ioDimm).
    pub channels: u32,
    /// Channels whose die in each write unit holds parity instead of data.
    pub parity_channels: u32,
    /// Dies per channel; each bank is one die on every channel.
    pub banks: u32,
    pub planes: u32,
    /// Blocks per plane = erase units (LEBs) in the device.
    pub blocks_per_plane: u32,
    pub pages_per_block: u32,
    pub page_bytes: u32,
}

impl Geometry {
    pub fn data_channels(&self) -> u32 {
        self.channels - self.parity_channels
    }
    /// User-data bytes in one write unit.
    pub fn write_unit_bytes(&self) -> u64 {
        self.data_channels() as u64 * self.planes as u64 * self.page_bytes as u64
    }
    /// Write units in one erase unit.
    pub fn units_per_leb(&self) -> u32 {
        self.banks * self.pages_per_block
    }
    pub fn lebs(&self) -> u32 {
        self.blocks_per_plane
    }
    /// Every byte of NAND, parity dies included.
    pub fn raw_bytes(&self) -> u64 {
        self.channels as u64
            * self.banks as u64
            * self.planes as u64
            * self.blocks_per_plane as u64
            * self.pages_per_block as u64
            * self.page_bytes as u64
    }
    /// Bytes that can hold user data (parity dies excluded).
    pub fn data_bytes(&self) -> u64 {
        self.write_unit_bytes() * self.units_per_leb() as u64 * self.lebs() as u64
    }
    pub fn dies(&self) -> u32 {
        self.channels * self.banks
    }

    /// Checks the geometry is usable; the error names the bad field.
    pub fn validate(&self) -> Result<(), String> {
        let fields = [
            ("channels", self.channels),
            ("banks", self.banks),
            ("planes", self.planes),
            ("blocks_per_plane", self.blocks_per_plane),
            ("pages_per_block", self.pages_per_block),
            ("page_bytes", self.page_bytes),
        ];
        for (name, v) in fields {
            if v == 0 {
                return Err(format!("geometry field {name} must be > 0"));
            }
        }
        if self.parity_channels >= self.channels {
            return Err("geometry needs at least one data channel".into());
        }
        // A multiple of 512 rather than a power of two: a compressing
        // controller's page holds more logical bytes than it stores.
        if !self.page_bytes.is_multiple_of(512) {
            return Err(format!(
                "page size {} is not a multiple of 512",
                self.page_bytes
            ));
        }
        Ok(())
    }
}

/// Counters of media operations.
#[derive(Copy, Clone, Debug, Default, Serialize)]
pub struct MediaCounters {
    pub unit_reads: u64,
    pub unit_programs: u64,
    pub leb_erases: u64,
    pub bytes_read: u64,
    pub bytes_programmed: u64,
}

/// Timing and wear state of one device's NAND.
pub struct NandArray {
    pub geometry: Geometry,
    pub timing: CellTiming,
    banks: Vec<Server>,
    bus: Server,
    bus_bytes_per_s: u64,
    erase_counts: Vec<u32>,
    pub counters: MediaCounters,
    read_policy: ReadPolicy,
    /// A block erase is charged once per this many erase-unit erases (a
    /// `--scale`d card shrinks its erase units by this factor: see
    /// [`NandArray::set_erase_batch`]).
    erase_batch: u32,
    erases_uncharged: u32,
    /// Work reserved now is a foreground stall's or catch-up's
    /// ([`NandArray::set_foreground`]).
    foreground: bool,
}

impl NandArray {
    pub fn new(geometry: Geometry, timing: CellTiming) -> NandArray {
        geometry
            .validate()
            .expect("geometry validated by the caller");
        NandArray {
            geometry,
            timing,
            banks: vec![Server::default(); geometry.banks as usize],
            bus: Server::default(),
            bus_bytes_per_s: timing.bus_bytes_per_s * geometry.data_channels() as u64,
            erase_counts: vec![0; geometry.lebs() as usize],
            counters: MediaCounters::default(),
            read_policy: ReadPolicy::FIFO,
            erase_batch: 1,
            erases_uncharged: 0,
            foreground: false,
        }
    }

    /// How reads are ordered against queued programs and erases.
    pub fn set_read_policy(&mut self, policy: ReadPolicy) {
        self.read_policy = policy;
    }

    pub fn read_policy(&self) -> ReadPolicy {
        self.read_policy
    }

    /// Work reserved from now until `set_foreground(false)` is the FTL's
    /// foreground GC (a stall, catch-up): with
    /// [`ReadPolicy::background_only`] no read overtakes it.
    #[inline]
    pub fn set_foreground(&mut self, on: bool) {
        self.foreground = on;
    }

    /// Reserves `duration` on `bank`: FIFO, remembered for priority reads
    /// with `track`, and fixed (never overtaken) in a foreground section
    /// under [`ReadPolicy::background_only`].
    #[inline]
    fn reserve_bank(
        &mut self,
        bank: usize,
        ready: Nanos,
        duration: Nanos,
        track: bool,
    ) -> (Nanos, Nanos) {
        let b = &mut self.banks[bank];
        if track && self.foreground && self.read_policy.background_only {
            b.reserve_fixed(ready, duration)
        } else {
            b.reserve(ready, duration, track)
        }
    }

    /// Charges the block erase time once every `batch` erase-unit erases.
    /// A card scaled by shrinking each erase unit to `1/batch` of its pages
    /// erases `batch` times as often per byte written; charging one full
    /// tBERS per `batch` erases keeps both the erase time per byte and the
    /// length of one erase (what a read waits behind) of the full card.
    pub fn set_erase_batch(&mut self, batch: u32) {
        self.erase_batch = batch.max(1);
    }

    /// The device's time is now `now` (non-decreasing): forgets the queued
    /// work that has ended. Only needed with read priority.
    #[inline]
    pub fn advance(&mut self, now: Nanos) {
        if self.read_policy.priority {
            for b in &mut self.banks {
                b.prune(now);
            }
        }
        self.bus.prune(now);
    }

    /// Programs one write unit on `bank`, its data ready at `ready`.
    /// The bus moves the data, then the bank's dies program; the bank is
    /// busy for both. Returns when the program completes.
    #[inline]
    pub fn program_unit(&mut self, ready: Nanos, bank: u32) -> Nanos {
        let unit_bytes = self.geometry.write_unit_bytes();
        let xfer = Nanos::for_bytes(unit_bytes, self.bus_bytes_per_s);
        let track = self.read_policy.priority;
        let busy = self.banks[bank as usize].busy_until;
        // The bank starts when it is free and the bus has room for the
        // transfer (in a gap if one fits).
        let start = self.bus.first_gap(ready.max(busy), xfer);
        self.bus.reserve_backfill(start, xfer);
        let (_, done) = self.reserve_bank(
            bank as usize,
            start,
            xfer + Nanos(self.timing.program_ns),
            track,
        );
        self.counters.unit_programs += 1;
        self.counters.bytes_programmed += unit_bytes;
        done
    }

    /// Programs `bytes` on one die of `bank` (a Flashback rebuild writing a
    /// reconstructed die page to its spare): the bus moves the data, then
    /// the bank is busy for tPROG (its dies work in lockstep). Counts the
    /// bytes programmed, not a write unit.
    pub fn program_page(&mut self, ready: Nanos, bank: u32, bytes: u64) -> Nanos {
        let xfer = Nanos::for_bytes(bytes, self.bus_bytes_per_s);
        let track = self.read_policy.priority;
        let b = &mut self.banks[bank as usize];
        let start = self.bus.first_gap(ready.max(b.busy_until), xfer);
        self.bus.reserve_backfill(start, xfer);
        let (_, done) = b.reserve(start, xfer + Nanos(self.timing.program_ns), track);
        self.counters.bytes_programmed += bytes;
        done
    }

    /// Reads `bytes` of one write unit on `bank`: an array read on the bank,
    /// then the bus moves the requested bytes, backfilling. With
    /// [`ReadPolicy::hold_die`] the bank's dies stay busy for the array
    /// read and their own data-out (a die starts no new array operation
    /// while the last read's data waits in its page register: ONFI READ
    /// PAGE, no cache read for random pages); without it, for tR only.
    /// Returns when data is at the controller.
    #[inline]
    pub fn read_unit(&mut self, ready: Nanos, bank: u32, bytes: u64) -> Nanos {
        self.read_unit_as(ready, bank, bytes, false)
    }

    /// [`NandArray::read_unit`] of a host read: under
    /// [`ReadPolicy::background_only`] the only reads that overtake.
    #[inline]
    pub fn read_unit_host(&mut self, ready: Nanos, bank: u32, bytes: u64) -> Nanos {
        self.read_unit_as(ready, bank, bytes, true)
    }

    #[inline]
    fn read_unit_as(&mut self, ready: Nanos, bank: u32, bytes: u64, host: bool) -> Nanos {
        let t_r = Nanos(self.timing.read_ns);
        let xfer = Nanos::for_bytes(bytes, self.bus_bytes_per_s);
        let p = self.read_policy;
        let held = if p.hold_die { t_r + xfer } else { t_r };
        let first = p.priority && (host || !p.background_only);
        let (start, end) = if first {
            let suspend = p.suspend_ns.map(Nanos);
            self.banks[bank as usize].reserve_read_first(ready, held, suspend)
        } else if p.priority && p.gc_reads_in_order {
            // A GC read under background-only priority that keeps its
            // place among the reads: no host read overtakes it.
            self.banks[bank as usize].reserve_fixed(ready, held)
        } else if p.priority {
            // A GC read under background-only priority: queued like a
            // program, overtaken by host reads unless in the foreground.
            self.reserve_bank(bank as usize, ready, held, true)
        } else {
            self.banks[bank as usize].reserve(ready, held, false)
        };
        let sensed = if p.hold_die { start + t_r } else { end };
        let done = self.bus.reserve_backfill(sensed, xfer).1;
        self.counters.unit_reads += 1;
        self.counters.bytes_read += bytes;
        done
    }

    /// Erases erase unit `leb` (one block on every die): every bank is busy
    /// for tBERS. Returns when the last bank finishes.
    pub fn erase_leb(&mut self, ready: Nanos, leb: u32) -> Nanos {
        self.erase_leb_in_batch(ready, leb, false)
    }

    /// [`NandArray::erase_leb`], charging the block erase now if
    /// `batch_done` (the caller's batch of small erases makes one full
    /// block: a scaled card's GC group) even if fewer than the erase batch
    /// have gone uncharged, so the erase falls where a full card's would.
    pub fn erase_leb_in_batch(&mut self, ready: Nanos, leb: u32, batch_done: bool) -> Nanos {
        let mut done = ready;
        self.erases_uncharged += 1;
        if batch_done || self.erases_uncharged >= self.erase_batch {
            self.erases_uncharged = 0;
            let track = self.read_policy.priority;
            for b in 0..self.banks.len() {
                let (_, end) = self.reserve_bank(b, ready, Nanos(self.timing.erase_ns), track);
                done = done.max(end);
            }
        }
        self.erase_counts[leb as usize] += 1;
        self.counters.leb_erases += 1;
        done
    }

    pub fn erase_count(&self, leb: u32) -> u32 {
        self.erase_counts[leb as usize]
    }

    pub fn erase_counts(&self) -> &[u32] {
        &self.erase_counts
    }

    /// Restores erase counts saved from an earlier run of the same device
    /// (the real-time store keeps wear across attaches). Extra or missing
    /// entries are ignored.
    pub fn restore_erase_counts(&mut self, counts: &[u32]) {
        for (dst, &src) in self.erase_counts.iter_mut().zip(counts) {
            *dst = src;
        }
    }

    /// True when no bank has queued work at `now` (used for idle-time GC).
    pub fn idle_at(&self, now: Nanos) -> bool {
        self.banks.iter().all(|b| b.busy_until <= now)
    }

    /// Time the busiest bank frees up.
    pub fn busy_until(&self) -> Nanos {
        self.banks
            .iter()
            .map(|b| b.busy_until)
            .fold(self.bus.busy_until, Nanos::max)
    }

    /// Fraction of `elapsed` each bank and the bus spent busy.
    pub fn utilisation(&self, elapsed: Nanos) -> (Vec<f64>, f64) {
        let e = elapsed.0.max(1) as f64;
        let banks = self
            .banks
            .iter()
            .map(|b| b.busy_total.0 as f64 / e)
            .collect();
        (banks, self.bus.busy_total.0 as f64 / e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iodimm() -> Geometry {
        Geometry {
            channels: 25,
            parity_channels: 1,
            banks: 4,
            planes: 2,
            blocks_per_plane: 4096,
            pages_per_block: 128,
            page_bytes: 4096,
        }
    }

    #[test]
    fn iodimm_capacity_is_400_gib() {
        let g = iodimm();
        assert_eq!(g.raw_bytes(), 400 << 30);
        assert_eq!(g.data_bytes(), 384 << 30);
        assert_eq!(g.write_unit_bytes(), 24 * 8192);
        assert_eq!(g.dies(), 100);
    }

    #[test]
    fn banks_work_in_parallel_bus_is_shared() {
        let mut n = NandArray::new(iodimm(), CellTiming::MLC_2009);
        let a = n.program_unit(Nanos(0), 0);
        let b = n.program_unit(Nanos(0), 1);
        // Second bank waits only for the bus transfer of the first.
        let xfer = Nanos::for_bytes(24 * 8192, 24 * 40_000_000);
        assert_eq!(a, xfer + Nanos(900_000));
        assert_eq!(b, xfer + xfer + Nanos(900_000));
        // Same bank again queues behind its own program.
        let c = n.program_unit(Nanos(0), 0);
        assert_eq!(c, a + xfer + Nanos(900_000));
    }

    #[test]
    fn erase_counts_accumulate() {
        let mut n = NandArray::new(iodimm(), CellTiming::MLC_2009);
        n.erase_leb(Nanos(0), 3);
        n.erase_leb(Nanos(0), 3);
        assert_eq!(n.erase_count(3), 2);
        assert_eq!(n.erase_count(0), 0);
        assert_eq!(n.counters.leb_erases, 2);
    }

    #[test]
    fn background_only_priority_spares_foreground_work_and_gc_reads() {
        let policy = ReadPolicy {
            priority: true,
            background_only: true,
            ..ReadPolicy::FIFO
        };
        // Background: two programs queued on bank 0; a host read overtakes
        // the second, a GC read does not.
        let mut n = NandArray::new(iodimm(), CellTiming::MLC_2009);
        n.set_read_policy(policy);
        let p1 = n.program_unit(Nanos(0), 0);
        let p2 = n.program_unit(Nanos(0), 0);
        let host = n.read_unit_host(Nanos(10), 0, 4096);
        assert!(
            host < p2,
            "host read {host:?} waited for the queued program ({p2:?})"
        );
        assert!(
            host > p1,
            "the program in progress ({p1:?}) is not overtaken"
        );
        let gc = n.read_unit(Nanos(10), 0, 4096);
        assert!(
            gc > p2,
            "a GC read {gc:?} overtook a queued program ({p2:?})"
        );
        // Foreground: the same programs reserved in a stall are not
        // overtaken by the host read.
        let mut f = NandArray::new(iodimm(), CellTiming::MLC_2009);
        f.set_read_policy(policy);
        f.set_foreground(true);
        f.program_unit(Nanos(0), 0);
        let q2 = f.program_unit(Nanos(0), 0);
        f.set_foreground(false);
        let host = f.read_unit_host(Nanos(10), 0, 4096);
        assert!(
            host > q2,
            "host read {host:?} overtook a stall's program ({q2:?})"
        );
    }

    #[test]
    fn gc_reads_in_order_are_not_overtaken() {
        // Background work on bank 0: a program in progress, a GC read
        // queued behind it, then a second program. A host read overtakes
        // the GC read (and the program before it) unless GC reads keep
        // their place among the reads; the program queued after the GC
        // read it overtakes either way.
        let run = |in_order: bool| {
            let mut n = NandArray::new(iodimm(), CellTiming::MLC_2009);
            n.set_read_policy(ReadPolicy {
                priority: true,
                background_only: true,
                gc_reads_in_order: in_order,
                ..ReadPolicy::FIFO
            });
            let p1 = n.program_unit(Nanos(0), 0);
            let p2 = n.program_unit(Nanos(0), 0);
            let gc = n.read_unit(Nanos(0), 0, 4096);
            let p3 = n.program_unit(Nanos(0), 0);
            let host = n.read_unit_host(Nanos(10), 0, 4096);
            (p1, p2, gc, p3, host)
        };
        let (p1, p2, _, _, host) = run(false);
        assert!(
            host > p1 && host < p2,
            "without order the host read ({host:?}) waits only for the program in progress ({p1:?})"
        );
        let (_, p2, gc, p3, host) = run(true);
        assert!(
            gc > p2 && host > gc,
            "in order the host read ({host:?}) waits for the GC read ({gc:?}) and what was queued before it ({p2:?})"
        );
        assert!(
            host < p3,
            "the program queued after the GC read ({p3:?}) is still overtaken ({host:?})"
        );
    }

    #[test]
    fn zero_field_is_rejected() {
        let mut g = iodimm();
        g.banks = 0;
        assert!(g.validate().unwrap_err().contains("banks"));
    }
}
