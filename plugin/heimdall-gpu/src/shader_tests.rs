//! The shader tests: every composed variant of every kernel ([`crate::ops::catalogue`] and the
//! preprocessing) parses and validates with naga, and every uniform parameter struct has the
//! same layout in the composed WGSL as in Rust. No GPU needed.

use crate::ops::catalogue;
use crate::precision::Precision;
use crate::sources::KERNELS;
use crate::wgsl::{KernelSource, validate};

/// The catalogue and the preprocessing's variants.
fn every_variant() -> Vec<KernelSource> {
    let mut all = catalogue();
    for p in Precision::ALL {
        for srgb in [false, true] {
            all.push(crate::preprocess::source(p, srgb));
        }
    }
    all
}

/// Every composed variant parses and validates with naga; no GPU needed.
#[test]
fn every_shader_validates_with_naga() {
    let all = every_variant();
    assert!(all.len() > 100, "catalogue has {} variants", all.len());
    let mut names = std::collections::BTreeSet::new();
    for k in &all {
        let src = k.compose().expect("compose");
        validate(k.name, &src, k.uses_f16())
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
    assert!(validate("bad", "fn main() { let x: u32 = 1.5; }", false).is_err());
    let f16 = crate::kernels::gather::source(Precision::F16, Precision::F16, false);
    let src = f16.compose().unwrap();
    assert!(validate("f16", &src, false).is_err());
    if let Err(e) = validate("f16", &src, true) {
        panic!("{e}");
    }
}

/// Shader contract: for every kernel whose parameters are declared from a Rust struct, naga's
/// layout of the composed `params` (member names, offsets, struct size) is the Rust struct's.
#[test]
fn parameter_structs_have_the_rust_layout() {
    let mut checked = std::collections::BTreeSet::new();
    for k in every_variant() {
        let Some(layout) = k.params else { continue };
        let src = k.compose().expect("compose");
        let module = naga::front::wgsl::parse_str(&src)
            .unwrap_or_else(|e| panic!("{}: {}", k.name, e.emit_to_string(&src)));
        let (_, var) = module
            .global_variables
            .iter()
            .find(|(_, v)| v.name.as_deref() == Some("params"))
            .unwrap_or_else(|| panic!("{}: no `params`", k.name));
        let ty = &module.types[var.ty];
        let naga::TypeInner::Struct { members, span } = &ty.inner else {
            panic!("{}: `params` is not a struct", k.name);
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
        assert_eq!(got, want, "{}: members of {}", k.name, layout.name);
        // WGSL rounds the struct up to its alignment; the Rust struct is at least as large as
        // the members and the uploaded bytes are padded to 16.
        let last = layout.members.last().expect("members");
        let end = (last.offset + if last.wgsl.starts_with("vec4") { 16 } else { 4 }) as u32;
        assert_eq!(
            layout.size as u32, end,
            "{}: size of {}",
            k.name, layout.name
        );
        assert!(
            *span >= end && *span <= layout.size.next_multiple_of(16) as u32,
            "{}: WGSL size {span} of {}, Rust {} (uploaded {})",
            k.name,
            layout.name,
            layout.size,
            layout.size.next_multiple_of(16)
        );
        checked.insert(layout.name);
    }
    assert!(
        checked.len() >= 20,
        "only {} parameter structs checked: {checked:?}",
        checked.len()
    );
}
