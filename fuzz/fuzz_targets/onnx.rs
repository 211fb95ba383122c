//! The ONNX loader (protobuf decoding, import with a small static input shape, constant
//! folding, load-time passes) on arbitrary bytes; what loads is compiled and run on the CPU
//! backend within the budget.
#![no_main]

use heimdall::{LoadOptions, load_onnx_bytes};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The input names of the two ONNX models (multistyle26, PP-OCRv6_det_small) and a generic
    // one: names the file does not have are ignored.
    let options = LoadOptions {
        passes: true,
        input_shapes: ["image", "x", "input"]
            .iter()
            .map(|n| (n.to_string(), vec![1, 3, 32, 32]))
            .collect(),
    };
    if let Ok(model) = load_onnx_bytes(data, "fuzz", &options) {
        heimdall_fuzz::run_cpu(&model.graph);
    }
});
