//! `GET /metrics`: the status document in the OpenMetrics text format that
//! Prometheus scrapes.
//!
//! Every metric is one row of [`DEVICE_METRICS`] or [`RUN_METRICS`] (name,
//! help, kind and how to read it from the status document), so the help,
//! the exposition and the check of the bundled Grafana dashboard
//! (`dist/grafana/openvsl.json`) all read one table. Device metrics carry
//! the labels `card` (store path), `device` (ioMemory device) and `preset`;
//! running simulations' metrics carry `pid`, `kind` and `label`.
//! Encoding is `prometheus-client`'s.

use blockdev::manage::{DeviceState, DeviceStatus, LatencyHistogram, StatusDoc};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use rundir::live::LiveRun;

/// The exposition's content type.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// A histogram read from the document: sum, count and per-bucket counts
/// with their upper bounds, in seconds (the last bound is +Inf).
pub struct Hist {
    sum: f64,
    count: u64,
    buckets: Vec<(f64, u64)>,
}

impl Hist {
    fn of(h: &LatencyHistogram, read: bool) -> Hist {
        let (counts, sum_us) = if read {
            (&h.read_counts, h.read_sum_us)
        } else {
            (&h.write_counts, h.write_sum_us)
        };
        let bound = |i: usize| h.bounds_us.get(i).map_or(f64::MAX, |b| b / 1e6);
        Hist {
            sum: sum_us / 1e6,
            count: counts.iter().sum(),
            buckets: counts
                .iter()
                .enumerate()
                .map(|(i, c)| (bound(i), *c))
                .collect(),
        }
    }
}

/// How a metric is read from one item (a device or a run); None: not
/// exported for this item (a detached device has no live figures).
pub enum Read<T> {
    Counter(fn(&T) -> Option<f64>),
    Gauge(fn(&T) -> Option<f64>),
    Histogram(fn(&T) -> Option<Hist>),
    /// A gauge per state under the given label: 1 for the current one.
    States(
        &'static str,
        &'static [&'static str],
        fn(&T) -> Option<String>,
    ),
}

/// One exported metric.
pub struct Metric<T: 'static> {
    /// Without the `_total` a counter is exposed with.
    pub name: &'static str,
    pub help: &'static str,
    pub read: Read<T>,
}

impl<T> Metric<T> {
    /// The series names Prometheus stores for this metric.
    pub fn series(&self) -> Vec<String> {
        match self.read {
            Read::Counter(_) => vec![format!("{}_total", self.name)],
            Read::Histogram(_) => ["bucket", "sum", "count"]
                .iter()
                .map(|s| format!("{}_{s}", self.name))
                .collect(),
            Read::Gauge(_) | Read::States(..) => vec![self.name.to_string()],
        }
    }
}

fn attached(d: &DeviceStatus) -> bool {
    d.state == DeviceState::Attached
}

const HEALTH_STATES: &[&str] = &[
    "healthy",
    "reserve_warning",
    "reduced_write",
    "read_only",
    "failed",
];
const THROTTLES: &[&str] = &["none", "reduced_write", "thermal", "power"];
const DEVICE_STATES: &[&str] = &["attached", "detached", "busy", "failed"];

/// A unit enum's serde (snake_case) name, as in the status document.
fn snake<T: serde::Serialize>(x: &T) -> Option<String> {
    serde_json::to_value(x).ok()?.as_str().map(str::to_string)
}

fn live<T>(d: &DeviceStatus, f: impl Fn(&blockdev::status::Interval) -> T) -> Option<T> {
    d.live.as_ref().map(f)
}

macro_rules! count {
    ($name:literal, $help:literal, $f:expr) => {
        Metric {
            name: $name,
            help: $help,
            read: Read::Counter(|d: &DeviceStatus| Some($f(d) as f64)),
        }
    };
}

macro_rules! gauge {
    ($t:ty, $name:literal, $help:literal, $f:expr) => {
        Metric {
            name: $name,
            help: $help,
            read: Read::Gauge(|x: &$t| $f(x)),
        }
    };
}

