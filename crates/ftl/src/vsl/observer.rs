//! One seam for whatever mirrors the media: [`MediaObserver`]. The VSL
//! calls its observers when a sector is placed in the write buffer, a
//! write unit is programmed, an erase unit opens or is erased, GC moves a
//! sector, and on trims and atomic-write boundaries.
//!
//! Two observers ship with the crate: [`MediaLog`], the GC moves and erases
//! a data store keyed by physical slot replays (the attached card's store,
//! [`super::Vsl::enable_media_log`]), and `crate::protect::PowerLog`, every
//! event the power-cut model replays ([`super::Vsl::enable_power_log`]).
//! With no observer installed each event costs one branch; with observers
//! that do not ask for placements ([`MediaObserver::wants_placements`]),
//! the per-sector path still costs one branch.

use super::MediaEvent;
use sim::Nanos;
use std::any::Any;

/// What the VSL reports to an observer of its media. Every method has an
/// empty default: implement the ones you need. Calls come in the order
/// the VSL issues the operations.
pub trait MediaObserver: Send {
    /// True when the observer wants [`MediaObserver::placed`] (one call per
    /// sector written); asked once, when it is installed. An observer that
    /// wants placements follows one log frontier, so placement policies
    /// with several streams are refused while it is installed.
    fn wants_placements(&self) -> bool {
        false
    }
    /// Logical sector `lba` (sequence number `seq`) entered the write
    /// buffer for slot `psa`; `from` is the slot a GC move copies,
    /// `u32::MAX` for host data.
    fn placed(&mut self, psa: u32, lba: u32, seq: u64, from: u32) {
        let _ = (psa, lba, seq, from);
    }
    /// Write unit `unit` was programmed, completing at `done`.
    fn programmed(&mut self, unit: u32, done: Nanos) {
        let _ = (unit, done);
    }
    /// Erase unit `leb` was erased, completing at `done`.
    fn erased(&mut self, leb: u32, done: Nanos) {
        let _ = (leb, done);
    }
    /// GC copied logical sector `lba` (out-of-band sequence number `seq`,
    /// 0 when not tracked) from slot `from` to slot `to`.
    fn moved(&mut self, from: u32, to: u32, lba: u32, seq: u64) {
        let _ = (from, to, lba, seq);
    }
    /// Erase unit `leb` became the log frontier.
    fn opened(&mut self, leb: u32) {
        let _ = leb;
    }
    /// Sectors `start..start + count` were trimmed: they hold no data
    /// written with a sequence number up to `floor`.
    fn trimmed(&mut self, start: u64, count: u64, floor: u64) {
        let _ = (start, count, floor);
    }
    /// An atomic write of sequence numbers `first..=last` begins.
    fn atomic_begin(&mut self, first: u64, last: u64) {
        let _ = (first, last);
    }
    /// The atomic write's sectors and trims are all in the buffer.
    fn atomic_end(&mut self) {}
    /// For [`super::Vsl::observer_mut`]: the observer as `Any`.
    fn as_any_mut(&mut self) -> &mut dyn Any;
    fn as_any(&self) -> &dyn Any;
}

/// The observers installed on one VSL.
#[derive(Default)]
pub(super) struct Observers {
    all: Vec<Box<dyn MediaObserver>>,
    placements: bool,
}

impl Observers {
    /// True when any observer is installed.
    #[inline]
    pub(super) fn on(&self) -> bool {
        !self.all.is_empty()
    }

    /// True when an observer wants every placement.
    #[inline]
    pub(super) fn placements(&self) -> bool {
        self.placements
    }

    pub(super) fn add(&mut self, o: Box<dyn MediaObserver>) {
        self.placements |= o.wants_placements();
        self.all.push(o);
    }

    /// The first installed observer of type `T`.
    pub(super) fn find_mut<T: 'static>(&mut self) -> Option<&mut T> {
        self.all
            .iter_mut()
            .find_map(|o| o.as_any_mut().downcast_mut::<T>())
    }

    pub(super) fn has<T: 'static>(&self) -> bool {
        self.all.iter().any(|o| o.as_any().is::<T>())
    }

    /// Calls `f` on every observer, in the order installed.
    #[inline]
    pub(super) fn each(&mut self, mut f: impl FnMut(&mut dyn MediaObserver)) {
        for o in self.all.iter_mut() {
            f(o.as_mut());
        }
    }
}

/// Records the GC moves and erases a data store keyed by physical slot
/// must mirror besides host writes (whose slots [`super::Vsl::lookup`]
/// gives), as [`MediaEvent`]s.
#[derive(Default)]
pub struct MediaLog {
    events: Vec<MediaEvent>,
}

impl MediaLog {
    pub fn with_capacity(n: usize) -> MediaLog {
        MediaLog {
            events: Vec::with_capacity(n),
        }
    }

    /// Moves the recorded events, oldest first, into `out`.
    pub fn drain(&mut self, out: &mut Vec<MediaEvent>) {
        out.append(&mut self.events);
    }
}

impl MediaObserver for MediaLog {
    fn moved(&mut self, from: u32, to: u32, lba: u32, seq: u64) {
        self.events.push(MediaEvent::Moved { from, to, lba, seq });
    }
    fn erased(&mut self, leb: u32, _done: Nanos) {
        self.events.push(MediaEvent::Erased { leb });
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
