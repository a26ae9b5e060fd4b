//! [`demo_review`]: a made-up two-target review in the shape the lab
//! produces, for looking at the report and for tests. Its numbers are
//! synthetic (a decay curve plus deterministic noise), not measurements.

use crate::model::{
    Chart, Marker, Review, Section, Series, SteadyState, Table, TargetInfo, ValueFormat, XValue,
};

/// Thread/queue matrix points in the order the reviews plot them.
pub const MATRIX_POINTS: [&str; 16] = [
    "2T/2Q", "2T/4Q", "2T/8Q", "2T/16Q", "4T/2Q", "4T/4Q", "4T/8Q", "4T/16Q", "8T/2Q", "8T/4Q",
    "8T/8Q", "8T/16Q", "16T/2Q", "16T/4Q", "16T/8Q", "16T/16Q",
];

/// Deterministic noise in [-1, 1) (a 64-bit LCG; no dependency needed).
struct Noise(u64);

impl Noise {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    }
}

/// One target's made-up 4K random write behaviour.
struct Shape {
    name: &'static str,
    burst_iops: f64,
    steady_iops: f64,
    converged_round: u32,
}

const SHAPES: [Shape; 2] = [
    Shape {
        name: "iodrive-duo-640-mlc:stock",
        burst_iops: 257_000.0,
        steady_iops: 42_600.0,
        converged_round: 11,
    },
    Shape {
        name: "iodrive-duo-640-mlc:hp",
        burst_iops: 259_000.0,
        steady_iops: 78_000.0,
        converged_round: 8,
    },
];

/// Minutes per preconditioning round in the demo.
const ROUND_MINUTES: f64 = 30.0;

/// A review with one profile (4K random write): four preconditioning
/// charts, four matrix charts, steady-state results and a summary table.
pub fn demo_review() -> Review {
    let mut noise = Noise(1);
    let outstanding = 256.0; // 16 threads × 16 QD
    let mut pre: [Vec<Series>; 4] = Default::default();
    for shape in &SHAPES {
        let (mut iops, mut avg, mut max, mut sd) = (vec![], vec![], vec![], vec![]);
        for minute in (1..=360).map(f64::from) {
            let decay = (-minute / 25.0).exp();
            let level = shape.steady_iops + (shape.burst_iops - shape.steady_iops) * decay;
            let value = level * (1.0 + 0.06 * noise.next());
            let avg_ms = outstanding / value * 1000.0;
            iops.push((minute, value));
            avg.push((minute, avg_ms));
            max.push((
                minute,
                avg_ms * (8.0 + 20.0 * noise.next().abs()) + 25.0 * (1.0 - decay),
            ));
            sd.push((
                minute,
                avg_ms * (1.5 + 3.0 * (1.0 - decay)) * (1.0 + 0.1 * noise.next()),
            ));
        }
        for (i, points) in [iops, avg, max, sd].into_iter().enumerate() {
            pre[i].push(Series::numeric(shape.name, points));
        }
    }
    let mut matrix: [Vec<Series>; 4] = Default::default();
    for shape in &SHAPES {
        let (mut iops, mut avg, mut max, mut sd) = (vec![], vec![], vec![], vec![]);
        for label in MATRIX_POINTS {
            let (t, q) = parse_point(label);
            let depth = f64::from(t * q);
            let value = shape.steady_iops * (depth / (depth + 6.0)) * (1.0 + 0.03 * noise.next());
            let avg_ms = depth / value * 1000.0;
            iops.push((label, value));
            avg.push((label, avg_ms));
            max.push((label, avg_ms * 12.0 + 40.0 * noise.next().abs()));
            sd.push((label, avg_ms * 2.5));
        }
        for (i, points) in [iops, avg, max, sd].into_iter().enumerate() {
            matrix[i].push(Series::categorical(shape.name, points));
        }
    }
    Review {
        title: "ioDrive Duo 640 GB MLC: stock vs high-performance format (demo data)".into(),
        subtitle: "openvsl report demo — synthetic numbers, not a measurement".into(),
        configuration:
            "vsl review --target iodrive-duo-640-mlc:stock --target iodrive-duo-640-mlc:hp \\\n  \
                        --profile 4k-random-write --seed 42 --out review/"
                .into(),
        seed: Some(42),
        targets: SHAPES
            .iter()
            .map(|s| TargetInfo {
                name: s.name.into(),
                description: format!(
                    "modelled card, format {}",
                    s.name.rsplit(':').next().unwrap_or("")
                ),
            })
            .collect(),
        sections: vec![profile_section(pre, matrix)],
    }
}

