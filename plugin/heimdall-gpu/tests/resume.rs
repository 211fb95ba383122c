//! Moving a run to the CPU between two steps (`heimdall_gpu::resume`): ops `0..k` on the GPU,
//! the state at boundary `k` downloaded and set into a fresh `CpuModel`, ops `k..n` on the CPU.
//!
//! For every model of the golden suite (the bundled ones, the others fetched into the model
//! cache when missing), in f32 and in f16 (through the
//! accuracy guard, as the golden suite and the Bevy plugin compile f16), the outputs of the
//! resumed runs are held to the bounds the golden suite holds the GPU to in that precision
//! (`RuntimeKind::bound`), here against the CPU backend's own whole run on the model's first
//! golden input. A fresh CPU model's arena is zero, so a tensor missing from the state, or
//! downloaded wrong, shows in the outputs (`a_corrupted_or_missing_tensor_fails`).
//!
//! Each model prints how many of its boundaries are resumable and why the others are not.
//! `HEIMDALL_SKIP_GPU=1` skips.

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;

use heimdall::{LoadOptions, LoadedModel, load};
use heimdall_cpu::{CpuModel, CpuOptions};
use heimdall_gpu::guard::{GuardConfig, compile_guarded, cpu_reference};
use heimdall_gpu::{
    GpuModel, GpuOptions, NotResumable, Precision, ResumeError, ResumeState, restore_cpu,
};
use heimdall_ir::conv_cache::ConvCacheConfig;
use heimdall_ir::{
    BinaryFn, ConvAttrs, Epilogue, Graph, OpKind, Pad2d, PadMode, TensorId, UnaryKind,
};
use heimdall_testkit::goldens::{
    Format, GOLDEN_MODELS, GoldenCase, GoldenModel, RuntimeKind, calibration_inputs, cases,
    golden_model,
};

/// Boundaries checked per model and precision, spread evenly over the resumable ones (the first
/// and the last among them), besides the boundaries right after a reflect pad (see
/// [`sample`]).
const SAMPLES: usize = 10;

/// A golden model loaded for its first golden case.
struct Case {
    model: &'static GoldenModel,
    golden: GoldenCase,
    loaded: LoadedModel,
    /// The case's inputs in the IR's layout.
    inputs: Vec<Vec<f32>>,
}

impl Case {
    fn graph(&self) -> &Graph {
        &self.loaded.graph
    }

    fn input_refs(&self) -> Vec<&[f32]> {
        self.inputs.iter().map(Vec::as_slice).collect()
    }
}

/// The model file if it is bundled or cached (never fetched here).
fn present(model: &GoldenModel) -> Option<PathBuf> {
    // Bundled, cached, or fetched now: a test never passes for want of its model.
    let path = match model.format {
        Format::Tflite => heimdall_testkit::model_path(model.file),
        Format::Onnx => heimdall_testkit::onnx_model_path(model.file),
    };
    Some(path.unwrap_or_else(|e| panic!("{}: {e}", model.file)))
}

/// Loads golden model `id` for its first case, `None` when the model is not present.
fn load_case(id: &str) -> Option<Case> {
    let model = golden_model(id);
    let path = present(model)?;
    let golden = cases(model.file).swap_remove(0);
    let input_shapes = model
        .dynamic_input
        .map(|name| vec![(name.to_string(), golden.inputs[0].shape.clone())])
        .unwrap_or_default();
    let options = LoadOptions {
        passes: model.passes,
        input_shapes,
    };
    let loaded = load(&path, options).unwrap_or_else(|e| panic!("{id}: {e}"));
    let inputs = (golden.inputs.iter().zip(&loaded.io.inputs))
        .map(|(t, io)| io.to_ir(&t.data))
        .collect();
    Some(Case {
        model,
        golden,
        loaded,
        inputs,
    })
}

