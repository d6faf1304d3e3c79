//! Send buffer: a byte count, plus the content as chunks only when `carry_payload` is on.

use bytes::{Bytes, BytesMut};
use std::collections::VecDeque;

/// Deterministic content of byte `off` of a stream written with [`super::Connection::write`]
/// when `carry_payload` is on.
#[inline]
pub fn pattern_byte(off: u64) -> u8 {
    (off.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as u8 ^ (off as u8)
}

/// `len` bytes of the deterministic pattern starting at stream offset `start`.
pub fn pattern_bytes(start: u64, len: usize) -> Vec<u8> {
    (0..len as u64).map(|i| pattern_byte(start + i)).collect()
}

#[derive(Clone, Debug)]
enum Chunk {
    Pattern(u64),
    Data(Bytes),
}

impl Chunk {
    fn len(&self) -> u64 {
        match self {
            Chunk::Pattern(n) => *n,
            Chunk::Data(b) => b.len() as u64,
        }
    }
}

#[derive(Clone, Debug, Default)]
pub(crate) struct SendBuf {
    carry: bool,
    /// (stream offset of first byte, content), contiguous, starting at or below `una`.
    chunks: VecDeque<(u64, Chunk)>,
    /// Total bytes written by the application.
    pub written: u64,
}

impl SendBuf {
    pub fn new(carry: bool) -> Self {
        SendBuf { carry, chunks: VecDeque::new(), written: 0 }
    }

    pub fn write(&mut self, n: u64) {
        if n == 0 {
            return;
        }
        if self.carry {
            match self.chunks.back_mut() {
                Some((_, Chunk::Pattern(len))) => *len += n,
                _ => self.chunks.push_back((self.written, Chunk::Pattern(n))),
            }
        }
        self.written += n;
    }

    pub fn write_bytes(&mut self, b: Bytes) {
        let n = b.len() as u64;
        if n == 0 {
            return;
        }
        if self.carry {
            self.chunks.push_back((self.written, Chunk::Data(b)));
        }
        self.written += n;
    }

    /// Drop content below `una` (acknowledged).
    pub fn release(&mut self, una: u64) {
        while let Some((s, c)) = self.chunks.front() {
            if s + c.len() <= una {
                self.chunks.pop_front();
            } else {
                break;
            }
        }
    }

    /// Content of `[a, b)` (only with `carry_payload`; zero-copy when inside one chunk).
    pub fn payload(&self, a: u64, b: u64) -> Option<Bytes> {
        if !self.carry || a >= b {
            return None;
        }
        let mut i = self.chunks.partition_point(|(s, _)| *s <= a).saturating_sub(1);
        // Fast path: one chunk.
        if let Some((s, c)) = self.chunks.get(i) {
            if *s <= a && b <= s + c.len() {
                return Some(match c {
                    Chunk::Data(d) => d.slice((a - s) as usize..(b - s) as usize),
                    Chunk::Pattern(_) => Bytes::from(pattern_bytes(a, (b - a) as usize)),
                });
            }
        }
        let mut out = BytesMut::with_capacity((b - a) as usize);
        let mut pos = a;
        while pos < b {
            let (s, c) = self.chunks.get(i)?;
            let end = (s + c.len()).min(b);
            if end > pos {
                match c {
                    Chunk::Data(d) => out.extend_from_slice(&d[(pos - s) as usize..(end - s) as usize]),
                    Chunk::Pattern(_) => out.extend_from_slice(&pattern_bytes(pos, (end - pos) as usize)),
                }
                pos = end;
            }
            i += 1;
        }
        Some(out.freeze())
    }
}