/// Every device metric.
pub static DEVICE_METRICS: &[Metric<DeviceStatus>] = &[
    count!(
        "openvsl_reads",
        "Host read I/Os over the device's life",
        |d: &DeviceStatus| d.lifetime.reads
    ),
    count!(
        "openvsl_writes",
        "Host write I/Os over the device's life",
        |d: &DeviceStatus| d.lifetime.writes
    ),
    count!(
        "openvsl_trims",
        "Host trims over the device's life",
        |d: &DeviceStatus| d.lifetime.trims
    ),
    count!(
        "openvsl_flushes",
        "Host flushes over the device's life",
        |d: &DeviceStatus| d.lifetime.flushes
    ),
    count!(
        "openvsl_read_bytes",
        "Host bytes read over the device's life",
        |d: &DeviceStatus| d.lifetime.host_bytes_read
    ),
    count!(
        "openvsl_written_bytes",
        "Host bytes written over the device's life",
        |d: &DeviceStatus| d.lifetime.host_bytes_written
    ),
    count!(
        "openvsl_nand_programmed_bytes",
        "NAND bytes programmed over the device's life",
        |d: &DeviceStatus| d.lifetime.nand_bytes_programmed
    ),
    count!(
        "openvsl_nand_read_bytes",
        "NAND bytes read over the device's life",
        |d: &DeviceStatus| d.lifetime.nand_bytes_read
    ),
    count!(
        "openvsl_gc_runs",
        "Garbage collections over the device's life",
        |d: &DeviceStatus| d.lifetime.gc_runs
    ),
    count!(
        "openvsl_gc_moved_sectors",
        "Sectors garbage collection copied over the device's life",
        |d: &DeviceStatus| d.lifetime.gc_sectors_moved
    ),
    count!(
        "openvsl_erases",
        "Erase-unit erases over the device's life",
        |d: &DeviceStatus| d.lifetime.erases
    ),
    count!(
        "openvsl_attached_seconds",
        "Seconds attached over the device's life",
        |d: &DeviceStatus| d.lifetime.attached_s
    ),
    Metric {
        name: "openvsl_device_state",
        help: "1 for the device's state: attached, detached, busy or failed",
        read: Read::States("state", DEVICE_STATES, |d: &DeviceStatus| {
            Some(d.state.name().to_string())
        }),
    },
    gauge!(
        DeviceStatus,
        "openvsl_capacity_bytes",
        "Formatted capacity",
        |d: &DeviceStatus| Some(d.formatted_capacity_bytes as f64)
    ),
    gauge!(
        DeviceStatus,
        "openvsl_raw_bytes",
        "Raw NAND of the device",
        |d: &DeviceStatus| Some(d.raw_bytes as f64)
    ),
    gauge!(
        DeviceStatus,
        "openvsl_overprovision_ratio",
        "1 - formatted / raw",
        |d: &DeviceStatus| Some(d.overprovision_pct / 100.0)
    ),
    gauge!(
        DeviceStatus,
        "openvsl_write_amplification",
        "Lifetime NAND bytes programmed / host bytes written",
        |d: &DeviceStatus| Some(d.write_amplification)
    ),
    gauge!(
        DeviceStatus,
        "openvsl_free_space_ratio",
        "Free erase units / all erase units (attached devices)",
        |d: &DeviceStatus| d.free_space_pct.map(|p| p / 100.0)
    ),
    gauge!(
        DeviceStatus,
        "openvsl_reserve_ratio",
        "Bad-block reserve left",
        |d: &DeviceStatus| Some(d.health.reserve_pct / 100.0)
    ),
    gauge!(
        DeviceStatus,
        "openvsl_retired_blocks",
        "Erase units retired as worn out",
        |d: &DeviceStatus| Some(d.health.retired_blocks as f64)
    ),
    Metric {
        name: "openvsl_health_state",
        help: "1 for the device's health state",
        read: Read::States("state", HEALTH_STATES, |d: &DeviceStatus| {
            snake(&d.health.state)
        }),
    },
    Metric {
        name: "openvsl_throttle",
        help: "1 for why writes are slowed (none when they are not)",
        read: Read::States("reason", THROTTLES, |d: &DeviceStatus| {
            snake(&d.health.throttle)
        }),
    },
    gauge!(
        DeviceStatus,
        "openvsl_powered_off",
        "1 when the device shut down at 85 °C",
        |d: &DeviceStatus| Some(d.health.powered_off as u8 as f64)
    ),
    gauge!(
        DeviceStatus,
        "openvsl_temperature_celsius",
        "Internal temperature now",
        |d: &DeviceStatus| Some(d.health.temperature_c)
    ),
    gauge!(
        DeviceStatus,
        "openvsl_temperature_max_celsius",
        "Hottest internal temperature ever",
        |d: &DeviceStatus| Some(d.health.temperature_max_c)
    ),
    gauge!(
        DeviceStatus,
        "openvsl_power_watts",
        "Power now",
        |d: &DeviceStatus| Some(d.health.power_w)
    ),
    gauge!(
        DeviceStatus,
        "openvsl_power_max_watts",
        "Highest 100 ms average power",
        |d: &DeviceStatus| Some(d.health.power_max_w)
    ),
    gauge!(
        DeviceStatus,
        "openvsl_endurance_used_ratio",
        "Physical bytes written / rated endurance",
        |d: &DeviceStatus| Some(1.0 - d.health.endurance_remaining_pct / 100.0)
    ),
    gauge!(
        DeviceStatus,
        "openvsl_rated_endurance_bytes",
        "Rated physical bytes written",
        |d: &DeviceStatus| Some(d.health.rated_endurance_bytes as f64)
    ),
    gauge!(
        DeviceStatus,
        "openvsl_erase_count_max",
        "Most erases of a unit in service",
        |d: &DeviceStatus| Some(d.health.erase_count_max as f64)
    ),
    gauge!(
        DeviceStatus,
        "openvsl_erase_count_avg",
        "Average erases of the units in service",
        |d: &DeviceStatus| Some(d.health.erase_count_avg)
    ),
    gauge!(
        DeviceStatus,
        "openvsl_host_ram_bytes",
        "Host RAM the map takes now",
        |d: &DeviceStatus| Some(d.host_ram_bytes as f64)
    ),
    gauge!(
        DeviceStatus,
        "openvsl_read_iops",
        "Reads per second over the last second (attached devices)",
        |d: &DeviceStatus| live(d, |i| i.read_iops)
    ),
    gauge!(
        DeviceStatus,
        "openvsl_write_iops",
        "Writes per second over the last second (attached devices)",
        |d: &DeviceStatus| live(d, |i| i.write_iops)
    ),
    gauge!(
        DeviceStatus,
        "openvsl_read_throughput_bytes_per_second",
        "Bytes read per second over the last second",
        |d: &DeviceStatus| live(d, |i| i.read_mb_s * 1e6)
    ),
    gauge!(
        DeviceStatus,
        "openvsl_write_throughput_bytes_per_second",
        "Bytes written per second over the last second",
        |d: &DeviceStatus| live(d, |i| i.write_mb_s * 1e6)
    ),
    Metric {
        name: "openvsl_read_latency_seconds",
        help: "Wall-clock latency of the reads served since attach",
        read: Read::Histogram(|d: &DeviceStatus| {
            d.latency_histogram
                .as_ref()
                .filter(|_| attached(d))
                .map(|h| Hist::of(h, true))
        }),
    },
    Metric {
        name: "openvsl_write_latency_seconds",
        help: "Wall-clock latency of the writes served since attach",
        read: Read::Histogram(|d: &DeviceStatus| {
            d.latency_histogram
                .as_ref()
                .filter(|_| attached(d))
                .map(|h| Hist::of(h, false))
        }),
    },
];

