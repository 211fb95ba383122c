//! `heimdall`: the command-line face of the engine (inspect, run, bench, partition, simulate,
//! detect, stylize, models).

mod assets;
mod backend;
mod bench_decode;
mod bench_inputs;
mod cmd_bench;
mod cmd_bench_cache;
mod cmd_detect;
mod cmd_inspect;
mod cmd_models;
mod cmd_partition;
mod cmd_run;
mod cmd_simulate;
mod cmd_stylize;
mod gpu_backend;
mod gpu_guard;
mod gpu_texture;
mod input_shape;
mod progress;
mod timing;
mod vision_runner;

pub(crate) use backend::Backend;

use clap::{Parser, Subcommand};

/// Run several neural networks beside an AR renderer: inspect, run and benchmark models, and
/// simulate the frame-budget coordinator.
#[derive(Parser)]
#[command(name = "heimdall", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// List a model's ops in order with shapes, attributes, FLOPs, weight bytes and backends.
    Inspect(cmd_inspect::InspectArgs),
    /// Run a model on `.npy` inputs and write its outputs as `.npy`.
    Run(cmd_run::RunArgs),
    /// Measure a model's latency (median, p90, max after warm-up), optionally per op; or, with
    /// `--conv-cache`, with and without the convolution cache over a sequence of inputs.
    Bench(cmd_bench::BenchArgs),
    /// The chunks the analyzer makes of a model for a frame budget, with their measured times.
    Partition(cmd_partition::PartitionArgs),
    /// Run the coordinator on a virtual clock over a scenario file.
    Simulate(cmd_simulate::SimulateArgs),
    /// Run a vision pipeline (faces, hands, objects, text) on an image.
    Detect(cmd_detect::DetectArgs),
    /// Stylise an image with one of multistyle26's 26 styles or a blend.
    Stylize(cmd_stylize::StylizeArgs),
    /// The models heimdall can fetch: list them, fetch them into the cache, print a path.
    Models(cmd_models::ModelsArgs),
}

fn main() {
    // Die quietly like other Unix tools when the reader of stdout goes away (`| head`), instead
    // of panicking on the failed write.
    #[cfg(unix)]
    // SAFETY: restoring the default disposition of SIGPIPE before any thread is started.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Inspect(a) => cmd_inspect::run(a),
        Command::Run(a) => cmd_run::run(a),
        Command::Bench(a) => cmd_bench::run(a),
        Command::Partition(a) => cmd_partition::run(a),
        Command::Simulate(a) => cmd_simulate::run(a),
        Command::Detect(a) => cmd_detect::run(a),
        Command::Stylize(a) => cmd_stylize::run(a),
        Command::Models(a) => cmd_models::run(a),
    };
    if let Err(e) = result {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}
