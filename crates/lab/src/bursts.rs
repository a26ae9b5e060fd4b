//! Bursts of open-loop load: fio's `thinktime` with `thinktime_iotime` on
//! a rate-limited job (`rate_iops`/`rate`). A job issues at its rate for
//! `thinktime_iotime`, then stalls for `thinktime`, again and again. What
//! the rate's arrivals do during a stall follows fio's
//! `rate_ignore_thinktime`: by default fio catches up after the stall
//! (the missed I/Os go out at once, a burst at the window's start, then the
//! rate resumes), with it set they are skipped (the rate resumes as if it
//! had run, no catch-up). The windows start with the run and are the same
//! for every thread (fio's jobs start together and stall on the same clock).

use crate::openloop::{Arrival, Arrivals, SourceError};

/// `inner`'s arrivals gated by on/off windows.
pub struct OnOff<'a> {
    inner: &'a mut dyn Arrivals,
    on_ns: u64,
    off_ns: u64,
    catch_up: bool,
    /// Arrivals skipped in stalls (`catch_up` false).
    pub skipped: u64,
    /// Arrivals moved to the start of the next window (`catch_up` true).
    pub deferred: u64,
}

impl<'a> OnOff<'a> {
    /// Issues for `on_ns`, stalls for `off_ns`; `catch_up`: fio's default
    /// (`rate_ignore_thinktime=0`).
    pub fn new(inner: &'a mut dyn Arrivals, on_ns: u64, off_ns: u64, catch_up: bool) -> Self {
        OnOff {
            inner,
            on_ns: on_ns.max(1),
            off_ns,
            catch_up,
            skipped: 0,
            deferred: 0,
        }
    }
}

impl Arrivals for OnOff<'_> {
    fn next_arrival(&mut self) -> Result<Option<Arrival>, SourceError> {
        let cycle = self.on_ns.saturating_add(self.off_ns);
        loop {
            let Some(mut a) = self.inner.next_arrival()? else {
                return Ok(None);
            };
            let phase = a.at_ns % cycle;
            if phase < self.on_ns {
                return Ok(Some(a));
            }
            if !self.catch_up {
                self.skipped += 1;
                continue;
            }
            self.deferred += 1;
            a.at_ns = a.at_ns - phase + cycle;
            return Ok(Some(a));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use workload::OpKind;

    fn every(gap: u64, n: u64) -> impl FnMut() -> Result<Option<Arrival>, SourceError> {
        let mut i = 0;
        move || {
            i += 1;
            Ok((i <= n).then(|| Arrival {
                at_ns: (i - 1) * gap,
                op: OpKind::Read,
                offset: 0,
                len: 4096,
            }))
        }
    }

    fn times(src: &mut dyn Arrivals) -> Vec<u64> {
        let mut v = Vec::new();
        while let Some(a) = src.next_arrival().unwrap() {
            v.push(a.at_ns);
        }
        v
    }

    #[test]
    fn skipped_in_stalls_without_catch_up() {
        let mut inner = every(10, 10); // 0, 10, .., 90
        let mut g = OnOff::new(&mut inner, 30, 20, false);
        assert_eq!(times(&mut g), vec![0, 10, 20, 50, 60, 70]);
        assert_eq!(g.skipped, 4);
    }

    #[test]
    fn caught_up_at_the_next_window() {
        let mut inner = every(10, 10);
        let mut g = OnOff::new(&mut inner, 30, 20, true);
        assert_eq!(times(&mut g), vec![0, 10, 20, 50, 50, 50, 60, 70, 100, 100]);
        assert_eq!(g.deferred, 4);
    }
}
