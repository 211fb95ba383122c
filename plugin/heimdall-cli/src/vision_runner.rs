//! Runs a vision model on a crop of an image, on the CPU backend (the crop through
//! `heimdall_vision::resample`) or the GPU backend (the image uploaded once as a texture, the crop
//! through `heimdall_gpu::preprocess::Preprocessor`, the model's steps in the same submission).

use std::path::Path;

use anyhow::{Context, bail};
use heimdall::{LoadOptions, load};
use heimdall_cpu::{CpuModel, CpuOptions};
use heimdall_gpu::preprocess::{PreprocessBinding, Preprocessor};
use heimdall_gpu::{GpuContext, GpuModel, GpuOptions};
use heimdall_vision::{Crop, Normalization, RgbaImage};

use crate::Backend;
use crate::gpu_backend::PrecisionArg;

/// Where models run, shared by every model of one command (one GPU device for all).
pub struct VisionRunner {
    backend: Backend,
    precision: PrecisionArg,
    gpu: Option<GpuContext>,
}

/// An image as the models read it: its pixels, and on the GPU a texture made on first use.
pub struct Frame {
    /// The pixels (RGBA8).
    pub image: RgbaImage,
    texture: Option<wgpu::TextureView>,
    id: u64,
}

impl Frame {
    /// A frame of `image`.
    pub fn new(image: RgbaImage) -> Frame {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        Frame {
            image,
            texture: None,
            id: NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        }
    }

    fn view(&mut self, ctx: &GpuContext) -> anyhow::Result<&wgpu::TextureView> {
        if self.texture.is_none() {
            let image = &self.image;
            let texture = heimdall_gpu::preprocess::upload_rgba8(
                ctx,
                "heimdall detect frame",
                &image.data,
                (image.width, image.height),
                &[],
            )?;
            self.texture = Some(texture.create_view(&Default::default()));
        }
        self.texture.as_ref().context("the frame's texture")
    }
}

enum Engine {
    Cpu(Box<CpuModel>),
    Gpu(Box<GpuEngine>),
}

struct GpuEngine {
    model: GpuModel,
    pre: Preprocessor,
    binding: Option<(u64, PreprocessBinding)>,
}

/// One model ready to run on crops.
pub struct VisionModel {
    engine: Engine,
    norm: Normalization,
    input: [usize; 3],
    inputs: usize,
    /// Output shapes in the model's own layout.
    pub output_shapes: Vec<Vec<usize>>,
    name: String,
}

impl VisionRunner {
    /// A runner on `backend` (GPU storage in `precision`).
    pub fn new(backend: Backend, precision: PrecisionArg) -> anyhow::Result<VisionRunner> {
        let gpu = match backend {
            Backend::Cpu => None,
            Backend::Gpu => Some(GpuContext::create()?),
        };
        Ok(VisionRunner {
            backend,
            precision,
            gpu,
        })
    }

    /// Loads `path` (with static `input_shapes` for dynamic inputs) and checks it has one image
    /// input of 1 to 4 channels and at least `min_outputs` outputs.
    pub fn load(
        &self,
        path: &Path,
        norm: Normalization,
        input_shapes: Vec<(String, Vec<usize>)>,
        min_outputs: usize,
    ) -> anyhow::Result<VisionModel> {
        let loaded = load(
            path,
            LoadOptions {
                input_shapes,
                ..Default::default()
            },
        )
        .with_context(|| format!("loading {}", path.display()))?;
        let name = path.display().to_string();
        let ir_inputs = loaded.graph.inputs.len();
        let shape = loaded
            .io
            .inputs
            .first()
            .map(|t| {
                let s = &t.shape;
                if t.nchw && s.len() == 4 {
                    vec![s[0], s[2], s[3], s[1]]
                } else {
                    s.clone()
                }
            })
            .unwrap_or_default();
        if ir_inputs == 0 || shape.len() != 4 || shape[0] != 1 || !(1..=4).contains(&shape[3]) {
            bail!("{name}: expected an image input [1, H, W, C≤4] first, the model has {shape:?}");
        }
        if loaded.io.outputs.len() < min_outputs {
            bail!(
                "{name}: expected at least {min_outputs} outputs, the model has {}",
                loaded.io.outputs.len()
            );
        }
        let input = [shape[1], shape[2], shape[3]];
        let output_shapes = loaded.io.outputs.iter().map(|t| t.shape.clone()).collect();
        let engine = match (&self.backend, &self.gpu) {
            (Backend::Gpu, Some(ctx)) => {
                let model = crate::progress::step(
                    format!("compiling {} for the GPU", loaded.graph.name),
                    || {
                        GpuModel::compile(
                            ctx,
                            &loaded.graph,
                            GpuOptions::new(self.precision.into()),
                        )
                    },
                )?;
                let pre = Preprocessor::new(&model, 0, norm)?;
                Engine::Gpu(Box::new(GpuEngine {
                    model,
                    pre,
                    binding: None,
                }))
            }
            _ => Engine::Cpu(Box::new(CpuModel::compile(
                &loaded.graph,
                CpuOptions::default(),
            )?)),
        };
        Ok(VisionModel {
            engine,
            norm,
            input,
            inputs: ir_inputs,
            output_shapes,
            name,
        })
    }

