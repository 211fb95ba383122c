//! The preprocessing kernel (`shaders/preprocess.wgsl`) on the test device against an
//! independent reference written here (f64 bilinear sampling from the definition in
//! `heimdall_gpu::preprocess`): random RGBA8 images of odd sizes, random affine crops with
//! rotation and flips, both border modes, plain and sRGB views, every storage precision of the
//! input (rel-L2 ≤ 1e-5 in f32, ≤ 3e-3 in f16 and packed f16). The CPU reference of the
//! workspace, `heimdall_image::resample`, is held to the same reference, and a real model fed by the kernel (identity crop of a 128x128 texture made
//! from a golden input) is compared with the same pixels uploaded by `set_input`.

mod common;

use common::{GraphBuilder, gpu, kernel_tolerance};
use heimdall::npy::read_npy;
use heimdall::{LoadOptions, load_model};
use heimdall_gpu::preprocess::Preprocessor;
use heimdall_gpu::{GpuContext, GpuModel, GpuOptions, Precision};
use heimdall_image::Vec2;
use heimdall_image::{Border, Crop, CropTransform, Normalization, RotatedRect, resample};
use heimdall_ir::{Epilogue, Graph, OpKind};
use heimdall_testkit::{XorShift, goldens_dir, model_path, rel_l2};

/// Deterministic bytes.
fn bytes(seed: u64, n: usize) -> Vec<u8> {
    let mut r = XorShift::new(seed);
    (0..n).map(|_| (r.next_u64() >> 24) as u8).collect()
}

/// The reference: for output pixel (x, y) the normalised centre (u, v), the source point
/// M (u, v, 1) in texels minus the half-texel offset, and the four neighbouring texels weighted
/// by (1 - fx)(1 - fy), fx (1 - fy), (1 - fx) fy, fx fy; taps outside the image clamp to the edge
/// or read the border colour. Computed in f64.
fn reference(
    rgba: &[u8],
    (w, h): (usize, usize),
    crop: &Crop,
    norm: &Normalization,
    [oh, ow, oc]: [usize; 3],
) -> Vec<f32> {
    let texel = |x: i64, y: i64, c: usize| -> f64 {
        if let Border::Constant(b) = crop.border
            && (x < 0 || y < 0 || x >= w as i64 || y >= h as i64)
        {
            return b[c] as f64;
        }
        let (x, y) = (x.clamp(0, w as i64 - 1), y.clamp(0, h as i64 - 1));
        rgba[(y as usize * w + x as usize) * 4 + c] as f64 / 255.0
    };
    let r = crop.transform.to_rows().map(f64::from);
    let m = [[r[0], r[1], r[2]], [r[3], r[4], r[5]]];
    let mut out = Vec::new();
    for y in 0..oh {
        for x in 0..ow {
            let u = (x as f64 + 0.5) / ow as f64;
            let v = (y as f64 + 0.5) / oh as f64;
            let sx = (m[0][0] * u + m[0][1] * v + m[0][2]) * w as f64 - 0.5;
            let sy = (m[1][0] * u + m[1][1] * v + m[1][2]) * h as f64 - 0.5;
            let (x0, y0) = (sx.floor() as i64, sy.floor() as i64);
            let (fx, fy) = (sx - x0 as f64, sy - y0 as f64);
            for c in 0..oc {
                let p = texel(x0, y0, c) * (1.0 - fx) * (1.0 - fy)
                    + texel(x0 + 1, y0, c) * fx * (1.0 - fy)
                    + texel(x0, y0 + 1, c) * (1.0 - fx) * fy
                    + texel(x0 + 1, y0 + 1, c) * fx * fy;
                out.push((p * norm.scale[c] as f64 + norm.offset[c] as f64) as f32);
            }
        }
    }
    out
}

