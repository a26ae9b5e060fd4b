//! Data placement behind one seam: [`Placement`].
//!
//! Every sector the log writes (a host write or a GC move) is appended to
//! the frontier of one *stream*; each stream has its own open erase unit,
//! and the units it closes form its pool. The placement policy names the
//! stream. [`PlacementSpec::Single`] (the default) keeps one stream and the
//! VSL exactly as before the seam; [`PlacementSpec::HotCold`] separates data
//! by update frequency with an online classifier; [`PlacementSpec::Streams`]
//! takes host streams by LBA range, as multi-stream and FDP SSDs do. A
//! researcher's own policy implements the trait and is installed with
//! [`crate::Vsl::set_placement`] (docs/ARCHITECTURE.md, "Adding a placement
//! policy").
//!
//! With more than one stream, GC works per pool and the spare is shared
//! between the pools adaptively (docs/MODEL.md, "Placement: spare shared
//! between pools"): each pool's target size is the split that minimises
//! the analytic greedy write amplification weighted by the pool's share of
//! host writes, re-solved as the traffic and the pools' data change, and GC
//! collects from the pool furthest above its target.

use serde::{Serialize, Serializer};

/// Chooses the stream (frontier, pool) of each sector the log writes.
///
/// Streams are numbered `0..streams()`; the FTL opens one frontier per
/// stream when the policy is installed. Calls come in log order and must
/// be deterministic: the same write stream must give the same streams.
pub trait Placement: Send {
    /// The policy as `--placement` spells it, for reports.
    fn name(&self) -> String;

    /// Streams the policy uses (at least 1, at most 255).
    fn streams(&self) -> usize;

    /// The stream of host write number `seq` (1, 2, …) of logical sector
    /// `lba`.
    fn host(&mut self, lba: u32, seq: u64) -> usize;

    /// The stream GC moves logical sector `lba` to, from a unit of stream
    /// `from`. By default the data stays in its pool, so one GC run fills
    /// at most one frontier, as with one stream; a policy that moves data
    /// across pools needs a GC reserve (`gc_reserve_lebs`) of a unit per
    /// stream more.
    fn moved(&mut self, lba: u32, from: usize) -> usize {
        let _ = lba;
        from
    }

    /// Host RAM the policy keeps (for [`crate::Vsl::host_ram_bytes`]).
    fn ram_bytes(&self) -> u64 {
        0
    }
}

/// The built-in placement policies, as `--placement` spells them.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum PlacementSpec {
    /// One log: every write goes to the same frontier (the default).
    #[default]
    Single,
    /// Two streams, cold (0) and hot (1), chosen by an online
    /// update-frequency classifier ([`HotCold`]).
    HotCold,
    /// Host streams by LBA range: `ranges[i]` (sectors `start..end`, sorted,
    /// disjoint) is stream `i + 1`; sectors outside every range are
    /// stream 0.
    Streams(Vec<(u64, u64)>),
}

/// One built-in placement policy for `vsl policies`.
pub struct PlacementInfo {
    pub spelling: &'static str,
    pub summary: &'static str,
    pub source: &'static str,
}

/// Every built-in placement policy, in the order `vsl policies` lists them.
pub const PLACEMENTS: &[PlacementInfo] = &[
    PlacementInfo {
        spelling: "single",
        summary: "one log frontier for every write (the default)",
        source: "Rosenblum & Ousterhout, LFS, ACM TOCS 1992",
    },
    PlacementInfo {
        spelling: "hot-cold",
        summary: "hot and cold pools by update frequency (decaying per-sector counters), spare shared adaptively",
        source: "Hsieh, Kuo & Chang, ACM TOS 2006; Stoica & Ailamaki, VLDB 2013",
    },
    PlacementInfo {
        spelling: "streams",
        summary: "one pool per host LBA range (--stream START-END, repeatable), as multi-stream/FDP SSDs",
        source: "Kang et al., HotStorage 2014 (multi-stream SSD); NVMe TP4146 (FDP)",
    },
];