fn last(r: &LiveRun) -> Option<&rundir::live::LivePoint> {
    r.points.back()
}

/// Every running simulation's metric (its last interval).
pub static RUN_METRICS: &[Metric<LiveRun>] = &[
    Metric {
        name: "openvsl_run_intervals",
        help: "Intervals a running simulation has published",
        read: Read::Counter(|r: &LiveRun| Some(r.points_total as f64)),
    },
    gauge!(
        LiveRun,
        "openvsl_run_virtual_seconds",
        "End of the last interval, in the run's (virtual) time",
        |r: &LiveRun| last(r).map(|p| p.t_s)
    ),
    gauge!(
        LiveRun,
        "openvsl_run_iops",
        "I/Os per second of the last interval",
        |r: &LiveRun| last(r).map(|p| p.iops)
    ),
    gauge!(
        LiveRun,
        "openvsl_run_throughput_bytes_per_second",
        "Bytes per second of the last interval",
        |r: &LiveRun| last(r).map(|p| p.mb_s * 1e6)
    ),
    gauge!(
        LiveRun,
        "openvsl_run_latency_avg_seconds",
        "Average latency of the last interval",
        |r: &LiveRun| last(r).map(|p| p.latency_avg_us / 1e6)
    ),
    gauge!(
        LiveRun,
        "openvsl_run_latency_p99_seconds",
        "99th percentile latency of the last interval",
        |r: &LiveRun| last(r).map(|p| p.latency_p99_us / 1e6)
    ),
    gauge!(
        LiveRun,
        "openvsl_run_latency_max_seconds",
        "Maximum latency of the last interval",
        |r: &LiveRun| last(r).map(|p| p.latency_max_us / 1e6)
    ),
    gauge!(
        LiveRun,
        "openvsl_run_temperature_celsius",
        "Hottest member of the modelled card",
        |r: &LiveRun| last(r).and_then(|p| p.temperature_c)
    ),
    gauge!(
        LiveRun,
        "openvsl_run_power_watts",
        "Power of all members of the modelled card",
        |r: &LiveRun| last(r).and_then(|p| p.power_w)
    ),
    gauge!(
        LiveRun,
        "openvsl_run_endurance_used_ratio",
        "Rated endurance used by the most-used member",
        |r: &LiveRun| last(r).and_then(|p| p.endurance_used_pct.map(|e| e / 100.0))
    ),
];

