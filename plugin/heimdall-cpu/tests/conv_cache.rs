//! The CPU backend's convolution cache on the bundled MediaPipe detectors, against an
//! independent reference: the uncached run of the same model on the same input.

use heimdall_cpu::{CacheCounts, ConvCacheConfig, CpuError, CpuModel, CpuOptions};
use heimdall_ir::conv_cache::{CachePlan, Field};
use heimdall_ir::passes::optimize;
use heimdall_ir::{DType, Graph, Op, OpKind, TensorId, TensorInfo, UnaryKind};
use heimdall_testkit::rel_l2;

/// A bundled model and the range its input is normalised to.
struct Subject {
    name: &'static str,
    range: [f32; 2],
}

const PALM: Subject = Subject {
    name: "palm_detection_lite",
    range: [0.0, 1.0],
};
const FACE: Subject = Subject {
    name: "face_detection_short_range",
    range: [-1.0, 1.0],
};

fn graph(s: &Subject) -> Graph {
    let path = heimdall_testkit::model_path(s.name).unwrap_or_else(|e| panic!("{e}"));
    let bytes = std::fs::read(&path).expect("read the model");
    let mut g = heimdall_tflite::import(&bytes, s.name).expect("import");
    optimize(&mut g).expect("passes");
    g
}

fn compile(g: &Graph) -> CpuModel {
    CpuModel::compile(g, CpuOptions { threads: 2 }).expect("compile")
}

/// The input's height, width and channels.
fn dims(g: &Graph) -> [usize; 3] {
    let s = &g.tensor(g.inputs[0]).shape;
    [s[1], s[2], s[3]]
}

/// A deterministic image in `range`: smooth gradients, a sinusoidal pattern and a bright disc;
/// `quadrant` replaces the bottom-right quarter with a high-contrast checkerboard.
fn image(d: [usize; 3], range: [f32; 2], quadrant: bool) -> Vec<f32> {
    let [h, w, c] = d;
    let mut out = Vec::with_capacity(h * w * c);
    for y in 0..h {
        for x in 0..w {
            let (u, v) = (y as f32 / h as f32, x as f32 / w as f32);
            let disc = ((u - 0.3).powi(2) + (v - 0.35).powi(2)) < 0.02;
            let checker = quadrant && y >= h / 2 && x >= w / 2;
            for ch in 0..c {
                let t = if checker {
                    let on = ((y / 4) + (x / 4) + ch) % 2 == 0;
                    if on { 0.08 } else { 0.92 }
                } else if disc {
                    0.95 - 0.1 * ch as f32
                } else {
                    let wave = (6.0 * u + 4.0 * v + ch as f32).sin() * (5.0 * v).cos();
                    (0.15 + 0.35 * [u, v, 1.0 - u][ch % 3] + 0.25 * (wave + 1.0) * 0.5).min(1.0)
                };
                out.push(range[0] + (range[1] - range[0]) * t);
            }
        }
    }
    out
}

/// `image` plus pseudo-random noise of -1, 0 or +1 levels of 255 (of the range), from `seed`.
fn noisy(clean: &[f32], range: [f32; 2], seed: u64) -> Vec<f32> {
    let mut r = heimdall_testkit::XorShift::new(seed);
    let step = (range[1] - range[0]) / 255.0;
    clean
        .iter()
        .map(|&v| v + step * ((r.next_u64() % 3) as f32 - 1.0))
        .collect()
}

fn run(m: &mut CpuModel, input: &[f32]) -> Vec<Vec<f32>> {
    m.set_input(0, input).expect("input");
    m.run().expect("run");
    (0..m.output_shapes().len())
        .map(|i| m.output(i).unwrap().to_vec())
        .collect()
}

/// The largest rel-L2 error over the outputs.
fn worst(out: &[Vec<f32>], reference: &[Vec<f32>]) -> f64 {
    out.iter()
        .zip(reference)
        .map(|(o, r)| rel_l2(o, r))
        .fold(0.0, f64::max)
}