impl PlacementSpec {
    /// Parses `--placement NAME` with the `--stream` ranges already in
    /// sectors. One-line errors name the problem.
    pub fn parse(name: &str, ranges: Vec<(u64, u64)>) -> Result<PlacementSpec, String> {
        let has_ranges = !ranges.is_empty();
        let spec = match name {
            "single" => PlacementSpec::Single,
            "hot-cold" => PlacementSpec::HotCold,
            "streams" => {
                if ranges.is_empty() {
                    return Err(
                        "placement 'streams' needs at least one --stream START-END".to_string()
                    );
                }
                PlacementSpec::Streams(ranges)
            }
            _ => {
                return Err(format!(
                    "unknown placement '{name}' (expected {}; `vsl policies` lists them)",
                    PLACEMENTS
                        .iter()
                        .map(|p| p.spelling)
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            }
        };
        if has_ranges && !matches!(spec, PlacementSpec::Streams(_)) {
            return Err(format!("--stream is for --placement streams, not '{name}'"));
        }
        Ok(spec)
    }

    pub fn is_single(&self) -> bool {
        *self == PlacementSpec::Single
    }

    /// Checks the stream ranges against a device of `user_sectors`: each
    /// non-empty, inside the device, none overlapping another.
    pub fn validate(&self, user_sectors: u64) -> Result<(), String> {
        let PlacementSpec::Streams(ranges) = self else {
            return Ok(());
        };
        if ranges.len() > 254 {
            return Err(format!("{} streams: at most 254", ranges.len()));
        }
        let mut sorted = ranges.clone();
        sorted.sort_unstable();
        for &(s, e) in &sorted {
            if s >= e {
                return Err(format!("stream {s}-{e} (sectors) is empty"));
            }
            if e > user_sectors {
                return Err(format!(
                    "stream {s}-{e} (sectors) is beyond the device's {user_sectors} sectors"
                ));
            }
        }
        if let Some(w) = sorted.windows(2).find(|w| w[0].1 > w[1].0) {
            return Err(format!(
                "streams {}-{} and {}-{} (sectors) overlap",
                w[0].0, w[0].1, w[1].0, w[1].1
            ));
        }
        Ok(())
    }

    /// A fresh instance for a device of `user_sectors`.
    pub fn build(&self, user_sectors: u64) -> Result<Box<dyn Placement>, String> {
        self.validate(user_sectors)?;
        Ok(match self {
            PlacementSpec::Single => Box::new(Single),
            PlacementSpec::HotCold => Box::new(HotCold::new(user_sectors)),
            PlacementSpec::Streams(r) => Box::new(Streams::new(r.clone())),
        })
    }
}

impl std::fmt::Display for PlacementSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PlacementSpec::Single => f.write_str("single"),
            PlacementSpec::HotCold => f.write_str("hot-cold"),
            PlacementSpec::Streams(_) => f.write_str("streams"),
        }
    }
}

impl Serialize for PlacementSpec {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// One stream.
pub struct Single;

impl Placement for Single {
    fn name(&self) -> String {
        "single".into()
    }
    fn streams(&self) -> usize {
        1
    }
    fn host(&mut self, _: u32, _: u64) -> usize {
        0
    }
}

/// Hot/cold separation by update frequency, learnt from the write stream
/// (no oracle): each logical sector keeps a 4-bit saturating write counter,
/// and every counter is halved after each `user_sectors` host writes (the
/// decay of Hsieh, Kuo & Chang, "Efficient identification of hot data for
/// flash memory storage systems", ACM TOS 2006, kept per sector instead of
/// in their hashed counters). A host write is hot (stream 1) when its
/// sector's counter, this write included, reaches [`HotCold::THRESHOLD`]:
/// the sector was written about twice or more per device-write of traffic.
/// GC moves keep data in its pool (the trait's default): a sector
/// misclassified hot leaves the hot pool when it is next written.
pub struct HotCold {
    counts: Vec<u8>,
    writes: u64,
    period: u64,
}

impl HotCold {
    /// Counter value (writes in the decayed window) at which data is hot.
    pub const THRESHOLD: u8 = 3;
    const MAX: u8 = 15;

    pub fn new(user_sectors: u64) -> HotCold {
        HotCold {
            counts: vec![0; user_sectors as usize],
            writes: 0,
            period: user_sectors.max(1),
        }
    }
}

impl Placement for HotCold {
    fn name(&self) -> String {
        "hot-cold".into()
    }
    fn streams(&self) -> usize {
        2
    }
    fn host(&mut self, lba: u32, _: u64) -> usize {
        self.writes += 1;
        if self.writes.is_multiple_of(self.period) {
            self.counts.iter_mut().for_each(|c| *c >>= 1);
        }
        let c = &mut self.counts[lba as usize];
        *c = (*c + 1).min(Self::MAX);
        (*c >= Self::THRESHOLD) as usize
    }
    fn ram_bytes(&self) -> u64 {
        self.counts.len() as u64
    }
}

/// Host streams by LBA range; stream 0 takes what no range covers.
pub struct Streams {
    /// Sorted, disjoint `(start, end)` in sectors.
    ranges: Vec<(u64, u64)>,
}

impl Streams {
    pub fn new(mut ranges: Vec<(u64, u64)>) -> Streams {
        ranges.sort_unstable();
        Streams { ranges }
    }

