//! The WGSL kernel files of `shaders/`, embedded at build time. Kernel builders compose them
//! with generated declarations ([`crate::wgsl::KernelSource::compose`]).

macro_rules! kernels {
    ($($name:literal),* $(,)?) => {
        /// Names of every kernel file in `shaders/` (without `.wgsl`).
        pub const KERNELS: &[&str] = &[$($name),*];

        /// The body of kernel `name` (the file `shaders/<name>.wgsl`).
        pub fn source(name: &str) -> Option<&'static str> {
            match name {
                $($name => Some(include_str!(concat!("../../../shaders/", $name, ".wgsl"))),)*
                _ => None,
            }
        }
    };
}

kernels!(
    "conv1x1",
    "conv1x1_splitk",
    "conv2d",
    "depthwise",
    "transpose_conv",
    "fully_connected",
    "pool",
    "window_reduce",
    "elementwise",
    "nary",
    "gather",
    "pad",
    "reduce",
    "resize_bilinear",
    "resize_taps",
    "depth_to_space",
    "space_depth",
    "instance_norm",
    "softmax",
    "matmul",
    "transpose",
    "landmarks_to_transform",
    "transform_tensor_bilinear",
    "transform_landmarks",
    "preprocess",
);
