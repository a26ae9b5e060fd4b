use nand::{CellTiming, Geometry};
use serde::Serialize;

/// Data-sheet figures of a card (whole card, all members), as quoted in
/// the reviews (SYSTEM.md §2). `None` where the data sheet is silent.
#[derive(Copy, Clone, Debug, Serialize)]
pub struct DataSheet {
    pub read_mb_s: u32,
    pub write_mb_s: u32,
    pub read_iops_512: Option<u32>,
    pub write_iops_512: Option<u32>,
    pub read_iops_4k: Option<u32>,
    pub write_iops_4k: Option<u32>,
    pub read_latency_us: Option<u32>,
    pub write_latency_us: Option<u32>,
}

/// A modelled card.
#[derive(Clone, Debug, Serialize)]
pub struct Preset {
    pub name: &'static str,
    pub description: &'static str,
    /// ioMemory devices on the card (2 for a Duo).
    pub members: u32,
    pub timing: CellTiming,
    pub geometry: Geometry,
    /// Stock formatted capacity of one member, bytes.
    pub stock_bytes: u64,
    pub datasheet: DataSheet,
    /// PCIe link of one member: usable bytes/s after encoding and protocol.
    pub link_bytes_per_s: u64,
    /// Host VSL software cost per I/O (not a throughput limit: the host has
    /// many cores).
    pub host_read_ns: u64,
    pub host_write_ns: u64,
    /// The FTL runs in the host (Fusion-io's VSL: the map lives in host
    /// RAM) rather than on the card's controllers.
    pub host_ftl: bool,
    /// The controllers compress data before writing it (SandForce
    /// DuraWrite): compressible data takes less NAND and bus time.
    pub compression: bool,
    /// Where the data-sheet figures come from.
    pub source: &'static str,
    /// The card has no external power cable and its controllers keep it
    /// within the PCIe slot's 25 W (the comparables' data sheets rate them
    /// at 25 W); the ioDrive Duos instead take `--external-power`.
    pub slot_powered: bool,
    /// Cooling of one member relative to one ioDimm of a Duo (on which the
    /// thermal model is calibrated): 1 for the ioDrives, the card's heat
    /// sink shared by its members otherwise (2 / members for a full card).
    pub cooling_share: f64,
    /// Idle power of one member (controller, DRAM, NAND standby), W.
    pub idle_w: f64,
}

const GB: u64 = 1_000_000_000;
/// Idle power of one ioDimm (FPGA controller, DRAM, NAND standby), W: an
/// assumption (docs/MODEL.md).
const IODIMM_IDLE_W: f64 = 5.0;
/// Idle power of a whole controller-FTL card, W: the Intel SSD 910's data
/// sheet (8 W typical), assumed for the other comparables.
const CARD_IDLE_W: f64 = 8.0;
/// PCIe 2.0 ×4: 4 lanes × 500 MB/s after 8b/10b, ×0.8 for TLP overhead.
const PCIE2_X4: u64 = 1_600_000_000;
/// Host costs of the first-generation VSL, calibrated on the ioDrive Duo
/// 640 GB MLC 4K QD1 figures (see docs/MODEL.md).
const GEN1_HOST_READ_NS: u64 = 26_000;
const GEN1_HOST_WRITE_NS: u64 = 34_000;

/// Host driver cost of a card whose FTL runs on the card (a RAID / bridge
/// driver): an assumption, of the order of a plain block driver's.
const RAID_DRIVER_NS: u64 = 8_000;

/// One SATA/SAS SSD controller's NAND (SandForce, Intel): 8 channels, no
/// die-level parity channel.
const fn eight_channels(banks: u32, planes: u32, blocks: u32, pages: u32, page: u32) -> Geometry {
    Geometry {
        channels: 8,
        parity_channels: 0,
        banks,
        planes,
        blocks_per_plane: blocks,
        pages_per_block: pages,
        page_bytes: page,
    }
}

/// A single-controller card with a wide native NAND interface (Micron's
/// 32-channel ASIC, Huawei's and Virident's FPGAs): `parity` of the
/// `channels` hold die-level parity (RAIN, RAID 5, 7+1).
const fn native(
    channels: u32,
    parity: u32,
    banks: u32,
    blocks: u32,
    pages: u32,
    page: u32,
) -> Geometry {
    Geometry {
        channels,
        parity_channels: parity,
        banks,
        planes: 2,
        blocks_per_plane: blocks,
        pages_per_block: pages,
        page_bytes: page,
    }
}

