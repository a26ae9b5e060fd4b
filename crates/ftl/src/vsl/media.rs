//! Media errors: raw bit-error rate (RBER) growing with wear, retention
//! time and reads since erase; ECC correcting up to `ecc_bits` per
//! codeword; read retry above it; uncorrectable reads handed to Flashback
//! parity; read-disturb refresh and retirement of error-prone erase units.
//!
//! RBER(c, A, R) = (e0 · exp(beta · c / C)) · (1 + (A / A0)^k + R / R0)
//!
//! with `c` the erase count of the unit, `C` the rated cycles, `A` the time
//! since the unit was first programmed after its erase, `R` the reads of its
//! blocks on the bank since the erase. The form follows Mielke et al.
//! ("Bit error rate in NAND flash memories", IRPS 2008: RBER grows steeply
//! with cycling, retention and read disturb add to it) and Hetzler's fitted
//! MLC error surface (power laws in data age and read count, a steep
//! function of cycles); every constant is in docs/MODEL.md with its source
//! or marked as an assumption.

use serde::Serialize;
use sim::{Nanos, Prng};

/// The media-error model's parameters (docs/MODEL.md, "Media errors").
#[derive(Clone, Debug, Serialize)]
pub struct MediaConfig {
    /// Rated program/erase cycles of the cells.
    pub rated_cycles: u32,
    /// RBER of a fresh block (`e0`).
    pub rber_fresh: f64,
    /// Growth of RBER with cycles: RBER × e^beta at the rated cycles.
    pub rber_beta: f64,
    /// Retention: RBER doubles after `retention_ref_s` (A0) of data age...
    pub retention_ref_s: f64,
    /// ...growing as (A/A0)^k.
    pub retention_exp: f64,
    /// Read disturb: RBER doubles after this many reads since erase (R0).
    pub disturb_ref_reads: f64,
    /// ECC: bits corrected per codeword.
    pub ecc_bits: u32,
    /// ECC codeword payload, bytes.
    pub codeword_bytes: u32,
    /// Read retries before a read is uncorrectable.
    pub max_retries: u32,
    /// Each retry (shifted reference voltages) multiplies the RBER by this.
    pub retry_factor: f64,
    /// Relocate an erase unit once a bank's blocks of it were read this
    /// often since the erase (read-disturb refresh).
    pub refresh_reads: u32,
    /// Retire an erase unit whose read needed at least this many retries.
    pub retire_retries: u32,
    /// Seed of the error draws.
    pub seed: u64,
}

impl MediaConfig {
    /// The default model for cells rated for `rated_cycles`.
    pub fn for_cells(rated_cycles: u32, seed: u64) -> MediaConfig {
        MediaConfig {
            rated_cycles,
            rber_fresh: 1e-6,
            rber_beta: 5.0,
            retention_ref_s: 30.0 * 86_400.0,
            retention_exp: 0.6,
            disturb_ref_reads: 100_000.0,
            ecc_bits: 8,
            codeword_bytes: 512,
            max_retries: 5,
            retry_factor: 0.5,
            refresh_reads: 100_000,
            retire_retries: 2,
            seed,
        }
    }

    /// RBER of a unit with `erases` cycles, data `age_s` old, read `reads`
    /// times since its erase.
    pub fn rber(&self, erases: u32, age_s: f64, reads: u32) -> f64 {
        let wear = self.rber_fresh
            * (self.rber_beta * erases as f64 / self.rated_cycles.max(1) as f64).exp();
        let age = (age_s.max(0.0) / self.retention_ref_s).powf(self.retention_exp);
        (wear * (1.0 + age + reads as f64 / self.disturb_ref_reads)).min(0.5)
    }
}

/// P(X > t) for X ~ Poisson(lambda).
pub fn poisson_tail(lambda: f64, t: u32) -> f64 {
    if lambda <= 0.0 {
        return 0.0;
    }
    let mut term = (-lambda).exp();
    let mut cdf = term;
    for k in 1..=t {
        term *= lambda / k as f64;
        cdf += term;
    }
    (1.0 - cdf).max(0.0)
}

