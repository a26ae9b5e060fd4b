use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Latency accumulator: exact count, mean, max and standard deviation;
/// percentiles from an HDR histogram (3 significant digits).
#[derive(Clone)]
pub struct LatencyStats {
    n: u64,
    sum_ns: u128,
    sum_sq: f64,
    max_ns: u64,
    hist: Histogram<u64>,
}

impl Default for LatencyStats {
    fn default() -> Self {
        LatencyStats {
            n: 0,
            sum_ns: 0,
            sum_sq: 0.0,
            max_ns: 0,
            // 1 ns .. 1 hour
            hist: Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid bounds"),
        }
    }
}

impl std::fmt::Debug for LatencyStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "LatencyStats {{ n: {}, mean_us: {:.3} }}",
            self.n,
            self.mean_us()
        )
    }
}

impl LatencyStats {
    /// Counts per logarithmic bucket, four buckets per decade from 1 µs:
    /// (upper bound in µs, count), empty buckets included between the
    /// first and the last non-empty one (the PTS response-time histogram).
    pub fn log_bins_us(&self) -> Vec<(f64, u64)> {
        if self.n == 0 {
            return Vec::new();
        }
        // Bucket k holds (10^((k-1)/4), 10^(k/4)] µs; bucket 0 all ≤ 1 µs.
        let bucket = |ns: u64| -> usize {
            let us = ns as f64 / 1e3;
            if us <= 1.0 {
                0
            } else {
                (us.log10() * 4.0).ceil().max(0.0) as usize
            }
        };
        let mut counts = vec![0u64; bucket(self.hist.max()) + 1];
        for v in self.hist.iter_recorded() {
            counts[bucket(v.value_iterated_to())] += v.count_at_value();
        }
        let first = counts.iter().position(|&c| c > 0).unwrap_or(0);
        counts
            .into_iter()
            .enumerate()
            .skip(first)
            .map(|(k, c)| (10f64.powf(k as f64 / 4.0), c))
            .collect()
    }

    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.n += 1;
        self.sum_ns += ns as u128;
        self.sum_sq += (ns as f64) * (ns as f64);
        self.max_ns = self.max_ns.max(ns);
        self.hist.saturating_record(ns.max(1));
    }

    pub fn count(&self) -> u64 {
        self.n
    }

    pub fn mean_us(&self) -> f64 {
        if self.n == 0 {
            return 0.0;
        }
        self.sum_ns as f64 / self.n as f64 / 1e3
    }

    pub fn stddev_us(&self) -> f64 {
        if self.n < 2 {
            return 0.0;
        }
        let mean = self.sum_ns as f64 / self.n as f64;
        let var = (self.sum_sq / self.n as f64 - mean * mean).max(0.0);
        var.sqrt() / 1e3
    }

    pub fn max_us(&self) -> f64 {
        self.max_ns as f64 / 1e3
    }

    pub fn percentile_us(&self, q: f64) -> f64 {
        if self.n == 0 {
            return 0.0;
        }
        self.hist.value_at_quantile(q) as f64 / 1e3
    }

    pub fn merge(&mut self, other: &LatencyStats) {
        self.n += other.n;
        self.sum_ns += other.sum_ns;
        self.sum_sq += other.sum_sq;
        self.max_ns = self.max_ns.max(other.max_ns);
        self.hist.add(&other.hist).expect("same bounds");
    }

    pub fn reset(&mut self) {
        self.n = 0;
        self.sum_ns = 0;
        self.sum_sq = 0.0;
        self.max_ns = 0;
        self.hist.reset();
    }
}

/// Statistics of one reporting interval (or of a whole run).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct IntervalStats {
    /// End of the interval, seconds of virtual time since the run started.
    pub t_s: f64,
    pub ios: u64,
    pub iops: f64,
    pub read_iops: f64,
    pub write_iops: f64,
    pub mb_per_s: f64,
    pub lat_avg_us: f64,
    pub lat_max_us: f64,
    pub lat_stddev_us: f64,
    pub lat_p50_us: f64,
    /// sysbench reports the 95th percentile.
    pub lat_p95_us: f64,
    pub lat_p99_us: f64,
    pub lat_p999_us: f64,
    pub lat_p9999_us: f64,
    pub write_amplification: f64,
    pub gc_pages_moved: u64,
}

impl IntervalStats {
    #[allow(clippy::too_many_arguments)]
    pub fn from_parts(
        t_s: f64,
        secs: f64,
        lat: &LatencyStats,
        reads: u64,
        writes: u64,
        bytes: u64,
        wa: f64,
        gc_moved: u64,
    ) -> IntervalStats {
        let secs = secs.max(1e-12);
        IntervalStats {
            t_s,
            ios: lat.count(),
            iops: lat.count() as f64 / secs,
            read_iops: reads as f64 / secs,
            write_iops: writes as f64 / secs,
            mb_per_s: bytes as f64 / secs / 1e6,
            lat_avg_us: lat.mean_us(),
            lat_max_us: lat.max_us(),
            lat_stddev_us: lat.stddev_us(),
            lat_p50_us: lat.percentile_us(0.50),
            lat_p95_us: lat.percentile_us(0.95),
            lat_p99_us: lat.percentile_us(0.99),
            lat_p999_us: lat.percentile_us(0.999),
            lat_p9999_us: lat.percentile_us(0.9999),
            write_amplification: wa,
            gc_pages_moved: gc_moved,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_moments_and_percentiles() {
        let mut s = LatencyStats::default();
        for v in [1000u64, 2000, 3000, 4000] {
            s.record(v);
        }
        assert_eq!(s.count(), 4);
        assert!((s.mean_us() - 2.5).abs() < 1e-9);
        assert!((s.stddev_us() - 1.118033988).abs() < 1e-6);
        assert_eq!(s.max_us(), 4.0);
        assert!((s.percentile_us(0.5) - 2.0).abs() < 0.01);
        let mut t = LatencyStats::default();
        t.record(10_000);
        s.merge(&t);
        assert_eq!(s.max_us(), 10.0);
        s.reset();
        assert_eq!(s.count(), 0);
    }
}
