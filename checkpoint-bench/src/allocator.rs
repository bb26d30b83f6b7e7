//! A counting global allocator, so the bench measures what the committer's held entries cost in
//! bytes instead of computing it: every allocation goes to [`System`] unchanged, and while a
//! [`Window`] is open the bytes allocated and freed are added up.
//!
//! The only unsafe code of the bench: implementing [`GlobalAlloc`] needs it, and every method
//! forwards its arguments to `System` as they came. Counting is off outside a window (one
//! relaxed load per allocation), so the other workloads pay nothing measurable for it.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicIsize, Ordering};

/// Whether a window is open.
static COUNTING: AtomicBool = AtomicBool::new(false);
/// Bytes allocated less bytes freed since the window opened.
static LIVE: AtomicIsize = AtomicIsize::new(0);

/// [`System`], counting live bytes while a [`Window`] is open.
struct CountingAllocator;

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

fn count(bytes: isize) {
    if COUNTING.load(Ordering::Relaxed) {
        LIVE.fetch_add(bytes, Ordering::Relaxed);
    }
}

/// A layout's size as a signed count: a `Layout` never exceeds `isize::MAX` bytes.
fn signed(size: usize) -> isize {
    isize::try_from(size).unwrap_or(isize::MAX)
}

// SAFETY: every method calls the same method of `System` with the caller's arguments, so
// `System` upholds the contract; the counting beside it neither allocates nor touches memory.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged; the caller upholds `GlobalAlloc::alloc`'s contract.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            count(signed(layout.size()));
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as `alloc`.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            count(signed(layout.size()));
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged; `ptr` came from `System` through this allocator.
        unsafe { System.dealloc(ptr, layout) };
        count(-signed(layout.size()));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded unchanged; `ptr` came from `System` through this allocator.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            count(signed(new_size) - signed(layout.size()));
        }
        new
    }
}

/// Counts the bytes the whole process allocates and frees from [`Window::open`] to
/// [`Window::close`]. The count is global (every thread), so open it only while nothing else
/// runs; one window at a time.
#[derive(Debug)]
pub struct Window(());

impl Window {
    /// Starts counting from zero.
    pub fn open() -> Self {
        LIVE.store(0, Ordering::SeqCst);
        COUNTING.store(true, Ordering::SeqCst);
        Self(())
    }

    /// Bytes allocated less bytes freed since the window opened.
    pub fn live_bytes(&self) -> isize {
        LIVE.load(Ordering::SeqCst)
    }

    /// Stops counting and returns the live bytes since the window opened.
    pub fn close(self) -> isize {
        self.live_bytes()
    }
}

impl Drop for Window {
    fn drop(&mut self) {
        COUNTING.store(false, Ordering::SeqCst);
    }
}
