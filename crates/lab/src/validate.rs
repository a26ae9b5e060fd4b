//! The SYSTEM.md §4 and §4b validation tables: the `iodrive-duo-640-mlc`
//! preset (or a preset file fitted to it) through the reviews' tests at the
//! stock and the high-performance format, model vs measured.

use crate::runner::{precondition_fill, run, RunError, RunOptions, RunResult};
use crate::stats::IntervalStats;
use crate::steady::check_window;
use device::{Card, CardConfig, Format, Preset, VirtualDevice};
use serde::Serialize;
use sim::Nanos;
use workload::{Profile, WorkloadSpec};

/// One row of the table. `measured_lo..=measured_hi` is the reviewer's
/// figure (equal ends for a single number; `hi` = ∞ for a lower bound).
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub test: String,
    pub unit: &'static str,
    pub measured_lo: f64,
    pub measured_hi: f64,
    pub model: f64,
    /// model / measured (the nearest end of a range; 1 inside it).
    pub ratio: f64,
    pub within_25pct: bool,
    /// Issue 29's bar: within ±15 %.
    pub within_15pct: bool,
    /// "calibrated" when a model parameter was fitted on this figure (see
    /// docs/MODEL.md), "predicted" otherwise.
    pub role: &'static str,
    /// "stock" (SYSTEM.md §4) or "hp" (§4b).
    pub format: &'static str,
}

/// The rows a model parameter or mechanism switch was fitted on
/// (docs/MODEL.md), as (format, test): the first generation's host costs
/// (4 workers x QD 1), the reserved fraction (stock 4K steady-state write)
/// and the reads' FIFO scheduling (8K 70/30 at both formats).
pub const CALIBRATION_ROWS: &[(&str, &str)] = &[
    ("stock", "4K random read 4x1"),
    ("stock", "4K random write 4x1"),
    ("stock", "4K random write ramp (fresh), lowest of QD 8-64"),
    ("stock", "4K random write ramp (fresh), highest of QD 8-64"),
    ("stock", "4K steady-state write 16T/16Q"),
    ("stock", "8K 70/30 steady state 16T/16Q"),
    ("hp", "8K 70/30 steady state 16T/16Q"),
];

/// One measured figure of SYSTEM.md §4 (`stock`) or §4b (`hp`): format,
/// test (the row's name), unit, and the reviewer's figure as a range
/// (equal ends for a single number; `hi` = ∞ for a lower bound).
pub struct Measured {
    pub format: &'static str,
    pub test: &'static str,
    pub unit: &'static str,
    pub lo: f64,
    pub hi: f64,
}

const fn m(
    format: &'static str,
    test: &'static str,
    unit: &'static str,
    lo: f64,
    hi: f64,
) -> Measured {
    Measured {
        format,
        test,
        unit,
        lo,
        hi,
    }
}

