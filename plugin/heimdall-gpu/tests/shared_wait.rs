//! A thread that waits for the GPU (a compilation's profiling, the f16 guard's runs) must not
//! stall the submissions of a renderer that shares the device. wgpu's blocking poll holds the
//! device's fence lock while it waits and `Queue::submit` needs it for writing, so on a shared
//! device [`GpuContext::wait_idle`] polls without blocking. A long compute job keeps the GPU busy
//! while one thread waits for it and another submits; the control runs the same with the
//! blocking wait of an own device, and shows the stall this test is about.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use heimdall_gpu::GpuContext;
use wgpu::util::DeviceExt;

/// `64 n` invocations each iterating a non-linear hash 4096 times (a hash with no closed form,
/// so no compiler folds the loop).
const BUSY: &str = r"
@group(0) @binding(0) var<storage, read_write> data: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    var x = id.x + data[1];
    for (var i = 0u; i < 4096u; i++) {
        x = (x ^ (x >> 15u)) * 0x2c1b3c6du + i;
        x = x ^ (x << 7u) ^ (x >> 11u);
    }
    data[2u + id.x] = x;
}
";

/// The most work groups one dispatch has (WebGPU's limit per dimension); a longer job
/// dispatches several times.
const MAX_GROUPS: u32 = 65535;
/// The most work groups a job has (a fast GPU needs many dispatches for 300 ms).
const MAX_JOB: u32 = 1 << 28;

struct Busy {
    pipeline: wgpu::ComputePipeline,
    bind: wgpu::BindGroup,
}

impl Busy {
    fn new(ctx: &GpuContext) -> Self {
        let module = ctx
            .device
            .create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some("busy"),
                source: wgpu::ShaderSource::Wgsl(BUSY.into()),
            });
        let pipeline = ctx
            .device
            .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some("busy"),
                layout: None,
                module: &module,
                entry_point: Some("main"),
                compilation_options: Default::default(),
                cache: None,
            });
        let data = ctx
            .device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("busy"),
                contents: bytemuck::cast_slice(&vec![1u32; 2 + 64 * MAX_GROUPS as usize]),
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
            });
        let bind = ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("busy"),
            layout: &pipeline.get_bind_group_layout(0),
            entries: &[wgpu::BindGroupEntry {
                binding: 0,
                resource: data.as_entire_binding(),
            }],
        });
        Busy { pipeline, bind }
    }

    /// Submits one job of `n` work groups.
    fn submit(&self, ctx: &GpuContext, n: u32) {
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        {
            let mut pass = encoder.begin_compute_pass(&Default::default());
            pass.set_pipeline(&self.pipeline);
            pass.set_bind_group(0, &self.bind, &[]);
            let mut left = n;
            while left > 0 {
                let groups = left.min(MAX_GROUPS);
                pass.dispatch_workgroups(groups, 1, 1);
                left -= groups;
            }
        }
        ctx.queue.submit([encoder.finish()]);
    }

    /// A job taking 300 ms or more (up to a few seconds), and its time alone.
    fn calibrate(&self, ctx: &GpuContext) -> (u32, Duration) {
        let mut n = 16u32;
        loop {
            let start = Instant::now();
            self.submit(ctx, n);
            ctx.wait_idle().expect("the GPU finishes");
            let took = start.elapsed();
            if took >= Duration::from_millis(300) || n >= MAX_JOB {
                return (n, took);
            }
            let factor = (0.35 / took.as_secs_f64().max(1e-3)).clamp(2.0, 16.0);
            n = (f64::from(n) * factor).min(f64::from(MAX_JOB)) as u32;
        }
    }
}

/// How long a small submission takes while the GPU runs a job of `n` groups and, with
/// `waiter`, another thread waits for that job on `waiter`.
fn submit_during_job(
    ctx: &GpuContext,
    busy: &Busy,
    n: u32,
    job: Duration,
    waiter: Option<&GpuContext>,
) -> Duration {
    let other = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("other"),
        size: 16,
        usage: wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    busy.submit(ctx, n);
    let waiting = Arc::new(AtomicBool::new(false));
    let thread = waiter.map(|w| {
        let (flag, w) = (waiting.clone(), w.clone());
        std::thread::spawn(move || {
            flag.store(true, Ordering::Release);
            w.wait_idle().expect("the GPU finishes");
        })
    });
    while thread.is_some() && !waiting.load(Ordering::Acquire) {
        std::thread::yield_now();
    }
    // Let the waiter get into its poll.
    std::thread::sleep(job / 10);
    let start = Instant::now();
    let mut encoder = ctx.device.create_command_encoder(&Default::default());
    encoder.clear_buffer(&other, 0, Some(4));
    ctx.queue.submit([encoder.finish()]);
    let took = start.elapsed();
    match thread {
        Some(t) => t.join().expect("the waiter returns"),
        None => ctx.wait_idle().expect("the GPU finishes"),
    }
    took
}

#[test]
fn a_wait_on_a_shared_device_does_not_stall_other_submissions() {
    let Some(gpu) = common::gpu() else {
        return;
    };
    let own = gpu.ctx.clone().with_shared_device(false);
    let shared = gpu.ctx.clone().with_shared_device(true);
    let busy = Busy::new(&own);
    let (n, job) = busy.calibrate(&own);
    let alone = submit_during_job(&own, &busy, n, job, None);
    let blocked = submit_during_job(&own, &busy, n, job, Some(&own));
    let free = submit_during_job(&own, &busy, n, job, Some(&shared));
    gpu.assert_no_errors();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    eprintln!(
        "{}: job {:.0} ms; a submission during it {:.2} ms with no waiter, {:.2} ms during a \
         blocking wait, {:.2} ms during a shared-device wait",
        gpu.ctx.info.name,
        ms(job),
        ms(alone),
        ms(blocked),
        ms(free)
    );
    if alone > job / 2 {
        // Lavapipe (Mesa 22.3) runs a submission only once the queue is idle: every
        // submission waits for the job, there is no stall of ours to tell apart.
        heimdall_testkit::skip(
            "shared_wait::a_wait_on_a_shared_device_does_not_stall_other_submissions",
            &format!(
                "{} serialises submissions (a submission waits for the job): nothing to compare",
                gpu.ctx.info.name
            ),
        );
        return;
    }
    // The control: wgpu's blocking wait holds the submission until the job ends (about 0.9 of
    // the job is left when the submission starts). Without it this test would show nothing.
    assert!(
        blocked > job / 2,
        "the control did not stall ({blocked:?} of a {job:?} job): the test no longer shows \
         what it guards against"
    );
    assert!(
        free < job / 10,
        "a submission waited {free:?} behind another thread's wait (job {job:?})"
    );
}
