//! Sending to a NIC's SLMP receive handlers from the host API: the
//! softspin-slmp sender (retransmission, adaptive window) behind the same
//! error type as the rest of the API, so the C and Python bindings report
//! its failures like any other.

pub use softspin_slmp::{Sender, SenderConfig, Stats, SyncMode, WindowMode};

/// What a caller chooses of the sender's settings; everything else keeps
/// `SenderConfig`'s defaults.
#[derive(Clone, Debug)]
pub struct SendOptions {
    /// `auto` (AIMD) or a packet count.
    pub window: String,
    /// `none`, `msg` or `all` (every segment acknowledged).
    pub sync: String,
    /// Payload bytes per segment.
    pub segment: usize,
    /// Give up after this long without a new ACK.
    pub give_up: std::time::Duration,
    /// Message id of the first message (the receiver's slot is id % 16).
    pub first_msg_id: u32,
}

impl Default for SendOptions {
    fn default() -> Self {
        let d = SenderConfig::default();
        SendOptions {
            window: "auto".into(),
            sync: d.sync.name().into(),
            segment: d.segment,
            give_up: d.idle_timeout,
            first_msg_id: d.first_msg_id,
        }
    }
}

impl SendOptions {
    pub fn config(&self) -> crate::Result<SenderConfig> {
        use crate::Error;
        let sync = match self.sync.as_str() {
            "none" => SyncMode::None,
            "msg" => SyncMode::Msg,
            "all" => SyncMode::All,
            s => {
                return Err(Error::Invalid(format!(
                    "sync `{s}`: expected none, msg or all"
                )))
            }
        };
        let window = softspin_slmp::args::parse_window(&self.window).map_err(Error::Invalid)?;
        let cfg = SenderConfig {
            segment: self.segment,
            sync,
            window,
            idle_timeout: self.give_up,
            first_msg_id: self.first_msg_id,
            ..SenderConfig::default()
        };
        cfg.validate()?;
        Ok(cfg)
    }
}

/// Send `msgs` (one SLMP message each, message ids counting up from
/// `first_msg_id`) to the receiver at `to` (ADDR[:PORT], default port
/// 9330) and return the statistics. With sync `all` a return means every
/// segment was acknowledged; with `none`/`msg`, `Stats::delivery_confirmed`
/// says whether it was. Giving up is an `Error::Slmp(GaveUp { stats, .. })`.
pub fn send(to: &str, msgs: &[&[u8]], opts: &SendOptions) -> crate::Result<Stats> {
    let peer = softspin_slmp::args::resolve_peer(to).map_err(crate::Error::Invalid)?;
    let mut sender = Sender::connect(peer, opts.config()?)?;
    Ok(sender.send_batch(msgs)?)
}
