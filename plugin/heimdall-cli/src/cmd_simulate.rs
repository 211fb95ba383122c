//! `heimdall simulate SCENARIO.json [--policy NAME] [--json] [--trace OUT.json]`: runs the
//! coordinator on a virtual clock over a scenario file and prints frame and per-DNN statistics.

use std::path::PathBuf;

use anyhow::Context as _;
use heimdall_coordinator::sim::{Scenario, simulate};

/// Arguments of `heimdall simulate`.
#[derive(Debug, clap::Args)]
pub struct SimulateArgs {
    /// Scenario file (JSON; see assets/scenarios/README.md).
    pub scenario: PathBuf,
    /// Scheduling policy: max_min_utility, max_total_utility (default), least_slack_time, fifo,
    /// or layers:K.
    #[arg(long)]
    pub policy: Option<String>,
    /// Print the report as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Also write the timeline as Chrome trace JSON (open in Perfetto).
    #[arg(long, value_name = "OUT.json")]
    pub trace: Option<PathBuf>,
    /// Also simulate each DNN alone and print its isolated latency (table output only).
    #[arg(long)]
    pub isolated: bool,
}

/// Runs `heimdall simulate`.
pub fn run(args: &SimulateArgs) -> anyhow::Result<()> {
    let scenario = Scenario::from_file(&args.scenario)
        .with_context(|| format!("scenario {}", args.scenario.display()))?;
    let policy = args.policy.as_deref().unwrap_or("max_total_utility");
    let out = simulate(&scenario, policy, args.trace.is_some())?;
    if let Some(path) = &args.trace {
        std::fs::write(path, out.timeline.to_chrome_trace_string())
            .with_context(|| format!("writing trace {}", path.display()))?;
    }
    if args.json {
        println!("{}", out.report.to_json());
        return Ok(());
    }
    print!("{}", out.report.to_table());
    if args.isolated {
        for d in &scenario.dnns {
            let alone = scenario.only(&d.name).expect("the DNN is in the scenario");
            let r = simulate(&alone, policy, false)?.report;
            let l = r.dnns[0].latency_ms;
            println!(
                "isolated {:<18} mean {:>7.1} ms, max {:>7.1} ms",
                d.name, l.mean, l.max
            );
        }
    }
    if let Some(path) = &args.trace {
        println!("trace written to {}", path.display());
    }
    Ok(())
}