    fn of(&self, lba: u32) -> usize {
        let lba = lba as u64;
        let i = self.ranges.partition_point(|r| r.1 <= lba);
        match self.ranges.get(i) {
            Some(&(s, _)) if s <= lba => i + 1,
            _ => 0,
        }
    }
}

impl Placement for Streams {
    fn name(&self) -> String {
        "streams".into()
    }
    fn streams(&self) -> usize {
        self.ranges.len() + 1
    }
    fn host(&mut self, lba: u32, _: u64) -> usize {
        self.of(lba)
    }
}

/// The split of `total` slots between pools that minimises
/// `Σ share[p] · WA(valid[p] / slots[p])` with greedy's analytic WA
/// ([`crate::greedy_wa_limit`]): marginal allocation in 1/512 steps of the
/// free space (the objective is convex in each pool's size). Every pool
/// gets at least its valid data and one erase unit (`unit` slots).
pub fn split_spare(valid: &[f64], share: &[f64], total: f64, unit: f64) -> Vec<f64> {
    let mut slots: Vec<f64> = valid.iter().map(|v| v + unit).collect();
    let free = total - slots.iter().sum::<f64>();
    if free <= 0.0 {
        return slots;
    }
    let wa = |v: f64, p: f64| -> f64 {
        if v <= 0.0 {
            return 1.0;
        }
        let spare = (1.0 - v / p).clamp(1e-6, 1.0 - 1e-9);
        crate::greedy_wa_limit(spare)
    };
    let steps = 512;
    let step = free / steps as f64;
    for _ in 0..steps {
        let best = (0..slots.len())
            .map(|p| {
                let gain = share[p] * (wa(valid[p], slots[p]) - wa(valid[p], slots[p] + step));
                (gain, p)
            })
            .fold((f64::MIN, 0), |a, b| if b.0 > a.0 { b } else { a });
        slots[best.1] += step;
    }
    slots
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_map_ranges_and_the_rest() {
        let s = Streams::new(vec![(100, 200), (0, 10)]);
        assert_eq!(
            [0, 9, 10, 99, 100, 199, 200].map(|l| s.of(l)),
            [1, 1, 0, 0, 2, 2, 0]
        );
    }

    #[test]
    fn bad_streams_are_one_line() {
        let bad = [
            (vec![(0, 10), (5, 20)], "overlap"),
            (vec![(10, 10)], "empty"),
            (vec![(0, 2000)], "beyond"),
        ];
        for (r, want) in bad {
            let e = PlacementSpec::Streams(r).validate(1000).unwrap_err();
            assert!(e.contains(want) && !e.contains('\n'), "{e}");
        }
        assert!(PlacementSpec::parse("hot", vec![])
            .unwrap_err()
            .contains("unknown placement"));
        assert!(PlacementSpec::parse("streams", vec![]).is_err());
        assert!(PlacementSpec::parse("single", vec![(0, 1)]).is_err());
    }

    #[test]
    fn hot_cold_learns_the_hot_sectors() {
        let mut h = HotCold::new(1000);
        // Half the writes go to the 50 even sectors below 100 (10 writes
        // each per 1000), the other half to the 500 odd sectors (1 each).
        let (mut hot, mut hot_right, mut cold, mut cold_right) = (0, 0, 0, 0);
        for round in 0..20u64 {
            for i in 0..1000u32 {
                let lba = if i % 2 == 0 { i % 100 } else { i };
                let s = h.host(lba, round * 1000 + i as u64);
                if round >= 5 {
                    if i % 2 == 0 {
                        hot += 1;
                        hot_right += s;
                    } else {
                        cold += 1;
                        cold_right += 1 - s;
                    }
                }
            }
        }
        assert!(
            hot_right * 100 > hot * 95,
            "hot classified hot {hot_right} of {hot}"
        );
        assert!(
            cold_right * 100 > cold * 95,
            "cold classified cold {cold_right} of {cold}"
        );
    }

    #[test]
    fn split_gives_the_hot_pool_more_spare_than_its_data() {
        // 80 % of writes to 20 % of the data, 20 % spare overall.
        let total = 1000.0 / 0.8;
        let s = split_spare(&[200.0, 800.0], &[0.8, 0.2], total, 1.0);
        assert!((s.iter().sum::<f64>() - total).abs() < 1e-6);
        let spare_hot = 1.0 - 200.0 / s[0];
        let spare_cold = 1.0 - 800.0 / s[1];
        assert!(spare_hot > spare_cold, "{spare_hot} vs {spare_cold}");
    }
}
