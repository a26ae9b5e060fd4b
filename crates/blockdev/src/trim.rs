//! The reads' answer lead, trimmed in a closed loop against the block
//! layer's own latency (`--path-trim`, `docs/ATTACH_PERF.md`, sixth round).
//!
//! An I/O is answered ahead of the model's completion by the kernel path's
//! round trip probed at attach ([`crate::wakeup::probe`]), measured with one
//! I/O in flight. Under concurrency that path takes longer (the client, the
//! loop worker, the FUSE queues and the completion softirq share the CPUs),
//! and the client then sees more than the model's latency. The loop
//! device's own statistics (`/sys/block/loopN/stat`: completed reads and the
//! summed time from each request's start in the block layer to its end)
//! give the read latency the device really delivers. Every [`WINDOW`] the
//! [`Trimmer`] compares its mean with the mean of the model's latency of
//! the reads answered in the same window and moves an extra lead by
//! [`GAIN`] of the difference: an integral controller, so the loop device's
//! mean read latency settles on the model's wherever the daemon can still
//! answer early enough. Where it cannot (the stack at its ceiling, or the
//! model's latency shorter than the path), the lead stops at [`MAX_EXTRA`]
//! and the answers go out on arrival, as before. The total lead is never
//! negative: a read is never held past the model's completion.
//!
//! Writes keep the probed lead: their mean at the loop device includes the
//! journal's flush-and-FUA writes, which wait for a store sync (up to
//! 100 ms), and a mean over a window is then set by a few of them (a trial
//! led ordinary writes by 105-440 µs at 4 and 16 threads).

use crate::counters::Counters;
use std::sync::atomic::{AtomicI64, Ordering::Relaxed};
use std::time::{Duration, Instant};

/// Shortest window between two adjustments.
pub const WINDOW: Duration = Duration::from_millis(100);
/// A window is used only with at least this many reads completed both at
/// the loop device and in the daemon.
pub const MIN_IOS: u64 = 64;
/// A window this long without enough reads is dropped unused.
pub const STALE: Duration = Duration::from_secs(2);
/// Fraction of the measured difference taken per window.
pub const GAIN: f64 = 0.5;
/// Largest extra lead.
pub const MAX_EXTRA: Duration = Duration::from_millis(1);

/// The extra lead the trimmer sets for reads.
#[derive(Default)]
pub struct Lead {
    extra_ns: AtomicI64,
}

impl Lead {
    /// The extra lead, ns (negative: less than the probe).
    pub fn extra_ns(&self) -> i64 {
        self.extra_ns.load(Relaxed)
    }

    /// `base` (the probed round trip) plus the extra lead, never negative.
    pub fn total(&self, base: Duration) -> Duration {
        let t = base.as_nanos() as i64 + self.extra_ns();
        Duration::from_nanos(t.max(0) as u64)
    }
}

/// The reads answered and the sum of their model latency, ns
/// ([`Counters::model_read_ns_total`]).
fn model_reads(c: &Counters) -> (u64, u64) {
    (
        c.model_read_count.load(Relaxed),
        c.model_read_ns_total.load(Relaxed),
    )
}

/// Completed reads and their summed block-layer time (ms), from a
/// `/sys/block/<dev>/stat` line.
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct LoopStat {
    pub reads: u64,
    pub read_ms: u64,
}

impl LoopStat {
    /// Parses a block device's `stat` line (field 1 is the completed reads,
    /// field 4 their milliseconds; at least the 11 fields of every kernel).
    pub fn parse(line: &str) -> Option<LoopStat> {
        let f: Vec<u64> = line
            .split_whitespace()
            .map(|w| w.parse().ok())
            .collect::<Option<_>>()?;
        (f.len() >= 11).then(|| LoopStat {
            reads: f[0],
            read_ms: f[3],
        })
    }

    fn read(dev: &str) -> Option<LoopStat> {
        let name = dev.trim_start_matches("/dev/");
        LoopStat::parse(&std::fs::read_to_string(format!("/sys/block/{name}/stat")).ok()?)
    }
}

/// The next extra lead: `extra` moved by [`GAIN`] of how much the device's
/// mean latency exceeds the model's (both ns), within
/// `[-base, MAX_EXTRA]` so that the total lead stays at or above zero.
pub fn next_extra(extra: i64, device_mean_ns: f64, model_mean_ns: f64, base: Duration) -> i64 {
    let max = MAX_EXTRA.as_nanos() as i64;
    let min = -(base.as_nanos() as i64).min(max);
    let step = GAIN * (device_mean_ns - model_mean_ns);
    (extra as f64 + step).round().clamp(min as f64, max as f64) as i64
}

