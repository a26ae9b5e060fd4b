//! Turns review results into the report: one section per profile with the
//! four statistics over preconditioning time and per matrix point, the
//! standard tests, sysbench, I/O Analyzer, a summary table and the exact
//! configuration.

use anyhow::{Context, Result};
use device::HealthPoint;
use lab::review::{ProfileResult, ReviewPlan, TargetResult, TestPoint};
use lab::IntervalStats;
use report::{Chart, Marker, Review, Section, Series, SteadyState, Table, TargetInfo, XValue};
use std::path::Path;

/// One plotted statistic: title, axis label, value from the stats.
struct Stat {
    key: &'static str,
    title: &'static str,
    axis: &'static str,
    value: fn(&IntervalStats) -> f64,
    log_y: bool,
}

const FOUR_STATS: [Stat; 4] = [
    Stat {
        key: "throughput",
        title: "throughput",
        axis: "Throughput (IOPS)",
        value: |s| s.iops,
        log_y: false,
    },
    Stat {
        key: "avg-latency",
        title: "average latency",
        axis: "Average latency (ms)",
        value: |s| s.lat_avg_us / 1e3,
        log_y: false,
    },
    Stat {
        key: "max-latency",
        title: "max latency",
        axis: "Max latency (ms)",
        value: |s| s.lat_max_us / 1e3,
        log_y: true,
    },
    Stat {
        key: "latency-stddev",
        title: "latency standard deviation",
        axis: "Latency standard deviation (ms)",
        value: |s| s.lat_stddev_us / 1e3,
        log_y: false,
    },
];

fn profile_section(name: &str, results: &[TargetResult]) -> Section {
    let per: Vec<(&str, &ProfileResult)> = results
        .iter()
        .filter_map(|r| {
            r.profiles
                .iter()
                .find(|p| p.profile == name)
                .map(|p| (r.label.as_str(), p))
        })
        .collect();
    let mut charts = Vec::new();
    let reused = per.iter().any(|(_, p)| p.reused_state);
    if !reused {
        for s in &FOUR_STATS {
            let series = per
                .iter()
                .map(|(t, p)| {
                    Series::numeric(
                        *t,
                        p.precondition.iter().map(|i| (i.t_s / 60.0, (s.value)(i))),
                    )
                })
                .collect();
            let mut c = Chart::line(
                format!("{name}-precondition-{}", s.key),
                format!("{name}: preconditioning {}", s.title),
                "Preconditioning time (minutes)",
                s.axis,
                series,
            );
            c.log_y = s.log_y;
            c.markers = per
                .iter()
                .filter_map(|(t, p)| {
                    let round = p.converged_round?;
                    let x = p.precondition.get(round - 1)?.t_s / 60.0;
                    Some(Marker {
                        target: t.to_string(),
                        x: XValue::Number(x),
                        label: format!("steady state ({t})"),
                    })
                })
                .collect();
            charts.push(c);
        }
    }
    for s in &FOUR_STATS {
        let series = per
            .iter()
            .map(|(t, p)| {
                Series::categorical(
                    *t,
                    p.matrix
                        .iter()
                        .map(|m| (format!("{}T/{}Q", m.threads, m.qd), (s.value)(&m.stats))),
                )
            })
            .collect();
        let mut c = Chart::bars(
            format!("{name}-matrix-{}", s.key),
            format!("{name}: {} by threads / queue depth", s.title),
            "Threads / queue depth",
            s.axis,
            series,
        );
        c.log_y = s.log_y;
        charts.push(c);
    }
    let steady_state = per
        .iter()
        .map(|(t, p)| SteadyState {
            target: t.to_string(),
            converged_round: if p.reused_state {
                None
            } else {
                p.converged_round.map(|r| r as u32)
            },
            rounds_run: p.precondition.len() as u32,
            note: if p.reused_state {
                format!(
                    "state reused from the previous profile ({})",
                    p.precondition_pattern
                )
            } else {
                format!("preconditioned with {} at 16T/16Q", p.precondition_pattern)
            },
        })
        .collect();
    Section {
        id: format!("profile-{name}"),
        title: format!("Enterprise workload: {name}"),
        text: format!(
            "Purge, sequential fill, then preconditioning with the profile's pattern at 16 threads x 16 outstanding I/Os in rounds until SNIA PTS steady state (5-round window, data excursion <= 20 %, slope excursion <= 10 %) or the time cap; then the thread / queue-depth matrix.{}",
            if reused { " This profile reuses the steady state of the previous one, which preconditions with the same pattern." } else { "" }
        ),
        steady_state,
        charts,
        tables: Vec::new(),
    }
}

