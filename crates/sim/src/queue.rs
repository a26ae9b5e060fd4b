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

    #[test]
    #[should_panic(expected = "bound")]
    fn bound_is_enforced() {
        let mut q = EventQueue::with_capacity(1);
        q.push(Nanos(1), ());
        q.push(Nanos(2), ());
    }
}