/// The model in `p` as the golden suite compiles it: f32 as asked, f16 through the guard,
/// calibrated on the model's calibration photo.
fn compile(gpu: &common::Gpu, case: &Case, p: Precision) -> GpuModel {
    let graph = case.graph();
    if p == Precision::F32 {
        return GpuModel::compile(&gpu.ctx, graph, GpuOptions::new(p)).expect("compile");
    }
    let calibration: Vec<Vec<f32>> = calibration_inputs(case.model, &case.golden)
        .iter()
        .zip(&case.loaded.io.inputs)
        .map(|(t, io)| io.to_ir(&t.data))
        .collect();
    let refs: Vec<&[f32]> = calibration.iter().map(Vec::as_slice).collect();
    let reference = cpu_reference(graph, &refs).expect("calibration reference");
    let guarded = compile_guarded(
        &gpu.ctx,
        graph,
        GpuOptions::new(p),
        &refs,
        &reference,
        &GuardConfig::default(),
    )
    .expect("guard");
    println!("{}", guarded.decision.log_line(case.model.id));
    guarded.model
}

/// Sets `state` into a fresh CPU model of `graph`, runs ops `step..` and returns the outputs.
fn resume_on_cpu(graph: &Graph, state: &ResumeState, step: usize) -> Vec<Vec<f32>> {
    let mut cpu = CpuModel::compile(graph, CpuOptions::default()).expect("cpu compile");
    restore_cpu(&mut cpu, state).expect("restore");
    cpu.run_range(step..graph.ops.len()).expect("cpu run");
    (0..graph.outputs.len())
        .map(|i| cpu.output(i).expect("output").to_vec())
        .collect()
}

/// Sets the inputs, then for each boundary of `steps` (ascending) runs the GPU up to it and
/// downloads the state there: one GPU run, cut at every boundary.
fn gpu_states(
    gpu: &common::Gpu,
    model: &GpuModel,
    inputs: &[&[f32]],
    steps: &[usize],
) -> Vec<ResumeState> {
    for (i, x) in inputs.iter().enumerate() {
        model.set_input(i, x).expect("input");
    }
    let mut done = 0;
    steps
        .iter()
        .map(|&k| {
            let mut encoder = gpu.ctx.device.create_command_encoder(&Default::default());
            model.encode(&mut encoder, done..k).expect("encode");
            gpu.ctx.queue.submit([encoder.finish()]);
            done = k;
            let state = model.resume().download(k).expect("download");
            let ids: Vec<TensorId> = state.iter().map(|(t, _)| *t).collect();
            assert_eq!(ids, model.resume().tensors(k).expect("resumable"));
            state
        })
        .collect()
}

/// The boundaries to check: [`SAMPLES`] spread over `resumable`, and up to three right after a
/// reflect pad (where the CPU's fusions change what it needs).
fn sample(graph: &Graph, resumable: &[usize]) -> Vec<usize> {
    let mut out: Vec<usize> = (0..SAMPLES)
        .map(|i| resumable[i * (resumable.len() - 1) / (SAMPLES - 1)])
        .collect();
    let after_pads = resumable.iter().filter(|&&s| {
        s > 0
            && matches!(
                graph.ops[s - 1].kind,
                OpKind::Pad {
                    mode: PadMode::Reflect,
                    ..
                }
            )
    });
    out.extend(after_pads.take(3));
    out.sort_unstable();
    out.dedup();
    out
}

/// The short kind of a reason.
fn reason(e: &NotResumable) -> &'static str {
    match e {
        NotResumable::OutOfRange { .. } => "out of range",
        NotResumable::NotProduced { .. } => "not produced by the GPU yet",
        NotResumable::NoStorage { .. } => "no GPU memory",
        NotResumable::Overwritten { .. } => "overwritten on the GPU",
    }
}

