//! Running simulations publish their intervals here while they run, for
//! `vsl status` and the dashboard (`vsl serve`): one JSON file per process,
//! `<run base>/runs/<pid>.json`, or per target of a review,
//! `<run base>/runs/<pid>-<n>.json` (run base: `$OPENVSL_RUN_DIR` or
//! `/run/openvsl`), replaced atomically at most every
//! [`PUBLISH_GAP`] of wall time and removed when the run ends.
//!
//! - [`Publisher`]: the running side (`vsl run`, `vsl review`).
//! - [`LiveRun`] / [`LivePoint`]: what a file holds.
//! - [`list_runs`]: the runs whose process is still alive.

use crate::{pid_alive, run_base};
use device::HealthReport;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Shortest wall time between two publications of one run.
pub const PUBLISH_GAP: Duration = Duration::from_millis(250);
/// Intervals a run file keeps (the oldest go first).
pub const KEEP_POINTS: usize = 600;

/// One interval of a running simulation.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LivePoint {
    /// End of the interval, seconds of the run's own (virtual or wall) time.
    pub t_s: f64,
    pub iops: f64,
    pub mb_s: f64,
    pub latency_avg_us: f64,
    pub latency_p99_us: f64,
    pub latency_max_us: f64,
    /// Hottest member's temperature, summed power and least endurance
    /// left at the end of the interval (absent for real devices).
    pub temperature_c: Option<f64>,
    pub power_w: Option<f64>,
    pub endurance_used_pct: Option<f64>,
}

/// What a running simulation publishes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LiveRun {
    pub pid: u32,
    /// `run` or `review`.
    pub kind: String,
    /// What runs: device, format, workload.
    pub label: String,
    pub started_unix_s: f64,
    pub updated_unix_s: f64,
    /// Points published since the run started (the file keeps the last
    /// [`KEEP_POINTS`]).
    pub points_total: u64,
    pub points: VecDeque<LivePoint>,
    /// Per member of the modelled card, at the last publication.
    pub health: Vec<HealthReport>,
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

fn runs_dir() -> PathBuf {
    run_base().join("runs")
}

/// Publishes one run's intervals; the file goes when this is dropped.
pub struct Publisher {
    path: PathBuf,
    run: LiveRun,
    last: Option<Instant>,
    failed: bool,
}

impl Publisher {
    pub fn new(kind: &str, label: &str) -> Publisher {
        Publisher::named(kind, label, None)
    }

    /// A publisher for part `part` of a process that runs several
    /// simulations at once (the targets of a review).
    pub fn part(kind: &str, label: &str, part: usize) -> Publisher {
        Publisher::named(kind, label, Some(part))
    }

    fn named(kind: &str, label: &str, part: Option<usize>) -> Publisher {
        let pid = std::process::id();
        let name = match part {
            None => format!("{pid}.json"),
            Some(n) => format!("{pid}-{n}.json"),
        };
        Publisher {
            path: runs_dir().join(name),
            run: LiveRun {
                pid,
                kind: kind.into(),
                label: label.into(),
                started_unix_s: unix_now(),
                ..LiveRun::default()
            },
            last: None,
            failed: false,
        }
    }

    /// Adds an interval; publishes if [`PUBLISH_GAP`] has passed (or
    /// `force`). `health` is asked for only when publishing.
    pub fn push(
        &mut self,
        point: LivePoint,
        force: bool,
        health: impl FnOnce() -> Vec<HealthReport>,
    ) {
        if self.run.points.len() == KEEP_POINTS {
            self.run.points.pop_front();
        }
        self.run.points.push_back(point);
        self.run.points_total += 1;
        let due = self.last.is_none_or(|t| t.elapsed() >= PUBLISH_GAP);
        if (due || force) && !self.failed {
            self.run.health = health();
            self.publish();
        }
    }

    fn publish(&mut self) {
        self.last = Some(Instant::now());
        self.run.updated_unix_s = unix_now();
        let tmp = self.path.with_extension("tmp");
        let text = serde_json::to_string(&self.run).expect("a live run serialises");
        let written = std::fs::create_dir_all(runs_dir())
            .and_then(|_| std::fs::write(&tmp, text))
            .and_then(|_| std::fs::rename(&tmp, &self.path));
        if let Err(e) = written {
            // The run goes on; only the dashboard misses it. Without
            // OPENVSL_RUN_DIR, a user who may not write /run/openvsl gets
            // no warning on every run.
            self.failed = true;
            let quiet = e.kind() == std::io::ErrorKind::PermissionDenied
                && std::env::var_os("OPENVSL_RUN_DIR").is_none();
            if quiet {
                return;
            }
            eprintln!(
                "vsl: warning: cannot publish live intervals to {}: {e} (set OPENVSL_RUN_DIR to a writable directory)",
                self.path.display()
            );
        }
    }
}

impl Drop for Publisher {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The runs published by live processes, oldest first. Files left by
/// processes that died are removed.
pub fn list_runs() -> Vec<LiveRun> {
    let Ok(rd) = std::fs::read_dir(runs_dir()) else {
        return Vec::new();
    };
    let mut runs: Vec<LiveRun> = rd
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .filter_map(|e| {
            let text = std::fs::read_to_string(e.path()).ok()?;
            let run: LiveRun = serde_json::from_str(&text).ok()?;
            if !pid_alive(run.pid) {
                let _ = std::fs::remove_file(e.path());
                return None;
            }
            Some(run)
        })
        .collect();
    runs.sort_by(|a, b| a.started_unix_s.total_cmp(&b.started_unix_s));
    runs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_last_points_only() {
        let mut p = Publisher::new("run", "test");
        p.failed = true; // no file
        for i in 0..KEEP_POINTS + 5 {
            let pt = LivePoint {
                t_s: i as f64,
                ..LivePoint::default()
            };
            p.push(pt, false, Vec::new);
        }
        assert_eq!(p.run.points.len(), KEEP_POINTS);
        assert_eq!(p.run.points.front().unwrap().t_s, 5.0);
        assert_eq!(p.run.points_total, (KEEP_POINTS + 5) as u64);
    }
}
