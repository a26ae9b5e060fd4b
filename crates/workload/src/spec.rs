use crate::units::{parse_percent, parse_size};
use serde::Serialize;

#[derive(Debug, thiserror::Error, PartialEq)]
#[non_exhaustive]
pub enum SpecError {
    #[error("{0}")]
    Invalid(String),
}

fn invalid<T>(m: impl Into<String>) -> Result<T, SpecError> {
    Err(SpecError::Invalid(m.into()))
}

/// Order of offsets.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Pattern {
    Random,
    Sequential,
}

/// Block sizes: one, or a weighted mix (fio's `bssplit`).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BlockSizes {
    Fixed(u64),
    /// (size, weight) pairs, weights summing to 1.
    Split(Vec<(u64, f64)>),
}

impl BlockSizes {
    /// fio's `bssplit` syntax: `512/10:4k/60:64k/30`. Entries without a
    /// weight share what the others leave.
    pub fn parse_split(s: &str) -> Result<BlockSizes, SpecError> {
        let mut entries = Vec::new();
        let mut unweighted = 0usize;
        let mut total = 0.0;
        for part in s.split(':').filter(|p| !p.is_empty()) {
            let (size, weight) = match part.split_once('/') {
                Some((a, b)) if !b.is_empty() => {
                    let w: f64 = b.parse().map_err(|_| {
                        SpecError::Invalid(format!("invalid bssplit weight '{b}' in '{s}'"))
                    })?;
                    if !(0.0..=100.0).contains(&w) {
                        return invalid(format!("bssplit weight '{b}' must be 0..100"));
                    }
                    (a, Some(w / 100.0))
                }
                Some((a, _)) => (a, None),
                None => (part, None),
            };
            let size = parse_size(size).map_err(SpecError::Invalid)?;
            if size == 0 {
                return invalid(format!("bssplit block size '{part}' in '{s}' is zero"));
            }
            match weight {
                Some(w) => total += w,
                None => unweighted += 1,
            }
            entries.push((size, weight));
        }
        if entries.is_empty() {
            return invalid(format!("empty bssplit '{s}'"));
        }
        if total > 1.0 + 1e-9 {
            return invalid(format!("bssplit weights in '{s}' add up to more than 100"));
        }
        // As fio: with every entry weighted, the weights must make 100.
        if unweighted == 0 && (total - 1.0).abs() > 1e-9 {
            return invalid(format!(
                "bssplit weights in '{s}' add up to {}, not 100",
                (total * 1e4).round() / 100.0
            ));
        }
        let rest = if unweighted > 0 {
            (1.0 - total) / unweighted as f64
        } else {
            0.0
        };
        let mut sum = 0.0;
        let mut out = Vec::with_capacity(entries.len());
        for (size, w) in entries {
            let w = w.unwrap_or(rest);
            sum += w;
            out.push((size, w));
        }
        if sum <= 0.0 {
            return invalid(format!("bssplit '{s}' has no positive weight"));
        }
        Ok(BlockSizes::Split(
            out.into_iter().map(|(b, w)| (b, w / sum)).collect(),
        ))
    }

    pub fn sizes(&self) -> Vec<u64> {
        match self {
            BlockSizes::Fixed(b) => vec![*b],
            BlockSizes::Split(v) => v.iter().map(|(b, _)| *b).collect(),
        }
    }

    pub fn max(&self) -> u64 {
        self.sizes().into_iter().max().unwrap_or(0)
    }

    /// Mean block size in bytes.
    pub fn mean(&self) -> f64 {
        match self {
            BlockSizes::Fixed(b) => *b as f64,
            BlockSizes::Split(v) => v.iter().map(|(b, w)| *b as f64 * w).sum(),
        }
    }

    fn round_up(&self, sector: u64) -> BlockSizes {
        let up = |b: u64| b.div_ceil(sector) * sector;
        match self {
            BlockSizes::Fixed(b) => BlockSizes::Fixed(up(*b)),
            BlockSizes::Split(v) => {
                BlockSizes::Split(v.iter().map(|(b, w)| (up(*b), *w)).collect())
            }
        }
    }
}

