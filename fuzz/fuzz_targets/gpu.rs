//! The GPU path on arbitrary bytes: what the TFLite loader accepts and fits the GPU budget is
//! compiled for the GPU backend (f32 and f16 storage) and run once on lavapipe (or any Vulkan
//! adapter); a panic or a wgpu error for a model the backend compiled is a finding.
#![no_main]

use heimdall::{LoadOptions, load_tflite_bytes};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok((graph, _)) = load_tflite_bytes(data, "fuzz", LoadOptions::default()) {
        heimdall_fuzz::gpu::run_gpu(&graph);
    }
});
