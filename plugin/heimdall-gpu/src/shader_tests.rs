//! The shader tests: every composed variant of every kernel ([`crate::ops::catalogue`] and the
//! preprocessing) parses and validates with naga, and every uniform parameter struct has the
//! same layout in the composed WGSL as in Rust. No GPU needed.

use crate::ops::catalogue;
use crate::params::{ParamsLayout, ParamsSpace};
use crate::precision::Precision;
use crate::sources::KERNELS;
use crate::wgsl::{KernelSource, validate};

/// The catalogue, the preprocessing's and the RGBA conversion's variants.
fn every_variant() -> Vec<KernelSource> {
    let mut all = catalogue();
    for p in Precision::ALL {
        for srgb in [false, true] {
            all.push(crate::preprocess::source(p, srgb));
        }
        all.push(crate::tensor_to_rgba::source(p));
        all.push(crate::io_pack::pack_source(p));
        all.push(crate::io_pack::unpack_source(p));
        all.extend(crate::conv_cache::sources(p));
    }
    all
}

/// Every kernel with the usual entry point, wrapped to run a list of work groups (the
/// convolution cache's form), validates with naga too.
#[test]
fn every_wrapped_kernel_validates_with_naga() {
    let mut wrapped = 0;
    for k in catalogue() {
        let src = k.compose(ParamsSpace::Uniform).expect("compose");
        if let Ok(w) = crate::conv_cache::tile_list_wrapper(&src) {
            validate(k.name, &w, k.uses_f16())
                .unwrap_or_else(|e| panic!("{e}\n--- source ---\n{w}"));
            wrapped += 1;
        }
    }
    assert!(wrapped > 50, "only {wrapped} kernels wrapped");
}

/// Every composed variant parses and validates with naga, with its parameters in a uniform and
/// in a storage buffer; no GPU needed.
#[test]
fn every_shader_validates_with_naga() {
    let all = every_variant();
    assert!(all.len() > 100, "catalogue has {} variants", all.len());
    let mut names = std::collections::BTreeSet::new();
    for k in &all {
        for space in [ParamsSpace::Uniform, ParamsSpace::Storage] {
            let src = k.compose(space).expect("compose");
            validate(k.name, &src, k.uses_f16())
                .unwrap_or_else(|e| panic!("{e}\n--- source ---\n{src}"));
        }
        names.insert(k.name);
    }
    for name in KERNELS {
        assert!(
            names.contains(name),
            "kernel {name} is not in the catalogue"
        );
    }
}

/// In a storage buffer, every kernel's parameters are there, the ones its file declares as a
/// uniform included (lavapipe must see no uniform: `GpuContext::params_space`).
#[test]
fn storage_parameters_leave_no_uniform() {
    for k in every_variant() {
        let src = k.compose(ParamsSpace::Storage).expect("compose");
        assert!(
            !src.contains("var<uniform>"),
            "{}: a uniform is left",
            k.name
        );
        if src.contains("params.") {
            assert!(
                src.contains(ParamsSpace::Storage.declaration()),
                "{}: no storage `params`",
                k.name
            );
        }
    }
}

/// The validator is not vacuous: a broken kernel and f16 without the capability fail.
#[test]
fn validation_rejects_bad_shaders() {
    assert!(validate("bad", "fn main() { let x: u32 = 1.5; }", false).is_err());
    let f16 = crate::kernels::gather::source(Precision::F16, Precision::F16, false);
    let src = f16.compose(ParamsSpace::Uniform).unwrap();
    assert!(validate("f16", &src, false).is_err());
    if let Err(e) = validate("f16", &src, true) {
        panic!("{e}");
    }
}

/// Shader contract: for every kernel whose parameters are declared from a Rust struct, naga's
/// layout of the composed `params` (member names, offsets, struct size) is the Rust struct's,
/// in either address space.
#[test]
fn parameter_structs_have_the_rust_layout() {
    let mut checked = std::collections::BTreeSet::new();
    for k in every_variant() {
        let Some(layout) = k.params else { continue };
        for space in [ParamsSpace::Uniform, ParamsSpace::Storage] {
            assert_layout(k.name, &k.compose(space).expect("compose"), &layout);
        }
        checked.insert(layout.name);
    }
    assert!(
        checked.len() >= 20,
        "only {} parameter structs checked: {checked:?}",
        checked.len()
    );
}

/// Fails unless naga's layout of the `params` of WGSL `src` is `layout` (member names and
/// offsets; a struct size between the members' end and the uploaded, 16-byte padded size).
pub(crate) fn assert_layout(name: &str, src: &str, layout: &ParamsLayout) {
    let module = naga::front::wgsl::parse_str(src)
        .unwrap_or_else(|e| panic!("{name}: {}", e.emit_to_string(src)));
    let (_, var) = module
        .global_variables
        .iter()
        .find(|(_, v)| v.name.as_deref() == Some("params"))
        .unwrap_or_else(|| panic!("{name}: no `params`"));
    let naga::TypeInner::Struct { members, span } = &module.types[var.ty].inner else {
        panic!("{name}: `params` is not a struct");
    };
    let got: Vec<(&str, u32)> = members
        .iter()
        .map(|m| (m.name.as_deref().unwrap_or(""), m.offset))
        .collect();
    let want: Vec<(&str, u32)> = layout
        .members
        .iter()
        .map(|m| (m.name, m.offset as u32))
        .collect();
    assert_eq!(got, want, "{name}: members of {}", layout.name);
    let last = layout.members.last().expect("members");
    let end = (last.offset + if last.wgsl.starts_with("vec4") { 16 } else { 4 }) as u32;
    assert_eq!(layout.size as u32, end, "{name}: size of {}", layout.name);
    assert!(
        *span >= end && *span <= layout.size.next_multiple_of(16) as u32,
        "{name}: WGSL size {span} of {}, Rust {} (uploaded {})",
        layout.name,
        layout.size,
        layout.size.next_multiple_of(16)
    );
}
