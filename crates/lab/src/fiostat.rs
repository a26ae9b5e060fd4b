//! What fio's JSON needs of a run, per direction: completion latencies in
//! fio's own `plat` histogram (fio `stat.h`: 29 groups of 64 buckets, each
//! group twice as wide as the one before, values in ns), its exact
//! min/max/mean/stddev (Welford, sample standard deviation as fio's
//! `calc_lat`), its latency distribution buckets (`io_u_lat_n/u/m`) and
//! per-interval bandwidth and IOPS samples (fio's `bw_*`/`iops_*`).
//!
//! Filled by [`crate::run_fio`] and by the real-target engine; read by the
//! CLI's fio output. Percentiles follow fio's `calc_clat_percentiles`: the
//! first bucket whose running count reaches `p / 100 × N`, reported as the
//! bucket's middle value (`plat_idx_to_val`).

/// fio's FIO_IO_U_PLAT_BITS.
pub const PLAT_BITS: u32 = 6;
/// fio's FIO_IO_U_PLAT_VAL: buckets per group.
pub const PLAT_VAL: u64 = 1 << PLAT_BITS;
/// fio's FIO_IO_U_PLAT_GROUP_NR.
pub const PLAT_GROUP_NR: usize = 29;
/// fio's FIO_IO_U_PLAT_NR: buckets in all.
pub const PLAT_NR: usize = PLAT_GROUP_NR * PLAT_VAL as usize;

/// fio's default `percentile_list`.
pub const PERCENTILES: [f64; 17] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];

/// Upper bounds of fio's `latency_ns` and `latency_us` buckets (a value
/// below 2 goes to the first, 2..3 to the second, …, 750..999 to the last).
pub const LAT_NU_EDGES: [u64; 10] = [2, 4, 10, 20, 50, 100, 250, 500, 750, 1000];
/// The same for `latency_ms`, whose last bucket is ">=2000".
pub const LAT_MS_EDGES: [u64; 11] = [2, 4, 10, 20, 50, 100, 250, 500, 750, 1000, 2000];

/// fio's `plat_val_to_idx`.
pub fn plat_val_to_idx(val: u64) -> usize {
    let msb = if val == 0 {
        0
    } else {
        63 - val.leading_zeros()
    };
    if msb <= PLAT_BITS {
        return val as usize;
    }
    let error_bits = msb - PLAT_BITS;
    let base = ((error_bits + 1) as u64) << PLAT_BITS;
    let offset = (PLAT_VAL - 1) & (val >> error_bits);
    ((base + offset) as usize).min(PLAT_NR - 1)
}

/// fio's `plat_idx_to_val`: the middle of bucket `idx`'s range.
pub fn plat_idx_to_val(idx: usize) -> u64 {
    assert!(idx < PLAT_NR);
    if idx < (PLAT_VAL as usize) << 1 {
        return idx as u64;
    }
    let error_bits = (idx as u64 >> PLAT_BITS) - 1;
    let base = 1u64 << (error_bits + PLAT_BITS as u64);
    let k = idx as u64 % PLAT_VAL;
    // fio: base + ((k + 0.5) * (1 << error_bits)), truncated.
    base + ((k as f64 + 0.5) * (1u64 << error_bits) as f64) as u64
}

/// One interval's share of a direction: bytes and I/Os over `secs`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sample {
    pub secs: f64,
    pub bytes: u64,
    pub ios: u64,
}

/// One direction (read or write) of a run, as fio accounts it.
#[derive(Clone, Debug, PartialEq)]
pub struct FioDir {
    pub ios: u64,
    pub bytes: u64,
    pub min_ns: u64,
    pub max_ns: u64,
    mean: f64,
    s: f64,
    /// fio's `io_u_plat[FIO_CLAT][ddir]`.
    pub plat: Vec<u64>,
    /// Latency distribution: `latency_ns`, `latency_us`, `latency_ms` counts.
    pub lat_ns: [u64; 10],
    pub lat_us: [u64; 10],
    pub lat_ms: [u64; 12],
    /// One per closed interval.
    pub samples: Vec<Sample>,
    cur_bytes: u64,
    cur_ios: u64,
}

impl Default for FioDir {
    fn default() -> Self {
        FioDir {
            ios: 0,
            bytes: 0,
            min_ns: u64::MAX,
            max_ns: 0,
            mean: 0.0,
            s: 0.0,
            plat: vec![0; PLAT_NR],
            lat_ns: [0; 10],
            lat_us: [0; 10],
            lat_ms: [0; 12],
            samples: Vec::new(),
            cur_bytes: 0,
            cur_ios: 0,
        }
    }
}

