//! Criterion benchmarks live in this package; see the `[[bench]]` targets in its manifest.
