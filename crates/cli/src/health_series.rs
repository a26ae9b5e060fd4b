//! The health series of a modelled run: temperature, power and endurance
//! used at the end of every reporting interval, sampled by a
//! [`VirtualDevice`] wrapper so the lab needs no change, and the live
//! publication of the run's intervals for `vsl status` and `vsl serve`.

use device::{Card, DeviceError, HealthReport, IoKind, VirtualDevice};
use lab::IntervalStats;
use rundir::live::{LivePoint, Publisher};
use sim::Nanos;
use std::cell::RefCell;
use std::rc::Rc;

pub use device::HealthPoint;

/// Shared between the device wrapper and the interval callback.
#[derive(Default)]
pub struct Series {
    pub points: Vec<HealthPoint>,
    pub last: Vec<HealthReport>,
}

/// A card that samples its health at every interval boundary it crosses.
pub struct Sampled<'a> {
    pub card: &'a mut Card,
    start: Nanos,
    interval_ns: u64,
    next: Nanos,
    pub series: Rc<RefCell<Series>>,
}

impl<'a> Sampled<'a> {
    pub fn new(card: &'a mut Card, start: Nanos, interval_ns: u64) -> Sampled<'a> {
        let series = Rc::new(RefCell::new(Series {
            points: Vec::new(),
            last: card.health(),
        }));
        Sampled {
            card,
            start,
            interval_ns,
            next: Nanos(start.0 + interval_ns),
            series,
        }
    }

    /// Samples the boundaries up to `end` no I/O crossed.
    pub fn finish(&mut self, end: Nanos) {
        while self.next <= end {
            self.sample();
        }
    }

    fn sample(&mut self) {
        let reports = self.card.health();
        let t_s = (self.next.0 - self.start.0) as f64 / 1e9;
        let mut s = self.series.borrow_mut();
        s.points.push(HealthPoint::of(t_s, &reports));
        s.last = reports;
        self.next = Nanos(self.next.0 + self.interval_ns);
    }
}

impl VirtualDevice for Sampled<'_> {
    fn capacity_bytes(&self) -> u64 {
        self.card.capacity_bytes()
    }
    fn sector_bytes(&self) -> u32 {
        self.card.sector_bytes()
    }
    #[inline]
    fn submit(
        &mut self,
        now: Nanos,
        kind: IoKind,
        offset: u64,
        len: u64,
    ) -> Result<Nanos, DeviceError> {
        while now >= self.next {
            self.sample();
        }
        self.card.submit(now, kind, offset, len)
    }
    fn stats(&self) -> device::DeviceStats {
        self.card.stats()
    }
    fn prefetch(&self, offset: u64, deep: bool) {
        self.card.prefetch(offset, deep)
    }
    fn host_thread_ns(&self) -> u64 {
        self.card.host_thread_ns()
    }
}

/// The live point of an interval, with the latest health sample.
pub fn live_point(iv: &IntervalStats, health: Option<&HealthPoint>) -> LivePoint {
    LivePoint {
        t_s: iv.t_s,
        iops: iv.iops,
        mb_s: iv.mb_per_s,
        latency_avg_us: iv.lat_avg_us,
        latency_p99_us: iv.lat_p99_us,
        latency_max_us: iv.lat_max_us,
        temperature_c: health.map(|h| h.temperature_c),
        power_w: health.map(|h| h.power_w),
        endurance_used_pct: health.map(|h| h.endurance_used_pct),
    }
}

/// Publishes an interval of a modelled run.
pub fn publish(p: &mut Publisher, iv: &IntervalStats, series: &RefCell<Series>) {
    let s = series.borrow();
    p.push(live_point(iv, s.points.last()), false, || s.last.clone());
}
