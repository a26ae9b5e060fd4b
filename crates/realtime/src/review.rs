//! [`RealReviewTarget`]: a real file or block device as a target of
//! `lab::review`, next to the modelled cards.

use crate::{DirectMode, EngineChoice, EngineOptions, RealTarget, RealtimeError, Target};
use lab::review::{ReviewError, ReviewTarget};
use lab::{RunOptions, RunResult};
use workload::WorkloadSpec;

/// A real target driven in wall time by the review.
pub struct RealReviewTarget {
    label: String,
    target: RealTarget,
    engine: EngineOptions,
}

impl RealReviewTarget {
    /// Opens `spec` (`file:PATH:SIZE` or `blockdev:/dev/NAME`), labelled
    /// with the spec itself.
    pub fn open(spec: &str) -> Result<RealReviewTarget, RealtimeError> {
        let t = Target::parse(spec)?;
        Ok(RealReviewTarget {
            label: spec.to_string(),
            target: RealTarget::open(&t, DirectMode::Auto)?,
            engine: EngineOptions::default(),
        })
    }

    pub fn real_target(&self) -> &RealTarget {
        &self.target
    }
}

fn review_err(label: &str, e: RealtimeError) -> ReviewError {
    ReviewError::Target(format!("{label}: {e}"))
}

impl ReviewTarget for RealReviewTarget {
    fn label(&self) -> &str {
        &self.label
    }

    fn description(&self) -> String {
        let t = &self.target;
        let mut d = format!(
            "{} (real, wall time), {:.1} GB, {} B sectors, {}",
            t.target(),
            t.capacity_bytes() as f64 / 1e9,
            t.sector_bytes(),
            if t.direct() { "O_DIRECT" } else { "buffered" }
        );
        for n in t.notes() {
            d.push_str("; ");
            d.push_str(n);
        }
        d
    }

    fn is_virtual(&self) -> bool {
        false
    }

    fn capacity_bytes(&self) -> u64 {
        self.target.capacity_bytes()
    }

    fn sector_bytes(&self) -> u32 {
        self.target.sector_bytes()
    }

    /// No secure erase on a real device (that would need the vendor's
    /// tools); one sequential fill.
    fn purge_and_fill(&mut self) -> Result<(), ReviewError> {
        self.target
            .precondition_fill(EngineChoice::Auto)
            .map(|_| ())
            .map_err(|e| review_err(&self.label, e))
    }

    fn run(&mut self, spec: &WorkloadSpec, opts: &RunOptions) -> Result<RunResult, ReviewError> {
        self.target
            .run(spec, opts, &self.engine, &mut |_| {})
            .map(|r| r.result)
            .map_err(|e| review_err(&self.label, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drives_a_file_through_the_review_trait() {
        let p = std::env::temp_dir().join(format!("realtime-review-{}", std::process::id()));
        let spec = format!("file:{}:2M", p.display());
        let mut t: Box<dyn ReviewTarget> = Box::new(RealReviewTarget::open(&spec).unwrap());
        assert!(!t.is_virtual());
        assert!(t.description().contains("real, wall time"));
        t.purge_and_fill().unwrap();
        let opts = RunOptions {
            threads: 1,
            queue_depth: 2,
            duration_ns: 50_000_000,
            interval_ns: 50_000_000,
            seed: 1,
        };
        let w = WorkloadSpec::from_rw("randread", None).unwrap();
        let r = t.run(&w, &opts).unwrap();
        assert!(r.summary.reads > 0);
        std::fs::remove_file(&p).unwrap();
        let e = RealReviewTarget::open("file:/nonexistent-dir/x:1M")
            .err()
            .unwrap();
        assert!(e.to_string().contains("no such file"), "{e}");
    }
}
