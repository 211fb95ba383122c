//! The ONNX protobuf messages, generated at build time from `proto/onnx.proto` by prost.
#![allow(missing_docs, clippy::all, clippy::pedantic)]

include!(concat!(env!("OUT_DIR"), "/onnx.rs"));
