//! Block-trace readers for replay, streaming: each reader is an iterator
//! over [`TraceRecord`]s that holds one line at a time, so a trace larger
//! than RAM replays in bounded memory.
//!
//! Formats ([`TraceFormat`]): fio iolog v2 and v3, blkparse's default text
//! output, MSR Cambridge CSV, SNIA IOTTA block-trace CSVs, MQSim's ASCII
//! traces. [`detect`] guesses the format from the first lines; every error
//! names the file and the line.

/// What a traced request asks the device to do.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OpKind {
    Read,
    Write,
    /// Trim / discard / unmap.
    Discard,
    /// Cache flush (no data).
    Flush,
}

impl OpKind {
    pub const ALL: [OpKind; 4] = [OpKind::Read, OpKind::Write, OpKind::Discard, OpKind::Flush];

    pub fn name(self) -> &'static str {
        match self {
            OpKind::Read => "read",
            OpKind::Write => "write",
            OpKind::Discard => "discard",
            OpKind::Flush => "flush",
        }
    }

    /// Index into [`OpKind::ALL`].
    #[inline]
    pub fn index(self) -> usize {
        self as usize
    }
}
