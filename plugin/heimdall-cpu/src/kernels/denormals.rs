//! Subnormal floats flushed to zero on the threads that run kernels.
//!
//! x86 cores take a microcode assist of ~100 cycles for a multiplication or FMA whose operand or
//! result is subnormal (|x| < 1.18e-38) unless the thread's MXCSR has FTZ (results flushed) and
//! DAZ (operands read as zero) set. A network can make whole tensors of them: PP-OCRv6's GELU
//! computes `exp(-x²)`, subnormal for |x| > 9.4, and its 768 -> 384 1x1 convolutions after the
//! GELUs took 62 and 154 ms instead of ~1.5 ms at one thread (measured on this project's 2-core
//! Xeon, `heimdall bench --per-op`).
//!
//! What changes in the results: a value below 1.18e-38 in magnitude becomes ±0, a relative
//! change of at most 1.2e-38 / |the output| in any sum that holds a normal term, far below every
//! bound the backend is tested against. aarch64 has one bit for both (FPCR.FZ); other targets
//! are left as they are.
//!
//! [`FlushGuard`] sets the mode on the current thread for a scope and restores the caller's
//! mode when dropped (the inline path runs on the caller's thread, which may be the
//! application's); [`flush_this_thread`] sets it for good (the backend's own pool threads).

/// The thread's floating-point control word (MXCSR on x86_64, FPCR on aarch64).
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn control() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        let mut v: u32 = 0;
        // SAFETY: stores the 32-bit MXCSR into a live local; no other state is touched.
        unsafe {
            std::arch::asm!("stmxcsr [{}]", in(reg) &mut v, options(nostack, preserves_flags));
        }
        u64::from(v)
    }
    #[cfg(target_arch = "aarch64")]
    {
        let v: u64;
        // SAFETY: reads FPCR, which every aarch64 EL0 thread may read.
        unsafe {
            std::arch::asm!("mrs {}, fpcr", out(reg) v, options(nomem, nostack, preserves_flags));
        }
        v
    }
}

/// Writes the thread's floating-point control word.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn set_control(v: u64) {
    #[cfg(target_arch = "x86_64")]
    {
        let v = v as u32;
        // SAFETY: loads a value read from MXCSR with only the FTZ/DAZ bits changed (valid bits,
        // so no #GP); it changes rounding of subnormals on this thread only.
        unsafe {
            std::arch::asm!("ldmxcsr [{}]", in(reg) &v, options(nostack, preserves_flags));
        }
    }
    #[cfg(target_arch = "aarch64")]
    {
        // SAFETY: writes FPCR with only the FZ bit changed from the value read; EL0 may write it.
        unsafe {
            std::arch::asm!("msr fpcr, {}", in(reg) v, options(nomem, nostack, preserves_flags));
        }
    }
}

/// The control-word bits that flush subnormals: FTZ (bit 15) and DAZ (bit 6) of MXCSR, FZ
/// (bit 24) of FPCR.
#[cfg(target_arch = "x86_64")]
const FLUSH: u64 = (1 << 15) | (1 << 6);
#[cfg(target_arch = "aarch64")]
const FLUSH: u64 = 1 << 24;

/// Sets flush-to-zero on the current thread for as long as the thread lives (for threads the
/// backend owns).
pub fn flush_this_thread() {
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    set_control(control() | FLUSH);
}

/// Flush-to-zero on the current thread until dropped, then the thread's previous mode.
#[must_use = "the mode is restored when the guard is dropped"]
pub struct FlushGuard {
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    saved: u64,
}

impl FlushGuard {
    /// Sets flush-to-zero on the current thread, remembering its mode.
    pub fn new() -> FlushGuard {
        #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
        {
            let saved = control();
            if saved & FLUSH != FLUSH {
                set_control(saved | FLUSH);
            }
            FlushGuard { saved }
        }
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        FlushGuard {}
    }
}

impl Default for FlushGuard {
    fn default() -> Self {
        FlushGuard::new()
    }
}

impl Drop for FlushGuard {
    fn drop(&mut self) {
        #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
        if self.saved & FLUSH != FLUSH {
            set_control(self.saved);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The smallest normal f32 halved: subnormal unless flushed. `black_box` keeps the
    /// product from being folded at compile time.
    fn halved_min_positive() -> f32 {
        std::hint::black_box(f32::MIN_POSITIVE) * std::hint::black_box(0.5)
    }

    #[test]
    fn guard_flushes_and_restores() {
        let before = halved_min_positive();
        assert!(before > 0.0 && before.is_subnormal(), "{before}");
        {
            let _g = FlushGuard::new();
            let flushed = halved_min_positive();
            if cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) {
                assert_eq!(flushed, 0.0);
            }
            // Normal values are untouched.
            assert_eq!(
                std::hint::black_box(3.0f32) * std::hint::black_box(0.5),
                1.5
            );
        }
        assert_eq!(
            halved_min_positive(),
            before,
            "the caller's mode is restored"
        );
    }
}
