//! WGSL composition: every kernel in `shaders/*.wgsl` is written once against generated symbols
//! (constants, per-binding accessors `NAME_load`, `NAME_load1`, `NAME_store`, an `epilogue`
//! function and small helpers); this module generates them for each binding's precision.
//!
//! Binding 0 is the kernel's `params`, declared from its Rust struct ([`crate::params`]) or, for
//! a kernel without one, in the kernel file; a uniform, or a read-only storage buffer where the
//! device needs it ([`crate::params::ParamsSpace`]). Bindings 1.. are the kernel's buffers in
//! declaration order, then the epilogue's (`res`, `alpha`).

use std::fmt::Write as _;

use heimdall_ir::UnaryKind;

use crate::error::GpuError;
use crate::params::{ParamsLayout, ParamsSpace, ShaderParams};
use crate::precision::Precision;

/// Work-group size of every kernel (≤ 256, the WebGPU default limit).
pub const WORKGROUP_SIZE: u32 = 64;

/// How a kernel accesses a binding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// `var<storage, read>`: `NAME_load(i)`, `NAME_load1(e)`.
    Read,
    /// `var<storage, read_write>`, written only: `NAME_store(i, v)`.
    Write,
    /// `var<storage, read_write>`, read and written.
    ReadWrite,
    /// No binding: `NAME_load` and `NAME_load1` return zero (an optional input that is absent).
    Stub,
}

/// One buffer binding of a kernel: an array of vec4 in some precision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BindingDecl {
    /// Name used for the generated accessors.
    pub name: &'static str,
    /// Access mode.
    pub access: Access,
    /// Storage precision.
    pub precision: Precision,
}

impl BindingDecl {
    /// A binding the kernel reads.
    pub fn read(name: &'static str, precision: Precision) -> Self {
        BindingDecl {
            name,
            access: Access::Read,
            precision,
        }
    }

    /// A binding the kernel writes.
    pub fn write(name: &'static str, precision: Precision) -> Self {
        BindingDecl {
            name,
            access: Access::Write,
            precision,
        }
    }

    /// A binding the kernel reads and writes.
    pub fn read_write(name: &'static str, precision: Precision) -> Self {
        BindingDecl {
            name,
            access: Access::ReadWrite,
            precision,
        }
    }

    /// No binding: the accessors of an absent optional input, reading zeros.
    pub fn stub(name: &'static str, precision: Precision) -> Self {
        BindingDecl {
            name,
            access: Access::Stub,
            precision,
        }
    }
}

/// The activation applied in a kernel's epilogue.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum EpilogueAct {
    /// Identity.
    None,
    /// A unary function.
    Unary(UnaryKind),
    /// Per-channel PReLU with alphas from the `alpha` binding (f32, one vec4 per slice).
    Prelu,
}

/// The fused epilogue of a kernel: `act(v + res[i])`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EpilogueDecl {
    /// Precision of the residual tensor, if there is one.
    pub residual: Option<Precision>,
    /// The activation.
    pub act: EpilogueAct,
}

impl EpilogueDecl {
    /// No residual, no activation.
    pub const NONE: EpilogueDecl = EpilogueDecl {
        residual: None,
        act: EpilogueAct::None,
    };

    /// Representative epilogues of kernels storing precision `p`, for the catalogue of composed
    /// variants: none, residual + PReLU, hard-swish, residual + tanh, logistic.
    pub fn representative(p: Precision) -> [EpilogueDecl; 5] {
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
    }
}

