//! A counting global allocator: how many heap allocations (and bytes) a
//! stretch of code made, across every thread of the process.
//!
//! `stress-test` installs [`CountingAlloc`] as its global allocator so the
//! `cost` scenario can count a served ReadProperty's allocations without a
//! profiler. It forwards every call to the system allocator and adds two
//! relaxed atomic increments per allocation; nothing else changes. The
//! counters only ever grow: read them before and after, and subtract.
//!
//! Must never: allocate itself, or be used for anything but counting.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);

/// The system allocator, counting.
#[derive(Debug, Clone, Copy, Default)]
pub struct CountingAlloc;

// SAFETY: every method forwards to `System` with the caller's own arguments,
// so `System`'s guarantees are the caller's; the counters are atomics and
// allocate nothing.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(layout.size() as u64, Ordering::Relaxed);
        // SAFETY: forwarded unchanged (see above).
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(layout.size() as u64, Ordering::Relaxed);
        // SAFETY: forwarded unchanged (see above).
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged (see above).
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // A reallocation is an allocation: it may move the block.
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(new_size as u64, Ordering::Relaxed);
        // SAFETY: forwarded unchanged (see above).
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Allocations and bytes allocated so far, process-wide.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counts {
    /// Calls to allocate, allocate zeroed and reallocate.
    pub allocations: u64,
    /// Bytes they asked for.
    pub bytes: u64,
}

impl Counts {
    /// The counters now (all zero unless [`CountingAlloc`] is the global
    /// allocator).
    pub fn now() -> Counts {
        Counts { allocations: ALLOCATIONS.load(Ordering::Relaxed), bytes: BYTES.load(Ordering::Relaxed) }
    }

    /// What happened since `earlier`.
    pub fn since(self, earlier: Counts) -> Counts {
        Counts {
            allocations: self.allocations.saturating_sub(earlier.allocations),
            bytes: self.bytes.saturating_sub(earlier.bytes),
        }
    }
}
