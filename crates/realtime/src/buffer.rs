use serde::Serialize;
use sim::Prng;

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

/// What the I/O buffers are made of (fio's `mem=`). The choice matters
/// for large blocks on some devices: an O_DIRECT request is handed to the
/// device as one scatter-gather segment per physically contiguous run of
/// its buffer, so a 64 KiB buffer of scattered 4 KiB pages is 16 segments
/// and the same buffer in one huge page is one. On this project's virtio
/// disk that alone moved 64 KiB random reads by 1.6-1.9× (bench/RESULTS.md,
/// issue 33).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IoMem {
    /// Ordinary 4 KiB pages, one region per worker (fio's default,
    /// `mem=malloc`).
    #[default]
    Pages,
    /// 2 MiB pages: hugetlbfs pages if the kernel has some reserved
    /// (`vm.nr_hugepages`, as fio's `mem=shmhuge`), else transparent huge
    /// pages asked for with `madvise`; 4 KiB pages with a note if neither.
    Huge,
}

impl IoMem {
    /// `pages` or `huge`.
    pub fn parse(s: &str) -> Result<IoMem, String> {
        match s {
            "pages" | "malloc" => Ok(IoMem::Pages),
            "huge" => Ok(IoMem::Huge),
            _ => Err(format!("'{s}' (expected pages or huge)")),
        }
    }
}

impl std::fmt::Display for IoMem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            IoMem::Pages => "pages",
            IoMem::Huge => "huge",
        })
    }
}

/// What a worker's buffers turned out to be made of.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MemBacking {
    Pages,
    /// hugetlbfs pages (MAP_HUGETLB).
    Hugetlb,
    /// Transparent huge pages: the whole region is backed by them.
    Thp,
    /// Huge pages were asked for and only part of the region (or none)
    /// got them.
    ThpPartial,
}

impl MemBacking {
    pub fn describe(self) -> &'static str {
        match self {
            MemBacking::Pages => "4 KiB pages",
            MemBacking::Hugetlb => "2 MiB hugetlbfs pages",
            MemBacking::Thp => "2 MiB transparent huge pages",
            MemBacking::ThpPartial => {
                "huge pages asked for, but the kernel backed the buffers (partly) with 4 KiB pages \
                 (no hugetlbfs pages reserved and transparent huge pages off or unavailable)"
            }
        }
    }
}

const HUGE_BYTES: usize = 2 << 20;

/// One worker's I/O buffers: `slots` buffers of `slot_bytes` each in one
/// anonymous mapping (as fio keeps one buffer area per job), each slot
/// aligned to `align_bytes` (at least the page size).
pub(crate) struct IoBuffers {
    base: *mut u8,
    map_bytes: usize,
    /// Offset of slot 0 in the mapping (THP: the first 2 MiB boundary).
    start: usize,
    stride: usize,
    slot_bytes: usize,
    slots: usize,
    backing: MemBacking,
    /// Stamp every write (see [`IoBuffers::stamp`]); off for an all-zeros
    /// fill, which must stay zeros.
    scramble: bool,
    /// Writes stamped so far: the stamp's sequence number.
    stamped: u64,
    /// Random key the stamps are XORed with, so they look like the rest of
    /// a random buffer (no runs of zero bytes).
    key: [u64; 2],
}

/// Each stamp covers one 512-byte chunk of a write.
const STAMP_CHUNK_BYTES: usize = 512;

// Plain owned memory; only the owning worker touches it.
unsafe impl Send for IoBuffers {}

