//! `heimdall inspect MODEL`.

use std::path::PathBuf;

use anyhow::Context;
use heimdall::{LoadOptions, load_model_with_report};
use heimdall_ir::cost::{OpCost, op_cost};
use heimdall_ir::passes::PassReport;
use heimdall_ir::{Activation, BlockOrder, Graph, OpKind, ReduceKind};
use serde_json::json;

/// Arguments of `inspect`.
#[derive(clap::Args)]
pub struct InspectArgs {
    /// The model file (.tflite or .onnx).
    model: PathBuf,
    /// List the file's ops as imported, before the load-time passes.
    #[arg(long)]
    no_passes: bool,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Static shape of an input with dynamic dimensions, e.g. `x=1x3x512x512` (repeatable).
    #[arg(long = "input-shape", value_parser = crate::input_shape::parse)]
    input_shapes: Vec<(String, Vec<usize>)>,
}

fn is_onnx(path: &std::path::Path) -> bool {
    path.extension().and_then(|e| e.to_str()) == Some("onnx")
}

/// Ops the file holds, by name (before any pass).
pub fn file_op_counts(path: &PathBuf) -> anyhow::Result<heimdall::tflite::OpCounts> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    if is_onnx(path) {
        return heimdall::onnx::op_counts(&bytes)
            .map(heimdall::tflite::OpCounts)
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()));
    }
    heimdall::tflite::op_counts(&bytes).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

/// The file's op types the importer does not map, with their counts ("NAME count, ...").
fn unsupported_summary(
    path: &std::path::Path,
    counts: &heimdall::tflite::OpCounts,
) -> Option<String> {
    if !is_onnx(path) {
        return None;
    }
    let list: Vec<String> = counts
        .0
        .iter()
        .filter(|(n, _)| !heimdall::onnx::is_supported(n))
        .map(|(n, c)| format!("{n} {c}"))
        .collect();
    (!list.is_empty()).then(|| list.join(", "))
}

fn attributes(kind: &OpKind) -> String {
    match kind {
        OpKind::Conv2d(a) | OpKind::TransposeConv2d(a) => format!(
            "stride {}x{} pad {}/{}/{}/{}",
            a.stride[0], a.stride[1], a.pad.top, a.pad.bottom, a.pad.left, a.pad.right
        ),
        OpKind::DepthwiseConv2d {
            attrs: a,
            multiplier,
        } => format!(
            "stride {}x{} pad {}/{}/{}/{} x{multiplier}",
            a.stride[0], a.stride[1], a.pad.top, a.pad.bottom, a.pad.left, a.pad.right
        ),
        OpKind::MaxPool2d(p) | OpKind::AvgPool2d(p) => format!(
            "{}x{} stride {}x{} pad {}/{}/{}/{}",
            p.filter[0],
            p.filter[1],
            p.stride[0],
            p.stride[1],
            p.pad.top,
            p.pad.bottom,
            p.pad.left,
            p.pad.right
        ),
        OpKind::Reduce {
            kind: ReduceKind::Mean,
            axes,
            keep_dims,
        } => format!("axes {axes:?} keep_dims {keep_dims}"),
        OpKind::Pad { pads, mode } if mode.is_zero() => format!("pads {pads:?}"),
        OpKind::Concatenation { axis } => format!("axis {axis}"),
        OpKind::Resize(a) => match a.tflite_flags() {
            Some((align_corners, half_pixel_centers)) => {
                format!("align_corners {align_corners} half_pixel {half_pixel_centers}")
            }
            None => String::new(),
        },
        OpKind::DepthToSpace {
            block,
            order: BlockOrder::Dcr,
        } => format!("block {block}"),
        OpKind::StridedSlice(s) => format!(
            "begin {:?} stride {:?} count {:?}",
            s.begin, s.stride, s.count
        ),
        _ => String::new(),
    }
}

fn epilogue(graph: &Graph, op: &heimdall_ir::Op) -> String {
    let mut parts = Vec::new();
    if let Some(r) = op.epilogue.residual {
        parts.push(format!("+{}", graph.tensor(r).name));
    }
    match op.epilogue.activation {
        Activation::None => {}
        Activation::Unary(u) => parts.push(format!("{u:?}")),
        Activation::Prelu(_) => parts.push("PReLU".into()),
    }
    parts.join(" ")
}

/// Runs `inspect`.
pub fn run(args: &InspectArgs) -> anyhow::Result<()> {
    let counts = file_op_counts(&args.model)?;
    let unsupported = unsupported_summary(&args.model, &counts);
    if let Some(list) = &unsupported {
        eprintln!("unsupported ops (by name and count): {list}");
    }
    let (graph, report) = load_model_with_report(
        &args.model,
        LoadOptions {
            passes: !args.no_passes,
            input_shapes: args.input_shapes.clone(),
        },
    )?;
    let (rows, total) = op_rows(&graph);
    let inspected = Inspected {
        graph: &graph,
        counts: &counts,
        report: &report,
        rows: &rows,
        total: &total,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&inspected.to_json())?);
        return Ok(());
    }
    inspected.print_table(!args.no_passes);
    Ok(())
}