/// Every row of the two tables, in the order they are measured.
pub const MEASURED: &[Measured] = &[
    m("stock", "sequential 2 MB read", "MB/s", 1584.0, 1584.0),
    m("stock", "sequential 2 MB write", "MB/s", 1045.0, 1045.0),
    m("stock", "2 MB random read", "MB/s", 1589.0, 1589.0),
    m("stock", "2 MB random write", "MB/s", 1046.0, 1046.0),
    m("stock", "4K random read 4x1", "IOPS", 48403.0, 48403.0),
    m("stock", "4K random write 4x1", "IOPS", 93740.0, 93740.0),
    m(
        "stock",
        "4K random read ramp, QD 64 per worker",
        "IOPS",
        140000.0,
        140000.0,
    ),
    m(
        "stock",
        "4K random read ramp, lowest of QD 8-64",
        "IOPS",
        120000.0,
        f64::INFINITY,
    ),
    m(
        "stock",
        "4K random write ramp (fresh), QD 4",
        "IOPS",
        224000.0,
        224000.0,
    ),
    m(
        "stock",
        "4K random write ramp (fresh), lowest of QD 8-64",
        "IOPS",
        201000.0,
        210000.0,
    ),
    m(
        "stock",
        "4K random write ramp (fresh), highest of QD 8-64",
        "IOPS",
        201000.0,
        210000.0,
    ),
    m(
        "stock",
        "4K random write burst 16T/16Q (fresh)",
        "IOPS",
        257000.0,
        257000.0,
    ),
    m(
        "stock",
        "4K steady-state write 16T/16Q",
        "IOPS",
        42644.0,
        42644.0,
    ),
    m(
        "stock",
        "4K steady-state write average latency",
        "ms",
        6.0,
        6.0,
    ),
    m(
        "stock",
        "4K steady-state write latency stddev",
        "ms",
        25.6,
        31.6,
    ),
    m(
        "stock",
        "4K steady-state write peak latency",
        "ms",
        157.0,
        157.0,
    ),
    m(
        "stock",
        "4K write preconditioning latency stddev",
        "ms",
        25.0,
        30.0,
    ),
    m(
        "stock",
        "4K steady-state read 16T/16Q",
        "IOPS",
        140230.0,
        140230.0,
    ),
    m(
        "stock",
        "4K steady-state read average latency",
        "ms",
        1.8,
        1.8,
    ),
    m(
        "stock",
        "4K steady-state read peak latency",
        "ms",
        1208.0,
        1208.0,
    ),
    m(
        "stock",
        "8K 70/30 steady state 16T/16Q",
        "IOPS",
        51000.0,
        53000.0,
    ),
    m(
        "stock",
        "8K 70/30 preconditioning latency stddev",
        "ms",
        8.0,
        12.0,
    ),
    m(
        "stock",
        "File Server steady-state average latency",
        "ms",
        7.0,
        7.5,
    ),
    m(
        "stock",
        "Web Server preconditioning average latency",
        "ms",
        20.0,
        f64::INFINITY,
    ),
    m(
        "hp",
        "4K random write burst 16T/16Q (fresh)",
        "IOPS",
        257000.0,
        257000.0,
    ),
    m(
        "hp",
        "4K steady-state write 16T/16Q",
        "IOPS",
        90400.0,
        91000.0,
    ),
    m(
        "hp",
        "4K steady-state write average latency",
        "ms",
        2.80,
        2.82,
    ),
    m(
        "hp",
        "4K steady-state write latency stddev",
        "ms",
        1.70,
        1.76,
    ),
    m(
        "hp",
        "4K write preconditioning latency stddev",
        "ms",
        2.0,
        5.0,
    ),
    m(
        "hp",
        "4K steady-state read 16T/16Q",
        "IOPS",
        140000.0,
        145000.0,
    ),
    m(
        "hp",
        "8K 70/30 steady state 16T/16Q",
        "IOPS",
        76000.0,
        76000.0,
    ),
    m(
        "hp",
        "8K 70/30 preconditioning latency stddev",
        "ms",
        2.0,
        2.0,
    ),
    m(
        "hp",
        "File Server preconditioning average latency",
        "ms",
        6.0,
        6.5,
    ),
    m(
        "hp",
        "Web Server preconditioning average latency",
        "ms",
        10.0,
        11.0,
    ),
];

/// The measured figure of row `test` of table `format`, if there is one.
pub fn measured(format: &str, test: &str) -> Option<&'static Measured> {
    MEASURED
        .iter()
        .find(|r| r.format == format && r.test == test)
}

impl Row {
    fn new(test: &str, model: f64) -> Row {
        Row::at("stock", test, model)
    }

    fn at(format: &'static str, test: &str, model: f64) -> Row {
        let f = measured(format, test).expect("every row has its measured figure");
        let (unit, lo, hi) = (f.unit, f.lo, f.hi);
        let ratio = if model < lo {
            model / lo
        } else if model > hi {
            model / hi
        } else {
            1.0
        };
        Row {
            test: test.into(),
            unit,
            measured_lo: lo,
            measured_hi: hi,
            model,
            ratio,
            within_25pct: (0.75..=1.25).contains(&ratio),
            within_15pct: (0.85..=1.15).contains(&ratio),
            role: if CALIBRATION_ROWS.contains(&(format, test)) {
                "calibrated"
            } else {
                "predicted"
            },
            format,
        }
    }
}

/// How big and how long.
#[derive(Clone, Debug, Serialize)]
pub struct ValidateOptions {
    /// The card: the built-in 640 MLC or a preset file fitted to it.
    #[serde(serialize_with = "preset_name")]
    pub preset: &'static Preset,
    pub scale: f64,
    /// Virtual time of each measurement window.
    pub window_ns: u64,
    /// Length of one preconditioning round.
    pub round_ns: u64,
    /// Longest preconditioning allowed (the reviews ran up to 6 h).
    pub max_precondition_ns: u64,
    pub seed: u64,
    /// Only these rows, as (format, test); `None`: every row. Tests whose
    /// rows are not wanted are skipped unless a later wanted row needs the
    /// card state they leave.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub only: Option<Vec<(String, String)>>,
    /// Start each steady-state test (4K write and the 4K read after it,
    /// 8K 70/30, File Server, Web Server) from a purged and filled card,
    /// as `vsl review` does; off (the default, the calibration's
    /// protocol): one card is carried through them in that order.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub purge: bool,
    /// Device capacities of the test's own writes before a
    /// preconditioning may be called steady (1: the SNIA minimum).
    #[serde(skip_serializing_if = "is_one")]
    pub min_capacities: f64,
}

fn is_one(x: &f64) -> bool {
    *x == 1.0
}

