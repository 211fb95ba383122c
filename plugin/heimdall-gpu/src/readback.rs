//! Outputs back to the host: staging buffers filled by a copy in the caller's encoder, mapped
//! with `map_async`, and a non-blocking "is it ready / take it" API. Nothing here waits; only
//! [`crate::GpuModel::run`] (for tests and the CLI) polls the device until the map completes.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::error::GpuError;
use crate::layout::Phwc4;
use crate::precision::Precision;

/// Where a graph input or output lives.
#[derive(Clone, Debug)]
pub(crate) struct IoTensor {
    /// Slot buffer index.
    pub slot: usize,
    /// Byte offset of the tensor in its slot: 0 but for the input of a free concatenation,
    /// stored in its part of the output's slot ([`crate::memory::MemoryPlan::view_of`]).
    pub offset: u64,
    /// PHWC4 geometry.
    pub geom: Phwc4,
    /// Storage precision.
    pub precision: Precision,
    /// NHWC shape.
    pub shape: Vec<usize>,
}

impl IoTensor {
    /// Bytes the tensor occupies in its slot.
    pub fn bytes(&self) -> u64 {
        (self.geom.stored_values() * self.precision.bytes_per_value()) as u64
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Idle,
    Copied,
    Mapping,
}

/// Staging buffers and the state of one readback at a time.
pub(crate) struct Readback {
    staging: Vec<wgpu::Buffer>,
    /// Per output: whether it arrives dense (NHWC `f32`, no padding: copied from a dense
    /// buffer, [`crate::io_pack`]) rather than as its slot's PHWC4 storage.
    dense: Vec<bool>,
    /// A staging buffer for extra `u32`s read back with the outputs (the conv cache's counters),
    /// and the last values taken.
    extra: Option<(wgpu::Buffer, u64)>,
    extra_values: Mutex<Option<Vec<u32>>>,
    state: Mutex<State>,
    mapped: Arc<AtomicUsize>,
    failed: Arc<AtomicBool>,
}

impl Readback {
    /// Staging buffers for `outputs` (those marked in `dense` in their dense form), and for
    /// `extra` bytes of `u32`s.
    pub fn new(
        device: &wgpu::Device,
        outputs: &[IoTensor],
        dense: &[bool],
        extra: Option<u64>,
    ) -> Self {
        let dense: Vec<bool> = (0..outputs.len())
            .map(|i| dense.get(i).copied().unwrap_or(false))
            .collect();
        let staging = outputs
            .iter()
            .zip(&dense)
            .enumerate()
            .map(|(i, (o, &d))| {
                device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some(&format!("heimdall output {i} staging")),
                    size: if d {
                        (o.geom.values() * 4) as u64
                    } else {
                        o.bytes()
                    },
                    usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                })
            })
            .collect();
        let extra = extra.map(|bytes| {
            let b = device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("heimdall readback extra"),
                size: bytes,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            (b, bytes)
        });
        Readback {
            staging,
            dense,
            extra,
            extra_values: Mutex::new(None),
            state: Mutex::new(State::Idle),
            mapped: Arc::new(AtomicUsize::new(0)),
            failed: Arc::new(AtomicBool::new(false)),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records copies of the outputs (from `sources`, one buffer and byte offset per output:
    /// its dense buffer, or its slot and its offset there) into the staging buffers.
    pub fn encode(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        sources: &[(&wgpu::Buffer, u64)],
        extra: Option<&wgpu::Buffer>,
    ) -> Result<(), GpuError> {
        let mut state = self.state();
        if *state != State::Idle {
            return Err(GpuError::Readback(format!(
                "a readback is already {:?}: take its outputs first",
                *state
            )));
        }
        for ((src, offset), staging) in sources.iter().zip(&self.staging) {
            encoder.copy_buffer_to_buffer(src, *offset, staging, 0, staging.size());
        }
        if let (Some(src), Some((dst, bytes))) = (extra, &self.extra) {
            encoder.copy_buffer_to_buffer(src, 0, dst, 0, *bytes);
        }
        *state = State::Copied;
        Ok(())
    }

    /// Starts mapping the staging buffers (call after submitting the copies).
    pub fn request(&self) -> Result<(), GpuError> {
        let mut state = self.state();
        if *state != State::Copied {
            return Err(GpuError::Readback(format!(
                "request_readback in state {:?}: encode_readback and submit first",
                *state
            )));
        }
        self.mapped.store(0, Ordering::SeqCst);
        self.failed.store(false, Ordering::SeqCst);
        for b in self.staging.iter().chain(self.extra.as_ref().map(|e| &e.0)) {
            let (mapped, failed) = (self.mapped.clone(), self.failed.clone());
            b.map_async(wgpu::MapMode::Read, .., move |r| {
                if r.is_err() {
                    failed.store(true, Ordering::SeqCst);
                }
                mapped.fetch_add(1, Ordering::SeqCst);
            });
        }
        *state = State::Mapping;
        Ok(())
    }

    /// Whether every staging buffer is mapped (the device must be polled by someone: Bevy does
    /// every frame).
    pub fn is_ready(&self) -> bool {
        *self.state() == State::Mapping
            && self.mapped.load(Ordering::SeqCst)
                == self.staging.len() + usize::from(self.extra.is_some())
    }

    /// The outputs (NHWC f32) if ready, unmapping the staging buffers; `None` if not yet.
    pub fn take(&self, outputs: &[IoTensor]) -> Result<Option<Vec<Vec<f32>>>, GpuError> {
        if !self.is_ready() {
            return Ok(None);
        }
        let mut state = self.state();
        *state = State::Idle;
        let extra = self.extra.as_ref().map(|e| &e.0);
        if self.failed.load(Ordering::SeqCst) {
            for b in self.staging.iter().chain(extra) {
                b.unmap();
            }
            return Err(GpuError::Readback("mapping a staging buffer failed".into()));
        }
        let mut result = Vec::with_capacity(outputs.len());
        for ((o, b), &dense) in outputs.iter().zip(&self.staging).zip(&self.dense) {
            let view = b.get_mapped_range(..);
            let values = if dense {
                match bytemuck::try_cast_slice::<u8, f32>(&view) {
                    Ok(v) => v.to_vec(),
                    Err(_) => Precision::F32.decode(&view),
                }
            } else {
                o.precision.decode_unpacked(&o.geom, &view)
            };
            drop(view);
            b.unmap();
            result.push(values);
        }
        if let Some(b) = extra {
            let values: Vec<u32> = bytemuck::cast_slice(&b.get_mapped_range(..)).to_vec();
            b.unmap();
            *self.extra_values.lock().unwrap_or_else(|e| e.into_inner()) = Some(values);
        }
        Ok(Some(result))
    }

    /// The extra values of the last readback taken, if any.
    pub fn extra_values(&self) -> Option<Vec<u32>> {
        self.extra_values
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}