    /// The GPU context (for frames), if running on the GPU.
    pub fn gpu(&self) -> Option<&GpuContext> {
        self.gpu.as_ref()
    }
}

impl VisionModel {
    /// The compiled GPU model, when running on the GPU.
    pub fn gpu_model(&self) -> Option<&GpuModel> {
        match &self.engine {
            Engine::Gpu(g) => Some(&g.model),
            Engine::Cpu(_) => None,
        }
    }

    /// The input's `[H, W, C]`.
    pub fn input_shape(&self) -> [usize; 3] {
        self.input
    }

    /// Runs the model on `crop` of `frame`; the outputs in the IR's layout (NHWC), model order.
    pub fn run(
        &mut self,
        runner: &VisionRunner,
        frame: &mut Frame,
        crop: &Crop,
    ) -> anyhow::Result<Vec<Vec<f32>>> {
        self.run_with(runner, frame, crop, &[])
    }

    /// [`VisionModel::run`] with the model's other inputs (1, 2, ...) given in `extra`.
    pub fn run_with(
        &mut self,
        runner: &VisionRunner,
        frame: &mut Frame,
        crop: &Crop,
        extra: &[&[f32]],
    ) -> anyhow::Result<Vec<Vec<f32>>> {
        if extra.len() + 1 != self.inputs {
            bail!(
                "{}: the model has {} inputs, the pipeline gives {}",
                self.name,
                self.inputs,
                extra.len() + 1
            );
        }
        match &mut self.engine {
            Engine::Cpu(model) => {
                for (i, x) in extra.iter().enumerate() {
                    model.set_input(i + 1, x)?;
                }
                let x = frame
                    .image
                    .to_tensor(crop, &self.norm, self.input)
                    .with_context(|| format!("preprocessing for {}", self.name))?;
                model.set_input(0, &x)?;
                model.run()?;
                Ok((0..self.output_shapes.len())
                    .map(|i| model.output(i).map(<[f32]>::to_vec))
                    .collect::<Result<_, _>>()?)
            }
            Engine::Gpu(gpu) => {
                let GpuEngine {
                    model,
                    pre,
                    binding,
                } = gpu.as_mut();
                let ctx = runner.gpu().context("no GPU context")?;
                let key = frame.id;
                let view = frame.view(ctx)?;
                if binding.as_ref().is_none_or(|(k, _)| *k != key) {
                    *binding = Some((key, pre.bind(view)?));
                }
                let (_, bind) = binding.as_ref().context("binding")?;
                for (i, x) in extra.iter().enumerate() {
                    model.set_input(i + 1, x)?;
                }
                pre.set_crop(&ctx.queue, crop)?;
                let mut encoder = ctx.device.create_command_encoder(&Default::default());
                pre.encode(&mut encoder, bind);
                ctx.queue.submit([encoder.finish()]);
                let whole = 0..model.num_steps();
                Ok(model.run_ranges_preset(std::slice::from_ref(&whole))?)
            }
        }
    }
}