/// An RGBA8 texture holding `rgba`, sampled through a view of `view_format`.
fn texture(
    ctx: &GpuContext,
    rgba: &[u8],
    (w, h): (usize, usize),
    view_format: wgpu::TextureFormat,
) -> wgpu::TextureView {
    let texture = heimdall_gpu::preprocess::upload_rgba8(
        ctx,
        "test frame",
        rgba,
        (w as u32, h as u32),
        &[wgpu::TextureFormat::Rgba8UnormSrgb],
    )
    .expect("a test frame the device can hold");
    texture.create_view(&wgpu::TextureViewDescriptor {
        format: Some(view_format),
        ..Default::default()
    })
}

/// Encodes the preprocessing and every step of `model`, reads the outputs back (blocking).
fn run_preprocessed(
    model: &GpuModel,
    pre: &Preprocessor,
    view: &wgpu::TextureView,
    format: wgpu::TextureFormat,
) -> Vec<Vec<f32>> {
    let ctx = model.context();
    let binding = pre.bind_as(view, format).expect("bind");
    let mut encoder = ctx.device.create_command_encoder(&Default::default());
    pre.encode(&mut encoder, &binding);
    model
        .encode(&mut encoder, 0..model.num_steps())
        .expect("encode");
    model.encode_readback(&mut encoder).expect("readback");
    ctx.queue.submit([encoder.finish()]);
    model.request_readback().expect("request");
    for _ in 0..10_000 {
        ctx.device
            .poll(wgpu::PollType::Wait {
                submission_index: None,
                timeout: None,
            })
            .expect("poll");
        if let Some(out) = model.take_outputs().expect("take") {
            return out;
        }
        std::thread::sleep(std::time::Duration::from_micros(100));
    }
    panic!("no readback");
}

/// A graph `[1, h, w, c]` -> reshape -> reshape -> output: exact copies, and the input is read
/// by an op of the model's precision (not the output's producer), so it is stored in it.
fn copy_graph([h, w, c]: [usize; 3]) -> Graph {
    let mut b = GraphBuilder::default();
    let x = b.input(&[1, h, w, c]);
    let t = b.op(
        OpKind::Reshape,
        vec![x],
        &[1, h * w, c],
        Epilogue::default(),
    );
    let y = b.op(OpKind::Reshape, vec![t], &[1, h, w, c], Epilogue::default());
    b.finish(vec![y])
}

/// MediaPipe's rotated ROI on a `w × h` image.
fn rotated(center: [f32; 2], size: [f32; 2], rotation: f32, (w, h): (u32, u32)) -> CropTransform {
    let rect = RotatedRect {
        center: Vec2::from(center),
        size: Vec2::from(size),
        rotation,
    };
    CropTransform::from_rotated_rect(&rect, w, h)
}

fn crops() -> Vec<(&'static str, Crop)> {
    // Mirrored, rotated, partly outside the image.
    let general = Crop {
        transform: rotated([0.45, 0.6], [0.9, 0.7], 0.7, (37, 23)).mirrored(),
        border: Border::Constant([0.25, 0.5, 0.75, 1.0]),
    };
    let zero = Crop {
        transform: rotated([0.5, 0.5], [1.2, 1.1], -2.1, (37, 23)),
        border: Border::ZERO,
    };
    let clamped = Crop {
        border: Border::Clamp,
        ..zero
    };
    let clamp = |transform| Crop {
        transform,
        border: Border::Clamp,
    };
    vec![
        ("identity", Crop::FULL),
        (
            "flipped rect",
            clamp(CropTransform::rect(0.9, 0.05, 0.1, 0.8)),
        ),
        ("rotated+flip, grey border", general),
        ("rotated, zero border", zero),
        ("rotated, clamp", clamped),
        (
            "shear, far outside",
            clamp(CropTransform::from_rows([1.3, -0.4, -0.2, 0.35, 2.2, -0.6])),
        ),
    ]
}

