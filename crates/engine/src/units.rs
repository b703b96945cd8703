//! Units of NIC time and rate: picoseconds (the engine's clock), nanoseconds
//! (what users and the PsPIN paper give, seed 001 §4.2.1), HPU cycles (the
//! NIC clock of seed 001 §4.1) and Gbit/s (line rates, PCIe bandwidth).
//!
//! Conversions that can overflow are checked. The engine keeps its clock as
//! `u64` picoseconds; every time that enters it passes one of the limits
//! below first (`NicConfig::validate`, ECTX install, `Engine::run`), so that
//! `now + delay` cannot wrap: `HORIZON + k * MAX_DELAY` fits `u64` for any
//! k < 2500.

use std::fmt;

/// Picoseconds per nanosecond.
pub const PS_PER_NS: u64 = 1000;

/// Picoseconds: the engine's virtual time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ps(pub u64);

/// Nanoseconds: times in configurations, flags and reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ns(pub u64);

/// Cycles of the NIC clock (`NicConfig::clock_mhz`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cycles(pub u64);

/// The longest single delay a configuration, ECTX or flag may give (a
/// latency, a control-path overhead, a message timeout): one hour of NIC
/// time. Far above anything PsPIN models (ns to ms), far below overflow.
pub const MAX_DELAY: Ps = Ps(3_600 * 1_000_000_000_000);

/// The simulation horizon: runs stop at or before it (2^63 ps, ~106 days of
/// NIC time), leaving room for thousands of `MAX_DELAY`s on top of `now`.
pub const HORIZON: Ps = Ps(1 << 63);

impl Ns {
    /// Checked: `None` if the picoseconds do not fit `u64`.
    pub fn to_ps(self) -> Option<Ps> {
        self.0.checked_mul(PS_PER_NS).map(Ps)
    }

    /// For values already checked against a limit (`delay_ns`): saturates
    /// instead of wrapping should one slip through.
    pub fn to_ps_saturating(self) -> Ps {
        Ps(self.0.saturating_mul(PS_PER_NS))
    }
}

impl Ps {
    /// Whole nanoseconds (rounded down).
    pub fn to_ns(self) -> Ns {
        Ns(self.0 / PS_PER_NS)
    }

    /// Nanoseconds as a float, for reports.
    pub fn as_ns_f64(self) -> f64 {
        self.0 as f64 / PS_PER_NS as f64
    }

    pub fn checked_add(self, d: Ps) -> Option<Ps> {
        self.0.checked_add(d.0).map(Ps)
    }

    /// The largest nanosecond count that converts to at most `self`.
    pub const fn max_ns(self) -> u64 {
        self.0 / PS_PER_NS
    }
}

/// The NIC clock, named once: picoseconds per cycle from `clock_mhz`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Clock {
    ps_per_cycle: u64,
}

impl Clock {
    /// `None` unless `mhz` divides 10^6, so a cycle is a whole number of
    /// picoseconds (1000 MHz: 1000 ps; FPsPIN's 40 MHz: 25,000 ps).
    pub fn from_mhz(mhz: u32) -> Option<Clock> {
        (mhz != 0 && 1_000_000 % mhz == 0).then(|| Clock {
            ps_per_cycle: 1_000_000 / mhz as u64,
        })
    }

    pub fn ps_per_cycle(self) -> u64 {
        self.ps_per_cycle
    }

    /// Checked: `None` if the picoseconds do not fit `u64`.
    pub fn to_ps(self, c: Cycles) -> Option<Ps> {
        c.0.checked_mul(self.ps_per_cycle).map(Ps)
    }

    /// Whole cycles in `t` (rounded down).
    pub fn cycles_in(self, t: Ps) -> Cycles {
        Cycles(t.0 / self.ps_per_cycle)
    }
}

/// A line rate or bus bandwidth in Gbit/s (serialisation times come from
/// `traffic::wire_time_ps`, the one pacing rule).
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd)]
pub struct Gbps(pub f64);

