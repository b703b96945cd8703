//! The live status of `softspin nic` and `softspin slmp recv`
//! (`--progress`, docs/live.md "Live status"): every second a line of what
//! the NIC did (from the host API's `Nic::live_status`), and handler errors
//! and drops as they happen: the first few of each cause in full, then
//! only counts (in the status lines, and a last count at exit).

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use softspin_host::{Event, HandlerError, LiveStatus, Nic};

/// How often a status line comes.
const EVERY: Duration = Duration::from_secs(1);
/// Errors (and drop lines) of one cause shown in full before only their
/// count is.
pub const IN_FULL: u64 = 5;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Progress {
    /// tty when stderr is a terminal, else off.
    Auto,
    /// One status line on stderr, redrawn in place every second (plain
    /// when stderr is not a terminal).
    Tty,
    /// One text line per second on stderr (logs).
    Plain,
    /// One JSON object per line on stderr (docs/live.md).
    Json,
    /// Nothing until the run ends.
    Off,
}

#[derive(clap::Args)]
pub struct ProgressArgs {
    /// Live status on stderr every second, with handler errors and drops as
    /// they happen: tty (one line redrawn in place), plain (a line per
    /// second, for logs), json (an object per line), off; auto: tty when
    /// stderr is a terminal, else off.
    #[arg(long, value_enum, default_value = "auto", value_name = "MODE")]
    pub progress: Progress,
}

/// Prints the live status and the errors of a live run.
pub struct LiveReporter {
    mode: Progress,
    /// `nic` or `slmp recv`: the prefix of text lines.
    cmd: &'static str,
    next_at: Instant,
    /// The last status shown, for the rates and new drops.
    last: Option<LiveStatus>,
    /// Error events seen per cause (events of dropped details apart).
    errors_seen: BTreeMap<String, u64>,
    /// Drop lines printed per cause.
    drop_lines: BTreeMap<String, u64>,
    /// tty: the status line, redrawn in place (other lines go above it).
    bar: Option<indicatif::ProgressBar>,
}

impl LiveReporter {
    pub fn new(a: &ProgressArgs, cmd: &'static str) -> LiveReporter {
        let tty = std::io::stderr().is_terminal();
        let mode = match a.progress {
            Progress::Auto if tty => Progress::Tty,
            Progress::Auto => Progress::Off,
            Progress::Tty if !tty => Progress::Plain,
            m => m,
        };
        let bar = (mode == Progress::Tty).then(|| {
            let b = indicatif::ProgressBar::new_spinner();
            if let Ok(style) = indicatif::ProgressStyle::with_template("{wide_msg}") {
                b.set_style(style);
            }
            b
        });
        LiveReporter {
            mode,
            cmd,
            next_at: Instant::now() + EVERY,
            last: None,
            errors_seen: BTreeMap::new(),
            drop_lines: BTreeMap::new(),
            bar,
        }
    }

    /// The NIC is up: a JSON `start` object with `--progress json` (its
    /// stderr stays all JSON), else `line`, if any.
    pub fn started(&mut self, nic: &Nic, line: Option<String>) {
        match (self.mode, nic.live_stats()) {
            (Progress::Json, Some(s)) => {
                let j = serde_json::json!({"event": "start", "iface": s.iface, "port": s.port});
                self.emit(&j.to_string());
            }
            _ => {
                if let Some(l) = line {
                    self.emit(&l);
                }
            }
        }
    }

    /// Whether anything is shown before the run ends (the caller takes the
    /// NIC's events for [`LiveReporter::events`] only then).
    pub fn active(&self) -> bool {
        self.mode != Progress::Off
    }

    /// Take the NIC's events, show its errors, and the status when due
    /// (for loops that keep no other events).
    pub fn step(&mut self, nic: &mut Nic) {
        if self.active() {
            let ev = nic.events();
            self.events(&ev);
            self.tick(nic);
        }
    }

    /// Show the handler errors among `events` (the rest is the caller's).
    pub fn events(&mut self, events: &[Event]) {
        if !self.active() {
            return;
        }
        // Errors whose details the host API dropped (`ErrorsDropped`: a
        // flood between two takes) are in the status lines' counts.
        for e in events {
            if let Event::HandlerError(x) = e {
                self.error(x);
            }
        }
    }

    fn error(&mut self, x: &HandlerError) {
        let n = self.errors_seen.entry(x.cause.clone()).or_default();
        *n += 1;
        let n = *n;
        if n > IN_FULL {
            return;
        }
        let quiet = n == IN_FULL;
        match self.mode {
            Progress::Json => {
                let mut j = serde_json::json!({"event": "error", "error": x});
                if quiet {
                    j["counted_only_from_now"] = true.into();
                }
                self.emit(&j.to_string());
            }
            _ => {
                let mut s = format!("softspin: {}: error: {}", self.cmd, x.text());
                if quiet {
                    s += &format!(
                        " [the {IN_FULL}th `{}`: further ones are only counted]",
                        x.cause
                    );
                }
                self.emit(&s);
            }
        }
    }

    /// A line of text or JSON, above the status line on a tty.
    fn emit(&mut self, line: &str) {
        match &self.bar {
            Some(b) => b.println(line),
            None => {
                let mut err = std::io::stderr().lock();
                let _ = writeln!(err, "{line}");
                let _ = err.flush();
            }
        }
    }

    /// The status line, when a second has passed since the last.
    pub fn tick(&mut self, nic: &Nic) {
        if !self.active() || Instant::now() < self.next_at {
            return;
        }
        self.next_at = Instant::now() + EVERY;
        if let Some(s) = nic.live_status() {
            self.show(s, false);
        }
    }