/// Everything needed to compose one kernel's WGSL source.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelSource {
    /// Kernel name (the file name in `shaders/` without `.wgsl`).
    pub name: &'static str,
    /// Baked `u32` constants (block sizes, kernel sizes, modes).
    pub consts: Vec<(&'static str, u32)>,
    /// Buffer bindings, from binding 1.
    pub bindings: Vec<BindingDecl>,
    /// Fused epilogue; its bindings follow the kernel's.
    pub epilogue: EpilogueDecl,
    /// Extra generated WGSL (e.g. the `combine` function of elementwise ops).
    pub extra: String,
    /// The uniform parameters' layout, declared into the source; `None` when the kernel file
    /// declares its own `params`.
    pub params: Option<ParamsLayout>,
    /// The kernel computes in f16 ([`crate::arith::Arith`]): `enable f16;` whatever its
    /// bindings store.
    pub f16_arith: bool,
    /// Whether its pipeline zeroes work-group memory at the start of every work group (WebGPU's
    /// default, wgpu's `zero_initialize_workgroup_memory`); `false` only for kernels that write
    /// every work-group element before a barrier and read it after.
    pub zero_init_workgroup: bool,
    /// The kernel uses cooperative matrices (`enable wgpu_cooperative_matrix;`, [`crate::coop`]).
    pub coop_matrix: bool,
}

/// The directive of sources using cooperative matrices.
pub const COOP_ENABLE: &str = "enable wgpu_cooperative_matrix;";

impl KernelSource {
    /// A kernel with no constants, no epilogue and no extra code.
    pub fn new(name: &'static str, bindings: Vec<BindingDecl>) -> Self {
        KernelSource {
            name,
            consts: Vec::new(),
            bindings,
            epilogue: EpilogueDecl::NONE,
            extra: String::new(),
            params: None,
            f16_arith: false,
            zero_init_workgroup: true,
            coop_matrix: false,
        }
    }

    /// This kernel with its uniform parameters declared from `P`.
    pub fn with_params<P: ShaderParams>(mut self) -> Self {
        self.params = Some(P::LAYOUT);
        self
    }

    /// Number of storage buffers bound (kernel and epilogue), the parameters not counted.
    pub fn storage_bindings(&self) -> usize {
        let own = self
            .bindings
            .iter()
            .filter(|b| b.access != Access::Stub)
            .count();
        own + usize::from(self.epilogue.residual.is_some())
            + usize::from(self.epilogue.act == EpilogueAct::Prelu)
    }

    /// Whether the source needs `enable f16;`.
    pub fn uses_f16(&self) -> bool {
        self.f16_arith
            || self
                .bindings
                .iter()
                .any(|b| b.access != Access::Stub && b.precision == Precision::F16)
            || self.epilogue.residual == Some(Precision::F16)
    }

    /// The complete WGSL source: generated prelude, then the kernel file, with the parameters
    /// (binding 0) in `space` ([`crate::GpuContext::params_space`]); a kernel file that declares
    /// its own `params` declares them as a uniform, and is moved to `space` here.
    pub fn compose(&self, space: ParamsSpace) -> Result<String, GpuError> {
        let body = crate::sources::source(self.name).ok_or_else(|| GpuError::Shader {
            name: self.name.into(),
            message: "no such kernel in shaders/".into(),
        })?;
        let mut s = String::with_capacity(body.len() + 2048);
        if self.uses_f16() {
            s.push_str("enable f16;\n");
        }
        if self.coop_matrix {
            s.push_str(COOP_ENABLE);
            s.push('\n');
        }
        if !s.is_empty() {
            s.push('\n');
        }
        s.push_str("// ---- generated by heimdall-gpu (src/wgsl.rs) ----\n");
        let _ = writeln!(s, "const WG: u32 = {WORKGROUP_SIZE}u;");
        for (name, value) in &self.consts {
            let _ = writeln!(s, "const {name}: u32 = {value}u;");
        }
        if let Some(p) = &self.params {
            s.push_str(&p.wgsl(space));
        }
        s.push_str(HELPERS);
        let mut binding = 1;
        let f16 = self.uses_f16();
        for b in &self.bindings {
            accessors(&mut s, b, &mut binding, f16);
        }
        epilogue(&mut s, &self.epilogue, &mut binding)?;
        s.push_str(&self.extra);
        s.push_str("// ---- kernel ----\n");
        let own = ParamsSpace::Uniform.declaration();
        if space != ParamsSpace::Uniform && self.params.is_none() && body.contains(own) {
            s.push_str(&body.replace(own, space.declaration()));
        } else {
            s.push_str(body);
        }
        Ok(s)
    }
}

