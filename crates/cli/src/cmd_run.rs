use crate::args::{CardArgs, RunArgs, WorkloadArgs};
use crate::health_series::{self, HealthPoint, Sampled};
use crate::output;
use anyhow::{anyhow, bail, Context, Result};
use device::{Card, CardConfig, VirtualDevice};
use lab::{precondition_fill, RunOptions};
use realtime::{FillPattern, LayoutMode};
use sim::Nanos;
use workload::units::{parse_duration_ns, parse_percent, parse_size};
use workload::{BlockSizes, Distribution, Profile, WorkloadSpec};

/// Builds the card configuration from the command line (the same parsing
/// `vsl attach` uses, so both spell a card the same way).
pub fn card_config(a: &CardArgs) -> Result<CardConfig> {
    let spec = blockdev::store::CardSpec {
        device: a.device.clone(),
        format: a.format.clone(),
        capacity: a.capacity.clone(),
        overprovision: a.overprovision.clone(),
        sector_size: a.sector_size.clone(),
        member: a.member.clone(),
        scale: a.scale.clone(),
        gc_policy: a.gc_policy.clone(),
    };
    let mut c = blockdev::cli::card_config(&spec)?;
    // Virtual-time runs carry no data: no per-slot sequence numbers.
    c.track_sequence = false;
    c.gc_mode = a.gc_mode.parse().map_err(|e| anyhow!("--gc-mode: {e}"))?;
    c.read_priority = match a.read_priority.as_str() {
        "on" => true,
        "off" => false,
        o => return Err(anyhow!("--read-priority: '{o}' (expected on or off)")),
    };
    let pct = parse_percent(&a.buffer_compress_percentage)
        .map_err(|e| anyhow!("--buffer-compress-percentage: {e}"))?;
    if pct >= 1.0 {
        return Err(anyhow!(
            "--buffer-compress-percentage: {}% leaves no data (expected 0 to 99)",
            pct * 100.0
        ));
    }
    c.data_compressibility = 1.0 - pct;
    c.suspend_ns = match a.suspend.as_str() {
        "off" => None,
        d => Some(parse_duration_ns(d).map_err(|e| anyhow!("--suspend: {e}"))?),
    };
    c.chunk_bytes = parse_size(&a.chunk).map_err(|e| anyhow!("--chunk: {e}"))?;
    c.environment.ambient_c = a
        .ambient_temp
        .parse()
        .ok()
        .filter(|t: &f64| (-40.0..=80.0).contains(t))
        .ok_or_else(|| {
            anyhow!(
                "--ambient-temp: '{}' is not a temperature in °C from -40 to 80",
                a.ambient_temp
            )
        })?;
    c.environment.airflow_lfm = a
        .airflow
        .parse()
        .ok()
        .filter(|f: &f64| (0.0..=5000.0).contains(f))
        .ok_or_else(|| {
            anyhow!(
                "--airflow: '{}' is not an airflow in LFM from 0 to 5000",
                a.airflow
            )
        })?;
    c.environment.external_power = match a.external_power.as_str() {
        "on" => true,
        "off" => false,
        s => bail!("--external-power: '{s}' (expected on or off)"),
    };
    blockdev::cli::set_reliability(&mut c, &a.fail_die, &a.flashback, &a.media_errors)?;
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

/// Receives a run's progress: phase messages and each finished interval.
pub trait Observer {
    fn message(&self, m: &str);
    fn interval(&self, iv: &lab::IntervalStats);
    /// A real target's layout: `done` of `total` bytes written.
    fn layout(&self, _done: u64, _total: u64) {}
}

impl Observer for output::Progress {
    fn message(&self, m: &str) {
        output::Progress::message(self, m)
    }
    fn interval(&self, iv: &lab::IntervalStats) {
        output::Progress::interval(self, iv)
    }
    fn layout(&self, done: u64, total: u64) {
        output::Progress::layout(self, done, total)
    }
}

/// Reports nothing.
pub struct Silent;

impl Observer for Silent {
    fn message(&self, _: &str) {}
    fn interval(&self, _: &lab::IntervalStats) {}
}

/// Parses `a`'s time options into the lab's run options.
fn run_options(a: &RunArgs) -> Result<(RunOptions, Option<u64>)> {
    let duration_ns = parse_duration_ns(&a.duration).map_err(|e| anyhow!("--duration: {e}"))?;
    let interval_ns = parse_duration_ns(&a.interval).map_err(|e| anyhow!("--interval: {e}"))?;
    let warmup_ns = a
        .warmup
        .as_deref()
        .map(|w| parse_duration_ns(w).map_err(|e| anyhow!("--warmup: {e}")))
        .transpose()?;
    let opts = RunOptions {
        threads: a.threads,
        queue_depth: a.qd,
        duration_ns,
        interval_ns: interval_ns.min(duration_ns),
        seed: a.seed,
    };
    opts.validate()?;
    Ok((opts, warmup_ns))
}

/// Runs what `vsl run` options describe, reporting to `obs`, and returns
/// the result; writes nothing. `vsl run`, `vsl sweep` and the Python
/// package all come through here.
pub fn execute(a: &RunArgs, obs: &dyn Observer) -> Result<Done> {
    let spec = workload_spec(&a.workload)?;
    let (opts, warmup_ns) = run_options(a)?;
    match &a.target {
        Some(t) if realtime::Target::is_real(t) => run_real(t, a, &spec, opts, warmup_ns, obs),
        _ => run_model(a, &spec, opts, warmup_ns, obs),
    }
}

/// The virtual duration of the measured part of a run, for progress bars.
pub fn duration_ns(a: &RunArgs) -> Result<u64> {
    Ok(run_options(a)?.0.duration_ns)
}

pub fn run(a: RunArgs) -> Result<()> {
    let duration_ns = duration_ns(&a)?;
    let progress = output::Progress::new(a.quiet, duration_ns);
    let done = execute(&a, &progress)?;
    progress.finish();
    let report = done.report();
    if let Some(path) = &a.json {
        output::write_json(path, &report)?;
    }
    if let Some(path) = &a.csv {
        output::write_csv(path, &done.result.intervals)?;
    }
    if !a.quiet {
        output::print_summary(&report, &done.device_line, done.wall_s);
    }
    Ok(())
}

/// What one run produced, whatever the target.
pub struct Done {
    pub device: serde_json::Value,
    pub device_line: String,
    pub workload: WorkloadSpec,
    pub options: RunOptions,
    pub result: lab::RunResult,
    /// Temperature, power and endurance used per interval (modelled runs).
    pub health: Option<Vec<HealthPoint>>,
    /// Die-failure and media-error counters of the members that model
    /// them (modelled runs with --fail-die or --media-errors on).
    pub media: Option<Vec<device::MediaReport>>,
    /// Wall time of the measured part (not in the report: not deterministic).
    pub wall_s: f64,
    /// Real targets: the layout and what reached the device.
    pub real: Option<RealDone>,
}

/// What a run on a real target adds: the layout before it and the device
/// counters around it.
pub struct RealDone {
    pub layout: realtime::Prepared,
    pub device: realtime::DeviceReport,
}

impl Done {
    /// What `vsl run --json` writes.
    pub fn report(&self) -> output::Report<'_> {
        output::Report {
            tool: "openvsl",
            version: env!("CARGO_PKG_VERSION"),
            device: self.device.clone(),
            workload: &self.workload,
            options: &self.options,
            summary: &self.result.summary,
            intervals: &self.result.intervals,
            health: self.health.as_deref(),
            media: self.media.as_deref(),
            layout: self.real.as_ref().map(|r| &r.layout),
            disk_util: self.real.as_ref().map(|r| r.device.disk_util.as_slice()),
            measured_on_device: self.real.as_ref().map(|r| &r.device.measured_on_device),
        }
    }
}

