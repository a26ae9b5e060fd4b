//! Lines of a trace, one at a time, in bounded memory.

use super::TraceError;
use std::collections::VecDeque;
use std::io::BufRead;

/// The longest line read: a longer one (a binary file, say) is an error
/// instead of a buffer that grows without bound.
pub const MAX_LINE: usize = 64 * 1024;

/// Reads numbered lines from a `BufRead`; the first lines can be peeked
/// (for format detection) and are then read again.
pub struct LineReader {
    name: String,
    input: Box<dyn BufRead + Send>,
    buf: Vec<u8>,
    text: String,
    line_no: u64,
    bytes: u64,
    /// Peeked lines not yet returned.
    peeked: VecDeque<String>,
    eof: bool,
}

impl LineReader {
    pub fn new(name: &str, input: Box<dyn BufRead + Send>) -> LineReader {
        LineReader {
            name: name.into(),
            input,
            buf: Vec::with_capacity(256),
            text: String::with_capacity(256),
            line_no: 0,
            bytes: 0,
            peeked: VecDeque::new(),
            eof: false,
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Number of the last line returned.
    pub fn line_no(&self) -> u64 {
        self.line_no - self.peeked.len() as u64
    }

    pub fn bytes_read(&self) -> u64 {
        self.bytes
    }

    fn err(&self, line: u64, message: String) -> TraceError {
        TraceError {
            file: self.name.clone(),
            line,
            message,
        }
    }

    /// Reads the next raw line into `self.buf`; false at the end.
    fn read_raw(&mut self) -> Result<bool, TraceError> {
        if self.eof {
            return Ok(false);
        }
        self.buf.clear();
        loop {
            let chunk = match self.input.fill_buf() {
                Ok(c) => c,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(self.err(self.line_no + 1, format!("read error: {e}"))),
            };
            if chunk.is_empty() {
                self.eof = true;
                if self.buf.is_empty() {
                    return Ok(false);
                }
                break;
            }
            let (take, found) = match chunk.iter().position(|&b| b == b'\n') {
                Some(i) => (i + 1, true),
                None => (chunk.len(), false),
            };
            if self.buf.len() + take > MAX_LINE + 1 {
                return Err(self.err(
                    self.line_no + 1,
                    format!("line longer than {MAX_LINE} bytes (not a text trace?)"),
                ));
            }
            self.buf.extend_from_slice(&chunk[..take]);
            self.input.consume(take);
            self.bytes += take as u64;
            if found {
                break;
            }
        }
        self.line_no += 1;
        while matches!(self.buf.last(), Some(b'\n' | b'\r')) {
            self.buf.pop();
        }
        Ok(true)
    }

    /// The first `n` lines (or fewer at the end), left to be read again.
    pub fn peek_lines(&mut self, n: usize) -> Result<Vec<String>, TraceError> {
        while self.peeked.len() < n && self.read_raw()? {
            let t = match std::str::from_utf8(&self.buf) {
                Ok(t) => t.to_string(),
                Err(_) => return Err(self.err(self.line_no, "not UTF-8 text".into())),
            };
            self.peeked.push_back(t);
        }
        Ok(self.peeked.iter().take(n).cloned().collect())
    }

    /// The next line and its number, or `None` at the end.
    pub fn next_line(&mut self) -> Result<Option<(u64, &str)>, TraceError> {
        if let Some(t) = self.peeked.pop_front() {
            self.text = t;
            return Ok(Some((self.line_no(), &self.text)));
        }
        if self.read_raw()? {
            match std::str::from_utf8(&self.buf) {
                Ok(text) => Ok(Some((self.line_no, text))),
                Err(_) => Err(TraceError {
                    file: self.name.clone(),
                    line: self.line_no,
                    message: "not UTF-8 text".into(),
                }),
            }
        } else {
            Ok(None)
        }
    }
}
