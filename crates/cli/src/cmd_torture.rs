//! `vsl torture`: a randomized, deterministic power-cut campaign on one
//! ioMemory device of a modelled card (`ftl::protect`).

use crate::args::TortureArgs;
use anyhow::{anyhow, bail, Result};
use ftl::protect::{run_campaign, run_plain, CampaignConfig, CampaignReport, Fault};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Serialize;
use std::time::Instant;

#[derive(Serialize)]
struct Output<'a> {
    device: &'a str,
    scale: &'a str,
    sector_bytes: u32,
    user_sectors: u64,
    checkpoint_lebs: u32,
    config: &'a CampaignConfig,
    report: &'a CampaignReport,
    wall_s: f64,
    cuts_per_wall_s: f64,
}

/// Builds the campaign from the command line.
pub fn campaign_config(a: &TortureArgs) -> Result<CampaignConfig> {
    let spec = device::CardSpec {
        device: a.device.clone(),
        format: a.format.clone(),
        capacity: None,
        overprovision: None,
        sector_size: a.sector_size.clone(),
        member: "0".into(),
        scale: a.scale.clone(),
        gc_policy: "greedy".into(),
        placement: None,
        streams: Vec::new(),
    };
    let mut card = device::card_config(&spec)?;
    card.gc_mode = a.gc_mode.parse().map_err(|e| anyhow!("--gc-mode: {e}"))?;
    card.track_sequence = true;
    let ftl = card.ftl_config()?;
    const MAX_SLOTS: u64 = 1 << 23;
    let slots = ftl.geometry.lebs() as u64 * ftl.slots_per_leb() as u64;
    if slots > MAX_SLOTS {
        bail!(
            "--scale {}: {slots} physical slots is too large a card for a power-cut campaign \
             (every cut rebuilds the map); use --scale 0.001 or smaller",
            a.scale
        );
    }
    if a.power_cuts == 0 {
        bail!("--power-cuts must be at least 1");
    }
    let mut c = CampaignConfig::new(ftl, a.power_cuts, a.seed);
    if let Some(n) = a.checkpoint_lebs {
        c.protect.checkpoint_lebs = n;
    }
    if a.max_calls == 0 {
        bail!("--max-calls must be at least 1");
    }
    c.max_calls = a.max_calls;
    c.protect.fault = a
        .fault
        .parse::<Fault>()
        .map_err(|e| anyhow!("--fault: {e}"))?;
    Ok(c)
}

pub fn torture(a: TortureArgs) -> Result<()> {
    let cfg = campaign_config(&a)?;
    if a.baseline {
        let wall = Instant::now();
        let calls = run_plain(&cfg)?;
        let wall_s = wall.elapsed().as_secs_f64();
        if a.json {
            let v = serde_json::json!({
                "baseline": true,
                "host_calls": calls,
                "wall_s": wall_s,
                "calls_per_wall_s": calls as f64 / wall_s.max(1e-9),
            });
            println!("{}", serde_json::to_string_pretty(&v)?);
        } else {
            println!(
                "baseline (no power cuts): {calls} host calls in {wall_s:.2} s ({:.0} calls/s)",
                calls as f64 / wall_s.max(1e-9)
            );
        }
        return Ok(());
    }
    let bar = if a.quiet || a.json {
        ProgressBar::hidden()
    } else {
        let b = ProgressBar::with_draw_target(Some(cfg.cuts), ProgressDrawTarget::stderr());
        b.set_style(
            ProgressStyle::with_template("{spinner} power cuts {pos}/{len} [{bar:30}] eta {eta}")
                .expect("valid template")
                .progress_chars("=> "),
        );
        b
    };
    let wall = Instant::now();
    let report = run_campaign(&cfg, |done| {
        if a.progress_lines && done % 1000 == 0 {
            eprintln!(
                "{done}/{} cuts, {:.0} s",
                cfg.cuts,
                wall.elapsed().as_secs_f64()
            );
        }
        if done % 64 == 0 {
            bar.set_position(done);
        }
    })?;
    bar.finish_and_clear();
    let wall_s = wall.elapsed().as_secs_f64();
    let cps = report.cuts as f64 / wall_s.max(1e-9);
    if a.json {
        let out = Output {
            device: &a.device,
            scale: &a.scale,
            sector_bytes: cfg.ftl.sector_bytes,
            user_sectors: cfg.ftl.user_sectors,
            checkpoint_lebs: cfg.protect.checkpoint_lebs,
            config: &cfg,
            report: &report,
            wall_s,
            cuts_per_wall_s: cps,
        };
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        print_report(&a, &cfg, &report, wall_s);
    }
    let bad = report.failures();
    if bad > 0 {
        bail!(
            "power-cut campaign failed (seed {}): {} lost, {} trimmed sectors came back, {} atomic writes half applied; first: {}",
            report.seed,
            report.lost,
            report.resurrected,
            report.torn_atomic,
            report.first_failure.as_deref().unwrap_or("-")
        );
    }
    Ok(())
}

fn ms(ns: f64) -> String {
    format!("{:.3} ms", ns / 1e6)
}

fn print_report(a: &TortureArgs, cfg: &CampaignConfig, r: &CampaignReport, wall_s: f64) {
    println!(
        "power-cut campaign: {} {} at scale {}, ioMemory 0: {} sectors of {} B, {} erase units, checkpoint every {} erase units opened, seed {}",
        a.device,
        a.format,
        a.scale,
        cfg.ftl.user_sectors,
        cfg.ftl.sector_bytes,
        cfg.ftl.usable_lebs(),
        cfg.protect.checkpoint_lebs,
        r.seed
    );
    let rows = [
        ("power cuts", r.cuts.to_string()),
        (
            "acknowledged writes",
            format!("{} ({} atomic)", r.writes_acked, r.atomic_writes_acked),
        ),
        ("acknowledged trims", r.trims_acked.to_string()),
        ("sectors checked", r.sectors_checked.to_string()),
        ("cuts in atomic writes", r.cuts_in_atomic.to_string()),
        ("torn checkpoints", r.torn_checkpoints.to_string()),
        (
            "recovery min/avg/max",
            format!(
                "{} / {} / {}",
                ms(r.recovery.min_ns as f64),
                ms(r.recovery.avg_ns),
                ms(r.recovery.max_ns as f64)
            ),
        ),
        (
            "erase units scanned",
            format!("{:.2} per recovery", r.avg_lebs_scanned),
        ),
        ("lost", r.lost.to_string()),
        ("trimmed data back", r.resurrected.to_string()),
        ("half-applied atomic", r.torn_atomic.to_string()),
        (
            "wall",
            format!(
                "{wall_s:.2} s ({:.0} cuts/s)",
                r.cuts as f64 / wall_s.max(1e-9)
            ),
        ),
    ];
    for (k, v) in rows {
        println!("{k:<24}{v}");
    }
}
