//! Selfie segmentation: the person mask ([`heimdall_vision::decode_mask`]) as an `R8Unorm`
//! texture ([`PersonMask`]), updated in place, usable in any material.

use std::time::Duration;

use bevy::asset::RenderAssetUsages;
use bevy::prelude::*;
use bevy::render::render_resource::{Extent3d, TextureDimension, TextureFormat};
use heimdall_vision::Mask;

use crate::decoder::{DecodeError, DecodeInput, DnnDecoder};

/// The person mask of a segmentation DNN (on its entity).
#[derive(Component, Clone, Debug, Reflect)]
#[reflect(opaque)]
#[reflect(Component, Debug, Clone)]
pub struct PersonMask {
    /// Camera frame it was computed from.
    pub frame_index: u64,
    /// Its capture time.
    pub capture_time: Duration,
    /// The mask in the model's resolution (`1` = person), model input uv.
    pub mask: Mask,
    /// The same as an `R8Unorm` texture (`1` = person).
    pub image: Handle<Image>,
}

/// Decodes a single-channel segmentation output (`selfie_segmentation`: `1×256×256×1`).
#[derive(Default)]
pub struct PersonMaskDecoder;

/// What [`PersonMaskDecoder`] delivers.
pub struct DecodedMask {
    frame_index: u64,
    capture_time: Duration,
    mask: Mask,
}

impl DnnDecoder for PersonMaskDecoder {
    type Output = DecodedMask;

    fn decode(&self, input: &DecodeInput) -> Result<DecodedMask, DecodeError> {
        let shape = input
            .shapes
            .first()
            .ok_or("the segmentation model has no output")?;
        let (h, w) = match shape.as_slice() {
            [1, h, w, 1] | [h, w, 1] | [1, h, w] => (*h as u32, *w as u32),
            other => {
                return Err(format!("a mask needs a [1, H, W, 1] output, not {other:?}").into());
            }
        };
        if w == 0 || h == 0 {
            return Err(format!("an empty {w}x{h} mask").into());
        }
        let mask = heimdall_vision::decode_mask(input.output(0)?, w, h)?;
        Ok(DecodedMask {
            frame_index: input.frame_index,
            capture_time: input.capture_time,
            mask,
        })
    }

    fn deliver(&self, out: DecodedMask, entity: &mut EntityWorldMut) {
        let previous = entity.get::<PersonMask>().map(|m| m.image.clone());
        let bytes = out.mask.to_u8();
        let (w, h) = (out.mask.width.max(1), out.mask.height.max(1));
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
            images.add(mask_image(w, h, bytes))
        });
        entity.insert(PersonMask {
            frame_index: out.frame_index,
            capture_time: out.capture_time,
            mask: out.mask,
            image,
        });
    }
}

/// An `R8Unorm` image of mask bytes.
fn mask_image(width: u32, height: u32, bytes: Vec<u8>) -> Image {
    Image::new(
        Extent3d {
            width,
            height,
            depth_or_array_layers: 1,
        },
        TextureDimension::D2,
        bytes,
        TextureFormat::R8Unorm,
        RenderAssetUsages::MAIN_WORLD | RenderAssetUsages::RENDER_WORLD,
    )
}
