//! The wgpu resources of a compiled model: what every memory plan shares (constant buffers, the
//! uniform buffer, pipelines deduplicated by composed source and created through the pipeline
//! cache), and per plan its activation slots and bind groups.

use std::collections::HashMap;

use heimdall_ir::Graph;
use wgpu::util::DeviceExt;

use crate::context::GpuContext;
use crate::conv_cache::{ConvCache, tile_list_wrapper};
use crate::dispatch::{ConstBuffer, Dispatch, Operand};
use crate::error::GpuError;
use crate::memory::MemoryPlan;
use crate::options::PipelineCacheState;

/// One dispatch ready to record: its pipeline, bind group and 2-D grid.
pub(crate) struct EncodedDispatch {
    pub pipeline: usize,
    pub bind_group: wgpu::BindGroup,
    pub groups: [u32; 2],
    /// A conv-cache dispatch's other form, running a list of work groups.
    pub listed: Option<Listed>,
}

/// A conv-cache dispatch: the wrapped kernel ([`tile_list_wrapper`]) and its bind groups (0: as
/// the plain one's, 1: its work group list).
pub(crate) struct Listed {
    pub pipeline: usize,
    pub bind_group: wgpu::BindGroup,
    pub list: wgpu::BindGroup,
    /// Where its indirect arguments are in the cache's `args` buffer.
    pub args_offset: u64,
}

/// What every memory plan of a model shares: constants, parameters and pipelines.
pub(crate) struct Shared {
    /// One buffer per constant.
    pub consts: Vec<wgpu::Buffer>,
    /// Every dispatch's uniform parameters.
    pub uniforms: wgpu::Buffer,
    /// The distinct pipelines.
    pub pipelines: Vec<wgpu::ComputePipeline>,
    /// Per step, per dispatch: its pipelines and where its parameters are.
    kernels: Vec<Vec<Kernel>>,
}

/// One dispatch's pipelines and parameters.
struct Kernel {
    /// The plain kernel.
    pipeline: usize,
    /// The kernel wrapped to run a list of work groups (conv-cache dispatches).
    wrapped: Option<usize>,
    /// Offset of its parameters in the uniform buffer.
    offset: u64,
}

/// Creates what every memory plan shares: a buffer per constant, one uniform buffer of every
/// dispatch's parameters and a pipeline per distinct composed source (validated by naga first),
/// with the wrapped twin of every dispatch the convolution cache lists.
pub(crate) fn create_shared(
    ctx: &GpuContext,
    pipeline_cache: Option<&wgpu::PipelineCache>,
    consts: &[ConstBuffer],
    dispatches: &[Vec<Dispatch>],
    conv_cache: Option<&ConvCache>,
) -> Result<Shared, GpuError> {
    let device = &ctx.device;
    let const_buffers = const_buffers(ctx, consts)?;
    let space = ctx.params_space();
    let (uniforms, offsets) = uniform_buffer(ctx, dispatches);
    let mut cache: HashMap<String, usize> = HashMap::new();
    let mut pipelines: Vec<wgpu::ComputePipeline> = Vec::new();
    let mut kernels = Vec::with_capacity(dispatches.len());
    let mut offsets = offsets.into_iter();
    for (index, ds) in dispatches.iter().enumerate() {
        let listed = conv_cache.is_some_and(|c| c.lists.iter().any(|(step, _)| *step == index));
        let mut step = Vec::with_capacity(ds.len());
        for d in ds {
            let source = d.source.compose(space)?;
            let mut pipeline_for = |source: String| -> Result<usize, GpuError> {
                if let Some(&p) = cache.get(&source) {
                    return Ok(p);
                }
                crate::wgsl::validate(d.source.name, &source, d.source.uses_f16())?;
                let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
                    label: Some(d.source.name),
                    source: wgpu::ShaderSource::Wgsl(source.as_str().into()),
                });
                pipelines.push(
                    device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                        label: Some(d.source.name),
                        layout: None,
                        module: &module,
                        entry_point: Some("main"),
                        compilation_options: wgpu::PipelineCompilationOptions {
                            zero_initialize_workgroup_memory: d.source.zero_init_workgroup,
                            ..Default::default()
                        },
                        cache: pipeline_cache,
                    }),
                );
                cache.insert(source, pipelines.len() - 1);
                Ok(pipelines.len() - 1)
            };
            // A cached dispatch also gets the kernel wrapped to run a list of work groups.
            let wrapped = match listed {
                true => Some(pipeline_for(tile_list_wrapper(&source).map_err(
                    |message| GpuError::Shader {
                        name: d.source.name.into(),
                        message,
                    },
                )?)?),
                false => None,
            };
            step.push(Kernel {
                pipeline: pipeline_for(source)?,
                wrapped,
                offset: offsets.next().unwrap_or(0),
            });
        }
        kernels.push(step);
    }
    Ok(Shared {
        consts: const_buffers,
        uniforms,
        pipelines,
        kernels,
    })
}