/// One JSON record per op of `graph` (shapes, attributes, epilogue, cost), and the ops' total
/// cost.
fn op_rows(graph: &Graph) -> (Vec<serde_json::Value>, OpCost) {
    let shape = |t: heimdall_ir::TensorId| graph.tensor(t).shape.clone();
    let mut total = OpCost::default();
    let mut rows = Vec::new();
    for (i, op) in graph.ops.iter().enumerate() {
        let c = op_cost(graph, op);
        total.flops += c.flops;
        total.weight_bytes += c.weight_bytes;
        total.activation_bytes += c.activation_bytes;
        let inputs: Vec<Vec<usize>> = op
            .inputs
            .iter()
            .filter(|t| graph.tensor(**t).constant.is_none())
            .map(|&t| shape(t))
            .collect();
        rows.push(json!({
            "index": i,
            "source_index": op.source,
            "op": op.kind.name(),
            "inputs": inputs,
            "outputs": op.outputs.iter().map(|&t| shape(t)).collect::<Vec<_>>(),
            "attributes": attributes(&op.kind),
            "epilogue": epilogue(graph, op),
            "flops": c.flops,
            "weight_bytes": c.weight_bytes,
            "backends": ["cpu"],
        }));
    }
    (rows, total)
}

/// What `inspect` found: the loaded graph, the file's op counts, the passes' report, a record
/// per op and the ops' total cost.
struct Inspected<'a> {
    graph: &'a Graph,
    counts: &'a heimdall::tflite::OpCounts,
    report: &'a PassReport,
    rows: &'a [serde_json::Value],
    total: &'a OpCost,
}

impl Inspected<'_> {
    /// The shape of tensor `t`.
    fn shape(&self, t: heimdall_ir::TensorId) -> Vec<usize> {
        self.graph.tensor(t).shape.clone()
    }

    /// Ops of the file that decode weights (DEQUANTIZE, DENSIFY).
    fn decode_ops(&self) -> usize {
        self.counts.get("DEQUANTIZE") + self.counts.get("DENSIFY")
    }

    /// The JSON document of `inspect --json`.
    fn to_json(&self) -> serde_json::Value {
        let (graph, counts, report, total) = (self.graph, self.counts, self.report, self.total);
        let decode = self.decode_ops();
        json!({
            "model": graph.name,
            "file_ops": { "total": counts.total(), "without_weight_decoding": counts.total() - decode, "by_name": counts.0.iter().map(|(n, c)| json!({"op": n, "count": c})).collect::<Vec<_>>() },
            "passes": { "weights_folded": report.weights_folded, "pads_folded": report.pads_folded, "gelus_fused": report.gelus_fused, "residuals_fused": report.residuals_fused, "activations_fused": report.activations_fused, "reshapes_dropped": report.reshapes_dropped, "norm_affine_folded": report.norm_affine_folded },
            "inputs": graph.inputs.iter().map(|&t| json!({"name": graph.tensor(t).name, "shape": self.shape(t)})).collect::<Vec<_>>(),
            "outputs": graph.outputs.iter().map(|&t| json!({"name": graph.tensor(t).name, "shape": self.shape(t)})).collect::<Vec<_>>(),
            "ops": self.rows,
            "totals": { "ops": graph.ops.len(), "flops": total.flops, "conv_flops": heimdall_ir::cost::conv_flops(graph), "weight_bytes": total.weight_bytes, "activation_bytes": total.activation_bytes },
        })
    }

    /// Prints the model's op counts, inputs and outputs, the passes' report (when they ran:
    /// `passes`), a table of ops and the totals.
    fn print_table(&self, passes: bool) {
        let (graph, counts, report) = (self.graph, self.counts, self.report);
        println!(
            "model {}: {} ops in the file ({} without DEQUANTIZE/DENSIFY)",
            graph.name,
            counts.total(),
            counts.total() - self.decode_ops()
        );
        println!(
            "  {}",
            counts
                .0
                .iter()
                .map(|(n, c)| format!("{n} {c}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        for &t in &graph.inputs {
            println!("input  {:<40} {:?}", graph.tensor(t).name, self.shape(t));
        }
        for &t in &graph.outputs {
            println!("output {:<40} {:?}", graph.tensor(t).name, self.shape(t));
        }
        if passes {
            println!(
                "passes: {} weight ops folded, {} pads folded, {} GELUs fused, {} residual adds and {} activations fused, {} reshapes dropped, {} scale/shift ops folded into instance norms",
                report.weights_folded,
                report.pads_folded,
                report.gelus_fused,
                report.residuals_fused,
                report.activations_fused,
                report.reshapes_dropped,
                report.norm_affine_folded
            );
        }
        self.print_ops();
    }

    /// Prints the table of ops and the totals.
    fn print_ops(&self) {
        let (graph, total) = (self.graph, self.total);
        println!(
            "{:>4} {:>5} {:<26} {:<22} {:<18} {:<34} {:<18} {:>10} {:>9} backends",
            "#", "file", "op", "input", "output", "attributes", "epilogue", "MFLOP", "weight B"
        );
        for r in self.rows {
            let first = |v: &serde_json::Value| v.get(0).map(|s| s.to_string()).unwrap_or_default();
            println!(
                "{:>4} {:>5} {:<26} {:<22} {:<18} {:<34} {:<18} {:>10.3} {:>9} cpu",
                r["index"],
                r["source_index"]
                    .as_u64()
                    .map_or("-".into(), |v| v.to_string()),
                r["op"].as_str().unwrap_or(""),
                first(&r["inputs"]),
                first(&r["outputs"]),
                r["attributes"].as_str().unwrap_or(""),
                r["epilogue"].as_str().unwrap_or(""),
                r["flops"].as_u64().unwrap_or(0) as f64 / 1e6,
                r["weight_bytes"]
            );
        }
        println!(
            "total: {} ops, {:.3} GFLOP ({:.3} GFLOP in convolutions), {:.2} MB weights, {:.2} MB activations moved",
            graph.ops.len(),
            total.flops as f64 / 1e9,
            heimdall_ir::cost::conv_flops(graph) as f64 / 1e9,
            total.weight_bytes as f64 / 1e6,
            total.activation_bytes as f64 / 1e6
        );
    }
}
