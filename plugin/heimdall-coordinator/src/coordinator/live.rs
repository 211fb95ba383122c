//! Settings an app changes while the coordinator runs: the policy, the frame budget's margins
//! and the placement of DNNs between the GPU and the CPU.

use super::Coordinator;
use super::types::Reconfiguration;

impl Coordinator {
    /// Applies `change`: a new policy, new margins (every model is partitioned again for the
    /// new budget) and the placement's switch and rule; the plan is made again at the next
    /// decision where anything changed.
    pub fn reconfigure(&mut self, change: Reconfiguration) {
        let mut changed = false;
        if let Some(policy) = change.policy {
            self.policy = policy;
            changed = true;
        }
        changed |= self.set_margins(change.margin_ms, change.relaxation_ms);
        let p = &mut self.cfg.placement;
        if p.enabled != change.placement || p.rule != change.rule {
            p.enabled = change.placement;
            p.rule = change.rule;
            changed = true;
        }
        if changed {
            self.replan_soon();
        }
    }

    /// New margins (ms); whether they differ from the running ones and were applied.
    fn set_margins(&mut self, margin_ms: f64, relaxation_ms: f64) -> bool {
        let ok = |v: f64| v.is_finite() && v >= 0.0;
        let b = &mut self.cfg.budget;
        if !(ok(margin_ms) && ok(relaxation_ms))
            || (b.margin_ms == margin_ms && b.relaxation_ms == relaxation_ms)
        {
            return false;
        }
        b.margin_ms = margin_ms;
        b.relaxation_ms = relaxation_ms;
        let b = self.cfg.budget;
        for m in &mut self.models {
            m.analysis.maybe_repartition(&b, 0.0, true);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyzer::FrameBudget;
    use crate::coordinator::CoordinatorConfig;
    use crate::policy::Policy;
    use crate::policy::{LeastSlackTime, MaxTotalUtility};

    #[test]
    fn policy_margins_and_placement_change_in_place() {
        let budget = FrameBudget::new(60.0, 0.0, 1.0, 0.5);
        let mut c = Coordinator::new(CoordinatorConfig::new(budget), Box::new(MaxTotalUtility));
        let rule = c.config().placement.rule;
        let change = |policy: Option<Box<dyn Policy>>, margin_ms, relaxation_ms, placement| {
            Reconfiguration {
                policy,
                margin_ms,
                relaxation_ms,
                placement,
                rule,
            }
        };
        c.reconfigure(change(Some(Box::new(LeastSlackTime)), 2.0, 0.25, true));
        assert_eq!(c.policy_name(), "least_slack_time");
        assert_eq!(c.config().budget.margin_ms, 2.0);
        assert_eq!(c.config().budget.relaxation_ms, 0.25);
        assert!(c.config().placement.enabled);
        c.reconfigure(change(None, -1.0, f64::NAN, false));
        assert_eq!(c.config().budget.margin_ms, 2.0, "bad values are ignored");
        assert_eq!(c.policy_name(), "least_slack_time", "no policy: kept");
        assert!(!c.config().placement.enabled);
    }
}
