//! The power-cut-protected write buffer: host sectors wait here from their
//! admission until the write unit holding them is programmed. A host write
//! is acknowledged when it is admitted, so a full buffer is what makes the
//! host wait for the NAND.

use sim::Nanos;
use std::collections::VecDeque;

pub(super) struct WriteBuffer {
    /// Programmed units not yet released: (program completion, host slots).
    pending: VecDeque<(Nanos, u32)>,
    used: u64,
    cap: u64,
    /// When the last host sectors were admitted (admission is FIFO).
    last_admit: Nanos,
}

impl WriteBuffer {
    /// A buffer of `cap` sectors, whose write units hold `spu` sectors.
    pub(super) fn new(cap: u64, spu: u32) -> WriteBuffer {
        WriteBuffer {
            pending: VecDeque::with_capacity((cap / spu as u64) as usize + 2),
            used: 0,
            cap,
            last_admit: Nanos::ZERO,
        }
    }

    /// Capacity, in sectors.
    #[inline]
    pub(super) fn cap(&self) -> u64 {
        self.cap
    }

    /// When the last host sectors were admitted.
    #[inline]
    pub(super) fn last_admit(&self) -> Nanos {
        self.last_admit
    }

    /// Waits for room for `n` host sectors (FIFO) from `ready`: when they
    /// are in, and whether they had to wait for programs to complete.
    pub(super) fn admit(&mut self, ready: Nanos, n: u64) -> (Nanos, bool) {
        let mut t = ready.max(self.last_admit);
        while let Some(&(release, slots)) = self.pending.front() {
            if release > t {
                break;
            }
            self.pending.pop_front();
            self.used -= slots as u64;
        }
        let mut waited = false;
        while self.used + n > self.cap {
            let (release, slots) = self
                .pending
                .pop_front()
                .expect("a full buffer holds programmed units (cap >= 2 units)");
            t = t.max(release);
            self.used -= slots as u64;
            waited = true;
        }
        self.used += n;
        self.last_admit = t;
        (t, waited)
    }

    /// A write unit holding `host_slots` host sectors is programmed at
    /// `done`: they leave the buffer then.
    #[inline]
    pub(super) fn programmed(&mut self, done: Nanos, host_slots: u32) {
        if host_slots > 0 {
            self.pending.push_back((done, host_slots));
        }
    }
}
