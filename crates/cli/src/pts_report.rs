//! The PTS report: an index page with the set-up sheet and one page per
//! test (the `report` crate's pages: SVG charts with their CSV), CSV of
//! every number, and PDFs through headless Chromium.

use crate::cmd_pts::SetupSheet;
use anyhow::{bail, Context, Result};
use lab::pts::{bs_label, PointResult, PtsPlan, PtsTest, TestResult};
use report::{
    Chart, Marker, Review, Section, Series, SteadyState, Table, TargetInfo, ValueFormat, XValue,
};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn f0(v: f64) -> String {
    format!("{v:.0}")
}
fn f1(v: f64) -> String {
    format!("{v:.1}")
}
fn f2(v: f64) -> String {
    format!("{v:.2}")
}

fn setup_table(setup: &SetupSheet, plan: &PtsPlan) -> Vec<Table> {
    let mut rows = vec![
        vec!["tool".into(), setup.tool.clone()],
        vec!["command".into(), setup.command.clone()],
        vec!["date".into(), setup.date_utc.clone()],
        vec!["OS".into(), setup.os.clone()],
        vec!["kernel".into(), setup.kernel.clone()],
        vec!["CPU".into(), setup.cpu.clone()],
        vec!["load".into(), setup.machine_load.clone()],
        vec!["fio".into(), setup.fio.clone()],
        vec!["blkdiscard".into(), setup.blkdiscard.clone()],
        vec!["class".into(), format!("{:?}", plan.class)],
        vec![
            "round".into(),
            format!(
                "{} s per test point; spec durations × {:.5}",
                plan.round_ns as f64 / 1e9,
                plan.time_factor
            ),
        ],
        vec!["max rounds".into(), plan.max_rounds.to_string()],
        vec![
            "stimulus".into(),
            format!(
                "T{}Q{} (latency: T1Q1; DIRTH/ECW: the grid)",
                plan.threads, plan.qd
            ),
        ],
        vec![
            "WIPC".into(),
            format!("{} × capacity of SEQ 128KiB W, T1Q32", plan.wipc_multiple),
        ],
        vec!["seed".into(), plan.seed.to_string()],
    ];
    rows.iter_mut().for_each(|r| r.truncate(2));
    let targets = Table {
        title: "Targets".into(),
        columns: [
            "target",
            "device / format",
            "time",
            "capacity GB",
            "sector B",
            "wall s (its tests, summed)",
        ]
        .map(String::from)
        .to_vec(),
        rows: setup
            .targets
            .iter()
            .map(|t| {
                vec![
                    t.label.clone(),
                    t.description.clone(),
                    t.time.to_string(),
                    f2(t.capacity_bytes as f64 / 1e9),
                    t.sector_bytes.to_string(),
                    f1(t.wall_s),
                ]
            })
            .collect(),
    };
    vec![
        Table {
            title: "Test set-up sheet".into(),
            columns: vec!["item".into(), "value".into()],
            rows,
        },
        targets,
    ]
}

fn purge_table(rs: &[&TestResult]) -> Table {
    Table {
        title: "Purge, preconditioning and notes".into(),
        columns: [
            "target",
            "purge",
            "write cache",
            "WIPC GB",
            "WIPC s",
            "test s (target time)",
            "I/Os",
            "notes",
            "error",
        ]
        .map(String::from)
        .to_vec(),
        rows: rs
            .iter()
            .map(|r| {
                vec![
                    r.target.clone(),
                    r.purge.join("; "),
                    r.write_cache.clone(),
                    f2(r.wipc_bytes as f64 / 1e9),
                    f1(r.wipc_s),
                    f1(r.target_s),
                    r.ios.to_string(),
                    r.notes.join(" | "),
                    r.error.clone().unwrap_or_default(),
                ]
            })
            .collect(),
    }
}

