//! Simulated or real monotonic time, in nanoseconds since an arbitrary origin.
//!
//! `core` never reads a clock: drivers pass `now` in.

use core::fmt;
use core::ops::{Add, AddAssign, Sub};

/// A point in time (ns since the driver's origin).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, serde::Serialize, serde::Deserialize)]
pub struct Time(pub u64);

/// A span of time (ns).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, serde::Serialize, serde::Deserialize)]
pub struct Dur(pub u64);

impl Time {
    pub const ZERO: Time = Time(0);
    pub const MAX: Time = Time(u64::MAX);
    #[inline]
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 * 1e-9
    }
    #[inline]
    pub fn from_secs_f64(s: f64) -> Time {
        Time((s * 1e9).round() as u64)
    }
    /// `self - earlier`, saturating at zero.
    #[inline]
    pub fn since(self, earlier: Time) -> Dur {
        Dur(self.0.saturating_sub(earlier.0))
    }
}

impl Dur {
    pub const ZERO: Dur = Dur(0);
    pub const MAX: Dur = Dur(u64::MAX);
    #[inline]
    pub const fn from_nanos(n: u64) -> Dur {
        Dur(n)
    }
    #[inline]
    pub const fn from_micros(n: u64) -> Dur {
        Dur(n * 1_000)
    }
    #[inline]
    pub const fn from_millis(n: u64) -> Dur {
        Dur(n * 1_000_000)
    }
    #[inline]
    pub const fn from_secs(n: u64) -> Dur {
        Dur(n * 1_000_000_000)
    }
    #[inline]
    pub fn from_secs_f64(s: f64) -> Dur {
        Dur((s * 1e9).round().max(0.0) as u64)
    }
    #[inline]
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 * 1e-9
    }
    #[inline]
    pub fn as_nanos(self) -> u64 {
        self.0
    }
    /// Time to serialise `bytes` at `bits_per_sec`, rounded up to a whole ns.
    #[inline]
    pub fn tx_time(bytes: usize, bits_per_sec: u64) -> Dur {
        // u64 suffices below ~2.3 GB per packet; u128 division is several times slower.
        match (bytes as u64).checked_mul(8_000_000_000) {
            Some(bits) => Dur(bits.div_ceil(bits_per_sec)),
            None => Dur((bytes as u128 * 8_000_000_000).div_ceil(bits_per_sec as u128) as u64),
        }
    }
}

impl Add<Dur> for Time {
    type Output = Time;
    #[inline]
    fn add(self, d: Dur) -> Time {
        Time(self.0.saturating_add(d.0))
    }
}
impl AddAssign<Dur> for Time {
    #[inline]
    fn add_assign(&mut self, d: Dur) {
        self.0 = self.0.saturating_add(d.0);
    }
}
impl Sub<Dur> for Time {
    type Output = Time;
    #[inline]
    fn sub(self, d: Dur) -> Time {
        Time(self.0.saturating_sub(d.0))
    }
}
impl Add for Dur {
    type Output = Dur;
    #[inline]
    fn add(self, d: Dur) -> Dur {
        Dur(self.0.saturating_add(d.0))
    }
}
impl Sub for Dur {
    type Output = Dur;
    #[inline]
    fn sub(self, d: Dur) -> Dur {
        Dur(self.0.saturating_sub(d.0))
    }
}
impl fmt::Debug for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.6}s", self.as_secs_f64())
    }
}
impl fmt::Debug for Dur {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.6}s", self.as_secs_f64())
    }
}