const HELPERS: &str = "
fn linear_index(wg: vec3<u32>, nwg: vec3<u32>, lid: u32) -> u32 {
    return (wg.x + wg.y * nwg.x) * WG + lid;
}

// Zeroes the lanes of `slice` beyond `channels`: PHWC4 padding stays zero.
fn keep_lanes(v: vec4<f32>, slice: u32, channels: u32) -> vec4<f32> {
    let c = vec4<u32>(0u, 1u, 2u, 3u) + vec4<u32>(slice * 4u);
    return select(vec4<f32>(0.0), v, c < vec4<u32>(channels));
}
";

/// Generates a binding's declaration and accessors; in a source with `enable f16;` (`f16`),
/// also `NAME_load_h(i) -> vec4<f16>` for the kernels computing in f16.
fn accessors(s: &mut String, b: &BindingDecl, binding: &mut u32, f16: bool) {
    let n = b.name;
    if b.access == Access::Stub {
        let _ = writeln!(
            s,
            "fn {n}_load(i: u32) -> vec4<f32> {{ return vec4<f32>(0.0); }}\n\
             fn {n}_load1(e: u32) -> f32 {{ return 0.0; }}"
        );
        if f16 {
            let _ = writeln!(
                s,
                "fn {n}_load_h(i: u32) -> vec4<f16> {{ return vec4<f16>(0.0); }}"
            );
        }
        return;
    }
    let mode = match b.access {
        Access::Read => "read",
        _ => "read_write",
    };
    let elem = match b.precision {
        Precision::F32 => "vec4<f32>",
        Precision::F16 => "vec4<f16>",
        Precision::PackedF16 => "vec2<u32>",
    };
    let _ = writeln!(
        s,
        "@group(0) @binding({binding}) var<storage, {mode}> {n}_buf: array<{elem}>;"
    );
    *binding += 1;
    if b.access != Access::Write {
        let (load, load1) = match b.precision {
            Precision::F32 => (
                format!("return {n}_buf[i];"),
                format!("return {n}_buf[e >> 2u][e & 3u];"),
            ),
            Precision::F16 => (
                format!("return vec4<f32>({n}_buf[i]);"),
                format!("return f32({n}_buf[e >> 2u][e & 3u]);"),
            ),
            Precision::PackedF16 => (
                format!(
                    "let p = {n}_buf[i]; return vec4<f32>(unpack2x16float(p.x), unpack2x16float(p.y));"
                ),
                format!("return unpack2x16float({n}_buf[e >> 2u][(e >> 1u) & 1u])[e & 1u];"),
            ),
        };
        let _ = writeln!(
            s,
            "fn {n}_load(i: u32) -> vec4<f32> {{ {load} }}\n\
             fn {n}_load1(e: u32) -> f32 {{ {load1} }}"
        );
        if f16 {
            let load_h = match b.precision {
                Precision::F16 => format!("return {n}_buf[i];"),
                _ => format!("return vec4<f16>({n}_load(i));"),
            };
            let _ = writeln!(s, "fn {n}_load_h(i: u32) -> vec4<f16> {{ {load_h} }}");
        }
    }
    if b.access != Access::Read {
        let store = match b.precision {
            Precision::F32 => format!("{n}_buf[i] = v;"),
            Precision::F16 => format!("{n}_buf[i] = vec4<f16>(v);"),
            Precision::PackedF16 => {
                format!("{n}_buf[i] = vec2<u32>(pack2x16float(v.xy), pack2x16float(v.zw));")
            }
        };
        let _ = writeln!(s, "fn {n}_store(i: u32, v: vec4<f32>) {{ {store} }}");
    }
}

