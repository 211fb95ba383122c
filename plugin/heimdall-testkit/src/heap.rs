//! The process's C heap as glibc's allocator counts it (`mallinfo2`): what soak runs sample and
//! memory tests compare before and after a loop. Rust's allocations go through the same heap
//! (the system allocator), and so do the Vulkan driver's host allocations (lavapipe keeps its
//! shaders and device memory there).

/// glibc's counters, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeapStats {
    /// Memory the main and other arenas took from the system (`arena`).
    pub arena: usize,
    /// Allocated in the arenas and not freed (`uordblks`).
    pub in_use: usize,
    /// Freed but kept in the arenas (`fordblks`): fragmentation when it grows.
    pub free: usize,
    /// Large blocks served by `mmap` (`hblkhd`), allocated and not freed.
    pub mmapped: usize,
}

impl HeapStats {
    /// Everything allocated and not freed: the arenas' blocks and the mapped ones.
    pub fn allocated(&self) -> usize {
        self.in_use + self.mmapped
    }
}

/// The counters now; `None` elsewhere than Linux with glibc (≥ 2.33).
pub fn heap_stats() -> Option<HeapStats> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        #[repr(C)]
        struct Mallinfo2 {
            arena: usize,
            ordblks: usize,
            smblks: usize,
            hblks: usize,
            hblkhd: usize,
            usmblks: usize,
            fsmblks: usize,
            uordblks: usize,
            fordblks: usize,
            keepcost: usize,
        }
        unsafe extern "C" {
            fn mallinfo2() -> Mallinfo2;
        }
        // SAFETY: glibc ≥ 2.33 provides `mallinfo2`, which only reads the allocator's counters
        // and returns them by value.
        let m = unsafe { mallinfo2() };
        let _ = (
            m.ordblks, m.smblks, m.hblks, m.usmblks, m.fsmblks, m.keepcost,
        );
        Some(HeapStats {
            arena: m.arena,
            in_use: m.uordblks,
            free: m.fordblks,
            mmapped: m.hblkhd,
        })
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_allocation_shows_and_its_free_too() {
        // The counters are process-wide and the other tests of this binary allocate and free
        // a few MiB on their own threads meanwhile (the calibration photos: ~4 MiB), so the
        // allocation is far larger than that noise and the slack is 16 MiB.
        const SIZE: usize = 64 << 20;
        const SLACK: usize = 16 << 20;
        let Some(before) = heap_stats() else { return };
        let v: Vec<u8> = vec![1; SIZE];
        let during = heap_stats().expect("stats");
        assert!(
            during.allocated() + SLACK >= before.allocated() + SIZE,
            "{before:?} {during:?}"
        );
        drop(std::hint::black_box(v));
        let after = heap_stats().expect("stats");
        assert!(
            after.allocated() + SIZE <= during.allocated() + SLACK,
            "{during:?} {after:?}"
        );
    }
}
