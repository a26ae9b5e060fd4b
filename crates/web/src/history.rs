//! Once a second, the status of every attached card and running
//! simulation, and each attached device's history since `vsl serve`
//! started (bandwidth, IOPS, latency, temperature, power, endurance).

use crate::App;
use blockdev::manage::{DeviceStatus, StatusDoc};
use rundir::live::LivePoint;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Samples kept per device (an hour at one a second).
pub const KEEP: usize = 3600;

/// One second of an attached device: the same fields as a simulation's
/// interval, and the lifetime physical writes.
#[derive(Clone, Debug, Default)]
pub struct DevPoint {
    pub live: LivePoint,
    pub physical_gb_written: f64,
}

impl DevPoint {
    fn of(t_s: f64, d: &DeviceStatus) -> DevPoint {
        let h = &d.health;
        let mut p = LivePoint {
            t_s,
            temperature_c: Some(h.temperature_c),
            power_w: Some(h.power_w),
            endurance_used_pct: Some(100.0 - h.endurance_remaining_pct),
            ..LivePoint::default()
        };
        if let Some(i) = &d.live {
            let (r, w) = (&i.read_latency, &i.write_latency);
            let n = (r.count + w.count).max(1) as f64;
            p.iops = i.read_iops + i.write_iops;
            p.mb_s = i.read_mb_s + i.write_mb_s;
            p.latency_avg_us = (r.mean_us * r.count as f64 + w.mean_us * w.count as f64) / n;
            // The worse of the read and write p99.
            p.latency_p99_us = r.p99_us.max(w.p99_us);
            p.latency_max_us = r.max_us.max(w.max_us);
        }
        DevPoint {
            live: p,
            physical_gb_written: h.physical_bytes_written as f64 / 1e9,
        }
    }
}

/// What the dashboard shows.
pub struct History {
    pub started: Instant,
    pub doc: Option<StatusDoc>,
    /// Why the last status failed, if it did.
    pub error: Option<String>,
    /// Keyed by "store#member".
    pub devices: BTreeMap<String, VecDeque<DevPoint>>,
}

impl Default for History {
    fn default() -> History {
        History {
            started: Instant::now(),
            doc: None,
            error: None,
            devices: BTreeMap::new(),
        }
    }
}

pub fn key(d: &DeviceStatus) -> String {
    format!("{}#{}", d.store, d.member)
}

impl History {
    fn update(&mut self, doc: StatusDoc) {
        let t = self.started.elapsed().as_secs_f64();
        for d in &doc.devices {
            let h = self.devices.entry(key(d)).or_default();
            if h.len() == KEEP {
                h.pop_front();
            }
            h.push_back(DevPoint::of(t, d));
        }
        self.doc = Some(doc);
        self.error = None;
    }
}

/// Samples once a second, forever.
pub async fn sample_forever(app: Arc<App>) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tick.tick().await;
        let doc = tokio::task::spawn_blocking(|| blockdev::manage::status_doc(None)).await;
        let mut h = app.history.lock().unwrap_or_else(|p| p.into_inner());
        match doc {
            Ok(Ok(doc)) => h.update(doc),
            Ok(Err(e)) => h.error = Some(format!("{e:#}")),
            Err(e) => h.error = Some(e.to_string()),
        }
    }
}
