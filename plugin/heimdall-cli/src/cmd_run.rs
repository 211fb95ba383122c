//! `heimdall run MODEL --input A.npy ... --out DIR`.

use std::path::PathBuf;

use anyhow::{Context, bail};
use heimdall::npy::{read_npy, write_npy};
use heimdall::{LoadOptions, load_model};
use heimdall_cpu::{CpuModel, CpuOptions};

use crate::Backend;

/// Arguments of `run`.
#[derive(clap::Args)]
pub struct RunArgs {
    /// The model file (.tflite).
    model: PathBuf,
    /// Input tensors as float32 `.npy`, in the model's input order and NHWC shapes.
    #[arg(long = "input", required = true)]
    inputs: Vec<PathBuf>,
    /// Directory for `output_<i>.npy`.
    #[arg(long)]
    out: PathBuf,
    /// Backend.
    #[arg(long, value_enum, default_value = "cpu")]
    backend: Backend,
    /// CPU threads (default: available cores, at most 4).
    #[arg(long)]
    threads: Option<usize>,
}

/// Runs `run`.
pub fn run(args: &RunArgs) -> anyhow::Result<()> {
    let graph = load_model(&args.model, LoadOptions::default())?;
    let Backend::Cpu = args.backend;
    let options = args
        .threads
        .map_or_else(CpuOptions::default, |threads| CpuOptions { threads });
    let mut model = CpuModel::compile(&graph, options)?;
    let expected = model.input_shapes();
    if args.inputs.len() != expected.len() {
        bail!(
            "the model has {} inputs {:?}, {} given",
            expected.len(),
            expected,
            args.inputs.len()
        );
    }
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
        model.set_input(i, &t.data)?;
    }
    model.run()?;
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    for (i, shape) in model.output_shapes().iter().enumerate() {
        let path = args.out.join(format!("output_{i}.npy"));
        write_npy(&path, shape, model.output(i)?)?;
        println!("{} {:?}", path.display(), shape);
    }
    Ok(())
}
