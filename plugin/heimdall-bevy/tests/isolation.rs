//! A panic in a decoder fails its DNN, not the app: with GPU results decoded on the decode
//! threads, on the readback thread, and with CPU results decoded on the worker that computed
//! them, a decoder that panics (and one that panics delivering its result in the main world)
//! gets `DnnFailed` with `DnnError::Panicked` and the panic's message, the other DNN keeps
//! delivering, `stats.json` counts the panics, and `RestartDnn` brings the failed DNN back (loading and
//! compiling again, then results).

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bevy::prelude::*;
use heimdall_bevy::prelude::*;

/// A decoder that panics decoding (or delivering) its `nth` result, and only that one.
struct Panicky {
    nth: usize,
    in_deliver: bool,
    seen: AtomicUsize,
}

#[derive(Component)]
struct Decoded(#[allow(dead_code)] usize);

impl DnnDecoder for Panicky {
    type Output = usize;

    fn decode(&self, _: &DecodeInput) -> Result<usize, DecodeError> {
        let n = self.seen.fetch_add(1, Ordering::SeqCst);
        if n == self.nth && !self.in_deliver {
            panic!("a decoder bug at result {n}");
        }
        Ok(n)
    }

    fn deliver(&self, n: usize, entity: &mut EntityWorldMut) {
        if n == self.nth && self.in_deliver {
            panic!("a delivery bug at result {n}");
        }
        entity.insert(Decoded(n));
    }
}

fn panicky(nth: usize, in_deliver: bool) -> Panicky {
    Panicky {
        nth,
        in_deliver,
        seen: AtomicUsize::new(0),
    }
}

/// Every `DnnFailed` so far.
#[derive(Resource, Default)]
struct Failed(Vec<(Entity, DnnError)>);

fn scenario(name: &str, settings: HeimdallSettings, backend: Backend) {
    eprintln!("== {name}");
    let mut app = common::headless_app(settings);
    app.init_resource::<Failed>()
        .add_observer(|f: On<DnnFailed>, mut all: ResMut<Failed>| {
            all.0.push((f.entity, f.error.clone()))
        });
    let (h, w) = (24usize, 32usize);
    let model = common::add_model(&mut app, common::identity_graph(h, w));
    let camera = app
        .world_mut()
        .spawn(common::synthetic_camera(w as u32, h as u32))
        .id();
    let healthy = app.world_mut().spawn(Dnn::new(model.clone(), camera)).id();
    let decode = app
        .world_mut()
        .spawn(Dnn::new(model.clone(), camera).with_decoder(panicky(2, false)))
        .id();
    let deliver = app
        .world_mut()
        .spawn(Dnn::new(model, camera).with_decoder(panicky(2, true)))
        .id();
    let failed = |app: &App, e: Entity| {
        matches!(
            app.world().get::<DnnStatus>(e),
            Some(DnnStatus::Failed(DnnError::Panicked(_)))
        )
    };
    common::run_until(&mut app, Duration::from_secs(180), |app| {
        failed(app, decode) && failed(app, deliver)
    });
    for (e, what) in [(decode, "a decoder bug"), (deliver, "a delivery bug")] {
        let events: Vec<_> = (app.world().resource::<Failed>().0.iter())
            .filter(|(f, _)| *f == e)
            .collect();
        assert_eq!(
            events.len(),
            1,
            "{name}: one DnnFailed for {what}: {events:?}"
        );
        match &events[0].1 {
            DnnError::Panicked(m) => assert!(m.contains(what), "{name}: {m}"),
            other => panic!("{name}: {other:?}"),
        }
    }
    // The healthy DNN goes on.
    let at_failure = common::results_of(&app, healthy);
    common::run_until(&mut app, Duration::from_secs(120), |app| {
        common::results_of(app, healthy) >= at_failure + 5
    });
    assert!(
        common::results_of(&app, healthy) >= at_failure + 5,
        "{name}: the healthy DNN stopped delivering after the panics"
    );
    let results = &app.world().resource::<common::Results>().0;
    assert!(
        results.iter().all(|r| r.output.backend == backend),
        "{name}: results on another backend than {backend:?}"
    );
    // Failed DNNs deliver nothing more.
    let decoded_before = common::results_of(&app, decode);
    for _ in 0..20 {
        app.update();
    }
    assert_eq!(common::results_of(&app, decode), decoded_before, "{name}");
    let faults = app.world().resource::<HeimdallFaults>();
    assert_eq!(faults.panics(), 2, "{name}: {:#}", faults.to_json());
    // Restarted, the DNN loads and compiles again and delivers (its decoder is past the result
    // it panicked on). A model that compiles at once (the CPU's identity) can go from
    // `Compiling` to `Ready` within one update, so the test looks for it leaving `Failed` for a
    // pending status (`Loading` or `Compiling`) before it is ready again.
    app.world_mut().write_message(RestartDnn(decode));
    let mut pending = false;
    common::run_until(&mut app, Duration::from_secs(180), |app| {
        pending |= app
            .world()
            .get::<DnnStatus>(decode)
            .is_some_and(DnnStatus::is_pending);
        pending && common::results_of(app, decode) >= decoded_before + 3
    });
    assert!(pending, "{name}: the restarted DNN did not load again");
    assert!(
        common::results_of(&app, decode) >= decoded_before + 3,
        "{name}: no results after the restart"
    );
    assert_eq!(
        app.world().get::<DnnStatus>(decode),
        Some(&DnnStatus::Ready(backend))
    );
}

#[test]
fn a_panicking_decoder_fails_its_dnn_and_the_others_go_on() {
    if common::no_render_device() {
        return;
    }
    let base = HeimdallSettings {
        frame_rate: FrameRateTarget::Fixed(30.0),
        offload: false,
        precision: heimdall_gpu::Precision::F32,
        ..default()
    };
    if common::skip_gpu() {
        common::skipping("HEIMDALL_SKIP_GPU=1: the GPU scenarios");
    } else {
        scenario("GPU, decode threads", base.clone(), Backend::Gpu);
        let on_readback = HeimdallSettings {
            parallel_decode: false,
            ..base.clone()
        };
        scenario(
            "GPU, decoded on the readback thread",
            on_readback,
            Backend::Gpu,
        );
    }
    let cpu = HeimdallSettings {
        force_cpu: true,
        ..base
    };
    scenario("CPU workers", cpu, Backend::Cpu);
}