fn tests_of<'a>(results: &'a [TargetResult], group: &str) -> Vec<(&'a str, Vec<&'a TestPoint>)> {
    results
        .iter()
        .map(|r| {
            (
                r.label.as_str(),
                r.tests.iter().filter(|t| t.group == group).collect(),
            )
        })
        .collect()
}

fn group_chart(
    results: &[TargetResult],
    group: &str,
    title: &str,
    y: &Stat,
    by_name: bool,
) -> Option<Chart> {
    let per = tests_of(results, group);
    if per.iter().all(|(_, v)| v.is_empty()) {
        return None;
    }
    let x_label = per
        .iter()
        .flat_map(|(_, v)| v.first())
        .map(|t| t.x_label.clone())
        .next()
        .unwrap_or_default();
    let series = per
        .iter()
        .map(|(t, v)| {
            if by_name {
                Series::categorical(*t, v.iter().map(|p| (p.test.clone(), (y.value)(&p.stats))))
            } else {
                Series::numeric(*t, v.iter().map(|p| (p.x, (y.value)(&p.stats))))
            }
        })
        .collect();
    let id = format!("{group}-{}", y.key);
    let mut c = if by_name {
        Chart::bars(id, format!("{title}: {}", y.title), "Test", y.axis, series)
    } else {
        Chart::line(id, format!("{title}: {}", y.title), x_label, y.axis, series)
    };
    c.log_y = y.log_y;
    Some(c)
}

const MBS: Stat = Stat {
    key: "bandwidth",
    title: "bandwidth",
    axis: "Bandwidth (MB/s)",
    value: |s| s.mb_per_s,
    log_y: false,
};
const P95: Stat = Stat {
    key: "p95-latency",
    title: "95th percentile latency",
    axis: "95th percentile latency (ms)",
    value: |s| s.lat_p95_us / 1e3,
    log_y: false,
};

fn standard_section(results: &[TargetResult]) -> Section {
    let mut charts = Vec::new();
    let [iops, avg, max, _] = &FOUR_STATS;
    let plan: [(&str, &str, &[&Stat], bool); 7] = [
        (
            "2m-bandwidth",
            "2 MB sequential and random, 4 workers x QD 8",
            &[&MBS],
            true,
        ),
        (
            "4k-qd1",
            "4K random, 4 workers x QD 1",
            &[iops, avg, max],
            true,
        ),
        (
            "ramp-4k-randread",
            "4K random read ramped (4 workers)",
            &[iops, avg],
            false,
        ),
        (
            "ramp-4k-randwrite",
            "4K random write ramped (4 workers)",
            &[iops, avg],
            false,
        ),
        (
            "ramp-fileserver",
            "File Server ramped to effective QD 512",
            &[iops, avg],
            false,
        ),
        (
            "ramp-webserver",
            "Web Server ramped to effective QD 512",
            &[iops, avg],
            false,
        ),
        (
            "mail-trace",
            "Mail-server trace replay (light: QD 8, heavy: QD 48)",
            &[iops, avg],
            true,
        ),
    ];
    for (group, title, stats, by_name) in plan {
        for s in stats {
            charts.extend(group_chart(results, group, title, s, by_name));
        }
    }
    Section {
        id: "standard".into(),
        title: "Standard synthetic tests".into(),
        text: "After a purge and a sequential fill: 2 MB sequential and random transfers, 4K random at 4 workers x QD 1, 4K random read and write ramped from QD 1 to 64 per worker, File Server and Web Server ramped to an effective queue depth of 512, and a 95 %-read mail-server trace replayed at effective QD 8 and 48 (the synthetic trace of workload::Trace::synthetic_mail unless the plan names an MSR Cambridge CSV trace).".into(),
        charts,
        ..Section::default()
    }
}

