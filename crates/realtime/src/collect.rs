//! Per-worker interval windows and their merge at interval boundaries.

use lab::{FioStats, IntervalStats, LatencyStats, RunResult, Summary};
use std::collections::BTreeMap;
use std::sync::mpsc::Sender;

/// What completed in one interval (on one worker, or merged).
pub(crate) struct Window {
    pub(crate) lat: LatencyStats,
    pub(crate) reads: u64,
    pub(crate) writes: u64,
    pub(crate) bytes: u64,
    /// Per direction, for fio's JSON.
    pub(crate) fio: FioStats,
}

impl Window {
    pub(crate) fn new() -> Window {
        Window {
            lat: LatencyStats::default(),
            reads: 0,
            writes: 0,
            bytes: 0,
            fio: FioStats::default(),
        }
    }

    fn merge(&mut self, o: &Window) {
        self.lat.merge(&o.lat);
        self.fio.merge(&o.fio);
        self.reads += o.reads;
        self.writes += o.writes;
        self.bytes += o.bytes;
    }
}

/// A worker's report: every interval below `upto` is final for it, and
/// `window` (if any) holds what it completed in interval `.0`.
pub(crate) enum Msg {
    Progress {
        worker: usize,
        upto: u64,
        window: Option<(u64, Box<Window>)>,
    },
    Done {
        worker: usize,
        result: Result<(), crate::RealtimeError>,
    },
}

/// A worker's side: accumulates completions into the current interval's
/// window and ships it when an I/O completes in a later interval.
pub(crate) struct Meter {
    tx: Sender<Msg>,
    worker: usize,
    interval_ns: u64,
    end_ns: u64,
    idx: u64,
    window: Box<Window>,
}

impl Meter {
    pub(crate) fn new(tx: Sender<Msg>, worker: usize, interval_ns: u64, end_ns: u64) -> Meter {
        assert!(interval_ns > 0);
        Meter {
            tx,
            worker,
            interval_ns,
            end_ns,
            idx: 0,
            window: Box::new(Window::new()),
        }
    }

    /// Records an I/O that completed at `now_ns` (since the run started)
    /// after `lat_ns`. Completions at or after the end are not counted,
    /// as in `lab::run`.
    #[inline]
    pub(crate) fn record(&mut self, now_ns: u64, lat_ns: u64, is_read: bool, len: u64) {
        self.record_open(now_ns, lat_ns, lat_ns, is_read, len);
    }

    /// [`Meter::record`] of an open-loop I/O: `lat_ns` from its scheduled
    /// arrival (the run's statistics), `issued_ns` from its issue (fio's
    /// `clat`/`lat`: fio stamps an I/O after the rate's wait).
    #[inline]
    pub(crate) fn record_open(
        &mut self,
        now_ns: u64,
        lat_ns: u64,
        issued_ns: u64,
        is_read: bool,
        len: u64,
    ) {
        if now_ns >= self.end_ns {
            return;
        }
        let idx = now_ns / self.interval_ns;
        if idx != self.idx {
            self.ship(idx);
        }
        let w = &mut self.window;
        w.lat.record(lat_ns);
        w.reads += is_read as u64;
        w.writes += !is_read as u64;
        w.bytes += len;
        w.fio.record(is_read, issued_ns, len);
    }

    /// An open-loop I/O issued with `in_flight` I/Os in flight, itself
    /// included (fio's `iodepth_level`).
    #[inline]
    pub(crate) fn depth(&mut self, in_flight: usize) {
        self.window.fio.record_depth(in_flight);
    }

    fn ship(&mut self, next_idx: u64) {
        let window = if self.window.lat.count() > 0 || self.window.fio.depth.is_some() {
            let full = std::mem::replace(&mut self.window, Box::new(Window::new()));
            Some((self.idx, full))
        } else {
            None
        };
        // The collector outlives every worker; a send only fails if it
        // already gave up on the run, and then nothing is lost that matters.
        let _ = self.tx.send(Msg::Progress {
            worker: self.worker,
            upto: next_idx,
            window,
        });
        self.idx = next_idx;
    }

    /// Ships the last window and reports the worker's outcome.
    pub(crate) fn finish(mut self, result: Result<(), crate::RealtimeError>) {
        self.ship(u64::MAX);
        let _ = self.tx.send(Msg::Done {
            worker: self.worker,
            result,
        });
    }
}

/// The collecting side: merges workers' windows and emits an interval once
/// every worker has moved past it.
pub(crate) struct Collector {
    interval_ns: u64,
    duration_ns: u64,
    full_intervals: u64,
    progress: Vec<u64>,
    pending: BTreeMap<u64, Window>,
    next_emit: u64,
    intervals: Vec<IntervalStats>,
    total: Window,
    error: Option<crate::RealtimeError>,
    running: usize,
}

impl Collector {
    pub(crate) fn new(workers: usize, interval_ns: u64, duration_ns: u64) -> Collector {
        let full_intervals = duration_ns / interval_ns;
        Collector {
            interval_ns,
            duration_ns,
            full_intervals,
            progress: vec![0; workers],
            pending: BTreeMap::new(),
            next_emit: 0,
            intervals: Vec::with_capacity(full_intervals.min(1 << 20) as usize + 1),
            total: Window::new(),
            error: None,
            running: workers,
        }
    }

    pub(crate) fn running(&self) -> usize {
        self.running
    }