/// Steady-state convergence plots (window marked) and the
/// measurement-window table.
fn steady_section(test: &str, rs: &[&TestResult]) -> Section {
    let mut s = Section {
        id: "steady-state".into(),
        title: "Steady state".into(),
        text: "Rule (PTS-E 1.1): over the last five rounds, the data excursion (max − min) is at most 20 % of the window's mean and the excursion of the least-squares line across the window at most 10 % of it; at most 25 rounds. The plots mark the window: its mean, ±10 % of it (the 20 % band), and the slope line.".into(),
        ..Default::default()
    };
    let mut rows = Vec::new();
    for r in rs {
        for (k, st) in r.steady.iter().enumerate() {
            s.steady_state.push(SteadyState {
                target: format!("{} · {}", r.target, st.variable),
                converged_round: st.converged_round.map(|v| v as u32),
                rounds_run: st.rounds_run as u32,
                note: String::new(),
            });
            let pts: Vec<(f64, f64)> = st
                .series
                .iter()
                .enumerate()
                .map(|(i, v)| ((i + 1) as f64, *v))
                .collect();
            let mut series = vec![Series::numeric(st.variable.clone(), pts)];
            let n = st.series.len();
            if let (Some(w), Some((a, b))) = (st.window, st.slope_line) {
                let x0 = (n - 4) as f64;
                let x1 = n as f64;
                series.push(Series::numeric("window mean", [(x0, w.mean), (x1, w.mean)]));
                series.push(Series::numeric(
                    "mean +10 %",
                    [(x0, w.mean * 1.1), (x1, w.mean * 1.1)],
                ));
                series.push(Series::numeric(
                    "mean −10 %",
                    [(x0, w.mean * 0.9), (x1, w.mean * 0.9)],
                ));
                series.push(Series::numeric("slope", [(x0, a), (x1, b)]));
                rows.push(vec![
                    r.target.clone(),
                    st.variable.clone(),
                    format!("{}–{}", n - 4, n),
                    f1(w.mean),
                    format!(
                        "{} ({:.1} %)",
                        f1(w.data_excursion),
                        w.data_excursion / w.mean * 100.0
                    ),
                    format!(
                        "{} ({:.1} %)",
                        f1(w.slope_excursion),
                        w.slope_excursion / w.mean * 100.0
                    ),
                    if w.steady { "yes" } else { "no" }.into(),
                    st.converged_round
                        .map_or("not reached".into(), |c| c.to_string()),
                ]);
            }
            let mut c = Chart::line(
                report::slug(&format!("{test}-ss-{}-{k}", r.target)),
                format!("{}: {} per round", r.target, st.variable),
                "Round",
                st.variable.clone(),
                series,
            );
            c.x_format = ValueFormat::Integer;
            if let Some(cr) = st.converged_round {
                c.markers.push(Marker {
                    target: st.variable.clone(),
                    x: XValue::Number(cr as f64),
                    label: format!("steady at round {cr}"),
                });
            }
            s.charts.push(c);
        }
    }
    s.tables.push(Table {
        title: "Measurement window".into(),
        columns: [
            "target",
            "tracking variable",
            "rounds",
            "mean",
            "data excursion (≤ 20 %)",
            "slope excursion (≤ 10 %)",
            "steady",
            "steady at round",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    });
    s
}

fn window_table(title: &str, rs: &[&TestResult], filter: &dyn Fn(&PointResult) -> bool) -> Table {
    Table {
        title: title.into(),
        columns: [
            "target",
            "point",
            "T",
            "Q",
            "IOPS",
            "MB/s",
            "avg µs",
            "p99 µs",
            "p99.99 µs",
            "p99.999 µs",
            "max µs",
        ]
        .map(String::from)
        .to_vec(),
        rows: rs
            .iter()
            .flat_map(|r| {
                r.window.iter().filter(|p| filter(p)).map(|p| {
                    vec![
                        r.target.clone(),
                        p.label.clone(),
                        p.threads.to_string(),
                        p.qd.to_string(),
                        f0(p.stats.iops),
                        f1(p.stats.mb_per_s),
                        f1(p.stats.lat_avg_us),
                        f1(p.stats.lat_p99_us),
                        f1(p.stats.lat_p9999_us),
                        f1(p.lat_p99999_us),
                        f1(p.stats.lat_max_us),
                    ]
                })
            })
            .collect(),
    }
}

fn iops_sections(rs: &[&TestResult], out: &Path) -> Result<Vec<Section>> {
    let mut s = Section {
        id: "iops-matrix".into(),
        title: "IOPS matrix (measurement window average)".into(),
        ..Default::default()
    };
    let mut heat = String::new();
    for r in rs {
        let mut sizes: Vec<u64> = r.window.iter().map(|p| p.bs).collect();
        sizes.dedup();
        sizes.sort_unstable();
        sizes.dedup();
        sizes.reverse();
        let mut mixes: Vec<f64> = r.window.iter().map(|p| p.read_pct).collect();
        mixes.dedup();
        let get = |m: f64, b: u64| {
            r.window
                .iter()
                .find(|p| p.read_pct == m && p.bs == b)
                .map_or(f64::NAN, |p| p.stats.iops)
        };
        s.tables.push(Table {
            title: format!(
                "{}: IOPS, block size × R/W mix (rows: block size)",
                r.target
            ),
            columns: std::iter::once("block size".to_string())
                .chain(mixes.iter().map(|m| format!("{m:.0}/{:.0}", 100.0 - m)))
                .collect(),
            rows: sizes
                .iter()
                .map(|&b| {
                    std::iter::once(bs_label(b))
                        .chain(mixes.iter().map(|&m| f0(get(m, b))))
                        .collect()
                })
                .collect(),
        });
        let series = mixes
            .iter()
            .map(|&m| {
                Series::categorical(
                    format!("{}: {m:.0}/{:.0}", r.target, 100.0 - m),
                    sizes.iter().map(|&b| (bs_label(b), get(m, b))),
                )
            })
            .collect();
        let mut c = Chart::line(
            report::slug(&format!("iops-2d-{}", r.target)),
            format!("{}: IOPS by block size, one line per R/W mix", r.target),
            "Block size",
            "IOPS",
            series,
        );
        c.log_y = true;
        s.charts.push(c);
        let name = format!("heatmap-{}.svg", report::slug(&r.target));
        std::fs::write(
            out.join(&name),
            heatmap_svg(&r.target, &sizes, &mixes, &get),
        )
        .with_context(|| format!("cannot write {name}"))?;
        let _ = writeln!(heat, "Heat map of {}: {name} (below).", r.target);
    }
    s.text = format!(
        "Random I/O, R/W mixes 100/0 … 0/100 × block sizes 1024 KiB … 0.5 KiB, each point one round-time per round, the tracking variable 4 KiB 100 % write IOPS. The 3-D surface is drawn as the 2-D plot (IOPS by block size, a line per mix, log scale) and as a heat map.\n\n{heat}"
    );
    Ok(vec![s])
}

fn heatmap_svg(
    target: &str,
    sizes: &[u64],
    mixes: &[f64],
    get: &dyn Fn(f64, u64) -> f64,
) -> String {
    let (cw, ch, left, top) = (90.0, 34.0, 90.0, 60.0);
    let w = left + cw * mixes.len() as f64 + 20.0;
    let h = top + ch * sizes.len() as f64 + 40.0;
    let vals: Vec<f64> = sizes
        .iter()
        .flat_map(|&b| mixes.iter().map(move |&m| (m, b)))
        .map(|(m, b)| get(m, b))
        .filter(|v| v.is_finite() && *v > 0.0)
        .collect();
    let lo = vals.iter().copied().fold(f64::MAX, f64::min).max(1e-9).ln();
    let hi = vals.iter().copied().fold(0.0, f64::max).max(1e-9).ln();
    let mut s = format!(
        "<svg xmlns='http://www.w3.org/2000/svg' width='{w}' height='{h}' font-family='sans-serif' font-size='12'>\
<rect width='100%' height='100%' fill='white'/><text x='10' y='20' font-size='15'>{}: IOPS heat map (log colour)</text>",
        xml(target)
    );
    for (j, m) in mixes.iter().enumerate() {
        let _ = write!(
            s,
            "<text x='{}' y='{}' text-anchor='middle'>{m:.0}/{:.0}</text>",
            left + cw * (j as f64 + 0.5),
            top - 8.0,
            100.0 - m
        );
    }
    for (i, &b) in sizes.iter().enumerate() {
        let y = top + ch * i as f64;
        let _ = write!(
            s,
            "<text x='{}' y='{}' text-anchor='end'>{}</text>",
            left - 8.0,
            y + ch / 2.0 + 4.0,
            bs_label(b)
        );
        for (j, &m) in mixes.iter().enumerate() {
            let v = get(m, b);
            let t = if v.is_finite() && v > 0.0 && hi > lo {
                (v.ln() - lo) / (hi - lo)
            } else {
                0.0
            };
            let (r, g, bl) = (
                (255.0 * t) as u8,
                (60.0 + 120.0 * (1.0 - (2.0 * t - 1.0).abs())) as u8,
                (255.0 * (1.0 - t)) as u8,
            );
            let x = left + cw * j as f64;
            let _ = write!(
                s,
                "<rect x='{x}' y='{y}' width='{cw}' height='{ch}' fill='rgb({r},{g},{bl})' stroke='white'/>\
<text x='{}' y='{}' text-anchor='middle' fill='white'>{:.0}</text>",
                x + cw / 2.0,
                y + ch / 2.0 + 4.0,
                v
            );
        }
    }
    s.push_str("</svg>");
    s
}

fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('\'', "&apos;")
}

