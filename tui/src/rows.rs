//! The links table's order and the filter's matches, computed off the UI thread.
//!
//! Filtering and sorting every link costs milliseconds on a large fabric (`util>90 and
//! pfc>0` over 384k links: 11 ms; a full sort by another column more), so the [`App`]
//! does neither: when the sample or the query (filter, faults only, sort) changes, it
//! hands a [`Job`] to a [`Worker`] thread, which answers with [`Rows`]
//! ([`Msg::Rows`]). A new sample is held back until its rows arrive, so the table and
//! the heat map never show one sample filtered by another's values. The default query
//! (every link, by utilisation, highest first) needs no job: the source's thread already
//! sorted the sample ([`Sample::by_util`]). An app without a worker (tests, benchmarks)
//! runs the job in line.
//!
//! [`App`]: crate::App

use crate::app::Msg;
use crate::fabric::FabricView;
use crate::filter::Expr;
use crate::metrics::Sample;
use crate::table::{self, SortKey};
use crate::tenants::TenantMask;
use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, Sender};

/// What the table lists and in which order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Query {
    /// Filter expression.
    pub filter: Option<Expr>,
    /// Only links that are down, dropping or pausing.
    pub faults_only: bool,
    /// Sort column.
    pub sort: SortKey,
    /// Ascending instead of descending.
    pub ascending: bool,
    /// Only this tenant's links.
    pub tenant: Option<TenantMask>,
}

impl Query {
    /// Every link by utilisation, highest first: a sample's own [`Sample::by_util`].
    pub fn is_default(&self) -> bool {
        self.keeps_all() && self.sort == SortKey::Util && !self.ascending
    }

    /// Keeps every link (no filter, not faults only, no tenant).
    pub fn keeps_all(&self) -> bool {
        self.filter.is_none() && !self.faults_only && self.tenant.is_none()
    }
}

/// Which sample (the app's serial number for it) and which query (a generation, +1 per
/// change) rows were computed for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    /// Serial number of the sample.
    pub sample: u64,
    /// Generation of the query.
    pub query: u64,
}

/// Work for the [`Worker`]: everything it reads is shared, nothing is copied.
#[derive(Debug, Clone)]
pub struct Job {
    /// What the answer is for.
    pub key: Key,
    /// The fabric's shape (names, tiers, planes for the filter).
    pub fabric: Arc<FabricView>,
    /// The rates.
    pub sample: Arc<Sample>,
    /// The query.
    pub query: Query,
}

/// The links a query keeps for one sample.
#[derive(Debug, Clone, PartialEq)]
pub struct Rows {
    /// What it was computed for.
    pub key: Key,
    /// Kept links in table order.
    pub order: Vec<u32>,
    /// Per link: kept by the filter and the faults-only switch (the heat map's mask).
    pub keep: Vec<bool>,
}

impl Job {
    /// Filter every link once, then sort the matches.
    pub fn run(&self) -> Rows {
        let q = table::Query {
            filter: self.query.filter.as_ref(),
            faults_only: self.query.faults_only,
            sort: self.query.sort,
            ascending: self.query.ascending,
        };
        let rates = &self.sample.links;
        let n = self.fabric.links.len();
        let tenant = self.query.tenant.as_ref().map(|t| &t.mask);
        let keep: Vec<bool> = (0..n as u32)
            .map(|id| {
                tenant.is_none_or(|m| m.get(id as usize).copied().unwrap_or(false))
                    && table::keeps(&self.fabric, rates, &q, id)
            })
            .collect();
        let by_util = &self.sample.by_util;
        let order =
            if self.query.sort == SortKey::Util && !self.query.ascending && by_util.len() == n {
                by_util
                    .iter()
                    .copied()
                    .filter(|&id| keep[id as usize])
                    .collect()
            } else {
                let mut ids: Vec<u32> = (0..n as u32).filter(|&id| keep[id as usize]).collect();
                table::sort(&mut ids, rates, &q, usize::MAX);
                ids
            };
        Rows {
            key: self.key,
            order,
            keep,
        }
    }
}

/// A thread that runs [`Job`]s and sends their [`Rows`] to the UI's channel. When jobs
/// queue up, only the latest is run (the others are already stale).
#[derive(Debug, Clone)]
pub struct Worker {
    jobs: Sender<Job>,
}

impl Worker {
    /// Start the thread; it ends when the app (every sender) or the UI's channel is gone.
    pub fn spawn(ui: Sender<Msg>) -> Worker {
        let (tx, rx) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("fabric-tui rows".into())
            .spawn(move || serve(&rx, &ui))
            .expect("spawn the rows worker");
        Worker { jobs: tx }
    }

    /// Queue a job (lost if the thread has ended: the app keeps its last rows).
    pub fn send(&self, job: Job) {
        let _ = self.jobs.send(job);
    }
}

fn serve(rx: &Receiver<Job>, ui: &Sender<Msg>) {
    while let Ok(mut job) = rx.recv() {
        while let Ok(newer) = rx.try_recv() {
            job = newer;
        }
        if ui.send(Msg::Rows(Arc::new(job.run()))).is_err() {
            return;
        }
    }
}
