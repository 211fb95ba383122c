//! `heimdall simulate SCENARIO.json [--policy NAME] [--jitter SIGMA --seed N] [--misprofile F]
//! [--replay TRACE.json] [--ablation both|chunking|offload|neither] [--placement planner|offload-rule]
//! [--json] [--trace OUT.json] [--isolated]`: runs the coordinator on a virtual clock over a
//! scenario file and prints frame and per-DNN statistics.

use std::path::PathBuf;

use anyhow::Context as _;
use heimdall_coordinator::sim::{Noise, Replay, Scenario, SimOptions, simulate_opts};
use heimdall_coordinator::{Ablation, PlacementRule, policy_by_name};

/// Arguments of `heimdall simulate`.
#[derive(Debug, clap::Args)]
pub struct SimulateArgs {
    /// Scenario file (JSON; see assets/scenarios/README.md).
    pub scenario: PathBuf,
    /// Scheduling policy: max_min_utility, max_total_utility (default), least_slack_time, fifo,
    /// or layers:K.
    #[arg(long)]
    pub policy: Option<String>,
    /// Multiply every step and render time by a log-normal factor `exp(SIGMA * z)` (median 1).
    #[arg(long, value_name = "SIGMA", default_value_t = 0.0)]
    pub jitter: f64,
    /// Seed of the noise: the same seed gives the same times.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub seed: u64,
    /// The coordinator starts from profiles F times the scenario's step times (its measurements
    /// then correct them).
    #[arg(long, value_name = "F", default_value_t = 1.0)]
    pub misprofile: f64,
    /// Replay the render and step times an app measured (format in assets/scenarios/README.md).
    #[arg(long, value_name = "TRACE.json")]
    pub replay: Option<PathBuf>,
    /// Which of chunking and offload run: both (default), chunking, offload or neither.
    #[arg(long, value_parser = parse_ablation, default_value = "both")]
    pub ablation: Ablation,
    /// Which rule moves DNNs between the GPU and the CPU: the placement planner (default), or
    /// the one-model-a-second offload rule it replaced (`offload-rule`, for comparison).
    #[arg(long, value_parser = parse_placement, default_value = "planner")]
    pub placement: PlacementRule,
    /// Print the report as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Also write the timeline as Chrome trace JSON (open in Perfetto).
    #[arg(long, value_name = "OUT.json")]
    pub trace: Option<PathBuf>,
    /// Also simulate each DNN alone (same noise) and print its isolated latency, and whether the
    /// event (or highest-priority) DNN's worst latency is within 1.5 x isolated + one period.
    #[arg(long)]
    pub isolated: bool,
}

fn parse_ablation(s: &str) -> Result<Ablation, String> {
    Ablation::parse(s).ok_or_else(|| format!("'{s}': expected both, chunking, offload or neither"))
}

fn parse_placement(s: &str) -> Result<PlacementRule, String> {
    match s {
        "planner" => Ok(PlacementRule::Planner),
        "offload-rule" => Ok(PlacementRule::OffloadRule),
        _ => Err(format!("'{s}': expected planner or offload-rule")),
    }
}

/// Runs `heimdall simulate`.
pub fn run(args: &SimulateArgs) -> anyhow::Result<()> {
    let scenario = Scenario::from_file(&args.scenario)
        .with_context(|| format!("scenario {}", args.scenario.display()))?;
    let policy = args.policy.as_deref().unwrap_or("max_total_utility");
    let replay = match &args.replay {
        Some(p) => Some(Replay::from_file(p).with_context(|| format!("replay {}", p.display()))?),
        None => None,
    };
    let opts = SimOptions {
        noise: Noise {
            sigma: args.jitter,
            seed: args.seed,
        },
        misprofile: args.misprofile,
        replay,
        record_timeline: args.trace.is_some(),
        record_run: false,
    };
    let ablation = args.ablation;
    let rule = args.placement;
    let sim = |sc: &Scenario, opts: &SimOptions| {
        simulate_opts(sc, policy_by_name(policy)?, opts, |c| {
            ablation.apply(c);
            c.placement.rule = rule;
        })
    };
    let out = sim(&scenario, &opts)?;
    if let Some(path) = &args.trace {
        std::fs::write(path, out.timeline.to_chrome_trace_string())
            .with_context(|| format!("writing trace {}", path.display()))?;
    }
    if args.json {
        println!("{}", out.report.to_json());
        return Ok(());
    }
    if args.jitter > 0.0 || args.misprofile != 1.0 || args.replay.is_some() {
        println!(
            "noise: jitter {} (seed {}), misprofile {}, replay {}",
            args.jitter,
            args.seed,
            args.misprofile,
            args.replay
                .as_ref()
                .map_or_else(|| "none".to_string(), |p| p.display().to_string())
        );
    }
    if ablation != Ablation::Both {
        println!("ablation: {}", ablation.name());
    }
    if rule != PlacementRule::Planner {
        println!("placement: the offload rule the planner replaced");
    }
    print!("{}", out.report.to_table());
    if args.isolated {
        let alone_opts = SimOptions {
            record_timeline: false,
            ..opts.clone()
        };
        let watched = scenario.priority_dnn().name.clone();
        let period = 1000.0 / scenario.frame_rate;
        for d in &scenario.dnns {
            let alone = scenario.only(&d.name).expect("the DNN is in the scenario");
            let l = sim(&alone, &alone_opts)?.report.dnns[0].latency_ms;
            println!(
                "isolated {:<18} mean {:>7.1} ms, max {:>7.1} ms",
                d.name, l.mean, l.max
            );
            if d.name == watched {
                let worst = out
                    .report
                    .dnn(&watched)
                    .expect("in the report")
                    .latency_ms
                    .max;
                let bound = 1.5 * l.max + period;
                println!(
                    "watched {watched}: worst {worst:.1} ms, bound 1.5 x isolated + period = \
                     {bound:.1} ms: {}",
                    if worst <= bound { "within" } else { "EXCEEDED" }
                );
            }
        }
    }
    if let Some(path) = &args.trace {
        println!("trace written to {}", path.display());
    }
    Ok(())
}
