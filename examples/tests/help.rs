//! Every example (each `[[example]]` of examples/Cargo.toml) answers `--help` with exit 0 and
//! its options by group, and a wrong option with clap's error and usage (exit 2), before any
//! window, GPU or asset is touched.

mod common;

use std::process::Command;

use common::{example_binary, log_of};

/// The names of the `[[example]]` targets of examples/Cargo.toml.
fn examples() -> Vec<String> {
    let manifest = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"))
        .expect("examples/Cargo.toml");
    let mut names = Vec::new();
    let mut in_example = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_example = line == "[[example]]";
        } else if let Some(name) = line.strip_prefix("name = ").filter(|_| in_example) {
            names.push(name.trim_matches('"').to_string());
        }
    }
    names
}

#[test]
fn every_example_answers_help_with_exit_0() {
    let names = examples();
    assert_eq!(names, ["emoji", "shopping", "workspace"]);
    for name in &names {
        let out = Command::new(example_binary(name))
            .arg("--help")
            .output()
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let log = log_of(&out);
        assert_eq!(out.status.code(), Some(0), "{name} --help:\n{log}");
        let help = String::from_utf8_lossy(&out.stdout);
        assert!(help.contains(&format!("Usage: {name}")), "{name}:\n{help}");
        for part in [
            "Run:",
            "Coordination:",
            "Scene and load:",
            "Ablations and comparisons:",
            "--headless",
            "--resolution <WxH>",
            "--mode <heimdall|fifo|layers:K>",
            "--record-run",
        ] {
            assert!(help.contains(part), "{name}: {part} not in:\n{help}");
        }
    }
}

#[test]
fn a_wrong_option_is_a_usage_error() {
    for name in examples() {
        let out = Command::new(example_binary(&name))
            .args(["--headless", "--nope"])
            .output()
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}:\n{err}");
        assert!(
            err.contains("--nope") && err.contains("Usage:"),
            "{name}:\n{err}"
        );
        let out = Command::new(example_binary(&name))
            .args(["--fps", "0"])
            .output()
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(out.status.code(), Some(2), "{name}: --fps 0");
    }
}