#[test]
fn cpu_preprocessing_matches_the_reference() {
    let (w, h) = (37, 23);
    let rgba = bytes(7, w * h * 4);
    let norm = Normalization::mean_std([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]);
    for (name, crop) in crops() {
        for shape in [[19, 29, 3], [8, 5, 4], [3, 7, 1]] {
            let want = reference(&rgba, (w, h), &crop, &norm, shape);
            let got = resample(&rgba, w, h, &crop, &norm, shape).expect("cpu");
            let err = rel_l2(&got, &want);
            println!("cpu {name} {shape:?}: rel-L2 {err:.2e}");
            assert!(err <= 1e-5, "cpu {name} {shape:?}: rel-L2 {err:.3e}");
        }
    }
}

#[test]
fn gpu_preprocessing_matches_the_reference() {
    let Some(gpu) = gpu() else { return };
    let (w, h) = (37, 23);
    let rgba = bytes(11, w * h * 4);
    let shape = [19, 29, 3];
    let graph = copy_graph(shape);
    let view = texture(&gpu.ctx, &rgba, (w, h), wgpu::TextureFormat::Rgba8Unorm);
    for p in Precision::ALL {
        let model = GpuModel::compile(&gpu.ctx, &graph, GpuOptions::new(p)).expect("compile");
        for norm in [Normalization::MINUS_ONE_TO_ONE, Normalization::ZERO_TO_ONE] {
            let pre = Preprocessor::new(&model, 0, norm).expect("preprocessor");
            assert_eq!(pre.output_shape(), shape);
            for (name, crop) in crops() {
                pre.set_crop(&gpu.ctx.queue, &crop).expect("crop");
                let out = run_preprocessed(&model, &pre, &view, wgpu::TextureFormat::Rgba8Unorm);
                let want = reference(&rgba, (w, h), &crop, &norm, shape);
                let err = rel_l2(&out[0], &want);
                println!("gpu {p:?} {name} {:?}: rel-L2 {err:.2e}", norm.offset[0]);
                assert!(
                    err <= kernel_tolerance(p),
                    "gpu {p:?} {name}: rel-L2 {err:.3e}"
                );
            }
        }
    }
    gpu.assert_no_errors();
}

/// An sRGB view decodes to linear; the kernel re-encodes, so the model sees the same bytes.
#[test]
fn srgb_views_give_the_stored_bytes() {
    let Some(gpu) = gpu() else { return };
    let (w, h) = (21, 17);
    let rgba = bytes(5, w * h * 4);
    let shape = [13, 11, 4];
    let model = GpuModel::compile(
        &gpu.ctx,
        &copy_graph(shape),
        GpuOptions::new(Precision::F32),
    )
    .unwrap();
    let pre = Preprocessor::new(&model, 0, Normalization::MINUS_ONE_TO_ONE).unwrap();
    let crop = Crop {
        transform: CropTransform::rect(0.1, 0.2, 0.7, 0.9),
        border: Border::Clamp,
    };
    pre.set_crop(&gpu.ctx.queue, &crop).unwrap();
    let srgb = wgpu::TextureFormat::Rgba8UnormSrgb;
    let view = texture(&gpu.ctx, &rgba, (w, h), srgb);
    let out = run_preprocessed(&model, &pre, &view, srgb);
    let want = reference(
        &rgba,
        (w, h),
        &crop,
        &Normalization::MINUS_ONE_TO_ONE,
        shape,
    );
    let err = rel_l2(&out[0], &want);
    println!("srgb view: rel-L2 {err:.2e}");
    assert!(err <= 1e-5, "srgb view: rel-L2 {err:.3e}");
    gpu.assert_no_errors();
}