fn check(id: &str) {
    let Some(gpu) = common::gpu() else { return };
    let Some(case) = load_case(id) else {
        println!("resume {id}: model not present, skipped");
        return;
    };
    let graph = case.graph();
    let n = graph.ops.len();
    let inputs = case.input_refs();
    let reference = cpu_reference(graph, &inputs).expect("CPU reference");
    for (p, kind) in [
        (Precision::F32, RuntimeKind::GpuF32),
        (Precision::F16, RuntimeKind::GpuF16),
    ] {
        let model = compile(gpu, &case, p);
        let (metric, bound) = kind.bound(case.model.format);
        let resumable = model.resume().steps();
        assert_eq!(resumable.first(), Some(&0), "{id} {p:?}: step 0");
        assert_eq!(resumable.last(), Some(&n), "{id} {p:?}: the last step");
        // Every boundary: the tensors named are ones a CPU model of the graph stores; the
        // others say why, naming a tensor.
        let mut cpu = CpuModel::compile(graph, CpuOptions { threads: 1 }).expect("cpu compile");
        let mut reasons: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for s in 0..=n {
            match model.resume().tensors(s) {
                Ok(ids) => {
                    for t in ids {
                        let zeros = vec![0.0; graph.tensor(t).numel()];
                        assert!(
                            cpu.set_tensor(t, &zeros).is_some(),
                            "{id} {p:?} step {s}: the CPU has no storage for tensor {}",
                            t.0
                        );
                    }
                }
                Err(e) => {
                    assert!(e.to_string().contains("tensor"), "{e}");
                    assert!(!matches!(e, NotResumable::OutOfRange { .. }), "{e}");
                    reasons.entry(reason(&e)).or_default().push(s);
                }
            }
        }
        assert!(
            matches!(
                model.resume().tensors(n + 1),
                Err(NotResumable::OutOfRange { .. })
            ),
            "{id}: step n + 1"
        );
        let steps = sample(graph, &resumable);
        let states = gpu_states(gpu, &model, &inputs, &steps);
        let mut worst = (0.0f64, 0);
        for (&k, state) in steps.iter().zip(&states) {
            let out = resume_on_cpu(graph, state, k);
            for (i, (o, r)) in out.iter().zip(&reference).enumerate() {
                let err = metric.error(o, r);
                assert!(
                    err <= bound,
                    "{id} {p:?}: resumed at step {k} of {n}, output {i} misses the CPU's \
                     whole run by {err:.3e} > {bound:.0e} ({metric:?})"
                );
                if err > worst.0 {
                    worst = (err, k);
                }
            }
        }
        println!(
            "resume {id} {p:?}: {} of {} boundaries resumable; checked {steps:?}: max error \
             {:.2e} (at step {}) <= {bound:.0e} ({metric:?}); not resumable: {reasons:?}",
            resumable.len(),
            n + 1,
            worst.0,
            worst.1,
        );
        gpu.assert_no_errors();
    }
}

