//! The attached card's counters, read without the device lock by `vsl
//! status`, the trimmer ([`crate::trim`]) and the dashboard: operations,
//! bytes and the model's time ([`Counters`]), and wall latencies from
//! receipt to acknowledgement ([`Latency`]), each I/O's timing as the engine
//! returns it ([`Completion`]).

use hdrhistogram::Histogram;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Cumulative counters, read without the device lock.
#[derive(Default)]
pub struct Counters {
    pub reads: AtomicU64,
    pub writes: AtomicU64,
    pub trims: AtomicU64,
    pub flushes: AtomicU64,
    pub bytes_read: AtomicU64,
    pub bytes_written: AtomicU64,
    pub errors: AtomicU64,
    /// Sum over I/Os of the wall answer minus the time the model says to
    /// answer ([`Completion::ack_at`]), ns (how late the emulator
    /// delivers), and the I/Os it covers.
    pub late_ns_total: AtomicU64,
    pub late_count: AtomicU64,
    /// Sum of the model's latency of the reads answered, ns, and the reads
    /// it covers (what [`crate::trim`] compares the loop device with).
    pub model_read_ns_total: AtomicU64,
    pub model_read_count: AtomicU64,
    pub latency: Mutex<Latency>,
}

impl Counters {
    /// Records one flush that took `d` on the wall.
    pub fn record_flush(&self, d: Duration) {
        let ns = (d.as_nanos() as u64).clamp(1_000, 3_600_000_000_000);
        let mut l = self.latency.lock().unwrap_or_else(|p| p.into_inner());
        l.flush.saturating_record(ns);
    }
}

/// Wall latencies (receipt to acknowledgement), ns: since attach and since
/// the status sampler last took them.
pub struct Latency {
    pub read_total: Histogram<u64>,
    pub write_total: Histogram<u64>,
    pub read_interval: Histogram<u64>,
    pub write_interval: Histogram<u64>,
    /// The model's own latency (its completion minus submission).
    pub model_read: Histogram<u64>,
    pub model_write: Histogram<u64>,
    /// Acknowledgement minus [`Completion::ack_at`]: the emulator's lateness.
    pub late: Histogram<u64>,
    /// Receipt to the engine's return (model, store I/O, lock waits): the
    /// daemon's own work per I/O, before any wait for the model.
    pub service: Histogram<u64>,
    /// Flush (fsync) receipt to answer, store sync included.
    pub flush: Histogram<u64>,
    /// Reads' and writes' wall time taken apart ([`Split`]).
    pub split: [Split; 2],
}

/// Where the wall time of one kind of I/O went (receipt to answer), over
/// the I/Os since attach: `wall = before_model + model - lead + late`,
/// each I/O exactly (the lead and lateness as [`Completion::ack_at`] sets
/// them).
pub struct Split {
    pub count: u64,
    pub wall_ns: u64,
    /// Receipt to the model's submission (the device lock, the FUSE
    /// thread's queue).
    pub before_model_ns: u64,
    pub model_ns: u64,
    /// How much before the model's completion the answer was due.
    pub lead_ns: u64,
    /// The answer after it was due.
    pub late_ns: u64,
    /// Of that, how late it already was when the engine returned (its
    /// store I/O outlasting the model's time less the lead); the rest is
    /// the wait for the answering thread.
    pub late_at_return_ns: u64,
    /// Submission to the engine's return (the store I/O after the model).
    pub engine_ns: u64,
    pub late: Histogram<u64>,
    pub before_model: Histogram<u64>,
    pub engine: Histogram<u64>,
}

impl Default for Split {
    fn default() -> Split {
        Split {
            count: 0,
            wall_ns: 0,
            before_model_ns: 0,
            model_ns: 0,
            lead_ns: 0,
            late_ns: 0,
            late_at_return_ns: 0,
            engine_ns: 0,
            late: histogram(),
            before_model: histogram(),
            engine: histogram(),
        }
    }
}

fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1_000, 3_600_000_000_000, 2).expect("valid histogram bounds")
}

impl Default for Latency {
    fn default() -> Latency {
        Latency {
            read_total: histogram(),
            write_total: histogram(),
            read_interval: histogram(),
            write_interval: histogram(),
            model_read: histogram(),
            model_write: histogram(),
            late: histogram(),
            service: histogram(),
            flush: histogram(),
            split: Default::default(),
        }
    }
}

impl Counters {
    /// Records one acknowledged I/O: `received` to `acked` on the wall,
    /// the engine done with it at `served`, `done` the model's completion.
    pub fn record(
        &self,
        write: bool,
        received: Instant,
        served: Instant,
        acked: Instant,
        done: Completion,
    ) {
        let service = served.saturating_duration_since(received).as_nanos() as u64;
        let ns = acked.saturating_duration_since(received).as_nanos() as u64;
        let late = acked.saturating_duration_since(done.ack_at()).as_nanos() as u64;
        let model = done.at.saturating_duration_since(done.submitted).as_nanos() as u64;
        let before = done
            .submitted
            .saturating_duration_since(received)
            .as_nanos() as u64;
        let lead = done.at.saturating_duration_since(done.ack_at()).as_nanos() as u64;
        let engine = served.saturating_duration_since(done.submitted).as_nanos() as u64;
        let late_at_return = served.saturating_duration_since(done.ack_at()).as_nanos() as u64;
        self.late_ns_total.fetch_add(late, Relaxed);
        self.late_count.fetch_add(1, Relaxed);
        let mut l = self.latency.lock().unwrap_or_else(|p| p.into_inner());
        let clamp = |v: u64| v.clamp(1_000, 3_600_000_000_000);
        l.late.saturating_record(clamp(late));
        l.service.saturating_record(clamp(service));
        let sp = &mut l.split[write as usize];
        sp.count += 1;
        sp.wall_ns += ns;
        sp.before_model_ns += before;
        sp.model_ns += model;
        sp.lead_ns += lead;
        sp.late_ns += late;
        sp.late_at_return_ns += late_at_return.min(late);
        sp.engine_ns += engine;
        sp.late.saturating_record(clamp(late));
        sp.before_model.saturating_record(clamp(before));
        sp.engine.saturating_record(clamp(engine));
        if write {
            l.write_total.saturating_record(clamp(ns));
            l.write_interval.saturating_record(clamp(ns));
            l.model_write.saturating_record(clamp(model));
        } else {
            self.model_read_ns_total.fetch_add(model, Relaxed);
            self.model_read_count.fetch_add(1, Relaxed);
            l.read_total.saturating_record(clamp(ns));
            l.read_interval.saturating_record(clamp(ns));
            l.model_read.saturating_record(clamp(model));
        }
    }
}

/// When an I/O may complete.
#[derive(Copy, Clone, Debug)]
pub struct Completion {
    /// Wall time of the model's completion.
    pub at: Instant,
    /// Wall time the model was handed the I/O.
    pub submitted: Instant,
    /// The kernel path's measured round trip for this I/O
    /// ([`crate::wakeup::probe`]), or without a probe the model's host VSL
    /// software cost: time the real path around the daemon (block layer,
    /// loop, FUSE) spends, so the answer goes out that much earlier
    /// ([`Completion::ack_at`]).
    pub host: Duration,
}

impl Completion {
    /// When the daemon answers: the model's completion less the host
    /// software cost that the real kernel path around the daemon already
    /// spends (before the request reaches it and after the answer leaves),
    /// never before the I/O reached the model.
    pub fn ack_at(&self) -> Instant {
        self.at
            .checked_sub(self.host)
            .unwrap_or(self.at)
            .max(self.submitted)
    }
}
