//! [`Timer`]: holds completed I/Os until the wall time the model says they
//! complete, then acknowledges them. One thread serves every device, so a
//! deep queue costs heap entries, not sleeping threads.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// How late a timed sleep wakes, ns: an average of what was seen (a
/// halted vCPU's timer wake-up is 20–35 µs late here, see
/// `docs/ATTACH_PERF.md`). Sleeps end this much early and spin the rest.
static OVERSHOOT_NS: AtomicU64 = AtomicU64::new(20_000);
/// Never trust less than this, nor more than [`OVERSHOOT_MAX`].
const OVERSHOOT_MIN: u64 = 2_000;
const OVERSHOOT_MAX: u64 = 200_000;

/// What to sleep for to wake by `left` from now, or None to spin: `left`
/// less the overshoot seen so far (a wake-up early by its jitter spins the
/// rest; one late by it is late).
pub fn sleep_for(left: Duration) -> Option<Duration> {
    let early = Duration::from_nanos(OVERSHOOT_NS.load(Relaxed));
    left.checked_sub(early)
        .filter(|d| *d > Duration::from_micros(1))
}

/// Records that a sleep of `asked` took `took`.
pub fn record_overshoot(asked: Duration, took: Duration) {
    let over = took.saturating_sub(asked).as_nanos() as u64;
    let old = OVERSHOOT_NS.load(Relaxed);
    // A moving average over about 16 sleeps.
    let new = (old * 15 + over.clamp(OVERSHOOT_MIN, OVERSHOOT_MAX)) / 16;
    OVERSHOOT_NS.store(new.clamp(OVERSHOOT_MIN, OVERSHOOT_MAX), Relaxed);
}

/// The current overshoot estimate.
pub fn overshoot() -> Duration {
    Duration::from_nanos(OVERSHOOT_NS.load(Relaxed))
}

/// One step of a wait too short to sleep through: gives the CPU to any
/// other runnable thread first. On two CPUs a plain spin took the CPU from
/// the very client, loop worker or softirq whose I/O it waited on: with
/// four sysbench threads a yield instead of a pause gave 15-25 % more
/// (`docs/ATTACH_PERF.md`); with nothing else runnable it returns at once.
pub fn spin_step() {
    // SAFETY: sched_yield takes no arguments and cannot fail.
    unsafe { libc::sched_yield() };
}

/// Waits until `at`: sleeps while the wake-up's overshoot leaves time,
/// then spins. The calling thread should have a 1 ns timer slack.
pub fn wait_until(at: Instant) {
    let now = Instant::now();
    if let Some(d) = sleep_for(at.saturating_duration_since(now)) {
        std::thread::sleep(d);
        record_overshoot(d, now.elapsed());
    }
    while Instant::now() < at {
        spin_step();
    }
}

/// An acknowledgement to send later.
pub type Ack = Box<dyn FnOnce(Instant) + Send>;

struct Entry {
    at: Instant,
    seq: u64,
    ack: Ack,
}

impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        self.at == o.at && self.seq == o.seq
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    // Earliest first out of a max-heap.
    fn cmp(&self, o: &Self) -> Ordering {
        o.at.cmp(&self.at).then(o.seq.cmp(&self.seq))
    }
}

#[derive(Default)]
struct State {
    heap: BinaryHeap<Entry>,
    seq: u64,
    stop: bool,
}

/// A deadline queue with its own thread.
pub struct Timer {
    state: Mutex<State>,
    wake: Condvar,
}

impl Timer {
    /// Starts the timer thread, SCHED_FIFO at `rt` if given
    /// ([`crate::sched`]; a refusal is logged).
    pub fn start(rt: Option<i32>) -> (Arc<Timer>, std::thread::JoinHandle<()>) {
        let t = Arc::new(Timer {
            state: Mutex::new(State::default()),
            wake: Condvar::new(),
        });
        let t2 = t.clone();
        let h = std::thread::Builder::new()
            .name("vsl-timer".into())
            .spawn(move || t2.run(crate::sched::make_realtime_or_log(rt, "the timer thread")))
            .expect("spawn timer thread");
        (t, h)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `ack` at `at` (at once if `at` has passed).
    pub fn at(&self, at: Instant, ack: Ack) {
        let now = Instant::now();
        if at <= now {
            ack(now);
            return;
        }
        let mut s = self.lock();
        let earliest = s.heap.peek().is_none_or(|e| at < e.at);
        s.seq += 1;
        let seq = s.seq;
        s.heap.push(Entry { at, seq, ack });
        drop(s);
        if earliest {
            self.wake.notify_one();
        }
    }

    /// Acknowledges everything still queued and ends the thread.
    pub fn stop(&self) {
        self.lock().stop = true;
        self.wake.notify_one();
    }

    /// `rt`: the thread's SCHED_FIFO priority, if it has one.
    fn run(&self, rt: Option<i32>) {
        // Sleep precisely: the default 50 µs timer slack would add to every
        // I/O's latency.
        // SAFETY: prctl with an integer argument only affects this thread.
        unsafe {
            libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong);
        }
        let mut due = Vec::new();
        // Set while the thread spins as an ordinary thread
        // ([`crate::sched::Ordinary`]), across the spin's slices.
        let mut ordinary = None;
        loop {
            let mut s = self.lock();
            loop {
                let now = Instant::now();
                while s.heap.peek().is_some_and(|e| e.at <= now || s.stop) {
                    due.push(s.heap.pop().expect("peeked"));
                }
                if !due.is_empty() || s.stop {
                    break;
                }
                s = match s.heap.peek().map(|e| e.at - now) {
                    Some(left) => match sleep_for(left) {
                        Some(d) => {
                            ordinary = None;
                            let (s, r) = self
                                .wake
                                .wait_timeout(s, d)
                                .unwrap_or_else(|p| p.into_inner());
                            if r.timed_out() {
                                record_overshoot(d, now.elapsed());
                            }
                            s
                        }
                        None => {
                            // Too close to sleep: spin a little, unlocked.
                            drop(s);
                            ordinary.get_or_insert_with(|| crate::sched::Ordinary::new(rt));
                            let until = now + left.min(Duration::from_micros(2));
                            while Instant::now() < until {
                                spin_step();
                            }
                            self.lock()
                        }
                    },
                    None => {
                        ordinary = None;
                        self.wake.wait(s).unwrap_or_else(|p| p.into_inner())
                    }
                };
            }
            // Back at its priority to answer.
            ordinary = None;
            let stop = s.stop && s.heap.is_empty();
            drop(s);
            let now = Instant::now();
            for e in due.drain(..) {
                (e.ack)(now);
            }
            if stop {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn acks_in_deadline_order_and_not_early() {
        let (t, h) = Timer::start(None);
        let (tx, rx) = mpsc::channel();
        let base = Instant::now() + Duration::from_millis(20);
        for i in [3u64, 1, 2] {
            let tx = tx.clone();
            let at = base + Duration::from_millis(i * 5);
            t.at(at, Box::new(move |now| tx.send((i, now >= at)).unwrap()));
        }
        let got: Vec<_> = (0..3).map(|_| rx.recv().unwrap()).collect();
        assert_eq!(got, vec![(1, true), (2, true), (3, true)]);
        t.stop();
        h.join().unwrap();
    }
}