macro_rules! model_tests {
    ($($id:ident),*) => {
        $( #[test] fn $id() { check(stringify!($id)); } )*

        #[test]
        fn every_golden_model_has_a_test() {
            let ids: Vec<&str> = GOLDEN_MODELS.iter().map(|m| m.id).collect();
            assert_eq!([$(stringify!($id)),*].as_slice(), ids.as_slice());
        }
    };
}

mod models {
    use super::GOLDEN_MODELS;
    use super::check;

    model_tests!(
        face_detection_short_range,
        face_detection_full_range_sparse,
        face_landmark,
        face_landmark_with_attention,
        iris_landmark,
        palm_detection_lite,
        palm_detection_full,
        hand_landmark_lite,
        hand_landmark_full,
        hand_recrop,
        pose_detection,
        pose_landmark_full,
        selfie_segmentation,
        selfie_segmentation_landscape,
        multistyle26,
        multistyle26_without_passes,
        pp_ocrv6_det_small
    );
}

/// The checks above can fail: a state with one value changed, or without one of its tensors
/// (the fresh CPU model reads zeros there), misses the bound that the state as downloaded meets.
#[test]
fn a_corrupted_or_missing_tensor_fails() {
    let Some(gpu) = common::gpu() else { return };
    let case = load_case("face_detection_short_range").expect("bundled model");
    let graph = case.graph();
    let inputs = case.input_refs();
    let reference = cpu_reference(graph, &inputs).expect("CPU reference");
    let model = compile(gpu, &case, Precision::F32);
    let (metric, bound) = RuntimeKind::GpuF32.bound(case.model.format);
    let worst = |state: &ResumeState, k: usize| {
        let out = resume_on_cpu(graph, state, k);
        (out.iter().zip(&reference))
            .map(|(o, r)| metric.error(o, r))
            .fold(0.0, f64::max)
    };
    let resumable = model.resume().steps();
    let k = resumable[resumable.len() / 2];
    let state = gpu_states(gpu, &model, &inputs, &[k]).swap_remove(0);
    assert!(!state.is_empty(), "step {k}: nothing to download");
    let ok = worst(&state, k);
    assert!(ok <= bound, "as downloaded: {ok:.3e}");
    // One value of the largest tensor, in its middle.
    let big = (0..state.len())
        .max_by_key(|&i| state[i].1.len())
        .expect("a tensor");
    let mut corrupted = state.clone();
    let v = &mut corrupted[big].1;
    let mid = v.len() / 2;
    v[mid] += 1e3;
    let changed = worst(&corrupted, k);
    assert!(
        changed > bound,
        "step {k}: one value of tensor {} changed by 1e3, still within the bound ({changed:.3e})",
        state[big].0.0
    );
    let mut missing = state.clone();
    missing.remove(big);
    let without = worst(&missing, k);
    assert!(
        without > bound,
        "step {k}: without tensor {}: {without:.3e}",
        state[big].0.0
    );
    println!(
        "step {k}: as downloaded {ok:.2e}, one value changed {changed:.2e}, without tensor {} \
         {without:.2e}; bound {bound:.0e}",
        state[big].0.0
    );
}

/// With the convolution cache the model has two memory plans (the cached one while the cache is
/// on, the plain one while it is off): the state comes from the plan of the run in progress, and
/// the cached ops' kept outputs are in it. Three runs on one input: the first computes
/// everything, the second takes every cached op's output from the cache, the third runs with
/// the cache off.
#[test]
fn with_the_convolution_cache_on_and_off() {
    let Some(gpu) = common::gpu() else { return };
    let case = load_case("face_detection_short_range").expect("bundled model");
    let graph = case.graph();
    let inputs = case.input_refs();
    let reference = cpu_reference(graph, &inputs).expect("CPU reference");
    let config = ConvCacheConfig {
        range: [-1.0, 1.0],
        expiry_ms: 0,
        ..ConvCacheConfig::default()
    };
    let options = GpuOptions::new(Precision::F32).with_conv_cache(config);
    let model = GpuModel::compile(&gpu.ctx, graph, options).expect("compile");
    assert!(!model.report().cached_ops.is_empty(), "no op is cached");
    let (metric, bound) = RuntimeKind::GpuF32.bound(case.model.format);
    for (run, active) in [true, true, false].into_iter().enumerate() {
        model.set_conv_cache_active(active);
        assert_eq!(model.conv_cache_active(), active);
        let steps = sample(graph, &model.resume().steps());
        let states = gpu_states(gpu, &model, &inputs, &steps);
        for (&k, state) in steps.iter().zip(&states) {
            let out = resume_on_cpu(graph, state, k);
            for (i, (o, r)) in out.iter().zip(&reference).enumerate() {
                let err = metric.error(o, r);
                assert!(
                    err <= bound,
                    "run {run} (cache on: {active}): resumed at step {k}, output {i}: \
                     {err:.3e} > {bound:.0e}"
                );
            }
        }
    }
    gpu.assert_no_errors();
}

/// Bad requests are errors, never panics: a step past the end, a state the CPU model cannot
/// take.
#[test]
fn bad_requests_are_errors() {
    let Some(gpu) = common::gpu() else { return };
    let case = load_case("face_detection_short_range").expect("bundled model");
    let graph = case.graph();
    let model = GpuModel::compile(&gpu.ctx, graph, GpuOptions::new(Precision::F16)).unwrap();
    let n = model.num_steps();
    assert!(!model.resume().is_resumable(n + 1));
    assert!(!model.resume().is_resumable(usize::MAX));
    assert!(model.resume().bytes(n + 1).is_err());
    let mut encoder = gpu.ctx.device.create_command_encoder(&Default::default());
    let e = model
        .resume()
        .encode_download(n + 1, &mut encoder)
        .unwrap_err();
    assert!(
        matches!(
            e,
            ResumeError::NotResumable(NotResumable::OutOfRange { step, steps }) if step == n + 1 && steps == n
        ),
        "{e}"
    );
    let mut cpu = CpuModel::compile(graph, CpuOptions { threads: 1 }).unwrap();
    let t = graph.inputs[0];
    let e = restore_cpu(&mut cpu, &[(t, vec![0.0; 3])]).unwrap_err();
    assert!(
        matches!(e, ResumeError::CpuRefused { tensor, len: 3 } if tensor == t),
        "{e}"
    );
    // A download taken twice: the second take has nothing.
    let x = vec![0.5; graph.tensor(t).numel()];
    model.set_input(0, &x).unwrap();
    let d = model.resume().encode_download(0, &mut encoder).unwrap();
    gpu.ctx.queue.submit([encoder.finish()]);
    d.request().unwrap();
    assert!(d.request().is_err(), "requested twice");
    gpu.ctx
        .device
        .poll(wgpu::PollType::Wait {
            submission_index: None,
            timeout: None,
        })
        .unwrap();
    while !d.is_ready() {
        std::thread::sleep(std::time::Duration::from_millis(1));
        let _ = gpu.ctx.device.poll(wgpu::PollType::Poll);
    }
    let state = d.take().unwrap().expect("ready");
    assert_eq!(state, vec![(t, x)]);
    assert_eq!(d.take().unwrap(), None);
    gpu.assert_no_errors();
}

/// The CPU's reflect-pad fusions, on small graphs, boundary by boundary.
mod fusions {
    use super::*;
    use common::GraphBuilder;

    fn pad() -> OpKind {
        OpKind::Pad {
            pads: vec![[0, 0], [1, 1], [1, 1], [0, 0]],
            mode: PadMode::Reflect,
        }
    }

    fn conv() -> OpKind {
        OpKind::Conv2d(ConvAttrs {
            stride: [1, 1],
            dilation: [1, 1],
            pad: Pad2d::default(),
        })
    }

    /// Runs `graph` on the GPU cut at every resumable boundary and on the CPU from there;
    /// returns the boundaries' results.
    fn every_boundary(graph: &Graph) -> Vec<Result<Vec<TensorId>, NotResumable>> {
        let gpu = common::gpu().expect("checked by the caller");
        let inputs = common::inputs_for(graph, 7);
        let reference = common::run_cpu(graph, &inputs);
        let refs: Vec<&[f32]> = inputs.iter().map(Vec::as_slice).collect();
        let model = GpuModel::compile(&gpu.ctx, graph, GpuOptions::new(Precision::F32)).unwrap();
        let resumable = model.resume().steps();
        let states = gpu_states(gpu, &model, &refs, &resumable);
        for (&k, state) in resumable.iter().zip(&states) {
            let out = resume_on_cpu(graph, state, k);
            for (o, r) in out.iter().zip(&reference) {
                let err = heimdall_testkit::rel_l2(o, r);
                let tol = common::kernel_tolerance(Precision::F32);
                assert!(err <= tol, "resumed at step {k}: {err:.3e} > {tol:.0e}");
            }
        }
        gpu.assert_no_errors();
        (0..=graph.ops.len())
            .map(|s| model.resume().tensors(s))
            .collect()
    }

    /// `a = RELU(x)` and `c = NEG(x)` written straight into their parts of a free
    /// concatenation's output: between them and the concatenation the CPU needs `a` and `b`,
    /// read from the output's slot at their offsets.
    #[test]
    fn the_inputs_of_a_free_concatenation() {
        let Some(gpu) = common::gpu() else { return };
        let mut b = GraphBuilder::default();
        let x = b.input(&[1, 8, 8, 8]);
        let relu = OpKind::Unary(UnaryKind::Relu);
        let neg = OpKind::Unary(UnaryKind::Neg);
        let a = b.op(relu.clone(), vec![x], &[1, 8, 8, 8], Epilogue::default());
        let c = b.op(neg, vec![x], &[1, 8, 8, 8], Epilogue::default());
        let cat = OpKind::Concatenation { axis: 3 };
        let y = b.op(cat, vec![a, c], &[1, 8, 8, 16], Epilogue::default());
        let z = b.op(relu, vec![y], &[1, 8, 8, 16], Epilogue::default());
        let g = b.finish(vec![z]);
        let model = GpuModel::compile(&gpu.ctx, &g, GpuOptions::new(Precision::F32)).unwrap();
        assert_eq!(
            model.report().free_concats,
            1,
            "the concatenation is not free"
        );
        let r = every_boundary(&g);
        assert_eq!(r[1], Ok(vec![x, a]));
        assert_eq!(r[2], Ok(vec![a, c]));
        assert_eq!(r[3], Ok(vec![y]));
        assert_eq!(r[4], Ok(vec![z]));
    }

    /// `x -> INSTANCE_NORM -> n -> PAD_REFLECT -> p -> CONV -> y`: the CPU's normalisation
    /// writes the padded tensor, so between the two ops it needs `p`, which the GPU writes in
    /// the pad.
    #[test]
    fn a_pad_fused_into_the_norm_before_it() {
        if common::gpu().is_none() {
            return;
        }
        let mut b = GraphBuilder::default();
        let x = b.input(&[1, 6, 7, 8]);
        let norm = OpKind::InstanceNorm { epsilon: 1e-5 };
        let n = b.op(norm, vec![x], &[1, 6, 7, 8], Epilogue::default());
        let p = b.op(pad(), vec![n], &[1, 8, 9, 8], Epilogue::default());
        let f = b.constant(&[4, 3, 3, 8], 3);
        let y = b.op(conv(), vec![p, f], &[1, 6, 7, 4], Epilogue::default());
        let g = b.finish(vec![y]);
        let r = every_boundary(&g);
        assert_eq!(r[0], Ok(vec![x]));
        match &r[1] {
            Err(NotResumable::NotProduced {
                step: 1,
                tensor,
                cpu_op: 0,
                cpu_op_name,
                gpu_op: 1,
                gpu_op_name,
                ..
            }) if *tensor == p => {
                assert_eq!(*cpu_op_name, g.ops[0].kind.name());
                assert_eq!(*gpu_op_name, g.ops[1].kind.name());
            }
            other => panic!("step 1: {other:?}"),
        }
        println!("{}", r[1].as_ref().unwrap_err());
        assert_eq!(r[2], Ok(vec![p]));
        assert_eq!(r[3], Ok(vec![y]));
    }

    /// `x -> RELU -> a -> PAD_REFLECT -> p -> CONV`, with `q = RELU(x)` between the pad and
    /// the convolution: the CPU's convolution reads `a` through the pad, so after the pad the
    /// CPU needs `a`, which the GPU no longer reads; it is intact after the pad, but `q` takes
    /// its slot in the next op.
    #[test]
    fn a_pad_fused_into_the_convolution_after_it() {
        if common::gpu().is_none() {
            return;
        }
        let mut b = GraphBuilder::default();
        let x = b.input(&[1, 6, 7, 8]);
        let relu = OpKind::Unary(UnaryKind::Relu);
        let a = b.op(relu.clone(), vec![x], &[1, 6, 7, 8], Epilogue::default());
        let p = b.op(pad(), vec![a], &[1, 8, 9, 8], Epilogue::default());
        let q = b.op(relu, vec![x], &[1, 6, 7, 8], Epilogue::default());
        let f = b.constant(&[8, 3, 3, 8], 3);
        let y = b.op(conv(), vec![p, f], &[1, 6, 7, 8], Epilogue::default());
        let z = b.op(
            OpKind::Binary(BinaryFn::Add),
            vec![y, q],
            &[1, 6, 7, 8],
            Epilogue::default(),
        );
        let g = b.finish(vec![z]);
        let r = every_boundary(&g);
        assert_eq!(r[1], Ok(vec![x, a]));
        // After the pad: `a`, not `p` (which the CPU does not store).
        assert_eq!(r[2], Ok(vec![x, a]));
        match &r[3] {
            Err(NotResumable::Overwritten {
                step: 3,
                tensor,
                op: Some(0),
                by_op: 2,
                by_tensor,
                ..
            }) if *tensor == a && *by_tensor == q => {}
            other => panic!("step 3: {other:?}"),
        }
        println!("{}", r[3].as_ref().unwrap_err());
        assert_eq!(r[4], Ok(vec![q, y]));
    }
}

/// multistyle26's instance normalisations and resizes that the CPU fuses a reflect pad into:
/// the boundary between each and its pad is not resumable, and says so naming the pad's output
/// and both ops; every other boundary is resumable.
#[test]
fn multistyle26_reports_its_fused_pads() {
    let Some(gpu) = common::gpu() else { return };
    let case = load_case("multistyle26").expect("bundled model");
    let graph = case.graph();
    let model = GpuModel::compile(&gpu.ctx, graph, GpuOptions::new(Precision::F16)).unwrap();
    let consumers = graph.consumers();
    let mut fused: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (k, op) in graph.ops.iter().enumerate() {
        let (OpKind::InstanceNorm { .. } | OpKind::Resize(_), [out]) =
            (&op.kind, op.outputs.as_slice())
        else {
            continue;
        };
        let &[pad] = consumers[out.index()].as_slice() else {
            continue;
        };
        if !matches!(
            graph.ops[pad].kind,
            OpKind::Pad {
                mode: PadMode::Reflect,
                ..
            }
        ) {
            continue;
        }
        let padded = graph.ops[pad].outputs[0];
        match model.resume().tensors(k + 1) {
            Err(NotResumable::NotProduced {
                tensor,
                cpu_op,
                gpu_op,
                ..
            }) if tensor == padded && cpu_op == k && gpu_op == pad => {
                fused.entry(op.kind.name()).or_default().push(k + 1)
            }
            other => panic!("step {}: {other:?}", k + 1),
        }
    }
    assert!(
        fused.contains_key("INSTANCE_NORM"),
        "no instance norm followed by a reflect pad"
    );
    let explained: Vec<usize> = fused.values().flatten().copied().collect();
    let not_resumable: Vec<usize> = (0..=model.num_steps())
        .filter(|&s| !model.resume().is_resumable(s))
        .collect();
    let mut sorted = explained.clone();
    sorted.sort_unstable();
    assert_eq!(not_resumable, sorted);
    println!(
        "multistyle26: {} of {} boundaries resumable; not resumable, a pad fused into the op \
         before it: {fused:?}; e.g. {}",
        model.resume().steps().len(),
        model.num_steps() + 1,
        model.resume().tensors(sorted[0]).unwrap_err()
    );
}
