//! `softspin nic --timeline`: the Chrome trace-event timeline `sim
//! --timeline` writes (handler spans on HPU tracks, one track per cluster;
//! command spans: DMA, sends), for a live run that may last for days. The
//! engine hands over its events after every step; this ring keeps those that
//! ended in the last `window` of NIC time (and at most `max_events`), so the
//! file is bounded however long the run. The file's `otherData` says what
//! was dropped and anchors NIC time to the wall clock (docs/live.md,
//! "Timelines").

use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use softspin_engine::TimelineEvent;

/// Most events kept whatever the window: about 200 bytes each in memory
/// and in the file, so some 100 MB at most.
pub const MAX_EVENTS: usize = 500_000;

/// An event, serialised when taken (smaller than the event itself).
struct Kept {
    end_ps: u64,
    json: Box<str>,
}

/// The latest events of a live run, and the file they go to.
pub struct TimelineRing {
    out: BufWriter<File>,
    file: String,
    window_ps: u64,
    max_events: usize,
    kept: VecDeque<Kept>,
    dropped: u64,
    /// Of `dropped`, how many went because `max_events` were kept.
    dropped_over_cap: u64,
}

fn ps_of_us(us: f64) -> u64 {
    // Timeline times are NIC times (non-negative, finite).
    (us * 1e6).round() as u64
}

impl TimelineRing {
    /// Create `path` now, so that a bad path fails before the run, not
    /// after it.
    pub fn create(
        path: &Path,
        window: Duration,
        max_events: usize,
    ) -> anyhow::Result<TimelineRing> {
        let file = path.display().to_string();
        let f = File::create(path).with_context(|| format!("{file}: cannot create"))?;
        Ok(TimelineRing {
            out: BufWriter::new(f),
            file,
            window_ps: u64::try_from(window.as_nanos().saturating_mul(1000)).unwrap_or(u64::MAX),
            max_events,
            kept: VecDeque::new(),
            dropped: 0,
            dropped_over_cap: 0,
        })
    }

    /// Take events (in the order the engine recorded them: by end time).
    pub fn push(&mut self, events: Vec<TimelineEvent>) -> anyhow::Result<()> {
        for e in events {
            if self.kept.len() >= self.max_events && self.kept.pop_front().is_some() {
                self.dropped += 1;
                self.dropped_over_cap += 1;
            }
            let end_ps = ps_of_us(e.ts + e.dur.unwrap_or(0.0));
            let json = serde_json::to_string(&e)?.into_boxed_str();
            self.kept.push_back(Kept { end_ps, json });
        }
        Ok(())
    }

    /// Drop the events that ended before `now_ps - window`.
    pub fn trim(&mut self, now_ps: u64) {
        let cutoff = now_ps.saturating_sub(self.window_ps);
        // Events come in end order within a step, and steps in time order,
        // so the old ones are at the front (`write` filters any straggler).
        while self.kept.front().is_some_and(|k| k.end_ps < cutoff) {
            self.kept.pop_front();
            self.dropped += 1;
        }
    }