fn bucket(v: u64, edges: &[u64]) -> usize {
    edges.iter().take_while(|&&e| v >= e).count()
}

impl FioDir {
    #[inline]
    pub fn record(&mut self, lat_ns: u64, len: u64) {
        self.ios += 1;
        self.bytes += len;
        self.cur_ios += 1;
        self.cur_bytes += len;
        self.min_ns = self.min_ns.min(lat_ns);
        self.max_ns = self.max_ns.max(lat_ns);
        // Welford, as fio's add_stat_sample.
        let v = lat_ns as f64;
        let delta = v - self.mean;
        self.mean += delta / self.ios as f64;
        self.s += delta * (v - self.mean);
        self.plat[plat_val_to_idx(lat_ns)] += 1;
        if lat_ns < 1000 {
            self.lat_ns[bucket(lat_ns, &LAT_NU_EDGES[..9])] += 1;
        } else if lat_ns < 1_000_000 {
            self.lat_us[bucket(lat_ns / 1000, &LAT_NU_EDGES[..9])] += 1;
        } else {
            self.lat_ms[bucket(lat_ns / 1_000_000, &LAT_MS_EDGES)] += 1;
        }
    }

    /// Closes an interval of `secs`: one bandwidth/IOPS sample.
    pub fn close_interval(&mut self, secs: f64) {
        self.samples.push(Sample {
            secs,
            bytes: self.cur_bytes,
            ios: self.cur_ios,
        });
        self.cur_bytes = 0;
        self.cur_ios = 0;
    }

    /// Adds `o`'s completions (not its samples: the caller closes intervals).
    pub fn merge(&mut self, o: &FioDir) {
        if o.ios == 0 {
            return;
        }
        let n = self.ios + o.ios;
        let delta = o.mean - self.mean;
        let mean = self.mean + delta * o.ios as f64 / n as f64;
        self.s += o.s + delta * delta * self.ios as f64 * o.ios as f64 / n as f64;
        self.mean = mean;
        self.ios = n;
        self.bytes += o.bytes;
        self.cur_ios += o.cur_ios;
        self.cur_bytes += o.cur_bytes;
        self.min_ns = self.min_ns.min(o.min_ns);
        self.max_ns = self.max_ns.max(o.max_ns);
        for (a, b) in self.plat.iter_mut().zip(&o.plat) {
            *a += b;
        }
        for (a, b) in self.lat_ns.iter_mut().zip(&o.lat_ns) {
            *a += b;
        }
        for (a, b) in self.lat_us.iter_mut().zip(&o.lat_us) {
            *a += b;
        }
        for (a, b) in self.lat_ms.iter_mut().zip(&o.lat_ms) {
            *a += b;
        }
    }

    /// min, max, mean, stddev in ns, as fio's `calc_lat` (all 0 without I/O).
    pub fn moments(&self) -> (u64, u64, f64, f64) {
        if self.ios == 0 {
            return (0, 0, 0.0, 0.0);
        }
        let dev = if self.ios > 1 {
            (self.s / (self.ios - 1) as f64).sqrt()
        } else {
            0.0
        };
        (self.min_ns, self.max_ns, self.mean, dev)
    }

    /// fio's `calc_clat_percentiles` over `list` (percent): one value (ns)
    /// per entry; empty without I/O.
    pub fn percentiles(&self, list: &[f64]) -> Vec<u64> {
        if self.ios == 0 || list.is_empty() {
            return Vec::new();
        }
        let nr = self.ios as f64;
        let mut out = Vec::with_capacity(list.len());
        let mut sum = 0u64;
        let mut j = 0;
        'outer: for (i, &c) in self.plat.iter().enumerate() {
            sum += c;
            while sum as f64 >= list[j] / 100.0 * nr {
                out.push(plat_idx_to_val(i));
                if j == list.len() - 1 {
                    break 'outer;
                }
                j += 1;
            }
        }
        out
    }

    /// fio's json+ `bins`: (bucket value in ns, count) of every non-empty bucket.
    pub fn bins(&self) -> Vec<(u64, u64)> {
        self.plat
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(|(i, &c)| (plat_idx_to_val(i), c))
            .collect()
    }
}

/// A run's reads (`dirs[0]`) and writes (`dirs[1]`), as fio accounts them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FioStats {
    pub dirs: [FioDir; 2],
    /// Open-loop runs: I/Os issued at each of fio's depth levels (1, 2, 4,
    /// 8, 16, 32, >=64 in flight, this one included: `iodepth_level`);
    /// `None` for a closed loop, which keeps its depth full.
    pub depth: Option<[u64; 7]>,
}

