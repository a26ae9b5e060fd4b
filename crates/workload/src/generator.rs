use crate::spec::{BlockSizes, Distribution, Pattern, WorkloadSpec};
use sim::Prng;

/// One I/O to issue.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Io {
    pub is_read: bool,
    pub offset: u64,
    pub len: u64,
}

/// Draws I/Os for one thread of a resolved [`WorkloadSpec`].
pub struct Generator {
    read_fraction: f64,
    sequential: bool,
    sizes: Vec<u64>,
    /// Cumulative weights for `sizes`.
    cumulative: Vec<f64>,
    region_start: u64,
    region_len: u64,
    cursor: u64,
    dist: Dist,
    trace: Option<(std::sync::Arc<crate::Trace>, usize)>,
    sector: u64,
}

enum Dist {
    Uniform,
    Zipf(Zipf),
    Zoned(Vec<(f64, f64, f64)>), // (cumulative access, start fraction, size fraction)
}

impl Generator {
    /// `spec` must be resolved. Thread `index` of `threads` starts its
    /// sequential stream at its own share of the region.
    pub fn new(spec: &WorkloadSpec, index: u32, threads: u32) -> Generator {
        let region_len = spec.size.expect("spec is resolved");
        let (sizes, weights): (Vec<u64>, Vec<f64>) = match &spec.block_sizes {
            BlockSizes::Fixed(b) => (vec![*b], vec![1.0]),
            BlockSizes::Split(v) => v.iter().copied().unzip(),
        };
        let mut acc = 0.0;
        let cumulative = weights
            .iter()
            .map(|w| {
                acc += w;
                acc
            })
            .collect();
        let align = sizes[0].min(*sizes.iter().min().unwrap());
        let share = region_len / threads.max(1) as u64 / align * align;
        let dist = match &spec.distribution {
            Distribution::Uniform => Dist::Uniform,
            Distribution::Zipf(theta) => {
                Dist::Zipf(Zipf::new(region_len / sizes[0].max(1), *theta))
            }
            Distribution::Zoned(z) => {
                let mut a = 0.0;
                let mut start = 0.0;
                Dist::Zoned(
                    z.iter()
                        .map(|&(acc, size)| {
                            a += acc;
                            let e = (a, start, size);
                            start += size;
                            e
                        })
                        .collect(),
                )
            }
        };
        let trace = spec.trace.as_ref().map(|t| {
            let start = t.ios.len() * index as usize / threads.max(1) as usize;
            (t.clone(), start)
        });
        Generator {
            trace,
            sector: align,
            read_fraction: spec.read_fraction,
            sequential: spec.pattern == Pattern::Sequential,
            sizes,
            cumulative,
            region_start: spec.offset,
            region_len,
            cursor: share * index as u64,
            dist,
        }
    }

    #[inline]
    pub fn next(&mut self, prng: &mut Prng) -> Io {
        if let Some((trace, at)) = &mut self.trace {
            let t = trace.ios[*at];
            *at = (*at + 1) % trace.ios.len();
            let s = self.sector;
            let len = (t.len.div_ceil(s) * s).min(self.region_len / s * s).max(s);
            let room = (self.region_len - len) / s + 1;
            let offset = self.region_start + (t.offset / s % room) * s;
            return Io {
                is_read: t.is_read,
                offset,
                len,
            };
        }
        let is_read = if self.read_fraction >= 1.0 {
            true
        } else if self.read_fraction <= 0.0 {
            false
        } else {
            prng.chance(self.read_fraction)
        };
        let len = if self.sizes.len() == 1 {
            self.sizes[0]
        } else {
            let u = prng.next_f64();
            let i = self
                .cumulative
                .iter()
                .position(|&c| u < c)
                .unwrap_or(self.sizes.len() - 1);
            self.sizes[i]
        };
        let rel = if self.sequential {
            if self.cursor + len > self.region_len {
                self.cursor = 0;
            }
            let at = self.cursor;
            self.cursor += len;
            at
        } else {
            let slots = self.region_len / len;
            let idx = match &mut self.dist {
                Dist::Uniform => prng.below(slots),
                Dist::Zipf(z) => z.sample_scattered(prng, slots),
                Dist::Zoned(zones) => {
                    let u = prng.next_f64();
                    let &(_, start, size) = zones
                        .iter()
                        .find(|z| u < z.0)
                        .unwrap_or(zones.last().expect("zones"));
                    let first = (start * slots as f64) as u64;
                    let n = ((size * slots as f64) as u64).max(1);
                    (first + prng.below(n)).min(slots - 1)
                }
            };
            idx * len
        };
        Io {
            is_read,
            offset: self.region_start + rel,
            len,
        }
    }
}