impl Gbps {
    /// Rates outside this range are rejected: below 1 Mbit/s a large frame
    /// would take longer than `MAX_DELAY`, above 1 Pbit/s nothing is modelled.
    pub const MIN: f64 = 0.001;
    pub const MAX: f64 = 1e6;

    pub fn is_valid(self) -> bool {
        self.0.is_finite() && (Self::MIN..=Self::MAX).contains(&self.0)
    }
}

/// A value outside its limit, for the error messages of the boundaries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutOfRange {
    pub field: &'static str,
    pub value: String,
    pub limit: String,
}

impl fmt::Display for OutOfRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` = {} is out of range (limit: {})",
            self.field, self.value, self.limit
        )
    }
}

impl std::error::Error for OutOfRange {}

/// A delay in ns given at a boundary, checked against `MAX_DELAY`.
pub fn delay_ns(field: &'static str, ns: u64) -> Result<Ps, OutOfRange> {
    match Ns(ns).to_ps() {
        Some(p) if p <= MAX_DELAY => Ok(p),
        _ => Err(OutOfRange {
            field,
            value: format!("{ns} ns"),
            limit: format!("at most {} ns (one hour)", MAX_DELAY.max_ns()),
        }),
    }
}

/// A delay in cycles given at a boundary, checked against `MAX_DELAY`.
pub fn delay_cycles(field: &'static str, c: u64, clock: Clock) -> Result<Ps, OutOfRange> {
    match clock.to_ps(Cycles(c)) {
        Some(p) if p <= MAX_DELAY => Ok(p),
        _ => Err(OutOfRange {
            field,
            value: format!("{c} cycles"),
            limit: format!(
                "at most {} cycles (one hour at this clock)",
                MAX_DELAY.0 / clock.ps_per_cycle()
            ),
        }),
    }
}

/// An absolute stop time in ns (`--until-ns`, `Nic::run_until`), checked
/// against the horizon.
pub fn until_ns(field: &'static str, ns: u64) -> Result<Ps, OutOfRange> {
    match Ns(ns).to_ps() {
        Some(p) if p <= HORIZON => Ok(p),
        _ => Err(OutOfRange {
            field,
            value: format!("{ns} ns"),
            limit: format!(
                "at most {} ns (the simulation horizon, 2^63 ps)",
                HORIZON.max_ns()
            ),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_are_checked() {
        assert_eq!(Ns(7).to_ps(), Some(Ps(7000)));
        // The reproduction of issue 10: 18446744073709552 ns * 1000 wraps.
        assert_eq!(Ns(18_446_744_073_709_552).to_ps(), None);
        assert_eq!(
            Ns(u64::MAX / 1000).to_ps(),
            Some(Ps(u64::MAX / 1000 * 1000))
        );
        let c = Clock::from_mhz(40).unwrap();
        assert_eq!(c.ps_per_cycle(), 25_000);
        assert_eq!(c.to_ps(Cycles(3)), Some(Ps(75_000)));
        assert_eq!(c.to_ps(Cycles(u64::MAX)), None);
        assert_eq!(c.cycles_in(Ps(74_999)), Cycles(2));
        assert!(Clock::from_mhz(0).is_none() && Clock::from_mhz(7).is_none());
        assert!(Gbps(400.0).is_valid() && !Gbps(0.0).is_valid() && !Gbps(f64::NAN).is_valid());
    }

    #[test]
    fn limits_leave_headroom() {
        // now <= HORIZON and a few thousand delays on top still fit.
        assert!(HORIZON.0.checked_add(2000 * MAX_DELAY.0).is_some());
        assert!(delay_ns("x", MAX_DELAY.max_ns()).is_ok());
        let e = delay_ns("host.latency_ns", 9_223_372_036_854_775_807)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("host.latency_ns") && e.contains("3600000000000 ns"),
            "{e}"
        );
        assert!(until_ns("--until-ns", 18_446_744_073_709_552).is_err());
        assert!(until_ns("--until-ns", HORIZON.max_ns()).is_ok());
        let e = delay_cycles("quantum_cycles", u64::MAX, Clock::from_mhz(1000).unwrap())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("quantum_cycles") && e.contains("3600000000000 cycles"),
            "{e}"
        );
    }
}