fn sysbench_section(results: &[TargetResult], plan: &ReviewPlan) -> Section {
    let mut charts = Vec::new();
    for frac in &plan.sysbench_file_fractions {
        for mode in ["seqwr", "seqrd", "rndrd", "rndwr", "rndrw"] {
            let group = format!("sysbench-{mode}-file{:.0}", frac * 100.0);
            let title = format!("sysbench {mode}, file = {:.0} % of capacity", frac * 100.0);
            charts.extend(group_chart(results, &group, &title, &MBS, false));
            charts.extend(group_chart(results, &group, &title, &P95, false));
        }
    }
    Section {
        id: "sysbench".into(),
        title: "sysbench fileio style".into(),
        text: "16 KiB blocks, O_DIRECT semantics (one outstanding I/O per thread), 1 to 32 threads; seqwr, seqrd, rndrd, rndwr and rndrw (60 % reads, sysbench's default ratio); the file size as a fraction of the formatted capacity.".into(),
        charts,
        ..Section::default()
    }
}

fn ioanalyzer_section(results: &[TargetResult]) -> Section {
    let mut charts = Vec::new();
    let [iops, avg, _, _] = &FOUR_STATS;
    for s in [iops, avg] {
        charts.extend(group_chart(
            results,
            "ioanalyzer",
            "I/O Analyzer style, 1 worker x QD 32",
            s,
            true,
        ));
    }
    Section {
        id: "ioanalyzer".into(),
        title: "VMware I/O Analyzer style".into(),
        text: "512 B and 4 KiB sequential 100 % read, 4 KiB random 50 % read.".into(),
        charts,
        ..Section::default()
    }
}

/// One health series: chart id, title, axis and value of a sample.
type HealthStat = (
    &'static str,
    &'static str,
    &'static str,
    fn(&HealthPoint) -> f64,
);

const HEALTH_STATS: [HealthStat; 3] = [
    (
        "temperature",
        "temperature (hottest member)",
        "Temperature (°C)",
        |h| h.temperature_c,
    ),
    ("power", "power (all members)", "Power (W)", |h| h.power_w),
    (
        "endurance-used",
        "rated endurance used (most-used member)",
        "Endurance used (%)",
        |h| h.endurance_used_pct,
    ),
];

/// Temperature, power and endurance used of the modelled targets after
/// every phase, over the review's measured time; `None` when no target
/// has a health series (real devices only).
fn health_section(results: &[TargetResult]) -> Option<Section> {
    let per: Vec<&TargetResult> = results.iter().filter(|r| !r.health.is_empty()).collect();
    if per.is_empty() {
        return None;
    }
    let charts = HEALTH_STATS
        .iter()
        .map(|&(key, title, axis, value)| {
            let series = per
                .iter()
                .map(|r| {
                    Series::numeric(
                        r.label.as_str(),
                        r.health
                            .iter()
                            .map(|h| (h.point.t_s / 60.0, value(&h.point))),
                    )
                })
                .collect();
            Chart::line(
                format!("health-{key}"),
                format!("Health: {title}"),
                "Measured time of the review (minutes)",
                axis,
                series,
            )
        })
        .collect();
    let rows = per
        .iter()
        .map(|r| {
            let last = &r.health.last().expect("not empty").point;
            let max = |f: fn(&HealthPoint) -> f64| {
                r.health
                    .iter()
                    .map(|h| f(&h.point))
                    .fold(f64::MIN, f64::max)
            };
            vec![
                r.label.clone(),
                format!("{:.1}", max(|h| h.temperature_c)),
                format!("{:.1}", max(|h| h.power_w)),
                format!("{:.3}", last.endurance_used_pct),
            ]
        })
        .collect();
    Some(Section {
        id: "health".into(),
        title: "Health, power and temperature".into(),
        text: "The modelled card's hottest member temperature, total power and rated endurance used (100 % − the card's own \"rated endurance remaining\", from physical bytes written) at the end of every measured phase, over the review's measured time (purge and fill excluded; a purge keeps the lifetime counters). Model and parameters: docs/MODEL.md, \"Health, endurance, power and temperature\"; every sample with its phase is in lab_results.json (targets[].health).".into(),
        charts,
        tables: vec![Table {
            title: "Health at the end of the review".into(),
            columns: [
                "target",
                "max temperature (°C)",
                "max power (W)",
                "endurance used (%)",
            ]
            .map(String::from)
            .to_vec(),
            rows,
        }],
        ..Section::default()
    })
}

