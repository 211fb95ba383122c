//! The golden suite, written once and run per runtime (the way tract's `test-rt` crates run one
//! suite per backend): every MediaPipe TFLite model and every ONNX model of the workspace against
//! the reference engines' outputs in `assets/goldens/<model>/<case>/` (see
//! `assets/goldens/README.md`), on a photograph and a synthetic input (or a page of text).
//!
//! A backend's test crate implements [`Runtime`] (load the model with the facade, compile, run
//! the cases) and expands [`crate::golden_suite!`] with it: one `#[test]` per [`GOLDEN_MODELS`]
//! entry. Today: `plugin/heimdall/tests/goldens.rs` (CPU) and
//! `plugin/heimdall-gpu/tests/goldens.rs` (GPU f32, f16, packed f16; the f16 runtimes compile
//! through the accuracy guard, calibrated on [`calibration_inputs`]).
//!
//! Each output is held to its runtime's bound ([`RuntimeKind::bound`]), the same for every
//! model: there is no per-model exception list. One allowance applies everywhere: where the two
//! reference engines themselves (TFLite's builtin kernels and XNNPACK) disagree by more than the
//! bound, `scripts/xnnpack_crosscheck.py` stored XNNPACK's output beside the golden
//! (`xnnpack_output_<i>.npy`) and the output is allowed 1.5x the measured disagreement (only
//! pose_landmark_full output 2; 1.2e-4 on the synthetic input, which widens only the CPU's 1e-4).
//!
//! Every golden output is compared, and the suite checks that it found every one it expects:
//! all outputs of each case, except face_landmark_with_attention whose reference interpreter
//! cannot run its custom ops (its goldens cover outputs 0 and 6, from a cut-down copy).

mod bounds;
mod calibration;

use std::path::{Path, PathBuf};

pub use bounds::{Format, GPU_TFLITE_FLOOR, Metric, RuntimeKind};
pub use calibration::{CALIBRATION_PHOTO, Calibration, calibration_inputs};

use crate::fetch::{model_path, onnx_model_path};
use crate::npy::{Tensor, read_npy};
use crate::paths::goldens_dir;

/// One model of the suite.
#[derive(Clone, Copy, Debug)]
pub struct GoldenModel {
    /// The test's name (a Rust identifier): the model file's name, lower case, plus a variant.
    pub id: &'static str,
    /// The model file's name without extension (also the goldens' folder).
    pub file: &'static str,
    /// Its format.
    pub format: Format,
    /// Whether the load-time passes run.
    pub passes: bool,
    /// The model input whose shape is taken from the golden input 0 (ONNX models with dynamic
    /// spatial dimensions), if any.
    pub dynamic_input: Option<&'static str>,
    /// The outputs the goldens cover, where not all of them.
    pub covered_outputs: Option<&'static [usize]>,
    /// The input the f16 runtimes calibrate the accuracy guard on ([`calibration_inputs`]).
    pub calibration: Calibration,
}

const fn tflite(name: &'static str) -> GoldenModel {
    GoldenModel {
        id: name,
        file: name,
        format: Format::Tflite,
        passes: true,
        dynamic_input: None,
        covered_outputs: None,
        calibration: Calibration::PHOTO,
    }
}

const fn onnx(
    id: &'static str,
    file: &'static str,
    input: &'static str,
    calibration: Calibration,
) -> GoldenModel {
    GoldenModel {
        id,
        file,
        format: Format::Onnx,
        passes: true,
        dynamic_input: Some(input),
        covered_outputs: None,
        calibration,
    }
}

/// multistyle26's image input: RGB in [0, 1].
const STYLE_CALIBRATION: Calibration = Calibration {
    range: Some([0.0, 1.0]),
    ..Calibration::PHOTO
};

/// PP-OCR's text detector: BGR in [-1, 1] as RapidOCR feeds it (`(byte / 255 - 0.5) / 0.5`), on
/// a photo with no text (a brick wall). Its probability map is near zero there, where f16's
/// rounding shows most against the map's norm (as on the astronaut); on text (the hand photo,
/// a page, a scene with text) f16 as asked is within 5e-3 and teaches the guard nothing.
const TEXT_CALIBRATION: Calibration = Calibration {
    photo: "brick.jpg",
    range: Some([-1.0, 1.0]),
    bgr: true,
};

/// Every model of the suite, in the order of [`crate::golden_suite!`].
pub const GOLDEN_MODELS: &[GoldenModel] = &[
    tflite("face_detection_short_range"),
    tflite("face_detection_full_range_sparse"),
    tflite("face_landmark"),
    GoldenModel {
        covered_outputs: Some(&[0, 6]),
        ..tflite("face_landmark_with_attention")
    },
    tflite("iris_landmark"),
    tflite("palm_detection_lite"),
    tflite("palm_detection_full"),
    tflite("hand_landmark_lite"),
    tflite("hand_landmark_full"),
    tflite("hand_recrop"),
    tflite("pose_detection"),
    tflite("pose_landmark_full"),
    tflite("selfie_segmentation"),
    tflite("selfie_segmentation_landscape"),
    onnx("multistyle26", "multistyle26", "image", STYLE_CALIBRATION),
    GoldenModel {
        passes: false,
        ..onnx(
            "multistyle26_without_passes",
            "multistyle26",
            "image",
            STYLE_CALIBRATION,
        )
    },
    onnx(
        "pp_ocrv6_det_small",
        "PP-OCRv6_det_small",
        "x",
        TEXT_CALIBRATION,
    ),
];

