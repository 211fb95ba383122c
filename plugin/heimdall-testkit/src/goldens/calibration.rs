//! Calibration inputs for the f16 runtimes: the accuracy guard (`heimdall_gpu::guard`) compiles a
//! model in f16 checked on one input against the CPU reference, and switches ops to f32 where
//! an output misses its bound. The suite calibrates on a bundled photo that is **not** one of
//! the golden cases, preprocessed as the goldens' image input is (value range, channel order,
//! layout), so the goldens check the guard's choice on inputs it has not seen.

use std::path::PathBuf;

use heimdall_image::{Crop, Normalization, RgbaImage};

use super::{Format, GoldenCase, GoldenModel};
use crate::npy::Tensor;
use crate::paths::{assets_dir, goldens_dir};

/// How a model's image input is made from a photo for calibration.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Calibration {
    /// The photo, a file of `assets/images/`.
    pub photo: &'static str,
    /// The image input's value range (`byte / 255` mapped linearly onto it); `None`: the
    /// goldens' `meta.json` `value_range` (the TFLite goldens record it).
    pub range: Option<[f32; 2]>,
    /// The channels in BGR order (RapidOCR's text detector), else RGB.
    pub bgr: bool,
}

/// The photo of the suite's calibration inputs: a person's open hand in front of a plain
/// background (`assets/images/README.md`); the golden cases are the astronaut portrait, a
/// synthetic image and a rendered page of text.
pub const CALIBRATION_PHOTO: &str = "hand_src.jpg";

impl Calibration {
    /// [`CALIBRATION_PHOTO`] in RGB, in the value range of the model's goldens.
    pub const PHOTO: Calibration = Calibration {
        photo: CALIBRATION_PHOTO,
        range: None,
        bgr: false,
    };

    /// The photo's path.
    pub fn path(&self) -> PathBuf {
        assets_dir().join("images").join(self.photo)
    }
}

/// The value range of a TFLite model's input from its goldens' `meta.json`.
fn meta_value_range(file: &str) -> [f32; 2] {
    let path = goldens_dir(file).join("meta.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let meta: serde_json::Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    meta["value_range"]
        .as_array()
        .and_then(|r| Some([r.first()?.as_f64()? as f32, r.get(1)?.as_f64()? as f32]))
        .unwrap_or_else(|| panic!("{}: no value_range [lo, hi]", path.display()))
}

/// The calibration inputs of `model` in the shapes of `like`'s inputs, in the model file's
/// layout (NHWC for TFLite, NCHW for ONNX) like the goldens' inputs: input 0 is the model's
/// [`Calibration`] photo resized over the whole frame (bilinear, the preprocessing of
/// `heimdall_vision`), in its value range and channel order; any other input (multistyle26's
/// style weights) an even mix, every value `1 / len` (the golden cases use one-hot and
/// three-style weights).
pub fn calibration_inputs(model: &GoldenModel, like: &GoldenCase) -> Vec<Tensor> {
    let c = &model.calibration;
    let shape = &like.inputs[0].shape;
    let (h, w, channels, nchw) = match (model.format, shape.as_slice()) {
        (Format::Tflite, &[1, h, w, c]) => (h, w, c, false),
        (Format::Onnx, &[1, c, h, w]) => (h, w, c, true),
        _ => panic!("{}: image input of shape {shape:?}", model.id),
    };
    assert_eq!(channels, 3, "{}: image input of shape {shape:?}", model.id);
    let [lo, hi] = c.range.unwrap_or_else(|| meta_value_range(model.file));
    let image = RgbaImage::load(c.path()).unwrap_or_else(|e| panic!("{}: {e}", c.photo));
    let mut hwc = image
        .to_tensor(&Crop::FULL, &Normalization::range(lo, hi), [h, w, 3])
        .unwrap_or_else(|e| panic!("{}: {e}", c.photo));
    if c.bgr {
        hwc.chunks_exact_mut(3).for_each(|p| p.swap(0, 2));
    }
    let data = if nchw {
        (0..3)
            .flat_map(|ch| hwc.iter().skip(ch).step_by(3).copied())
            .collect()
    } else {
        hwc
    };
    let mut inputs = vec![Tensor {
        shape: shape.clone(),
        data,
    }];
    for t in &like.inputs[1..] {
        let n = t.data.len();
        inputs.push(Tensor {
            shape: t.shape.clone(),
            data: vec![1.0 / n as f32; n],
        });
    }
    inputs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::goldens::{GOLDEN_MODELS, cases};

    /// Every model's calibration input has the golden input's shape and value range, and is
    /// not a golden input.
    #[test]
    fn calibration_inputs_are_shaped_like_the_goldens_and_are_none_of_them() {
        for m in GOLDEN_MODELS {
            let cases = cases(m.file);
            let inputs = calibration_inputs(m, &cases[0]);
            assert_eq!(inputs.len(), cases[0].inputs.len(), "{}", m.id);
            for (x, g) in inputs.iter().zip(&cases[0].inputs) {
                assert_eq!(x.shape, g.shape, "{}", m.id);
                assert_eq!(x.data.len(), g.data.len(), "{}", m.id);
            }
            let range = |d: &[f32]| {
                d.iter()
                    .fold((f32::MAX, f32::MIN), |(a, b), &v| (a.min(v), b.max(v)))
            };
            // Both inputs lie in the model's value range, and the photo covers most of it.
            let [rlo, rhi] = m
                .calibration
                .range
                .unwrap_or_else(|| meta_value_range(m.file));
            let (lo, hi) = range(&inputs[0].data);
            let (glo, ghi) = range(&cases[0].inputs[0].data);
            let eps = 1e-6;
            assert!(
                lo >= rlo - eps && hi <= rhi + eps && hi - lo >= 0.5 * (rhi - rlo),
                "{}: calibration {lo}..{hi}, range {rlo}..{rhi}",
                m.id
            );
            assert!(
                glo >= rlo - eps && ghi <= rhi + eps && ghi - glo >= 0.5 * (rhi - rlo),
                "{}: golden {glo}..{ghi}, range {rlo}..{rhi}",
                m.id
            );
            for case in &cases {
                assert!(
                    crate::rel_l2(&inputs[0].data, &case.inputs[0].data) > 0.1,
                    "{}/{}: the calibration input is the golden's",
                    m.id,
                    case.name
                );
            }
        }
    }

    /// NCHW and BGR: PP-OCR's channel 0 is the photo's blue.
    #[test]
    fn onnx_inputs_are_planar_and_bgr_where_asked() {
        let det = super::super::golden_model("pp_ocrv6_det_small");
        assert!(det.calibration.bgr);
        let case = &cases(det.file)[0];
        let x = &calibration_inputs(det, case)[0];
        let [h, w] = [x.shape[2], x.shape[3]];
        let image = RgbaImage::load(det.calibration.path()).expect("photo");
        let hwc = image
            .to_tensor(&Crop::FULL, &Normalization::range(-1.0, 1.0), [h, w, 3])
            .expect("tensor");
        let at = 17 * w + 5;
        assert_eq!(x.data[at], hwc[at * 3 + 2]);
        assert_eq!(x.data[2 * h * w + at], hwc[at * 3]);
    }
}
