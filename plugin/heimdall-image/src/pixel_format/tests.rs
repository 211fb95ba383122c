//! Every camera format against an independent reference: the packed formats exactly, YUV
//! against BT.601's floating-point equations (within 1 per channel), Motion-JPEG against the
//! image it was encoded from; at odd sizes and with padded rows whose padding never leaks in;
//! and bad frames as typed errors.

use super::*;

/// Deterministic bytes.
fn bytes(seed: u64, n: usize) -> Vec<u8> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (s >> 56) as u8
        })
        .collect()
}

/// BT.601 limited range, in floating point (the reference).
fn bt601(y: u8, u: u8, v: u8) -> [f64; 3] {
    let (y, u, v) = (
        f64::from(y) - 16.0,
        f64::from(u) - 128.0,
        f64::from(v) - 128.0,
    );
    let y = y.max(0.0) * 255.0 / 219.0;
    [
        y + 1.402 * 255.0 / 224.0 * v,
        y - 0.344136 * 255.0 / 224.0 * u - 0.714136 * 255.0 / 224.0 * v,
        y + 1.772 * 255.0 / 224.0 * u,
    ]
}

const SIZES: [(usize, usize); 6] = [(1, 1), (2, 2), (5, 3), (7, 5), (16, 9), (33, 2)];
const PADDING: [usize; 3] = [0, 3, 64];

/// `rows` rows of `row` bytes each, laid out `stride` bytes apart with 0xAB padding; the last
/// row without its padding when `trim`.
fn padded(data: &[u8], row: usize, rows: usize, stride: usize, trim: bool) -> Vec<u8> {
    let mut out = vec![0xAB; stride * rows];
    for r in 0..rows {
        out[r * stride..r * stride + row].copy_from_slice(&data[r * row..(r + 1) * row]);
    }
    if trim {
        out.truncate(stride * (rows - 1) + row);
    }
    out
}

fn convert(
    format: PixelFormat,
    w: usize,
    h: usize,
    stride: Option<usize>,
    data: &[u8],
) -> RgbaImage {
    to_rgba(&RawFrame {
        format,
        width: w as u32,
        height: h as u32,
        stride,
        data,
    })
    .unwrap_or_else(|e| panic!("{format:?} {w}x{h} stride {stride:?}: {e}"))
}

#[test]
fn packed_formats_convert_exactly_at_any_size_and_stride() {
    for (w, h) in SIZES {
        for (format, n) in [
            (PixelFormat::Rgba8, 4),
            (PixelFormat::Bgra8, 4),
            (PixelFormat::Rgb8, 3),
            (PixelFormat::Bgr8, 3),
            (PixelFormat::Gray8, 1),
        ] {
            let tight = bytes(w as u64 * 31 + h as u64, w * h * n);
            let want: Vec<u8> = tight
                .chunks_exact(n)
                .flat_map(|p| match format {
                    PixelFormat::Rgba8 | PixelFormat::Rgb8 => [p[0], p[1], p[2], 255],
                    PixelFormat::Bgra8 | PixelFormat::Bgr8 => [p[2], p[1], p[0], 255],
                    _ => [p[0], p[0], p[0], 255],
                })
                .collect();
            for pad in PADDING {
                let stride = w * n + pad;
                for (given, trim) in [(Some(stride), true), (None, false)] {
                    let data = padded(&tight, w * n, h, stride, trim);
                    let got = convert(format, w, h, given, &data);
                    assert_eq!(got.data, want, "{format:?} {w}x{h} stride {stride}");
                }
            }
        }
    }
}

/// The largest difference, per channel, between `got` and the reference.
fn yuv_error(got: &RgbaImage, want: &[[f64; 3]]) -> f64 {
    got.data
        .chunks_exact(4)
        .zip(want)
        .flat_map(|(g, w)| (0..3).map(move |c| (f64::from(g[c]) - w[c].clamp(0.0, 255.0)).abs()))
        .fold(0.0, f64::max)
}

#[test]
fn yuyv_matches_bt601_at_odd_sizes_and_strides() {
    for (w, h) in SIZES {
        let row = w.div_ceil(2) * 4;
        let tight = bytes(7 + w as u64, row * h);
        let want: Vec<[f64; 3]> = (0..h)
            .flat_map(|y| (0..w).map(move |x| (x, y)))
            .map(|(x, y)| {
                let p = &tight[y * row + (x / 2) * 4..];
                bt601(if x % 2 == 0 { p[0] } else { p[2] }, p[1], p[3])
            })
            .collect();
        for pad in PADDING {
            let data = padded(&tight, row, h, row + pad, true);
            let got = convert(PixelFormat::Yuyv, w, h, Some(row + pad), &data);
            let err = yuv_error(&got, &want);
            assert!(
                err <= 1.0,
                "YUYV {w}x{h} stride {}: off by {err}",
                row + pad
            );
            assert!(got.data.chunks_exact(4).all(|p| p[3] == 255));
        }
    }
}