    /// Events kept (after the last `trim`).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.kept.len()
    }

    /// Write the file: the events that ended in the window before `now_ps`,
    /// and `otherData` with the wall clock of NIC time 0 (`time0`, since the
    /// UNIX epoch) and what was dropped.
    pub fn write(mut self, now_ps: u64, time0: Duration) -> anyhow::Result<()> {
        self.trim(now_ps);
        let cutoff = now_ps.saturating_sub(self.window_ps);
        let file = std::mem::take(&mut self.file);
        let ctx = || format!("writing {file}");
        let w = &mut self.out;
        w.write_all(b"{\"traceEvents\":[").with_context(ctx)?;
        let mut first = true;
        for k in &self.kept {
            if k.end_ps < cutoff {
                self.dropped += 1;
                continue;
            }
            if !first {
                w.write_all(b",").with_context(ctx)?;
            }
            first = false;
            w.write_all(k.json.as_bytes()).with_context(ctx)?;
        }
        // The trace format's `otherData` maps names to strings.
        let meta = serde_json::json!({
            "producer": "softspin nic --timeline",
            "clock": "ts and dur are microseconds of NIC time since the NIC attached; \
                      NIC time t happened at wall-clock (UNIX) time nic_time0_unix + t",
            "nic_time0_unix": format!("{}.{:09}", time0.as_secs(), time0.subsec_nanos()),
            "nic_time0_unix_ns": time0.as_nanos().to_string(),
            "window_s": (self.window_ps as f64 / 1e12).to_string(),
            "kept_from_us": (cutoff as f64 / 1e6).to_string(),
            "run_end_us": (now_ps as f64 / 1e6).to_string(),
            "dropped_events": self.dropped.to_string(),
            "dropped_over_cap": self.dropped_over_cap.to_string(),
            "max_events": self.max_events.to_string(),
        });
        write!(w, "],\"displayTimeUnit\":\"ns\",\"otherData\":{meta}}}").with_context(ctx)?;
        w.flush().with_context(ctx)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A handler span of HPU `hpu` from `ts` to `end` (µs).
    fn span(hpu: u32, ts: f64, end: f64) -> TimelineEvent {
        TimelineEvent {
            name: format!("h msg {hpu}"),
            cat: "handler",
            ph: "X",
            ts,
            dur: Some(end - ts),
            pid: 0,
            tid: hpu,
            args: None,
        }
    }

    const US: u64 = 1_000_000;

    fn read(path: &Path) -> serde_json::Value {
        let v = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        std::fs::remove_file(path).unwrap();
        v
    }

    fn tmp(tag: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!("softspin-ring-{}-{tag}.json", std::process::id()))
    }

    /// Only the events that ended within the window before the end stay;
    /// a span that started before the window and ended in it is kept.
    #[test]
    fn keeps_the_last_window() {
        let mut r =
            TimelineRing::create(&tmp("window"), Duration::from_micros(100), MAX_EVENTS).unwrap();
        r.push(vec![span(0, 0.0, 10.0), span(1, 50.0, 60.0)])
            .unwrap();
        r.trim(100 * US);
        assert_eq!(r.len(), 2, "all within 100 us of the end");
        r.push(vec![span(0, 90.0, 155.0), span(1, 150.0, 170.0)])
            .unwrap();
        // A straggler: ended before the events taken before it.
        r.push(vec![span(2, 20.0, 80.0)]).unwrap();
        r.trim(170 * US);
        // The front (ended before 70 us) went; the straggler waits behind
        // events that ended later, and `write` filters it.
        assert_eq!(r.len(), 3);
        let p = tmp("window");
        let time0 = Duration::new(1_800_000_000, 5);
        r.write(200 * US, time0).unwrap();
        let v = read(&p);
        let ts: Vec<f64> = v["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["ts"].as_f64().unwrap())
            .collect();
        assert_eq!(ts, [90.0, 150.0], "ended at or after 100 us");
        let m = &v["otherData"];
        assert_eq!(m["dropped_events"], "3");
        assert_eq!(m["dropped_over_cap"], "0");
        assert_eq!(m["kept_from_us"], "100");
        assert_eq!(m["run_end_us"], "200");
        assert_eq!(m["window_s"], "0.0001");
        assert_eq!(m["nic_time0_unix"], "1800000000.000000005");
        assert_eq!(m["nic_time0_unix_ns"], "1800000000000000005");
        assert_eq!(v["displayTimeUnit"], "ns");
    }

    /// However many events a window holds, at most `max_events` stay (the
    /// latest), and the file says how many went for that reason.
    #[test]
    fn the_cap_bounds_a_busy_window() {
        let mut r = TimelineRing::create(&tmp("cap"), Duration::from_secs(10), 3).unwrap();
        r.push((0..10).map(|k| span(k, k as f64, k as f64 + 0.5)).collect())
            .unwrap();
        assert_eq!(r.len(), 3);
        let p = tmp("cap");
        r.write(20 * US, Duration::ZERO).unwrap();
        let v = read(&p);
        let hpus: Vec<u64> = v["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["tid"].as_u64().unwrap())
            .collect();
        assert_eq!(hpus, [7, 8, 9]);
        assert_eq!(v["otherData"]["dropped_events"], "7");
        assert_eq!(v["otherData"]["dropped_over_cap"], "7");
    }

    /// A path that cannot be created fails at once, naming it.
    #[test]
    fn a_bad_path_fails_before_the_run() {
        let p = Path::new("/nonexistent-softspin-dir/t.json");
        let e = TimelineRing::create(p, Duration::from_secs(1), 1)
            .err()
            .unwrap();
        assert!(
            format!("{e:#}").starts_with("/nonexistent-softspin-dir/t.json: cannot create"),
            "{e:#}"
        );
    }

    /// An empty run writes a valid, empty trace.
    #[test]
    fn an_empty_run_is_valid_json() {
        let r = TimelineRing::create(&tmp("empty"), Duration::from_secs(1), MAX_EVENTS).unwrap();
        let p = tmp("empty");
        r.write(0, Duration::ZERO).unwrap();
        let v = read(&p);
        assert_eq!(v["traceEvents"].as_array().unwrap().len(), 0);
        assert_eq!(v["otherData"]["dropped_events"], "0");
    }
}
