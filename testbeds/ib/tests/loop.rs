//! The loop on a real OpenSM: ibsim simulates a k=4 fat-tree from the `.net` export,
//! OpenSM (`-s 1 -R file`) routes it on fabric's tables; a cable cut on ibsim's console
//! is heard (trap 128 in OpenSM's log), found (`ibnetdiscover`), answered (new tables,
//! `SIGHUP`) and read back from every switch (`ibroute`). Needs Debian's opensm,
//! ibsim-utils, libumad2sim0 and infiniband-diags (`scripts/install-deps.sh`); no root.

use std::sync::Arc;
use std::time::Duration;

use ib_testbed::brain::{self, Brain, LinkChange};

#[test]
fn cable_cut_is_found_answered_and_loaded_in_every_switch() {
    if !testkit::tools::require(&ib_testbed::TOOLS, &[ib_testbed::UMAD2SIM]) {
        return;
    }
    let f = topo::generators::fat_tree(4, topo::Rate::gbps(400)).unwrap();
    let mut b = Brain::start(Arc::new(f), "loop-k4").unwrap();
    let (changes, peers) = b.detect().unwrap();
    assert!(changes.is_empty(), "{changes:?}");
    assert_eq!(peers.len(), 96);
    let (d, unreached) = b.verify().unwrap();
    assert!(
        d.entries.is_empty(),
        "{:?}",
        &d.entries[..d.entries.len().min(5)]
    );
    assert_eq!(d.checked, 20 * 36);
    assert!(unreached.is_empty(), "{unreached:?}");

    // Cut pod0-agg0's first core cable.
    let fab = b.net().design().fabric.clone();
    let names = fab.name_index();
    let link = fab
        .ports(names["pod0-agg0"])
        .find(|&(p, _)| fab.node_name(p).starts_with("core"))
        .map(|(_, l)| l)
        .unwrap();
    let offset = b.subnet().sm().unwrap().log_end();
    b.subnet().unlink(link).unwrap();
    let (_, lid, _) = brain::wait_trap(b.subnet(), offset, Duration::from_secs(60)).unwrap();
    assert_ne!(lid, 0);
    let (changes, _) = b.detect().unwrap();
    assert_eq!(changes, vec![LinkChange { link, up: false }]);
    // The trapping switch's own ports tell the same, without a full discovery.
    assert_eq!(b.detect_at(&[lid]).unwrap(), Some(changes.clone()));
    let a = b.answer(&changes).unwrap();
    assert!(a.entries_changed > 0);
    let (d, unreached) = b.verify().unwrap();
    assert!(
        d.entries.is_empty(),
        "{:?}",
        &d.entries[..d.entries.len().min(5)]
    );
    // Every switch holds every LID it reaches, the SM's own (LID 1) included — also
    // core0-0, which reaches pod 0's hosts only down and up through another pod.
    assert!(unreached.is_empty(), "{unreached:?}");

    // And back.
    let offset = b.subnet().sm().unwrap().log_end();
    b.subnet().relink(link).unwrap();
    let (_, lid, trap_end) = brain::wait_trap(b.subnet(), offset, Duration::from_secs(60)).unwrap();
    let (changes, _) = b.detect().unwrap();
    assert_eq!(changes, vec![LinkChange { link, up: true }]);
    assert_eq!(b.detect_at(&[lid]).unwrap(), Some(changes.clone()));
    // Answered after the trap: the trap's own sweep may load the new tables.
    b.answer_after(&changes, Some(trap_end)).unwrap();
    let (d, unreached) = b.verify().unwrap();
    assert!(d.entries.is_empty());
    assert!(unreached.is_empty(), "{unreached:?}");
}
