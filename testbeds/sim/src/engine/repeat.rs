//! Workloads that keep going, for demos that run for minutes: when every flow of a
//! workload has finished, the workload starts again — at once, or one `period` after
//! its previous start (a periodic incast). Each workload repeats on its own, so a
//! looping all-reduce, a background all-to-all and a periodic incast can share a run.
//!
//! A restarted flow keeps its id and gets a new generation: packets of the previous
//! generation still in the network are forwarded (they hold buffers like any packet)
//! but ignored when they reach a host. Flow results describe the latest generation.

use super::*;

/// State of the repeating workloads.
#[derive(Debug, Default)]
pub(super) struct Repeat {
    /// Time between starts of one workload, ps (0: again as soon as it finishes).
    period: u64,
    /// Per workload: its flows, the earliest original start, the latest start, and
    /// how many of its flows are unfinished.
    flows: Vec<Vec<u32>>,
    first: Vec<u64>,
    started: Vec<u64>,
    left: Vec<u32>,
}

impl<Q: EventQueue> Sim<Q> {
    /// Repeat every workload of the plan: when all its flows have finished it starts
    /// again, `period` after its previous start (or at once if that has passed). The run
    /// then ends only at the stop time, which must be set.
    pub fn set_repeat(&mut self, period: Duration) -> Result<(), SimError> {
        if self.cfg.stop.is_none() {
            return Err(SimError::Config(
                "a repeating workload needs a stop time (SimConfig::stop, --stop) so the run ends"
                    .into(),
            ));
        }
        if matches!(self.cfg.cc, CcChoice::Algo(cc_algos::CcKind::Rccc)) {
            return Err(SimError::Config(
                "repeating workloads are not supported with rccc (its receivers keep per-flow credit state across restarts); use dcqcn, nscc or dctcp".into(),
            ));
        }
        let groups = self
            .flows
            .iter()
            .map(|f| f.group as usize + 1)
            .max()
            .unwrap_or(0);
        let mut r = Repeat {
            period: period.as_picos(),
            flows: vec![Vec::new(); groups],
            first: vec![u64::MAX; groups],
            started: vec![0; groups],
            left: vec![0; groups],
        };
        for (i, f) in self.flows.iter().enumerate() {
            let g = f.group as usize;
            r.flows[g].push(i as u32);
            r.first[g] = r.first[g].min(self.plan.flows[i].start.picos());
            r.started[g] = r.first[g];
            r.left[g] += u32::from(!f.done);
        }
        self.repeat = Some(Box::new(r));
        Ok(())
    }

    /// Flow `f` finished: if its workload is complete, schedule the next round.
    pub(super) fn repeat_on_done(&mut self, f: u32) {
        let Some(r) = self.repeat.as_mut() else {
            return;
        };
        let g = self.flows[f as usize].group as usize;
        r.left[g] -= 1;
        if r.left[g] == 0 {
            let at = self.now.max(r.started[g].saturating_add(r.period));
            self.q.push(at, EV_REPEAT, g as u32);
        }
    }

    /// Starts workload `g` again from now.
    pub(super) fn restart_group(&mut self, g: u32) {
        let Some(mut r) = self.repeat.take() else {
            return;
        };
        let g = g as usize;
        r.started[g] = self.now;
        r.left[g] = r.flows[g].len() as u32;
        for &i in &r.flows[g] {
            let iu = i as usize;
            let spec = &self.plan.flows[iu];
            let class = build::class_of(&self.prio_of, spec.priority);
            let mut st = build::flow_state(&self.net, &self.cfg, spec, class, &mut self.rng);
            st.round = self.flows[iu].round.wrapping_add(1);
            st.start_at = self.now + (spec.start.picos() - r.first[g]);
            if self.flows[iu].done {
                self.flows_done -= 1;
            }
            self.flows[iu] = st;
            if self.flows[iu].deps_left == 0 {
                self.q.push(self.flows[iu].start_at, EV_FLOWSTART, i);
            }
        }
        self.t.workload_repeats += 1;
        self.repeat = Some(r);
    }

    /// Whether workloads repeat (the run then ends only at the stop time).
    pub(super) fn repeating(&self) -> bool {
        self.repeat.is_some()
    }
}
