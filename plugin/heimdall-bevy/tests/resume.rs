//! An offloaded inference keeps what the GPU computed: when the coordinator moves a model to the
//! CPU while the GPU is part way through one of its inferences, the CPU goes on from the GPU's
//! activations at the step reached (downloaded after that frame's chunks) instead of starting
//! again from the input.
//!
//! The model is a chain of exact multiplications (identity in f32) on frames whose index is
//! written into their pixels: a resumed result decodes to the frame it is stamped with only if
//! the CPU took over that inference's own activations, whole and in place.

mod common;

use std::time::Duration;

use bevy::prelude::*;
use common::{DecodedIndex, FrameIndexDecoder};
use heimdall_bevy::prelude::*;

/// Each result: (decoded index, stamped frame, step the CPU resumed from, backend).
#[derive(Resource, Default)]
struct Seen(Vec<(DecodedIndex, u64, Option<usize>, Backend)>);

#[test]
fn an_offloaded_inference_goes_on_from_the_gpus_step() {
    if common::skip_gpu() {
        eprintln!("HEIMDALL_SKIP_GPU=1: skipping");
        return;
    }
    let (h, w) = (48usize, 64usize);
    // A budget of about 1 ms a frame spreads the 42 steps over frames; a 40 ms deadline makes
    // a running inference late, and the offload evaluation moves the model to the CPU while
    // the GPU is part way through it.
    let settings = HeimdallSettings {
        frame_rate: FrameRateTarget::Fixed(30.0),
        margin_ms: 32.0,
        relaxation_ms: 0.0,
        precision: heimdall_gpu::Precision::F32,
        guard: None,
        offload: true,
        ..default()
    };
    let mut app = common::headless_app(settings);
    app.init_resource::<Seen>();
    let scales: Vec<f32> = [2.0, 0.5].repeat(20);
    let model = common::add_model(&mut app, common::scale_graph("chain", h, w, &scales));
    let camera = app
        .world_mut()
        .spawn(common::synthetic_camera(w as u32, h as u32))
        .id();
    app.world_mut()
        .spawn(
            Dnn::new(model, camera)
                .with_decoder(FrameIndexDecoder)
                .with_deadline(Duration::from_millis(40)),
        )
        .observe(
            |r: On<DnnResult>, q: Query<&DecodedIndex>, mut seen: ResMut<Seen>| {
                let index = q
                    .get(r.entity)
                    .expect("the decoder's component is in place");
                let o = &r.output;
                seen.0
                    .push((*index, o.frame_index, o.resumed_from_step, o.backend));
            },
        );
    let resumed = |app: &App| {
        app.world()
            .resource::<Seen>()
            .0
            .iter()
            .filter(|s| s.2.is_some())
            .count()
    };
    common::run_until(&mut app, Duration::from_secs(120), |app| {
        resumed(app) >= 1 && app.world().resource::<Seen>().0.len() >= 10
    });
    let seen = &app.world().resource::<Seen>().0;
    let results = app.world().resource::<common::Results>().0.len();
    assert_eq!(
        results,
        seen.len(),
        "every result decodes to a frame index (a resumed one from the right activations)"
    );
    for (index, frame, from, backend) in seen {
        assert_eq!(
            u64::from(index.decoded),
            *frame,
            "stamped {frame}, computed from frame {} (resumed from {from:?})",
            index.decoded
        );
        if from.is_some() {
            assert_eq!(*backend, Backend::Cpu);
        }
    }
    let steps: Vec<usize> = seen.iter().filter_map(|s| s.2).collect();
    eprintln!("{} results, resumed from steps {steps:?}", seen.len());
    assert!(
        !steps.is_empty(),
        "no inference was resumed from the GPU's step ({} results)",
        seen.len()
    );
    assert!(steps.iter().all(|&k| k > 0 && k < scales.len() + 2));
    let stats = app.world().resource::<HeimdallStats>();
    let m = stats.models.values().next().expect("the model's stats");
    assert_eq!(m.resumed_from_gpu, steps.len());
}
