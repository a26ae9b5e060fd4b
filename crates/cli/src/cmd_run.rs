use crate::args::{CardArgs, RunArgs, WorkloadArgs};
use crate::output;
use anyhow::{anyhow, bail, Context, Result};
use device::{Card, CardConfig, Format, MemberSel, Preset, VirtualDevice};
use lab::{precondition_fill, RunOptions};
use sim::Nanos;
use workload::units::{parse_duration_ns, parse_percent, parse_size};
use workload::{BlockSizes, Distribution, Profile, WorkloadSpec};

/// Builds the card configuration from the command line.
pub fn card_config(a: &CardArgs) -> Result<CardConfig> {
    let preset = Preset::by_name(&a.device).ok_or_else(|| {
        anyhow!(
            "unknown device '{}' (known: {})",
            a.device,
            Preset::names().join(", ")
        )
    })?;
    let mut c = CardConfig::new(preset);
    c.format = if let Some(cap) = &a.capacity {
        Format::Capacity(parse_size(cap).map_err(|e| anyhow!("--capacity: {e}"))?)
    } else if let Some(op) = &a.overprovision {
        Format::Overprovision(parse_percent(op).map_err(|e| anyhow!("--overprovision: {e}"))?)
    } else {
        Format::parse(&a.format).map_err(|e| anyhow!("--format: {e}"))?
    };
    c.sector_bytes = match a.sector_size.as_str() {
        "512" => 512,
        "4096" | "4k" | "4K" => 4096,
        s => bail!("--sector-size: {s} is not 512 or 4096"),
    };
    c.member = MemberSel::parse(&a.member).map_err(|e| anyhow!("--member: {e}"))?;
    c.chunk_bytes = parse_size(&a.chunk).map_err(|e| anyhow!("--chunk: {e}"))?;
    c.scale = a
        .scale
        .parse::<f64>()
        .ok()
        .filter(|s| *s > 0.0 && *s <= 1.0)
        .ok_or_else(|| anyhow!("--scale: '{}' must be a number in (0, 1]", a.scale))?;
    c.gc_policy = a
        .gc_policy
        .parse()
        .map_err(|e: String| anyhow!("--gc-policy: {e}"))?;
    Ok(c)
}

/// Builds the workload from a profile and fio-style overrides.
pub fn workload_spec(a: &WorkloadArgs) -> Result<WorkloadSpec> {
    let mix = a
        .rwmixread
        .as_deref()
        .map(parse_percent)
        .transpose()
        .map_err(|e| anyhow!("--rwmixread: {e}"))?;
    let mut spec = match &a.profile {
        Some(p) => Profile::by_name(p)
            .ok_or_else(|| {
                let names: Vec<_> = Profile::all().iter().map(|p| p.name).collect();
                anyhow!("unknown profile '{p}' (known: {})", names.join(", "))
            })?
            .spec(),
        None => WorkloadSpec::from_rw(a.rw.as_deref().unwrap_or("randwrite"), mix)?,
    };
    if a.profile.is_some() {
        if let Some(rw) = &a.rw {
            let s = WorkloadSpec::from_rw(rw, mix.or(Some(spec.read_fraction)))?;
            spec.pattern = s.pattern;
            spec.read_fraction = s.read_fraction;
        } else if let Some(m) = mix {
            spec.read_fraction = m;
        }
    }
    if let Some(bs) = &a.bs {
        spec.block_sizes = BlockSizes::Fixed(parse_size(bs).map_err(|e| anyhow!("--bs: {e}"))?);
        spec.round_to_sector = false;
    }
    if let Some(split) = &a.bssplit {
        spec.block_sizes = BlockSizes::parse_split(split).context("--bssplit")?;
        spec.round_to_sector = false;
    }
    if let Some(d) = &a.random_distribution {
        spec.distribution = Distribution::parse(d).context("--random-distribution")?;
    }
    if let Some(s) = &a.size {
        spec.size = Some(parse_size(s).map_err(|e| anyhow!("--size: {e}"))?);
    }
    spec.offset = match a.offset.as_str() {
        "0" => 0,
        o => parse_size(o).map_err(|e| anyhow!("--offset: {e}"))?,
    };
    Ok(spec)
}

pub fn run(a: RunArgs) -> Result<()> {
    let card_cfg = card_config(&a.card)?;
    let spec = workload_spec(&a.workload)?;
    let duration_ns = parse_duration_ns(&a.duration).map_err(|e| anyhow!("--duration: {e}"))?;
    let interval_ns = parse_duration_ns(&a.interval).map_err(|e| anyhow!("--interval: {e}"))?;
    let opts = RunOptions {
        threads: a.threads,
        queue_depth: a.qd,
        duration_ns,
        interval_ns: interval_ns.min(duration_ns),
        seed: a.seed,
    };
    opts.validate()?;
    let mut card = Card::new(card_cfg.clone())?;
    let resolved = spec.resolve(card.capacity_bytes(), card.sector_bytes())?;

    let progress = output::Progress::new(a.quiet, duration_ns);
    let mut start = Nanos::ZERO;
    if a.precondition {
        progress.message("preconditioning: sequential fill of the whole device");
        start = precondition_fill(&mut card, start)?;
    }
    if let Some(w) = &a.warmup {
        let warm_ns = parse_duration_ns(w).map_err(|e| anyhow!("--warmup: {e}"))?;
        progress.message("warming up");
        let warm = RunOptions {
            duration_ns: warm_ns,
            interval_ns: warm_ns,
            ..opts.clone()
        };
        start = lab::run(&mut card, &resolved, &warm, start, &mut |_| {})?.end;
    }
    let measured = std::time::Instant::now();
    let mut result = lab::run(&mut card, &resolved, &opts, start, &mut |iv| {
        progress.interval(iv)
    })?;
    progress.finish();
    result.summary.precondition_s = start.as_secs_f64();
    let wall_s = measured.elapsed().as_secs_f64();

    let report = output::Report {
        tool: "openvsl",
        version: env!("CARGO_PKG_VERSION"),
        device: output::DeviceInfo::new(&card),
        workload: &resolved,
        options: &opts,
        summary: &result.summary,
        intervals: &result.intervals,
    };
    if let Some(path) = &a.json {
        output::write_json(path, &report)?;
    }
    if let Some(path) = &a.csv {
        output::write_csv(path, &result.intervals)?;
    }
    if !a.quiet {
        output::print_summary(&report, wall_s);
    }
    Ok(())
}
