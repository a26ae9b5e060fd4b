use serde::Serialize;
use sim::Prng;
use std::alloc::{alloc_zeroed, dealloc, Layout};

/// The unit in which a compressible fill mixes random bytes and zeros.
const COMPRESS_CHUNK_BYTES: usize = 4096;

/// What a layout (or a precondition fill) writes.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FillPattern {
    /// Incompressible pseudo-random bytes (fio's default buffers).
    #[default]
    Random,
    Zeros,
    /// This percentage of every 4 KiB is zeros, the rest random.
    Compressible(u8),
}

impl FillPattern {
    /// `random`, `zeros` or `compress=PCT` (0 to 100).
    pub fn parse(s: &str) -> Result<FillPattern, String> {
        match s {
            "random" => Ok(FillPattern::Random),
            "zeros" => Ok(FillPattern::Zeros),
            _ => {
                let pct = s
                    .strip_prefix("compress=")
                    .and_then(|p| p.trim_end_matches('%').parse::<u8>().ok())
                    .filter(|p| *p <= 100);
                pct.map(FillPattern::Compressible).ok_or_else(|| {
                    format!("'{s}' (expected random, zeros or compress=PCT with PCT 0 to 100)")
                })
            }
        }
    }
}

impl std::fmt::Display for FillPattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FillPattern::Random => write!(f, "random"),
            FillPattern::Zeros => write!(f, "zeros"),
            FillPattern::Compressible(p) => write!(f, "compress={p}"),
        }
    }
}

/// A heap buffer aligned for O_DIRECT (memory alignment is at least the
/// page size, which every Linux filesystem and block device accepts).
pub(crate) struct AlignedBuf {
    ptr: *mut u8,
    layout: Layout,
}

// The buffer is plain owned memory; only one thread touches it at a time.
unsafe impl Send for AlignedBuf {}

impl AlignedBuf {
    /// `len_bytes` > 0; `align_bytes` a power of two.
    pub(crate) fn new(len_bytes: usize, align_bytes: usize) -> AlignedBuf {
        assert!(len_bytes > 0);
        assert!(align_bytes.is_power_of_two());
        let layout = Layout::from_size_align(len_bytes, align_bytes).expect("valid layout");
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        AlignedBuf { ptr, layout }
    }

    #[cfg(any(feature = "uring", test))]
    pub(crate) fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr
    }

    pub(crate) fn as_slice(&self) -> &[u8] {
        // SAFETY: ptr is valid for layout.size() initialised bytes.
        unsafe { std::slice::from_raw_parts(self.ptr, self.layout.size()) }
    }

    pub(crate) fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, and we hold &mut self.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.layout.size()) }
    }

    /// Fills with pseudo-random bytes (never all zeros, so devices that
    /// compress or deduplicate zeros see real data, as fio's default
    /// random buffers do).
    pub(crate) fn fill_random(&mut self, prng: &mut Prng) {
        for chunk in self.as_mut_slice().chunks_mut(8) {
            let v = prng.next_u64().to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
    }

    /// Fills as `pattern` says: random, zeros, or in every 4 KiB chunk
    /// random bytes followed by the compressible share as zeros (fio's
    /// `buffer_compress_percentage`).
    pub(crate) fn fill_pattern(&mut self, pattern: FillPattern, prng: &mut Prng) {
        match pattern {
            FillPattern::Random => self.fill_random(prng),
            FillPattern::Zeros => self.as_mut_slice().fill(0),
            FillPattern::Compressible(pct) => {
                self.fill_random(prng);
                let zeros = COMPRESS_CHUNK_BYTES * pct.min(100) as usize / 100;
                for chunk in self.as_mut_slice().chunks_mut(COMPRESS_CHUNK_BYTES) {
                    let from = chunk.len().saturating_sub(zeros);
                    chunk[from..].fill(0);
                }
            }
        }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { dealloc(self.ptr, self.layout) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_and_random() {
        let mut b = AlignedBuf::new(8192 + 3, 4096);
        assert_eq!(b.as_mut_ptr() as usize % 4096, 0);
        b.fill_random(&mut Prng::from_seed(1));
        let zeros = b.as_slice().iter().filter(|&&x| x == 0).count();
        assert!(zeros < 200, "{zeros} zero bytes of 8195");
    }

    #[test]
    fn fill_patterns_have_the_asked_share_of_zeros() {
        let zeros = |p| {
            let mut b = AlignedBuf::new(1 << 16, 4096);
            b.fill_pattern(p, &mut Prng::from_seed(2));
            b.as_slice().iter().filter(|&&x| x == 0).count() as f64 / (1 << 16) as f64
        };
        assert!(zeros(FillPattern::Random) < 0.01);
        assert_eq!(zeros(FillPattern::Zeros), 1.0);
        let half = zeros(FillPattern::Compressible(50));
        assert!((0.5..0.51).contains(&half), "{half}");
        assert!(zeros(FillPattern::Compressible(0)) < 0.01);
    }
}
