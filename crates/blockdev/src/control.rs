//! The daemon's control socket protocol, parsed without touching a device:
//! [`read_request`] reads one request line with a bound on its length,
//! [`parse`] turns it into a [`Command`] (`status`, `detach`, or `atomic`
//! with its [`AtomicRequest`] checked for shape), and every refusal is a
//! [`ControlError`] whose [`ControlError::reply`] is one `error …` line.
//!
//! The socket is an attack surface: the daemon runs as root and `detach`
//! or `atomic` change what a block device holds. The socket file is made
//! owner-only (0600) right after it is bound, and [`peer_allowed`] refuses
//! a connection from any other user (one that slipped in between the bind
//! and the chmod included). Whatever a peer sends — garbage, a line of
//! gigabytes, invalid UTF-8, an unknown command, a malformed atomic
//! request — ends in one error line, never a panic or unbounded memory
//! (`fuzz/fuzz_targets/control_message.rs`, `tests/fuzz_files.rs`).

use serde::{Deserialize, Serialize};
use std::io::{BufRead, Read};
use std::os::unix::net::UnixStream;

/// Most ranges (writes and trims together) in one atomic write.
pub const OPS_MAX: usize = crate::store::ATOMIC_TRIMS_MAX;
/// Most bytes one atomic write may carry over the socket (the card's
/// power-cut-protected write buffer, usually smaller, is the real limit
/// and refuses larger groups itself).
pub const BYTES_MAX: u64 = 64 << 20;

/// Longest request line accepted, newline included. An atomic request of
/// [`OPS_MAX`] ranges with 20-digit numbers takes ~44 KiB.
pub const LINE_BYTES_MAX: usize = 128 << 10;
/// Most characters of a peer's input echoed back in an error.
const ECHO_CHARS_MAX: usize = 64;

/// One parsed control request.
#[derive(Debug, PartialEq)]
pub enum Command {
    Status,
    Detach,
    /// An atomic write; its data follows the line on the socket.
    Atomic(AtomicRequest),
    /// `trace-start {JSON}`: capture every request ([`crate::capture`]).
    TraceStart(crate::capture::TraceOptions),
    /// `trace-stop`.
    TraceStop,
}

/// Why a request was refused.
#[derive(Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ControlError {
    #[error("request line longer than {LINE_BYTES_MAX} bytes")]
    TooLong,
    #[error("request is not UTF-8")]
    NotUtf8,
    #[error("empty request (expected status, detach, atomic, trace-start or trace-stop)")]
    Empty,
    #[error("unknown command '{0}' (expected status, detach, atomic, trace-start or trace-stop)")]
    Unknown(String),
    #[error("malformed trace-start request: {0}")]
    Trace(String),
    #[error("malformed atomic request: {0}")]
    Atomic(String),
    #[error("reading the request: {0}")]
    Io(String),
    #[error("permission denied: uid {0} may not use this socket (owner only)")]
    Forbidden(u32),
    #[error("busy: {0} atomic writes in flight; retry")]
    Busy(usize),
}

/// Longest answer line to a refused request (serde's messages quote the
/// peer's strings whole).
pub const REPLY_CHARS_MAX: usize = 400;

impl ControlError {
    /// The answer line sent back, without its newline: `error MESSAGE`,
    /// at most [`REPLY_CHARS_MAX`] characters.
    pub fn reply(&self) -> String {
        let full = one_line(&format!("error {self}"));
        if full.chars().count() <= REPLY_CHARS_MAX {
            return full;
        }
        let mut cut: String = full.chars().take(REPLY_CHARS_MAX - 1).collect();
        cut.push('…');
        cut
    }
}

/// The fuzzing entry point (`fuzz/fuzz_targets/control_message.rs`, and
/// on stable Rust `tests/fuzz_files.rs`): what the daemon does with a
/// peer's bytes, with its promises checked. Panics if one is broken.
pub fn check_message(data: &[u8]) {
    let mut r = std::io::BufReader::new(data);
    match read_request(&mut r).and_then(|l| parse(&l)) {
        Ok(Command::Atomic(req)) => {
            assert!(
                req.check().is_ok(),
                "an accepted atomic request fails its check"
            );
            assert!(req.bytes() <= BYTES_MAX);
        }
        Ok(Command::Status | Command::Detach | Command::TraceStart(_) | Command::TraceStop) => {}
        Err(e) => {
            let reply = e.reply();
            assert!(reply.starts_with("error "), "{reply}");
            assert!(!reply.contains(['\n', '\r']), "{reply:?}");
            assert!(reply.chars().count() <= REPLY_CHARS_MAX, "{reply}");
        }
    }
}