/// PCIe 2.0 x8: 8 lanes x 500 MB/s after 8b/10b, x0.8 for TLP overhead.
const PCIE2_X8: u64 = 3_200_000_000;

const fn lockstep(banks: u32, planes: u32, blocks: u32, pages: u32, page: u32) -> Geometry {
    Geometry {
        channels: 25,
        parity_channels: 1,
        banks,
        planes,
        blocks_per_plane: blocks,
        pages_per_block: pages,
        page_bytes: page,
    }
}

pub static PRESETS: &[Preset] = &[
    Preset {
        name: "iodrive-duo-640-mlc",
        description: "ioDrive Duo 640 GB MLC (2009): 2 ioDimms, each 25 x 16 GB MLC packages",
        members: 2,
        timing: CellTiming::MLC_2009,
        geometry: lockstep(4, 2, 4096, 128, 4096),
        stock_bytes: 320 * GB,
        datasheet: DataSheet {
            read_mb_s: 1500,
            write_mb_s: 1000,
            read_iops_512: Some(196_000),
            write_iops_512: Some(285_000),
            read_iops_4k: None,
            write_iops_4k: None,
            read_latency_us: Some(29),
            write_latency_us: Some(29),
        },
        link_bytes_per_s: PCIE2_X4,
        host_read_ns: GEN1_HOST_READ_NS,
        host_write_ns: GEN1_HOST_WRITE_NS,
        host_ftl: true,
        compression: false,
        source: "SYSTEM.md §2 (data sheet figures as quoted in the reviews)",
        slot_powered: false,
        cooling_share: 1.0,
        idle_w: IODIMM_IDLE_W,
    },
    Preset {
        name: "iodrive-duo-320-slc",
        description: "ioDrive Duo 320 GB SLC (2009): 2 ioDimms, each 25 x 8 GB SLC packages",
        members: 2,
        timing: CellTiming::SLC_2009,
        geometry: lockstep(4, 2, 4096, 64, 4096),
        stock_bytes: 160 * GB,
        datasheet: DataSheet {
            read_mb_s: 1500,
            write_mb_s: 1500,
            read_iops_512: Some(261_000),
            write_iops_512: Some(262_000),
            read_iops_4k: None,
            write_iops_4k: None,
            read_latency_us: Some(26),
            write_latency_us: Some(26),
        },
        link_bytes_per_s: PCIE2_X4,
        host_read_ns: GEN1_HOST_READ_NS,
        host_write_ns: GEN1_HOST_WRITE_NS,
        host_ftl: true,
        compression: false,
        source: "SYSTEM.md §2 (data sheet figures as quoted in the reviews)",
        slot_powered: false,
        cooling_share: 1.0,
        idle_w: IODIMM_IDLE_W,
    },
    Preset {
        name: "iodrive-duo-640-slc",
        description: "ioDrive Duo 640 GB SLC (2009): 2 ioDimms, each 25 x 16 GB SLC packages",
        members: 2,
        timing: CellTiming::SLC_2009,
        geometry: lockstep(8, 2, 4096, 64, 4096),
        stock_bytes: 320 * GB,
        datasheet: DataSheet {
            read_mb_s: 1500,
            write_mb_s: 1500,
            read_iops_512: Some(252_000),
            write_iops_512: Some(236_000),
            read_iops_4k: None,
            write_iops_4k: None,
            read_latency_us: Some(26),
            write_latency_us: Some(26),
        },
        link_bytes_per_s: PCIE2_X4,
        host_read_ns: GEN1_HOST_READ_NS,
        host_write_ns: GEN1_HOST_WRITE_NS,
        host_ftl: true,
        compression: false,
        source: "SYSTEM.md §2 (data sheet figures as quoted in the reviews)",
        slot_powered: false,
        cooling_share: 1.0,
        idle_w: IODIMM_IDLE_W,
    },
    Preset {
        name: "iodrive-duo-1280-mlc",
        description: "ioDrive Duo 1.28 TB MLC (2010): 2 ioDimms, each 25 x 32 GB MLC packages",
        members: 2,
        timing: CellTiming::MLC_2009,
        geometry: lockstep(8, 2, 4096, 128, 4096),
        stock_bytes: 640 * GB,
        datasheet: DataSheet {
            read_mb_s: 1500,
            write_mb_s: 1100,
            read_iops_512: Some(185_000),
            write_iops_512: Some(278_000),
            read_iops_4k: None,
            write_iops_4k: None,
            read_latency_us: Some(30),
            write_latency_us: Some(30),
        },
        link_bytes_per_s: PCIE2_X4,
        host_read_ns: GEN1_HOST_READ_NS,
        host_write_ns: GEN1_HOST_WRITE_NS,
        host_ftl: true,
        compression: false,
        source: "SYSTEM.md §2 (data sheet figures as quoted in the reviews)",
        slot_powered: false,
        cooling_share: 1.0,
        idle_w: IODIMM_IDLE_W,
    },
    Preset {
        name: "iodrive2-duo-2400-mlc",
        description: "ioDrive2 Duo 2.4 TB MLC (2012): 2 devices, each 25 x 64 GB MLC packages",
        members: 2,
        timing: CellTiming::MLC_2012,
        geometry: lockstep(8, 2, 2048, 256, 8192),
        stock_bytes: 1200 * GB,
        datasheet: DataSheet {
            read_mb_s: 3000,
            write_mb_s: 2500,
            read_iops_512: Some(540_000),
            write_iops_512: Some(1_100_000),
            read_iops_4k: Some(480_000),
            write_iops_4k: Some(490_000),
            read_latency_us: Some(68),
            write_latency_us: Some(15),
        },
        // PCIe 2.0 x8 card, split x4 per device.
        link_bytes_per_s: PCIE2_X4,
        // Host costs from the data-sheet latencies (see docs/MODEL.md).
        host_read_ns: 12_000,
        host_write_ns: 10_000,
        host_ftl: true,
        compression: false,
        source: "SYSTEM.md §2 (data sheet figures as quoted in the reviews)",
        slot_powered: false,
        // The heat sink is sized for the member's flat-out write power
        // as on the first generation (settling near 60 °C at 25 °C and
        // 300 LFM): 5 W + 1.25 GB/s × 16 nJ/B = 25 W against 13 W.
        cooling_share: 25.0 / 13.0,
        idle_w: IODIMM_IDLE_W,
    },
    Preset {
        name: "iodrive-160-slc",
        description: "ioDrive 160 GB SLC (2008): one device, 25 packages, 25 % reserved",
        members: 1,
        timing: CellTiming::SLC_2009,
        geometry: lockstep(4, 2, 3277, 64, 4096),
        stock_bytes: 120 * GB,
        datasheet: DataSheet {
            read_mb_s: 700,
            write_mb_s: 600,
            read_iops_512: None,
            write_iops_512: None,
            read_iops_4k: None,
            write_iops_4k: None,
            read_latency_us: None,
            write_latency_us: None,
        },
        link_bytes_per_s: PCIE2_X4,
        host_read_ns: GEN1_HOST_READ_NS,
        host_write_ns: GEN1_HOST_WRITE_NS,
        host_ftl: true,
        compression: false,
        source: "SYSTEM.md §2 (data sheet figures as quoted in the reviews)",
        slot_powered: false,
        cooling_share: 1.0,
        idle_w: IODIMM_IDLE_W,
    },
    // The reviews' comparable cards: RAID 0 of SandForce SSD controllers
    // behind a PCIe bridge, each with its own on-card FTL. A member is one
    // SandForce controller with its 8 NAND channels (no die-level parity
    // channel: RAISE is modelled as part of the reserved space).
    Preset {
        name: "warpdrive-slp300",
        description: "LSI WarpDrive SLP-300 (2011): 300 GB SLC, 6 SandForce SF-1500 controllers in RAID 0 behind an LSI SAS2008",
        members: 6,
        timing: CellTiming::SLC_2009,
        geometry: eight_channels(2, 2, 8192, 64, 4096),
        stock_bytes: 50 * GB,
        datasheet: DataSheet {
            read_mb_s: 1400,
            write_mb_s: 1200,
            read_iops_512: None,
            write_iops_512: None,
            read_iops_4k: Some(240_000),
            write_iops_4k: Some(200_000),
            read_latency_us: Some(50),
            write_latency_us: Some(50),
        },
        link_bytes_per_s: 3_200_000_000 / 6,
        host_read_ns: RAID_DRIVER_NS,
        host_write_ns: RAID_DRIVER_NS,
        host_ftl: false,
        compression: true,
        source: "LSI WarpDrive SLP-300 product brief as quoted in the 2011 reviews (1.4/1.2 GB/s, 240K/200K 4K IOPS, <50 us); figures recalled, not re-checked against the original sheet",
        slot_powered: true,
        cooling_share: 2.0 / 6.0,
        idle_w: CARD_IDLE_W / 6.0,
    },
    Preset {
        name: "zdrive-r4-cm88",
        description: "OCZ Z-Drive R4 CM88 1.6 TB (2011): MLC, 8 SandForce SF-2282 controllers in RAID 0 behind OCZ's VCA 2.0 PCIe bridge",
        members: 8,
        timing: CellTiming::MLC_2012,
        geometry: eight_channels(4, 2, 2048, 256, 8192),
        stock_bytes: 200 * GB,
        datasheet: DataSheet {
            read_mb_s: 2800,
            write_mb_s: 2600,
            read_iops_512: None,
            write_iops_512: None,
            read_iops_4k: Some(410_000),
            write_iops_4k: Some(275_000),
            read_latency_us: None,
            write_latency_us: None,
        },
        link_bytes_per_s: 3_200_000_000 / 8,
        host_read_ns: RAID_DRIVER_NS,
        host_write_ns: RAID_DRIVER_NS,
        host_ftl: false,
        compression: true,
        source: "OCZ Z-Drive R4 CM88 product sheet as quoted in the 2011-2012 reviews (2.8/2.6 GB/s, 410K/275K 4K IOPS, compressible data); figures recalled, not re-checked against the original sheet",
        slot_powered: true,
        cooling_share: 2.0 / 8.0,
        idle_w: CARD_IDLE_W / 8.0,
    },
    // Cards with one controller and its own FTL over a wide NAND array.
    Preset {
        name: "micron-p320h-700",
        description: "Micron RealSSD P320h 700 GB (2011): SLC 34 nm, one 32-channel Micron/IDT ASIC, RAIN parity, on-card FTL",
        members: 1,
        timing: CellTiming::SLC_2011,
        // 64 packages x 8 dies of 16 Gb = 1 TiB raw; RAIN assumed 7+1.
        geometry: native(32, 4, 16, 4096, 64, 4096),
        stock_bytes: 700 * GB,
        datasheet: DataSheet {
            read_mb_s: 3200,
            write_mb_s: 1900,
            read_iops_512: None,
            write_iops_512: None,
            read_iops_4k: Some(785_000),
            write_iops_4k: Some(205_000),
            read_latency_us: Some(47),
            write_latency_us: Some(311),
        },
        link_bytes_per_s: PCIE2_X8,
        host_read_ns: RAID_DRIVER_NS,
        host_write_ns: RAID_DRIVER_NS,
        host_ftl: false,
        compression: false,
        source: "Micron P320h HHHL data sheet, rev. V 8/2014, table 2 (700GB: 3.2/1.9 GB/s, 785K/205K 4K IOPS steady state at QD 256, 47 us read / 311 us non-posted write); table 1 (64 packages x 8 dies of 16 Gb, 34 nm SLC). RAIN stripe width assumed 7+1",
        slot_powered: true,
        cooling_share: 2.0,
        idle_w: CARD_IDLE_W / 1.0,
    },
    Preset {
        name: "micron-p420m-1400",
        description: "Micron P420m 1.4 TB (2013): MLC 25 nm, one 32-channel Micron/IDT ASIC, RAIN parity, on-card FTL",
        members: 1,
        timing: CellTiming::MLC_2012,
        // 64 packages x 8 dies of 32 Gb = 2 TiB raw; RAIN assumed 7+1.
        geometry: native(32, 4, 16, 1024, 256, 8192),
        stock_bytes: 1400 * GB,
        datasheet: DataSheet {
            read_mb_s: 3300,
            write_mb_s: 630,
            read_iops_512: None,
            write_iops_512: None,
            read_iops_4k: Some(750_000),
            write_iops_4k: Some(95_000),
            read_latency_us: Some(100),
            write_latency_us: Some(13),
        },
        link_bytes_per_s: PCIE2_X8,
        host_read_ns: RAID_DRIVER_NS,
        host_write_ns: RAID_DRIVER_NS,
        host_ftl: false,
        compression: false,
        source: "Micron P420m HHHL data sheet, rev. 8/2014 (1.4TB: 3.3 GB/s / 630 MB/s, 750K/95K 4K IOPS steady state, <100 us read, 13 us posted write, 9.2 PB 4K endurance); Tom's Hardware P420m review (64 packages x 8 dies of 32 Gb, 2048 GB raw). RAIN stripe width assumed 7+1",
        slot_powered: true,
        cooling_share: 2.0,
        idle_w: CARD_IDLE_W / 1.0,
    },
    Preset {
        name: "huawei-es3000-1200",
        description: "Huawei Tecal ES3000 1.2 TB (2013): MLC, FPGA controllers presenting one pool, RAID 5 across channels, on-card FTL",
        members: 1,
        timing: CellTiming::MLC_2012,
        // Raw capacity assumed ~1.65 TB (32 channels x 12 dies of 32 Gb).
        geometry: native(32, 1, 12, 1024, 256, 8192),
        stock_bytes: 1200 * GB,
        datasheet: DataSheet {
            read_mb_s: 3200,
            write_mb_s: 2800,
            read_iops_512: None,
            write_iops_512: None,
            read_iops_4k: None,
            write_iops_4k: None,
            read_latency_us: Some(49),
            write_latency_us: Some(8),
        },
        link_bytes_per_s: PCIE2_X8,
        host_read_ns: RAID_DRIVER_NS,
        host_write_ns: RAID_DRIVER_NS,
        host_ftl: false,
        compression: false,
        source: "StorageReview, Huawei Tecal ES3000 review (family maxima: 3.2 GB/s read, 2.8 GB/s write, 49 us read / 8 us write latency; RAID 5 engine across channels). These are the family's top figures: 1.2 TB-specific figures and the raw capacity were not found and are assumptions",
        slot_powered: true,
        cooling_share: 2.0,
        idle_w: CARD_IDLE_W / 1.0,
    },
    Preset {
        name: "flashmax2-2200",
        description: "Virident FlashMAX II 2.2 TB (2012): MLC, host FTL (vFAS) like the VSL, 7+1 die-level RAID",
        members: 1,
        timing: CellTiming::MLC_2012,
        // Raw capacity assumed ~3.3 TB (32 channels x 24 dies of 32 Gb).
        geometry: native(32, 4, 24, 1024, 256, 8192),
        stock_bytes: 2200 * GB,
        datasheet: DataSheet {
            // Derived from the 4K read IOPS (325K x 4 KiB): the sequential
            // figures were not found; write assumed equal.
            read_mb_s: 1331,
            write_mb_s: 1331,
            read_iops_512: None,
            write_iops_512: None,
            read_iops_4k: Some(325_000),
            write_iops_4k: None,
            read_latency_us: None,
            write_latency_us: None,
        },
        link_bytes_per_s: PCIE2_X8,
        // A host FTL of the ioDrive2's generation (assumption).
        host_read_ns: 12_000,
        host_write_ns: 10_000,
        host_ftl: true,
        compression: false,
        source: "StorageReview, Virident FlashMAX II MLC review (2.2TB): 325K 4K read IOPS, 200K mixed 75/25 4K IOPS, vFAS host flash management, 7+1 RAID. Sequential bandwidth derived from the 4K read IOPS; write bandwidth and raw capacity are assumptions",
        slot_powered: true,
        cooling_share: 2.0,
        idle_w: CARD_IDLE_W / 1.0,
    },
    Preset {
        name: "intel-ssd-910-800",
        description: "Intel SSD 910 800 GB (2012): HET MLC 25 nm, 4 x 200 GB modules (Intel/Hitachi controllers) behind an LSI SAS2008 bridge",
        members: 4,
        timing: CellTiming::MLC_2012,
        // Raw per module assumed ~412 GB (8 channels x 12 dies of 32 Gb):
        // HET keeps about half the NAND spare.
        geometry: eight_channels(12, 2, 1024, 256, 8192),
        stock_bytes: 200 * GB,
        datasheet: DataSheet {
            read_mb_s: 2000,
            write_mb_s: 1000,
            read_iops_512: None,
            write_iops_512: None,
            read_iops_4k: Some(180_000),
            write_iops_4k: Some(75_000),
            read_latency_us: Some(65),
            write_latency_us: Some(65),
        },
        link_bytes_per_s: PCIE2_X8 / 4,
        host_read_ns: RAID_DRIVER_NS,
        host_write_ns: RAID_DRIVER_NS,
        host_ftl: false,
        compression: false,
        source: "Intel SSD 910 Series product specification (800 GB, default mode: 2 GB/s read, 1 GB/s write, 180K/75K 4K IOPS at QD 32 per module, <65 us latency, 14 PB endurance); Tom's Hardware SSD 910 review (modules, SAS bridge). Raw NAND per module is an assumption",
        slot_powered: true,
        cooling_share: 2.0 / 4.0,
        idle_w: CARD_IDLE_W / 4.0,
    },
];

