use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// A point in virtual time, or a duration, in nanoseconds.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Nanos(pub u64);

impl Nanos {
    pub const ZERO: Nanos = Nanos(0);
    pub const fn from_us(us: u64) -> Nanos {
        Nanos(us * 1_000)
    }
    pub const fn from_ms(ms: u64) -> Nanos {
        Nanos(ms * 1_000_000)
    }
    pub const fn from_secs(s: u64) -> Nanos {
        Nanos(s * 1_000_000_000)
    }
    /// Time to move `bytes` at `bytes_per_s` (rounded up, never zero for a non-empty transfer).
    pub fn for_bytes(bytes: u64, bytes_per_s: u64) -> Nanos {
        assert!(bytes_per_s > 0);
        let ns = (bytes as u128 * 1_000_000_000).div_ceil(bytes_per_s as u128);
        Nanos(ns as u64)
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
    pub fn as_us_f64(self) -> f64 {
        self.0 as f64 / 1e3
    }
    pub fn max(self, other: Nanos) -> Nanos {
        if self >= other {
            self
        } else {
            other
        }
    }
    pub fn saturating_sub(self, other: Nanos) -> Nanos {
        Nanos(self.0.saturating_sub(other.0))
    }
}

impl Add for Nanos {
    type Output = Nanos;
    fn add(self, rhs: Nanos) -> Nanos {
        Nanos(self.0 + rhs.0)
    }
}

impl AddAssign for Nanos {
    fn add_assign(&mut self, rhs: Nanos) {
        self.0 += rhs.0;
    }
}

impl Sub for Nanos {
    type Output = Nanos;
    fn sub(self, rhs: Nanos) -> Nanos {
        assert!(self.0 >= rhs.0, "negative duration: {} - {}", self.0, rhs.0);
        Nanos(self.0 - rhs.0)
    }
}

impl fmt::Display for Nanos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = self.0;
        if ns >= 1_000_000_000 {
            write!(f, "{:.3}s", ns as f64 / 1e9)
        } else if ns >= 1_000_000 {
            write!(f, "{:.3}ms", ns as f64 / 1e6)
        } else if ns >= 1_000 {
            write!(f, "{:.3}us", ns as f64 / 1e3)
        } else {
            write!(f, "{ns}ns")
        }
    }
}

/// A server that does one thing at a time in arrival order: a NAND die group,
/// a channel bus, the controller's DMA engine.
///
/// Work is reserved when it is submitted; because the model submits work in
/// non-decreasing virtual time per resource or accepts FIFO queueing behind
/// earlier reservations, `busy_until` is all the state it needs.
#[derive(Copy, Clone, Debug, Default)]
pub struct Resource {
    pub busy_until: Nanos,
    /// Total time spent serving, for utilisation reports.
    pub busy_total: Nanos,
}

impl Resource {
    /// Reserves the resource for `duration` starting no earlier than `ready`.
    /// Returns (start, end).
    #[inline]
    pub fn reserve(&mut self, ready: Nanos, duration: Nanos) -> (Nanos, Nanos) {
        let start = ready.max(self.busy_until);
        let end = start + duration;
        self.busy_until = end;
        self.busy_total += duration;
        (start, end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transfer_time_rounds_up() {
        assert_eq!(Nanos::for_bytes(4096, 1_000_000_000), Nanos(4096));
        assert_eq!(Nanos::for_bytes(1, 3_000_000_000), Nanos(1));
    }

    #[test]
    fn resource_queues_fifo() {
        let mut r = Resource::default();
        assert_eq!(r.reserve(Nanos(10), Nanos(5)), (Nanos(10), Nanos(15)));
        assert_eq!(r.reserve(Nanos(12), Nanos(5)), (Nanos(15), Nanos(20)));
        assert_eq!(r.reserve(Nanos(30), Nanos(1)), (Nanos(30), Nanos(31)));
        assert_eq!(r.busy_total, Nanos(11));
    }
}