/// `s` with line breaks turned into spaces, so an answer stays one line.
pub fn one_line(s: &str) -> String {
    s.replace(['\n', '\r'], " ")
}

/// A peer's text as echoed in an error: at most [`ECHO_CHARS_MAX`]
/// characters, control characters escaped.
fn echo(s: &str) -> String {
    let mut out: String = s
        .chars()
        .take(ECHO_CHARS_MAX)
        .flat_map(char::escape_debug)
        .collect();
    if s.chars().nth(ECHO_CHARS_MAX).is_some() {
        out.push('…');
    }
    out
}

/// Reads one request line (up to and without its `\n`; end of stream ends
/// it too). Never buffers more than [`LINE_BYTES_MAX`] bytes; what follows
/// the line stays in `r` (an atomic write's data).
pub fn read_request(r: &mut impl BufRead) -> Result<Vec<u8>, ControlError> {
    let mut line = Vec::new();
    r.take(LINE_BYTES_MAX as u64)
        .read_until(b'\n', &mut line)
        .map_err(|e| ControlError::Io(e.to_string()))?;
    match line.last() {
        Some(b'\n') => {
            line.pop();
        }
        _ if line.len() >= LINE_BYTES_MAX => return Err(ControlError::TooLong),
        _ => {}
    }
    Ok(line)
}

/// Parses one request line (as [`read_request`] returns it).
pub fn parse(line: &[u8]) -> Result<Command, ControlError> {
    if line.len() >= LINE_BYTES_MAX {
        return Err(ControlError::TooLong);
    }
    let text = std::str::from_utf8(line).map_err(|_| ControlError::NotUtf8)?;
    let text = text.trim();
    let (word, rest) = text.split_once(' ').unwrap_or((text, ""));
    match (word, rest.trim()) {
        ("", _) => Err(ControlError::Empty),
        ("status", "") => Ok(Command::Status),
        ("detach", "") => Ok(Command::Detach),
        ("atomic", json) => AtomicRequest::parse(json).map(Command::Atomic),
        ("trace-stop", "") => Ok(Command::TraceStop),
        ("trace-start", json) => serde_json::from_str(json)
            .map(Command::TraceStart)
            .map_err(|e| ControlError::Trace(e.to_string())),
        _ => Err(ControlError::Unknown(echo(text))),
    }
}

/// The JSON of an `atomic` request: ranges as (offset, length) in bytes.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AtomicRequest {
    pub member: u32,
    pub writes: Vec<(u64, u64)>,
    pub trims: Vec<(u64, u64)>,
}

impl AtomicRequest {
    /// Parses and checks the shape: at least one range, at most
    /// [`OPS_MAX`], at most [`BYTES_MAX`]
    /// written, no overlap. Bounds and alignment are the device's to check.
    pub fn parse(json: &str) -> Result<AtomicRequest, ControlError> {
        if json.is_empty() {
            return Err(ControlError::Atomic(
                "no JSON after 'atomic' (expected {\"member\":M,\"writes\":[[OFFSET,LEN],…],\"trims\":[…]})".into(),
            ));
        }
        let req: AtomicRequest =
            serde_json::from_str(json).map_err(|e| ControlError::Atomic(e.to_string()))?;
        req.check().map_err(ControlError::Atomic)?;
        Ok(req)
    }

    /// Bytes the request writes (its data on the socket).
    pub fn bytes(&self) -> u64 {
        self.writes.iter().map(|w| w.1).sum()
    }

    /// The shape every request must have, whoever sends it.
    pub fn check(&self) -> Result<(), String> {
        let ranges = self.writes.len() + self.trims.len();
        if ranges == 0 {
            return Err("an atomic write needs at least one write or trim".into());
        }
        if ranges > OPS_MAX {
            return Err(format!(
                "{ranges} ranges in one atomic write; at most {}",
                OPS_MAX
            ));
        }
        let bytes = self
            .writes
            .iter()
            .try_fold(0u64, |a, w| a.checked_add(w.1))
            .ok_or("write lengths overflow")?;
        if bytes > BYTES_MAX {
            return Err(format!(
                "{bytes} bytes in one atomic write; at most {}",
                BYTES_MAX
            ));
        }
        let mut all: Vec<(u64, u64)> = self.writes.iter().chain(&self.trims).copied().collect();
        if let Some(r) = all.iter().find(|r| r.0.checked_add(r.1).is_none()) {
            return Err(format!(
                "range {}+{} (offset+length, bytes) overflows",
                r.0, r.1
            ));
        }
        all.sort_unstable();
        if let Some(p) = all.windows(2).find(|p| p[0].0 + p[0].1 > p[1].0) {
            return Err(format!(
                "ranges {}+{} and {}+{} (offset+length, bytes) overlap",
                p[0].0, p[0].1, p[1].0, p[1].1
            ));
        }
        Ok(())
    }
}