fn config(s: &Subject) -> ConvCacheConfig {
    ConvCacheConfig {
        range: s.range,
        ..ConvCacheConfig::default()
    }
}

/// A cached model (clock fixed at 0) and its uncached reference.
fn pair(g: &Graph, c: ConvCacheConfig) -> (CpuModel, CpuModel) {
    let mut cached = compile(g);
    cached.enable_conv_cache(c).expect("enable");
    cached.set_conv_cache_now_ms(Some(0));
    (cached, compile(g))
}

/// Output pixels of the cacheable ops: all of them, and those whose field (computed
/// independently here, with `Field::input_rect`) touches the input rectangle `changed`
/// (inclusive rows, then columns).
fn expected_tiles(g: &Graph, plan: &CachePlan, changed: [[usize; 2]; 2]) -> (u64, u64) {
    let (mut tiles, mut touched) = (0u64, 0u64);
    // A pad the CPU backend fuses into its readers (the channel pads of BlazeFace's residual
    // branches) writes nothing: no tiles of its own.
    let cpu = heimdall_cpu::cpu_ops(g);
    for (i, op) in g.ops.iter().enumerate() {
        if !plan.cacheable[i] || cpu[i].outputs.is_empty() {
            continue;
        }
        let s = &g.tensor(op.outputs[0]).shape;
        let (h, w) = (s[1], s[2]);
        let field = plan
            .field(op.outputs[0])
            .expect("a cacheable op has a field");
        tiles += (h * w) as u64;
        for y in 0..h {
            for x in 0..w {
                let hit = match field.input_rect([y, y], [x, x], plan.in_hw) {
                    Some([r, c]) => {
                        r[0] <= changed[0][1]
                            && changed[0][0] <= r[1]
                            && c[0] <= changed[1][1]
                            && changed[1][0] <= c[1]
                    }
                    None => false,
                };
                touched += hit as u64;
            }
        }
    }
    (tiles, touched)
}

fn still_sequence(s: &Subject) {
    let g = graph(s);
    let (mut cached, mut reference) = pair(&g, config(s));
    let img = image(dims(&g), s.range, false);
    let want = run(&mut reference, &img);
    let plan = CachePlan::new(&g, usize::MAX).unwrap();
    let (tiles, _) = expected_tiles(&g, &plan, [[0, 0], [0, 0]]);
    for k in 0..5 {
        let got = run(&mut cached, &img);
        let err = worst(&got, &want);
        assert!(err <= 1e-6, "{} run {k}: rel-L2 {err}", s.name);
        assert_eq!(
            got, want,
            "{} run {k}: a still input is bit-identical",
            s.name
        );
        let c = cached.conv_cache_counts().unwrap();
        assert_eq!(c.blocks, 64);
        assert_eq!(c.tiles, tiles, "{}", s.name);
        if k == 0 {
            assert_eq!(
                (c.dirty_blocks, c.computed_tiles),
                (64, tiles),
                "first run: full"
            );
            assert_eq!(c.hit_rate(), 0.0);
        } else {
            assert_eq!(
                (c.dirty_blocks, c.computed_tiles),
                (0, 0),
                "{} run {k}",
                s.name
            );
            assert_eq!(c.hit_rate(), 1.0);
        }
    }
}

#[test]
fn a_still_sequence_is_computed_once_and_reused_bit_for_bit_palm() {
    still_sequence(&PALM);
}

#[test]
fn a_still_sequence_is_computed_once_and_reused_bit_for_bit_face() {
    still_sequence(&FACE);
}