impl FioStats {
    /// An I/O issued with `in_flight` I/Os in flight, itself included.
    pub fn record_depth(&mut self, in_flight: usize) {
        let b = match in_flight {
            0 | 1 => 0,
            2..=3 => 1,
            4..=7 => 2,
            8..=15 => 3,
            16..=31 => 4,
            32..=63 => 5,
            _ => 6,
        };
        self.depth.get_or_insert([0; 7])[b] += 1;
    }

    #[inline]
    pub fn record(&mut self, is_read: bool, lat_ns: u64, len: u64) {
        self.dirs[!is_read as usize].record(lat_ns, len);
    }

    pub fn close_interval(&mut self, secs: f64) {
        for d in &mut self.dirs {
            d.close_interval(secs);
        }
    }

    pub fn merge(&mut self, o: &FioStats) {
        for (a, b) in self.dirs.iter_mut().zip(&o.dirs) {
            a.merge(b);
        }
        if let Some(d) = &o.depth {
            let mine = self.depth.get_or_insert([0; 7]);
            for (a, b) in mine.iter_mut().zip(d) {
                *a += b;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plat_buckets_match_fio() {
        // Below 128 every value has its own bucket.
        for v in 0..128 {
            assert_eq!(plat_val_to_idx(v), v as usize);
            assert_eq!(plat_idx_to_val(v as usize), v);
        }
        // 128..255: error_bits 1, buckets of 2 starting at index 128.
        assert_eq!(plat_val_to_idx(128), 128);
        assert_eq!(plat_val_to_idx(129), 128);
        assert_eq!(plat_val_to_idx(130), 129);
        assert_eq!(plat_idx_to_val(128), 129); // 128 + 0.5 * 2
                                               // From fio's output for a real run: bins 860, 900, 924 and 14016.
        for v in [860u64, 900, 924, 14016, 40192, 1236957] {
            let back = plat_idx_to_val(plat_val_to_idx(v));
            let width = 1u64 << (63 - v.leading_zeros()).saturating_sub(PLAT_BITS);
            assert!(back.abs_diff(v) <= width, "{v} -> {back}");
        }
        assert_eq!(plat_idx_to_val(plat_val_to_idx(860)), 860);
        assert_eq!(plat_idx_to_val(plat_val_to_idx(14016)), 14016);
        // Every value maps into the table, and bucket values grow.
        assert_eq!(plat_val_to_idx(u64::MAX), PLAT_NR - 1);
        for i in 1..PLAT_NR {
            assert!(plat_idx_to_val(i) > plat_idx_to_val(i - 1), "{i}");
        }
    }

    #[test]
    fn moments_percentiles_and_buckets() {
        let mut d = FioDir::default();
        for v in 1..=1000u64 {
            d.record(v * 1000, 4096);
        }
        let (min, max, mean, dev) = d.moments();
        assert_eq!((min, max), (1000, 1_000_000));
        assert!((mean - 500_500.0).abs() < 1e-6);
        // Sample standard deviation of 1000..=1_000_000 step 1000.
        assert!((dev - 288_819.436).abs() < 0.01, "{dev}");
        let p = d.percentiles(&[50.0, 99.0, 100.0]);
        assert_eq!(p.len(), 3);
        assert!(p[0].abs_diff(500_000) <= 500_000 / 64, "{p:?}");
        assert!(p[1].abs_diff(990_000) <= 990_000 / 64, "{p:?}");
        assert!(p[2].abs_diff(1_000_000) <= 1_000_000 / 64, "{p:?}");
        // 1 us .. 999 us in latency_us; 1 ms in latency_ms "2".
        assert_eq!(d.lat_us.iter().sum::<u64>(), 999);
        assert_eq!(d.lat_us[9], 250, "750..999 us");
        assert_eq!(d.lat_ms[0], 1);
        assert_eq!(d.bins().iter().map(|b| b.1).sum::<u64>(), 1000);
        // Merging two halves gives the moments of the whole.
        let (mut a, mut b) = (FioDir::default(), FioDir::default());
        for v in 1..=1000u64 {
            if v % 3 == 0 { &mut a } else { &mut b }.record(v * 1000, 4096);
        }
        a.merge(&b);
        let m = a.moments();
        assert_eq!((m.0, m.1), (min, max));
        assert!((m.2 - mean).abs() < 1e-6 && (m.3 - dev).abs() < 1e-6);
        assert_eq!(a.plat, d.plat);
        assert!(FioDir::default().percentiles(&PERCENTILES).is_empty());
    }
}