fn bars_of(
    id: &str,
    title: &str,
    y: &str,
    rs: &[&TestResult],
    f: &dyn Fn(&PointResult) -> f64,
) -> Chart {
    Chart::bars(
        id,
        title,
        "Test point",
        y,
        rs.iter()
            .map(|r| {
                Series::categorical(
                    r.target.clone(),
                    r.window.iter().map(|p| (p.label.clone(), f(p))),
                )
            })
            .collect(),
    )
}

/// A statistic of a time-line point.
type Metric = Box<dyn Fn(&lab::pts::TimePoint) -> f64>;

fn timeline_charts(test: &str, rs: &[&TestResult], by_tgbw: bool) -> Vec<Chart> {
    let mut charts = Vec::new();
    let metrics: Vec<(&str, &str, Metric)> = vec![
        ("iops", "IOPS", Box::new(|p| p.stats.iops)),
        ("mbps", "Throughput (MB/s)", Box::new(|p| p.stats.mb_per_s)),
        (
            "lat",
            "Average response time (µs)",
            Box::new(|p| p.stats.lat_avg_us),
        ),
        (
            "wa",
            "Write amplification (model)",
            Box::new(|p| p.stats.write_amplification),
        ),
        (
            "free",
            "Free erase units (model, all members)",
            Box::new(|p| p.free_units.unwrap_or(f64::NAN)),
        ),
    ];
    for (key, label, f) in &metrics {
        if (*key == "wa" || *key == "free")
            && !rs
                .iter()
                .any(|r| r.timeline.iter().any(|p| p.free_units.is_some()))
        {
            continue;
        }
        if test == "hir" && (*key == "wa" || *key == "free" || *key == "mbps") {
            continue;
        }
        let axes: &[(&str, &str)] = if by_tgbw {
            &[("time", "Time (minutes)"), ("tgbw", "Total GB written")]
        } else {
            &[("time", "Time (minutes)")]
        };
        for (xk, xl) in axes {
            if *xk == "time" && by_tgbw && *key != "iops" {
                continue;
            }
            let series = rs
                .iter()
                .map(|r| {
                    Series::numeric(
                        r.target.clone(),
                        r.timeline
                            .iter()
                            .map(|p| (if *xk == "tgbw" { p.tgbw } else { p.t_s / 60.0 }, f(p))),
                    )
                })
                .collect();
            let mut c = Chart::line(
                format!("{test}-{key}-{xk}"),
                format!("{label} against {}", xl.to_lowercase()),
                *xl,
                *label,
                series,
            );
            for r in rs {
                let mut last = "";
                for p in &r.timeline {
                    if p.phase != last && !last.is_empty() && test != "hir" {
                        c.markers.push(Marker {
                            target: r.target.clone(),
                            x: XValue::Number(if *xk == "tgbw" { p.tgbw } else { p.t_s / 60.0 }),
                            label: p.phase.clone(),
                        });
                    }
                    last = &p.phase;
                }
            }
            charts.push(c);
        }
    }
    charts
}

