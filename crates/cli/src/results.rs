//! Results of `softspin sim` without a host program: per-message records
//! (`--records FILE.jsonl`), handler output on stdout in NIC-time order
//! (`--stdout`), and dumps of host memory and handler memory after the run
//! (`--dump-host`, `--dump-handler-mem`). Records and output are streamed
//! while the engine runs, so memory stays bounded by the messages and
//! output in flight, not by the length of the run. Everything is read
//! through the host API (`softspin_host::Nic`).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;
use softspin_host::{Ectx, MessageRecord, Nic, NicView, OutputRecord};

/// Bytes read from the NIC per step when dumping memory.
const DUMP_CHUNK: usize = 1 << 20;

/// Where results go while the engine runs.
pub struct Sinks {
    records: Option<(PathBuf, BufWriter<File>)>,
    stdout: bool,
    /// Output drained from the engine but not yet printed: a later drain
    /// may still bring earlier writes (HPUs run ahead in quanta).
    pending: Vec<OutputRecord>,
}

impl Sinks {
    pub fn new(nic: &mut Nic, records: Option<&Path>, stdout: bool) -> anyhow::Result<Sinks> {
        let records = match records {
            Some(p) => {
                nic.enable_message_log();
                let f = File::create(p)
                    .with_context(|| format!("creating --records file {}", p.display()))?;
                Some((p.to_path_buf(), BufWriter::new(f)))
            }
            None => None,
        };
        Ok(Sinks {
            records,
            stdout,
            pending: Vec::new(),
        })
    }

    /// Write what the NIC has finished so far; `last`: the run ended,
    /// write everything (messages still open get records without a
    /// completion).
    pub fn drain(&mut self, engine: &mut NicView<'_>, last: bool) -> anyhow::Result<()> {
        if let Some((path, w)) = &mut self.records {
            let mut recs = engine.drain_message_log();
            if last {
                recs.extend(engine.open_message_records());
            }
            for r in &recs {
                let line = record_json(engine, r);
                writeln!(w, "{line}").with_context(|| format!("writing {}", path.display()))?;
            }
            if last {
                w.flush()
                    .with_context(|| format!("writing {}", path.display()))?;
            }
        }
        if self.stdout {
            self.pending.extend(engine.drain_output());
            // Writes at or after the current instant may still be preceded
            // by writes of HPUs that have not run up to it yet.
            let now = engine.now_ps();
            self.pending.sort_by_key(|r| (r.time_ps, r.hpu));
            let ready = if last {
                self.pending.len()
            } else {
                self.pending.partition_point(|r| r.time_ps < now)
            };
            let out = std::io::stdout();
            let mut out = out.lock();
            for r in self.pending.drain(..ready) {
                print_output(&mut out, engine, &r)?;
            }
            out.flush()?;
        }
        Ok(())
    }
}

/// One JSON line of `--records`.
fn record_json(engine: &NicView<'_>, r: &MessageRecord) -> serde_json::Value {
    let ns = |ps: u64| ps as f64 / 1000.0;
    let name = engine.ectx_name(r.ectx).unwrap_or_default();
    serde_json::json!({
        "msg_id": r.msg_id,
        "ectx": name,
        "packets": r.packets,
        "first_arrival_ns": ns(r.first_arrival_ps),
        "last_arrival_ns": ns(r.last_arrival_ps),
        "completion_ns": r.completion_ps.map(ns),
        "errors": r.errors,
        "errors_total": r.errors_total,
        "host_writes": r.host_writes.iter().map(|&(addr, value)| serde_json::json!({"addr": addr, "value": value})).collect::<Vec<_>>(),
        "host_writes_total": r.host_writes_total,
    })
}

/// One `write` of a handler, each line prefixed with NIC time, ECTX,
/// message and HPU.
fn print_output(
    out: &mut impl Write,
    engine: &NicView<'_>,
    r: &OutputRecord,
) -> std::io::Result<()> {
    let name = engine.ectx_name(r.ectx).unwrap_or("?");
    let text = String::from_utf8_lossy(&r.bytes);
    for line in text.lines() {
        writeln!(
            out,
            "[{:.3} ns {name} msg {} hpu {}] {line}",
            r.time_ps as f64 / 1000.0,
            r.msg_id,
            r.hpu
        )?;
    }
    Ok(())
}

