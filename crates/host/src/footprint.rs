//! Queries of any NIC, live or simulated: what it holds (its footprint),
//! the rulesets an ECTX was installed with, whether it is live. Apart from
//! live.rs so they exist without the feature `live`.

use crate::{Ectx, Nic, Result, Ruleset};

/// What a live NIC holds between steps, each of which must stay bounded
/// however long it runs (a flood test checks their peaks).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Footprint {
    /// Events taken from the engine and not yet read ([`Nic::events`]).
    pub events: usize,
    /// Notifications not yet read (bounded by `notify_ring` per ECTX).
    pub notifications: usize,
    /// Packets the engine holds ([`softspin_engine::Engine::packets_held`]).
    pub packets_held: u64,
}

impl Footprint {
    /// The larger of each figure.
    pub fn max(self, o: Footprint) -> Footprint {
        Footprint {
            events: self.events.max(o.events),
            notifications: self.notifications.max(o.notifications),
            packets_held: self.packets_held.max(o.packets_held),
        }
    }
}

impl Nic {
    /// Whether this NIC is attached to an interface.
    pub fn is_live(&self) -> bool {
        self.live.is_some()
    }

    /// What this NIC holds right now (see [`Footprint`]).
    pub fn footprint(&self) -> Footprint {
        Footprint {
            events: self.events.len(),
            notifications: self.notes.len(),
            packets_held: self.engine.packets_held(),
        }
    }

    /// The rulesets an ECTX was installed with.
    pub fn ectx_rules(&self, e: Ectx) -> Result<Vec<Ruleset>> {
        Ok(self.info(e)?.rules.clone())
    }
}
