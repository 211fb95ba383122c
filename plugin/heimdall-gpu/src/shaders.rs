//! The WGSL kernel files of `shaders/` (embedded at build time) and a catalogue of every
//! composed variant, used by the naga validation test.

use heimdall_ir::UnaryKind;

use crate::precision::Precision;
use crate::wgsl::{Access, BindingDecl, EpilogueAct, EpilogueDecl, KernelSource};

macro_rules! kernels {
    ($($name:literal),* $(,)?) => {
        /// Names of every kernel file in `shaders/`.
        pub const KERNELS: &[&str] = &[$($name),*];

        /// The body of kernel `name` (the file `shaders/<name>.wgsl`).
        pub fn source(name: &str) -> Option<&'static str> {
            match name {
                $($name => Some(include_str!(concat!("../../../shaders/", $name, ".wgsl"))),)*
                _ => None,
            }
        }
    };
}

kernels!(
    "conv1x1",
    "conv1x1_splitk",
    "conv2d",
    "depthwise",
    "transpose_conv",
    "fully_connected",
    "pool",
    "window_reduce",
    "elementwise",
    "resize_bilinear",
    "depth_to_space",
    "gather",
    "nary",
    "instance_norm",
    "resize_taps",
    "pad_with",
    "softmax",
    "matmul",
    "reduce",
    "transpose",
    "space_depth",
    "landmarks_to_matrix",
    "transform_tensor_bilinear",
    "transform_landmarks",
    "preprocess",
);

/// Every kernel in every precision with representative constants and epilogues: what the
/// backend can compose. Used to validate all shaders without a GPU.
pub fn catalogue() -> Vec<KernelSource> {
    let mut out = Vec::new();
    let epilogues = |p: Precision| {
        [
            EpilogueDecl::NONE,
            EpilogueDecl {
                residual: Some(p),
                act: EpilogueAct::Prelu,
            },
            EpilogueDecl {
                residual: None,
                act: EpilogueAct::Unary(UnaryKind::HardSwish),
            },
            EpilogueDecl {
                residual: Some(p),
                act: EpilogueAct::Unary(UnaryKind::Tanh),
            },
            EpilogueDecl {
                residual: None,
                act: EpilogueAct::Unary(UnaryKind::Logistic),
            },
        ]
    };
    for p in Precision::ALL {
        for ep in epilogues(p) {
            out.push(crate::kernels::conv::conv1x1_source(p, p, p, 4, 2, ep));
            out.push(crate::kernels::conv::conv1x1_splitk_source(
                p, p, p, 64, 16, ep,
            ));
            out.push(crate::kernels::conv::conv2d_source(p, p, p, 2, 2, ep));
            out.push(crate::kernels::depthwise::source(
                p,
                p,
                [3, 3],
                [2, 2],
                [1, 1],
                4,
                ep,
            ));
            out.push(crate::kernels::transpose_conv::source(p, p, ep));
            out.push(crate::kernels::fully_connected::source(p, p, ep));
            for op in 0..5 {
                out.push(crate::kernels::elementwise::source(op, p, p, p, ep));
            }
        }
        out.push(crate::kernels::depthwise::source(
            p,
            p,
            [5, 5],
            [1, 1],
            [1, 1],
            4,
            EpilogueDecl::NONE,
        ));
        for mode in 0..2 {
            out.push(crate::kernels::pool::source(
                mode,
                p,
                Precision::F32,
                EpilogueDecl::NONE,
            ));
            out.push(crate::kernels::pool::window_reduce_source(
                mode,
                p,
                Precision::F32,
                EpilogueDecl::NONE,
            ));
        }
        out.push(crate::kernels::resize::source(p, p));
        out.push(crate::kernels::depth_to_space::source(p, p));
        for keep in [false, true] {
            out.push(crate::kernels::gather::source(p, p, keep));
        }
        out.extend(crate::kernels::onnx::catalogue(p));
        out.extend(crate::kernels::mediapipe::catalogue(p));
        for srgb in [false, true] {
            out.push(crate::preprocess::source(p, srgb));
        }
    }
    // Mixed precisions: an f16 kernel writing an f32 graph output.
    out.push(crate::kernels::conv::conv1x1_source(
        Precision::F16,
        Precision::F16,
        Precision::F32,
        1,
        1,
        EpilogueDecl::NONE,
    ));
    out
}

/// A binding read by a kernel.
pub(crate) fn read(name: &'static str, precision: Precision) -> BindingDecl {
    BindingDecl {
        name,
        access: Access::Read,
        precision,
    }
}

/// A binding written by a kernel.
pub(crate) fn write(name: &'static str, precision: Precision) -> BindingDecl {
    BindingDecl {
        name,
        access: Access::Write,
        precision,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every composed variant parses and validates with naga; no GPU needed.
    #[test]
    fn every_shader_validates_with_naga() {
        let all = catalogue();
        assert!(all.len() > 100, "catalogue has {} variants", all.len());
        let mut names = std::collections::BTreeSet::new();
        for k in &all {
            let src = k.compose().expect("compose");
            crate::wgsl::validate(k.name, &src, k.uses_f16())
                .unwrap_or_else(|e| panic!("{e}\n--- source ---\n{src}"));
            names.insert(k.name);
        }
        for name in KERNELS {
            assert!(
                names.contains(name),
                "kernel {name} is not in the catalogue"
            );
        }
    }

    /// The validator is not vacuous: a broken kernel and f16 without the capability fail.
    #[test]
    fn validation_rejects_bad_shaders() {
        assert!(crate::wgsl::validate("bad", "fn main() { let x: u32 = 1.5; }", false).is_err());
        let f16 = crate::kernels::gather::source(Precision::F16, Precision::F16, false);
        let src = f16.compose().unwrap();
        assert!(crate::wgsl::validate("f16", &src, false).is_err());
        if let Err(e) = crate::wgsl::validate("f16", &src, true) {
            panic!("{e}");
        }
    }
}