fn changed_quadrant(s: &Subject) {
    let g = graph(s);
    let d = dims(&g);
    let (a, b) = (image(d, s.range, false), image(d, s.range, true));
    let want = run(&mut compile(&g), &b);
    let quadrant = [[d[0] / 2, d[0] - 1], [d[1] / 2, d[1] - 1]];
    // The whole cache, then only its first cacheable op (a layer limit just after it).
    let plan = CachePlan::new(&g, usize::MAX).unwrap();
    let first = plan
        .cacheable
        .iter()
        .position(|&c| c)
        .expect("a cacheable op");
    for layers in [usize::MAX, first + 1] {
        let plan = CachePlan::new(&g, layers).unwrap();
        let (tiles, touched) = expected_tiles(&g, &plan, quadrant);
        let (mut cached, _) = pair(
            &g,
            ConvCacheConfig {
                layers,
                ..config(s)
            },
        );
        run(&mut cached, &a);
        let got = run(&mut cached, &b);
        let err = worst(&got, &want);
        let c = cached.conv_cache_counts().unwrap();
        println!(
            "{} layers {layers}: {c:?}, expected {touched} of {tiles}, rel-L2 {err:.2e}",
            s.name
        );
        assert!(err <= 1e-6, "{} layers {layers}: rel-L2 {err}", s.name);
        assert_eq!(
            c.dirty_blocks, 16,
            "exactly the quadrant's 4×4 blocks changed"
        );
        assert_eq!(c.tiles, tiles);
        assert!(0 < c.computed_tiles && c.computed_tiles < c.tiles, "{c:?}");
        assert_eq!(c.computed_tiles, touched, "{} layers {layers}", s.name);
    }
}

#[test]
fn a_changed_quadrant_recomputes_exactly_the_pixels_whose_field_touches_it_palm() {
    changed_quadrant(&PALM);
}

#[test]
fn a_changed_quadrant_recomputes_exactly_the_pixels_whose_field_touches_it_face() {
    changed_quadrant(&FACE);
}

/// ±1/255 noise on every run: the histograms barely move, so most blocks stay clean, and the
/// cached output is that of the frame the blocks were last recomputed at. Its error against
/// the uncached output of the current frame is the model's own jitter between two noise frames
/// (1–6 % on these detectors, measured): it must be no larger than the uncached model's jitter
/// over the same frames.
fn small_noise(s: &Subject) {
    let g = graph(s);
    let (mut cached, mut reference) = pair(&g, config(s));
    let clean = image(dims(&g), s.range, false);
    let (mut uncached, mut errors, mut total) = (Vec::new(), Vec::new(), CacheCounts::default());
    for k in 0..8u64 {
        let img = noisy(&clean, s.range, k + 1);
        let got = run(&mut cached, &img);
        let want = run(&mut reference, &img);
        let c = cached.conv_cache_counts().unwrap();
        if k > 0 {
            errors.push(worst(&got, &want));
            total = total.add(&c);
            if total.dirty_blocks == 0 {
                assert_eq!(
                    got, uncached[0],
                    "{}: nothing recomputed since frame 0",
                    s.name
                );
            }
        }
        uncached.push(want);
    }
    let mut jitter = 0.0f64;
    for a in &uncached {
        for b in &uncached {
            jitter = jitter.max(worst(a, b));
        }
    }
    let err = errors.iter().copied().fold(0.0, f64::max);
    let mean = errors.iter().sum::<f64>() / errors.len() as f64;
    println!(
        "{} noise ±1/255: cached vs uncached rel-L2 worst {err:.3e} mean {mean:.3e}; uncached \
         frame-to-frame jitter up to {jitter:.3e}; dirty blocks {} of {}, hit rate {:.3}",
        s.name,
        total.dirty_blocks,
        total.blocks,
        total.hit_rate()
    );
    assert!(
        total.dirty_blocks * 4 < total.blocks,
        "most blocks stay clean: {total:?}"
    );
    assert!(
        err <= jitter,
        "{}: rel-L2 {err} over the model's own jitter {jitter}",
        s.name
    );
    assert!(err <= 0.1, "{}: rel-L2 {err}", s.name);
}

#[test]
fn small_noise_keeps_most_blocks_clean_and_errs_within_the_noise_itself_palm() {
    small_noise(&PALM);
}

#[test]
fn small_noise_keeps_most_blocks_clean_and_errs_within_the_noise_itself_face() {
    small_noise(&FACE);
}

