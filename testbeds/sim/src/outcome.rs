//! A simulator run in the outcome model every kind of run shares (crate `report`), so
//! that it can be compared with a veth run flow by flow (`report::compare`).

use report::outcome::{FabricCounts, FlowOutcome, RunOutcome};

use crate::SimResults;

impl SimResults {
    /// This run as a [`RunOutcome`] named `sim` (times in virtual µs).
    pub fn outcome(&self) -> RunOutcome {
        RunOutcome {
            source: "sim".into(),
            duration_us: self.run.end_us,
            flows: self
                .flows
                .iter()
                .map(|f| FlowOutcome {
                    id: f.id,
                    src: f.src,
                    dst: f.dst,
                    size: f.size,
                    priority: f.priority,
                    start_us: f.start_us.unwrap_or(self.run.end_us),
                    fct_us: f.fct_us,
                    ideal_us: f.ideal_us,
                    delivered: f.acked,
                })
                .collect(),
            counts: FabricCounts {
                drops: self.totals.drops,
                pauses: self.totals.pauses_sent,
                ecn_marks: self.totals.ecn_marks,
                cnps: self.totals.cnps,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::net::NetBuilder;
    use crate::{Sim, SimConfig};
    use cc_algos::{Duration, Rate};
    use scenario::{CompileCtx, Scenario};

    #[test]
    fn an_incast_in_the_shared_outcome_model() {
        let s = Scenario::from_toml_str(
            "[[workload]]\nkind = \"incast\"\nsenders = \"1..5\"\nreceiver = 0\nsize = \"200KB\"\n",
            "t.toml",
        )
        .unwrap();
        let plan = s.compile(&CompileCtx::new(5, Rate::gbps(100), 1)).unwrap();
        let net = NetBuilder::star(5, Rate::gbps(100), Duration::nanos(500));
        let r = Sim::from_net(net, SimConfig::default(), &plan)
            .unwrap()
            .run();
        let o = r.outcome();
        assert_eq!(o.flows.len(), 4);
        assert_eq!(o.fct().finished, 4);
        assert_eq!(o.fct().max_us, r.fct.max_us);
        assert!(o.flows.iter().all(|f| f.delivered == 200_000));
        // Four 200 KB flows through one 100 Gb/s port: the last needs ≥ 64 µs.
        assert!(o.fct().max_us >= 64.0, "{:?}", o.fct());
        assert!(o.slowdown().max >= 1.0);
    }
}
