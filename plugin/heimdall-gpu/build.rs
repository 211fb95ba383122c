//! Generates the table of kernel files in the crate's `shaders/` (`$OUT_DIR/kernel_sources.rs`,
//! included by `src/sources.rs`): every `.wgsl` file there except the standalone shaders, so
//! adding a kernel's shader file needs no list to be edited. The WGSL lives in the crate (so the
//! packaged crate carries it); the repository's top-level `shaders` is a link to this folder.

use std::fmt::Write as _;
use std::path::Path;

/// Shaders of `shaders/` that are not composed kernels: the probes (`src/probe.rs` embeds them
/// whole).
const STANDALONE: &[&str] = &["probe_copy", "probe_fma"];

fn main() {
    // Read at run time, not with `env!`: a build-script binary is reused when the same checkout
    // is built from another directory with a shared target directory.
    let manifest = std::env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR");
    let dir = Path::new(&manifest).join("shaders");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut kernels: Vec<(String, String)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|entry| {
            let path = entry.ok()?.path();
            if path.extension()? != "wgsl" {
                return None;
            }
            let name = path.file_stem()?.to_str()?.to_string();
            let path = path.canonicalize().ok()?.to_str()?.to_string();
            (!STANDALONE.contains(&name.as_str())).then_some((name, path))
        })
        .collect();
    kernels.sort();
    let mut s = String::from(
        "/// Names of every kernel file in `shaders/` (without `.wgsl`).\npub const KERNELS: &[&str] = &[\n",
    );
    for (name, _) in &kernels {
        let _ = writeln!(s, "    {name:?},");
    }
    s.push_str("];\n\n/// The body of kernel `name` (the file `shaders/<name>.wgsl`).\npub fn source(name: &str) -> Option<&'static str> {\n    match name {\n");
    for (name, path) in &kernels {
        let _ = writeln!(s, "        {name:?} => Some(include_str!({path:?})),");
    }
    s.push_str("        _ => None,\n    }\n}\n");
    let out = Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR")).join("kernel_sources.rs");
    std::fs::write(&out, s).unwrap_or_else(|e| panic!("{}: {e}", out.display()));
}