/// A storage buffer per constant, each within the device's binding limit.
fn const_buffers(ctx: &GpuContext, consts: &[ConstBuffer]) -> Result<Vec<wgpu::Buffer>, GpuError> {
    let device = &ctx.device;
    let max_binding = max_binding(ctx);
    consts
        .iter()
        .map(|c| {
            if c.bytes.len() as u64 > max_binding {
                return Err(GpuError::Unsupported(format!(
                    "{} of {} bytes exceeds the binding limit",
                    c.label,
                    c.bytes.len()
                )));
            }
            Ok(
                device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                    label: Some(&c.label),
                    contents: &c.bytes,
                    usage: wgpu::BufferUsages::STORAGE,
                }),
            )
        })
        .collect()
}

/// Every dispatch's parameters in one uniform buffer, each at an aligned offset (the offsets in
/// dispatch order).
fn uniform_buffer(ctx: &GpuContext, dispatches: &[Vec<Dispatch>]) -> (wgpu::Buffer, Vec<u64>) {
    let device = &ctx.device;
    let space = ctx.params_space();
    let align = space.offset_alignment(&ctx.limits);
    let mut uniform_bytes = Vec::new();
    let mut offsets = Vec::new();
    for d in dispatches.iter().flatten() {
        let at = (uniform_bytes.len() as u64).next_multiple_of(align);
        uniform_bytes.resize(at as usize, 0);
        offsets.push(at);
        uniform_bytes.extend_from_slice(&d.params);
    }
    uniform_bytes.resize(uniform_bytes.len().max(16).next_multiple_of(16), 0);
    let uniforms = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some("heimdall params"),
        contents: &uniform_bytes,
        usage: space.usage(),
    });
    (uniforms, offsets)
}

/// The largest buffer a binding may cover on this device.
fn max_binding(ctx: &GpuContext) -> u64 {
    ctx.limits
        .max_storage_buffer_binding_size
        .min(ctx.limits.max_buffer_size)
}

/// Creates a buffer per activation slot of `mem`, except where `reuse[slot]` names a buffer
/// another plan already made (the model's inputs and outputs, which every plan shares).
pub(crate) fn create_slots(
    ctx: &GpuContext,
    mem: &MemoryPlan,
    reuse: &[Option<wgpu::Buffer>],
    label: &str,
) -> Result<Vec<wgpu::Buffer>, GpuError> {
    let max_binding = max_binding(ctx);
    mem.slot_bytes
        .iter()
        .enumerate()
        .map(|(i, &size)| {
            if let Some(Some(b)) = reuse.get(i) {
                return Ok(b.clone());
            }
            if size > max_binding {
                return Err(GpuError::Unsupported(format!(
                    "activation slot {i} needs {size} bytes, the device binds at most {max_binding}"
                )));
            }
            Ok(ctx.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(&format!("{label} {i}")),
                size,
                usage: wgpu::BufferUsages::STORAGE
                    | wgpu::BufferUsages::COPY_DST
                    | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            }))
        })
        .collect()
}

