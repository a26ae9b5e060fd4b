//! Renders reviews into temporary directories and checks what was written:
//! the page references every chart, each chart is a real drawing of every
//! series, results.json round-trips, each CSV has one row per x value, and
//! bad data or bad ids give errors, not panics.

use std::path::{Path, PathBuf};

use report::{
    load_results, render, target_colour_hex, Chart, Marker, ReportError, Review, Section, Series,
    SteadyState, Table, TargetInfo, XValue,
};

/// A fresh directory under the system temp dir, removed when dropped unless
/// `REPORT_TEST_KEEP` is set (to look at what a test rendered).
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        let path =
            std::env::temp_dir().join(format!("openvsl-report-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        TempDir(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if std::env::var_os("REPORT_TEST_KEEP").is_none() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

const A: &str = "card:stock";
const B: &str = "card:hp";

fn two_target_review() -> Review {
    let time = |scale: f64| (1..=20).map(move |m| (f64::from(m), scale * 1000.0 / f64::from(m)));
    let matrix = |scale: f64| {
        ["2T/2Q", "2T/4Q", "16T/16Q"]
            .into_iter()
            .enumerate()
            .map(move |(i, l)| (l, scale * (i + 1) as f64 * 10_000.0))
    };
    let mut max_latency = Chart::line(
        "rw-precondition-latency-max",
        "Max latency <during> preconditioning",
        "Time (minutes)",
        "Max latency (ms)",
        vec![Series::numeric(A, time(3.0)), Series::numeric(B, time(2.0))],
    );
    max_latency.log_y = true;
    max_latency.markers = vec![Marker {
        target: A.into(),
        x: XValue::Number(12.0),
        label: "steady state (stock)".into(),
    }];
    Review {
        title: "Two cards & <a> format".into(),
        subtitle: "test".into(),
        configuration: "vsl review --target card:stock --target card:hp --seed 7".into(),
        seed: Some(7),
        targets: vec![
            TargetInfo {
                name: A.into(),
                description: "stock format".into(),
            },
            TargetInfo {
                name: B.into(),
                description: "high-performance format".into(),
            },
        ],
        sections: vec![
            Section {
                id: "rw".into(),
                title: "4K random write".into(),
                text: "First paragraph.\n\nSecond <paragraph>.".into(),
                steady_state: vec![
                    SteadyState {
                        target: A.into(),
                        converged_round: Some(12),
                        rounds_run: 12,
                        note: String::new(),
                    },
                    SteadyState {
                        target: B.into(),
                        converged_round: None,
                        rounds_run: 20,
                        note: "hit the time limit".into(),
                    },
                ],
                charts: vec![
                    Chart::line(
                        "rw-precondition-throughput",
                        "Throughput during preconditioning",
                        "Time (minutes)",
                        "Throughput (IOPS)",
                        vec![
                            Series::numeric(A, time(250.0)),
                            Series::numeric(B, time(300.0)),
                        ],
                    ),
                    max_latency,
                    Chart::bars(
                        "rw-matrix-throughput",
                        "Throughput by threads / queue depth",
                        "Threads / queue depth",
                        "Throughput (IOPS)",
                        vec![
                            Series::categorical(A, matrix(1.0)),
                            Series::categorical(B, matrix(1.5)),
                        ],
                    ),
                ],
                tables: vec![Table {
                    title: "Summary".into(),
                    columns: vec!["Target".into(), "IOPS".into()],
                    rows: vec![
                        vec![A.into(), "42,644".into()],
                        vec![B.into(), "80,000".into()],
                    ],
                }],
            },
            Section {
                id: "notes".into(),
                title: "Notes".into(),
                text: "No charts here.".into(),
                ..Section::default()
            },
        ],
    }
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Data polylines of one colour: 2 px wide with at least two points (legend
/// swatches are 3 px, steady-state markers 1 px, axes black).
fn data_polylines(svg: &str, colour_hex: &str) -> usize {
    let stroke = format!("stroke=\"{}\"", colour_hex.to_uppercase());
    svg.split("<polyline")
        .skip(1)
        .map(|tail| &tail[..tail.find("/>").unwrap_or(tail.len())])
        .filter(|el| el.contains(&stroke) && el.contains("stroke-width=\"2\""))
        .filter(|el| {
            let points = el
                .split("points=\"")
                .nth(1)
                .and_then(|p| p.split('"').next())
                .unwrap_or("");
            points.split_whitespace().count() >= 2
        })
        .count()
}

fn filled_rects(svg: &str, colour_hex: &str) -> usize {
    let fill = format!("fill=\"{}\"", colour_hex.to_uppercase());
    svg.split("<rect")
        .skip(1)
        .filter(|el| el[..el.find("/>").unwrap_or(el.len())].contains(&fill))
        .count()
}

#[test]
fn page_references_every_chart_and_each_chart_draws_every_series() {
    let dir = TempDir::new("two-targets");
    let review = two_target_review();
    let rendered = render(&review, &dir.0).unwrap();
    let html = read(&rendered.index_html);
    let charts: Vec<&Chart> = review.sections.iter().flat_map(|s| &s.charts).collect();
    assert_eq!(rendered.charts.len(), charts.len());
    for chart in &charts {
        assert!(
            html.contains(&format!("<img src=\"charts/{}.svg\"", chart.id)),
            "{} not in page",
            chart.id
        );
        assert!(html.contains(&format!("href=\"csv/{}.csv\"", chart.id)));
        let svg = read(&dir.0.join("charts").join(format!("{}.svg", chart.id)));
        assert!(svg.len() > 1024, "{} is only {} bytes", chart.id, svg.len());
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert!(
            svg.contains(&xml_escaped(&chart.title)),
            "{} lacks its title",
            chart.id
        );
        assert!(svg.contains(&chart.y_label) && svg.contains(&chart.x_label));
        for (i, target) in [A, B].into_iter().enumerate() {
            assert!(
                svg.contains(target),
                "{} has no legend entry for {target}",
                chart.id
            );
            let colour = target_colour_hex(i);
            match chart.kind {
                report::ChartKind::Line => {
                    assert_eq!(data_polylines(&svg, &colour), 1, "{} {target}", chart.id)
                }
                // One bar per point, plus the legend swatch.
                report::ChartKind::Bars => {
                    assert_eq!(filled_rects(&svg, &colour), 3 + 1, "{} {target}", chart.id)
                }
            }
        }
    }
    for file in &rendered.files {
        assert!(
            file.starts_with(&dir.0) && file.is_file(),
            "{}",
            file.display()
        );
    }
    assert_eq!(rendered.files.len(), 2 * charts.len() + 2);
}

fn xml_escaped(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[test]
fn page_reads_like_a_review() {
    let dir = TempDir::new("page");
    let rendered = render(&two_target_review(), &dir.0).unwrap();
    let html = read(&rendered.index_html);
    assert!(
        html.contains("<h1>Two cards &amp; &lt;a&gt; format</h1>"),
        "title not escaped"
    );
    assert!(html.contains("<p>Second &lt;paragraph&gt;.</p>"));
    assert!(html.contains("reached in round 12"));
    assert!(html.contains("did not converge"));
    assert!(html.contains("<td class=\"num\">42,644</td>"));
    assert!(html.contains("vsl review --target card:stock --target card:hp --seed 7"));
    assert!(html.contains("Seed: <code>7</code>"));
    assert!(html.contains("<a href=\"#rw\">") && html.contains("<section id=\"notes\">"));
    assert!(html.contains(&format!("background:{}", target_colour_hex(1))));
    assert!(
        !html.contains("http://") && !html.contains("https://"),
        "the page must be self-contained"
    );
}

#[test]
fn results_json_round_trips_and_holds_every_series() {
    let dir = TempDir::new("json");
    let review = two_target_review();
    let rendered = render(&review, &dir.0).unwrap();
    let back = load_results(&rendered.results_json).unwrap();
    assert_eq!(back, review);
    let value: serde_json::Value = serde_json::from_str(&read(&rendered.results_json)).unwrap();
    let charts = value["sections"][0]["charts"].as_array().unwrap();
    assert_eq!(charts.len(), 3);
    for chart in charts {
        let series = chart["series"].as_array().unwrap();
        assert_eq!(series.len(), 2);
        assert_eq!(series[0]["target"], A);
        assert!(!series[1]["points"].as_array().unwrap().is_empty());
    }
    assert_eq!(charts[2]["series"][0]["points"][2]["x"], "16T/16Q");
    assert_eq!(charts[0]["series"][0]["points"][0]["x"], 1.0);
}

#[test]
fn csv_has_one_row_per_x_value() {
    let dir = TempDir::new("csv");
    let review = two_target_review();
    let rendered = render(&review, &dir.0).unwrap();
    let throughput = read(&rendered.charts[0].csv);
    let lines: Vec<&str> = throughput.lines().collect();
    assert_eq!(lines.len(), 1 + 20);
    assert_eq!(lines[0], format!("Time (minutes),{A},{B}"));
    assert_eq!(lines[1], "1,250000,300000");
    assert_eq!(lines[20], "20,12500,15000");
    let matrix = read(&rendered.charts[2].csv);
    assert_eq!(
        matrix,
        format!("Threads / queue depth,{A},{B}\n2T/2Q,10000,15000\n2T/4Q,20000,30000\n16T/16Q,30000,45000\n")
    );
}

/// Empty series, one point, NaN and infinities, non-positive values on a log
/// axis, a chart without series, bars over numbers: all render.
#[test]
fn awkward_data_renders_without_panicking() {
    let dir = TempDir::new("awkward");
    let mut review = two_target_review();
    let nasty = vec![
        Series::numeric(
            A,
            [
                (1.0, f64::NAN),
                (2.0, f64::INFINITY),
                (f64::NAN, 3.0),
                (3.0, -1.0),
                (4.0, 0.0),
            ],
        ),
        Series::numeric(B, [(5.0, 5.0)]),
        Series::numeric("unknown-target", []),
    ];
    let mut small_log = Chart::line(
        "small-log",
        "log",
        "x",
        "y",
        vec![Series::numeric(A, [(1.0, 0.03), (2.0, 250.0)])],
    );
    small_log.log_y = true;
    let mut log_chart = Chart::line("log", "log", "x", "y", nasty.clone());
    log_chart.log_y = true;
    let mut log_bars = Chart::bars("log-bars", "log bars", "x", "y", nasty.clone());
    log_bars.log_y = true;
    let mut marker_only = Chart::line("marker-only", "m", "x", "y", vec![]);
    marker_only.markers = vec![Marker {
        target: A.into(),
        x: XValue::Label("2T/2Q".into()),
        label: "m".into(),
    }];
    review.sections.push(Section {
        id: "awkward".into(),
        title: "Awkward".into(),
        charts: vec![
            Chart::line("nasty", "nasty", "x", "y", nasty.clone()),
            log_chart,
            small_log,
            Chart::bars("numeric-bars", "bars over numbers", "x", "y", nasty),
            log_bars,
            Chart::line("empty", "no series", "x", "y", vec![]),
            Chart::line(
                "all-nan",
                "nan",
                "x",
                "y",
                vec![Series::numeric(A, [(f64::NAN, f64::NAN)])],
            ),
            Chart::bars(
                "one-bar",
                "one",
                "x",
                "y",
                vec![Series::categorical(A, [("only", 1.0)])],
            ),
            marker_only,
        ],
        ..Section::default()
    });
    let rendered = render(&review, &dir.0).unwrap();
    for chart in &rendered.charts {
        let svg = read(&chart.svg);
        assert!(svg.trim_end().ends_with("</svg>"), "{}", chart.id);
        assert!(
            !svg.contains("NaN") && !svg.contains("inf"),
            "{} has non-finite coordinates",
            chart.id
        );
    }
    let empty = read(&dir.0.join("charts/empty.svg"));
    assert!(empty.contains("no data"));
    // The single finite point of B is drawn as a marker circle.
    let nasty_svg = read(&dir.0.join("charts/nasty.svg"));
    assert!(nasty_svg.contains("<circle"));
    // JSON keeps the non-finite values as null and reads them back as NaN.
    let back = load_results(&rendered.results_json).unwrap();
    let series = &back.sections[2].charts[0].series[0];
    assert!(series.points[0].y.is_nan() && series.points[1].y.is_nan());
    assert!(matches!(series.points[2].x, XValue::Number(x) if x.is_nan()));
    assert_eq!(series.points[3].y, -1.0);
    // A log axis from 0.1: small decades keep their decimals.
    let log_svg = read(&dir.0.join("charts/small-log.svg"));
    assert!(
        ["\n0.01\n", "\n0.1\n", "\n100\n", "\n1000\n"]
            .iter()
            .all(|t| log_svg.contains(t)),
        "log ticks"
    );
    let csv = read(&dir.0.join("csv/nasty.csv"));
    assert_eq!(
        csv,
        format!("x,{A},{B},unknown-target\n1,,,\n2,,,\n3,-1,,\n4,0,,\n5,,5,\n,3,,\n")
    );
}

#[test]
fn bad_ids_are_refused_before_anything_is_written() {
    let dir = TempDir::new("bad-ids");
    let mut review = two_target_review();
    review.sections[0].charts[1].id = review.sections[0].charts[0].id.to_uppercase();
    let err = render(&review, &dir.0).unwrap_err();
    assert!(
        matches!(err, ReportError::DuplicateId { what: "chart", .. }),
        "{err}"
    );
    assert!(!dir.0.exists());

    let mut review = two_target_review();
    review.sections[0].charts[0].id = "../escape".into();
    let err = render(&review, &dir.0).unwrap_err();
    assert!(
        matches!(err, ReportError::InvalidId { what: "chart", .. }),
        "{err}"
    );
    assert!(err.to_string().contains("../escape"));

    let mut review = two_target_review();
    review.sections[1].id = "configuration".into();
    assert!(matches!(
        render(&review, &dir.0),
        Err(ReportError::InvalidId {
            what: "section",
            ..
        })
    ));

    let mut review = two_target_review();
    review.sections[1].id = "rw".into();
    assert!(matches!(
        render(&review, &dir.0),
        Err(ReportError::DuplicateId {
            what: "section",
            ..
        })
    ));
    assert!(!dir.0.exists());
}

#[test]
fn unwritable_directory_is_an_error() {
    let dir = TempDir::new("unwritable");
    std::fs::create_dir_all(&dir.0).unwrap();
    let file = dir.0.join("a-file");
    std::fs::write(&file, "x").unwrap();
    let err = render(&two_target_review(), &file.join("out")).unwrap_err();
    assert!(matches!(err, ReportError::Io { .. }), "{err}");
    assert!(err.to_string().contains("a-file"));
    let err = load_results(&dir.0.join("missing.json")).unwrap_err();
    assert!(matches!(err, ReportError::Read { .. }));
    std::fs::write(&file, "{not json").unwrap();
    assert!(matches!(load_results(&file), Err(ReportError::Json(_))));
}

#[test]
fn demo_review_renders_every_chart() {
    let dir = TempDir::new("demo");
    let review = report::demo_review();
    let rendered = render(&review, &dir.0).unwrap();
    let html = read(&rendered.index_html);
    assert_eq!(rendered.charts.len(), 8);
    for chart in &rendered.charts {
        assert!(html.contains(&format!("charts/{}.svg", chart.id)));
        assert!(std::fs::metadata(&chart.svg).unwrap().len() > 4096);
        // 16 matrix points or 360 minutes, plus the header.
        let rows = read(&chart.csv).lines().count();
        assert!(rows == 17 || rows == 361, "{}: {rows} rows", chart.id);
    }
}

/// Six hours of one-second intervals: the chart stays small, the CSV and
/// JSON keep every point.
#[test]
fn long_preconditioning_series_stay_light() {
    let dir = TempDir::new("long");
    let mut review = two_target_review();
    let seconds = 6 * 3600;
    let series = |scale: f64| {
        Series::numeric(
            A,
            (0..seconds).map(move |s| (f64::from(s), scale + f64::from(s % 7))),
        )
    };
    review.sections[0].charts[0].series = vec![series(40_000.0)];
    let rendered = render(&review, &dir.0).unwrap();
    let svg_bytes = std::fs::metadata(&rendered.charts[0].svg).unwrap().len();
    assert!(svg_bytes < 120_000, "{svg_bytes} bytes");
    assert_eq!(
        read(&rendered.charts[0].csv).lines().count(),
        1 + seconds as usize
    );
    let back = load_results(&rendered.results_json).unwrap();
    assert_eq!(
        back.sections[0].charts[0].series[0].points.len(),
        seconds as usize
    );
}