/// The suite's model of that id.
pub fn golden_model(id: &str) -> &'static GoldenModel {
    GOLDEN_MODELS
        .iter()
        .find(|m| m.id == id)
        .unwrap_or_else(|| panic!("{id} is not a model of the golden suite"))
}

impl GoldenModel {
    /// The model file, fetched if needed (panics with the fetch error's advice if it cannot).
    pub fn path(&self) -> PathBuf {
        match self.format {
            Format::Tflite => model_path(self.file),
            Format::Onnx => onnx_model_path(self.file),
        }
        .unwrap_or_else(|e| panic!("{e}"))
    }
}

/// One golden case: its inputs, and its reference outputs by output index.
#[derive(Clone, Debug)]
pub struct GoldenCase {
    /// The case's name (`astronaut`, `synthetic`, `text_page`).
    pub name: String,
    /// Its folder.
    pub dir: PathBuf,
    /// `input_<i>.npy` for i = 0, 1, ...
    pub inputs: Vec<Tensor>,
    /// `(i, output_<i>.npy)` for every golden output, by index.
    pub outputs: Vec<(usize, Tensor)>,
}

/// The golden cases of a model (`assets/goldens/<file>/<case>/`), sorted by name; at least two.
pub fn cases(file: &str) -> Vec<GoldenCase> {
    let dir = goldens_dir(file);
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("no goldens for {file} in {}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    assert!(
        dirs.len() >= 2,
        "{file}: expected at least two golden cases, found {}",
        dirs.len()
    );
    dirs.into_iter().map(|d| read_case(&d)).collect()
}

fn read_case(dir: &Path) -> GoldenCase {
    let read = |p: PathBuf| read_npy(&p).unwrap_or_else(|e| panic!("{e}"));
    let mut inputs = Vec::new();
    while dir.join(format!("input_{}.npy", inputs.len())).is_file() {
        inputs.push(read(dir.join(format!("input_{}.npy", inputs.len()))));
    }
    assert!(!inputs.is_empty(), "{}: no input_0.npy", dir.display());
    let mut outputs: Vec<(usize, Tensor)> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            let i = name
                .strip_prefix("output_")?
                .strip_suffix(".npy")?
                .parse()
                .ok()?;
            Some((i, read(dir.join(&name))))
        })
        .collect();
    outputs.sort_by_key(|(i, _)| *i);
    GoldenCase {
        name: dir
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned(),
        dir: dir.to_path_buf(),
        inputs,
        outputs,
    }
}

/// A backend under test.
pub trait Runtime {
    /// Which runtime this is (picks the bounds).
    fn kind(&self) -> RuntimeKind;

    /// Loads `model` from `path` (with `model.passes`, and `model.dynamic_input` set to the shape
    /// of each case's input 0), runs every case, and returns each case's outputs in the model
    /// file's own layout (NCHW for ONNX), every output of the model in order. Runtime-specific
    /// checks (no CPU step, no device error) fail here.
    fn run(
        &self,
        model: &GoldenModel,
        path: &Path,
        cases: &[GoldenCase],
    ) -> Result<Vec<Vec<Tensor>>, String>;
}

/// Runs the golden model `id` on `runtime` (`None`: the runtime is not available and skips,
/// e.g. `HEIMDALL_SKIP_GPU=1`) and checks every golden output; panics with every failure.
pub fn check<R: Runtime>(runtime: Option<R>, id: &str) {
    let Some(runtime) = runtime else { return };
    let model = golden_model(id);
    let kind = runtime.kind();
    let path = model.path();
    let cases = cases(model.file);
    let results = runtime
        .run(model, &path, &cases)
        .unwrap_or_else(|e| panic!("{id} on {kind}: {e}"));
    assert_eq!(
        results.len(),
        cases.len(),
        "{id} on {kind}: results per case"
    );
    let (metric, default) = kind.bound(model.format);
    let mut failures = Vec::new();
    for (case, outs) in cases.iter().zip(&results) {
        let covered: Vec<usize> = case.outputs.iter().map(|(i, _)| *i).collect();
        let expected: Vec<usize> = match model.covered_outputs {
            Some(c) => c.to_vec(),
            None => (0..outs.len()).collect(),
        };
        assert_eq!(
            covered, expected,
            "{id}/{}: golden outputs found vs expected",
            case.name
        );
        for (i, golden) in &case.outputs {
            let ours = &outs[*i];
            assert_eq!(
                ours.shape, golden.shape,
                "{id}/{} on {kind}: output {i} shape",
                case.name
            );
            let err = metric.error(&ours.data, &golden.data);
            let mut bound = default;
            let crosscheck = case.dir.join(format!("xnnpack_output_{i}.npy"));
            if let Ok(x) = read_npy(&crosscheck) {
                bound = bound.max(1.5 * crate::rel_l2(&x.data, &golden.data));
            }
            println!(
                "{id}/{} on {kind}: output {i}: {metric:?} {err:.2e} (bound {bound:.1e})",
                case.name
            );
            if err.is_nan() || err > bound {
                failures.push(format!(
                    "{id}/{} on {kind}: output {i}: {err:.3e} > {bound:.1e}",
                    case.name
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Fails unless `ids` (a runtime's expanded tests) are exactly the suite's models, in order.
pub fn assert_complete(ids: &[&str]) {
    let all: Vec<&str> = GOLDEN_MODELS.iter().map(|m| m.id).collect();
    assert_eq!(
        ids,
        all.as_slice(),
        "the golden suite's tests vs GOLDEN_MODELS"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_model_has_its_goldens() {
        for m in GOLDEN_MODELS {
            for case in cases(m.file) {
                assert!(!case.outputs.is_empty(), "{}/{}", m.id, case.name);
            }
        }
    }
}
