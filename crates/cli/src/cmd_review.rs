use crate::args::ReviewArgs;
use anyhow::{anyhow, bail, Context, Result};
use device::{CardConfig, Format, Preset};
use ftl::GcPolicy;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use lab::review::{
    phase_count, review_target_observed, Measured, ModelTarget, ReviewPlan, ReviewTarget,
    TargetResult,
};
use serde::Serialize;
use std::path::Path;
use workload::units::{parse_percent, parse_size};

/// Everything a review produced; written as results.json.
#[derive(Serialize)]
pub struct ReviewResults<'a> {
    pub tool: &'static str,
    pub version: &'static str,
    pub plan: &'a ReviewPlan,
    pub targets: &'a [TargetResult],
}

/// `PRESET[:FORMAT][:512][:gc=POLICY]`, FORMAT one of the format names,
/// `op=PCT` or `capacity=SIZE`; `--device X --format F` is the same as
/// `X:F`. `gc=` comes last, as a policy may hold a colon (`d-choices:8`);
/// without it the card uses `gc_policy`.
pub fn model_config(spec: &str, scale: f64, gc_policy: GcPolicy) -> Result<CardConfig> {
    let (card, gc) = match spec.split_once(":gc=") {
        Some((card, gc)) => (card, Some(gc)),
        None => (spec, None),
    };
    let gc_policy = match gc {
        Some(g) => g
            .parse()
            .map_err(|e: String| anyhow!("target {spec}: {e}"))?,
        None => gc_policy,
    };
    let mut parts = card.split(':');
    let name = parts.next().unwrap_or_default();
    let preset = Preset::resolve(name).map_err(|e| {
        anyhow!(
            "unknown target '{spec}': {e}; or a real target file:PATH:SIZE or blockdev:/dev/NAME"
        )
    })?;
    let mut c = CardConfig::new(preset);
    c.scale = scale;
    c.gc_policy = gc_policy;
    for p in parts {
        if p == "512" || p == "4096" {
            c.sector_bytes = p.parse().expect("digits");
        } else if let Some(op) = p.strip_prefix("op=") {
            c.format = Format::Overprovision(
                parse_percent(op).map_err(|e| anyhow!("target {spec}: {e}"))?,
            );
        } else if let Some(cap) = p.strip_prefix("capacity=") {
            c.format =
                Format::Capacity(parse_size(cap).map_err(|e| anyhow!("target {spec}: {e}"))?);
        } else {
            c.format = Format::parse(p).map_err(|e| anyhow!("target {spec}: {e}"))?;
        }
    }
    Ok(c)
}

fn build_target(
    spec: &str,
    scale: f64,
    seed: u64,
    gc_policy: GcPolicy,
    placement: &ftl::PlacementSpec,
) -> Result<Box<dyn ReviewTarget>> {
    if spec.starts_with("file:") || spec.starts_with("blockdev:") {
        return crate::realdev::review_target(spec);
    }
    let mut cfg = model_config(spec, scale, gc_policy)?;
    cfg.gc_seed = seed;
    cfg.placement = placement.clone();
    Ok(Box::new(ModelTarget::new(spec, cfg)?))
}