/// How random offsets are spread over the region.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Distribution {
    Uniform,
    /// Zipf with exponent θ over block-sized ranks, ranks scattered over the
    /// region (fio's `zipf:θ`).
    Zipf(f64),
    /// Zones of (access fraction, region fraction) (fio's `zoned`): e.g. a
    /// hot/cold split `zoned:90/10:10/90`.
    Zoned(Vec<(f64, f64)>),
}

impl Distribution {
    /// fio's `random_distribution`: `random`, `zipf:1.2`, `zoned:60/10:40/90`.
    pub fn parse(s: &str) -> Result<Distribution, SpecError> {
        if s == "random" || s == "uniform" {
            return Ok(Distribution::Uniform);
        }
        if let Some(theta) = s.strip_prefix("zipf:") {
            let t: f64 = theta
                .parse()
                .map_err(|_| SpecError::Invalid(format!("invalid zipf exponent '{theta}'")))?;
            if t.is_nan() || t <= 0.0 || t == 1.0 || !t.is_finite() {
                return invalid(format!(
                    "zipf exponent {theta} must be positive and not 1.0"
                ));
            }
            return Ok(Distribution::Zipf(t));
        }
        if let Some(zones) = s.strip_prefix("zoned:") {
            let mut out = Vec::new();
            let (mut acc, mut size) = (0.0, 0.0);
            for z in zones.split(':') {
                let (a, b) = z.split_once('/').ok_or_else(|| {
                    SpecError::Invalid(format!("zone '{z}' must be access%/size%"))
                })?;
                let a = parse_percent(a).map_err(SpecError::Invalid)?;
                let b = parse_percent(b).map_err(SpecError::Invalid)?;
                if b <= 0.0 {
                    return invalid(format!("zone '{z}' has zero size"));
                }
                acc += a;
                size += b;
                out.push((a, b));
            }
            if (acc - 1.0).abs() > 1e-6 || (size - 1.0).abs() > 1e-6 {
                return invalid(format!(
                    "zones '{zones}' must add up to 100% of accesses and of size"
                ));
            }
            return Ok(Distribution::Zoned(out));
        }
        invalid(format!(
            "unknown random distribution '{s}' (expected random, zipf:THETA or zoned:A/S:...)"
        ))
    }
}

/// A workload, as fio would describe it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WorkloadSpec {
    pub pattern: Pattern,
    /// Fraction of I/Os that are reads, 0..=1.
    pub read_fraction: f64,
    pub block_sizes: BlockSizes,
    pub distribution: Distribution,
    /// Start of the target region, bytes.
    pub offset: u64,
    /// Length of the target region; `None` = to the end of the device.
    pub size: Option<u64>,
    /// Round block sizes up to the sector size instead of refusing them
    /// (the named profiles' 512 B entries on a 4 KiB-sector format).
    pub round_to_sector: bool,
    /// Replay this trace (order, offsets, sizes, read/write) instead of
    /// drawing I/Os; offsets wrap into the region, sizes round to sectors.
    #[serde(skip)]
    pub trace: Option<std::sync::Arc<crate::Trace>>,
}

impl WorkloadSpec {
    /// Builds from fio's `rw` name and `rwmixread` (percent, used by mixed
    /// patterns).
    pub fn from_rw(rw: &str, rwmixread: Option<f64>) -> Result<WorkloadSpec, SpecError> {
        let (pattern, read) = match rw {
            "read" => (Pattern::Sequential, 1.0),
            "write" => (Pattern::Sequential, 0.0),
            "randread" => (Pattern::Random, 1.0),
            "randwrite" => (Pattern::Random, 0.0),
            "rw" | "readwrite" => (Pattern::Sequential, rwmixread.unwrap_or(0.5)),
            "randrw" => (Pattern::Random, rwmixread.unwrap_or(0.5)),
            _ => {
                return invalid(format!(
                    "unknown rw '{rw}' (expected read, write, randread, randwrite, rw, randrw)"
                ))
            }
        };
        Ok(WorkloadSpec {
            pattern,
            read_fraction: read,
            block_sizes: BlockSizes::Fixed(4096),
            distribution: Distribution::Uniform,
            offset: 0,
            size: None,
            round_to_sector: false,
            trace: None,
        })
    }