impl ValidateOptions {
    /// True when any of `tests` of table `format` is wanted.
    fn wants(&self, format: &str, tests: &[&str]) -> bool {
        self.only.as_ref().is_none_or(|only| {
            only.iter()
                .any(|(f, t)| f == format && tests.contains(&t.as_str()))
        })
    }
}

fn preset_name<S: serde::Serializer>(p: &&'static Preset, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(p.name)
}

/// Steady-state preconditioning outcome.
#[derive(Clone, Debug, Serialize)]
pub struct Preconditioned {
    /// The test preconditioned ("4K write", "8K 70/30", ...).
    pub test: String,
    pub rounds_iops: Vec<f64>,
    pub rounds_lat_avg_us: Vec<f64>,
    pub rounds_lat_stddev_us: Vec<f64>,
    pub converged_round: Option<usize>,
    #[serde(skip)]
    pub end: Nanos,
}

fn opts(threads: u32, qd: u32, window_ns: u64, seed: u64) -> RunOptions {
    RunOptions {
        threads,
        queue_depth: qd,
        duration_ns: window_ns,
        interval_ns: window_ns,
        seed,
    }
}

fn spec(name: &str) -> WorkloadSpec {
    Profile::by_name(name).expect("built-in profile").spec()
}

/// A freshly formatted and sequentially filled card.
pub fn fresh_card(
    preset: &'static Preset,
    format: Format,
    scale: f64,
) -> Result<(Card, Nanos), RunError> {
    let mut c = CardConfig::new(preset);
    c.format = format;
    c.scale = scale;
    let mut card = Card::new(c).map_err(|error| RunError::Device {
        at: Nanos::ZERO,
        error,
    })?;
    let t = precondition_fill(&mut card, Nanos::ZERO)?;
    Ok((card, t))
}

/// The card a steady-state test starts from: the card the previous test
/// left (`carried`), or with `o.purge` (or for the first test) a purged
/// and filled one (`vsl review`'s secure erase and fill before each test).
fn card_for_test(
    o: &ValidateOptions,
    format: Format,
    carried: Option<(Card, Nanos)>,
) -> Result<(Card, Nanos), RunError> {
    match carried {
        Some(c) if !o.purge => Ok(c),
        _ => fresh_card(o.preset, format, o.scale),
    }
}

/// Runs `spec` at 16T/16Q in rounds until SNIA steady state (after at least
/// `o.min_capacities` device capacities of the workload's own writes) or
/// the time limit.
pub fn precondition_steady(
    card: &mut Card,
    test: &str,
    spec: &WorkloadSpec,
    start: Nanos,
    o: &ValidateOptions,
) -> Result<Preconditioned, RunError> {
    let cap = card.capacity_bytes();
    let before = card.stats().host_bytes_written;
    let mut t = start;
    let mut rounds_iops = Vec::new();
    let mut rounds_lat = Vec::new();
    let mut rounds_sd = Vec::new();
    let mut converged = None;
    while t - start < Nanos(o.max_precondition_ns) {
        let seed = o.seed.wrapping_add(rounds_iops.len() as u64);
        let r = run(card, spec, &opts(16, 16, o.round_ns, seed), t, &mut |_| {})?;
        t = r.end;
        rounds_iops.push(r.summary.totals.iops);
        rounds_lat.push(r.summary.totals.lat_avg_us);
        rounds_sd.push(r.summary.totals.lat_stddev_us);
        let written = card.stats().host_bytes_written - before;
        if written as f64 >= cap as f64 * o.min_capacities
            && check_window(&rounds_iops).is_some_and(|c| c.steady)
        {
            converged = Some(rounds_iops.len());
            break;
        }
    }
    Ok(Preconditioned {
        test: test.into(),
        rounds_iops,
        rounds_lat_avg_us: rounds_lat,
        rounds_lat_stddev_us: rounds_sd,
        converged_round: converged,
        end: t,
    })
}

fn measure(
    card: &mut Card,
    name: &str,
    t: Nanos,
    threads: u32,
    qd: u32,
    o: &ValidateOptions,
) -> Result<(RunResult, Nanos), RunError> {
    let r = run(
        card,
        &spec(name),
        &opts(threads, qd, o.window_ns, o.seed),
        t,
        &mut |_| {},
    )?;
    let end = r.end;
    Ok((r, end))
}

/// A fresh card, filled, then one short measurement.
fn fresh(name: &str, threads: u32, qd: u32, o: &ValidateOptions) -> Result<RunResult, RunError> {
    fresh_at(Format::Stock, name, threads, qd, o)
}

fn fresh_at(
    format: Format,
    name: &str,
    threads: u32,
    qd: u32,
    o: &ValidateOptions,
) -> Result<RunResult, RunError> {
    let (mut card, t) = fresh_card(o.preset, format, o.scale)?;
    // Two seconds of the full card, before its spare runs down to GC: a
    // scaled card's spare is `scale` of the full card's, so its window is
    // too (at least 100 ms).
    let mut short = o.clone();
    let fresh_window = (2e9 * o.scale.min(1.0)).max(1e8) as u64;
    short.window_ns = o.window_ns.min(fresh_window);
    Ok(measure(&mut card, name, t, threads, qd, &short)?.0)
}

