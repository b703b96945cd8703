//! The live NIC when softspin-host is built without the feature `live`
//! (no clang or libbpf needed): `Nic::attach` and the live NIC's types are
//! absent, so a program that wants them does not compile; a `Nic` is never
//! live, and these are the hooks the rest of the crate calls on one.

use std::time::Instant;

use crate::{Error, Nic, Notification, Result};

/// No value: `Nic::live` is always `None`.
pub(crate) enum Live {}

/// What a hook answers if ever reached without a live NIC (its callers test
/// `Nic::live` first, so it is not).
fn not_live(nic: &Nic) -> Error {
    if let Some(l) = &nic.live {
        match *l {}
    }
    Error::Invalid("not a live NIC (softspin-host was built without the `live` feature)".into())
}

impl Nic {
    pub(crate) fn reprogram_matcher(&mut self) -> Result<()> {
        Ok(())
    }

    pub(crate) fn live_until_idle(&mut self, _end: Option<Instant>) -> Result<()> {
        Err(not_live(self))
    }

    pub(crate) fn live_for(&mut self, _ns: u64) -> Result<()> {
        Err(not_live(self))
    }

    pub(crate) fn live_wait_notifications(&mut self) -> Result<Vec<Notification>> {
        Err(not_live(self))
    }
}