/// What one read of a write unit met.
#[derive(Copy, Clone, Debug, Default)]
pub struct ReadOutcome {
    pub retries: u32,
    pub uncorrectable: bool,
    /// The unit's blocks were read often enough to need a refresh.
    pub refresh: bool,
    /// The unit's error rate is too high: relocate and retire it.
    pub retire: bool,
}

/// Per-unit media state.
pub(super) struct MediaState {
    cfg: MediaConfig,
    prng: Prng,
    banks: u32,
    programmed_at: Vec<Nanos>,
    reads: Vec<u32>,
    flagged: Vec<bool>,
    corrected: f64,
}

impl MediaState {
    pub(super) fn new(cfg: MediaConfig, lebs: u32, banks: u32) -> MediaState {
        MediaState {
            prng: Prng::from_seed(cfg.seed ^ 0x004d_4544_4941),
            cfg,
            banks,
            programmed_at: vec![Nanos::ZERO; lebs as usize],
            reads: vec![0; (lebs * banks) as usize],
            flagged: vec![false; lebs as usize],
            corrected: 0.0,
        }
    }

    pub(super) fn programmed(&mut self, leb: u32, first: bool, at: Nanos) {
        if first {
            self.programmed_at[leb as usize] = at;
        }
    }

    pub(super) fn erased(&mut self, leb: u32) {
        let b = self.banks as usize;
        let l = leb as usize;
        // A flagged unit stays flagged: the health model retires it once free.
        self.reads[l * b..(l + 1) * b].fill(0);
    }

    pub(super) fn corrected_bits(&self) -> u64 {
        self.corrected as u64
    }

    /// Error-prone units found so far (for the health model).
    pub(super) fn flagged(&self, leb: u32) -> bool {
        self.flagged[leb as usize]
    }

    /// One read of `n` sectors of unit `leb` on `bank` at `now`.
    pub(super) fn read(
        &mut self,
        leb: u32,
        bank: u32,
        erases: u32,
        n: u64,
        sector: u64,
        now: Nanos,
    ) -> ReadOutcome {
        let c = &self.cfg;
        let i = (leb * self.banks + bank) as usize;
        self.reads[i] = self.reads[i].saturating_add(1);
        let reads = self.reads[i];
        let age_s = now
            .saturating_sub(self.programmed_at[leb as usize])
            .as_secs_f64();
        let rber = c.rber(erases, age_s, reads);
        let codewords = ((n * sector) / c.codeword_bytes as u64).max(1) as f64;
        let bits = c.codeword_bytes as f64 * 8.0;
        let mut lambda = rber * bits;
        self.corrected += lambda * codewords;
        let mut out = ReadOutcome {
            refresh: reads == c.refresh_reads,
            ..Default::default()
        };
        loop {
            let p_cw = poisson_tail(lambda, c.ecc_bits);
            let p_any = 1.0 - (1.0 - p_cw).powf(codewords);
            if p_any < 1e-15 || self.prng.next_f64() >= p_any {
                break;
            }
            if out.retries == c.max_retries {
                out.uncorrectable = true;
                break;
            }
            out.retries += 1;
            lambda *= c.retry_factor;
        }
        if (out.retries >= c.retire_retries || out.uncorrectable) && !self.flagged[leb as usize] {
            self.flagged[leb as usize] = true;
            out.retire = true;
            out.refresh = false;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rber_grows_with_wear_age_and_reads() {
        let m = MediaConfig::for_cells(10_000, 1);
        let fresh = m.rber(0, 0.0, 0);
        assert!((fresh - 1e-6).abs() < 1e-12);
        assert!(m.rber(10_000, 0.0, 0) > 100.0 * fresh);
        assert!(m.rber(5_000, 86_400.0 * 365.0, 0) > 2.0 * m.rber(5_000, 0.0, 0));
        assert!(m.rber(5_000, 0.0, 100_000) > 1.9 * m.rber(5_000, 0.0, 0));
    }

    #[test]
    fn poisson_tail_matches_known_values() {
        // P(X > 0) = 1 - e^-1 for lambda 1.
        assert!((poisson_tail(1.0, 0) - (1.0 - (-1f64).exp())).abs() < 1e-12);
        // P(X > 8 | lambda 2) = 2.37e-4 (tables).
        let p = poisson_tail(2.0, 8);
        assert!((p - 2.37e-4).abs() < 0.05e-4, "{p}");
    }
}
