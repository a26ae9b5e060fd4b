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

use blockdev::live::LiveRun;
use blockdev::manage::{DeviceState, DeviceStatus, LatencyHistogram, StatusDoc};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, MetricEncoder};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

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

fn last(r: &LiveRun) -> Option<&blockdev::live::LivePoint> {
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

fn device_labels(d: &DeviceStatus) -> Labels {
    vec![
        ("card", d.store.clone()),
        ("device", d.member.to_string()),
        ("preset", d.model.clone()),
    ]
}

fn run_labels(r: &LiveRun) -> Labels {
    vec![
        ("pid", r.pid.to_string()),
        ("kind", r.kind.clone()),
        ("label", r.label.clone()),
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
                    let fam: MetricEncoder = desc.encode_family(&l)?;
                    let mut fam = fam;
                    fam.encode_histogram::<Labels>(h.sum, h.count, &h.buckets, None)?;
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