/// `preprocess_to_host` (the accuracy guard's calibration input) gives what the kernel writes
/// into an f32 input slot: the reference, to f32 rounding, for every crop and channel count; bad
/// arguments are errors.
#[test]
fn preprocessing_to_the_host_matches_the_reference() {
    let Some(gpu) = gpu() else { return };
    let (w, h) = (37, 23);
    let rgba = bytes(13, w * h * 4);
    let norm = Normalization::mean_std([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]);
    for (name, crop) in crops() {
        for shape in [[19, 29, 3], [8, 5, 4], [3, 7, 1]] {
            let got = heimdall_gpu::preprocess::preprocess_to_host(
                &gpu.ctx,
                &rgba,
                (w as u32, h as u32),
                &crop,
                norm,
                shape,
            )
            .expect("preprocess to host");
            let want = reference(&rgba, (w, h), &crop, &norm, shape);
            assert_eq!(got.len(), want.len(), "{name} {shape:?}");
            let err = rel_l2(&got, &want);
            println!("to host {name} {shape:?}: rel-L2 {err:.2e}");
            assert!(err <= 1e-5, "to host {name} {shape:?}: rel-L2 {err:.3e}");
        }
    }
    use heimdall_gpu::preprocess::preprocess_to_host;
    let full = Crop::FULL;
    let short = preprocess_to_host(&gpu.ctx, &rgba[..10], (37, 23), &full, norm, [4, 4, 3]);
    assert!(matches!(short, Err(heimdall_gpu::GpuError::Input { .. })));
    let five = preprocess_to_host(&gpu.ctx, &rgba, (37, 23), &full, norm, [4, 4, 5]);
    assert!(five.is_err());
    gpu.assert_no_errors();
}

#[test]
fn bad_arguments_are_errors() {
    let Some(gpu) = gpu() else { return };
    let model = GpuModel::compile(
        &gpu.ctx,
        &copy_graph([4, 4, 8]),
        GpuOptions::new(Precision::F32),
    )
    .unwrap();
    assert!(Preprocessor::new(&model, 0, Normalization::ZERO_TO_ONE).is_err());
    assert!(Preprocessor::new(&model, 1, Normalization::ZERO_TO_ONE).is_err());
    let model = GpuModel::compile(
        &gpu.ctx,
        &copy_graph([4, 4, 3]),
        GpuOptions::new(Precision::F32),
    )
    .unwrap();
    let mut nan = Normalization::ZERO_TO_ONE;
    nan.scale[1] = f32::NAN;
    assert!(Preprocessor::new(&model, 0, nan).is_err());
    let pre = Preprocessor::new(&model, 0, Normalization::ZERO_TO_ONE).unwrap();
    let crop = Crop {
        transform: CropTransform::from_rows([1.0, 0.0, 0.0, 0.0, 1.0, f32::INFINITY]),
        border: Border::Clamp,
    };
    assert!(pre.set_crop(&gpu.ctx.queue, &crop).is_err());
    let view = texture(&gpu.ctx, &[0; 16], (2, 2), wgpu::TextureFormat::Rgba8Unorm);
    assert!(
        pre.bind_as(&view, wgpu::TextureFormat::Rgba16Float)
            .is_err()
    );
    use heimdall_gpu::preprocess::upload_rgba8;
    let short = upload_rgba8(&gpu.ctx, "short", &[0; 15], (2, 2), &[]);
    assert!(matches!(
        short,
        Err(heimdall_gpu::GpuError::Input {
            expected: 16,
            got: 15,
            ..
        })
    ));
    assert!(upload_rgba8(&gpu.ctx, "empty", &[], (0, 0), &[]).is_err());
    let side = gpu.ctx.limits.max_texture_dimension_2d + 1;
    let wide = upload_rgba8(
        &gpu.ctx,
        "wide",
        &vec![0; 4 * side as usize],
        (side, 1),
        &[],
    );
    assert!(matches!(wide, Err(heimdall_gpu::GpuError::Unsupported(_))));
    gpu.assert_no_errors();
}