fn phase_table(rs: &[&TestResult]) -> Table {
    let mut rows = Vec::new();
    for r in rs {
        let mut phases: Vec<&str> = Vec::new();
        for p in &r.timeline {
            if !phases.contains(&p.phase.as_str()) {
                phases.push(&p.phase);
            }
        }
        let pre = r
            .steady
            .first()
            .and_then(|s| s.window.map(|w| w.mean))
            .unwrap_or(f64::NAN);
        for ph in phases {
            let pts: Vec<_> = r.timeline.iter().filter(|p| p.phase == ph).collect();
            let n = pts.len() as f64;
            let iops = pts.iter().map(|p| p.stats.iops).sum::<f64>() / n;
            rows.push(vec![
                r.target.clone(),
                ph.to_string(),
                pts.len().to_string(),
                f0(iops),
                f1(pts.iter().map(|p| p.stats.mb_per_s).sum::<f64>() / n),
                f1(pts.iter().map(|p| p.stats.lat_avg_us).sum::<f64>() / n),
                if pre.is_finite() {
                    format!("{:+.1} %", (iops / pre - 1.0) * 100.0)
                } else {
                    "-".into()
                },
            ]);
        }
    }
    Table {
        title: "Segments".into(),
        columns: [
            "target",
            "segment",
            "intervals",
            "mean IOPS",
            "mean MB/s",
            "mean avg µs",
            "vs preconditioned steady state",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    }
}

fn dirth_sections(test: &str, rs: &[&TestResult], plan: &PtsPlan) -> Vec<Section> {
    let mut s = Section {
        id: "demand".into(),
        title: "Demand intensity and demand variation".into(),
        text: format!(
            "T×Q grid, measurement window average. Demand intensity: average response time against IOPS, one curve per thread count. Demand variation: IOPS against queue depth, one curve per thread count. The ceiling point: the most IOPS with a 99.99th percentile within {:.0} µs.",
            plan.latency_ceiling_us
        ),
        ..Default::default()
    };
    let mut di = Vec::new();
    let mut dv = Vec::new();
    let mut ceil_rows = Vec::new();
    for r in rs {
        let mut ts: Vec<u32> = r.window.iter().map(|p| p.threads).collect();
        ts.sort_unstable();
        ts.dedup();
        for t in ts {
            let mut pts: Vec<&PointResult> = r.window.iter().filter(|p| p.threads == t).collect();
            pts.sort_by_key(|p| p.qd);
            di.push(Series::numeric(
                format!("{} T{t}", r.target),
                pts.iter().map(|p| (p.stats.iops, p.stats.lat_avg_us / 1e3)),
            ));
            // Queue depths double: a category each, evenly spaced.
            dv.push(Series::categorical(
                format!("{} T{t}", r.target),
                pts.iter().map(|p| (p.qd.to_string(), p.stats.iops)),
            ));
        }
        ceil_rows.push(match &r.ceiling_point {
            Some(p) => vec![
                r.target.clone(),
                p.label.clone(),
                f0(p.stats.iops),
                f1(p.stats.lat_p9999_us),
            ],
            None => vec![
                r.target.clone(),
                "none within the ceiling".into(),
                "-".into(),
                "-".into(),
            ],
        });
    }
    s.charts.push(Chart::line(
        format!("{test}-demand-intensity"),
        "Demand intensity: average response time against IOPS",
        "IOPS",
        "Average response time (ms)",
        di,
    ));
    s.charts.push(Chart::line(
        format!("{test}-demand-variation"),
        "Demand variation: IOPS against queue depth per thread count",
        "Queue depth per thread",
        "IOPS",
        dv,
    ));
    s.tables.push(Table {
        title: "Max IOPS within the latency ceiling".into(),
        columns: ["target", "point", "IOPS", "p99.99 µs"]
            .map(String::from)
            .to_vec(),
        rows: ceil_rows,
    });
    s.tables
        .push(window_table("T×Q grid (measurement window)", rs, &|_| {
            true
        }));
    let mut h = Section {
        id: "histograms".into(),
        title: "Response-time histograms at the maximum, middle and minimum IOPS points".into(),
        text: format!(
            "Each run {:.1} s (10 minutes × the time factor); buckets of a quarter decade, labelled by their upper bound.",
            plan.scaled_ns(600.0) as f64 / 1e9
        ),
        ..Default::default()
    };
    let mut rows = Vec::new();
    for r in rs {
        for x in &r.histograms {
            h.charts.push(Chart::bars(
                report::slug(&format!("{test}-hist-{}-{}", r.target, x.operating_point)),
                format!(
                    "{}: {} IOPS point T{}Q{} ({:.0} IOPS)",
                    r.target, x.operating_point, x.threads, x.qd, x.stats.iops
                ),
                "Response time up to (µs)",
                "I/Os",
                vec![Series::categorical(
                    r.target.clone(),
                    x.bins.iter().map(|(b, c)| (format!("{b:.0}"), *c as f64)),
                )],
            ));
            rows.push(vec![
                r.target.clone(),
                x.operating_point.clone(),
                format!("T{}Q{}", x.threads, x.qd),
                f0(x.stats.iops),
                f1(x.stats.lat_avg_us),
                f1(x.stats.lat_p99_us),
                f1(x.stats.lat_p9999_us),
                f1(x.lat_p99999_us),
                f1(x.stats.lat_max_us),
            ]);
        }
    }
    h.tables.push(Table {
        title: "Operating points".into(),
        columns: [
            "target",
            "point",
            "T×Q",
            "IOPS",
            "avg µs",
            "p99 µs",
            "p99.99 µs",
            "p99.999 µs",
            "max µs",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    });
    vec![s, h]
}

fn test_review(
    test: PtsTest,
    setup: &SetupSheet,
    plan: &PtsPlan,
    rs: &[&TestResult],
    dir: &Path,
) -> Result<Review> {
    let mut sections = vec![Section {
        id: "setup".into(),
        title: "Set-up sheet, purge and preconditioning".into(),
        tables: {
            let mut t = setup_table(setup, plan);
            t.push(purge_table(rs));
            t
        },
        ..Default::default()
    }];
    if rs.iter().any(|r| !r.steady.is_empty()) {
        sections.push(steady_section(test.name(), rs));
    }
    match test {
        PtsTest::Iops => sections.extend(iops_sections(rs, dir)?),
        PtsTest::Throughput => sections.push(Section {
            id: "throughput".into(),
            title: "Sequential throughput (measurement window)".into(),
            charts: vec![bars_of("throughput-mbps", "Throughput", "MB/s", rs, &|p| p.stats.mb_per_s)],
            tables: vec![window_table("Throughput", rs, &|_| true)],
            ..Default::default()
        }),
        PtsTest::Latency => sections.push(Section {
            id: "latency".into(),
            title: "Response times at T1Q1 (measurement window)".into(),
            text: "Average, maximum and 99.999th percentile (five nines) response time of each R/W mix and block size.".into(),
            charts: vec![
                bars_of("latency-avg", "Average response time", "µs", rs, &|p| p.stats.lat_avg_us),
                bars_of("latency-max", "Maximum response time", "µs", rs, &|p| p.stats.lat_max_us),
                bars_of("latency-5nines", "99.999th percentile response time", "µs", rs, &|p| p.lat_p99999_us),
            ],
            tables: vec![window_table("Response times", rs, &|_| true)],
            ..Default::default()
        }),
        PtsTest::Wsat => sections.push(Section {
            id: "wsat".into(),
            title: "Write saturation: 4 KiB random writes from fresh out of box".into(),
            text: "One point per round-time of stimulus; on modelled cards the write amplification and the free erase units show where free space runs out and garbage collection begins.".into(),
            charts: timeline_charts("wsat", rs, true),
            ..Default::default()
        }),
        PtsTest::Hir => sections.push(Section {
            id: "hir".into(),
            title: "Host idle recovery".into(),
            text: "4 KiB random-write bursts separated by wait states of 5, 10, 15, 25 and 50 s (× the time factor), each followed by a return to baseline (bursts without waits). IOPS per burst; the table compares each segment with the preconditioned steady state. Recovery after idle time needs background garbage collection while the host is idle.".into(),
            charts: timeline_charts("hir", rs, false),
            tables: vec![phase_table(rs)],
            ..Default::default()
        }),
        PtsTest::Xsr => sections.push(Section {
            id: "xsr".into(),
            title: "Cross-stimulus recovery".into(),
            text: "SEQ 1024 KiB writes (8 h × the time factor), then RND 8 KiB writes (6 h ×), then SEQ 1024 KiB writes again (6 h ×); markers at the transitions.".into(),
            charts: timeline_charts("xsr", rs, false),
            tables: vec![phase_table(rs)],
            ..Default::default()
        }),
        PtsTest::Dirth | PtsTest::Ecw => sections.extend(dirth_sections(test.name(), rs, plan)),
    }
    Ok(Review {
        title: format!(
            "SNIA PTS-{}: {}",
            if plan.class.active_range() < 1.0 {
                "C"
            } else {
                "E"
            },
            test.title()
        ),
        subtitle: format!("openvsl vsl pts, {}", setup.date_utc),
        configuration: serde_json::to_string_pretty(plan)?,
        seed: Some(plan.seed),
        targets: setup
            .targets
            .iter()
            .map(|t| TargetInfo {
                name: t.label.clone(),
                description: t.description.clone(),
            })
            .collect(),
        sections,
    })
}

/// Writes OUT/<test>/index.html for every test and OUT/index.html; returns
/// the pages.
pub fn render(
    out: &Path,
    setup: &SetupSheet,
    plan: &PtsPlan,
    tests: &[PtsTest],
    results: &[TestResult],
) -> Result<Vec<PathBuf>> {
    let mut pages = Vec::new();
    let mut links = String::new();
    for &t in tests {
        let rs: Vec<&TestResult> = results.iter().filter(|r| r.test == t.name()).collect();
        let dir = out.join(t.name());
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        let review = test_review(t, setup, plan, &rs, &dir)?;
        let rendered = report::render(&review, &dir)
            .with_context(|| format!("cannot render the {} page", t.name()))?;
        if t == PtsTest::Iops {
            embed_heatmaps(&rendered.index_html, &rs)?;
        }
        pages.push(rendered.index_html);
        let status: Vec<String> = rs
            .iter()
            .map(|r| match (&r.error, r.steady.first()) {
                (Some(e), _) => format!("{}: FAILED ({})", r.target, e),
                (None, Some(s)) if t != PtsTest::Wsat => match s.converged_round {
                    Some(c) => format!("{}: steady at round {c}", r.target),
                    None => format!("{}: not steady in {} rounds", r.target, s.rounds_run),
                },
                _ => format!("{}: done", r.target),
            })
            .collect();
        let _ = writeln!(
            links,
            "<li><a href='{0}/index.html'>{1}</a> — {2}</li>",
            t.name(),
            html(t.title()),
            html(&status.join("; "))
        );
    }
    let mut sheet = String::new();
    for tb in setup_table(setup, plan) {
        let _ = write!(sheet, "<h3>{}</h3><table><tr>", html(&tb.title));
        for c in &tb.columns {
            let _ = write!(sheet, "<th>{}</th>", html(c));
        }
        sheet.push_str("</tr>");
        for r in &tb.rows {
            sheet.push_str("<tr>");
            for c in r {
                let _ = write!(sheet, "<td>{}</td>", html(c));
            }
            sheet.push_str("</tr>");
        }
        sheet.push_str("</table>");
    }
    let csv = CSV_FILES
        .iter()
        .map(|f| format!("<a href='csv-all/{f}'>{f}</a>"))
        .collect::<Vec<_>>()
        .join(", ");
    let index = format!(
        "<!doctype html><html><head><meta charset='utf-8'><title>SNIA PTS report</title>\
<style>body{{font-family:sans-serif;max-width:70em;margin:2em auto}}td,th{{border:1px solid #ccc;padding:.2em .5em;text-align:left}}table{{border-collapse:collapse;margin-bottom:1em}}</style>\
</head><body><h1>SNIA PTS-{} report</h1><p>One page per test; every number in <a href='results.json'>results.json</a> and CSV: {csv}.</p><ul>{links}</ul><h2>Set-up</h2>{sheet}</body></html>",
        if plan.class.active_range() < 1.0 { "C" } else { "E" }
    );
    std::fs::write(out.join("index.html"), index).context("cannot write index.html")?;
    Ok(pages)
}

/// The files of OUT/csv-all/ ([`write_csv`]).
const CSV_FILES: [&str; 5] = [
    "rounds.csv",
    "window.csv",
    "steady.csv",
    "timeline.csv",
    "histograms.csv",
];

/// Puts the IOPS heat maps (SVG files next to the page) into the page,
/// after the paragraph that names them: the report renderer's sections
/// carry charts it draws itself, not images.
fn embed_heatmaps(page: &Path, rs: &[&TestResult]) -> Result<()> {
    let mut text =
        std::fs::read_to_string(page).with_context(|| format!("cannot read {}", page.display()))?;
    let names: Vec<(String, &str)> = rs
        .iter()
        .filter(|r| !r.window.is_empty())
        .map(|r| {
            (
                format!("heatmap-{}.svg", report::slug(&r.target)),
                r.target.as_str(),
            )
        })
        .collect();
    let Some((last, _)) = names.last() else {
        return Ok(());
    };
    let at = text
        .find(last.as_str())
        .and_then(|i| text[i..].find("</p>").map(|j| i + j + "</p>".len()))
        .ok_or_else(|| anyhow::anyhow!("{}: no heat map paragraph", page.display()))?;
    let mut figs = String::from("\n<div class=\"charts\">\n");
    for (name, target) in &names {
        let _ = writeln!(
            figs,
            "<figure><img src=\"{name}\" alt=\"{0}: IOPS heat map\"><figcaption>{0}: IOPS heat map, block size × R/W mix</figcaption></figure>",
            html(target)
        );
    }
    figs.push_str("</div>");
    text.insert_str(at, &figs);
    std::fs::write(page, text).with_context(|| format!("cannot write {}", page.display()))
}

fn html(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn stats_cols(s: &lab::IntervalStats) -> String {
    format!(
        "{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
        s.ios,
        s.iops,
        s.read_iops,
        s.write_iops,
        s.mb_per_s,
        s.lat_avg_us,
        s.lat_max_us,
        s.lat_p50_us,
        s.lat_p99_us,
        s.lat_p999_us,
        s.lat_p9999_us,
        s.lat_stddev_us,
        s.write_amplification,
        s.gc_pages_moved
    )
}
const STATS_HEAD: &str = "ios,iops,read_iops,write_iops,mb_per_s,lat_avg_us,lat_max_us,lat_p50_us,lat_p99_us,lat_p999_us,lat_p9999_us,lat_stddev_us,write_amplification,gc_pages_moved";

/// Every number as CSV: OUT/csv-all/{rounds,window,steady,timeline,histograms}.csv.
pub fn write_csv(out: &Path, results: &[TestResult]) -> Result<()> {
    let dir = out.join("csv-all");
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut rounds =
        format!("test,target,round,point,read_pct,bs,threads,qd,{STATS_HEAD},lat_p99999_us\n");
    let mut window =
        format!("test,target,point,read_pct,bs,threads,qd,{STATS_HEAD},lat_p99999_us\n");
    let mut steady = String::from("test,target,variable,round,value,converged_round,rounds_run\n");
    let mut timeline = format!("test,target,t_s,tgbw,phase,free_units,{STATS_HEAD}\n");
    let mut hist = String::from("test,target,operating_point,threads,qd,bucket_upper_us,count\n");
    for r in results {
        let (t, g) = (csv_field(&r.test), csv_field(&r.target));
        for rd in &r.rounds {
            for p in &rd.points {
                let _ = writeln!(
                    rounds,
                    "{t},{g},{},{},{},{},{},{},{},{}",
                    rd.round,
                    csv_field(&p.label),
                    p.read_pct,
                    p.bs,
                    p.threads,
                    p.qd,
                    stats_cols(&p.stats),
                    p.lat_p99999_us
                );
            }
        }
        for p in &r.window {
            let _ = writeln!(
                window,
                "{t},{g},{},{},{},{},{},{},{}",
                csv_field(&p.label),
                p.read_pct,
                p.bs,
                p.threads,
                p.qd,
                stats_cols(&p.stats),
                p.lat_p99999_us
            );
        }
        for s in &r.steady {
            for (i, v) in s.series.iter().enumerate() {
                let _ = writeln!(
                    steady,
                    "{t},{g},{},{},{v},{},{}",
                    csv_field(&s.variable),
                    i + 1,
                    s.converged_round.map_or(String::new(), |c| c.to_string()),
                    s.rounds_run
                );
            }
        }
        for p in &r.timeline {
            let _ = writeln!(
                timeline,
                "{t},{g},{},{},{},{},{}",
                p.t_s,
                p.tgbw,
                csv_field(&p.phase),
                p.free_units.map_or(String::new(), |f| f.to_string()),
                stats_cols(&p.stats)
            );
        }
        for h in &r.histograms {
            for (b, c) in &h.bins {
                let _ = writeln!(
                    hist,
                    "{t},{g},{},{},{},{b},{c}",
                    h.operating_point, h.threads, h.qd
                );
            }
        }
    }
    for (name, text) in [
        ("rounds.csv", rounds),
        ("window.csv", window),
        ("steady.csv", steady),
        ("timeline.csv", timeline),
        ("histograms.csv", hist),
    ] {
        std::fs::write(dir.join(name), text).with_context(|| format!("cannot write {name}"))?;
    }
    Ok(())
}

/// Prints every page to OUT/<test>.pdf with headless Chromium.
pub fn print_pdfs(out: &Path, pages: &[PathBuf]) -> Result<()> {
    let chromium = ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|c| {
            std::process::Command::new(c)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        });
    let Some(chromium) = chromium else {
        bail!("--pdf: no chromium, chromium-browser or google-chrome on PATH (the HTML report is written)");
    };
    // Chromium keeps its profile and singleton socket under TMPDIR
    // (/tmp/org.chromium.Chromium.*) and does not always remove them: give
    // it a directory of its own and remove that, whatever happened.
    let scratch = std::env::temp_dir().join(format!("vsl-chromium-{}", std::process::id()));
    std::fs::create_dir_all(&scratch)
        .with_context(|| format!("cannot create {}", scratch.display()))?;
    let printed = print_each(chromium, out, pages, &scratch);
    let _ = std::fs::remove_dir_all(&scratch);
    printed
}

fn print_each(chromium: &str, out: &Path, pages: &[PathBuf], scratch: &Path) -> Result<()> {
    for page in pages {
        let abs = std::fs::canonicalize(page)?;
        let name = abs
            .parent()
            .and_then(|p| p.file_name())
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_else(|| "page".into());
        let pdf = std::fs::canonicalize(out)?.join(format!("{name}.pdf"));
        let o = std::process::Command::new(chromium)
            .env("TMPDIR", scratch)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-pdf-header-footer",
            ])
            .arg(format!(
                "--user-data-dir={}",
                scratch.join("profile").display()
            ))
            .arg(format!("--print-to-pdf={}", pdf.display()))
            .arg(format!("file://{}", abs.display()))
            .output()
            .with_context(|| format!("cannot run {chromium}"))?;
        if !o.status.success() || !pdf.exists() {
            bail!(
                "--pdf: {chromium} failed on {}: {}",
                page.display(),
                String::from_utf8_lossy(&o.stderr)
                    .lines()
                    .last()
                    .unwrap_or("")
            );
        }
    }
    Ok(())
}
