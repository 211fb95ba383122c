//! Builders of the shaders several op families share (each beside its WGSL in `shaders/`):
//! [`elementwise`] (ADD, SUB, MUL, PRELU, the activations), [`nary`] (the other element-wise
//! functions) and [`gather`] (reshape, zero pad, strided slice, concatenation).

pub mod elementwise;
pub mod gather;
pub mod nary;