    /// The run ended: the last status (on a tty, cleared: the summary
    /// follows) and how many errors of each cause there were in all.
    pub fn finish(&mut self, nic: &Nic) {
        if !self.active() {
            return;
        }
        let Some(s) = nic.live_status() else {
            return;
        };
        let by_cause = s.errors_by_cause();
        self.show(s, true);
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
        if self.mode != Progress::Json {
            for (cause, n) in by_cause {
                let shown = self.errors_seen.get(&cause).copied().unwrap_or(0);
                if n > shown.min(IN_FULL) {
                    self.emit(&format!(
                        "softspin: {}: {n} `{cause}` errors in all ({} shown above)",
                        self.cmd,
                        shown.min(IN_FULL)
                    ));
                }
            }
        }
    }

    fn show(&mut self, s: LiveStatus, last: bool) {
        self.new_drops(&s);
        let line = match self.mode {
            Progress::Json => status_json(&s, self.last.as_ref(), last).to_string(),
            _ => format!(
                "softspin: {}: {}",
                self.cmd,
                status_text(&s, self.last.as_ref())
            ),
        };
        match &self.bar {
            Some(b) => b.set_message(line),
            None => self.emit(&line),
        }
        self.last = Some(s);
    }

    /// Drops since the last status, the first few lines per cause.
    fn new_drops(&mut self, s: &LiveStatus) {
        for (cause, &total) in &s.drops {
            let before = self
                .last
                .as_ref()
                .and_then(|l| l.drops.get(cause))
                .copied()
                .unwrap_or(0);
            if total <= before {
                continue;
            }
            let k = self.drop_lines.entry(cause.clone()).or_default();
            *k += 1;
            if *k > IN_FULL {
                continue;
            }
            let quiet = *k == IN_FULL;
            let line = match self.mode {
                Progress::Json => {
                    let mut j = serde_json::json!({"event": "drop", "cause": cause, "count": total - before, "total": total});
                    if quiet {
                        j["counted_only_from_now"] = true.into();
                    }
                    j.to_string()
                }
                _ => format!(
                    "softspin: {}: {} frames dropped ({cause}), {total} in all{}",
                    self.cmd,
                    total - before,
                    if quiet {
                        "; further drops of this cause are only counted"
                    } else {
                        ""
                    }
                ),
            };
            self.emit(&line);
        }
    }
}

/// Per second of wall time between `prev` and `now`.
fn rate(now: u64, prev: u64, dt: f64) -> f64 {
    if dt > 0.0 {
        now.saturating_sub(prev) as f64 / dt
    } else {
        0.0
    }
}

/// One `--progress json` object (keys as in `nic --json` where they
/// exist; docs/live.md).
pub fn status_json(s: &LiveStatus, prev: Option<&LiveStatus>, last: bool) -> serde_json::Value {
    // Rates and occupancy since the last line, the first since attach.
    let zero = LiveStatus::default();
    let prev = prev.unwrap_or(&zero);
    let t = s.wire.wall_s - prev.wire.wall_s;
    let w = &s.wire;
    let per_s = |f: fn(&LiveStatus) -> u64| rate(f(s), f(prev), t);
    serde_json::json!({
        "event": "status",
        "final": last,
        "wall_s": w.wall_s,
        "nic_time_ns": s.nic_time_ps as f64 / 1000.0,
        "rx_frames": w.rx_frames,
        "matched": w.matched,
        "passed_to_kernel": w.passed_to_kernel,
        "fragments": {"matched": w.fragments_matched, "passed_to_kernel": w.fragments_passed},
        "tx_frames": w.tx_frames,
        "drops": s.drops,
        "unprocessed": w.unprocessed,
        "packets": s.packets,
        "invocations": s.invocations,
        "errors": s.errors,
        "errors_total": s.errors_total(),
        "hpus": s.hpus,
        "hpus_busy": s.hpus_busy,
        "hpu_occupancy": s.hpu_occupancy_since(prev),
        "per_s": {
            "rx_frames": per_s(|s| s.wire.rx_frames),
            "matched": per_s(|s| s.wire.matched),
            "tx_frames": per_s(|s| s.wire.tx_frames),
            "invocations": per_s(|s| s.invocations),
            "errors": per_s(LiveStatus::errors_total),
        },
    })
}

/// One status line of text.
pub fn status_text(s: &LiveStatus, prev: Option<&LiveStatus>) -> String {
    // Rates and occupancy since the last line, the first since attach.
    let zero = LiveStatus::default();
    let prev = prev.unwrap_or(&zero);
    let t = s.wire.wall_s - prev.wire.wall_s;
    let w = &s.wire;
    let per_s = |f: fn(&LiveStatus) -> u64| rate(f(s), f(prev), t);
    let causes = |m: &BTreeMap<String, u64>| {
        let v: Vec<String> = m
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(c, n)| format!("{c}: {n}"))
            .collect();
        if v.is_empty() {
            String::new()
        } else {
            format!(" ({})", v.join(", "))
        }
    };
    let drops: u64 = s.drops.values().sum();
    format!(
        "{:.1} s  in {} ({:.0}/s), matched {}, to kernel {}  out {} ({:.0}/s)  handlers {} ({:.0}/s)  HPUs {:.0} % ({}/{} busy)  errors {}{}  drops {}{}",
        w.wall_s,
        w.rx_frames,
        per_s(|s| s.wire.rx_frames),
        w.matched,
        w.passed_to_kernel,
        w.tx_frames,
        per_s(|s| s.wire.tx_frames),
        s.invocations,
        per_s(|s| s.invocations),
        s.hpu_occupancy_since(prev) * 100.0,
        s.hpus_busy,
        s.hpus,
        s.errors_total(),
        causes(&s.errors_by_cause()),
        drops,
        causes(&s.drops),
    )
}