/// The file for one ECTX's dump: `path` itself with one ECTX, else
/// `path.NAME`.
fn dump_path(path: &Path, name: &str, several: bool) -> PathBuf {
    if several {
        let mut s = path.as_os_str().to_owned();
        s.push(format!(".{name}"));
        PathBuf::from(s)
    } else {
        path.to_path_buf()
    }
}

/// `--dump-host`: each ECTX's host window, raw.
pub fn dump_host(nic: &mut Nic, ectxs: &[Ectx], path: &Path) -> anyhow::Result<()> {
    for &e in ectxs {
        let w = nic.ectx_host_window(e)?;
        let p = dump_path(path, &nic.ectx_name(e)?, ectxs.len() > 1);
        let mut f = BufWriter::new(
            File::create(&p)
                .with_context(|| format!("creating --dump-host file {}", p.display()))?,
        );
        let mut off = 0u64;
        while off < w.size {
            let n = (w.size - off).min(DUMP_CHUNK as u64) as usize;
            let bytes = nic.host_read(w.base + off, n)?;
            f.write_all(&bytes)
                .with_context(|| format!("writing {}", p.display()))?;
            off += n as u64;
        }
        f.flush()
            .with_context(|| format!("writing {}", p.display()))?;
    }
    Ok(())
}

/// `--dump-handler-mem`: each ECTX's L2 handler memory, raw.
pub fn dump_handler_mem(nic: &Nic, ectxs: &[Ectx], path: &Path) -> anyhow::Result<()> {
    for &e in ectxs {
        let (base, size) = nic.ectx_handler_mem(e)?;
        let p = dump_path(path, &nic.ectx_name(e)?, ectxs.len() > 1);
        let mut w = BufWriter::new(
            File::create(&p)
                .with_context(|| format!("creating --dump-handler-mem file {}", p.display()))?,
        );
        let mut off = 0u32;
        while off < size {
            let n = (size - off).min(DUMP_CHUNK as u32);
            let bytes = nic.nic_read(base + off, n as usize)?;
            w.write_all(&bytes)
                .with_context(|| format!("writing {}", p.display()))?;
            off += n;
        }
        w.flush()
            .with_context(|| format!("writing {}", p.display()))?;
    }
    Ok(())
}

/// One ECTX's counters: its name, and (index, sum, count) by index.
type EctxCounters = (String, Vec<(u32, u64, u64)>);

/// What each ECTX's handlers pushed with `spin_push_counter`, in `ectxs`
/// order.
fn counters_of(nic: &Nic, ectxs: &[Ectx]) -> anyhow::Result<Vec<EctxCounters>> {
    ectxs
        .iter()
        .map(|&e| Ok((nic.ectx_name(e)?, nic.counters(e)?)))
        .collect()
}

/// The `counters` key of `sim --json` and `nic --json`: per ECTX name, a
/// list of `{index, sum, count}` (a host's proof of what its handlers did).
pub fn counters_json(nic: &Nic, ectxs: &[Ectx]) -> anyhow::Result<serde_json::Value> {
    let mut m = serde_json::Map::new();
    for (name, cs) in counters_of(nic, ectxs)? {
        let list: Vec<_> = cs
            .into_iter()
            .map(|(i, sum, n)| serde_json::json!({"index": i, "sum": sum, "count": n}))
            .collect();
        m.insert(name, list.into());
    }
    Ok(m.into())
}

/// The counters in the text summaries of `sim` and `nic`: one line per
/// ECTX and index, or `none`.
pub fn counters_text(nic: &Nic, ectxs: &[Ectx]) -> anyhow::Result<String> {
    use std::fmt::Write as _;
    let mut s = String::new();
    for (name, cs) in counters_of(nic, ectxs)? {
        for (i, sum, n) in cs {
            let _ = writeln!(
                s,
                "counter            `{name}` [{i}]: sum {sum} over {n} pushes"
            );
        }
    }
    if s.is_empty() {
        s = "counters           none (no handler called spin_push_counter)\n".into();
    }
    Ok(s)
}