    /// The fio `rw` name of this spec.
    pub fn rw_name(&self) -> &'static str {
        match (self.pattern, self.read_fraction) {
            (Pattern::Sequential, r) if r >= 1.0 => "read",
            (Pattern::Sequential, r) if r <= 0.0 => "write",
            (Pattern::Sequential, _) => "rw",
            (Pattern::Random, r) if r >= 1.0 => "randread",
            (Pattern::Random, r) if r <= 0.0 => "randwrite",
            (Pattern::Random, _) => "randrw",
        }
    }

    /// Checks the spec against a device and fixes what the profile allows.
    /// Returns the spec with `size` resolved.
    pub fn resolve(&self, capacity: u64, sector: u32) -> Result<WorkloadSpec, SpecError> {
        let sector = sector as u64;
        let mut s = self.clone();
        if !(0.0..=1.0).contains(&s.read_fraction) {
            return invalid("read mix must be between 0 and 100%");
        }
        if s.round_to_sector {
            s.block_sizes = s.block_sizes.round_up(sector);
        }
        for b in s.block_sizes.sizes() {
            if b == 0 || b % sector != 0 {
                return invalid(format!(
                    "block size {b} is not a multiple of the {sector}-byte sector"
                ));
            }
        }
        if !s.offset.is_multiple_of(sector) {
            return invalid(format!(
                "offset {} is not a multiple of the {sector}-byte sector",
                s.offset
            ));
        }
        if s.offset >= capacity {
            return invalid(format!(
                "offset {} is beyond the device's {capacity} bytes",
                s.offset
            ));
        }
        let size = s.size.unwrap_or(capacity - s.offset);
        if size == 0 || size > capacity - s.offset {
            return invalid(format!(
                "region {}+{size} does not fit the device's {capacity} bytes",
                s.offset
            ));
        }
        let size = size / sector * sector;
        if size < s.block_sizes.max() {
            return invalid(format!(
                "region of {size} bytes is smaller than the largest block ({})",
                s.block_sizes.max()
            ));
        }
        s.size = Some(size);
        Ok(s)
    }
}

/// A start or length in bytes, or a share of the device (fio's `size=50%`),
/// known in bytes only once the device is.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Extent {
    Bytes(u64),
    /// 0..=1.
    Fraction(f64),
}

impl Extent {
    /// A length: `8G`, `4k` or `50%` (fio's spelling: a `%` suffix is a
    /// share of the device); zero bytes is refused.
    pub fn parse(s: &str) -> Result<Extent, String> {
        let t = s.trim();
        if t.ends_with('%') {
            return parse_percent(t).map(Extent::Fraction);
        }
        parse_size(t).map(Extent::Bytes)
    }

    /// A start: as [`Extent::parse`], and `0`.
    pub fn parse_start(s: &str) -> Result<Extent, String> {
        match s.trim() {
            "0" => Ok(Extent::Bytes(0)),
            t => Extent::parse(t),
        }
    }

    /// Bytes on a device of `capacity` bytes; a share is rounded down to
    /// `align`.
    pub fn bytes(self, capacity: u64, align: u64) -> u64 {
        match self {
            Extent::Bytes(b) => b,
            Extent::Fraction(f) => {
                let b = (capacity as f64 * f) as u64;
                b / align.max(1) * align.max(1)
            }
        }
    }
}

/// A workload whose region may be a share of a device not yet known: what
/// `vsl run` options and fio job files both produce.
#[derive(Clone, Debug, PartialEq)]
pub struct PlannedSpec {
    pub spec: WorkloadSpec,
    /// Overrides `spec.offset` when set.
    pub offset: Option<Extent>,
    /// Overrides `spec.size` when set.
    pub size: Option<Extent>,
}

impl PlannedSpec {
    pub fn new(spec: WorkloadSpec) -> PlannedSpec {
        PlannedSpec {
            spec,
            offset: None,
            size: None,
        }
    }