/// face_detection_short_range fed by the kernel from a 128x128 texture of the golden input's
/// bytes equals the model fed the same pixels by `set_input` (rel-L2 ≤ 1e-5 per output, every
/// precision: both paths store the same rounded input).
#[test]
fn a_model_fed_by_preprocessing_matches_set_input() {
    let Some(gpu) = gpu() else { return };
    let name = "face_detection_short_range";
    let graph = load_model(model_path(name).unwrap(), LoadOptions::default()).unwrap();
    let golden = read_npy(goldens_dir(name).join("astronaut/input_0.npy"))
        .unwrap()
        .data;
    assert_eq!(golden.len(), 128 * 128 * 3);
    let mut rgba = vec![255u8; 128 * 128 * 4];
    for (i, v) in golden.iter().enumerate() {
        rgba[i / 3 * 4 + i % 3] = ((v + 1.0) * 127.5).round().clamp(0.0, 255.0) as u8;
    }
    let pixels: Vec<f32> = (0..golden.len())
        .map(|i| rgba[i / 3 * 4 + i % 3] as f32 / 255.0 * 2.0 - 1.0)
        .collect();
    let view = texture(&gpu.ctx, &rgba, (128, 128), wgpu::TextureFormat::Rgba8Unorm);
    for p in Precision::ALL {
        let model = GpuModel::compile(&gpu.ctx, &graph, GpuOptions::new(p)).unwrap();
        let want = model.run(&[&pixels]).unwrap();
        let pre = Preprocessor::new(&model, 0, Normalization::MINUS_ONE_TO_ONE).unwrap();
        // Poison the input so that a kernel writing nothing fails.
        model.set_input(0, &vec![0.5; pixels.len()]).unwrap();
        let got = run_preprocessed(&model, &pre, &view, wgpu::TextureFormat::Rgba8Unorm);
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            let err = rel_l2(g, w);
            println!("{name} {p:?} output {i}: rel-L2 {err:.2e}");
            assert!(err <= 1e-5, "{name} {p:?} output {i}: rel-L2 {err:.3e}");
        }
    }
    gpu.assert_no_errors();
}

/// A binding made by one Preprocessor and passed to another's `encode` runs as its own (its
/// uniform, its target, its grid): no wgpu error, and its model gets the right input.
#[test]
fn a_binding_runs_as_the_preprocessor_that_made_it() {
    let Some(gpu) = gpu() else { return };
    let (w, h) = (16, 12);
    let rgba = bytes(3, w * h * 4);
    let view = texture(&gpu.ctx, &rgba, (w, h), wgpu::TextureFormat::Rgba8Unorm);
    let (sa, sb) = ([9, 7, 3], [4, 5, 2]);
    let a = GpuModel::compile(&gpu.ctx, &copy_graph(sa), GpuOptions::new(Precision::F32)).unwrap();
    let b = GpuModel::compile(&gpu.ctx, &copy_graph(sb), GpuOptions::new(Precision::F32)).unwrap();
    let pa = Preprocessor::new(&a, 0, Normalization::ZERO_TO_ONE).unwrap();
    let pb = Preprocessor::new(&b, 0, Normalization::MINUS_ONE_TO_ONE).unwrap();
    let binding = pa.bind(&view).unwrap();
    let mut encoder = gpu.ctx.device.create_command_encoder(&Default::default());
    pb.encode(&mut encoder, &binding);
    a.encode(&mut encoder, 0..a.num_steps()).unwrap();
    gpu.ctx.queue.submit([encoder.finish()]);
    // Read model a's output (its steps already ran; `run` would overwrite the input).
    let mut encoder = gpu.ctx.device.create_command_encoder(&Default::default());
    a.encode_readback(&mut encoder).unwrap();
    gpu.ctx.queue.submit([encoder.finish()]);
    a.request_readback().unwrap();
    let out = loop {
        gpu.ctx
            .device
            .poll(wgpu::PollType::Wait {
                submission_index: None,
                timeout: None,
            })
            .unwrap();
        if let Some(o) = a.take_outputs().unwrap() {
            break o;
        }
    };
    let want = reference(&rgba, (w, h), &Crop::FULL, &Normalization::ZERO_TO_ONE, sa);
    let err = rel_l2(&out[0], &want);
    assert!(err <= 1e-5, "rel-L2 {err:.3e}");
    gpu.assert_no_errors();
}