fn run_model(
    a: &RunArgs,
    spec: &WorkloadSpec,
    opts: RunOptions,
    warmup_ns: Option<u64>,
    progress: &dyn Observer,
) -> Result<Done> {
    let mut cfg = card_config(&a.card)?;
    if let Some(t) = &a.target {
        let m = crate::cmd_review::model_config(t, cfg.scale, cfg.gc_policy)?;
        cfg.preset = m.preset;
        cfg.format = m.format;
        cfg.sector_bytes = m.sector_bytes;
        cfg.gc_policy = m.gc_policy;
    }
    cfg.reliability.seed = a.seed;
    cfg.gc_seed = a.seed;
    // --fail-die times count from the start of the measured run.
    cfg.reliability.defer_failures = true;
    let mut card = Card::new(cfg)?;
    let resolved = spec.resolve(card.capacity_bytes(), card.sector_bytes())?;
    let mut start = Nanos::ZERO;
    if a.precondition {
        progress.message("preconditioning: sequential fill of the whole device");
        start = precondition_fill(&mut card, start)?;
    }
    if let Some(warm_ns) = warmup_ns {
        progress.message("warming up");
        let warm = RunOptions {
            duration_ns: warm_ns,
            interval_ns: warm_ns,
            ..opts.clone()
        };
        start = lab::run(&mut card, &resolved, &warm, start, &mut |_| {})?.end;
    }
    card.arm_die_failures(start)?;
    let measured = std::time::Instant::now();
    let label = format!(
        "vsl run {} {}",
        cfg_label(&card),
        a.workload
            .profile
            .as_deref()
            .or(a.workload.rw.as_deref())
            .unwrap_or("randwrite")
    );
    let mut publisher = blockdev::live::Publisher::new("run", &label);
    let mut sampled = Sampled::new(&mut card, start, opts.interval_ns);
    let series = sampled.series.clone();
    let mut result = lab::run(&mut sampled, &resolved, &opts, start, &mut |iv| {
        progress.interval(iv);
        health_series::publish(&mut publisher, iv, &series);
    })?;
    sampled.finish(result.end);
    drop(sampled);
    result.summary.precondition_s = start.as_secs_f64();
    let health = std::mem::take(&mut series.borrow_mut().points);
    let info = output::DeviceInfo::new(&card);
    let media = card.media();
    Ok(Done {
        media: (!media.is_empty()).then_some(media),
        device_line: info.line(),
        device: serde_json::to_value(&info)?,
        workload: resolved,
        options: opts,
        result,
        health: Some(health),
        wall_s: measured.elapsed().as_secs_f64(),
        real: None,
    })
}