pub fn review(a: ReviewArgs) -> Result<()> {
    let mut plan = if a.quick {
        ReviewPlan::quick()
    } else {
        ReviewPlan::default()
    };
    if let Some(path) = &a.plan {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read plan {}", path.display()))?;
        plan = ReviewPlan::from_toml_text(&text, plan)
            .map_err(|e| anyhow!("plan {}: {e}", path.display()))?;
    }
    if let Some(seed) = a.seed {
        plan.seed = seed;
    }
    if let Some(s) = &a.scale {
        plan.scale = s
            .parse::<f64>()
            .ok()
            .filter(|v| *v > 0.0 && *v <= 1.0)
            .ok_or_else(|| anyhow!("--scale: '{s}' must be a number in (0, 1]"))?;
    }
    let gc_policy = a.policy.gc_policy()?;
    let placement = a.policy.placement()?;
    plan.targets.extend(a.targets.iter().cloned());
    if plan.targets.is_empty() {
        bail!("no targets: give --target PRESET:FORMAT (e.g. iodrive-duo-640-mlc:stock) or file:PATH:SIZE, or a plan with targets");
    }
    plan.timing(false)?;
    let mut apps = Vec::new();
    if let Some(p) = &a.pgbench {
        apps.push(crate::app_report::AppResults::Pgbench(
            crate::app_report::PgbenchResults::load(p)?,
        ));
    }
    for p in &a.apps {
        apps.push(crate::app_report::AppResults::load(p)?);
    }
    // A target that cannot be opened (full filesystem, no permission) is
    // recorded as failed; the others still run and their results are kept.
    let mut targets = Vec::new();
    let mut failed_to_open = Vec::new();
    for t in &plan.targets {
        match build_target(t, plan.scale, plan.seed, gc_policy, &placement) {
            Ok(target) => targets.push(target),
            Err(e) if realtime::Target::is_real(t) => failed_to_open.push(TargetResult {
                label: t.clone(),
                error: Some(format!("{t}: {e:#}")),
                ..TargetResult::default()
            }),
            Err(e) => return Err(e),
        }
    }
    std::fs::create_dir_all(&a.out)
        .with_context(|| format!("cannot create {}", a.out.display()))?;

    let wall = std::time::Instant::now();
    let total = phase_count(&plan) as u64;
    let multi = MultiProgress::with_draw_target(if a.quiet {
        ProgressDrawTarget::hidden()
    } else {
        ProgressDrawTarget::stderr()
    });
    let style = ProgressStyle::with_template(
        "{prefix:<28} [{bar:25}] {pos}/{len} phases, eta {eta} {wide_msg}",
    )
    .expect("valid template")
    .progress_chars("=> ");
    let results: Vec<TargetResult> = std::thread::scope(|s| {
        let handles: Vec<_> = targets
            .into_iter()
            .enumerate()
            .map(|(i, mut t)| {
                let bar = multi.add(ProgressBar::new(total));
                bar.set_style(style.clone());
                bar.set_prefix(t.label().to_string());
                let plan = &plan;
                s.spawn(move || {
                    let label = format!("vsl review {}", t.label());
                    let mut publisher = rundir::live::Publisher::part("review", &label, i);
                    let mut progress = |phase: &str| {
                        if !phase.contains("round") {
                            bar.inc(1);
                        }
                        bar.set_message(phase.to_string());
                    };
                    let r = review_target_observed(t.as_mut(), plan, &mut progress, &mut |m| {
                        publish(&mut publisher, m)
                    });
                    bar.finish_with_message(match &r.error {
                        None => "done".to_string(),
                        Some(e) => format!("FAILED: {e}"),
                    });
                    r
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("review thread panicked"))
            .collect()
    });
    let wall_s = wall.elapsed().as_secs_f64();
    let mut results = results;
    results.extend(failed_to_open);

    let all = ReviewResults {
        tool: "openvsl",
        version: env!("CARGO_PKG_VERSION"),
        plan: &plan,
        targets: &results,
    };
    crate::output::write_json(&a.out.join("lab_results.json"), &all)?;
    crate::review_report::render(&a.out, &plan, &results, &apps)?;
    if !a.quiet {
        print_summary(&results, &a.out, wall_s);
    }
    let failed: Vec<&str> = results.iter().filter_map(|r| r.error.as_deref()).collect();
    if !failed.is_empty() {
        bail!(
            "{} of {} targets failed (results of the others are in {}): {}",
            failed.len(),
            results.len(),
            a.out.display(),
            failed.join("; ")
        );
    }
    Ok(())
}

/// Publishes a measured phase of a review for `vsl status` and `vsl serve`.
fn publish(p: &mut rundir::live::Publisher, m: &Measured) {
    let health = (!m.health.is_empty()).then(|| device::HealthPoint::of(m.t_s, m.health));
    let mut point = crate::health_series::live_point(m.stats, health.as_ref());
    point.t_s = m.t_s;
    p.push(point, false, || m.health.to_vec());
}

fn stat_at<'a>(
    r: &'a TargetResult,
    profile: &str,
    threads: u32,
    qd: u32,
) -> Option<&'a lab::IntervalStats> {
    r.profiles
        .iter()
        .find(|p| p.profile == profile)?
        .matrix
        .iter()
        .find(|m| m.threads == threads && m.qd == qd)
        .map(|m| &m.stats)
}

fn print_summary(results: &[TargetResult], out: &Path, wall_s: f64) {
    println!(
        "{:<34} {:>12} {:>12} {:>12} {:>14} {:>14}",
        "target (16T/16Q)", "4K write", "4K read", "8K 70/30", "File Server", "Web Server"
    );
    for r in results {
        let iops = |p: &str| {
            stat_at(r, p, 16, 16)
                .map(|s| format!("{:.0}", s.iops))
                .unwrap_or_else(|| "-".into())
        };
        let lat = |p: &str| {
            stat_at(r, p, 16, 16)
                .map(|s| format!("{:.2} ms", s.lat_avg_us / 1e3))
                .unwrap_or_else(|| "-".into())
        };
        println!(
            "{:<34} {:>12} {:>12} {:>12} {:>14} {:>14}",
            r.label,
            iops("4k-randwrite"),
            iops("4k-randread"),
            iops("8k-7030"),
            lat("fileserver"),
            iops("webserver")
        );
        for p in &r.profiles {
            let conv = match (p.reused_state, p.converged_round) {
                (true, _) => "state reused from the previous profile".to_string(),
                (false, Some(n)) => {
                    format!("steady state at round {n} of {}", p.precondition.len())
                }
                (false, None) => format!(
                    "did not reach steady state in {} rounds",
                    p.precondition.len()
                ),
            };
            println!("    {:<14} preconditioning: {conv}", p.profile);
        }
    }
    let ios: u64 = results.iter().map(|r| r.ios).sum();
    println!(
        "report: {}  ({} I/Os simulated or issued, {:.1} s wall)",
        out.join("index.html").display(),
        ios,
        wall_s
    );
}
