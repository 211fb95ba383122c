//! SSD anchor generation, as MediaPipe's `SsdAnchorsCalculator`
//! (`mediapipe/calculators/tflite/ssd_anchors_calculator.cc`).
//!
//! Consecutive layers with the same stride share one feature map; each of them contributes one
//! anchor per aspect ratio plus, when `interpolated_scale_aspect_ratio > 0`, one anchor with the
//! geometric mean of its scale and the next layer's. Anchors are laid out feature map by feature
//! map, then row by row, column by column, anchor by anchor; centres at `(x + offset) / width`.

/// One anchor: centre and size, normalised to the model input.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Anchor {
    /// Centre x in `[0, 1]`.
    pub x_center: f32,
    /// Centre y in `[0, 1]`.
    pub y_center: f32,
    /// Width (1 with `fixed_anchor_size`).
    pub w: f32,
    /// Height (1 with `fixed_anchor_size`).
    pub h: f32,
}

/// The options of `SsdAnchorsCalculator` that these models use (the feature map sizes are
/// derived from the strides: `ceil(input / stride)`).
#[derive(Clone, Debug, PartialEq)]
pub struct SsdAnchorsOptions {
    /// Model input width in pixels.
    pub input_size_width: u32,
    /// Model input height in pixels.
    pub input_size_height: u32,
    /// Smallest anchor scale.
    pub min_scale: f32,
    /// Largest anchor scale.
    pub max_scale: f32,
    /// Horizontal anchor centre offset within a cell.
    pub anchor_offset_x: f32,
    /// Vertical anchor centre offset within a cell.
    pub anchor_offset_y: f32,
    /// One stride per layer (the number of layers is its length).
    pub strides: Vec<u32>,
    /// Aspect ratios of each layer's anchors.
    pub aspect_ratios: Vec<f32>,
    /// Three fixed boxes in the lowest layer instead (an SSD-MobileNet variant).
    pub reduce_boxes_in_lowest_layer: bool,
    /// Aspect ratio of the extra interpolated-scale anchor (≤ 0: none).
    pub interpolated_scale_aspect_ratio: f32,
    /// All anchors of size 1×1 (the box regressors then carry the size).
    pub fixed_anchor_size: bool,
}

impl SsdAnchorsOptions {
    /// The options of MediaPipe's `face_detection_short_range` graph: 128×128 input, 4 layers,
    /// strides `[8, 16, 16, 16]`, scales 0.1484375..0.75, offset 0.5, aspect ratio 1.0,
    /// interpolated ratio 1.0, fixed anchor size: 896 anchors (16·16·2 + 8·8·6).
    pub fn face_detection_short_range() -> SsdAnchorsOptions {
        SsdAnchorsOptions {
            input_size_width: 128,
            input_size_height: 128,
            min_scale: 0.1484375,
            max_scale: 0.75,
            anchor_offset_x: 0.5,
            anchor_offset_y: 0.5,
            strides: vec![8, 16, 16, 16],
            aspect_ratios: vec![1.0],
            reduce_boxes_in_lowest_layer: false,
            interpolated_scale_aspect_ratio: 1.0,
            fixed_anchor_size: true,
        }
    }
}

fn calculate_scale(min_scale: f32, max_scale: f32, stride_index: usize, num_strides: usize) -> f32 {
    if num_strides == 1 {
        (min_scale + max_scale) * 0.5
    } else {
        min_scale + (max_scale - min_scale) * stride_index as f32 / (num_strides as f32 - 1.0)
    }
}

/// Generates the anchors (empty when a stride is zero or no layer is given).
pub fn generate_anchors(options: &SsdAnchorsOptions) -> Vec<Anchor> {
    let strides = &options.strides;
    let n = strides.len();
    let mut anchors = Vec::new();
    if strides.contains(&0) {
        return anchors;
    }
    let mut layer = 0;
    while layer < n {
        let mut heights = Vec::new();
        let mut widths = Vec::new();
        let mut last = layer;
        while last < n && strides[last] == strides[layer] {
            let scale = calculate_scale(options.min_scale, options.max_scale, last, n);
            let mut ratios_scales: Vec<(f32, f32)> = Vec::new();
            if last == 0 && options.reduce_boxes_in_lowest_layer {
                ratios_scales.extend([(1.0, 0.1), (2.0, scale), (0.5, scale)]);
            } else {
                ratios_scales.extend(options.aspect_ratios.iter().map(|&r| (r, scale)));
                if options.interpolated_scale_aspect_ratio > 0.0 {
                    let next = if last == n - 1 {
                        1.0
                    } else {
                        calculate_scale(options.min_scale, options.max_scale, last + 1, n)
                    };
                    ratios_scales.push((
                        options.interpolated_scale_aspect_ratio,
                        (scale * next).sqrt(),
                    ));
                }
            }
            for (ratio, scale) in ratios_scales {
                let r = ratio.sqrt();
                heights.push(scale / r);
                widths.push(scale * r);
            }
            last += 1;
        }
        let stride = strides[layer];
        let fm_h = options.input_size_height.div_ceil(stride);
        let fm_w = options.input_size_width.div_ceil(stride);
        for y in 0..fm_h {
            for x in 0..fm_w {
                for (&h, &w) in heights.iter().zip(&widths) {
                    let (w, h) = if options.fixed_anchor_size {
                        (1.0, 1.0)
                    } else {
                        (w, h)
                    };
                    anchors.push(Anchor {
                        x_center: (x as f32 + options.anchor_offset_x) / fm_w as f32,
                        y_center: (y as f32 + options.anchor_offset_y) / fm_h as f32,
                        w,
                        h,
                    });
                }
            }
        }
        layer = last;
    }
    anchors
}
