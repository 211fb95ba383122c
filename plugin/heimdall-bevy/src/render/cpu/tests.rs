//! An inference run on the CPU model in pieces (the coordinator's continuous CPU work, at most
//! `cpu_chunk_ms` each, so an event waits at most one piece): each piece after the first goes on
//! from the CPU model's state ([`Resume::FromCpu`]), only the last sends the outputs on, and the
//! result is the one of a whole run of the model on the same input, bit for bit (the same
//! kernels on the same thread count), of the frame the inference started on (a piece that
//! started again from the input would read the job's frame again). The reference is a second CPU
//! model of the graph, run whole.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bevy::prelude::*;
use heimdall_coordinator::{CpuWork, ModelId, Resume, WorkId};
use heimdall_cpu::{CpuModel, CpuOptions};
use heimdall_vision::image::{Crop, Normalization, resample};

use super::run_on_cpu_model;
use crate::bridge::channel::{Outbox, RenderMessage};
use crate::clock::HeimdallClock;
use crate::dnn::{Backend, ConvCache};
use crate::render::cpu_run::CpuSink;
use crate::render::models::{
    Compiled, CpuShare, DnnSetup, Inference, Job, ModelState, ReadbackState, RenderModel,
    compile_cpu,
};
use crate::workers::{CpuDone, Workers};

/// The bundled face detector (about 100 ops).
fn graph() -> heimdall_ir::Graph {
    let path = heimdall_testkit::assets_dir().join("models/face_detection_short_range.tflite");
    let bytes = std::fs::read(&path).expect("the bundled face detector");
    crate::asset::import(&bytes, "face", None, &Default::default()).expect("imports")
}

/// A DNN entity's render-world components.
struct TestDnn {
    setup: DnnSetup,
    model: RenderModel,
    run: Inference,
}

/// A DNN entity's render-world state, compiled for the CPU only, with an inference of `pixels`
/// in flight.
fn dnn(graph: &heimdall_ir::Graph, pixels: Arc<Vec<u8>>, size: UVec2) -> TestDnn {
    let share = CpuShare {
        slots: 1,
        all_slots: false,
    };
    let cpu = compile_cpu(graph, share).expect("compiles");
    TestDnn {
        setup: DnnSetup {
            index: 0,
            name: "face".into(),
            model: AssetId::default(),
            source: Entity::PLACEHOLDER,
            decoder: None,
            normalization: Normalization::MINUS_ONE_TO_ONE,
            conv_cache: (ConvCache::Off, false),
            deadline_ms: None,
            utility: Default::default(),
            on_demand: false,
        },
        model: RenderModel {
            state: ModelState::Ready(Box::new(Compiled::assemble(cpu, None))),
            model_id: Some(ModelId(0)),
        },
        run: Inference {
            job: Some(job(pixels, size)),
            ..Inference::default()
        },
    }
}

fn job(pixels: Arc<Vec<u8>>, frame_size: UVec2) -> Job {
    Job {
        frame_index: 7,
        pins: Default::default(),
        capture_ms: 0.0,
        started_ms: 0.0,
        crop: Crop::FULL,
        pixels,
        frame_size,
        preprocess: None,
        on_cpu: false,
        need_readback: false,
        readback: ReadbackState::None,
        cpu_step: None,
        resume: None,
    }
}

/// RGBA pixels of a `w × h` frame, varied by `seed`.
fn frame(w: u32, h: u32, seed: u32) -> Arc<Vec<u8>> {
    Arc::new(
        (0..w * h * 4)
            .map(|i| ((i.wrapping_mul(2654435761).wrapping_add(seed * 97)) >> 13) as u8)
            .collect(),
    )
}

/// The outputs of a whole run of a fresh CPU model on `pixels`.
fn reference(graph: &heimdall_ir::Graph, pixels: &[u8], size: UVec2) -> Vec<Vec<f32>> {
    let mut m = CpuModel::compile(graph, CpuOptions { threads: 1 }).unwrap();
    let [_, h, w, c] = m.input_shapes()[0][..] else {
        panic!("NHWC input")
    };
    let x = resample(
        pixels,
        size.x as usize,
        size.y as usize,
        &Crop::FULL,
        &Normalization::MINUS_ONE_TO_ONE,
        [h, w, c],
    )
    .unwrap();
    m.set_input(0, &x).unwrap();
    m.run().unwrap();
    (0..m.output_shapes().len())
        .map(|i| m.output(i).unwrap().to_vec())
        .collect()
}

