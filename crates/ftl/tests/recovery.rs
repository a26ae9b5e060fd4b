//! Map recovery from out-of-band records (issue 4): a mirror of what a
//! store keyed by physical slot holds — fed only by host-write lookups and
//! the media log — is enough to rebuild the map after a crash at any point.

use ftl::{FtlConfig, GcPolicy, MediaEvent, OobRecord, Vsl};
use sim::{Nanos, Prng};

/// What a store keeps: per slot the OOB record, per sector the trim floor.
struct Mirror {
    oob: Vec<Option<(u32, u64)>>,
    trim_floor: Vec<u64>,
    spl: u32,
}

impl Mirror {
    fn apply(&mut self, vsl: &mut Vsl, events: &mut Vec<MediaEvent>) {
        vsl.drain_media_log(events);
        for e in events.drain(..) {
            match e {
                MediaEvent::Moved { to, lba, seq, .. } => self.oob[to as usize] = Some((lba, seq)),
                MediaEvent::Erased { leb } => {
                    let base = (leb * self.spl) as usize;
                    self.oob[base..base + self.spl as usize].fill(None);
                }
            }
        }
    }

    fn records(&self) -> Vec<OobRecord> {
        let mut out = Vec::new();
        for (psa, r) in self.oob.iter().enumerate() {
            if let Some((lba, seq)) = *r {
                if seq > self.trim_floor[lba as usize] {
                    out.push(OobRecord {
                        psa: psa as u32,
                        lba,
                        seq,
                    });
                }
            }
        }
        out
    }
}

fn config(sector: u32, policy: GcPolicy) -> FtlConfig {
    let mut cfg = FtlConfig::wa_study(32, 0.25, sector, policy);
    cfg.track_sequence = true;
    cfg.wear_level_spread = 4;
    cfg
}

fn crash_and_recover(seed: u64, sector: u32, policy: GcPolicy, paced: bool) {
    let mut cfg = config(sector, policy);
    if paced {
        cfg.gc_mode = ftl::GcMode::Paced;
        cfg.gc_background_lebs = 4;
    }
    let user = cfg.user_sectors;
    let mut vsl = Vsl::new(cfg.clone()).unwrap();
    vsl.enable_media_log();
    let mut m = Mirror {
        oob: vec![None; vsl.physical_slots() as usize],
        trim_floor: vec![0; user as usize],
        spl: vsl.slots_per_leb(),
    };
    let mut reference: Vec<Option<u64>> = vec![None; user as usize];
    let mut prng = Prng::from_seed(seed);
    let mut events = Vec::new();
    let mut t = Nanos::ZERO;
    let mut recoveries = 0;
    for step in 0..40_000u32 {
        let start = prng.below(user);
        let count = 1 + prng.below(16.min(user - start));
        if prng.below(12) == 0 {
            vsl.trim(start, count).unwrap();
            let floor = vsl.stats().host_sectors_written;
            for l in start..start + count {
                reference[l as usize] = None;
                m.trim_floor[l as usize] = floor;
            }
        } else {
            t = vsl.write(t, start, count).unwrap();
            m.apply(&mut vsl, &mut events);
            for l in start..start + count {
                let psa = vsl.lookup(l).unwrap();
                let seq = vsl.read_sequence(l).unwrap();
                m.oob[psa as usize] = Some((l as u32, seq));
                reference[l as usize] = Some(seq);
            }
        }
        if step % 3001 == 3000 {
            let stats_before = vsl.stats();
            vsl = Vsl::recover(cfg.clone(), &m.records(), 0, Some(vsl.erase_counts())).unwrap();
            vsl.enable_media_log();
            recoveries += 1;
            // A store erases what recovery freed, as the card would.
            for leb in 0..vsl.config().geometry.lebs() {
                if vsl.is_free_leb(leb) {
                    let base = (leb * m.spl) as usize;
                    m.oob[base..base + m.spl as usize].fill(None);
                }
            }
            vsl.check_consistency();
            assert!(vsl.stats().host_sectors_written >= stats_before.host_sectors_written);
            for l in 0..user {
                assert_eq!(
                    vsl.read_sequence(l),
                    reference[l as usize],
                    "lba {l} after recovery at step {step} (seed {seed})"
                );
            }
            t = Nanos::ZERO;
        }
    }
    assert!(recoveries >= 10);
    assert!(vsl.stats().gc_runs > 0, "GC never ran (seed {seed})");
}

#[test]
fn recovery_from_oob_records_restores_every_version() {
    crash_and_recover(41, 4096, GcPolicy::Greedy, false);
    crash_and_recover(42, 512, GcPolicy::CostBenefit, false);
    crash_and_recover(43, 4096, GcPolicy::Greedy, true);
    crash_and_recover(44, 512, GcPolicy::CostBenefit, true);
}

#[test]
fn recovery_without_sequence_numbers_is_an_error() {
    let mut cfg = config(4096, GcPolicy::Greedy);
    cfg.track_sequence = false;
    assert!(Vsl::recover(cfg, &[], 0, None).is_err());
}

#[test]
fn recovery_rejects_records_outside_the_device() {
    let cfg = config(4096, GcPolicy::Greedy);
    let bad = OobRecord {
        psa: u32::MAX - 1,
        lba: 0,
        seq: 1,
    };
    assert!(Vsl::recover(cfg, &[bad], 0, None).is_err());
}

/// A cut right after the log frontier took the last free erase unit: every
/// unit holds a live record, and recovery must continue the log in the
/// frontier (after its last written unit) instead of refusing the device.
/// Found by `bench/powercut.sh` (100 SIGKILLs of the attached card).
#[test]
fn recovery_without_a_free_unit_continues_the_frontier() {
    let cfg = config(4096, GcPolicy::Greedy);
    let vsl = Vsl::new(cfg.clone()).unwrap();
    let spl = vsl.slots_per_leb();
    let spu = cfg.slots_per_unit();
    let lebs = cfg.usable_lebs();
    assert!(
        spu < spl,
        "the test needs several write units per erase unit"
    );
    let mut records = Vec::new();
    let mut seq = 0;
    // One live sector in every unit but the last, then the frontier (the
    // last unit) with its first write unit written: the newest records.
    for leb in 0..lebs - 1 {
        seq += 1;
        records.push(OobRecord {
            psa: leb * spl,
            lba: leb,
            seq,
        });
    }
    let frontier = lebs - 1;
    for k in 0..spu {
        seq += 1;
        records.push(OobRecord {
            psa: frontier * spl + k,
            lba: lebs + k,
            seq,
        });
    }
    assert!(((lebs + spu) as u64) < cfg.user_sectors);
    let mut vsl = Vsl::recover(cfg, &records, 0, None).unwrap();
    assert_eq!(vsl.frontier_leb(), frontier);
    vsl.check_consistency();
    for r in &records {
        assert_eq!(vsl.lookup(r.lba as u64), Some(r.psa));
    }
    // The next write lands after the frontier's written unit and reads back.
    vsl.write(Nanos::ZERO, 0, 1).unwrap();
    assert_eq!(vsl.lookup(0), Some(frontier * spl + spu));
    assert_eq!(vsl.read_sequence(0), Some(seq + 1));
}