    /// The spec for a device of `capacity` bytes, resolved. As fio, an
    /// offset given as a share is rounded down to the smallest block size
    /// (fio's default `offset_align`).
    pub fn resolve(&self, capacity: u64, sector: u32) -> Result<WorkloadSpec, SpecError> {
        let mut s = self.spec.clone();
        let min_bs = s.block_sizes.sizes().into_iter().min().unwrap_or(1);
        let align = if min_bs.is_multiple_of(sector as u64) {
            min_bs
        } else {
            sector as u64
        };
        if let Some(o) = self.offset {
            s.offset = o.bytes(capacity, align);
        }
        if let Some(z) = self.size {
            s.size = Some(z.bytes(capacity, sector as u64)).filter(|&b| b > 0);
            if s.size.is_none() {
                return invalid("size 0 leaves no region to run on");
            }
        }
        s.resolve(capacity, sector)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bssplit_parses_and_normalises() {
        let b = BlockSizes::parse_split("512/10:4k/60:64k/30").unwrap();
        assert_eq!(
            b,
            BlockSizes::Split(vec![(512, 0.1), (4096, 0.6), (65536, 0.3)])
        );
        let b = BlockSizes::parse_split("4k/50:8k").unwrap();
        assert_eq!(b, BlockSizes::Split(vec![(4096, 0.5), (8192, 0.5)]));
        assert!(BlockSizes::parse_split("4k/80:8k/40").is_err());
        // Issue 32: fio refuses percentages that do not make 100.
        let e = BlockSizes::parse_split("4k/50:8k/30")
            .unwrap_err()
            .to_string();
        assert!(e.contains("add up to 80, not 100"), "{e}");
        assert!(BlockSizes::parse_split("4k/100").is_ok());
        assert!(BlockSizes::parse_split("4k/99.5:8k/0.5").is_ok());
        assert!(BlockSizes::parse_split("x/10").is_err());
    }

    #[test]
    fn distributions_parse() {
        assert_eq!(
            Distribution::parse("zipf:1.2").unwrap(),
            Distribution::Zipf(1.2)
        );
        assert!(Distribution::parse("zipf:1").is_err());
        assert!(Distribution::parse("zoned:90/10:10/90").is_ok());
        assert!(Distribution::parse("zoned:90/10:20/90").is_err());
        assert!(Distribution::parse("pareto:0.9").is_err());
    }

    #[test]
    fn resolve_checks_alignment_and_region() {
        let mut s = WorkloadSpec::from_rw("randwrite", None).unwrap();
        s.block_sizes = BlockSizes::Fixed(6000);
        assert!(s
            .resolve(1 << 30, 4096)
            .unwrap_err()
            .to_string()
            .contains("multiple"));
        s.block_sizes = BlockSizes::Fixed(4096);
        s.offset = 1 << 30;
        assert!(s.resolve(1 << 30, 4096).is_err());
        s.offset = 0;
        s.size = Some(2 << 30);
        assert!(s.resolve(1 << 30, 4096).is_err());
        s.size = None;
        assert_eq!(s.resolve(1 << 30, 4096).unwrap().size, Some(1 << 30));
        assert!(WorkloadSpec::from_rw("randomwrite", None).is_err());
    }

    #[test]
    fn shares_of_the_device_resolve_to_bytes() {
        let mut p = PlannedSpec::new(WorkloadSpec::from_rw("randread", None).unwrap());
        p.spec.block_sizes = BlockSizes::Fixed(8192);
        p.offset = Some(Extent::parse("25%").unwrap());
        p.size = Some(Extent::parse("50%").unwrap());
        let cap = (1 << 30) + 4096;
        let r = p.resolve(cap, 4096).unwrap();
        // The offset rounds down to the 8 KiB block, the size to the sector.
        assert_eq!(r.offset, (cap / 4) / 8192 * 8192);
        assert_eq!(r.size, Some((cap / 2) / 4096 * 4096));
        p.size = Some(Extent::parse("80%").unwrap());
        assert!(p.resolve(cap, 4096).is_err(), "25% + 80% does not fit");
        assert_eq!(Extent::parse_start("0").unwrap(), Extent::Bytes(0));
        assert!(Extent::parse("0").is_err(), "a length of zero");
        assert!(Extent::parse("120%").is_err());
    }
}
