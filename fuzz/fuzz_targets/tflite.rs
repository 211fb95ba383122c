//! The TFLite loader (flatbuffer parsing, import, validation, load-time passes) on arbitrary
//! bytes; what loads is compiled and run on the CPU backend within the budget.
#![no_main]

use heimdall::{LoadOptions, load_tflite_bytes};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok((graph, _)) = load_tflite_bytes(data, "fuzz", LoadOptions::default()) {
        heimdall_fuzz::run_cpu(&graph);
    }
});
