//! ONNX's backend node conformance tests (onnx 1.22.0, fetched by
//! `scripts/fetch_onnx_node_tests.py` into `.cache/onnx-node-tests/`, not committed) for every
//! op of issue 6's list, on the CPU backend: outputs within rtol 1e-3 / atol 1e-7 per element.
//!
//! A test is in scope when its model is one node of a listed op, or it is the `_expanded` form
//! (the op's function body) of such a test. Every in-scope test must pass unless
//! `tests/conformance_excluded.txt` names it with a reason; a listed test that passes fails
//! this suite too (so the list stays exact). `HEIMDALL_CONFORMANCE_REPORT=1` prints the per-op
//! table and the failures as exclusion lines.

mod common;

use std::collections::BTreeMap;

use heimdall_onnx::proto::ModelProto;
use prost::Message;

/// The ops of issue 6.
const OPS: &[&str] = &[
    "Conv",
    "ConvTranspose",
    "BatchNormalization",
    "InstanceNormalization",
    "Relu",
    "Clip",
    "LeakyRelu",
    "Sigmoid",
    "HardSigmoid",
    "HardSwish",
    "Tanh",
    "Erf",
    "Add",
    "Sub",
    "Mul",
    "Div",
    "Pow",
    "Sqrt",
    "ReduceMean",
    "Concat",
    "Resize",
    "Upsample",
    "Pad",
    "MaxPool",
    "AveragePool",
    "GlobalAveragePool",
    "Gemm",
    "MatMul",
    "Reshape",
    "Flatten",
    "Transpose",
    "Slice",
    "Split",
    "Softmax",
    "DepthToSpace",
    "SpaceToDepth",
    "Cast",
    "ConstantOfShape",
    "ReduceSum",
    "Unsqueeze",
    "Identity",
];

/// The op a single-node test model exercises.
fn single_op(dir: &std::path::Path) -> Option<String> {
    let bytes = std::fs::read(dir.join("model.onnx")).ok()?;
    let m = ModelProto::decode(bytes.as_slice()).ok()?;
    let g = m.graph?;
    (g.node.len() == 1).then(|| g.node[0].op_type.clone().unwrap_or_default())
}

/// In-scope tests: name -> op.
fn in_scope() -> BTreeMap<String, String> {
    let root = common::node_tests_dir();
    let mut singles = BTreeMap::new();
    let mut names = Vec::new();
    for e in std::fs::read_dir(&root).expect("node tests") {
        let p = e.expect("entry").path();
        if !p.join("model.onnx").exists() {
            continue;
        }
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if let Some(op) = single_op(&p).filter(|op| OPS.contains(&op.as_str())) {
            singles.insert(name.clone(), op);
        }
        names.push(name);
    }
    let mut scope = singles.clone();
    for name in names {
        if let Some(i) = name.find("_expanded")
            && let Some(op) = singles.get(&name[..i])
        {
            scope.insert(name.clone(), op.clone());
        }
    }
    scope
}

fn excluded() -> BTreeMap<String, String> {
    include_str!("conformance_excluded.txt")
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .filter_map(|l| {
            let (name, reason) = l.split_once(char::is_whitespace)?;
            Some((name.to_string(), reason.trim().to_string()))
        })
        .collect()
}

#[test]
fn onnx_node_conformance() {
    let root = common::node_tests_dir();
    let scope = in_scope();
    let excluded = excluded();
    let report = std::env::var("HEIMDALL_CONFORMANCE_REPORT").is_ok();
    // op -> (in scope, passed, excluded)
    let mut table: BTreeMap<&str, (usize, usize, usize)> = BTreeMap::new();
    let mut unexpected = Vec::new();
    for (name, op) in &scope {
        let outcome = std::panic::catch_unwind(|| common::run_node_test(&root.join(name)))
            .unwrap_or_else(|_| Err("PANIC".into()));
        let row = table.entry(op.as_str()).or_default();
        row.0 += 1;
        match (&outcome, excluded.get(name)) {
            (Ok(()), None) => row.1 += 1,
            (Ok(()), Some(_)) => unexpected.push(format!("{name}: passes but is excluded")),
            (Err(_), Some(_)) => row.2 += 1,
            (Err(e), None) => unexpected.push(format!("{name}: {e}")),
        }
        if report && let Err(e) = &outcome {
            println!("EXCLUDE {name} {}", e.replace('\n', " "));
        }
    }
    println!("| op | tests | pass | excluded |");
    println!("| --- | ---: | ---: | ---: |");
    for (op, (n, p, x)) in &table {
        println!("| {op} | {n} | {p} | {x} |");
    }
    for name in excluded.keys() {
        assert!(
            scope.contains_key(name),
            "{name} is excluded but not in scope"
        );
    }
    assert!(
        unexpected.is_empty(),
        "{} unexpected results:\n{}",
        unexpected.len(),
        unexpected.join("\n")
    );
}