/// The uid of the process at the other end of `conn` (SO_PEERCRED).
pub fn peer_uid(conn: &UnixStream) -> std::io::Result<u32> {
    use std::os::fd::AsRawFd;
    // SAFETY: ucred is plain old data; getsockopt fills at most `len` bytes.
    let mut cred: libc::ucred = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: a valid socket descriptor and a buffer of `len` bytes.
    let rc = unsafe {
        libc::getsockopt(
            conn.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(cred.uid)
}

/// Only the daemon's own user (root) may send requests.
pub fn peer_allowed(conn: &UnixStream) -> Result<(), ControlError> {
    let uid = peer_uid(conn).map_err(|e| ControlError::Io(format!("SO_PEERCRED: {e}")))?;
    // SAFETY: geteuid has no preconditions.
    let own = unsafe { libc::geteuid() };
    if uid == own {
        Ok(())
    } else {
        Err(ControlError::Forbidden(uid))
    }
}

/// Owner-only permissions for the socket file at `path`.
pub fn restrict(path: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_then_parse(input: &[u8]) -> Result<Command, ControlError> {
        let mut r = std::io::BufReader::new(input);
        read_request(&mut r).and_then(|l| parse(&l))
    }

    #[test]
    fn good_requests_parse() {
        assert_eq!(read_then_parse(b"status\n"), Ok(Command::Status));
        assert_eq!(read_then_parse(b"  detach \r\n"), Ok(Command::Detach));
        assert_eq!(read_then_parse(b"status"), Ok(Command::Status));
        assert_eq!(read_then_parse(b"trace-stop\n"), Ok(Command::TraceStop));
        assert_eq!(
            read_then_parse(
                b"trace-start {\"dir\":\"/t\",\"rotate_bytes\":4096,\"format\":\"both\"}\n"
            ),
            Ok(Command::TraceStart(crate::capture::TraceOptions {
                dir: "/t".into(),
                rotate_bytes: 4096,
                format: crate::capture::TraceFormat::Both
            }))
        );
        let c = read_then_parse(
            b"atomic {\"member\":0,\"writes\":[[0,4096]],\"trims\":[[8192,4096]]}\nDATA",
        )
        .unwrap();
        assert_eq!(
            c,
            Command::Atomic(AtomicRequest {
                member: 0,
                writes: vec![(0, 4096)],
                trims: vec![(8192, 4096)]
            })
        );
    }

    /// What follows the request line stays in the reader: the atomic data.
    #[test]
    fn the_data_after_the_line_is_left_to_read() {
        let mut r = std::io::BufReader::new(&b"atomic {}\nDATA"[..]);
        assert_eq!(read_request(&mut r).unwrap(), b"atomic {}");
        let mut rest = String::new();
        r.read_to_string(&mut rest).unwrap();
        assert_eq!(rest, "DATA");
    }

    /// A batch of malformed messages: each is refused with its own kind of
    /// error, as one line that echoes no more than a bounded, escaped part
    /// of the input.
    #[test]
    fn malformed_messages_get_one_line_errors() {
        let huge = vec![b'a'; 10 * LINE_BYTES_MAX];
        let huge_atomic = format!(
            "atomic {{\"member\":0,\"writes\":[{}],\"trims\":[]}}\n",
            vec!["[0,4096]"; 20_000].join(",")
        );
        let many = format!(
            "atomic {{\"member\":0,\"writes\":[{}],\"trims\":[]}}\n",
            (0..1025u64)
                .map(|i| format!("[{},4096]", i * 4096))
                .collect::<Vec<_>>()
                .join(",")
        );
        // serde quotes a wrong-typed string whole: the reply is cut.
        let long_string = format!(
            "atomic {{\"member\":\"{}\nrm\",\"writes\":[],\"trims\":[]}}\n",
            "m".repeat(100_000)
        )
        .replace("\nrm", "\\nrm");
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (b"\n".to_vec(), "empty request"),
            (b"   \t \n".to_vec(), "empty request"),
            (b"".to_vec(), "empty request"),
            (b"stat\n".to_vec(), "unknown command 'stat'"),
            (b"status please\n".to_vec(), "unknown command 'status please'"),
            (b"STATUS\n".to_vec(), "unknown command"),
            (b"detach now\n".to_vec(), "unknown command"),
            (b"\x00\x01\x02\n".to_vec(), "unknown command '\\0\\u{1}\\u{2}'"),
            (b"\xff\xfe status\n".to_vec(), "not UTF-8"),
            (b"status\xc3\n".to_vec(), "not UTF-8"),
            (huge.clone(), "longer than"),
            (huge_atomic.into_bytes(), "longer than"),
            (b"atomic\n".to_vec(), "no JSON after 'atomic'"),
            (b"atomic \n".to_vec(), "no JSON after 'atomic'"),
            (b"atomic {\n".to_vec(), "malformed atomic request"),
            (b"atomic []\n".to_vec(), "malformed atomic request"),
            (b"atomic null\n".to_vec(), "malformed atomic request"),
            (b"atomic {\"member\":-1,\"writes\":[],\"trims\":[]}\n".to_vec(), "malformed atomic request"),
            (b"atomic {\"member\":0,\"writes\":[[0]],\"trims\":[]}\n".to_vec(), "malformed atomic request"),
            (b"atomic {\"member\":0,\"writes\":[[0,1.5]],\"trims\":[]}\n".to_vec(), "malformed atomic request"),
            (b"atomic {\"member\":0,\"writes\":[[0,4096]]}\n".to_vec(), "missing field `trims`"),
            (b"atomic {\"member\":0,\"writes\":[],\"trims\":[],\"x\":1}\n".to_vec(), "unknown field"),
            (b"atomic {\"member\":0,\"writes\":[],\"trims\":[]}\n".to_vec(), "at least one write or trim"),
            (many.into_bytes(), "1025 ranges"),
            (b"atomic {\"member\":0,\"writes\":[[0,67108865]],\"trims\":[]}\n".to_vec(), "at most 67108864"),
            (
                b"atomic {\"member\":0,\"writes\":[[0,18446744073709551615],[0,18446744073709551615]],\"trims\":[]}\n".to_vec(),
                "write lengths overflow",
            ),
            (
                b"atomic {\"member\":0,\"writes\":[],\"trims\":[[18446744073709551615,4096]]}\n".to_vec(),
                "overflows",
            ),
            (
                b"atomic {\"member\":0,\"writes\":[[0,8192]],\"trims\":[[4096,4096]]}\n".to_vec(),
                "overlap",
            ),
            (
                b"atomic {\"member\":0,\"writes\":[[0,18446744073709551616]],\"trims\":[]}\n".to_vec(),
                "malformed atomic request",
            ),
            (long_string.into_bytes(), "invalid type: string"),
            (b"trace-start\n".to_vec(), "malformed trace-start request"),
            (b"trace-start {\"dir\":1}\n".to_vec(), "malformed trace-start request"),
            (b"trace-start {\"dir\":\"/t\",\"rotate_bytes\":1,\"format\":\"csv\"}\n".to_vec(), "unknown variant"),
            (b"trace-stop now\n".to_vec(), "unknown command"),
        ];
        for (input, want) in &cases {
            let shown = String::from_utf8_lossy(&input[..input.len().min(80)]).into_owned();
            let err = match read_then_parse(input) {
                Ok(c) => panic!("{shown:?} was accepted as {c:?}"),
                Err(e) => e.reply(),
            };
            assert!(err.starts_with("error "), "{shown:?}: {err}");
            assert!(err.contains(want), "{shown:?}: {err} (wanted {want:?})");
            assert!(
                !err.contains('\n') && !err.contains('\r'),
                "{shown:?}: {err}"
            );
            assert!(
                err.chars().count() <= REPLY_CHARS_MAX,
                "{shown:?}: a {}-byte error",
                err.len()
            );
            check_message(input);
        }
    }

    /// A peer that streams a line without end is cut off at the bound,
    /// having made the daemon hold no more than the bound.
    #[test]
    fn an_endless_line_is_cut_at_the_bound() {
        let mut endless = std::io::BufReader::new(std::io::repeat(b'x'));
        assert_eq!(read_request(&mut endless), Err(ControlError::TooLong));
        let mut exact = vec![b's'; LINE_BYTES_MAX - 1];
        exact.push(b'\n');
        let mut r = std::io::BufReader::new(&exact[..]);
        let line = read_request(&mut r).unwrap();
        assert_eq!(line.len(), LINE_BYTES_MAX - 1);
        assert!(matches!(parse(&line), Err(ControlError::Unknown(_))));
    }
}
