use crate::args::ValidateArgs;
use anyhow::{anyhow, bail, Result};
use lab::validate::{validate_formats, Preconditioned, Row, ValidateOptions};
use workload::units::parse_duration_ns;

pub fn validate(a: ValidateArgs) -> Result<()> {
    let scale = a
        .scale
        .parse::<f64>()
        .ok()
        .filter(|s| *s > 0.0 && *s <= 1.0)
        .ok_or_else(|| anyhow!("--scale: '{}' must be a number in (0, 1]", a.scale))?;
    let window_ns = parse_duration_ns(&a.window).map_err(|e| anyhow!("--window: {e}"))?;
    if !(a.min_capacities.is_finite() && (0.0..=20.0).contains(&a.min_capacities)) {
        bail!(
            "--min-capacities: {} must be a number of device capacities in [0, 20]",
            a.min_capacities
        );
    }
    // Rounds and the 6-hour cap scale with capacity so that a scaled card
    // sees the same number of device-writes per round as the full one.
    let preset = device::Preset::resolve(&a.device).map_err(|e| anyhow!("--device: {e}"))?;
    let o = ValidateOptions {
        preset,
        scale,
        window_ns,
        round_ns: ((600e9 * scale) as u64).max(10_000_000_000),
        max_precondition_ns: ((6.0 * 3600e9 * scale) as u64).max(600_000_000_000),
        seed: a.seed,
        only: None,
        purge: a.purge,
        min_capacities: a.min_capacities,
    };
    let o = match &a.rows {
        None => o,
        Some(text) => {
            let only: Vec<(String, String)> = lab::validate::MEASURED
                .iter()
                .filter(|m| m.test.contains(text.as_str()))
                .map(|m| (m.format.to_string(), m.test.to_string()))
                .collect();
            if only.is_empty() {
                bail!("--rows: no row's name contains '{text}'");
            }
            ValidateOptions {
                only: Some(only),
                ..o
            }
        }
    };
    let wall = std::time::Instant::now();
    if let Some(list) = &a.datasheet {
        return datasheet(list, scale, window_ns, &a, wall);
    }
    let jobs = crate::output::jobs(a.jobs).map_err(|e| anyhow!("--jobs: {e}"))?;
    let progress = |name: &str| eprintln!("[{:>6.1}s] {name}", wall.elapsed().as_secs_f64());
    let mut rows = Vec::new();
    let mut pre = Vec::new();
    for (format, r, p) in
        validate_formats(&o, a.format != "hp", a.format != "stock", jobs, &progress)?
    {
        rows.extend(r);
        pre.push((format, p));
    }
    println!(
        "{} {}, scale {scale}, window {}, seed {}",
        preset.name, a.format, a.window, a.seed
    );
    print_rows(&rows);
    for (format, p) in &pre {
        print_preconditioning(format, p);
    }
    let within = |f: fn(&Row) -> bool| rows.iter().filter(|r| f(r)).count();
    println!(
        "{} of {} rows within +-15%, {} within +-25%; wall time {:.1} s",
        within(|r| r.within_15pct),
        rows.len(),
        within(|r| r.within_25pct),
        wall.elapsed().as_secs_f64()
    );
    if let Some(path) = &a.json {
        let pre: serde_json::Map<String, serde_json::Value> = pre
            .iter()
            .map(|(f, p)| (f.to_string(), serde_json::json!(p)))
            .collect();
        crate::output::write_json(
            path,
            &serde_json::json!({ "options": o, "rows": rows, "preconditioning": pre }),
        )?;
    }
    Ok(())
}

fn print_rows(rows: &[Row]) {
    println!(
        "{:<5} {:<46} {:>6} {:>18} {:>12} {:>7}  {:<10}",
        "fmt", "test", "unit", "measured", "model", "ratio", "role"
    );
    for r in rows {
        let measured = if r.measured_hi.is_infinite() {
            format!(">= {:.1}", r.measured_lo)
        } else if r.measured_lo == r.measured_hi {
            format!("{:.1}", r.measured_lo)
        } else {
            format!("{:.1}-{:.1}", r.measured_lo, r.measured_hi)
        };
        let mark = if !r.within_25pct {
            "OUTSIDE +-25%"
        } else if !r.within_15pct {
            "outside +-15%"
        } else {
            ""
        };
        println!(
            "{:<5} {:<46} {:>6} {:>18} {:>12.2} {:>7.2}  {:<10}  {mark}",
            r.format, r.test, r.unit, measured, r.model, r.ratio, r.role
        );
    }
}

fn print_preconditioning(format: &str, pre: &[Preconditioned]) {
    for p in pre {
        println!(
            "{format} precondition {}: {} rounds, {}",
            p.test,
            p.rounds_iops.len(),
            p.converged_round
                .map(|r| format!("steady at round {r}"))
                .unwrap_or_else(|| "did not reach steady state".into())
        );
    }
}

/// `vsl validate --datasheet PRESETS`: every data-sheet figure of each preset.
fn datasheet(
    list: &str,
    scale: f64,
    window_ns: u64,
    a: &ValidateArgs,
    wall: std::time::Instant,
) -> Result<()> {
    let presets: Vec<&'static device::Preset> = if list == "all" {
        device::presets().iter().collect()
    } else {
        list.split(',')
            .map(|n| device::Preset::resolve(n.trim()).map_err(|e| anyhow!("--datasheet: {e}")))
            .collect::<Result<_>>()?
    };
    let mut rows = Vec::new();
    for p in presets {
        let r = lab::validate::datasheet_rows(p, scale, window_ns, a.seed, &mut |name| {
            eprintln!("[{:>6.1}s] {name}", wall.elapsed().as_secs_f64())
        })?;
        rows.extend(r);
    }
    println!(
        "data-sheet figures, scale {scale}, window {}, seed {}",
        a.window, a.seed
    );
    println!(
        "{:<20} {:<30} {:>5} {:>10} {:>10} {:>6}  {:<10}",
        "preset", "figure", "unit", "sheet", "model", "ratio", "role"
    );
    let mut outside = 0;
    for r in &rows {
        outside += !r.within_25pct as usize;
        println!(
            "{:<20} {:<30} {:>5} {:>10.1} {:>10.1} {:>6.2}  {:<10}  {}",
            r.preset,
            r.test,
            r.unit,
            r.datasheet,
            r.model,
            r.ratio,
            r.role,
            if r.within_25pct { "" } else { "OUTSIDE +-25%" }
        );
    }
    let predicted: Vec<_> = rows.iter().filter(|r| r.role == "predicted").collect();
    println!(
        "{} of {} rows within +-25% ({} of {} predicted rows); wall time {:.1} s",
        rows.len() - outside,
        rows.len(),
        predicted.iter().filter(|r| r.within_25pct).count(),
        predicted.len(),
        wall.elapsed().as_secs_f64()
    );
    if let Some(path) = &a.json {
        crate::output::write_json(path, &serde_json::json!({ "scale": scale, "rows": rows }))?;
    }
    Ok(())
}