/// Device and format of a card, for the live label.
fn cfg_label(card: &Card) -> String {
    format!("{} {}", card.config.preset.name, card.config.format.label())
}

/// The real-target options of `vsl run`.
fn real_options(a: &RunArgs) -> Result<(realtime::DirectMode, LayoutMode, FillPattern)> {
    let direct = match a.direct.as_str() {
        "1" => realtime::DirectMode::Require,
        "0" => realtime::DirectMode::Off,
        d => bail!("--direct: '{d}' (expected 1 for O_DIRECT or 0 for buffered I/O)"),
    };
    let layout = LayoutMode::parse(&a.layout).map_err(|e| anyhow!("--layout: {e}"))?;
    let pattern =
        FillPattern::parse(&a.fill_pattern).map_err(|e| anyhow!("--fill-pattern: {e}"))?;
    Ok((direct, layout, pattern))
}

fn run_real(
    t: &str,
    a: &RunArgs,
    spec: &WorkloadSpec,
    opts: RunOptions,
    warmup_ns: Option<u64>,
    progress: &dyn Observer,
) -> Result<Done> {
    use realtime::{EngineOptions, RealTarget, Target};
    let (direct, layout_mode, pattern) = real_options(a)?;
    let target = Target::parse(t)?;
    let rt = RealTarget::open(&target, direct)?;
    let resolved = spec.resolve(rt.capacity_bytes(), rt.sector_bytes())?;
    let engine = EngineOptions::default();
    let mut pre_s = 0.0;
    let layout = if a.precondition {
        progress.message("preconditioning: sequential fill of the whole target");
        let fill = rt.fill(pattern, &mut |d, n| progress.layout(d, n))?;
        pre_s += fill.wall_s;
        rt.prepare(false, layout_mode, pattern, &mut |_, _| {})?
    } else {
        let reads = resolved.read_fraction > 0.0;
        let p = rt.prepare(reads, layout_mode, pattern, &mut |d, n| {
            progress.layout(d, n)
        })?;
        pre_s += p.wall_s;
        p
    };
    for note in &layout.notes {
        eprintln!("vsl: note: {note}");
    }
    if let Some(warm_ns) = warmup_ns {
        progress.message("warming up");
        let warm = RunOptions {
            duration_ns: warm_ns,
            interval_ns: warm_ns,
            ..opts.clone()
        };
        pre_s += rt.run(&resolved, &warm, &engine, &mut |_| {})?.info.wall_s;
    }
    let mut run = rt.run(&resolved, &opts, &engine, &mut |iv| progress.interval(iv))?;
    run.result.summary.precondition_s = pre_s;
    run.device.set_unwritten_share(layout.unwritten_share());
    for note in &run.info.notes {
        eprintln!("vsl: note: {note}");
    }
    if !run.device.measured_on_device.measured {
        eprintln!("vsl: warning: {}", run.device.measured_on_device.words);
    }
    let device_line = format!(
        "target    {} (real, wall time) {:.1} GB, {} B sectors, {}, engine {:?}",
        t,
        run.info.capacity_bytes as f64 / 1e9,
        run.info.sector_bytes,
        if run.info.direct {
            "O_DIRECT"
        } else {
            "buffered"
        },
        run.info.engine
    );
    Ok(Done {
        device: serde_json::to_value(&run.info)?,
        device_line,
        workload: resolved,
        options: opts,
        wall_s: run.info.wall_s,
        result: run.result,
        health: None,
        media: None,
        real: Some(RealDone {
            layout,
            device: run.device,
        }),
    })
}
