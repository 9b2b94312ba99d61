//! Alarms with a severity, raised when a condition starts and cleared when it ends
//! (clear-on-recovery), keyed by what they are about.

use std::collections::BTreeMap;

use serde::Serialize;

/// Severity, in increasing order (the four levels).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth knowing.
    Info,
    /// May need attention.
    Warning,
    /// Service degraded.
    Minor,
    /// Service lost.
    Critical,
}

impl Severity {
    /// Every level, for `fabric_alarms_active{severity}`.
    pub const ALL: [Severity; 4] = [
        Severity::Info,
        Severity::Warning,
        Severity::Minor,
        Severity::Critical,
    ];

    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Minor => "minor",
            Severity::Critical => "critical",
        }
    }
}

/// What an alarm is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum AlarmKind {
    /// A link is down (object: link id).
    LinkDown,
    /// A switch failed as a whole, e.g. its namespace was deleted (object: node id).
    SwitchDown,
    /// A link is damped (object: link id).
    LinkDamped,
    /// A queue is in a PFC storm (object: port × 8 + priority).
    PfcStorm,
    /// A port's utilisation is over the threshold (object: port).
    Utilisation,
    /// A port dropped packets in the last interval (object: port).
    Drops,
    /// A port spent more than the threshold share of the interval paused (object: port).
    PauseShare,
    /// Host pairs have no route (object: 0).
    Unreachable,
    /// The data plane's routes differ from the tables (object: 0).
    RouteDrift,
    /// The cabling differs from the spec (object: 0).
    Miswiring,
}

/// An active alarm.
#[derive(Debug, Clone, Serialize)]
pub struct Alarm {
    /// What.
    pub kind: AlarmKind,
    /// Severity.
    pub severity: Severity,
    /// Where, in words (`pod0-leaf0 port 2`).
    pub object: String,
    /// Details (the value against its threshold).
    pub message: String,
    /// Snapshot sequence number at which it was raised.
    pub since_seq: u64,
}

/// The active alarms, and how many were raised and cleared in all.
#[derive(Debug, Default)]
pub struct Alarms {
    active: BTreeMap<(AlarmKind, u64), Alarm>,
    /// Alarms raised so far.
    pub raised: u64,
    /// Alarms cleared so far.
    pub cleared: u64,
}

impl Alarms {
    /// Raises (or keeps, updating its message) the alarm `(kind, key)` when `on`, clears
    /// it when not.
    pub fn set(&mut self, on: bool, kind: AlarmKind, key: u64, make: impl FnOnce() -> Alarm) {
        if on {
            match self.active.get_mut(&(kind, key)) {
                Some(a) => a.message = make().message,
                None => {
                    self.raised += 1;
                    self.active.insert((kind, key), make());
                }
            }
        } else if self.active.remove(&(kind, key)).is_some() {
            self.cleared += 1;
        }
    }

    /// Keys of the active alarms of `kind`.
    pub fn keys(&self, kind: AlarmKind) -> Vec<u64> {
        self.active
            .range((kind, 0)..=(kind, u64::MAX))
            .map(|((_, k), _)| *k)
            .collect()
    }

    /// Active alarms except those `hide(kind, key)` selects (alarms folded into another
    /// one), most severe first.
    pub fn list_without(&self, hide: impl Fn(AlarmKind, u64) -> bool) -> Vec<Alarm> {
        let mut v: Vec<Alarm> = self
            .active
            .iter()
            .filter(|((kind, key), _)| !hide(*kind, *key))
            .map(|(_, a)| a.clone())
            .collect();
        v.sort_by(|a, b| b.severity.cmp(&a.severity).then(a.kind.cmp(&b.kind)));
        v
    }

    /// Active alarms of `severity`.
    pub fn count(&self, severity: Severity) -> usize {
        self.active
            .values()
            .filter(|a| a.severity == severity)
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alarm(sev: Severity) -> Alarm {
        Alarm {
            kind: AlarmKind::Drops,
            severity: sev,
            object: "x".into(),
            message: "m".into(),
            since_seq: 0,
        }
    }

    #[test]
    fn raise_keep_and_clear() {
        let mut a = Alarms::default();
        a.set(true, AlarmKind::Drops, 3, || alarm(Severity::Minor));
        a.set(true, AlarmKind::Drops, 3, || alarm(Severity::Minor));
        a.set(true, AlarmKind::PfcStorm, 9, || alarm(Severity::Critical));
        assert_eq!((a.raised, a.count(Severity::Minor)), (2, 1));
        assert_eq!(a.list_without(|_, _| false)[0].severity, Severity::Critical);
        assert_eq!(a.keys(AlarmKind::Drops), vec![3]);
        a.set(false, AlarmKind::Drops, 3, || alarm(Severity::Minor));
        a.set(false, AlarmKind::Drops, 4, || alarm(Severity::Minor));
        assert_eq!((a.cleared, a.count(Severity::Minor)), (1, 0));
    }
}