/// Runs the whole table (or the rows `o.only` names). `progress` is told
/// each test's name as it starts.
pub fn validate(
    o: &ValidateOptions,
    progress: &mut dyn FnMut(&str),
) -> Result<(Vec<Row>, Vec<Preconditioned>), RunError> {
    let mut rows = Vec::new();
    let mbs = |r: &RunResult| r.summary.totals.mb_per_s;
    let iops = |r: &RunResult| r.summary.totals.iops;
    let want = |tests: &[&str]| o.wants("stock", tests);

    const SEQ: [(&str, &str); 4] = [
        ("sequential 2 MB read", "seq-2m-read"),
        ("sequential 2 MB write", "seq-2m-write"),
        ("2 MB random read", "2m-randread"),
        ("2 MB random write", "2m-randwrite"),
    ];
    if want(&SEQ.map(|s| s.0)) {
        progress("sequential and random 2 MB");
        for (test, profile) in SEQ {
            rows.push(Row::new(test, mbs(&fresh(profile, 4, 8, o)?)));
        }
    }
    const QD1: [&str; 2] = ["4K random read 4x1", "4K random write 4x1"];
    if want(&QD1) {
        progress("4K random, 4 workers x QD 1");
        rows.push(Row::new(QD1[0], iops(&fresh("4k-randread", 4, 1, o)?)));
        rows.push(Row::new(QD1[1], iops(&fresh("4k-randwrite", 4, 1, o)?)));
    }
    const RAMP: [&str; 6] = [
        "4K random read ramp, QD 64 per worker",
        "4K random read ramp, lowest of QD 8-64",
        "4K random write ramp (fresh), QD 4",
        "4K random write ramp (fresh), lowest of QD 8-64",
        "4K random write ramp (fresh), highest of QD 8-64",
        "4K random write burst 16T/16Q (fresh)",
    ];
    if want(&RAMP) {
        progress("ramped 4K random read and write");
        let ramp = |profile: &str| -> Result<Vec<f64>, RunError> {
            [8, 16, 32, 64]
                .iter()
                .map(|&qd| fresh(profile, 4, qd, o).map(|r| iops(&r)))
                .collect()
        };
        let read_ramp = ramp("4k-randread")?;
        rows.push(Row::new(RAMP[0], read_ramp[3]));
        rows.push(Row::new(RAMP[1], min(&read_ramp)));
        rows.push(Row::new(RAMP[2], iops(&fresh("4k-randwrite", 4, 4, o)?)));
        let write_ramp = ramp("4k-randwrite")?;
        rows.push(Row::new(RAMP[3], min(&write_ramp)));
        rows.push(Row::new(RAMP[4], max(&write_ramp)));
        rows.push(Row::new(RAMP[5], iops(&fresh("4k-randwrite", 16, 16, o)?)));
    }

    let (mut steady, pres) = steady_state_tests(o, Format::Stock, "stock", progress)?;
    rows.append(&mut steady);
    Ok((rows, pres))
}

fn min(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::MAX, f64::min)
}

fn max(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::MIN, f64::max)
}

/// The Web Server profile's preconditioning pattern (100 % write).
fn web_precondition() -> WorkloadSpec {
    Profile::by_name("webserver")
        .expect("profile")
        .precondition_spec()
}

/// Mean of the last five rounds (the steady-state window).
fn tail_mean(v: &[f64]) -> f64 {
    let tail = &v[v.len().saturating_sub(5)..];
    tail.iter().sum::<f64>() / tail.len().max(1) as f64
}

/// The SYSTEM.md §4b rows (or those `o.only` names): the same card in the
/// high-performance format (256 GB per ioDimm), the same reviewer's tests.
pub fn validate_hp(
    o: &ValidateOptions,
    progress: &mut dyn FnMut(&str),
) -> Result<(Vec<Row>, Vec<Preconditioned>), RunError> {
    let hp = Format::Hp;
    let mut rows = Vec::new();
    let want = |tests: &[&str]| o.wants("hp", tests);
    let row = |test: &str, model| Row::at("hp", test, model);
    const BURST: &str = "4K random write burst 16T/16Q (fresh)";
    if want(&[BURST]) {
        progress("hp: 4K random write burst 16T/16Q (fresh)");
        let r = fresh_at(hp, "4k-randwrite", 16, 16, o)?;
        rows.push(row(BURST, r.summary.totals.iops));
    }
    let (mut steady, pres) = steady_state_tests(o, hp, "hp", progress)?;
    rows.append(&mut steady);
    Ok((rows, pres))
}