impl IoBuffers {
    pub(crate) fn new(
        slots: usize,
        slot_bytes: usize,
        align_bytes: usize,
        mem: IoMem,
    ) -> std::io::Result<IoBuffers> {
        assert!(slots > 0 && slot_bytes > 0 && align_bytes.is_power_of_two());
        let align = align_bytes.max(4096);
        let stride = slot_bytes.div_ceil(align) * align;
        let want = stride * slots;
        let anon = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS;
        let map = |len: usize, flags: libc::c_int| {
            // SAFETY: an anonymous mapping; no memory is passed in.
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    flags,
                    -1,
                    0,
                )
            };
            (p != libc::MAP_FAILED).then_some(p as *mut u8)
        };
        let mut b = match mem {
            IoMem::Pages => {
                let base = map(want, anon).ok_or_else(std::io::Error::last_os_error)?;
                IoBuffers {
                    base,
                    map_bytes: want,
                    start: 0,
                    stride,
                    slot_bytes,
                    slots,
                    backing: MemBacking::Pages,
                    scramble: true,
                    stamped: 0,
                    key: [0; 2],
                }
            }
            IoMem::Huge => {
                let len = want.div_ceil(HUGE_BYTES) * HUGE_BYTES;
                if let Some(base) = map(len, anon | libc::MAP_HUGETLB) {
                    IoBuffers {
                        base,
                        map_bytes: len,
                        start: 0,
                        stride,
                        slot_bytes,
                        slots,
                        backing: MemBacking::Hugetlb,
                        scramble: true,
                        stamped: 0,
                        key: [0; 2],
                    }
                } else {
                    // One extra huge page so the region can start on a
                    // 2 MiB boundary, then ask for THP before any touch.
                    let map_bytes = len + HUGE_BYTES;
                    let base = map(map_bytes, anon).ok_or_else(std::io::Error::last_os_error)?;
                    let start = (HUGE_BYTES - base as usize % HUGE_BYTES) % HUGE_BYTES;
                    // SAFETY: the range lies inside the mapping just made.
                    unsafe {
                        libc::madvise(
                            base.add(start) as *mut libc::c_void,
                            len,
                            libc::MADV_HUGEPAGE,
                        )
                    };
                    IoBuffers {
                        base,
                        map_bytes,
                        start,
                        stride,
                        slot_bytes,
                        slots,
                        backing: MemBacking::ThpPartial,
                        scramble: true,
                        stamped: 0,
                        key: [0; 2],
                    }
                }
            }
        };
        // Touch every page now, in order, so the run does not fault.
        for i in 0..b.slots {
            b.slot_mut(i).fill(0);
        }
        if b.backing == MemBacking::ThpPartial && thp_backed(b.region_ptr() as usize, want) {
            b.backing = MemBacking::Thp;
        }
        Ok(b)
    }

    fn region_ptr(&self) -> *mut u8 {
        // SAFETY: start < map_bytes.
        unsafe { self.base.add(self.start) }
    }

    pub(crate) fn backing(&self) -> MemBacking {
        self.backing
    }

    #[cfg(any(feature = "uring", test))]
    pub(crate) fn slots(&self) -> usize {
        self.slots
    }

    #[cfg(any(feature = "uring", test))]
    pub(crate) fn slot_bytes(&self) -> usize {
        self.slot_bytes
    }

    #[cfg(any(feature = "uring", test))]
    pub(crate) fn slot_ptr(&mut self, i: usize) -> *mut u8 {
        assert!(i < self.slots);
        // SAFETY: slot i lies inside the mapping.
        unsafe { self.region_ptr().add(i * self.stride) }
    }

    pub(crate) fn slot(&self, i: usize) -> &[u8] {
        assert!(i < self.slots);
        // SAFETY: slot i is slot_bytes of the mapping, initialised.
        unsafe {
            std::slice::from_raw_parts(self.region_ptr().add(i * self.stride), self.slot_bytes)
        }
    }

    pub(crate) fn slot_mut(&mut self, i: usize) -> &mut [u8] {
        assert!(i < self.slots);
        // SAFETY: as above, and we hold &mut self.
        unsafe {
            std::slice::from_raw_parts_mut(self.region_ptr().add(i * self.stride), self.slot_bytes)
        }
    }

    /// Fills every slot with `pattern`; writes are stamped unless the
    /// pattern is all zeros.
    pub(crate) fn fill(&mut self, pattern: FillPattern, prng: &mut Prng) {
        for i in 0..self.slots {
            fill_bytes(self.slot_mut(i), pattern, prng);
        }
        self.scramble = pattern != FillPattern::Zeros;
        self.key = [prng.next_u64(), prng.next_u64()];
    }

    /// Makes the first `len` bytes of slot `i` unique before it is written
    /// at `offset`: each 512-byte chunk gets the chunk's device offset and
    /// this worker's write count in 16 of its bytes, at a place that moves
    /// with the count. Without it every write would repeat one of the
    /// worker's queue-depth buffers, and a device (or a virtual disk's
    /// host) that deduplicates or compresses would see far less data than
    /// was written. fio does the same by default (`scramble_buffers=1`);
    /// on this machine's virtio disk it took 64 KiB random writes at 4 × 16
    /// from 1.19 to about 1.0 of fio's IOPS (docs/REALDEV.md).
    pub(crate) fn stamp(&mut self, i: usize, offset: u64, len: usize) {
        if !self.scramble {
            return;
        }
        self.stamped += 1;
        let seq = self.stamped;
        // One of the chunk's eight 64-byte lines, as fio's scramble uses.
        let at = ((seq ^ (offset / STAMP_CHUNK_BYTES as u64)) % 8) as usize * 64;
        let key = self.key;
        let buf = &mut self.slot_mut(i)[..len];
        for (k, chunk) in buf.chunks_exact_mut(STAMP_CHUNK_BYTES).enumerate() {
            let chunk_offset = offset + (k * STAMP_CHUNK_BYTES) as u64;
            chunk[at..at + 8].copy_from_slice(&(chunk_offset ^ key[0]).to_le_bytes());
            chunk[at + 8..at + 16].copy_from_slice(&(seq ^ key[1]).to_le_bytes());
        }
    }
}

impl Drop for IoBuffers {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, unmapped once.
        unsafe { libc::munmap(self.base as *mut libc::c_void, self.map_bytes) };
    }
}

