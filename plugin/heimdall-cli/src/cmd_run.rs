//! `heimdall run MODEL --input A.npy ... --out DIR`.

use std::path::PathBuf;

use anyhow::{Context, bail};
use heimdall::npy::{read_npy, write_npy};
use heimdall::{LoadOptions, load};
use heimdall_cpu::{CpuModel, CpuOptions};

use crate::Backend;

/// Arguments of `run`.
#[derive(clap::Args)]
pub struct RunArgs {
    /// The model file (.tflite or .onnx).
    model: PathBuf,
    /// Input tensors as float32 `.npy`, in the model's input order and the model's own layout
    /// (NHWC for TFLite, NCHW for ONNX images).
    #[arg(long = "input", required = true)]
    inputs: Vec<PathBuf>,
    /// Directory for `output_<i>.npy`.
    #[arg(long)]
    out: PathBuf,
    /// Backend.
    #[arg(long, value_enum, default_value = "cpu")]
    backend: Backend,
    /// Storage precision on the GPU backend.
    #[arg(long, value_enum, default_value = "f32")]
    precision: crate::gpu_backend::PrecisionArg,
    /// GPU with `--precision f16` or `packed-f16`: do not run the accuracy guard. By default
    /// the guard checks the outputs on these inputs against the CPU backend (f32) and switches
    /// the ops that miss the bound (rel-L2 1e-2) to f32, printing its decision on stderr.
    #[arg(long)]
    no_guard: bool,
    /// CPU threads (default: available cores, at most 4).
    #[arg(long)]
    threads: Option<usize>,
    /// Static shape of an input with dynamic dimensions, e.g. `x=1x3x512x512` (repeatable).
    #[arg(long = "input-shape", value_parser = crate::input_shape::parse)]
    input_shapes: Vec<(String, Vec<usize>)>,
}

/// Runs `run`.
pub fn run(args: &RunArgs) -> anyhow::Result<()> {
    let loaded = load(
        &args.model,
        LoadOptions {
            input_shapes: args.input_shapes.clone(),
            ..Default::default()
        },
    )?;
    let io = &loaded.io;
    let expected: Vec<Vec<usize>> = io.inputs.iter().map(|t| t.shape.clone()).collect();
    if args.inputs.len() != expected.len() {
        bail!(
            "the model has {} inputs {:?}, {} given",
            expected.len(),
            expected,
            args.inputs.len()
        );
    }
    let mut inputs = Vec::with_capacity(expected.len());
    for (i, path) in args.inputs.iter().enumerate() {
        let t = read_npy(path)?;
        if t.shape != expected[i] {
            bail!(
                "input {i} ({}): the model expects shape {:?}, the file has shape {:?}",
                path.display(),
                expected[i],
                t.shape
            );
        }
        inputs.push(io.inputs[i].to_ir(&t.data));
    }
    let outputs: Vec<Vec<f32>> = match args.backend {
        Backend::Cpu => {
            let options = args
                .threads
                .map_or_else(CpuOptions::default, |threads| CpuOptions { threads });
            let mut model = CpuModel::compile(&loaded.graph, options)?;
            for (i, x) in inputs.iter().enumerate() {
                model.set_input(i, x)?;
            }
            model.run()?;
            (0..io.outputs.len())
                .map(|i| model.output(i).map(<[f32]>::to_vec))
                .collect::<Result<_, _>>()?
        }
        Backend::Gpu => {
            crate::gpu_backend::run(&loaded.graph, &inputs, args.precision, !args.no_guard)?
        }
    };
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    for (i, t) in io.outputs.iter().enumerate() {
        let path = args.out.join(format!("output_{i}.npy"));
        write_npy(&path, &t.shape, &t.from_ir(&outputs[i]))?;
        println!("{} {:?}", path.display(), t.shape);
    }
    Ok(())
}
