//! `heimdall detect` output: the JSON schema of the issue for every kind (keys, types, array
//! lengths, pixels of the input image), faces on the astronaut portrait on CPU and GPU (one
//! face, 6 keypoints inside its box, the GPU box within 1 px of the CPU's), the table output,
//! and `--out` drawing a PNG of the input's size.

mod common;

use common::{box_iou, detect, floats, heimdall, root};
use heimdall_vision::RgbaImage;
use serde_json::Value;

fn check_box(v: &Value, w: f32, h: f32) -> Vec<f32> {
    let b = floats(v);
    assert_eq!(b.len(), 4);
    assert!(b[0] <= b[2] && b[1] <= b[3], "{b:?}");
    assert!(
        b[0] > -0.1 * w && b[2] < 1.1 * w && b[1] > -0.1 * h && b[3] < 1.1 * h,
        "{b:?}"
    );
    b
}

#[test]
fn faces_schema_cpu_and_gpu() {
    let cpu = detect("faces", "astronaut.png", &[]);
    let gpu =
        (!heimdall_testkit::skip_gpu("detect_schema::faces_schema_cpu_and_gpu (the GPU half)"))
            .then(|| detect("faces", "astronaut.png", &["--backend", "gpu"]));
    let faces = cpu["faces"].as_array().expect("faces");
    assert_eq!(faces.len(), 1, "{cpu}");
    let f = &faces[0];
    assert!(f["score"].as_f64().unwrap() > 0.5);
    let b = check_box(&f["box"], 512.0, 512.0);
    let kps = f["keypoints"].as_array().unwrap();
    assert_eq!(kps.len(), 6);
    for k in kps {
        let k = floats(k);
        assert_eq!(k.len(), 2);
        assert!(k[0] >= b[0] - 30.0 && k[0] <= b[2] + 30.0 && k[1] >= b[1] && k[1] <= b[3]);
    }
    if let Some(gpu) = gpu {
        let g = check_box(&gpu["faces"][0]["box"], 512.0, 512.0);
        assert!(
            b.iter().zip(&g).all(|(a, c)| (a - c).abs() < 1.0),
            "{b:?} {g:?}"
        );
        assert!(box_iou(&b, &g) > 0.99);
    }
    assert_eq!(
        detect("faces", "brick.jpg", &[])["faces"]
            .as_array()
            .unwrap()
            .len(),
        0
    );
}

#[test]
fn every_kind_has_the_issue_schema() {
    let hands = detect("hands", "hand_dst.jpg", &[]);
    for hnd in hands["hands"].as_array().unwrap() {
        let keys: Vec<&String> = hnd.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                "box",
                "handedness",
                "handedness_score",
                "landmarks",
                "score"
            ]
        );
        assert!(["Left", "Right"].contains(&hnd["handedness"].as_str().unwrap()));
        check_box(&hnd["box"], 640.0, 480.0);
        let l = hnd["landmarks"].as_array().unwrap();
        assert_eq!(l.len(), 21);
        assert!(l.iter().all(|p| floats(p).len() == 3));
    }
    let objects = detect("objects", "chelsea.jpg", &[]);
    for o in objects["objects"].as_array().unwrap() {
        let keys: Vec<&String> = o.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["box", "label", "score"]);
        check_box(&o["box"], 451.0, 300.0);
    }
    let text = detect("text", "text_scene.jpg", &[]);
    for t in text["text"].as_array().unwrap() {
        let keys: Vec<&String> = t.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["polygon", "score"]);
        let p = t["polygon"].as_array().unwrap();
        assert_eq!(p.len(), 4);
        assert!(p.iter().all(|q| floats(q).len() == 2));
    }
}

#[test]
fn table_and_drawing() {
    let image = root().join("assets/images/hand_dst.jpg");
    let png = std::env::temp_dir().join(format!("heimdall-detect-{}.png", std::process::id()));
    let out = heimdall(&[
        "detect",
        "hands",
        image.to_str().unwrap(),
        "--out",
        png.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.starts_with("1 hands") && table.contains("Right"),
        "{table}"
    );
    let drawn = RgbaImage::load(&png).unwrap();
    let original = RgbaImage::load(&image).unwrap();
    assert_eq!(
        (drawn.width, drawn.height),
        (original.width, original.height)
    );
    assert_ne!(drawn.data, original.data);
    let _ = std::fs::remove_file(png);
}