/// A row of a steady-state test: its name and how it is read off the
/// test's preconditioning and measurement window.
type Stat = (&'static str, fn(&Preconditioned, &IntervalStats) -> f64);

/// The rows each steady-state test can give; a table has those of them
/// its format measured (SYSTEM.md §4 / §4b).
const WRITE_ROWS: [Stat; 5] = [
    ("4K steady-state write 16T/16Q", |_, w| w.iops),
    ("4K steady-state write average latency", |_, w| {
        w.lat_avg_us / 1e3
    }),
    ("4K steady-state write latency stddev", |_, w| {
        w.lat_stddev_us / 1e3
    }),
    ("4K steady-state write peak latency", |_, w| {
        w.lat_max_us / 1e3
    }),
    ("4K write preconditioning latency stddev", |p, _| {
        tail_mean(&p.rounds_lat_stddev_us) / 1e3
    }),
];
const READ_ROWS: [Stat; 3] = [
    ("4K steady-state read 16T/16Q", |_, r| r.iops),
    ("4K steady-state read average latency", |_, r| {
        r.lat_avg_us / 1e3
    }),
    ("4K steady-state read peak latency", |_, r| {
        r.lat_max_us / 1e3
    }),
];
/// The rates are read off the window after the preconditioning, the
/// spreads off the SNIA window's rounds (SYSTEM.md §4b: "8K 70/30
/// preconditioning, steady ... latency stddev"). A spread made by
/// second-long stalls a minute apart needs the rounds: one 120 s window
/// holds 0 to 3 of them. A rate needs the curve's latest point: the hp
/// rounds still climb when the SNIA window calls them steady, and a
/// stall costs the mean over 120 s a few per cent at most.
const MIX_ROWS: [Stat; 2] = [
    ("8K 70/30 steady state 16T/16Q", |_, m| m.iops),
    ("8K 70/30 preconditioning latency stddev", |p, _| {
        tail_mean(&p.rounds_lat_stddev_us) / 1e3
    }),
];
/// The stock File Server row is a measurement window's, the hp one its
/// preconditioning's (the reviewer's two figures).
const FS_ROWS: [Stat; 2] = [
    ("File Server steady-state average latency", |_, f| {
        f.lat_avg_us / 1e3
    }),
    ("File Server preconditioning average latency", |p, _| {
        tail_mean(&p.rounds_lat_avg_us) / 1e3
    }),
];
const WEB_ROWS: [Stat; 1] = [("Web Server preconditioning average latency", |p, _| {
    tail_mean(&p.rounds_lat_avg_us) / 1e3
})];

/// The steady-state tests of table `label` in `format`: 4K write and the
/// 4K read after it, 8K 70/30, File Server, Web Server (preconditioning
/// only). Chained (the default), one card goes through them in turn and a
/// test runs when its rows or a later test's are wanted (the later one
/// needs the state it leaves); with `o.purge` each starts from a purged
/// and filled card and runs when its own rows are wanted.
fn steady_state_tests(
    o: &ValidateOptions,
    format: Format,
    label: &'static str,
    progress: &mut dyn FnMut(&str),
) -> Result<(Vec<Row>, Vec<Preconditioned>), RunError> {
    let own = |stats: &[Stat]| -> Vec<&'static str> {
        stats
            .iter()
            .map(|s| s.0)
            .filter(|t| measured(label, t).is_some())
            .collect()
    };
    let want = |stats: &[Stat]| o.wants(label, &own(stats));
    let tests: [&[Stat]; 5] = [&WRITE_ROWS, &READ_ROWS, &MIX_ROWS, &FS_ROWS, &WEB_ROWS];
    let runs = |i: usize| {
        let needed = if o.purge { &tests[i..=i] } else { &tests[i..] };
        needed.iter().any(|t| want(t)) || (i == 0 && want(tests[1]))
    };
    let prefix = if format == Format::Stock { "" } else { "hp: " };
    let mut rows = Vec::new();
    let mut push = |stats: &[Stat], p: &Preconditioned, t: &IntervalStats| {
        for (test, stat) in stats {
            if measured(label, test).is_some() && o.wants(label, &[test]) {
                rows.push(Row::at(label, test, stat(p, t)));
            }
        }
    };
    let mut pres = Vec::new();
    let mut carried = None;
    // (index in `tests`, progress words, name, workload, the profile of
    // the window measured after the preconditioning, if any).
    let fs_window = !own(&FS_ROWS[..1]).is_empty();
    let phases = [
        (
            0,
            "4K random write: preconditioning to steady state",
            "4K write",
            spec("4k-randwrite"),
            Some("4k-randwrite"),
        ),
        (
            2,
            "8K 70/30: preconditioning to steady state",
            "8K 70/30",
            spec("8k-7030"),
            Some("8k-7030"),
        ),
        // The hp File Server row is its preconditioning's (the reviewer's
        // figure), with no window after it.
        (
            3,
            "File Server: preconditioning to steady state",
            "File Server",
            spec("fileserver"),
            fs_window.then_some("fileserver"),
        ),
        (
            4,
            "Web Server preconditioning (100% write)",
            "Web Server (write)",
            web_precondition(),
            None,
        ),
    ];
    for (i, words, test, workload, window) in phases {
        if !runs(i) {
            continue;
        }
        progress(&format!("{prefix}{words}"));
        let (mut card, t) = card_for_test(o, format, carried.take())?;
        let pre = precondition_steady(&mut card, test, &workload, t, o)?;
        let mut t = pre.end;
        let totals = match window {
            Some(profile) => {
                let (m, end) = measure(&mut card, profile, t, 16, 16, o)?;
                t = end;
                m.summary.totals
            }
            None => IntervalStats::default(),
        };
        push(tests[i], &pre, &totals);
        if i == 0 && runs(1) {
            // The read tests are preconditioned with the 4K write (§3).
            progress(&format!(
                "{prefix}4K random read after write preconditioning"
            ));
            let (r, end) = measure(&mut card, "4k-randread", t, 16, 16, o)?;
            t = end;
            push(&READ_ROWS, &pre, &r.summary.totals);
        }
        pres.push(pre);
        carried = Some((card, t));
    }
    Ok((rows, pres))
}

