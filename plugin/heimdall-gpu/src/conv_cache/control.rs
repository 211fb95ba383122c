//! [`ConvCacheControl`]: what a caller sees of a compiled model's convolution cache
//! ([`GpuModel::conv_cache`](crate::GpuModel::conv_cache)): its settings, the automatic switch,
//! the calibration, its dispatches. The cache's buffers and recording stay inside the crate.

use heimdall_ir::conv_cache::ConvCacheConfig;

use super::{AutoPolicy, CacheCalibration, CachedDispatch, ConvCache};

/// A compiled model's convolution cache, as [`GpuModel::conv_cache`](crate::GpuModel::conv_cache)
/// returns it (the model has one: it was compiled with the cache and some op is cached).
/// Switching it on and off and invalidating it stay on the model
/// ([`GpuModel::set_conv_cache_active`](crate::GpuModel::set_conv_cache_active),
/// [`GpuModel::invalidate_conv_cache`](crate::GpuModel::invalidate_conv_cache)).
#[derive(Clone, Copy)]
pub struct ConvCacheControl<'a> {
    pub(crate) cache: &'a ConvCache,
}

impl std::fmt::Debug for ConvCacheControl<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConvCacheControl")
            .field("config", self.cache.config())
            .field("active", &self.cache.is_active())
            .finish()
    }
}

impl<'a> ConvCacheControl<'a> {
    /// The cache's settings.
    pub fn config(self) -> &'a ConvCacheConfig {
        self.cache.config()
    }

    /// What the last [`GpuModel::calibrate_conv_cache`](crate::GpuModel::calibrate_conv_cache)
    /// measured, if it ran.
    pub fn calibration(self) -> Option<CacheCalibration> {
        self.cache.calibration()
    }

    /// Lets the cache switch itself off when the scene moves too much for it to pay, and on
    /// again at the next probe (`policy` from a calibration); `None`: only
    /// [`GpuModel::set_conv_cache_active`](crate::GpuModel::set_conv_cache_active) switches it.
    pub fn set_auto(self, policy: Option<AutoPolicy>) {
        self.cache.set_auto(policy);
    }

    /// The automatic switch's averaged hit rate (`None` without one or before a sample).
    pub fn expected_hit(self) -> Option<f64> {
        self.cache.expected_hit()
    }

    /// A fixed clock (milliseconds) for the cache's expiry, for tests; `None`: the wall clock.
    pub fn set_now_ms(self, now_ms: Option<u32>) {
        self.cache.set_now_ms(now_ms);
    }

    /// The cached dispatches, in step order, for tests and tools ([`super::dirty_workgroups`]).
    pub fn dispatches(self) -> &'a [CachedDispatch] {
        &self.cache.dispatches
    }
}