impl Preset {
    pub fn by_name(name: &str) -> Option<&'static Preset> {
        PRESETS.iter().find(|p| p.name == name)
    }

    pub fn names() -> Vec<&'static str> {
        PRESETS.iter().map(|p| p.name).collect()
    }

    /// Controller per-command occupancy for reads and writes: the inverse of
    /// the data sheet's 512 B IOPS per member. Where the data sheet gives
    /// none, the read/write bandwidth at 4 KiB is used instead.
    pub fn command_ns(&self) -> (u64, u64) {
        let m = self.members as u64;
        let per = |iops: Option<u32>, mb_s: u32| -> u64 {
            let iops = iops
                .map(|v| v as u64)
                .unwrap_or(mb_s as u64 * 1_000_000 / 4096);
            1_000_000_000 * m / iops
        };
        let d = &self.datasheet;
        (
            per(d.read_iops_512.or(d.read_iops_4k), d.read_mb_s),
            per(d.write_iops_512.or(d.write_iops_4k), d.write_mb_s),
        )
    }

    /// Controller data-path bandwidth per member, bytes/s (data sheet / members).
    pub fn datapath_bytes_per_s(&self) -> (u64, u64) {
        let m = self.members as u64;
        (
            self.datasheet.read_mb_s as u64 * 1_000_000 / m,
            self.datasheet.write_mb_s as u64 * 1_000_000 / m,
        )
    }
}