/// One format's table: its name ("stock" or "hp"), its rows and its
/// preconditioning runs.
pub type Table = (&'static str, Vec<Row>, Vec<Preconditioned>);

/// The stock table (SYSTEM.md §4) and the hp table (§4b), those `stock`
/// and `hp` ask for, stock first. Each runs on cards of its own, so with
/// `jobs` ≥ 2 the two run at once, hp on a second thread: the rows are the
/// same either way. `progress` is told each test's name as it starts (from
/// either thread).
pub fn validate_formats(
    o: &ValidateOptions,
    stock: bool,
    hp: bool,
    jobs: usize,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<Vec<Table>, RunError> {
    let one = |format: &'static str| -> Result<Table, RunError> {
        let mut p = |name: &str| progress(name);
        let (rows, pre) = if format == "hp" {
            validate_hp(o, &mut p)?
        } else {
            validate(o, &mut p)?
        };
        Ok((format, rows, pre))
    };
    if !(stock && hp && jobs >= 2) {
        let formats = [("stock", stock), ("hp", hp)];
        return formats
            .iter()
            .filter(|(_, on)| *on)
            .map(|(f, _)| one(f))
            .collect();
    }
    std::thread::scope(|s| {
        // The simulation's own thread gets the main thread's stack size.
        let hp = std::thread::Builder::new()
            .name("validate-hp".into())
            .stack_size(8 << 20)
            .spawn_scoped(s, || one("hp"));
        let stock = one("stock");
        let hp = match hp {
            Ok(h) => h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)),
            // No second thread to be had: run it here, after stock.
            Err(_) => one("hp"),
        };
        Ok(vec![stock?, hp?])
    })
}

/// One data-sheet figure of a preset against the model.
#[derive(Clone, Debug, Serialize)]
pub struct DatasheetRow {
    pub preset: &'static str,
    pub test: String,
    pub unit: &'static str,
    pub datasheet: f64,
    pub model: f64,
    /// model / data sheet.
    pub ratio: f64,
    pub within_25pct: bool,
    /// "calibrated" when the figure sets a model parameter (the row then
    /// only checks that nothing else in the model limits it first),
    /// "predicted" when no parameter was derived from it.
    pub role: &'static str,
    /// Which parameter a calibrated figure sets.
    pub sets: &'static str,
}

