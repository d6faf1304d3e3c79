//! TCP sequence numbers with wrapping (RFC 1982 style) comparison.

use core::cmp::Ordering;
use core::fmt;
use core::ops::{Add, AddAssign, Sub};

/// A 32-bit TCP sequence number. Arithmetic wraps; ordering is defined relative
/// to a 2^31 window, so `a < b` means "b is after a" as TCP understands it.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize)]
pub struct SeqNum(pub u32);

impl SeqNum {
    /// Signed distance `self - other` in the wrapping space.
    #[inline]
    pub fn diff(self, other: SeqNum) -> i32 {
        self.0.wrapping_sub(other.0) as i32
    }
    #[inline]
    pub fn max(self, other: SeqNum) -> SeqNum {
        if self >= other {
            self
        } else {
            other
        }
    }
    #[inline]
    pub fn min(self, other: SeqNum) -> SeqNum {
        if self <= other {
            self
        } else {
            other
        }
    }
}

impl PartialOrd for SeqNum {
    #[inline]
    fn partial_cmp(&self, other: &SeqNum) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for SeqNum {
    #[inline]
    fn cmp(&self, other: &SeqNum) -> Ordering {
        self.diff(*other).cmp(&0)
    }
}

impl Add<u32> for SeqNum {
    type Output = SeqNum;
    #[inline]
    fn add(self, rhs: u32) -> SeqNum {
        SeqNum(self.0.wrapping_add(rhs))
    }
}
impl AddAssign<u32> for SeqNum {
    #[inline]
    fn add_assign(&mut self, rhs: u32) {
        self.0 = self.0.wrapping_add(rhs);
    }
}
impl Sub<u32> for SeqNum {
    type Output = SeqNum;
    #[inline]
    fn sub(self, rhs: u32) -> SeqNum {
        SeqNum(self.0.wrapping_sub(rhs))
    }
}
/// `a - b` as a signed distance in bytes.
impl Sub<SeqNum> for SeqNum {
    type Output = i32;
    #[inline]
    fn sub(self, rhs: SeqNum) -> i32 {
        self.diff(rhs)
    }
}
impl fmt::Debug for SeqNum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Seq({})", self.0)
    }
}
impl fmt::Display for SeqNum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn wraps() {
        let a = SeqNum(u32::MAX - 10);
        let b = a + 20;
        assert!(a < b);
        assert_eq!(b.0, 9);
        assert_eq!(b - a, 20);
        assert_eq!(a - b, -20);
        assert_eq!(a.max(b), b);
    }
}
