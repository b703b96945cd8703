//! Captures of the live NIC (issue 26, "Captures of both directions"): the
//! frames the matching engine handed to the NIC (seed 000 §3.2.1), each with
//! the ECTX its ruleset chose, and the wall clock of NIC time 0, so that a
//! capture or timeline of a live run lines up with captures taken elsewhere.
//! The XDP program takes matched frames before the kernel's packet taps, so
//! this is the only place they can be recorded on the NIC's side.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use softspin_engine::EctxId;
use softspin_netio::RxFrame;

use crate::{Ectx, Error, Nic, Result};

/// Most matched frames held for capture between two takes: a few times
/// what one step takes and what `stop_matching` drains, so a caller that
/// takes them after every step never loses one; beyond it frames are
/// counted (`rx_capture_missed`), not kept.
pub const RX_CAPTURE_MAX: usize = 16_384;

/// A matched frame as the live NIC took it from the wire.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RxCaptured {
    /// NIC time of its reception (ps since attach).
    pub time_ps: u64,
    /// The ECTX its ruleset chose (`None` when the ruleset has none).
    pub ectx: Option<Ectx>,
    /// Its message id (`None` when it was dropped before it got one).
    pub msg_id: Option<u32>,
    pub eom: bool,
    /// Why it never became a HER (a drop cause of the live statistics).
    pub dropped: Option<&'static str>,
    /// Starting at the Ethernet header.
    pub frame: Vec<u8>,
}

/// The capture tap of a live NIC (off until `Nic::capture_rx`).
#[derive(Default)]
pub(crate) struct RxTap {
    on: bool,
    /// With the engine's ECTX slot, mapped to a handle when taken.
    frames: Vec<(Option<EctxId>, RxCaptured)>,
    missed: u64,
}

impl RxTap {
    #[inline]
    pub(crate) fn record(
        &mut self,
        f: &RxFrame,
        time_ps: u64,
        ectx: Option<EctxId>,
        msg_id: Option<u32>,
        dropped: Option<&'static str>,
    ) {
        if !self.on {
            return;
        }
        if self.frames.len() >= RX_CAPTURE_MAX {
            self.missed += 1;
            return;
        }
        let c = RxCaptured {
            time_ps,
            ectx: None,
            msg_id,
            eom: f.eom,
            dropped,
            frame: f.frame.clone(),
        };
        self.frames.push((ectx, c));
    }
}

/// Most tries `epoch_pair` makes at a pair of clock reads not split by
/// a preemption.
const PAIR_TRIES: usize = 16;
/// A pair read within this long counts as taken at one instant.
const PAIR_TIGHT: Duration = Duration::from_micros(2);

/// NIC time 0 on the monotonic clock and the wall clock (since the UNIX
/// epoch) at the same instant: a preemption between the two reads would
/// shift every capture stamp by its length, so the wall clock is read
/// between two monotonic reads until they are close, and paired with
/// their midpoint.
pub(crate) fn epoch_pair() -> (Instant, Duration) {
    let mut best: Option<(Duration, Instant, Duration)> = None;
    for _ in 0..PAIR_TRIES {
        let a = Instant::now();
        // A clock before 1970 is a broken clock; 0 then says so.
        let wall = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let b = Instant::now();
        let spread = b - a;
        if best.is_none_or(|(s, ..)| spread < s) {
            best = Some((spread, a + spread / 2, wall));
        }
        if spread <= PAIR_TIGHT {
            break;
        }
    }
    let (_, at, wall) = best.expect("PAIR_TRIES > 0");
    (at, wall)
}

impl Nic {
    /// Keep a copy of every frame the port hands over from now on (off:
    /// stop); take them with `take_rx_captured` after each step (e.g. in
    /// `run_live_with`'s callback).
    pub fn capture_rx(&mut self, on: bool) -> Result<()> {
        let Some(live) = self.live.as_mut() else {
            return Err(Error::Invalid(
                "capture_rx: this NIC is simulated; attach it to an interface first".into(),
            ));
        };
        live.tap.on = on;
        Ok(())
    }

    /// The frames captured since the last call, in the order they were taken.
    pub fn take_rx_captured(&mut self) -> Vec<RxCaptured> {
        let Some(live) = self.live.as_mut() else {
            return Vec::new();
        };
        let frames = std::mem::take(&mut live.tap.frames);
        frames
            .into_iter()
            .map(|(slot, mut c)| {
                c.ectx = slot.and_then(|s| self.slots.get(&s).copied());
                c
            })
            .collect()
    }

    /// Frames not captured because `RX_CAPTURE_MAX` were waiting to be taken.
    pub fn rx_capture_missed(&self) -> u64 {
        self.live.as_ref().map_or(0, |l| l.tap.missed)
    }

    /// The wall clock (since the UNIX epoch) at NIC time 0 of a live NIC:
    /// NIC time runs with the monotonic clock from there, so NIC time `t`
    /// happened at wall-clock time `time0_unix + t`. `None` when simulated.
    pub fn time0_unix(&self) -> Option<Duration> {
        self.live.as_ref().map(|l| l.epoch_unix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(b: u8) -> RxFrame {
        RxFrame {
            frame: vec![b; 60],
            ruleset: 0,
            eom: b.is_multiple_of(2),
            msg_id: None,
            at: Instant::now(),
        }
    }

    /// Off, the tap keeps nothing; on, a copy of each frame with what the
    /// NIC decided; past RX_CAPTURE_MAX waiting frames it counts instead.
    #[test]
    fn the_tap_copies_then_counts() {
        let mut t = RxTap::default();
        t.record(&frame(1), 5, Some(0), Some(9), None);
        assert!(t.frames.is_empty());
        t.on = true;
        t.record(&frame(2), 7, Some(3), Some(9), None);
        t.record(&frame(3), 8, None, None, Some("no_ectx_for_ruleset"));
        let (slot, c) = &t.frames[0];
        assert_eq!(*slot, Some(3));
        assert_eq!(
            (c.time_ps, c.msg_id, c.eom, c.dropped, &c.frame[..]),
            (7, Some(9), true, None, &[2u8; 60][..])
        );
        assert_eq!(t.frames[1].1.dropped, Some("no_ectx_for_ruleset"));
        for _ in t.frames.len()..RX_CAPTURE_MAX + 5 {
            t.record(&frame(4), 9, None, None, None);
        }
        assert_eq!((t.frames.len(), t.missed), (RX_CAPTURE_MAX, 5));
    }

    /// The pair agrees with the clocks read around it.
    #[test]
    fn the_epoch_pair_is_one_instant() {
        let before = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
        let (at, wall) = epoch_pair();
        let after = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
        assert!(before <= wall && wall <= after);
        assert!(at.elapsed() < Duration::from_secs(1));
    }
}