/// Runs `pieces` of DNN `d`'s inference one after another, as the coordinator hands them out
/// (each once the one before is reported done); returns the reports and the results sent. With
/// `later`, the job's frame is replaced by it after the first piece: a piece that went on from
/// the CPU model's state does not read it, one that started again from the input would.
fn run_pieces(
    d: &mut TestDnn,
    pieces: &[(std::ops::Range<usize>, Resume)],
    later: Option<Arc<Vec<u8>>>,
) -> (Vec<CpuDone>, Vec<RenderMessage>) {
    let faults = crate::faults::HeimdallFaults::default();
    let workers = Workers::with_faults(2, faults.clone());
    let (tx, rx) = crossbeam_channel::unbounded();
    let (outbox, _failed) = Outbox::new(tx, faults);
    let clock = HeimdallClock::default();
    let e = Entity::PLACEHOLDER;
    let mut reports = Vec::new();
    for (k, (ops, resume)) in pieces.iter().enumerate() {
        let work = CpuWork {
            id: WorkId(k as u64 + 1),
            model: ModelId(0),
            ops: ops.clone(),
            est_ms: 1.0,
            threads: 1,
            offloaded: true,
            resume: *resume,
        };
        run_on_cpu_model(
            &work,
            e,
            (&d.setup, &d.model, &mut d.run),
            &workers.pool,
            CpuSink::plain(&workers),
            clock,
            &outbox,
        );
        let start = Instant::now();
        let report = loop {
            if let Some(r) = workers.done.drain().pop() {
                break r;
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "piece {k} never ended"
            );
            std::thread::sleep(Duration::from_millis(1));
        };
        assert_eq!(report.error, None, "piece {k}");
        assert_eq!(report.work, work.id);
        reports.push(report);
        if let (0, Some(pixels), Some(job)) = (k, &later, d.run.job.as_mut()) {
            job.pixels = pixels.clone();
        }
    }
    (reports, rx.try_iter().collect())
}

fn outputs(messages: &[RenderMessage]) -> Vec<Vec<Vec<f32>>> {
    messages
        .iter()
        .filter_map(|m| match m {
            RenderMessage::Result(r) => {
                assert_eq!(r.backend, Backend::Cpu);
                assert_eq!(r.frame_index, 7);
                Some(r.tensors.as_ref().clone())
            }
            _ => None,
        })
        .collect()
}

#[test]
fn an_inference_in_pieces_goes_on_from_the_cpu_models_state() {
    let graph = graph();
    let size = UVec2::new(64, 48);
    let pixels = frame(size.x, size.y, 1);
    let mut d = dnn(&graph, pixels.clone(), size);
    let n = d.model.compiled().unwrap().steps;
    assert!(n > 20, "{n} steps");
    let (a, b) = (n / 3, 2 * n / 3);
    let pieces = [
        (0..a, Resume::Input),
        (a..b, Resume::FromCpu),
        (b..b + 1, Resume::FromCpu),
        (b + 1..n, Resume::FromCpu),
    ];
    let other = frame(size.x, size.y, 9);
    let (reports, messages) = run_pieces(&mut d, &pieces, Some(other.clone()));
    let finished: Vec<bool> = reports.iter().map(|r| r.finished).collect();
    assert_eq!(
        finished,
        [false, false, false, true],
        "only the last ends it"
    );
    let got = outputs(&messages);
    assert_eq!(got.len(), 1, "one result, from the last piece");
    assert_eq!(
        got[0],
        reference(&graph, &pixels, size),
        "pieces = one whole run of the first piece's frame"
    );
    assert_ne!(got[0], reference(&graph, &other, size));

    // The next inference (another frame) starts again from its input: in two pieces, as a
    // whole run of that frame.
    let next = frame(size.x, size.y, 2);
    d.run.job = Some(job(next.clone(), size));
    let (_, messages) = run_pieces(
        &mut d,
        &[(0..a, Resume::Input), (a..n, Resume::FromCpu)],
        None,
    );
    assert_eq!(outputs(&messages), [reference(&graph, &next, size)]);
    assert_ne!(reference(&graph, &next, size), got[0], "the frames differ");
}

/// A piece that says the CPU model holds the state at its start while this inference never ran
/// on the CPU model (the ops before it ran elsewhere: the GPU, a CPU fallback step of the GPU
/// model) starts the inference again from its input: the result is still the frame's.
#[test]
fn a_first_piece_without_cpu_state_starts_from_the_input() {
    let graph = graph();
    let size = UVec2::new(40, 40);
    let pixels = frame(size.x, size.y, 3);
    let mut d = dnn(&graph, pixels.clone(), size);
    let n = d.model.compiled().unwrap().steps;
    // The model's state from another frame, as a stale CPU model would hold it.
    let stale = frame(size.x, size.y, 4);
    d.run.job = Some(job(stale, size));
    run_pieces(&mut d, &[(0..n / 2, Resume::Input)], None);
    d.run.job = Some(job(pixels.clone(), size));
    let (reports, messages) = run_pieces(&mut d, &[(n / 2..n, Resume::FromCpu)], None);
    assert!(reports[0].finished);
    assert_eq!(outputs(&messages), [reference(&graph, &pixels, size)]);
}
