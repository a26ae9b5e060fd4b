//! [`Dispatch`]: how a member's driver hands host I/Os to the hardware.
//!
//! Two limits, both off by default (docs/MODEL.md, "The read pipe and
//! in-order dispatch"):
//!
//! - **The read pipe.** At most `depth` host reads are outstanding in the
//!   hardware at once; a read beyond it waits in the host until the
//!   earliest one completes (the VSL's `READ_PIPE_DEPTH`, "max number of
//!   read requests outstanding in hardware").
//! - **In-order dispatch.** The driver takes its queue in the order
//!   submitted, so an I/O behind a read that waits for the pipe waits too
//!   (a request function that stops its queue when a hardware resource is
//!   exhausted), reads and writes alike.
//!
//! Times are virtual; submissions reach a member in time order, so the
//! reads waiting for the pipe take its slots in the order they came.

use sim::Nanos;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

#[derive(Clone, Debug, Default)]
pub(crate) struct Dispatch {
    /// 0: no read pipe.
    depth: usize,
    in_order: bool,
    /// Completion times of the host reads in the hardware.
    pipe: BinaryHeap<Reverse<Nanos>>,
    /// When the last I/O entered the hardware (in-order dispatch).
    last_entry: Nanos,
}

impl Dispatch {
    pub(crate) fn new(depth: u32, in_order: bool) -> Dispatch {
        Dispatch {
            depth: depth as usize,
            in_order,
            pipe: BinaryHeap::with_capacity(depth as usize + 1),
            last_entry: Nanos::ZERO,
        }
    }

    /// Nothing to do: every I/O enters the hardware when it is ready.
    #[inline]
    pub(crate) fn is_off(&self) -> bool {
        self.depth == 0 && !self.in_order
    }

    /// When a host read ready at `ready` enters the hardware. Call
    /// [`Dispatch::read_done`] with its completion.
    pub(crate) fn read_entry(&mut self, ready: Nanos) -> Nanos {
        let mut t = ready;
        if self.in_order {
            t = t.max(self.last_entry);
        }
        if self.depth > 0 {
            while self.pipe.peek().is_some_and(|r| r.0 <= t) {
                self.pipe.pop();
            }
            if self.pipe.len() >= self.depth {
                if let Some(Reverse(first)) = self.pipe.pop() {
                    t = t.max(first);
                }
            }
        }
        self.last_entry = self.last_entry.max(t);
        t
    }

    /// The read that entered last completes at `done` (its data at the
    /// controller): its slot of the pipe is free from then on.
    pub(crate) fn read_done(&mut self, done: Nanos) {
        if self.depth > 0 {
            self.pipe.push(Reverse(done));
        }
    }

    /// When a host write (or trim) ready at `ready` enters the hardware.
    pub(crate) fn write_entry(&mut self, ready: Nanos) -> Nanos {
        if !self.in_order {
            return ready;
        }
        let t = ready.max(self.last_entry);
        self.last_entry = t;
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(n: u64) -> Nanos {
        Nanos(n * 1000)
    }

    #[test]
    fn a_read_past_the_pipe_waits_for_the_earliest_completion() {
        let mut d = Dispatch::new(2, false);
        assert_eq!(d.read_entry(us(0)), us(0));
        d.read_done(us(100));
        assert_eq!(d.read_entry(us(1)), us(1));
        d.read_done(us(50));
        // Full: the third waits for the read completing at 50 us, the
        // fourth for the one at 100 us.
        assert_eq!(d.read_entry(us(2)), us(50));
        d.read_done(us(300));
        assert_eq!(d.read_entry(us(3)), us(100));
        d.read_done(us(400));
        // Later, with both slots held until 300 and 400 us.
        assert_eq!(d.read_entry(us(350)), us(350));
    }

    #[test]
    fn writes_pass_a_waiting_read_unless_dispatch_is_in_order() {
        let mut free = Dispatch::new(1, false);
        free.read_entry(us(0));
        free.read_done(us(100));
        assert_eq!(free.read_entry(us(1)), us(100));
        free.read_done(us(200));
        assert_eq!(free.write_entry(us(2)), us(2));

        let mut fifo = Dispatch::new(1, true);
        fifo.read_entry(us(0));
        fifo.read_done(us(100));
        assert_eq!(fifo.read_entry(us(1)), us(100));
        fifo.read_done(us(200));
        // Behind the read waiting for the pipe.
        assert_eq!(fifo.write_entry(us(2)), us(100));
        // And a read behind that write waits for the pipe in turn.
        assert_eq!(fifo.read_entry(us(3)), us(200));
    }

    #[test]
    fn off_changes_nothing() {
        let mut d = Dispatch::new(0, false);
        assert!(d.is_off());
        for i in 0..100 {
            assert_eq!(d.read_entry(us(i)), us(i));
            d.read_done(us(i + 1000));
            assert_eq!(d.write_entry(us(i)), us(i));
        }
    }
}