#[test]
fn expiry_recomputes_every_block_at_least_every_third_run() {
    let s = FACE;
    let g = graph(&s);
    let c = ConvCacheConfig {
        expiry_runs: 3,
        ..config(&s)
    };
    let (mut cached, mut reference) = pair(&g, c);
    let img = image(dims(&g), s.range, false);
    let want = run(&mut reference, &img);
    let mut history = Vec::new();
    for _ in 0..10 {
        assert_eq!(run(&mut cached, &img), want);
        history.push(cached.conv_cache_counts().unwrap());
    }
    let dirty: Vec<u64> = history.iter().map(|c| c.dirty_blocks).collect();
    assert_eq!(dirty, [64, 0, 0, 64, 0, 0, 64, 0, 0, 64]);
    for w in history.windows(3) {
        assert!(w.iter().map(|c| c.dirty_blocks).sum::<u64>() >= 64, "{w:?}");
        assert!(w.iter().any(|c| c.computed_tiles == c.tiles), "{w:?}");
    }
}

#[test]
fn time_expiry_and_refresh_recompute_everything() {
    let s = FACE;
    let g = graph(&s);
    let img = image(dims(&g), s.range, false);
    let (mut cached, _) = pair(
        &g,
        ConvCacheConfig {
            expiry_ms: 500,
            ..config(&s)
        },
    );
    let mut dirty = Vec::new();
    for now in [0, 100, 499, 500, 600, 1000] {
        cached.set_conv_cache_now_ms(Some(now));
        run(&mut cached, &img);
        dirty.push(cached.conv_cache_counts().unwrap().dirty_blocks);
    }
    assert_eq!(dirty, [64, 0, 0, 64, 0, 64]);
    let (mut cached, _) = pair(
        &g,
        ConvCacheConfig {
            refresh_runs: 4,
            ..config(&s)
        },
    );
    let dirty: Vec<u64> = (0..9)
        .map(|_| {
            run(&mut cached, &img);
            cached.conv_cache_counts().unwrap().dirty_blocks
        })
        .collect();
    assert_eq!(dirty, [64, 0, 0, 0, 64, 0, 0, 0, 64]);
}

#[test]
fn invalidate_makes_the_next_run_full_and_disable_restores_the_plain_model() {
    let s = PALM;
    let g = graph(&s);
    let (mut cached, mut reference) = pair(&g, config(&s));
    let img = image(dims(&g), s.range, false);
    let want = run(&mut reference, &img);
    run(&mut cached, &img);
    run(&mut cached, &img);
    assert_eq!(cached.conv_cache_counts().unwrap().computed_tiles, 0);
    cached.invalidate_conv_cache();
    assert_eq!(run(&mut cached, &img), want);
    let c = cached.conv_cache_counts().unwrap();
    assert_eq!((c.dirty_blocks, c.computed_tiles), (64, c.tiles));
    assert!(c.tiles > 0);
    run(&mut cached, &img);
    assert_eq!(cached.conv_cache_counts().unwrap().computed_tiles, 0);
    cached.disable_conv_cache();
    assert_eq!(cached.conv_cache_counts(), None);
    let other = image(dims(&g), s.range, true);
    assert_eq!(run(&mut cached, &other), run(&mut reference, &other));
    assert_eq!(reference.conv_cache_counts(), None, "off by default");
}

#[test]
fn split_ranges_use_the_decision_of_the_run_that_started_at_op_0() {
    let s = FACE;
    let g = graph(&s);
    let (mut cached, mut reference) = pair(&g, config(&s));
    let d = dims(&g);
    let (a, b) = (image(d, s.range, false), image(d, s.range, true));
    run(&mut cached, &a);
    let want = run(&mut reference, &b);
    cached.set_input(0, &b).unwrap();
    let n = cached.num_ops();
    let whole = {
        let mut m = compile(&g);
        m.enable_conv_cache(config(&s)).unwrap();
        m.set_conv_cache_now_ms(Some(0));
        run(&mut m, &a);
        run(&mut m, &b);
        m.conv_cache_counts().unwrap()
    };
    for r in [0..n / 3, n / 3..n / 2, n / 2..n] {
        cached.run_range(r).unwrap();
    }
    let got: Vec<Vec<f32>> = (0..want.len())
        .map(|i| cached.output(i).unwrap().to_vec())
        .collect();
    assert_eq!(got, want);
    assert_eq!(cached.conv_cache_counts().unwrap(), whole);
}

