//! The input sequences of `bench --conv-cache`: `.npy` files, a still image with noise, or the
//! frames of a bundled clip, each as the model's image input (input 0) in the IR's layout.

use std::path::{Path, PathBuf};

use anyhow::bail;
use heimdall::LoadedModel;
use heimdall::npy::read_npy;
use heimdall_clip::Clip;
use heimdall_vision::{Crop, Normalization, RgbaImage};

/// Where the frames come from.
pub enum Source<'a> {
    /// One `.npy` file per frame (the model's layout, e.g. NCHW for ONNX images).
    Npy(&'a [PathBuf]),
    /// A still image, `frames` times, with noise.
    Still {
        /// The image file (PNG or JPEG).
        image: &'a Path,
        /// Frames.
        frames: usize,
    },
    /// The first `frames` frames of a clip (`assets/clips/<name>` or a directory).
    Clip {
        /// The clip's directory or name.
        dir: &'a Path,
        /// Frames.
        frames: usize,
    },
}

/// How generated frames are made.
#[derive(Clone, Copy, Debug)]
pub struct Generate {
    /// The model's input range `[lo, hi]` (a pixel byte 0 maps to `lo`, 255 to `hi`).
    pub range: [f32; 2],
    /// Standard deviation of the noise added to every frame, in byte units (0..255).
    pub noise: f32,
}

/// The image input's `[H, W, C]` (IR layout), or why the model has none.
pub fn image_shape(model: &LoadedModel) -> anyhow::Result<[usize; 3]> {
    let g = &model.graph;
    let Some(&input) = g.inputs.first() else {
        bail!("the model has no input");
    };
    match g.tensor(input).shape[..] {
        [1, h, w, c] if (1..=4).contains(&c) && h > 0 && w > 0 => Ok([h, w, c]),
        ref s => bail!(
            "--conv-cache needs a model whose first input is an image [1, H, W, C ≤ 4] (NHWC; \
             ONNX: [1, C, H, W]); input 0 `{}` has shape {:?}",
            model.io.inputs.first().map_or("", |t| t.name.as_str()),
            s
        ),
    }
}

/// SplitMix64: a small deterministic generator.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `(0, 1]`.
    fn unit(&mut self) -> f64 {
        ((self.next() >> 11) as f64 + 1.0) / (1u64 << 53) as f64
    }

    /// Standard normal (Box–Muller).
    fn gauss(&mut self) -> f32 {
        let (u, v) = (self.unit(), self.unit());
        ((-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()) as f32
    }
}

/// Adds noise of `sigma` byte units to `x` (values in `range`), seeded by `frame`, clamped to
/// the range.
fn add_noise(x: &mut [f32], g: &Generate, frame: usize) {
    if g.noise <= 0.0 {
        return;
    }
    let [lo, hi] = g.range;
    let sigma = g.noise / 255.0 * (hi - lo);
    let mut rng = SplitMix(0x4845_494D_4441_4C4C ^ (frame as u64).wrapping_mul(0x2545_F491));
    let (min, max) = (lo.min(hi), lo.max(hi));
    for v in x {
        *v = (*v + sigma * rng.gauss()).clamp(min, max);
    }
}

fn to_tensor(img: &RgbaImage, shape: [usize; 3], g: &Generate) -> anyhow::Result<Vec<f32>> {
    Ok(img.to_tensor(
        &Crop::FULL,
        &Normalization::range(g.range[0], g.range[1]),
        shape,
    )?)
}

/// A clip's directory: `dir` itself, or `assets/clips/<dir>` of the checkout.
fn clip_dir(dir: &Path) -> PathBuf {
    if dir.is_dir() {
        return dir.to_path_buf();
    }
    match crate::assets::assets_dir().map(|a| a.join("clips").join(dir)) {
        Some(bundled) if bundled.is_dir() => bundled,
        _ => dir.into(),
    }
}

/// The frames of `source` as the model's input 0 (IR layout).
pub fn frames(model: &LoadedModel, source: &Source, g: &Generate) -> anyhow::Result<Vec<Vec<f32>>> {
    let shape = image_shape(model)?;
    match source {
        Source::Npy(paths) => {
            let io = &model.io.inputs[0];
            paths
                .iter()
                .map(|p| {
                    let t = read_npy(p).map_err(|e| anyhow::anyhow!("--inputs: {e}"))?;
                    if t.shape != io.shape {
                        bail!(
                            "--inputs {}: the model's input 0 `{}` has shape {:?}, the file has shape {:?}",
                            p.display(),
                            io.name,
                            io.shape,
                            t.shape
                        );
                    }
                    Ok(io.to_ir(&t.data))
                })
                .collect()
        }
        Source::Still { image, frames } => {
            // The image errors name the file and their cause already.
            let img = RgbaImage::load(image).map_err(|e| anyhow::anyhow!("--still: {e}"))?;
            let base = to_tensor(&img, shape, g)?;
            Ok((0..*frames)
                .map(|f| {
                    let mut x = base.clone();
                    add_noise(&mut x, g, f);
                    x
                })
                .collect())
        }
        Source::Clip { dir, frames } => {
            let dir = clip_dir(dir);
            let clip = Clip::load(&dir).map_err(|e| anyhow::anyhow!("--clip: {e}"))?;
            (0..*frames)
                .map(|f| {
                    let mut x = to_tensor(&clip.frame(f), shape, g)?;
                    add_noise(&mut x, g, f);
                    Ok(x)
                })
                .collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn noise_is_deterministic_clamped_and_about_sigma() {
        let g = Generate {
            range: [-1.0, 1.0],
            noise: 25.5,
        };
        let mut a = vec![0.0f32; 20000];
        let mut b = a.clone();
        add_noise(&mut a, &g, 3);
        add_noise(&mut b, &g, 3);
        assert_eq!(a, b);
        let mut c = vec![0.0f32; 20000];
        add_noise(&mut c, &g, 4);
        assert_ne!(a, c);
        // sigma = 25.5 / 255 * 2 = 0.2.
        let var = a.iter().map(|v| f64::from(*v).powi(2)).sum::<f64>() / a.len() as f64;
        assert!((var.sqrt() - 0.2).abs() < 0.01, "{}", var.sqrt());
        let mut d = vec![1.0f32; 100];
        add_noise(&mut d, &g, 0);
        assert!(d.iter().all(|v| (-1.0..=1.0).contains(v)));
    }
}
