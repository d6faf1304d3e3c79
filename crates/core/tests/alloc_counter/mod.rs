//! A counting global allocator for the `*_alloc` tests, shared by them with `mod alloc_counter;`.
//!
//! Counts are kept per thread: the test harness's own threads (the main thread collecting
//! results, other tests running in parallel) allocate concurrently with a measured loop, and a
//! process-wide counter made these tests flaky (a fresh-clone CI run saw 4 foreign
//! allocations in `asym_alloc`). The measured code runs on the test's thread, so the test's
//! own thread's counters are exactly what it must read.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

pub struct Counting;

thread_local! {
    // `const` init and no destructor: accessing these never allocates or registers anything.
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
    static LIVE: Cell<i64> = const { Cell::new(0) };
}

fn count(allocs: u64, live: i64) {
    let _ = ALLOCS.try_with(|c| c.set(c.get() + allocs));
    let _ = LIVE.try_with(|c| c.set(c.get() + live));
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        count(1, l.size() as i64);
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        count(0, -(l.size() as i64));
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        count(1, n as i64 - l.size() as i64);
        unsafe { System.realloc(p, l, n) }
    }
}

#[global_allocator]
static A: Counting = Counting;

/// Allocations (and reallocations) made so far by the calling thread.
pub fn allocs() -> u64 {
    ALLOCS.with(|c| c.get())
}

/// Bytes allocated minus bytes freed by the calling thread so far (memory freed on another
/// thread than the one that allocated it is not matched; the measured code runs on one thread).
#[allow(dead_code)]
pub fn live_bytes() -> i64 {
    LIVE.with(|c| c.get())
}
