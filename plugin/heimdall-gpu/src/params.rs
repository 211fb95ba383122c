//! Uniform parameter structs defined once: `shader_params!` declares the `#[repr(C)]`,
//! [`Pod`] Rust struct a kernel builder fills and, from the same field list, the WGSL `struct
//! Params` that composition ([`crate::wgsl::KernelSource::compose`]) splices into the kernel's
//! source, so the two can never disagree. A compile-time check refuses a field that WGSL would
//! place at another offset (a `vec4` must start on 16 bytes), and the shader contract test
//! compares naga's layout of every composed kernel with the Rust one.

use bytemuck::Pod;

/// A Rust field type with a WGSL counterpart of the same size in a uniform buffer.
pub trait WgslType {
    /// The WGSL type.
    const WGSL: &'static str;
    /// Its alignment in a uniform buffer, in bytes.
    const ALIGN: usize;
}

impl WgslType for u32 {
    const WGSL: &'static str = "u32";
    const ALIGN: usize = 4;
}

impl WgslType for i32 {
    const WGSL: &'static str = "i32";
    const ALIGN: usize = 4;
}

impl WgslType for f32 {
    const WGSL: &'static str = "f32";
    const ALIGN: usize = 4;
}

impl WgslType for [u32; 4] {
    const WGSL: &'static str = "vec4<u32>";
    const ALIGN: usize = 16;
}

impl WgslType for [i32; 4] {
    const WGSL: &'static str = "vec4<i32>";
    const ALIGN: usize = 16;
}

impl WgslType for [f32; 4] {
    const WGSL: &'static str = "vec4<f32>";
    const ALIGN: usize = 16;
}

/// One member of a parameter struct.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Member {
    /// Field name (the same in Rust and WGSL).
    pub name: &'static str,
    /// WGSL type.
    pub wgsl: &'static str,
    /// Byte offset in the Rust struct (and, checked, in the WGSL one).
    pub offset: usize,
}

/// Where a kernel's parameters (binding 0) live: a uniform buffer, or a read-only storage
/// buffer on drivers that mishandle uniforms ([`crate::GpuContext::params_space`]). The bytes are
/// the same in both: WGSL lays a struct out alike in either address space, and every parameter
/// struct meets the uniform rules (checked at compile time).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ParamsSpace {
    /// `var<uniform>`: what GPUs serve from their constant caches.
    #[default]
    Uniform,
    /// `var<storage, read>`.
    Storage,
}

impl ParamsSpace {
    /// The WGSL declaration of binding 0, `params` of type `Params`.
    pub fn declaration(self) -> &'static str {
        match self {
            ParamsSpace::Uniform => "@group(0) @binding(0) var<uniform> params: Params;",
            ParamsSpace::Storage => "@group(0) @binding(0) var<storage, read> params: Params;",
        }
    }

    /// The usage of a buffer that holds parameters (written by the queue or at creation).
    pub fn usage(self) -> wgpu::BufferUsages {
        match self {
            ParamsSpace::Uniform => wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            ParamsSpace::Storage => wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
        }
    }

    /// The alignment of a parameter block's offset in a shared buffer (at least 16 bytes).
    pub fn offset_alignment(self, limits: &wgpu::Limits) -> u64 {
        let a = match self {
            ParamsSpace::Uniform => limits.min_uniform_buffer_offset_alignment,
            ParamsSpace::Storage => limits.min_storage_buffer_offset_alignment,
        };
        u64::from(a).max(16)
    }
}

/// The layout of a parameter struct: what composition declares and the contract test checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParamsLayout {
    /// The Rust struct's name.
    pub name: &'static str,
    /// Its members in declaration order.
    pub members: &'static [Member],
    /// `size_of` the Rust struct.
    pub size: usize,
}

impl ParamsLayout {
    /// The WGSL declaration: `struct Params` and its binding 0 in `space`.
    pub fn wgsl(&self, space: ParamsSpace) -> String {
        let mut s = format!(
            "// Uniform parameters: {} (generated).\nstruct Params {{\n",
            self.name
        );
        for m in self.members {
            s.push_str(&format!("    {}: {},\n", m.name, m.wgsl));
        }
        s.push_str("}\n");
        s.push_str(space.declaration());
        s.push('\n');
        s
    }
}

/// A kernel's uniform parameters, declared with `shader_params!`.
pub trait ShaderParams: Pod {
    /// The struct's layout.
    const LAYOUT: ParamsLayout;

    /// The bytes of the uniform binding: the struct, zero-padded to a multiple of 16 bytes.
    fn to_bytes(&self) -> Vec<u8> {
        let mut v = bytemuck::bytes_of(self).to_vec();
        v.resize(v.len().next_multiple_of(16), 0);
        v
    }
}

/// Declares a kernel's uniform parameter struct once, for Rust and WGSL:
///
/// ```ignore
/// shader_params! {
///     /// Parameters of `shaders/softmax.wgsl`.
///     struct GpuSoftmaxParams {
///         /// The input's shape right-aligned to four axes.
///         dims: [u32; 4],
///         axis: u32,
///     }
/// }
/// ```
///
/// Fields are `u32`, `i32`, `f32` or four of one of them (a WGSL `vec4`); a `vec4` must start
/// at a multiple of 16 bytes (checked at compile time). The struct is `#[repr(C)]`, `Pod`, with
/// crate-visible fields, and implements [`ShaderParams`].
macro_rules! shader_params {
    (
        $(#[$meta:meta])*
        struct $name:ident {
            $($(#[$fmeta:meta])* $field:ident : $ty:ty),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[repr(C)]
        #[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
        pub(crate) struct $name {
            $($(#[$fmeta])* pub(crate) $field: $ty),*
        }

        impl $crate::params::ShaderParams for $name {
            const LAYOUT: $crate::params::ParamsLayout = $crate::params::ParamsLayout {
                name: stringify!($name),
                members: &[$($crate::params::Member {
                    name: stringify!($field),
                    wgsl: <$ty as $crate::params::WgslType>::WGSL,
                    offset: ::core::mem::offset_of!($name, $field),
                }),*],
                size: ::core::mem::size_of::<$name>(),
            };
        }

        const _: () = {
            $(assert!(
                ::core::mem::offset_of!($name, $field)
                    % <$ty as $crate::params::WgslType>::ALIGN
                    == 0,
                concat!(
                    stringify!($name), ".", stringify!($field),
                    " is not where WGSL places it: start a vec4 at a multiple of 16 bytes"
                )
            );)*
        };
    };
}

pub(crate) use shader_params;
