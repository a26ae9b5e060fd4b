use crate::Nanos;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// A bounded min-queue of `(time, payload)`; ties pop in insertion order so
/// that runs are reproducible regardless of heap internals.
pub struct EventQueue<T> {
    heap: BinaryHeap<Reverse<(Nanos, u64, Entry<T>)>>,
    seq: u64,
    capacity: usize,
}

/// Wrapper so the payload never takes part in ordering.
struct Entry<T>(T);
impl<T> PartialEq for Entry<T> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
impl<T> Eq for Entry<T> {}
impl<T> PartialOrd for Entry<T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for Entry<T> {
    fn cmp(&self, _: &Self) -> std::cmp::Ordering {
        std::cmp::Ordering::Equal
    }
}

impl<T> EventQueue<T> {
    pub fn with_capacity(capacity: usize) -> Self {
        assert!(capacity > 0);
        EventQueue {
            heap: BinaryHeap::with_capacity(capacity),
            seq: 0,
            capacity,
        }
    }

    #[inline]
    pub fn push(&mut self, at: Nanos, payload: T) {
        assert!(
            self.heap.len() < self.capacity,
            "event queue over its bound"
        );
        self.seq += 1;
        self.heap.push(Reverse((at, self.seq, Entry(payload))));
    }

    #[inline]
    pub fn pop(&mut self) -> Option<(Nanos, T)> {
        self.heap.pop().map(|Reverse((t, _, Entry(p)))| (t, p))
    }

    /// The earliest event, left in the queue.
    #[inline]
    pub fn peek(&self) -> Option<(Nanos, &T)> {
        self.heap.peek().map(|Reverse((t, _, Entry(p)))| (*t, p))
    }

    /// Pops the earliest event and pushes `(at, payload)` in its place, in
    /// one sift instead of two: the same order as `pop` then `push` (ties
    /// still pop in insertion order), for a closed loop that issues one
    /// event per event it completes. Panics on an empty queue.
    #[inline]
    pub fn replace_top(&mut self, at: Nanos, payload: T) -> (Nanos, T) {
        self.seq += 1;
        let mut top = self.heap.peek_mut().expect("replace_top on an empty queue");
        let Reverse((t, _, Entry(p))) =
            std::mem::replace(&mut *top, Reverse((at, self.seq, Entry(payload))));
        (t, p)
    }

    pub fn peek_time(&self) -> Option<Nanos> {
        self.heap.peek().map(|Reverse((t, _, _))| *t)
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_in_time_then_insertion_order() {
        let mut q = EventQueue::with_capacity(8);
        q.push(Nanos(5), 'a');
        q.push(Nanos(1), 'b');
        q.push(Nanos(5), 'c');
        q.push(Nanos(3), 'd');
        let order: Vec<char> = std::iter::from_fn(|| q.pop().map(|(_, c)| c)).collect();
        assert_eq!(order, vec!['b', 'd', 'a', 'c']);
    }

    /// `replace_top` pops in exactly the order `pop` then `push` would, ties
    /// included, over a long random closed loop.
    #[test]
    fn replace_top_matches_pop_then_push() {
        let seed = 0x5eed_u64;
        let mut rng = crate::Prng::from_seed(seed);
        let (mut a, mut b) = (EventQueue::with_capacity(64), EventQueue::with_capacity(64));
        for i in 0..64u32 {
            let t = Nanos(rng.below(50));
            a.push(t, i);
            b.push(t, i);
        }
        for step in 0..100_000u32 {
            // Few distinct times, so ties are common.
            let t = a.peek_time().unwrap();
            let next = t + Nanos(rng.below(20));
            let x = a.pop().unwrap();
            a.push(next, step);
            let y = b.replace_top(next, step);
            assert_eq!(x, y, "step {step}, seed {seed:#x}");
        }
        let rest_a: Vec<_> = std::iter::from_fn(|| a.pop()).collect();
        let rest_b: Vec<_> = std::iter::from_fn(|| b.pop()).collect();
        assert_eq!(rest_a, rest_b);
    }

    #[test]
    #[should_panic(expected = "bound")]
    fn bound_is_enforced() {
        let mut q = EventQueue::with_capacity(1);
        q.push(Nanos(1), ());
        q.push(Nanos(2), ());
    }
}