/// Trims one device's [`Lead`] against its loop device's statistics.
pub struct Trimmer {
    dev: String,
    start: Option<(LoopStat, (u64, u64))>,
    since: Instant,
}

impl Trimmer {
    pub fn new(loop_device: &str) -> Trimmer {
        Trimmer {
            dev: loop_device.to_string(),
            start: None,
            since: Instant::now(),
        }
    }

    /// Adjusts `lead` if a window has passed with enough reads answered
    /// (`counters`); `base` is the probed round trip of a small read.
    pub fn step(&mut self, lead: &Lead, counters: &Counters, base: Duration) {
        let Some(stat) = LoopStat::read(&self.dev) else {
            return;
        };
        let now = Instant::now();
        let model = model_reads(counters);
        let Some((s0, m0)) = self.start else {
            (self.start, self.since) = (Some((stat, model)), now);
            return;
        };
        let age = now.duration_since(self.since);
        if age < WINDOW {
            return;
        }
        let reads = stat.reads.saturating_sub(s0.reads);
        let n = model.0.saturating_sub(m0.0);
        if reads >= MIN_IOS && n >= MIN_IOS {
            let device = stat.read_ms.saturating_sub(s0.read_ms) as f64 * 1e6 / reads as f64;
            let mean = model.1.saturating_sub(m0.1) as f64 / n as f64;
            lead.extra_ns
                .store(next_extra(lead.extra_ns(), device, mean, base), Relaxed);
        } else if age < STALE {
            return;
        }
        (self.start, self.since) = (Some((stat, model)), now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_block_stat_line() {
        let line = "  125655081     4865 1860171144 33754907 120448596   868169 \
                    2162275464 89660472        0  6149572 123611198       74        0 \
                    67749072       53    32469   195764\n";
        let s = LoopStat::parse(line).unwrap();
        assert_eq!(s.reads, 125655081);
        assert_eq!(s.read_ms, 33754907);
        assert_eq!(LoopStat::parse("1 2 3 4 5 6 7 8"), None);
        assert_eq!(LoopStat::parse("1 2 x 4 5 6 7 8 9 10 11"), None);
    }

    /// A plant like the attached card: the device's latency is the model's
    /// plus a path cost that grows with the load, less the lead; the lead
    /// settles where the two agree, and stays within its bounds when they
    /// cannot.
    #[test]
    fn the_extra_lead_settles_where_the_device_matches_the_model() {
        let base = Duration::from_micros(25);
        let model = 94_000.0;
        // The path under load takes 55 µs and 0.2 µs more per µs that the
        // answers come earlier (more throughput, more contention).
        let device = |lead_ns: f64| {
            let path = 55_000.0 + 0.2 * lead_ns;
            (model + path - lead_ns).max(path)
        };
        let mut extra = 0i64;
        for _ in 0..40 {
            let lead = base.as_nanos() as f64 + extra as f64;
            extra = next_extra(extra, device(lead), model, base);
        }
        let lead = base.as_nanos() as f64 + extra as f64;
        assert!(
            (device(lead) - model).abs() < 100.0,
            "device {} against the model's {model} (extra {extra})",
            device(lead)
        );
        // A device faster than the model: the lead shrinks, not below zero.
        let mut extra = 0i64;
        for _ in 0..40 {
            extra = next_extra(extra, model - 80_000.0, model, base);
        }
        assert_eq!(extra, -(base.as_nanos() as i64));
        // A device that never catches up: the lead stops at its cap.
        let mut extra = 0i64;
        for _ in 0..40 {
            extra = next_extra(extra, model + 500_000.0, model, base);
        }
        assert_eq!(extra, MAX_EXTRA.as_nanos() as i64);
    }

    #[test]
    fn the_total_lead_is_never_negative_and_only_reads_count() {
        let l = Lead::default();
        assert_eq!(
            l.total(Duration::from_micros(25)),
            Duration::from_micros(25)
        );
        l.extra_ns.store(-40_000, Relaxed);
        assert_eq!(l.total(Duration::from_micros(25)), Duration::ZERO);
        l.extra_ns.store(10_000, Relaxed);
        assert_eq!(
            l.total(Duration::from_micros(25)),
            Duration::from_micros(35)
        );
        let c = Counters::default();
        let t = Instant::now();
        let done = |us: u64| crate::engine::Completion {
            at: t + Duration::from_micros(us),
            submitted: t,
            host: Duration::ZERO,
        };
        c.record(false, t, t, t, done(90));
        c.record(false, t, t, t, done(100));
        c.record(true, t, t, t, done(500));
        assert_eq!(model_reads(&c), (2, 190_000));
    }
}