/// The data-sheet figures of `preset` (SYSTEM.md §2 for the ioDrives, the
/// cited sheets for the comparables) measured on the model, fresh out of
/// the box as data sheets quote them except where the sheet says steady
/// state: sequential 1 MiB read and write bandwidth, random 4 KiB and
/// 512 B IOPS at 16 threads x QD 16 and QD 1 latency. Reads run after a
/// sequential fill; writes on a fresh (trimmed) card.
pub fn datasheet_rows(
    preset: &'static Preset,
    scale: f64,
    window_ns: u64,
    seed: u64,
    progress: &mut dyn FnMut(&str),
) -> Result<Vec<DatasheetRow>, RunError> {
    let d = &preset.datasheet;
    let card = |fill: bool| -> Result<(Card, Nanos), RunError> {
        let mut c = CardConfig::new(preset);
        c.scale = scale;
        c.sector_bytes = 512;
        let mut card = Card::new(c).map_err(|error| RunError::Device {
            at: Nanos::ZERO,
            error,
        })?;
        let t = if fill {
            precondition_fill(&mut card, Nanos::ZERO)?
        } else {
            Nanos::ZERO
        };
        Ok((card, t))
    };
    let measure = |fill: bool, rw: &str, bs: u64, threads: u32, qd: u32| {
        let (mut card, t) = card(fill)?;
        let mut spec = WorkloadSpec::from_rw(rw, None).expect("built-in rw name");
        spec.block_sizes = workload::BlockSizes::Fixed(bs);
        run(
            &mut card,
            &spec,
            &opts(threads, qd, window_ns, seed),
            t,
            &mut |_| {},
        )
        .map(|r| r.summary.totals)
    };
    let (cmd_set_r, cmd_set_w) = if d.read_iops_512.is_some() {
        ("512 B", "512 B")
    } else {
        ("4 KiB", "4 KiB")
    };
    let mut rows = Vec::new();
    let mut push = |test: String, unit, sheet: f64, model: f64, sets: &'static str| {
        let ratio = model / sheet;
        rows.push(DatasheetRow {
            preset: preset.name,
            test,
            unit,
            datasheet: sheet,
            model,
            ratio,
            within_25pct: (0.75..=1.25).contains(&ratio),
            role: if sets.is_empty() {
                "predicted"
            } else {
                "calibrated"
            },
            sets,
        });
    };
    progress(&format!("{}: sequential read", preset.name));
    let r = measure(true, "read", 1 << 20, 16, 16)?;
    push(
        "sequential read 1 MiB".into(),
        "MB/s",
        d.read_mb_s as f64,
        r.mb_per_s,
        "controller read data path (MB/s / members)",
    );
    progress(&format!("{}: sequential write", preset.name));
    let r = measure(false, "write", 1 << 20, 16, 16)?;
    push(
        "sequential write 1 MiB".into(),
        "MB/s",
        d.write_mb_s as f64,
        r.mb_per_s,
        "controller write data path (MB/s / members)",
    );
    for (size, read, write) in [
        (4096u64, d.read_iops_4k, d.write_iops_4k),
        (512, d.read_iops_512, d.write_iops_512),
    ] {
        let label = if size == 512 { "512 B" } else { "4 KiB" };
        if let Some(v) = read {
            progress(&format!("{}: random read {label}", preset.name));
            let r = measure(true, "randread", size, 16, 16)?;
            let sets = if label == cmd_set_r {
                "controller read command time (1 / IOPS per member)"
            } else {
                ""
            };
            push(
                format!("random read {label} IOPS"),
                "IOPS",
                v as f64,
                r.iops,
                sets,
            );
        }
        if let Some(v) = write {
            progress(&format!("{}: random write {label}", preset.name));
            let r = measure(false, "randwrite", size, 16, 16)?;
            let sets = if label == cmd_set_w {
                "controller write command time (1 / IOPS per member)"
            } else {
                ""
            };
            push(
                format!("random write {label} IOPS"),
                "IOPS",
                v as f64,
                r.iops,
                sets,
            );
        }
    }
    // The ioDrive2's host costs come from its data-sheet latencies; the first
    // generation's from the 640 MLC's measured 4K QD 1 figures (SYSTEM.md §4).
    let calibrated_latency = preset.name.starts_with("iodrive2");
    let lat_size = if d.read_iops_512.is_some() { 512 } else { 4096 };
    if let Some(v) = d.read_latency_us {
        progress(&format!("{}: read latency QD 1", preset.name));
        let r = measure(true, "randread", lat_size, 1, 1)?;
        let sets = if calibrated_latency {
            "host read cost"
        } else {
            ""
        };
        push(
            format!("read latency QD 1 ({lat_size} B)"),
            "us",
            v as f64,
            r.lat_avg_us,
            sets,
        );
    }
    if let Some(v) = d.write_latency_us {
        progress(&format!("{}: write latency QD 1", preset.name));
        let r = measure(false, "randwrite", lat_size, 1, 1)?;
        let sets = if calibrated_latency {
            "host write cost"
        } else {
            ""
        };
        push(
            format!("write latency QD 1 ({lat_size} B)"),
            "us",
            v as f64,
            r.lat_avg_us,
            sets,
        );
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_tables_at_once_give_the_rows_of_one_after_another() {
        // A fresh-card row of each table on a small card: the two threads
        // share nothing, so the rows are the same, in the same order.
        let preset = Preset::by_name("iodrive-duo-640-mlc").expect("built-in");
        let o = ValidateOptions {
            preset,
            scale: 0.01,
            window_ns: 1_000_000_000,
            round_ns: 10_000_000_000,
            max_precondition_ns: 60_000_000_000,
            seed: 3,
            only: Some(vec![
                ("stock".into(), "4K random write 4x1".into()),
                ("hp".into(), "4K random write burst 16T/16Q (fresh)".into()),
            ]),
            purge: false,
            min_capacities: 1.0,
        };
        let seen = std::sync::Mutex::new(Vec::new());
        let progress = |name: &str| seen.lock().unwrap().push(name.to_string());
        let one = validate_formats(&o, true, true, 1, &progress).unwrap();
        let two = validate_formats(&o, true, true, 2, &progress).unwrap();
        let rows = |t: &[Table]| -> Vec<(String, String, u64)> {
            t.iter()
                .flat_map(|(_, rows, _)| rows)
                .map(|r| (r.format.to_string(), r.test.clone(), r.model.to_bits()))
                .collect()
        };
        // The stock row's group runs both 4x1 rows.
        assert_eq!(rows(&one).len(), 3, "{:?}", rows(&one));
        assert_eq!(rows(&one), rows(&two));
        assert_eq!(
            [one[0].0, one[1].0, two[0].0, two[1].0],
            ["stock", "hp", "stock", "hp"]
        );
        // Each table told its tests, once per run.
        assert_eq!(seen.lock().unwrap().len(), 4, "{:?}", seen.lock().unwrap());
        // One table asked for: only that one runs.
        let hp = validate_formats(&o, false, true, 2, &progress).unwrap();
        assert_eq!(hp.len(), 1);
        assert_eq!(hp[0].0, "hp");
    }

    fn small(only: &[(&str, &str)], purge: bool) -> ValidateOptions {
        ValidateOptions {
            preset: Preset::by_name("iodrive-duo-640-mlc").expect("built-in"),
            scale: 0.005,
            window_ns: 1_000_000_000,
            round_ns: 5_000_000_000,
            max_precondition_ns: 30_000_000_000,
            seed: 5,
            only: Some(
                only.iter()
                    .map(|(f, t)| (f.to_string(), t.to_string()))
                    .collect(),
            ),
            purge,
            min_capacities: 1.0,
        }
    }

    #[test]
    fn with_purge_each_steady_state_test_starts_from_a_purged_card() {
        let mix = ("hp", "8K 70/30 steady state 16T/16Q");
        let write = ("hp", "4K steady-state write 16T/16Q");
        let table = |o: &ValidateOptions| {
            let (rows, pres) = validate_hp(o, &mut |_| {}).unwrap();
            let rows: Vec<(String, u64)> = rows
                .iter()
                .map(|r| (r.test.clone(), r.model.to_bits()))
                .collect();
            let tests: Vec<String> = pres.iter().map(|p| p.test.clone()).collect();
            (rows, tests)
        };
        // Purged: the 70/30 row alone runs the 70/30 test alone, and gives
        // the same figure, to the bit, as when the 4K write rows come too.
        let (alone, tests) = table(&small(&[mix], true));
        assert_eq!(tests, ["8K 70/30"]);
        let (both, tests) = table(&small(&[write, mix], true));
        assert_eq!(tests, ["4K write", "8K 70/30"]);
        assert_eq!(alone.len(), 1);
        assert_eq!(both.iter().find(|r| r.0 == mix.1), alone.first());
        // Chained: the 70/30 test runs on the card the 4K write and read
        // left, so it needs them, and its figure is another.
        let (chained, tests) = table(&small(&[mix], false));
        assert_eq!(tests, ["4K write", "8K 70/30"]);
        assert_eq!(chained.len(), 1);
        assert_ne!(
            chained[0].1, alone[0].1,
            "the carried card's state made no difference"
        );
    }

    #[test]
    fn the_mixed_loads_rows_are_read_where_the_reviewer_read_them() {
        // Both formats: the rate off the window after the preconditioning,
        // the spread off the SNIA window's rounds (§4b's preconditioning
        // chart).
        for (format, label) in [(Format::Stock, "stock"), (Format::Hp, "hp")] {
            let rows = [
                (label, "8K 70/30 steady state 16T/16Q"),
                (label, "8K 70/30 preconditioning latency stddev"),
            ];
            let o = small(&rows, true);
            let (got, pres) = steady_state_tests(&o, format, label, &mut |_| {}).unwrap();
            let p = pres
                .iter()
                .find(|p| p.test == "8K 70/30")
                .expect("the 70/30 test ran");
            assert!(
                p.rounds_iops.len() >= 2,
                "{label}: one round cannot tell the mean from the last"
            );
            let sd = tail_mean(&p.rounds_lat_stddev_us) / 1e3;
            assert_eq!(got.len(), 2, "{label}");
            assert_eq!(got[1].model.to_bits(), sd.to_bits(), "{label}");
            // The window is another run than the rounds: its rate is none
            // of theirs and not their mean.
            let rate = got[0].model;
            assert!(rate > 0.0, "{label}");
            assert!(p.rounds_iops.iter().all(|&r| r != rate), "{label}");
            assert_ne!(rate, tail_mean(&p.rounds_iops), "{label}");
        }
    }
}
