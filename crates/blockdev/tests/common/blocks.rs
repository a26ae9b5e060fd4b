//! Verified 4 KiB blocks of the power-cut tests: an O_DIRECT buffer, a
//! self-checking block pattern (magic, block number, generation, checksum)
//! and what a test knows of each block.

#![allow(dead_code)]

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;

pub const BLOCK: usize = 4096;

/// A 4 KiB buffer aligned for O_DIRECT.
pub struct Aligned(*mut u8);
unsafe impl Send for Aligned {}
impl Aligned {
    pub fn new() -> Aligned {
        Aligned(unsafe { alloc_zeroed(Layout::from_size_align(BLOCK, BLOCK).unwrap()) })
    }
    pub fn buf(&mut self) -> &mut [u8] {
        unsafe { std::slice::from_raw_parts_mut(self.0, BLOCK) }
    }
}
impl Drop for Aligned {
    fn drop(&mut self) {
        unsafe { dealloc(self.0, Layout::from_size_align(BLOCK, BLOCK).unwrap()) }
    }
}

fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf29ce484222325u64, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x100000001b3)
    })
}

/// Fills `buf` with version `gen` of `block`, tagged `magic`.
pub fn fill(buf: &mut [u8], magic: &[u8; 8], block: u64, gen: u64) {
    buf[0..8].copy_from_slice(magic);
    buf[8..16].copy_from_slice(&block.to_le_bytes());
    buf[16..24].copy_from_slice(&gen.to_le_bytes());
    let mut x = block.wrapping_mul(0x9E3779B97F4A7C15) ^ gen ^ 0xD1B54A32D192ED03;
    for c in buf[32..].chunks_exact_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        c.copy_from_slice(&x.to_le_bytes());
    }
    let sum = fnv(&buf[32..]) ^ fnv(&buf[0..24]);
    buf[24..32].copy_from_slice(&sum.to_le_bytes());
}

/// The version a block holds: 0 if never written (or trimmed), None if
/// damaged.
pub fn decode(buf: &[u8], magic: &[u8; 8], block: u64) -> Option<u64> {
    if buf.iter().all(|&b| b == 0) {
        return Some(0);
    }
    let sum = u64::from_le_bytes(buf[24..32].try_into().unwrap());
    if &buf[0..8] != magic
        || u64::from_le_bytes(buf[8..16].try_into().unwrap()) != block
        || sum != fnv(&buf[32..]) ^ fnv(&buf[0..24])
    {
        return None;
    }
    Some(u64::from_le_bytes(buf[16..24].try_into().unwrap()))
}

/// Per block (or group): the last acknowledged version and the one in
/// flight.
#[derive(Clone, Copy, Default)]
pub struct Known {
    pub acked: u64,
    pub inflight: Option<u64>,
}

pub fn open_direct(dev: &str) -> File {
    OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(dev)
        .unwrap_or_else(|e| panic!("open {dev}: {e}"))
}
