//! The accuracy guard's decisions kept between runs ([`crate::HeimdallSettings::guard_store`]):
//! one JSON file per model and adapter, keyed as `heimdall_coordinator::ProfileStore` keys
//! profiles ([`ProfileKey`]: a content hash and the adapter's description), named
//! `guard-<model hash>-<adapter hash>.json`.
//!
//! The content hashed is the imported graph (every op with its parameters, every tensor's shape,
//! type and constant values), not the model file: a decision names op indices of this graph,
//! which the same file imported by another version of the passes may not share. A file holds
//! the key, the precision asked and the guard's settings it was decided under, and the decision;
//! it is reused only when all of them match (otherwise the guard checks again and overwrites
//! it).
//!
//! ```json
//! {"format": "heimdall-guard/1", "model": "pose_landmark_full", "model_hash": "<32 hex>",
//!  "adapter": "llvmpipe (...)", "precision": "F16", "config": {"bound": 0.01, ...},
//!  "decision": {"f32_ranges": [[57, 58]], "overrides": [[57, 58, "F32"]], "ops": 332, ...}}
//! ```

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use heimdall_coordinator::ProfileKey;
use heimdall_gpu::guard::{GuardConfig, GuardDecision};
use heimdall_gpu::{GpuContext, Precision};
use heimdall_ir::Graph;
use serde_json::{Value, json};

use crate::bridge::guard_json::{decision_json, precision_name};

const FORMAT: &str = "heimdall-guard/1";

/// The key of `graph`'s decisions on `ctx`'s adapter.
pub(crate) fn key_of(graph: &Graph, ctx: &GpuContext) -> ProfileKey {
    ProfileKey::new(&graph_bytes(graph), ctx.describe())
}

/// What the content hash covers: the ops (kind, parameters, tensors), the tensors' shapes and
/// types and the constants' values, the inputs and outputs; not the names.
fn graph_bytes(graph: &Graph) -> Vec<u8> {
    let mut b = Vec::new();
    for t in &graph.tensors {
        b.extend_from_slice(format!("{:?}|{:?}|", t.shape, t.dtype).as_bytes());
        if let Some(c) = &t.constant {
            for v in &c.values {
                b.extend_from_slice(&v.to_bits().to_le_bytes());
            }
            for h in c.fp16.iter().flatten() {
                b.extend_from_slice(&h.to_le_bytes());
            }
            b.extend_from_slice(format!("|{:?}", c.sparsity).as_bytes());
        }
        b.push(b'\n');
    }
    for op in &graph.ops {
        b.extend_from_slice(format!("{op:?}\n").as_bytes());
    }
    b.extend_from_slice(format!("{:?}{:?}", graph.inputs, graph.outputs).as_bytes());
    b
}

/// Where the decision of `key` is (or would be) stored in `dir`.
pub(crate) fn path(dir: &Path, key: &ProfileKey) -> PathBuf {
    dir.join(format!("guard-{}", key.file_name()))
}

fn precision_of(s: &str) -> Option<Precision> {
    Precision::ALL.into_iter().find(|p| precision_name(*p) == s)
}

fn config_json(c: &GuardConfig) -> Value {
    json!({
        "bound": c.bound, "output_bounds": c.output_bounds, "floor_rms": c.floor_rms,
        "max_trials": c.max_trials, "min_range": c.min_range, "repair_margin": c.repair_margin,
    })
}

/// Reads a stored decision back; `None` for anything malformed.
fn decision_of(v: &Value) -> Option<GuardDecision> {
    let usize_of = |v: &Value| v.as_u64().and_then(|x| usize::try_from(x).ok());
    let range = |a: &Value| -> Option<Range<usize>> {
        let (s, e) = (usize_of(a.get(0)?)?, usize_of(a.get(1)?)?);
        (s <= e).then_some(s..e)
    };
    let errors = |v: &Value| -> Option<Vec<f64>> {
        v.as_array()?
            .iter()
            .map(|e| Some(e.as_f64().unwrap_or(f64::INFINITY)))
            .collect()
    };
    let f32_ranges = v["f32_ranges"]
        .as_array()?
        .iter()
        .map(range)
        .collect::<Option<Vec<_>>>()?;
    let overrides = v["overrides"]
        .as_array()?
        .iter()
        .map(|o| Some((range(o)?, precision_of(o.get(2)?.as_str()?)?)))
        .collect::<Option<Vec<_>>>()?;
    let bounds = v["bounds"]
        .as_array()?
        .iter()
        .map(Value::as_f64)
        .collect::<Option<Vec<_>>>()?;
    Some(GuardDecision {
        precision: precision_of(v["precision"].as_str()?)?,
        overrides,
        f32_ranges,
        ops: usize_of(&v["ops"])?,
        bounds,
        errors_before: errors(&v["errors_before"])?,
        errors_after: errors(&v["errors_after"])?,
        whole_f32: v["whole_f32"].as_bool()?,
        passed: v["passed"].as_bool()?,
        trials: usize_of(&v["trials"])?,
        cap_reached: v["cap_reached"].as_bool()?,
        time: Duration::from_secs_f64(v["time_ms"].as_f64()?.max(0.0) / 1e3),
    })
}