/// Zipf sampling by rejection-inversion (W. Hörmann and G. Derflinger,
/// "Rejection-inversion to generate variates from monotone discrete
/// distributions", ACM TOMACS 1996): O(1) per sample for any range.
struct Zipf {
    n: u64,
    s: f64,
    h_x1: f64,
    h_n: f64,
    s_val: f64,
}

impl Zipf {
    fn new(n: u64, s: f64) -> Zipf {
        let n = n.max(1);
        let mut z = Zipf {
            n,
            s,
            h_x1: 0.0,
            h_n: 0.0,
            s_val: 0.0,
        };
        z.h_x1 = z.h_integral(1.5) - 1.0;
        z.h_n = z.h_integral(n as f64 + 0.5);
        z.s_val = 2.0 - z.h_integral_inv(z.h_integral(2.5) - z.h(2.0));
        z
    }

    fn h(&self, x: f64) -> f64 {
        (-self.s * x.ln()).exp()
    }

    fn h_integral(&self, x: f64) -> f64 {
        let lx = x.ln();
        helper_expm1_div((1.0 - self.s) * lx) * lx
    }

    fn h_integral_inv(&self, x: f64) -> f64 {
        let mut t = x * (1.0 - self.s);
        if t < -1.0 {
            t = -1.0; // numerical guard at the range's edge
        }
        (helper_log1p_div(t) * x).exp()
    }

    /// Rank in 1..=n, rank 1 most popular.
    fn sample(&self, prng: &mut Prng) -> u64 {
        for _ in 0..1000 {
            let u = self.h_n + prng.next_f64() * (self.h_x1 - self.h_n);
            let x = self.h_integral_inv(u);
            let k = ((x + 0.5) as u64).clamp(1, self.n);
            let kf = k as f64;
            if kf - x <= self.s_val || u >= self.h_integral(kf + 0.5) - self.h(kf) {
                return k;
            }
        }
        1
    }

    /// A rank scattered over `slots` by a fixed bijection, so hot blocks are
    /// spread over the region as fio does.
    fn sample_scattered(&mut self, prng: &mut Prng, slots: u64) -> u64 {
        let r = (self.sample(prng) - 1) % slots;
        scatter(r, slots)
    }
}

/// A bijection on 0..n: multiply by a prime that does not divide n.
fn scatter(r: u64, n: u64) -> u64 {
    const P1: u64 = 2_654_435_761;
    const P2: u64 = 2_147_483_647;
    let p = if !n.is_multiple_of(P1) { P1 } else { P2 };
    ((r as u128 * p as u128) % n as u128) as u64
}

fn helper_expm1_div(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.exp_m1() / x
    } else {
        1.0 + x * 0.5 * (1.0 + x / 3.0 * (1.0 + 0.25 * x))
    }
}

