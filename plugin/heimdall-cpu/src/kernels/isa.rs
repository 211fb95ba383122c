//! The instruction sets the CPU kernels are compiled for, and which of them this CPU runs.
//!
//! Every hot kernel (the matrix product behind convolutions and fully-connected layers, the
//! depthwise convolution, the epilogues) has a portable version in plain Rust, the reference,
//! and SIMD versions picked at run time with `is_x86_feature_detected!` /
//! `is_aarch64_feature_detected!`. [`Isa::detect`] is what a kernel packed with `new` uses;
//! the `with_isa` constructors (`PackedConv::with_isa`, `PackedDepthwise::with_isa`,
//! `Epilogue::apply_with`) take another one, for tests and benchmarks that compare them.
//!
//! What differs between them: the SIMD kernels sum products with fused multiply-adds, the
//! portable ones multiply then add, in the same order; so a SIMD result is within rounding of
//! the portable one, and two SIMD ISAs give the same bits (AVX2, AVX-512 and NEON fuse the same
//! operations in the same order). The epilogues have no multiply-add and give the same bits in
//! every ISA.

use std::fmt;

/// An instruction set of the CPU kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Isa {
    /// Plain Rust for any CPU (the reference: products and sums unfused).
    Portable,
    /// x86-64 with AVX2 and FMA.
    Avx2,
    /// x86-64 with AVX-512F.
    Avx512,
    /// aarch64 Advanced SIMD (NEON), f32 arithmetic with fused multiply-adds.
    Neon,
}

impl Isa {
    /// Every variant, portable first.
    pub const ALL: [Isa; 4] = [Isa::Portable, Isa::Avx2, Isa::Avx512, Isa::Neon];

    /// The widest instruction set this CPU runs (what the kernels use by default).
    pub fn detect() -> Isa {
        #[cfg(target_arch = "x86_64")]
        {
            if Isa::Avx512.is_available() {
                return Isa::Avx512;
            }
            if Isa::Avx2.is_available() {
                return Isa::Avx2;
            }
        }
        #[cfg(target_arch = "aarch64")]
        {
            if Isa::Neon.is_available() {
                return Isa::Neon;
            }
        }
        Isa::Portable
    }

    /// Whether this CPU runs kernels of this instruction set.
    pub fn is_available(self) -> bool {
        match self {
            Isa::Portable => true,
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => {
                std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("fma")
            }
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => std::arch::is_x86_feature_detected!("avx512f"),
            #[cfg(target_arch = "aarch64")]
            Isa::Neon => std::arch::is_aarch64_feature_detected!("neon"),
            #[allow(unreachable_patterns)]
            _ => false,
        }
    }

    /// The instruction sets this CPU runs, portable first.
    pub fn available() -> Vec<Isa> {
        Isa::ALL.into_iter().filter(|i| i.is_available()).collect()
    }

    /// `self` if this CPU runs it, else [`Isa::Portable`] (what a kernel asked for an
    /// instruction set the CPU lacks runs).
    pub fn or_portable(self) -> Isa {
        if self.is_available() {
            self
        } else {
            Isa::Portable
        }
    }

    /// A short lower-case name (`portable`, `avx2`, `avx512`, `neon`).
    pub fn name(self) -> &'static str {
        match self {
            Isa::Portable => "portable",
            Isa::Avx2 => "avx2",
            Isa::Avx512 => "avx512",
            Isa::Neon => "neon",
        }
    }
}

impl fmt::Display for Isa {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether this CPU has half-precision arithmetic in its vector unit (aarch64 FEAT_FP16: `fmla`
/// on eight f16 lanes), which the f16 kernels need (see `crate::kernels::gemm`).
pub fn has_f16_arithmetic() -> bool {
    #[cfg(target_arch = "aarch64")]
    {
        std::arch::is_aarch64_feature_detected!("fp16")
    }
    #[cfg(not(target_arch = "aarch64"))]
    {
        false
    }
}

/// Runs `f` compiled for the widest vectors this CPU has: on x86-64 inside a function with
/// AVX-512F or AVX2 enabled (the closure, called once, is inlined into it, with the loops it
/// contains), elsewhere as it is (aarch64's baseline has NEON). For element-wise loops written
/// to vectorise: without fused multiply-adds they give the same bits in every ISA.
#[inline(always)]
pub(crate) fn widest<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512F (checked just above).
            return unsafe { with_avx512(f) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2 (checked just above).
            return unsafe { with_avx2(f) };
        }
    }
    f()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn with_avx512<R>(f: impl FnOnce() -> R) -> R {
    f()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn with_avx2<R>(f: impl FnOnce() -> R) -> R {
    f()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On aarch64 every core has NEON (the ABI requires it): the kernels must pick it. On
    /// x86-64 the widest of AVX-512 and AVX2 the CPU has.
    #[test]
    fn detect_picks_the_widest_simd() {
        let isa = Isa::detect();
        assert!(isa.is_available());
        #[cfg(target_arch = "aarch64")]
        assert_eq!(isa, Isa::Neon, "aarch64 without NEON selected");
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx512f") {
            assert_eq!(isa, Isa::Avx512);
        }
        assert!(Isa::available().contains(&Isa::Portable));
        assert!(Isa::Neon.or_portable().is_available());
    }
}