fn epilogue(s: &mut String, ep: &EpilogueDecl, binding: &mut u32) -> Result<(), GpuError> {
    if let Some(p) = ep.residual {
        accessors(
            s,
            &BindingDecl {
                name: "res",
                access: Access::Read,
                precision: p,
            },
            binding,
            false,
        );
    }
    if ep.act == EpilogueAct::Prelu {
        accessors(
            s,
            &BindingDecl {
                name: "alpha",
                access: Access::Read,
                precision: Precision::F32,
            },
            binding,
            false,
        );
    }
    s.push_str("// Fused epilogue: act(v + residual); i = output vec4 index, slice = its slice.\n");
    s.push_str("fn epilogue(v: vec4<f32>, i: u32, slice: u32) -> vec4<f32> {\n    var r = v;\n");
    if ep.residual.is_some() {
        s.push_str("    r = r + res_load(i);\n");
    }
    let act = match ep.act {
        EpilogueAct::None => "r",
        EpilogueAct::Unary(UnaryKind::Relu) => "max(r, vec4<f32>(0.0))",
        EpilogueAct::Unary(UnaryKind::Relu6) => "min(max(r, vec4<f32>(0.0)), vec4<f32>(6.0))",
        EpilogueAct::Unary(UnaryKind::ReluN1To1) => "clamp(r, vec4<f32>(-1.0), vec4<f32>(1.0))",
        EpilogueAct::Unary(UnaryKind::Logistic) => "1.0 / (1.0 + exp(-r))",
        EpilogueAct::Unary(UnaryKind::HardSwish) => {
            "r * min(max(r + 3.0, vec4<f32>(0.0)), vec4<f32>(6.0)) / 6.0"
        }
        // tanh saturates long before 20; clamping avoids inf/inf in some implementations.
        EpilogueAct::Unary(UnaryKind::Tanh) => "tanh(clamp(r, vec4<f32>(-20.0), vec4<f32>(20.0)))",
        EpilogueAct::Prelu => "select(alpha_load(slice) * r, r, r >= vec4<f32>(0.0))",
        EpilogueAct::Unary(other) => {
            return Err(GpuError::Shader {
                name: "epilogue".into(),
                message: format!("{} cannot be fused as an epilogue activation", other.name()),
            });
        }
    };
    let _ = writeln!(s, "    return {act};\n}}");
    Ok(())
}

/// Parses and validates WGSL with naga (the same front-end wgpu uses), with or without the
/// `shader-f16` capability. `pack2x16float`/`unpack2x16float` need naga's
/// `SHADER_FLOAT16_IN_FLOAT32`, which wgpu grants with the downlevel flag `SHADER_F16_IN_F32`
/// (part of WebGPU core, so every compliant adapter has it).
pub fn validate(name: &str, source: &str, f16: bool) -> Result<(), GpuError> {
    let err = |message: String| GpuError::Shader {
        name: name.into(),
        message,
    };
    let module = naga::front::wgsl::parse_str(source).map_err(|e| err(e.emit_to_string(source)))?;
    let mut caps = naga::valid::Capabilities::SHADER_FLOAT16_IN_FLOAT32;
    if f16 {
        caps |= naga::valid::Capabilities::SHADER_FLOAT16;
    }
    // Cooperative matrices (`crate::coop`): only where the source enables them, which it does
    // only on a device with `EXPERIMENTAL_COOPERATIVE_MATRIX`.
    if source.contains(COOP_ENABLE) {
        caps |= naga::valid::Capabilities::COOPERATIVE_MATRIX;
    }
    naga::valid::Validator::new(naga::valid::ValidationFlags::all(), caps)
        .validate(&module)
        .map_err(|e| err(e.emit_to_string(source)))?;
    Ok(())
}
