//! A hint to the CPU to start loading memory that will be read soon, so that several cache
//! misses overlap instead of following one another (the root buffer's gather at a spill, the
//! filters of a node's lists at a read).

/// Prefetch the cache line holding `data[index]` (nothing if `index` is out of range, or on
/// targets without a prefetch instruction here).
#[inline(always)]
pub fn prefetch<T>(data: &[T], index: usize) {
    #[cfg(target_arch = "x86_64")]
    if index < data.len() {
        // SAFETY: prefetching is only a hint, the address is inside `data`, and SSE is part of
        // the x86_64 baseline.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                data.as_ptr().add(index).cast(),
            )
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (data, index);
}
