//! Failures: validating the scenario's failures, taking ports down (queued packets are
//! lost), restoring them, and re-routing after the detection delay.

use super::*;

impl<Q: EventQueue> Sim<Q> {
    pub(super) fn validate_failures(&mut self) -> Result<(), SimError> {
        for (i, f) in self.failures.clone().iter().enumerate() {
            let ports: Vec<u32> = match f.target {
                FailureTarget::Link(a, b) => {
                    let n = self.net.nodes();
                    if a >= n || b >= n {
                        return Err(SimError::BadFailure {
                            index: i,
                            message: format!("node {} does not exist ({n} nodes)", a.max(b)),
                        });
                    }
                    let Some(p) = self.net.port_to(a, b) else {
                        return Err(SimError::BadFailure {
                            index: i,
                            message: format!("no link between nodes {a} and {b}"),
                        });
                    };
                    vec![p, self.net.port_peer[p as usize]]
                }
                FailureTarget::Switch(s) => {
                    if s < self.net.hosts || s >= self.net.nodes() {
                        return Err(SimError::BadFailure {
                            index: i,
                            message: format!("node {s} is not a switch"),
                        });
                    }
                    self.net
                        .ports_of(s)
                        .flat_map(|p| [p, self.net.port_peer[p as usize]])
                        .collect()
                }
            };
            self.failed_ports[i] = ports;
        }
        Ok(())
    }

    pub(super) fn fail(&mut self, i: usize) {
        let ports = self.failed_ports[i].clone();
        for p in ports {
            let pu = p as usize;
            if !self.up[pu] {
                continue;
            }
            self.up[pu] = false;
            // Queued packets on a dead port are lost.
            let node = self.net.port_node[pu];
            let is_switch = !self.net.is_host(node);
            let mut lost = Vec::new();
            while let Some(i) = self.ctrl_q[pu].pop(&mut self.pkts) {
                lost.push(i);
            }
            for c in 0..self.nclass {
                let k = pu * self.nclass + c;
                while let Some(i) = self.data_q[k].pop(&mut self.pkts) {
                    lost.push(i);
                }
                self.qbytes[pu * self.nclass + c] = 0;
            }
            while let Some(i) = self.pause_q[pu].pop(&mut self.pkts) {
                self.free.push(i);
            }
            self.qtotal[pu] = 0;
            for pid in lost {
                let pk = self.pkts[pid as usize];
                if is_switch {
                    self.node_buf[node as usize] -= pk.wire as u64;
                    if self.cfg.pfc && pk.kind == K_DATA && pk.flags & F_TRIM == 0 {
                        let prio = self.prio_of[pk.class as usize];
                        let now = Instant::from_picos(self.now);
                        if let Some(fr) = self.pfc_in[pk.port as usize].on_dequeue(
                            now,
                            prio,
                            Bytes(pk.wire as u64),
                        ) {
                            self.send_pfc(pk.port, fr);
                        }
                    }
                }
                self.t.drops_failure += 1;
                self.release(pid);
            }
        }
        self.t.failures += 1;
    }

    pub(super) fn restore(&mut self, i: usize) {
        let ports = self.failed_ports[i].clone();
        for p in &ports {
            self.up[*p as usize] = true;
            self.pfc_out[*p as usize] = PfcEgress::new(self.net.port_rate[*p as usize]);
        }
        for p in ports {
            self.try_tx(p);
        }
    }

    /// Recompute routes around every port that is down now.
    pub(super) fn reroute(&mut self) {
        match &mut self.router {
            Router::Topo(r) => {
                let f = self.fabric.as_ref().expect("topo router has a fabric");
                // Links down now, by topo link id.
                let mut down = Vec::new();
                let mut upl = Vec::new();
                for n in 0..f.num_nodes() as u32 {
                    for (port, (_peer, link)) in f.ports(topo::NodeId(n)).enumerate() {
                        let g = self.net.port_off[n as usize] + port as u32;
                        if !self.up[g as usize] {
                            down.push(link);
                        } else {
                            upl.push(link);
                        }
                    }
                }
                down.sort_unstable();
                down.dedup();
                upl.sort_unstable();
                upl.dedup();
                let restored: Vec<topo::LinkId> = r
                    .failed_links()
                    .filter(|l| down.binary_search(l).is_err())
                    .collect();
                if !restored.is_empty() {
                    r.restore_links(f, &restored);
                }
                let newly: Vec<topo::LinkId> =
                    down.iter().copied().filter(|&l| r.link_is_up(l)).collect();
                if !newly.is_empty() {
                    r.fail_links(f, &newly);
                }
            }
            Router::Bfs(r) => *r = BfsRoutes::compute(&self.net, &self.up),
            Router::Static(_) => {}
        }
        self.t.reroutes += 1;
        // Per-flow NIC pins may point at a dead port now.
        if self.cfg.lb.per_flow() {
            for fl in &mut self.flows {
                let ports = self.net.ports_of(fl.src);
                let n = ports.len() as u64;
                if n > 1 && !self.up[(ports.start + fl.pin as u32) as usize] {
                    for k in 0..n {
                        let cand = ((fl.hash + k) % n) as u8;
                        if self.up[(ports.start + cand as u32) as usize] {
                            fl.pin = cand;
                            break;
                        }
                    }
                }
            }
        }
        for h in 0..self.net.hosts {
            self.kick_host(h);
        }
    }
}
