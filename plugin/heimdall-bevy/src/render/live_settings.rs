//! Settings edited while the app runs: the render world copies [`HeimdallSettings`] whenever
//! the main world's changed (at extract), and the coordinator takes the new policy, mode,
//! margins and placement at the next frame, once it is back from the CPU lane
//! (`render/cpu_lane.rs`). The frame rate, the work order and the other settings read every
//! frame follow the copy by themselves; the start-up-only ones
//! ([`HeimdallSettings::STARTUP_ONLY`]) keep their values, with a warning.

use bevy::prelude::*;
use bevy::render::Extract;
use heimdall_coordinator::{
    Coordinator, CoordinatorConfig, PlacementRule, Reconfiguration, SchedulingPolicy,
};

use super::backend::InferenceBackend;
use super::schedule::Scheduler;
use crate::settings::{CoordinationMode, HeimdallSettings};

/// What the coordinator was last given of the settings (render world).
#[derive(Resource, Clone, Debug)]
pub(crate) struct AppliedSettings {
    policy: SchedulingPolicy,
    mode: CoordinationMode,
}

impl AppliedSettings {
    pub fn of(settings: &HeimdallSettings) -> Self {
        AppliedSettings {
            policy: settings.policy.clone(),
            mode: settings.mode,
        }
    }
}

/// Extract: copies the main world's settings when they changed, keeping the start-up-only
/// fields (a change to one of them is logged once per new value).
pub(crate) fn extract_settings(
    main: Extract<Res<HeimdallSettings>>,
    mut render: ResMut<HeimdallSettings>,
    mut warned: Local<Option<HeimdallSettings>>,
) {
    if !main.is_changed() {
        return;
    }
    let ignored = main.startup_only_changes(&render);
    let new_warning = warned
        .as_ref()
        .is_none_or(|w| !w.startup_only_changes(&main).is_empty());
    if !ignored.is_empty() && new_warning {
        warn!(
            "heimdall: {} cannot change after start-up; the plugin keeps the values it started \
             with (see HeimdallSettings::STARTUP_ONLY)",
            ignored.join(", ")
        );
        *warned = Some(HeimdallSettings::clone(&main));
    }
    let next = HeimdallSettings::clone(&main).keeping_startup_fields_of(&render);
    *render = next;
}

/// `Render`, once the coordinator is back from the CPU lane: gives it the policy, the margins and
/// the placement of the current settings where they changed.
pub(crate) fn apply_settings(
    settings: Res<HeimdallSettings>,
    mut applied: ResMut<AppliedSettings>,
    mut sched: ResMut<Scheduler>,
    backend: Option<Res<InferenceBackend>>,
) {
    if !settings.is_changed() {
        return;
    }
    let policy_changed = settings.mode != applied.mode || !settings.policy.same_as(&applied.policy);
    let gpu = backend.is_some_and(|b| b.gpu().is_some());
    sched.coordinator.reconfigure(Reconfiguration {
        policy: policy_changed.then(|| settings.coordinator_policy().build()),
        margin_ms: settings.margin_ms,
        relaxation_ms: settings.relaxation_ms,
        placement: settings.offload && gpu,
        rule: settings.placement_rule,
    });
    if policy_changed {
        info!(
            "heimdall: the coordinator now runs {}",
            settings.policy_name()
        );
    }
    *applied = AppliedSettings::of(&settings);
}

/// `f` on the running coordinator (lent to the CPU lane between frames, else the render
/// world's).
fn with_coordinator<R>(render_world: &World, f: impl FnOnce(&Coordinator) -> R) -> Option<R> {
    let sched = render_world.get_resource::<Scheduler>()?;
    Some(sched.lane.with_running(&sched.coordinator, f))
}

/// The coordinator's configuration as it runs now (frame budget, margins, placement, CPU
/// slots), read from the render world; `None` before the plugin's backend exists. For
/// diagnostics and tests.
pub fn coordinator_config(render_world: &World) -> Option<CoordinatorConfig> {
    with_coordinator(render_world, |c| *c.config())
}

/// The name of the policy the coordinator runs now, read from the render world; `None` before
/// the plugin's backend exists.
pub fn coordinator_policy(render_world: &World) -> Option<String> {
    with_coordinator(render_world, Coordinator::policy_name)
}

/// Whether placement between the GPU and the CPU is on in the running coordinator, and its rule.
pub fn coordinator_placement(render_world: &World) -> Option<(bool, PlacementRule)> {
    let cfg = coordinator_config(render_world)?;
    Some((cfg.placement.enabled, cfg.placement.rule))
}
