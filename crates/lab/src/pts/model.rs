//! A modelled card as a PTS target, in virtual time.

use super::{PtsError, PtsTarget};
use crate::runner::{run, RunOptions, RunResult};
use device::{Card, CardConfig, VirtualDevice};

use sim::Nanos;
use workload::WorkloadSpec;

/// A modelled card driven in virtual time. Purge = a freshly formatted
/// card (the modelled equivalent of a secure erase: every erase unit free,
/// the map empty). Idle = virtual time passing with no host I/O.
pub struct ModelPts {
    label: String,
    config: CardConfig,
    card: Card,
    now: Nanos,
    /// The card has done no I/O since it was built: a purge need not
    /// build another (the same config builds the same card), and a job's
    /// first purge holds one full-size card in memory, not two.
    fresh: bool,
}

impl ModelPts {
    pub fn new(label: &str, config: CardConfig) -> Result<ModelPts, PtsError> {
        let card =
            Card::new(config.clone()).map_err(|e| PtsError::Target(format!("{label}: {e}")))?;
        Ok(ModelPts {
            label: label.into(),
            config,
            card,
            now: Nanos::ZERO,
            fresh: true,
        })
    }

    pub fn card(&self) -> &Card {
        &self.card
    }
}

impl PtsTarget for ModelPts {
    fn label(&self) -> &str {
        &self.label
    }
    fn description(&self) -> String {
        format!(
            "{} ({}), format {}, {} B sectors, scale {}, {:.2} GB formatted, GC mode {:?}, virtual time",
            self.config.preset.name,
            self.config.preset.description,
            self.config.format.label(),
            self.config.sector_bytes,
            self.config.scale,
            self.card.capacity_bytes() as f64 / 1e9,
            self.config.gc_mode,
        )
    }
    fn is_virtual(&self) -> bool {
        true
    }
    fn capacity_bytes(&self) -> u64 {
        self.card.capacity_bytes()
    }
    fn sector_bytes(&self) -> u32 {
        self.card.sector_bytes()
    }
    fn purge(&mut self) -> Result<String, PtsError> {
        if !self.fresh {
            self.card = Card::new(self.config.clone())
                .map_err(|e| PtsError::Target(format!("{}: {e}", self.label)))?;
            self.fresh = true;
        }
        // Time goes on; the fresh card starts idle.
        Ok(
            "model: fresh card (every erase unit erased, map empty: secure-erase equivalent)"
                .into(),
        )
    }
    fn run(&mut self, spec: &WorkloadSpec, opts: &RunOptions) -> Result<RunResult, PtsError> {
        self.fresh = false;
        let r = run(&mut self.card, spec, opts, self.now, &mut |_| {})?;
        self.now = r.end;
        Ok(r)
    }
    fn idle(&mut self, ns: u64) -> Result<(), PtsError> {
        self.now += Nanos(ns);
        Ok(())
    }
    fn free_space_units(&self) -> Option<f64> {
        Some(self.card.free_lebs() as f64)
    }
}
