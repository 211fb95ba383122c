//! [`StyleDecoder`] in a headless app on the GPU (lavapipe) against multistyle26 on ONNX Runtime
//! (`assets/references/style.json` and `style_<case>.npy`, as the CLI's `stylize` test): the
//! astronaut fed as a still camera, the reference's pixel-exact crop as a
//! [`RegionOfInterest`] at the model's resolution, the style (one, and a blend) baked in by
//! [`style_transfer_model`]. The raw output's rel-L2 within the CLI's bounds (1e-4 in f32, 1e-2
//! in f16: the plugin's default precision); the [`StylizedImage`]'s pixels are exactly
//! `clip(x, 0, 1) · 255 + 0.5` of that output.

mod common;
mod decoders_support;

use std::time::Duration;

use bevy::prelude::*;
use decoders_support as support;
use heimdall_bevy::prelude::*;
use heimdall_gpu::Precision;
use heimdall_vision::CropTransform;
use heimdall_vision::style::StyleWeights;

#[test]
fn style_matches_onnx_runtime() {
    if common::skip_gpu() {
        common::skipping("HEIMDALL_SKIP_GPU=1");
        return;
    }
    let refs = support::reference("style");
    let bytes = std::fs::read(common::assets_dir().join("models/multistyle26.onnx")).unwrap();
    let mut app = support::app();
    let bound = match app.world().resource::<HeimdallSettings>().precision {
        Precision::F32 => 1e-4,
        _ => 1e-2,
    };
    for (case, c) in refs["cases"].as_object().expect("cases") {
        let want = heimdall_testkit::npy::read_npy(
            common::assets_dir()
                .join("references")
                .join(c["output"].as_str().unwrap()),
        )
        .unwrap();
        let img = support::image(c["image"].as_str().unwrap());
        let (fw, fh) = (img.width as f32, img.height as f32);
        let crop: Vec<u32> = c["crop"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap() as u32)
            .collect();
        let [x, y, w, h] = [crop[0], crop[1], crop[2], crop[3]];
        let weights = StyleWeights::parse(c["style"].as_str().unwrap()).unwrap();
        let model = style_transfer_model(&bytes, UVec2::new(w, h), &weights).unwrap();
        let model = app
            .world_mut()
            .resource_mut::<Assets<DnnModel>>()
            .add(model);
        let (camera, _source) = support::spawn_camera(&mut app, img);
        let roi = app
            .world_mut()
            .spawn(RegionOfInterest {
                frame_index: 0,
                crop: Crop {
                    transform: CropTransform::rect(
                        x as f32 / fw,
                        y as f32 / fh,
                        (x + w) as f32 / fw,
                        (y + h) as f32 / fh,
                    ),
                    border: Border::Clamp,
                },
            })
            .id();
        let dnn = app
            .world_mut()
            .spawn(
                Dnn::new(model, camera)
                    .with_crop(InputCrop::Roi(roi))
                    .with_decoder(StyleDecoder),
            )
            .id();
        let got =
            support::wait_for::<StylizedImage>(&mut app, dnn, 0, Duration::from_secs(300), |s| {
                s.frame_index
            })
            .unwrap_or_else(|| panic!("{case}: no picture"));
        let output = app.world().get::<DnnOutput>(dnn).unwrap().clone();
        assert_eq!(output.frame_index, got.frame_index);
        assert_eq!(got.size, UVec2::new(w, h));
        // The reference is NCHW, the plugin's outputs NHWC.
        assert_eq!(want.shape, vec![1, 3, h as usize, w as usize]);
        let n = (w * h) as usize;
        let hwc = &output.tensors[0];
        assert_eq!(hwc.len(), 3 * n);
        let mut nchw = vec![0.0f32; 3 * n];
        for (i, px) in hwc.chunks_exact(3).enumerate() {
            for ch in 0..3 {
                nchw[ch * n + i] = px[ch];
            }
        }
        let err = heimdall_testkit::rel_l2(&nchw, &want.data);
        println!("{case}: rel-L2 {err:.2e} (bound {bound:.0e})");
        assert!(err <= bound, "{case}: {err}");
        // The image's pixels are the output's.
        let images = app.world().resource::<Assets<Image>>();
        let image = images.get(&got.image).expect("the picture");
        assert_eq!((image.width(), image.height()), (w, h));
        let data = image.data.as_ref().expect("pixels on the CPU side");
        for (i, px) in hwc.chunks_exact(3).enumerate() {
            for ch in 0..3 {
                assert_eq!(
                    data[i * 4 + ch],
                    (px[ch].clamp(0.0, 1.0) * 255.0 + 0.5) as u8
                );
            }
            assert_eq!(data[i * 4 + 3], 255);
        }
        app.world_mut().despawn(dnn);
        app.world_mut().despawn(roi);
        app.world_mut().despawn(camera);
    }
}

#[test]
fn bad_resolutions_are_typed_errors() {
    let w = StyleWeights::one(3).unwrap();
    for size in [UVec2::new(0, 64), UVec2::new(62, 64), UVec2::new(8192, 64)] {
        assert!(style_transfer_model(&[], size, &w).is_err(), "{size}");
    }
    assert!(style_transfer_model(b"not a model", UVec2::new(64, 64), &w).is_err());
}