    pub(crate) fn take(&mut self, msg: Msg, on_interval: &mut dyn FnMut(&IntervalStats)) {
        match msg {
            Msg::Progress {
                worker,
                upto,
                window,
            } => {
                if let Some((idx, w)) = window {
                    self.pending
                        .entry(idx)
                        .or_insert_with(Window::new)
                        .merge(&w);
                }
                self.progress[worker] = self.progress[worker].max(upto);
            }
            Msg::Done { worker, result } => {
                self.progress[worker] = u64::MAX;
                self.running -= 1;
                if let Err(e) = result {
                    self.error.get_or_insert(e);
                }
            }
        }
        self.emit_ready(on_interval);
    }

    fn emit_ready(&mut self, on_interval: &mut dyn FnMut(&IntervalStats)) {
        let ready = self.progress.iter().copied().min().unwrap_or(u64::MAX);
        let has_partial = !self.duration_ns.is_multiple_of(self.interval_ns);
        let last = self.full_intervals + has_partial as u64;
        while self.next_emit < ready.min(last) {
            let idx = self.next_emit;
            self.next_emit += 1;
            let w = self.pending.remove(&idx).unwrap_or_else(Window::new);
            if idx == self.full_intervals && w.lat.count() == 0 {
                continue; // an empty final partial interval, as lab::run
            }
            let end_ns = ((idx + 1) * self.interval_ns).min(self.duration_ns);
            let secs = (end_ns - idx * self.interval_ns) as f64 / 1e9;
            let st = stats(end_ns as f64 / 1e9, secs, &w);
            self.total.merge(&w);
            self.total.fio.close_interval(secs);
            on_interval(&st);
            self.intervals.push(st);
        }
    }

    /// The run's result, or the first worker error. `drained_ns`: when the
    /// last I/O in flight at the end completed (since the start).
    pub(crate) fn finish(
        self,
        drained_ns: u64,
    ) -> Result<(RunResult, FioStats), crate::RealtimeError> {
        if let Some(e) = self.error {
            return Err(e);
        }
        let secs = self.duration_ns as f64 / 1e9;
        let t = &self.total;
        let latency = Some(t.lat.clone());
        let run = RunResult {
            summary: Summary {
                totals: stats(secs, secs, t),
                reads: t.reads,
                writes: t.writes,
                bytes: t.bytes,
                virtual_s: secs,
                precondition_s: 0.0,
                host_ram_bytes: 0,
                gc_runs: 0,
                erases: 0,
            },
            intervals: self.intervals,
            end: sim::Nanos(drained_ns.max(self.duration_ns)),
            latency,
        };
        Ok((run, self.total.fio))
    }
}

/// Interval statistics; write amplification and GC are unknown for a real
/// device and reported as 0.
fn stats(t_s: f64, secs: f64, w: &Window) -> IntervalStats {
    IntervalStats::from_parts(t_s, secs, &w.lat, w.reads, w.writes, w.bytes, 0.0, 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::channel;

    #[test]
    fn windows_merge_in_order_and_wait_for_every_worker() {
        let (tx, rx) = channel();
        // 2 workers, 10 ms intervals, 25 ms run: two full intervals and a
        // partial one.
        let mut a = Meter::new(tx.clone(), 0, 10_000_000, 25_000_000);
        let mut b = Meter::new(tx, 1, 10_000_000, 25_000_000);
        let mut c = Collector::new(2, 10_000_000, 25_000_000);
        let mut seen = Vec::new();
        a.record(1_000_000, 1000, true, 4096);
        a.record(12_000_000, 2000, false, 4096); // a moves to interval 1
        for m in rx.try_iter() {
            c.take(m, &mut |s| seen.push(s.clone()));
        }
        assert!(seen.is_empty(), "b has not reported interval 0 yet");
        b.record(5_000_000, 3000, true, 4096);
        b.record(21_000_000, 4000, true, 4096); // b skips interval 1
        b.record(30_000_000, 9000, true, 4096); // after the end: dropped
        a.finish(Ok(()));
        b.finish(Ok(()));
        for m in rx.try_iter() {
            c.take(m, &mut |s| seen.push(s.clone()));
        }
        assert_eq!(c.running(), 0);
        let (r, fio) = c.finish(30_000_000).unwrap();
        assert_eq!((fio.dirs[0].ios, fio.dirs[1].ios), (3, 1));
        let per_interval: Vec<u64> = fio.dirs[0].samples.iter().map(|s| s.ios).collect();
        assert_eq!(per_interval, vec![2, 0, 1]);
        assert_eq!(fio.dirs[0].max_ns, 4000);
        assert_eq!(r.end, sim::Nanos(30_000_000));
        assert_eq!(seen, r.intervals);
        let ios: Vec<u64> = r.intervals.iter().map(|s| s.ios).collect();
        assert_eq!(ios, vec![2, 1, 1]);
        assert!((r.intervals[0].iops - 200.0).abs() < 1e-6);
        assert!((r.intervals[2].t_s - 0.025).abs() < 1e-12);
        assert!((r.intervals[2].iops - 200.0).abs() < 1e-6, "5 ms partial");
        assert_eq!(r.summary.totals.ios, 4);
        assert_eq!((r.summary.reads, r.summary.writes), (3, 1));
        assert_eq!(r.summary.totals.lat_max_us, 4.0);
    }
}
