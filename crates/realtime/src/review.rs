//! [`RealReviewTarget`]: a real file or block device as a target of
//! `lab::review`, next to the modelled cards.

use crate::{
    DeviceReport, DirectMode, EngineOptions, FillPattern, RealTarget, RealtimeError, Target,
};
use lab::review::{DeviceAccount, ReviewError, ReviewTarget};
use lab::{RunOptions, RunResult};
use workload::WorkloadSpec;

/// A real target driven in wall time by the review. Its fill is the
/// layout `vsl run` uses ([`RealTarget::fill`]); every run reads the device
/// counters, summed over the review into [`ReviewTarget::device_account`].
pub struct RealReviewTarget {
    label: String,
    target: RealTarget,
    engine: EngineOptions,
    /// The share of the target reads would find unwritten, until a fill.
    unwritten_share: Option<f64>,
    device: Option<DeviceReport>,
}

impl RealReviewTarget {
    /// Opens `spec` (`file:PATH:SIZE` or `blockdev:/dev/NAME`) with
    /// O_DIRECT (an error where the filesystem has none: buffered I/O
    /// would review the page cache), labelled with the spec itself.
    pub fn open(spec: &str) -> Result<RealReviewTarget, RealtimeError> {
        let t = Target::parse(spec)?;
        let target = RealTarget::open(&t, DirectMode::Require)?;
        Ok(RealReviewTarget {
            label: spec.to_string(),
            unwritten_share: target.written().unwritten_share(),
            target,
            engine: EngineOptions::default(),
            device: None,
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
            .fill(FillPattern::Random, &mut |_, _| {})
            .map_err(|e| review_err(&self.label, e))?;
        self.unwritten_share = self.target.written().unwritten_share();
        Ok(())
    }

    fn run(&mut self, spec: &WorkloadSpec, opts: &RunOptions) -> Result<RunResult, ReviewError> {
        let mut r = self
            .target
            .run(spec, opts, &self.engine, &mut |_| {})
            .map_err(|e| review_err(&self.label, e))?;
        r.device.set_unwritten_share(self.unwritten_share);
        match &mut self.device {
            Some(d) => d.merge(&r.device),
            None => self.device = Some(r.device),
        }
        Ok(r.result)
    }

    fn device_account(&self) -> Option<DeviceAccount> {
        let d = self.device.as_ref()?;
        let v = &d.measured_on_device;
        Some(DeviceAccount {
            measured_on_device: v.measured,
            words: v.words.clone(),
            issued_ios: d.issued.reads + d.issued.writes,
            device_ios: d.leaf_ios(),
            details: serde_json::to_value(d).unwrap_or_default(),
        })
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
        // Filled first, so the reads are of written data; the account
        // counts every read the run issued.
        let acct = t.device_account().unwrap();
        assert_eq!(acct.issued_ios, r.summary.reads);
        assert!(
            acct.words.contains("measured on the device"),
            "{}",
            acct.words
        );
        assert!(!acct.words.contains("unwritten"), "{}", acct.words);
        std::fs::remove_file(&p).unwrap();
        let e = RealReviewTarget::open("file:/nonexistent-dir/x:1M")
            .err()
            .unwrap();
        assert!(e.to_string().contains("no such file"), "{e}");
    }
}