#[test]
fn a_bad_config_is_a_typed_error() {
    let g = graph(&FACE);
    let mut m = compile(&g);
    for bad in [
        ConvCacheConfig {
            bins: 0,
            ..ConvCacheConfig::default()
        },
        ConvCacheConfig {
            grid: [0, 8],
            ..ConvCacheConfig::default()
        },
        ConvCacheConfig {
            range: [1.0, -1.0],
            ..ConvCacheConfig::default()
        },
    ] {
        let e = m.enable_conv_cache(bad).unwrap_err();
        assert!(matches!(e, CpuError::CacheConfig(_)), "{e:?}");
        assert_eq!(
            m.conv_cache_counts(),
            None,
            "a refused config leaves the cache off"
        );
    }
}

#[test]
fn a_model_without_an_image_input_is_a_typed_error() {
    for shape in [vec![1, 16], vec![1, 4, 4, 8], vec![2, 4, 4, 3]] {
        let t = |name: &str| TensorInfo {
            name: name.into(),
            shape: shape.clone(),
            dtype: DType::F32,
            constant: None,
        };
        let g = Graph {
            name: "relu".into(),
            tensors: vec![t("x"), t("y")],
            ops: vec![Op::new(
                OpKind::Unary(UnaryKind::Relu),
                vec![TensorId(0)],
                vec![TensorId(1)],
            )],
            inputs: vec![TensorId(0)],
            outputs: vec![TensorId(1)],
        };
        let mut m = compile(&g);
        let e = m.enable_conv_cache(ConvCacheConfig::default()).unwrap_err();
        assert!(matches!(e, CpuError::CacheInput(_)), "{shape:?}: {e:?}");
        assert_eq!(m.conv_cache_counts(), None);
    }
}

/// Prints which ops of each model are cacheable and where the field becomes global, and checks
/// the start of the plan: the first op reads the image through a local field.
#[test]
fn the_plan_of_the_bundled_detectors() {
    for s in [PALM, FACE] {
        let g = graph(&s);
        let plan = CachePlan::new(&g, usize::MAX).unwrap();
        let field = |i: usize| plan.field(g.ops[i].outputs[0]);
        let cacheable: Vec<usize> = (0..g.ops.len()).filter(|&i| plan.cacheable[i]).collect();
        let global: Vec<usize> = (0..g.ops.len())
            .filter(|&i| field(i) == Some(Field::Global))
            .collect();
        let first_global = global.first().copied();
        println!(
            "{}: {} ops, {} cacheable ({} local), first global op {:?} ({})",
            s.name,
            g.ops.len(),
            cacheable.len(),
            cacheable
                .iter()
                .filter(|&&i| field(i) != Some(Field::Global))
                .count(),
            first_global,
            first_global.map_or("-", |i| g.ops[i].kind.name()),
        );
        for &i in &global {
            let shape = &g.tensor(g.ops[i].outputs[0]).shape;
            println!(
                "  global: op {i} {} -> {shape:?} cacheable {}",
                g.ops[i].kind.name(),
                plan.cacheable[i]
            );
        }
        for (i, op) in g.ops.iter().enumerate() {
            if !plan.cacheable[i] && field(i).is_none() {
                println!("  not cacheable: op {i} {}", op.kind.name());
            }
        }
        assert!(plan.cacheable[0], "{}: the first op is cacheable", s.name);
        assert!(matches!(field(0), Some(Field::Local { .. })));
    }
}