fn parse_point(label: &str) -> (u32, u32) {
    let mut parts = label
        .split('/')
        .map(|p| p[..p.len() - 1].parse::<u32>().unwrap_or(1));
    (parts.next().unwrap_or(1), parts.next().unwrap_or(1))
}

const STATISTICS: [(&str, &str, &str, bool); 4] = [
    ("throughput", "Throughput", "Throughput (IOPS)", false),
    (
        "latency-avg",
        "Average latency",
        "Average latency (ms)",
        false,
    ),
    ("latency-max", "Max latency", "Max latency (ms)", true),
    (
        "latency-sd",
        "Latency standard deviation",
        "Latency standard deviation (ms)",
        false,
    ),
];

fn profile_section(pre: [Vec<Series>; 4], matrix: [Vec<Series>; 4]) -> Section {
    let markers: Vec<Marker> = SHAPES
        .iter()
        .map(|s| Marker {
            target: s.name.into(),
            x: XValue::Number(f64::from(s.converged_round) * ROUND_MINUTES),
            label: format!("steady state ({})", s.name.rsplit(':').next().unwrap_or("")),
        })
        .collect();
    let mut charts = Vec::new();
    for ((key, name, y_label, log_y), series) in STATISTICS.iter().zip(pre) {
        let mut chart = Chart::line(
            format!("4k-random-write-precondition-{key}"),
            format!(
                "4K random write, preconditioning at 16T/16Q: {}",
                name.to_lowercase()
            ),
            "Time (minutes)",
            *y_label,
            series,
        );
        chart.log_y = *log_y;
        chart.markers = markers.clone();
        charts.push(chart);
    }
    for ((key, name, y_label, log_y), series) in STATISTICS.iter().zip(matrix) {
        let mut chart = Chart::bars(
            format!("4k-random-write-matrix-{key}"),
            format!(
                "4K random write, steady state: {} by threads / queue depth",
                name.to_lowercase()
            ),
            "Threads / queue depth",
            *y_label,
            series,
        );
        chart.log_y = *log_y;
        chart.y_format = if *key == "throughput" {
            ValueFormat::Si
        } else {
            ValueFormat::Auto
        };
        charts.push(chart);
    }
    Section {
        id: "4k-random-write".into(),
        title: "4K random write".into(),
        text:
            "Each target was purged, then preconditioned with 4K random writes at 16 threads × 16 \
               outstanding I/Os until SNIA PTS steady state.\n\nThe primary test then ran every \
               thread/queue combination in the matrix."
                .into(),
        steady_state: SHAPES
            .iter()
            .map(|s| SteadyState {
                target: s.name.into(),
                converged_round: Some(s.converged_round),
                rounds_run: s.converged_round,
                note: String::new(),
            })
            .chain(std::iter::once(SteadyState {
                target: "file:/mnt/x/testfile".into(),
                converged_round: None,
                rounds_run: 12,
                note: "stopped at the 6 h limit (example of a target that did not converge)".into(),
            }))
            .collect(),
        charts,
        tables: vec![Table {
            title: "Summary: steady state at 16T/16Q".into(),
            columns: vec![
                "Target".into(),
                "IOPS".into(),
                "Average latency".into(),
                "Max latency".into(),
            ],
            rows: SHAPES
                .iter()
                .map(|s| {
                    vec![
                        s.name.into(),
                        format!("{:.0}", s.steady_iops),
                        format!("{:.2} ms", 256.0 / s.steady_iops * 1000.0),
                        "157 ms".into(),
                    ]
                })
                .collect(),
        }],
    }
}