fn helper_log1p_div(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.ln_1p() / x
    } else {
        1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Profile;

    fn spec(rw: &str) -> WorkloadSpec {
        WorkloadSpec::from_rw(rw, None)
            .unwrap()
            .resolve(1 << 30, 4096)
            .unwrap()
    }

    #[test]
    fn random_offsets_are_aligned_and_in_region() {
        let mut g = Generator::new(&spec("randwrite"), 0, 1);
        let mut p = Prng::from_seed(1);
        for _ in 0..10_000 {
            let io = g.next(&mut p);
            assert!(!io.is_read);
            assert_eq!(io.offset % 4096, 0);
            assert!(io.offset + io.len <= 1 << 30);
        }
    }

    #[test]
    fn sequential_threads_start_apart_and_wrap() {
        let s = spec("read");
        let mut a = Generator::new(&s, 0, 2);
        let mut b = Generator::new(&s, 1, 2);
        let mut p = Prng::from_seed(1);
        assert_eq!(a.next(&mut p).offset, 0);
        assert_eq!(b.next(&mut p).offset, 1 << 29);
        assert_eq!(a.next(&mut p).offset, 4096);
        for _ in 0..(1 << 18) {
            let io = b.next(&mut p);
            assert!(io.offset + io.len <= 1 << 30);
        }
    }

    #[test]
    fn read_mix_is_respected() {
        let mut s = WorkloadSpec::from_rw("randrw", Some(0.7)).unwrap();
        s = s.resolve(1 << 30, 4096).unwrap();
        let mut g = Generator::new(&s, 0, 1);
        let mut p = Prng::from_seed(9);
        let reads = (0..100_000).filter(|_| g.next(&mut p).is_read).count();
        assert!((69_000..71_000).contains(&reads), "{reads}");
    }

    #[test]
    fn bssplit_mix_is_respected() {
        let s = Profile::by_name("fileserver")
            .unwrap()
            .spec()
            .resolve(1 << 30, 512)
            .unwrap();
        let mut g = Generator::new(&s, 0, 1);
        let mut p = Prng::from_seed(3);
        let n = 200_000;
        let fours = (0..n).filter(|_| g.next(&mut p).len == 4096).count();
        let frac = fours as f64 / n as f64;
        assert!((frac - 0.60).abs() < 0.01, "{frac}");
    }

    #[test]
    fn zipf_concentrates_accesses() {
        let mut s = spec("randread");
        s.distribution = Distribution::Zipf(1.2);
        let mut g = Generator::new(&s, 0, 1);
        let mut p = Prng::from_seed(5);
        let mut counts = std::collections::BTreeMap::new();
        for _ in 0..100_000 {
            *counts.entry(g.next(&mut p).offset).or_insert(0u32) += 1;
        }
        let mut v: Vec<u32> = counts.values().copied().collect();
        v.sort_unstable_by(|a, b| b.cmp(a));
        let top10: u32 = v.iter().take(10).sum();
        // zipf(1.2): the 10 hottest of 262144 blocks take roughly half the accesses
        assert!(top10 > 35_000, "top10 {top10}");
    }

    #[test]
    fn zoned_hot_cold() {
        let mut s = spec("randwrite");
        s.distribution = Distribution::parse("zoned:90/10:10/90").unwrap();
        let mut g = Generator::new(&s, 0, 1);
        let mut p = Prng::from_seed(5);
        let hot = (0..100_000)
            .filter(|_| g.next(&mut p).offset < (1 << 30) / 10)
            .count();
        assert!((89_000..91_000).contains(&hot), "{hot}");
    }

    #[test]
    fn trace_replay_wraps_and_aligns() {
        let mut s = spec("randread");
        let t = crate::Trace::synthetic_mail(2, 1000, 1 << 40);
        s.trace = Some(std::sync::Arc::new(t.clone()));
        let mut g = Generator::new(&s, 0, 1);
        let mut p = Prng::from_seed(1);
        for i in 0..2000 {
            let io = g.next(&mut p);
            assert_eq!(io.is_read, t.ios[i % 1000].is_read);
            assert_eq!(io.offset % 4096, 0);
            assert!(io.offset + io.len <= 1 << 30);
        }
    }

    #[test]
    fn scatter_is_a_bijection() {
        let n = 1000;
        let mut seen = vec![false; n as usize];
        for r in 0..n {
            let s = scatter(r, n);
            assert!(!seen[s as usize]);
            seen[s as usize] = true;
        }
    }
}
