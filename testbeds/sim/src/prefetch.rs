//! Cache prefetch hints: the event loop asks for the state of the next few events
//! while it handles the current one, and the calendar queue for its next bucket. A
//! hint never changes a result; on other architectures than x86_64 it does nothing.

/// Ask the CPU to bring `x`'s cache line in (a hint: no effect on results).
#[inline(always)]
pub(crate) fn prefetch<T>(x: &T) {
    prefetch_ptr((x as *const T).cast::<u8>());
}

/// [`prefetch`] the lines of `x`'s first and last bytes: all of it when it is at most 64
/// bytes long (a 48-byte packet straddles two lines at half the offsets it can have).
#[inline(always)]
pub(crate) fn prefetch_span<T>(x: &T) {
    let base = (x as *const T).cast::<u8>();
    prefetch_ptr(base);
    prefetch_ptr(base.wrapping_add(std::mem::size_of::<T>().saturating_sub(1)));
}

/// [`prefetch`] the cache lines of bytes `from..to` of `x`.
#[inline(always)]
pub(crate) fn prefetch_bytes<T>(x: &T, from: usize, to: usize) {
    let base = (x as *const T).cast::<u8>();
    for off in (from..to.min(std::mem::size_of::<T>())).step_by(64) {
        prefetch_ptr(base.wrapping_add(off));
    }
}

/// [`prefetch`] every cache line of `x` (a flow's state spans several).
#[inline(always)]
pub(crate) fn prefetch_all<T>(x: &T) {
    prefetch_bytes(x, 0, std::mem::size_of::<T>());
}

/// [`prefetch`] the cache lines of the first `max_lines` × 64 bytes of a slice.
#[inline(always)]
pub(crate) fn prefetch_slice<T>(x: &[T], max_lines: usize) {
    let base = x.as_ptr().cast::<u8>();
    let bytes = std::mem::size_of_val(x).min(max_lines * 64);
    for off in (0..bytes).step_by(64) {
        prefetch_ptr(base.wrapping_add(off));
    }
}

/// The prefetch instruction for the line holding address `p` (never dereferenced).
#[inline(always)]
fn prefetch_ptr(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: PREFETCHT0 only hints the cache hierarchy; it never faults (whatever the
    // address) and reads no value, and SSE is part of the x86_64 baseline. Callers pass
    // addresses inside a live value anyway.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
