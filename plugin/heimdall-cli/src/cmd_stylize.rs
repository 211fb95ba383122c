//! `heimdall stylize IMAGE --style SPEC --out PNG`: `multistyle26` on a crop of an image (a
//! camera crop: centred square by default), with one style or a blend, written as a PNG at the
//! model's resolution. On the GPU backend the PNG's pixels are read from the RGBA texture the
//! GPU kernel (`heimdall_gpu::tensor_to_rgba`) writes.

use std::path::PathBuf;

use anyhow::{Context, bail};
use heimdall::npy::write_npy;
use heimdall_vision::style::{StyleWeights, stylized_to_rgba};
use heimdall_vision::{Border, Crop, CropTransform, Normalization, RgbaImage};

use crate::Backend;
use crate::gpu_backend::PrecisionArg;
use crate::vision_runner::{Frame, VisionRunner};

/// Arguments of `stylize`.
#[derive(clap::Args)]
pub struct StylizeArgs {
    /// The image (PNG or JPEG).
    image: PathBuf,
    /// One style (`7`) or a blend (`3:0.5,12:0.5`) of the 26 styles (0..=25).
    #[arg(long)]
    style: String,
    /// The stylised image (PNG).
    #[arg(long)]
    out: PathBuf,
    /// Also write the model's raw output (`1 × 3 × H × W`, float32) to this `.npy`.
    #[arg(long)]
    out_tensor: Option<PathBuf>,
    /// The crop of the image, in pixels: `X,Y,W,H` (default: the centred square of the short
    /// side).
    #[arg(long, value_parser = parse_crop)]
    crop: Option<[u32; 4]>,
    /// The model's resolution (a multiple of 4): `N` or `WxH` (default: 256, or the crop's size
    /// when `--crop` is given).
    #[arg(long, value_parser = parse_size)]
    size: Option<[u32; 2]>,
    /// Backend.
    #[arg(long, value_enum, default_value = "cpu")]
    backend: Backend,
    /// Storage precision on the GPU backend.
    #[arg(long, value_enum, default_value = "f32")]
    precision: PrecisionArg,
}

fn parse_crop(s: &str) -> Result<[u32; 4], String> {
    let v: Vec<u32> = s
        .split(',')
        .map(|x| x.trim().parse::<u32>())
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{s:?}: {e}"))?;
    <[u32; 4]>::try_from(v).map_err(|_| format!("{s:?}: expected X,Y,W,H"))
}

fn parse_size(s: &str) -> Result<[u32; 2], String> {
    let (w, h) = s.split_once('x').unwrap_or((s, s));
    let p = |x: &str| x.trim().parse::<u32>().map_err(|e| format!("{s:?}: {e}"));
    Ok([p(w)?, p(h)?])
}

/// Runs `stylize`.
pub fn run(args: &StylizeArgs) -> anyhow::Result<()> {
    let weights = StyleWeights::parse(&args.style)?;
    let image = RgbaImage::load(&args.image)
        .with_context(|| format!("reading the image {}", args.image.display()))?;
    let (iw, ih) = (image.width, image.height);
    let [x, y, w, h] = args.crop.unwrap_or_else(|| {
        let s = iw.min(ih);
        [(iw - s) / 2, (ih - s) / 2, s, s]
    });
    if w == 0 || h == 0 || x.saturating_add(w) > iw || y.saturating_add(h) > ih {
        bail!("the crop {x},{y},{w},{h} is not inside the {iw}x{ih} image");
    }
    let [mw, mh] = args.size.unwrap_or(if args.crop.is_some() {
        [w, h]
    } else {
        [256, 256]
    });
    if mw == 0 || mh == 0 || mw % 4 != 0 || mh % 4 != 0 || mw > 4096 || mh > 4096 {
        bail!("the model resolution {mw}x{mh} must be a multiple of 4, at most 4096");
    }
    let runner = VisionRunner::new(args.backend, args.precision)?;
    let path = crate::assets::model("multistyle26")?;
    let shape = vec![1, 3, mh as usize, mw as usize];
    let mut model = runner.load(
        &path,
        Normalization::ZERO_TO_ONE,
        vec![("image".into(), shape)],
        1,
    )?;
    let (fw, fh) = (iw as f32, ih as f32);
    let crop = Crop {
        transform: CropTransform::rect(
            x as f32 / fw,
            y as f32 / fh,
            (x + w) as f32 / fw,
            (y + h) as f32 / fh,
        ),
        border: Border::Clamp,
    };
    let mut frame = Frame::new(image);
    let out = model.run_with(&runner, &mut frame, &crop, &[weights.as_slice()])?;
    let hwc = out.first().context("the model has no output")?;
    // On the GPU the pixels come from the output texture the GPU kernel writes (what a material
    // samples); on the CPU from the host conversion. Both are the same bytes.
    let rgba = match model.gpu_model() {
        Some(gpu) => crate::gpu_texture::output_as_rgba(gpu, 0)?,
        None => stylized_to_rgba(hwc, mw, mh)?,
    };
    rgba.save_png(&args.out)
        .with_context(|| format!("writing {}", args.out.display()))?;
    if let Some(npy) = &args.out_tensor {
        // Back to the model's own NCHW layout.
        let n = (mw * mh) as usize;
        let mut nchw = vec![0.0f32; 3 * n];
        for (i, px) in hwc.chunks_exact(3).enumerate() {
            for c in 0..3 {
                nchw[c * n + i] = px[c];
            }
        }
        write_npy(npy, &[1, 3, mh as usize, mw as usize], &nchw)?;
    }
    println!(
        "{}: {mw}x{mh} crop {x},{y},{w},{h} of {}, style {}",
        args.out.display(),
        args.image.display(),
        args.style
    );
    Ok(())
}
