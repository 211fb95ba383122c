//! Settings an app changes while the coordinator runs: the policy, the frame budget's margins
//! and the placement of DNNs between the GPU and the CPU.

use super::Coordinator;
use crate::placement::PlacementRule;
use crate::policy::Policy;

impl Coordinator {
    /// Replaces the policy; the next decision ranks jobs with it. Work already dispatched
    /// goes on as it was cut.
    pub fn set_policy(&mut self, policy: Box<dyn Policy>) {
        self.policy = policy;
        self.replan_soon();
    }

    /// Changes the frame budget's safety margin and the last chunk's relaxation (ms; negative
    /// or non-finite values are ignored) and re-partitions every model for the new budget.
    pub fn set_margins(&mut self, margin_ms: f64, relaxation_ms: f64) {
        let ok = |v: f64| v.is_finite() && v >= 0.0;
        let b = &mut self.cfg.budget;
        if !(ok(margin_ms) && ok(relaxation_ms))
            || (b.margin_ms == margin_ms && b.relaxation_ms == relaxation_ms)
        {
            return;
        }
        b.margin_ms = margin_ms;
        b.relaxation_ms = relaxation_ms;
        let b = self.cfg.budget;
        for m in &mut self.models {
            m.analysis.maybe_repartition(&b, 0.0, true);
        }
        self.replan_soon();
    }

    /// Turns moving DNNs between the GPU and the CPU on or off and picks the rule that moves
    /// them; the plan is made again at the next decision.
    pub fn set_placement(&mut self, enabled: bool, rule: PlacementRule) {
        let p = &mut self.cfg.placement;
        if p.enabled == enabled && p.rule == rule {
            return;
        }
        p.enabled = enabled;
        p.rule = rule;
        self.replan_soon();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyzer::FrameBudget;
    use crate::coordinator::CoordinatorConfig;
    use crate::policy::{LeastSlackTime, MaxTotalUtility};

    #[test]
    fn policy_margins_and_placement_change_in_place() {
        let budget = FrameBudget::new(60.0, 0.0, 1.0, 0.5);
        let mut c = Coordinator::new(CoordinatorConfig::new(budget), Box::new(MaxTotalUtility));
        c.set_policy(Box::new(LeastSlackTime));
        assert_eq!(c.policy_name(), "least_slack_time");
        c.set_margins(2.0, 0.25);
        assert_eq!(c.config().budget.margin_ms, 2.0);
        assert_eq!(c.config().budget.relaxation_ms, 0.25);
        c.set_margins(-1.0, f64::NAN);
        assert_eq!(c.config().budget.margin_ms, 2.0, "bad values are ignored");
        let rule = c.config().placement.rule;
        c.set_placement(false, rule);
        assert!(!c.config().placement.enabled);
    }
}