type Labels = Vec<(&'static str, String)>;

/// A label value as the text format wants it: prometheus-client 0.24
/// writes values as given, so a store path with a quote or a newline
/// would break the exposition (the test `label_values_are_escaped`).
fn lv(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn device_labels(d: &DeviceStatus) -> Labels {
    vec![
        ("card", lv(&d.store)),
        ("device", d.member.to_string()),
        ("preset", lv(&d.model)),
    ]
}

fn run_labels(r: &LiveRun) -> Labels {
    vec![
        ("pid", r.pid.to_string()),
        ("kind", lv(&r.kind)),
        ("label", lv(&r.label)),
    ]
}

fn kind<T>(m: &Metric<T>) -> MetricType {
    match m.read {
        Read::Counter(_) => MetricType::Counter,
        Read::Histogram(_) => MetricType::Histogram,
        Read::Gauge(_) | Read::States(..) => MetricType::Gauge,
    }
}

fn encode_one<T>(
    m: &Metric<T>,
    items: &[T],
    labels: fn(&T) -> Labels,
    enc: &mut DescriptorEncoder,
) -> std::fmt::Result {
    let mut desc = enc.encode_descriptor(m.name, m.help, None, kind(m))?;
    for it in items {
        let l = labels(it);
        match &m.read {
            Read::Counter(f) => {
                if let Some(v) = f(it) {
                    desc.encode_family(&l)?
                        .encode_counter::<Labels, f64, f64>(&v, None)?;
                }
            }
            Read::Gauge(f) => {
                if let Some(v) = f(it).filter(|v| v.is_finite()) {
                    desc.encode_family(&l)?.encode_gauge(&v)?;
                }
            }
            Read::Histogram(f) => {
                if let Some(h) = f(it) {
                    desc.encode_family(&l)?
                        .encode_histogram::<Labels>(h.sum, h.count, &h.buckets, None)?;
                }
            }
            Read::States(key, all, f) => {
                let now = f(it);
                for s in *all {
                    let mut ls = l.clone();
                    ls.push((key, s.to_string()));
                    let v = (now.as_deref() == Some(s)) as i64;
                    desc.encode_family(&ls)?.encode_gauge(&v)?;
                }
            }
        }
    }
    Ok(())
}

#[derive(Debug)]
struct Snapshot(StatusDoc);

impl Collector for Snapshot {
    fn encode(&self, mut enc: DescriptorEncoder) -> std::fmt::Result {
        for m in DEVICE_METRICS {
            encode_one(m, &self.0.devices, device_labels, &mut enc)?;
        }
        for m in RUN_METRICS {
            encode_one(m, &self.0.runs, run_labels, &mut enc)?;
        }
        Ok(())
    }
}

/// The exposition of one status document.
pub fn render(doc: &StatusDoc) -> String {
    let mut reg = Registry::default();
    reg.register_collector(Box::new(Snapshot(doc.clone())));
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = prometheus_client::encoding::text::encode(&mut out, &reg);
    out
}

/// Every series name the exposition can hold (for the Grafana check).
pub fn all_series() -> Vec<String> {
    let mut out: Vec<String> = DEVICE_METRICS.iter().flat_map(|m| m.series()).collect();
    out.extend(RUN_METRICS.iter().flat_map(|m| m.series()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use blockdev::cli::card_config;
    use blockdev::manage::{device_status, STATUS_SCHEMA};
    use blockdev::status::Interval;
    use blockdev::store::{CardSpec, Store, StoreHeader};
    use rundir::live::LivePoint;

    /// A tiny store's device, detached as read from disk, and the same
    /// device dressed as attached with a second of I/O.
    fn devices() -> (DeviceStatus, DeviceStatus) {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("vsl-metrics-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let spec = CardSpec::tiny();
        let cfg = card_config(&spec).unwrap().ftl_config().unwrap();
        let slots = cfg.geometry.lebs() as u64 * cfg.slots_per_leb() as u64;
        drop(Store::open(&dir, &StoreHeader::new(spec, vec![0], &cfg, slots)).unwrap());
        let detached = device_status(&dir).unwrap().remove(0);
        let _ = std::fs::remove_dir_all(&dir);
        let mut attached = detached.clone();
        attached.state = DeviceState::Attached;
        attached.live = Some(Interval {
            seconds: 1.0,
            read_iops: 100.0,
            write_iops: 50.0,
            read_mb_s: 0.4,
            write_mb_s: 0.2,
            ..Interval::default()
        });
        attached.free_space_pct = Some(12.5);
        let mut h = LatencyHistogram {
            bounds_us: blockdev::status::LATENCY_BOUNDS_US.to_vec(),
            read_counts: vec![0; 17],
            write_counts: vec![0; 17],
            read_sum_us: 7000.0,
            write_sum_us: 900.0,
        };
        h.read_counts[3] = 60; // ≤ 100 µs
        h.read_counts[16] = 1; // > 1 s
        h.write_counts[5] = 9; // ≤ 500 µs
        attached.latency_histogram = Some(h);
        (detached, attached)
    }

    fn doc(devices: Vec<DeviceStatus>) -> StatusDoc {
        let run = LiveRun {
            pid: 42,
            kind: "run".into(),
            label: "iodrive-duo-640-mlc stock 4k-randwrite".into(),
            points_total: 3,
            points: [LivePoint {
                t_s: 30.0,
                iops: 1000.0,
                mb_s: 4.0,
                latency_avg_us: 250.0,
                latency_p99_us: 900.0,
                latency_max_us: 4000.0,
                temperature_c: Some(50.0),
                power_w: Some(20.0),
                endurance_used_pct: Some(1.5),
            }]
            .into(),
            ..LiveRun::default()
        };
        StatusDoc {
            schema: STATUS_SCHEMA.into(),
            devices,
            runs: vec![run],
        }
    }

    /// The sample lines of a series: (labels, value).
    fn samples<'a>(text: &'a str, series: &str) -> Vec<(&'a str, f64)> {
        text.lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| {
                let (name_labels, value) = l.rsplit_once(' ')?;
                let (name, labels) = match name_labels.split_once('{') {
                    Some((n, rest)) => (n, rest.trim_end_matches('}')),
                    None => (name_labels, ""),
                };
                (name == series).then(|| (labels, value.parse().unwrap()))
            })
            .collect()
    }

    #[test]
    fn every_metric_of_an_attached_device_and_a_run_is_exported() {
        let (_, attached) = devices();
        let text = render(&doc(vec![attached.clone()]));
        assert!(text.trim_end().ends_with("# EOF"), "{text}");
        for s in all_series() {
            assert!(!samples(&text, &s).is_empty(), "{s} missing:\n{text}");
        }
        let labels = format!(
            "card=\"{}\",device=\"0\",preset=\"{}\"",
            attached.store, attached.model
        );
        let reads = samples(&text, "openvsl_read_iops");
        assert_eq!(reads, vec![(labels.as_str(), 100.0)]);
        assert_eq!(samples(&text, "openvsl_free_space_ratio")[0].1, 0.125);
        // Histogram buckets are cumulative, in seconds, and end at +Inf = count.
        let b = samples(&text, "openvsl_read_latency_seconds_bucket");
        assert_eq!(b.len(), 17, "{b:?}");
        let at = |le: &str| {
            let hit = b.iter().find(|(l, _)| l.contains(&format!("le=\"{le}\"")));
            hit.unwrap_or_else(|| panic!("no bucket le={le}: {b:?}")).1
        };
        assert_eq!(at("0.00005"), 0.0);
        assert_eq!(at("0.0001"), 60.0);
        assert_eq!(at("1.0"), 60.0);
        assert_eq!(at("+Inf"), 61.0);
        assert_eq!(
            samples(&text, "openvsl_read_latency_seconds_count")[0].1,
            61.0
        );
        assert!((samples(&text, "openvsl_read_latency_seconds_sum")[0].1 - 0.007).abs() < 1e-12);
        // One state set to 1.
        let st = samples(&text, "openvsl_device_state");
        assert_eq!(st.len(), DEVICE_STATES.len());
        assert_eq!(st.iter().filter(|(_, v)| *v == 1.0).count(), 1);
        assert!(st
            .iter()
            .any(|(l, v)| l.contains("state=\"attached\"") && *v == 1.0));
        let run = samples(&text, "openvsl_run_iops");
        assert_eq!(run.len(), 1);
        assert!(run[0].0.contains("pid=\"42\"") && run[0].1 == 1000.0);
    }

    #[test]
    fn a_detached_device_has_no_live_figures() {
        let (detached, _) = devices();
        let text = render(&doc(vec![detached]));
        for s in [
            "openvsl_read_iops",
            "openvsl_free_space_ratio",
            "openvsl_read_latency_seconds_count",
        ] {
            assert!(samples(&text, s).is_empty(), "{s} of a detached device");
        }
        assert_eq!(samples(&text, "openvsl_reads_total").len(), 1);
        let st = samples(&text, "openvsl_device_state");
        assert!(st
            .iter()
            .any(|(l, v)| l.contains("state=\"detached\"") && *v == 1.0));
    }

    #[test]
    fn label_values_are_escaped() {
        let (_, mut d) = devices();
        d.store = "/tmp/a\"b\\c\nd".into();
        let text = render(&doc(vec![d]));
        assert!(text.contains(r#"card="/tmp/a\"b\\c\nd""#), "{text}");
    }
}
