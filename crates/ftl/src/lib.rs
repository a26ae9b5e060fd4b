//! The VSL: a host-resident, log-structured flash translation layer.
//!
//! - [`Vsl`]: one ioMemory device's FTL: the sector-granular
//!   logical-to-physical map in host RAM ([`Vsl::host_ram_bytes`]), the
//!   physical-to-logical record of every programmed slot (what the
//!   out-of-band area of each page stores on the card), the block manager
//!   (per-erase-unit valid counts, a free list ordered by wear), garbage
//!   collection, static wear levelling, TRIM, and the power-cut-protected
//!   write buffer that acknowledges writes before they are programmed.
//!   It is composed of owned parts with private fields (issue 28):
//!   `Mapping` (`vsl/mapping.rs`), `BlockManager` (`vsl/blocks.rs`),
//!   `WriteBuffer` (`vsl/buffer.rs`), `Gc` (`vsl/gc.rs`) and the NAND
//!   array (docs/ARCHITECTURE.md, "The FTL's parts").
//! - [`VictimPolicy`]: the seam where GC's victim is chosen, from a
//!   read-only view of the erase units ([`Candidates`]); the built-ins are
//!   [`GcPolicy`] (greedy, cost-benefit, d-choices, FIFO, windowed greedy;
//!   [`POLICIES`] lists them with their sources), and
//!   [`Vsl::set_victim_policy`] installs one of your own.
//! - [`Placement`]: the seam where each write's stream (frontier, pool)
//!   is chosen; built-ins [`PlacementSpec`] (single, hot-cold, streams;
//!   [`PLACEMENTS`]), installed with [`Vsl::set_placement`].
//! - [`FtlConfig`]: geometry, timing, formatted size and the policy knobs.
//! - [`FtlStats`]: host and media counters (write amplification, GC moves).
//! - [`MediaObserver`]: the one seam for whatever mirrors the media
//!   ([`Vsl::add_observer`]): [`MediaLog`] records the [`MediaEvent`]s a
//!   data store keyed by physical slot replays ([`Vsl::enable_media_log`]),
//!   [`protect::PowerLog`] the events of the power-cut model.
//! - [`OobRecord`]: map recovery from the out-of-band records a store
//!   scans back ([`Vsl::recover`]).
//!
//! ## Physical addressing
//!
//! A physical slot address (`psa`, `u32`) names one sector-sized slot:
//! `psa = leb * slots_per_leb + unit_in_leb * slots_per_unit + slot`. Write
//! unit `u` of an erase unit lives on bank `u % banks`, so the log stripes
//! across every die. Writes append at one frontier; when a write unit fills
//! it is programmed, and its host slots leave the write buffer when the
//! program completes.
//!
//! ## Garbage collection and stalls
//!
//! [`GcMode::Paced`] (the default): below the high watermark
//! (`gc_background_lebs`) the groomer collects one erase unit at a time, a
//! few sectors per host write, at a pace set by free space and bounded by a
//! background budget (`gc_share` of the array's move capacity). When the
//! budget cannot keep up, free space reaches the low watermark
//! (`gc_reserve_lebs`) and the host write that opens the next erase unit
//! waits while the current one is collected: that wait is where the
//! reviews' steady-state latency spikes come from, and why more
//! over-provisioning removes them. [`GcMode::Legacy`]: idle-time GC plus
//! stop-the-world collection at the low watermark. Reads may overtake
//! queued programs ([`ReadPolicy`]).
//!

#[doc(hidden)]
pub mod fuzzing;
pub mod protect;
mod vsl;

pub use nand::ReadPolicy;
pub use vsl::{
    content_tag, poisson_tail, Candidate, Candidates, FtlConfig, FtlError, FtlStats, GcMode,
    GcPolicy, MediaConfig, MediaEvent, MediaLog, MediaObserver, OobRecord, PolicyInfo, PowerEvent,
    ReliabilityConfig, ReliabilityStats, VictimPolicy, Vsl, D_CHOICES_MAX, IDLE_AFTER, POLICIES,
    REBUILD_SHARE,
};
pub use vsl::{
    split_spare, HotCold, Placement, PlacementInfo, PlacementSpec, PoolStats, Streams, PLACEMENTS,
};

/// Steady-state write amplification of greedy GC under uniform random
/// single-sector writes, in the large-block limit:
/// `WA = α / (α + W₀(−α·e^(−α)))`, `α = physical / user` space, W₀ the
/// principal branch of Lambert W. From X. Xiang and B. Kurkoski, "An
/// improved analytic expression for write amplification in NAND flash"
/// (ICNC 2012); the same fixed point as P. Desnoyers, "Analytic models of
/// SSD write performance" (ACM TOS 2014). `spare` is 1 − user/physical.
pub fn greedy_wa_limit(spare: f64) -> f64 {
    assert!(
        spare > 0.0 && spare < 1.0,
        "spare factor {spare} out of (0, 1)"
    );
    let alpha = 1.0 / (1.0 - spare);
    alpha / (alpha + lambert_w0(-alpha * (-alpha).exp()))
}

/// Principal branch of Lambert W on [−1/e, ∞) by Halley's iteration.
pub fn lambert_w0(x: f64) -> f64 {
    let e_inv = -(-1.0f64).exp();
    assert!(x >= e_inv - 1e-12, "lambert_w0 undefined at {x}");
    // Start from the branch-point series near −1/e, log-ish for large x.
    let mut w = if x < -0.25 {
        let p = (2.0 * (std::f64::consts::E * x + 1.0)).max(0.0).sqrt();
        -1.0 + p - p * p / 3.0
    } else if x < 3.0 {
        0.5 * x
    } else {
        x.ln() - x.ln().ln()
    };
    for _ in 0..64 {
        let ew = w.exp();
        let f = w * ew - x;
        let denom = ew * (w + 1.0) - (w + 2.0) * f / (2.0 * w + 2.0);
        if denom == 0.0 {
            break;
        }
        let next = w - f / denom;
        if (next - w).abs() <= 1e-15 * (1.0 + w.abs()) {
            return next;
        }
        w = next;
    }
    w
}

#[cfg(test)]
mod formula_tests {
    use super::*;

    #[test]
    fn lambert_w0_inverts_w_exp_w() {
        for &w in &[-0.9, -0.5, 0.0, 0.3, 1.0, 2.5] {
            let x: f64 = w * f64::exp(w);
            assert!((lambert_w0(x) - w).abs() < 1e-9, "w={w}");
        }
    }

    #[test]
    fn wa_limit_matches_published_table() {
        // Values quoted in the issue from Xiang & Kurkoski / Desnoyers.
        for (spare, wa) in [
            (0.07, 7.32),
            (0.20, 2.69),
            (0.28, 1.99),
            (0.36, 1.61),
            (0.50, 1.26),
        ] {
            let got = greedy_wa_limit(spare);
            assert!((got - wa).abs() / wa < 0.01, "spare {spare}: {got} vs {wa}");
        }
    }
}