/// Low-level format of each member.
#[derive(Copy, Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    Stock,
    /// High-performance mode: 64 % of raw (256 GB per 400 GB-raw ioDimm).
    Hp,
    /// Improved write: 70 % of the stock capacity.
    ImprovedWrite,
    /// Maximum write: 50 % of the stock capacity.
    MaxWrite,
    /// An explicit capacity per member, bytes.
    Capacity(u64),
    /// Over-provisioning as a fraction (0..1) of the usable physical space.
    Overprovision(f64),
}

impl Format {
    pub fn parse(s: &str) -> Result<Format, String> {
        match s {
            "stock" => Ok(Format::Stock),
            "hp" | "high-performance" => Ok(Format::Hp),
            "improved-write" | "improved" => Ok(Format::ImprovedWrite),
            "max-write" | "maximum-write" => Ok(Format::MaxWrite),
            _ => Err(format!(
                "unknown format '{s}' (expected stock, hp, improved-write or max-write)"
            )),
        }
    }

    pub fn label(&self) -> String {
        match self {
            Format::Stock => "stock".into(),
            Format::Hp => "hp".into(),
            Format::ImprovedWrite => "improved-write".into(),
            Format::MaxWrite => "max-write".into(),
            Format::Capacity(b) => format!("capacity:{b}"),
            Format::Overprovision(f) => format!("op:{:.1}%", f * 100.0),
        }
    }
}

/// Every built-in preset.
pub fn presets() -> &'static [Preset] {
    PRESETS
}