/// The decision stored in `dir` for `key`, made for `precision` under `config` on `graph`:
/// `Ok(None)` when there is none; `Err` (why) when the file cannot be read or was made for
/// another graph, adapter, precision or settings.
pub(crate) fn load(
    dir: &Path,
    key: &ProfileKey,
    precision: Precision,
    config: &GuardConfig,
    graph: &Graph,
) -> Result<Option<GuardDecision>, String> {
    let path = path(dir, key);
    let shown = path.display();
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{shown}: {e}")),
    };
    let v: Value = serde_json::from_str(&text).map_err(|e| format!("{shown}: bad JSON: {e}"))?;
    if v["format"] != FORMAT {
        return Err(format!("{shown}: not a `{FORMAT}` file"));
    }
    if v["model_hash"] != key.model_hash.as_str() || v["adapter"] != key.adapter.as_str() {
        return Err(format!(
            "{shown}: stored for another model or adapter ({} on `{}`)",
            v["model_hash"], v["adapter"]
        ));
    }
    if v["precision"] != precision_name(precision).as_str() {
        return Err(format!(
            "{shown}: decided for {} storage, not {precision:?}",
            v["precision"]
        ));
    }
    if v["config"] != config_json(config) {
        return Err(format!(
            "{shown}: decided under other guard settings ({})",
            v["config"]
        ));
    }
    let d = decision_of(&v["decision"]).ok_or_else(|| format!("{shown}: bad decision"))?;
    let fits = d.ops == graph.ops.len()
        && d.bounds.len() == graph.outputs.len()
        && d.overrides.iter().all(|(r, _)| r.end <= d.ops);
    if !fits {
        return Err(format!("{shown}: the decision does not fit the model"));
    }
    Ok(Some(d))
}

/// Stores `decision` (made for `precision` under `config` on the graph `model`) in `dir` under
/// `key`: written to a temporary file, then renamed. Returns the file's path.
pub(crate) fn save(
    dir: &Path,
    key: &ProfileKey,
    model: &str,
    precision: Precision,
    config: &GuardConfig,
    decision: &GuardDecision,
) -> Result<PathBuf, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let stored = json!({
        "format": FORMAT, "model": model, "model_hash": key.model_hash, "adapter": key.adapter,
        "precision": precision_name(precision), "config": config_json(config),
        "decision": decision_json(decision),
    });
    let text = serde_json::to_string_pretty(&stored).map_err(|e| e.to_string())?;
    let path = path(dir, key);
    let tmp = path.with_extension(format!("json.tmp{}", std::process::id()));
    std::fs::write(&tmp, text).map_err(|e| format!("{}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, &path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decision() -> GuardDecision {
        GuardDecision {
            precision: Precision::F16,
            overrides: vec![(1..2, Precision::F32), (4..6, Precision::F32)],
            f32_ranges: vec![1..2, 4..6],
            ops: 6,
            bounds: vec![1e-2],
            errors_before: vec![f64::INFINITY],
            errors_after: vec![3.5e-4],
            whole_f32: false,
            passed: true,
            trials: 7,
            cap_reached: false,
            time: Duration::from_millis(1234),
        }
    }

    fn graph(ops: usize) -> Graph {
        use heimdall_ir::{DType, Op, OpKind, TensorId, TensorInfo};
        let t = |i: usize| TensorInfo {
            name: format!("t{i}"),
            shape: vec![1, 2, 2, 3],
            dtype: DType::F32,
            constant: None,
        };
        Graph {
            name: "g".into(),
            tensors: (0..=ops).map(t).collect(),
            ops: (0..ops)
                .map(|i| {
                    Op::new(
                        OpKind::Reshape,
                        vec![TensorId(i as u32)],
                        vec![TensorId(i as u32 + 1)],
                    )
                })
                .collect(),
            inputs: vec![TensorId(0)],
            outputs: vec![TensorId(ops as u32)],
        }
    }

    #[test]
    fn a_decision_round_trips_and_only_under_its_own_key_precision_and_settings() {
        let dir = std::env::temp_dir().join(format!("heimdall-guard-store-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let key = ProfileKey::new(&graph_bytes(&graph(6)), "adapter A");
        let config = GuardConfig::default();
        let g = graph(6);
        assert_eq!(load(&dir, &key, Precision::F16, &config, &g), Ok(None));
        let d = decision();
        let path = save(&dir, &key, "g", Precision::F16, &config, &d).expect("save");
        assert!(path.ends_with(format!("guard-{}", key.file_name())));
        let back = load(&dir, &key, Precision::F16, &config, &g)
            .expect("load")
            .expect("stored");
        assert_eq!(back.overrides, d.overrides);
        assert_eq!(back.f32_ranges, d.f32_ranges);
        assert_eq!(back.errors_before, vec![f64::INFINITY]);
        assert_eq!(back.errors_after, d.errors_after);
        assert_eq!((back.ops, back.trials, back.passed), (6, 7, true));
        assert_eq!(back.time, d.time);
        // Another precision, other settings or another graph under the same file: not reused.
        assert!(load(&dir, &key, Precision::PackedF16, &config, &g).is_err());
        let other = GuardConfig {
            bound: 2e-2,
            ..GuardConfig::default()
        };
        assert!(load(&dir, &key, Precision::F16, &other, &g).is_err());
        assert!(load(&dir, &key, Precision::F16, &config, &graph(5)).is_err());
        // Another adapter is another file.
        let elsewhere = ProfileKey::new(&graph_bytes(&g), "adapter B");
        assert_eq!(
            load(&dir, &elsewhere, Precision::F16, &config, &g),
            Ok(None)
        );
        // A corrupt file is an error, not a panic.
        std::fs::write(&path, "{ not json").expect("write");
        assert!(load(&dir, &key, Precision::F16, &config, &g).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_hash_follows_the_content_not_the_names() {
        let a = graph(3);
        let mut renamed = a.clone();
        renamed.name = "other".into();
        renamed.tensors[1].name = "renamed".into();
        assert_eq!(graph_bytes(&a), graph_bytes(&renamed));
        let mut reshaped = a.clone();
        reshaped.tensors[1].shape = vec![1, 3, 2, 2];
        assert_ne!(graph_bytes(&a), graph_bytes(&reshaped));
        assert_ne!(graph_bytes(&a), graph_bytes(&graph(4)));
    }
}