/// True when `/proc/self/smaps` says the mapping holding `addr` has
/// `len` bytes (or more) of anonymous huge pages.
fn thp_backed(addr: usize, len: usize) -> bool {
    let Ok(smaps) = std::fs::read_to_string("/proc/self/smaps") else {
        return false;
    };
    let mut inside = false;
    for line in smaps.lines() {
        if let Some((range, _)) = line.split_once(' ') {
            if let Some((a, b)) = range.split_once('-') {
                if let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16))
                {
                    inside = a <= addr && addr < b;
                    continue;
                }
            }
        }
        if inside {
            if let Some(kb) = line.strip_prefix("AnonHugePages:") {
                let kb: usize = kb.trim().trim_end_matches("kB").trim().parse().unwrap_or(0);
                return kb * 1024 >= len.div_ceil(HUGE_BYTES) * HUGE_BYTES;
            }
        }
    }
    false
}

fn fill_bytes(buf: &mut [u8], pattern: FillPattern, prng: &mut Prng) {
    match pattern {
        FillPattern::Random => fill_random_bytes(buf, prng),
        FillPattern::Zeros => buf.fill(0),
        FillPattern::Compressible(pct) => {
            fill_random_bytes(buf, prng);
            let zeros = COMPRESS_CHUNK_BYTES * pct.min(100) as usize / 100;
            for chunk in buf.chunks_mut(COMPRESS_CHUNK_BYTES) {
                let from = chunk.len().saturating_sub(zeros);
                chunk[from..].fill(0);
            }
        }
    }
}

fn fill_random_bytes(buf: &mut [u8], prng: &mut Prng) {
    for chunk in buf.chunks_mut(8) {
        let v = prng.next_u64().to_le_bytes();
        chunk.copy_from_slice(&v[..chunk.len()]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zero_share(b: &[u8]) -> f64 {
        b.iter().filter(|&&x| x == 0).count() as f64 / b.len() as f64
    }

    #[test]
    fn slots_are_aligned_disjoint_and_random() {
        let mut b = IoBuffers::new(3, 8192 + 3, 4096, IoMem::Pages).unwrap();
        assert_eq!(b.backing(), MemBacking::Pages);
        b.fill(FillPattern::Random, &mut Prng::from_seed(1));
        for i in 0..3 {
            assert_eq!(b.slot_ptr(i) as usize % 4096, 0, "slot {i}");
            assert_eq!(b.slot(i).len(), 8195);
            assert!(zero_share(b.slot(i)) < 0.03, "slot {i}");
        }
        b.slot_mut(1).fill(7);
        assert_ne!(b.slot(0), b.slot(2));
        assert!(b.slot(1).iter().all(|&x| x == 7));
    }

    #[test]
    fn fill_patterns_have_the_asked_share_of_zeros() {
        let zeros = |p| {
            let mut b = IoBuffers::new(1, 1 << 16, 4096, IoMem::Pages).unwrap();
            b.fill(p, &mut Prng::from_seed(2));
            zero_share(b.slot(0))
        };
        assert!(zeros(FillPattern::Random) < 0.01);
        assert_eq!(zeros(FillPattern::Zeros), 1.0);
        let half = zeros(FillPattern::Compressible(50));
        assert!((0.5..0.51).contains(&half), "{half}");
        assert!(zeros(FillPattern::Compressible(0)) < 0.01);
    }

    #[test]
    fn huge_buffers_say_what_backs_them() {
        // Whatever the kernel gives, the slots work and the backing is one
        // of the huge kinds or the fallback, never plain pages.
        let mut b = IoBuffers::new(16, 64 << 10, 4096, IoMem::Huge).unwrap();
        assert_ne!(b.backing(), MemBacking::Pages);
        b.fill(FillPattern::Random, &mut Prng::from_seed(3));
        assert!(zero_share(b.slot(15)) < 0.01);
        if b.backing() != MemBacking::ThpPartial {
            // One huge page holds all 16 slots: the region starts on a
            // 2 MiB boundary.
            assert_eq!(b.slot_ptr(0) as usize % HUGE_BYTES, 0);
        }
    }

    #[test]
    fn writes_are_stamped_unique_unless_zeros() {
        let mut b = IoBuffers::new(1, 4096, 4096, IoMem::Pages).unwrap();
        b.fill(FillPattern::Random, &mut Prng::from_seed(4));
        b.stamp(0, 1 << 20, 4096);
        let first = b.slot(0).to_vec();
        b.stamp(0, 1 << 20, 4096);
        assert_ne!(first, b.slot(0), "the same offset written twice differs");
        // Every 512-byte chunk of one write differs from every other.
        let chunks: Vec<&[u8]> = b.slot(0).chunks(512).collect();
        for x in 0..chunks.len() {
            for y in x + 1..chunks.len() {
                assert_ne!(chunks[x], chunks[y], "chunks {x} and {y}");
            }
        }
        b.fill(FillPattern::Zeros, &mut Prng::from_seed(4));
        b.stamp(0, 4096, 4096);
        assert!(
            b.slot(0).iter().all(|&x| x == 0),
            "a zeros fill stays zeros"
        );
    }

    #[test]
    fn mem_parses() {
        assert_eq!(IoMem::parse("pages"), Ok(IoMem::Pages));
        assert_eq!(IoMem::parse("huge"), Ok(IoMem::Huge));
        assert!(IoMem::parse("big")
            .unwrap_err()
            .contains("expected pages or huge"));
    }
}