fn summary_table(results: &[TargetResult]) -> Table {
    let at = |r: &TargetResult, p: &str| -> Option<IntervalStats> {
        r.profiles
            .iter()
            .find(|x| x.profile == p)?
            .matrix
            .iter()
            .find(|m| m.threads == 16 && m.qd == 16)
            .map(|m| m.stats.clone())
    };
    let fmt_iops = |s: Option<IntervalStats>| {
        s.map(|s| format!("{:.0} IOPS, {:.2} ms", s.iops, s.lat_avg_us / 1e3))
            .unwrap_or_else(|| "-".into())
    };
    let mut columns = vec!["target".to_string()];
    let profiles = [
        "4k-randwrite",
        "4k-randread",
        "8k-7030",
        "fileserver",
        "webserver",
    ];
    columns.extend(profiles.iter().map(|p| format!("{p} 16T/16Q")));
    columns.push("status".into());
    let rows = results
        .iter()
        .map(|r| {
            let mut row = vec![r.label.clone()];
            row.extend(profiles.iter().map(|p| fmt_iops(at(r, p))));
            let mut status = r.error.clone().unwrap_or_else(|| "complete".into());
            if let Some(d) = r.device.as_ref().filter(|d| !d.measured_on_device) {
                status.push_str("; ");
                status.push_str(&d.words);
            }
            row.push(status);
            row
        })
        .collect();
    Table {
        title: "Steady state at 16 threads x QD 16".into(),
        columns,
        rows,
    }
}

pub fn render(
    out: &Path,
    plan: &ReviewPlan,
    results: &[TargetResult],
    apps: &[crate::app_report::AppResults],
) -> Result<()> {
    let mut sections = vec![Section {
        id: "summary".into(),
        title: "Summary".into(),
        text: "Every target on the same axes; modelled cards run in deterministic virtual time, real files and block devices in wall time.".into(),
        tables: vec![summary_table(results)],
        ..Section::default()
    }];
    let mut profiles: Vec<&str> = Vec::new();
    for r in results {
        for p in &r.profiles {
            if !profiles.contains(&p.profile.as_str()) {
                profiles.push(&p.profile);
            }
        }
    }
    sections.extend(profiles.iter().map(|p| profile_section(p, results)));
    if results.iter().any(|r| !r.tests.is_empty()) {
        if plan.standard {
            sections.push(standard_section(results));
        }
        if plan.sysbench {
            sections.push(sysbench_section(results, plan));
        }
        if plan.ioanalyzer {
            sections.push(ioanalyzer_section(results));
        }
    }
    sections.extend(health_section(results));
    sections.extend(apps.iter().map(|a| a.section()));
    let configuration = format!(
        "{}\n\n# plan\n{}",
        std::env::args().collect::<Vec<_>>().join(" "),
        toml::to_string(plan).unwrap_or_default()
    );
    let review = Review {
        title: format!(
            "openvsl review: {}",
            results
                .iter()
                .map(|r| r.label.as_str())
                .collect::<Vec<_>>()
                .join(" vs ")
        ),
        subtitle: format!(
            "openvsl {} — enterprise synthetic workload analysis",
            env!("CARGO_PKG_VERSION")
        ),
        configuration,
        seed: Some(plan.seed),
        targets: results
            .iter()
            .map(|r| TargetInfo {
                name: r.label.clone(),
                description: match &r.device {
                    Some(d) => format!("{}; {}", r.description, d.words),
                    None => r.description.clone(),
                },
            })
            .collect(),
        sections,
    };
    report::render(&review, out)
        .with_context(|| format!("writing the report in {}", out.display()))?;
    Ok(())
}
