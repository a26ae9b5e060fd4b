//! Card-level options and reports of Flashback (die failures, parity
//! rebuild) and the media-error model. The mechanics live in the FTL
//! (`ftl::Vsl::enable_reliability`); this module says which member gets
//! which failure and turns the FTL's member-local counters and lost sectors
//! into what a run reports.

use ftl::{MediaConfig, ReliabilityConfig, ReliabilityStats};
use serde::Serialize;
use sim::Nanos;

/// A die failure to inject: die `die` of ioMemory device `member` fails at
/// virtual time `at`. Die `d` is channel `d % channels` of bank
/// `d / channels`; the last channel of each bank is its parity die.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DieFailure {
    pub member: u32,
    pub die: u32,
    pub at_ns: u64,
}

/// Failures and media errors to model (all off by default: the default
/// path then costs one branch per I/O).
#[derive(Clone, Debug, Serialize)]
pub struct ReliabilityOptions {
    pub fail_dies: Vec<DieFailure>,
    /// Adaptive Flashback: rebuild a failed die into reserve space.
    pub adaptive: bool,
    /// Raw bit errors, ECC, read retry, read disturb (docs/MODEL.md).
    pub media_errors: bool,
    /// Seed of the media-error draws.
    pub seed: u64,
    /// Replaces the default media-error parameters (tests, experiments).
    #[serde(skip)]
    pub media_override: Option<MediaConfig>,
    /// The failures' times count from [`crate::Card::arm_die_failures`]
    /// (the start of a measured run) instead of from time 0.
    #[serde(skip)]
    pub defer_failures: bool,
}

impl Default for ReliabilityOptions {
    fn default() -> ReliabilityOptions {
        ReliabilityOptions {
            fail_dies: Vec::new(),
            adaptive: true,
            media_errors: false,
            seed: 1,
            media_override: None,
            defer_failures: false,
        }
    }
}

impl ReliabilityOptions {
    /// True when member `member` needs the reliability state at all.
    pub fn applies_to(&self, member: u32) -> bool {
        self.media_errors || self.fail_dies.iter().any(|f| f.member == member)
    }

    /// Member `member`'s failures as (die, time), times counted from `start`.
    pub fn failures_of(&self, member: u32, start: Nanos) -> Vec<(u32, Nanos)> {
        self.fail_dies
            .iter()
            .filter(|f| f.member == member)
            .map(|f| (f.die, Nanos(start.0 + f.at_ns)))
            .collect()
    }

    /// The FTL's configuration for member `member`.
    pub fn ftl_config(&self, member: u32, rated_cycles: u32, spare_lebs: u32) -> ReliabilityConfig {
        ReliabilityConfig {
            fail_dies: if self.defer_failures {
                Vec::new()
            } else {
                self.failures_of(member, Nanos::ZERO)
            },
            adaptive: self.adaptive,
            spare_budget_lebs: spare_lebs,
            media: self.media_errors.then(|| {
                let mut m = self
                    .media_override
                    .clone()
                    .unwrap_or_else(|| MediaConfig::for_cells(rated_cycles, 0));
                m.seed = self.seed ^ (member as u64) << 32;
                m
            }),
            ..Default::default()
        }
    }
}

/// What one member's reliability model saw.
#[derive(Clone, Debug, Serialize)]
pub struct MediaReport {
    pub member: u32,
    #[serde(flatten)]
    pub stats: ReliabilityStats,
    /// Lost sectors as (first card sector, count) ranges, ascending.
    pub lost_ranges: Vec<(u64, u64)>,
}

/// Collapses ascending sector numbers into (start, count) ranges.
pub fn ranges(sorted: impl IntoIterator<Item = u64>) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    for s in sorted {
        match out.last_mut() {
            Some((start, n)) if *start + *n == s => *n += 1,
            _ => out.push((s, 1)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_collapse_runs() {
        assert_eq!(ranges([1, 2, 3, 7, 9, 10]), [(1, 3), (7, 1), (9, 2)]);
        assert!(ranges([]).is_empty());
    }
}