/// Creates a bind group per dispatch over the slots of one memory plan; with `conv_cache`, the
/// listed dispatches' wrapped forms too.
pub(crate) fn bind(
    ctx: &GpuContext,
    graph: &Graph,
    mem: &MemoryPlan,
    slots: &[wgpu::Buffer],
    shared: &Shared,
    dispatches: &[Vec<Dispatch>],
    conv_cache: Option<&ConvCache>,
) -> Result<Vec<Vec<EncodedDispatch>>, GpuError> {
    let device = &ctx.device;
    let max_groups = ctx.limits.max_compute_workgroups_per_dimension;
    let pipelines = &shared.pipelines;
    let mut steps = Vec::with_capacity(dispatches.len());
    for (index, (ds, ks)) in dispatches.iter().zip(&shared.kernels).enumerate() {
        let mut encoded = Vec::with_capacity(ds.len());
        let list = conv_cache.and_then(|c| {
            c.lists
                .iter()
                .find(|(step, _)| *step == index)
                .map(|(_, l)| (c, *l))
        });
        for (d, k) in ds.iter().zip(ks) {
            let mut entries = vec![wgpu::BindGroupEntry {
                binding: 0,
                resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer: &shared.uniforms,
                    offset: k.offset,
                    size: wgpu::BufferSize::new(d.params.len() as u64),
                }),
            }];
            for (b, operand) in d.operands.iter().enumerate() {
                let resource = match *operand {
                    Operand::Tensor(t) => {
                        let slot = mem.slot_of[t.index()].ok_or_else(|| GpuError::Op {
                            index,
                            name: graph.ops[index].kind.name().into(),
                            message: format!("tensor {} has no slot", t.0),
                        })?;
                        // An alias is bound as its byte range of the slot (a free
                        // concatenation's input: its part of the output).
                        match mem.view_of[t.index()] {
                            Some((offset, size)) => {
                                wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                                    buffer: &slots[slot],
                                    offset,
                                    size: wgpu::BufferSize::new(size),
                                })
                            }
                            None => slots[slot].as_entire_binding(),
                        }
                    }
                    Operand::Const(c) => shared.consts[c].as_entire_binding(),
                };
                entries.push(wgpu::BindGroupEntry {
                    binding: b as u32 + 1,
                    resource,
                });
            }
            // Bind groups of automatic layouts fit only their own pipeline.
            let group = |p: usize| {
                device.create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some(graph.ops[index].kind.name()),
                    layout: &pipelines[p].get_bind_group_layout(0),
                    entries: &entries,
                })
            };
            let listed = match (list, k.wrapped) {
                (Some((c, l)), Some(w)) => Some(Listed {
                    pipeline: w,
                    bind_group: group(w),
                    list: c.list_bind_group(device, &pipelines[w].get_bind_group_layout(1), &l),
                    args_offset: l.args_offset,
                }),
                _ => None,
            };
            encoded.push(EncodedDispatch {
                pipeline: k.pipeline,
                bind_group: group(k.pipeline),
                groups: fold_groups(d.workgroups, max_groups),
                listed,
            });
        }
        steps.push(encoded);
    }
    Ok(steps)
}

/// Splits `groups` work groups into a 2-D grid with no dimension above `max`.
fn fold_groups(groups: u32, max: u32) -> [u32; 2] {
    if groups <= max {
        [groups, 1]
    } else {
        [max, groups.div_ceil(max)]
    }
}

/// A pipeline cache when the device has `PIPELINE_CACHE` and a file is named: seeded from the
/// file when it exists (wgpu checks its header against the adapter, the driver and its own
/// version, and starts empty on a mismatch).
pub(crate) fn open_pipeline_cache(
    ctx: &GpuContext,
    path: Option<&std::path::Path>,
) -> (Option<wgpu::PipelineCache>, PipelineCacheState) {
    let Some(path) = path else {
        return (None, PipelineCacheState::Unused);
    };
    if !ctx.features.contains(wgpu::Features::PIPELINE_CACHE) {
        return (None, PipelineCacheState::Unused);
    }
    let (data, state) = match std::fs::read(path) {
        Ok(d) => {
            let n = d.len();
            (Some(d), PipelineCacheState::Warm(n))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => (None, PipelineCacheState::Cold),
        Err(e) => (
            None,
            PipelineCacheState::Failed(format!("{}: {e}", path.display())),
        ),
    };
    // SAFETY: the data is what `PipelineCache::get_data` wrote (by `write_atomically`, below,
    // into a file only this backend writes); wgpu validates its header (magic, version,
    // adapter key, size) and with `fallback` starts an empty cache when it does not match.
    let cache = unsafe {
        ctx.device
            .create_pipeline_cache(&wgpu::PipelineCacheDescriptor {
                label: Some("heimdall pipeline cache"),
                data: data.as_deref(),
                fallback: true,
            })
    };
    (Some(cache), state)
}

/// Writes `data` to `path` through a temporary file and a rename, so a reader never sees a
/// half-written cache.
pub(crate) fn write_atomically(path: &std::path::Path, data: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, data)?;
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::fold_groups;

    #[test]
    fn big_grids_fold_into_two_dimensions() {
        assert_eq!(fold_groups(10, 65535), [10, 1]);
        let [x, y] = fold_groups(200_000, 65535);
        assert!(x <= 65535 && y <= 65535 && x * y >= 200_000);
    }
}