#[test]
fn nv12_matches_bt601_at_odd_sizes_and_strides() {
    for (w, h) in SIZES {
        let row = w.div_ceil(2) * 2;
        let rows = h + h.div_ceil(2);
        let tight = bytes(11 + h as u64, row * rows);
        let want: Vec<[f64; 3]> = (0..h)
            .flat_map(|y| (0..w).map(move |x| (x, y)))
            .map(|(x, y)| {
                let c = &tight[(h + y / 2) * row + (x / 2) * 2..];
                bt601(tight[y * row + x], c[0], c[1])
            })
            .collect();
        for pad in PADDING {
            for (given, trim) in [(Some(row + pad), true), (None, false)] {
                let data = padded(&tight, row, rows, row + pad, trim);
                let got = convert(PixelFormat::Nv12, w, h, given, &data);
                let err = yuv_error(&got, &want);
                assert!(
                    err <= 1.0,
                    "NV12 {w}x{h} stride {}: off by {err}",
                    row + pad
                );
            }
        }
    }
}

/// The reference's ends: black, white and the primaries of limited range land on 0 and 255.
#[test]
fn limited_range_ends_are_black_and_white() {
    assert_eq!(yuv_to_rgba(16, 128, 128), [0, 0, 0, 255]);
    assert_eq!(yuv_to_rgba(235, 128, 128), [255, 255, 255, 255]);
    assert_eq!(yuv_to_rgba(0, 0, 255)[1], 0, "clamped below");
    assert_eq!(yuv_to_rgba(255, 255, 255)[2], 255, "clamped above");
}

#[test]
fn mjpeg_decodes_to_the_encoded_image() {
    let (w, h) = (33usize, 17usize);
    let rgb: Vec<u8> = (0..h)
        .flat_map(|y| (0..w).flat_map(move |x| [(x * 7) as u8, (y * 13) as u8, 128]))
        .collect();
    let mut jpeg = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut jpeg, 95)
        .encode(&rgb, w as u32, h as u32, image::ExtendedColorType::Rgb8)
        .unwrap();
    let got = convert(PixelFormat::Mjpeg, w, h, None, &jpeg);
    let mean: f64 = got
        .data
        .chunks_exact(4)
        .zip(rgb.chunks_exact(3))
        .flat_map(|(g, r)| (0..3).map(move |c| (f64::from(g[c]) - f64::from(r[c])).abs()))
        .sum::<f64>()
        / (w * h * 3) as f64;
    assert!(mean < 3.0, "mean error {mean}");
    // A JPEG of another size, and a truncated one, are typed errors.
    let frame = |data: &[u8], w: u32| {
        to_rgba(&RawFrame {
            format: PixelFormat::Mjpeg,
            width: w,
            height: h as u32,
            stride: None,
            data,
        })
    };
    assert!(matches!(frame(&jpeg, 32), Err(ImageError::Parameters(_))));
    assert!(matches!(
        frame(&jpeg[..jpeg.len() / 3], w as u32),
        Err(ImageError::Decode { .. })
    ));
}

#[test]
fn bad_frames_are_typed_errors() {
    let frame = |format, width, height, stride, data: &[u8]| {
        to_rgba(&RawFrame {
            format,
            width,
            height,
            stride,
            data,
        })
    };
    let data = vec![0u8; 64];
    assert!(matches!(
        frame(PixelFormat::Rgba8, 0, 4, None, &data),
        Err(ImageError::Size { .. })
    ));
    assert!(matches!(
        frame(PixelFormat::Rgba8, 4, 5, None, &data),
        Err(ImageError::Parameters(_))
    ));
    assert!(matches!(
        frame(PixelFormat::Rgb8, 4, 4, Some(8), &data),
        Err(ImageError::Parameters(_))
    ));
    assert!(matches!(
        frame(PixelFormat::Yuyv, 8, 4, Some(16), &data[..40]),
        Err(ImageError::Size { .. })
    ));
    assert!(matches!(
        frame(PixelFormat::Nv12, u32::MAX, u32::MAX, Some(1), &data),
        Err(ImageError::Size { .. })
    ));
}

/// Arbitrary sizes, strides and lengths in every format: a result or a typed error, never a
/// panic.
#[test]
fn arbitrary_frames_never_panic() {
    let formats = [
        PixelFormat::Rgba8,
        PixelFormat::Bgra8,
        PixelFormat::Rgb8,
        PixelFormat::Bgr8,
        PixelFormat::Gray8,
        PixelFormat::Yuyv,
        PixelFormat::Nv12,
        PixelFormat::Mjpeg,
    ];
    let noise = bytes(99, 4096);
    for i in 0..20_000u64 {
        let r = bytes(i, 6);
        let format = formats[r[0] as usize % formats.len()];
        let (w, h) = (u32::from(r[1] % 40), u32::from(r[2] % 40));
        let stride = (!r[3].is_multiple_of(4)).then_some(usize::from(r[4]) * 2);
        let len = (usize::from(r[5]) * 16).min(noise.len());
        let _ = to_rgba(&RawFrame {
            format,
            width: w,
            height: h,
            stride,
            data: &noise[..len],
        });
    }
}
