//! [`SchedulingPolicy`]: a policy as a value an app's settings can hold, clone and compare
//! (the built-in policies and an app's own [`Policy`] alike).

use std::fmt;
use std::sync::Arc;

use super::baselines::{Fifo, LayersPerFrame};
use super::by_name::{UnknownPolicy, policy_by_name};
use super::interface::Policy;
use super::lst::LeastSlackTime;
use super::utility_policies::{MaxMinUtility, MaxTotalUtility};

/// A scheduling policy as a setting: it makes a fresh [`Policy`] for every coordinator that
/// uses it (a policy may keep state in [`Policy::on_dispatch`], so coordinators do not share
/// one instance).
///
/// The built-in policies are values of it ([`SchedulingPolicy::max_total_utility`], the
/// default, [`SchedulingPolicy::max_min_utility`], [`SchedulingPolicy::least_slack_time`] and
/// the baselines [`SchedulingPolicy::fifo`] and [`SchedulingPolicy::layers_per_frame`]); an
/// app brings its own with [`SchedulingPolicy::new`] (a `Clone` policy) or
/// [`SchedulingPolicy::from_fn`]; a command line picks one with [`SchedulingPolicy::by_name`].
///
/// ```
/// use heimdall_coordinator::policy::{JobView, Policy, PolicyContext, SchedulingPolicy};
///
/// /// The job admitted first goes first.
/// #[derive(Clone)]
/// struct OldestFirst;
///
/// impl Policy for OldestFirst {
///     fn name(&self) -> String {
///         "oldest_first".into()
///     }
///     fn score(&self, _ctx: &PolicyContext, job: &JobView<'_>) -> f64 {
///         -(job.seq as f64)
///     }
/// }
///
/// let policy = SchedulingPolicy::new(OldestFirst);
/// assert_eq!(policy.name(), "oldest_first");
/// assert_eq!(policy.build().name(), "oldest_first");
/// assert_eq!(SchedulingPolicy::default().name(), "max_total_utility");
/// ```
#[derive(Clone)]
pub struct SchedulingPolicy {
    name: Arc<str>,
    make: Arc<dyn Fn() -> Box<dyn Policy> + Send + Sync>,
}

impl SchedulingPolicy {
    /// `policy`, cloned for every coordinator that uses it.
    pub fn new<P: Policy + Clone + 'static>(policy: P) -> Self {
        let name = policy.name();
        Self::with_name(name, move || Box::new(policy.clone()))
    }

    /// The policy `make` builds, once per coordinator that uses it (named by the first one it
    /// builds).
    pub fn from_fn(make: impl Fn() -> Box<dyn Policy> + Send + Sync + 'static) -> Self {
        let name = make().name();
        Self::with_name(name, make)
    }

    fn with_name(name: String, make: impl Fn() -> Box<dyn Policy> + Send + Sync + 'static) -> Self {
        SchedulingPolicy {
            name: name.into(),
            make: Arc::new(make),
        }
    }

    /// The policy called `name`, as [`policy_by_name`] knows them: `max_min_utility`,
    /// `max_total_utility`, `least_slack_time`, `fifo` or `layers:K` with `K >= 1`.
    pub fn by_name(name: &str) -> Result<Self, UnknownPolicy> {
        let first = policy_by_name(name)?;
        let owned = name.to_string();
        Ok(Self::with_name(first.name(), move || {
            policy_by_name(&owned).expect("parsed once already")
        }))
    }

    /// Heimdall's default: the most total utility ([`MaxTotalUtility`]).
    pub fn max_total_utility() -> Self {
        Self::new(MaxTotalUtility)
    }

    /// The best worst-off DNN ([`MaxMinUtility`]).
    pub fn max_min_utility() -> Self {
        Self::new(MaxMinUtility)
    }

    /// Least slack time first ([`LeastSlackTime`]).
    pub fn least_slack_time() -> Self {
        Self::new(LeastSlackTime)
    }

    /// The uncoordinated baseline: whole runs in request order ([`Fifo`]).
    pub fn fifo() -> Self {
        Self::new(Fifo)
    }

    /// The naive pseudo-preemption baseline: `k` layers of each model per frame
    /// ([`LayersPerFrame`]; `k` at least 1).
    pub fn layers_per_frame(k: usize) -> Self {
        Self::new(LayersPerFrame::new(k.max(1)))
    }

    /// The policy's name ([`Policy::name`]).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A fresh instance of the policy, for a coordinator.
    pub fn build(&self) -> Box<dyn Policy> {
        (self.make)()
    }

    /// Whether `other` is this very value or a clone of it (not merely a policy of the same
    /// name: an app's policy may take parameters its name does not show).
    pub fn same_as(&self, other: &SchedulingPolicy) -> bool {
        Arc::ptr_eq(&self.make, &other.make)
    }
}

impl Default for SchedulingPolicy {
    fn default() -> Self {
        Self::max_total_utility()
    }
}

impl fmt::Debug for SchedulingPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("SchedulingPolicy").field(&self.name).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_ins_by_name_and_as_values_agree() {
        for name in [
            "max_total_utility",
            "max_min_utility",
            "least_slack_time",
            "fifo",
            "layers:3",
        ] {
            let p = SchedulingPolicy::by_name(name).unwrap();
            assert_eq!(p.name(), name);
            assert_eq!(p.build().name(), name);
        }
        assert_eq!(SchedulingPolicy::layers_per_frame(3).name(), "layers:3");
        assert_eq!(
            SchedulingPolicy::least_slack_time().name(),
            "least_slack_time"
        );
        assert!(SchedulingPolicy::by_name("nope").is_err());
    }

    #[test]
    fn clones_are_the_same_value_and_new_values_are_not() {
        let a = SchedulingPolicy::max_total_utility();
        assert!(a.same_as(&a.clone()));
        assert!(!a.same_as(&SchedulingPolicy::max_total_utility()));
        assert_eq!(format!("{a:?}"), "SchedulingPolicy(\"max_total_utility\")");
    }
}
