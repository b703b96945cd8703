//! PsPIN-style text traces (the `src dst size ipg msgid is_last` format of
//! PsPIN's simulation traffic, seed 001 §4): [`TraceSource`].

use super::*;

/// A PsPIN-style text trace (format in the module doc), read line by line.
pub struct TraceSource {
    file: String,
    reader: BufReader<File>,
    kind: FrameKind,
    line_no: u64,
    time_ps: u64,
    index: u64,
    buf: Vec<u8>,
    done: bool,
    /// PsPIN's header line `SOURCES PACKETS MAX_SIZE`, when the trace has
    /// one: (lines it announces, largest size), checked as lines come.
    header: Option<(u64, usize)>,
    /// Packet and wait lines read.
    lines: u64,
}

impl TraceSource {
    /// Open a trace; frames are built as `frame`.
    pub fn open(path: &Path, frame: FrameKind) -> Result<Self, TrafficError> {
        let file = path.display().to_string();
        let f = File::open(path).map_err(|source| TrafficError::Io {
            file: file.clone(),
            op: "open trace",
            source,
        })?;
        Ok(TraceSource {
            file,
            reader: BufReader::new(f),
            kind: frame,
            line_no: 0,
            time_ps: 0,
            index: 0,
            buf: Vec::new(),
            done: false,
            header: None,
            lines: 0,
        })
    }

    fn err(&self, msg: String) -> TrafficError {
        TrafficError::Trace {
            file: self.file.clone(),
            line: self.line_no,
            msg,
        }
    }

    /// Parse one non-comment line.
    fn parse_line(&self, line: &str) -> Result<TraceLine, String> {
        const FIELDS: &str = "`src dst size ipg msgid is_last`";
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() != 6 {
            return Err(format!("expected 6 fields {FIELDS}, found {}", f.len()));
        }
        let src = parse_addr(f[0]).map_err(|m| format!("bad `src` {:?}: {m}", f[0]))?;
        let dst = parse_addr(f[1]).map_err(|m| format!("bad `dst` {:?}: {m}", f[1]))?;
        let size: usize = f[2]
            .parse()
            .map_err(|_| format!("bad `size` {:?}: expected a decimal byte count", f[2]))?;
        if let Some((_, max)) = self.header.filter(|&(_, max)| size > max) {
            return Err(format!(
                "`size` {size} is above the header's MAX_SIZE {max}"
            ));
        }
        // Size 0: a wait line (PsPIN), no packet.
        if let Some(m) = frame_size_problem(self.kind, size).filter(|_| size > 0) {
            return Err(format!("bad `size`: {m}"));
        }
        let ipg = parse_ns_as_ps(f[3]).map_err(|m| format!("bad `ipg` {:?}: {m}", f[3]))?;
        let msg_id: u32 = f[4]
            .parse()
            .map_err(|_| format!("bad `msgid` {:?}: expected a decimal u32", f[4]))?;
        let eom = match f[5] {
            "0" => false,
            "1" => true,
            other => return Err(format!("bad `is_last` {other:?}: must be 0 or 1")),
        };
        Ok(TraceLine {
            src,
            dst,
            size,
            ipg_ps: ipg,
            msg_id,
            eom,
        })
    }
}

/// The fields of one trace line.
pub(super) struct TraceLine {
    pub(super) src: [u8; 4],
    pub(super) dst: [u8; 4],
    pub(super) size: usize,
    pub(super) ipg_ps: u64,
    pub(super) msg_id: u32,
    pub(super) eom: bool,
}

/// PsPIN's header `SOURCES PACKETS MAX_SIZE`: (PACKETS, MAX_SIZE).
fn parse_header(f: &[&str]) -> Result<(u64, usize), String> {
    let n = |k: usize, name: &str| {
        f[k].parse::<u64>().map_err(|_| format!("bad header `{name}` {:?}: expected a decimal count (header: `SOURCES PACKETS MAX_SIZE`)", f[k]))
    };
    let (_sources, packets, max) = (n(0, "SOURCES")?, n(1, "PACKETS")?, n(2, "MAX_SIZE")?);
    Ok((packets, usize::try_from(max).unwrap_or(usize::MAX)))
}

/// A dotted quad, or a decimal node id n < 2^24 meaning 10.(n>>16).(n>>8).n.
pub(super) fn parse_addr(s: &str) -> Result<[u8; 4], String> {
    if s.contains('.') {
        s.parse::<std::net::Ipv4Addr>()
            .map(|a| a.octets())
            .map_err(|_| "expected a dotted-quad IPv4 address or a node id".to_string())
    } else {
        let n: u32 = s
            .parse()
            .map_err(|_| "expected a dotted-quad IPv4 address or a node id".to_string())?;
        if n >= 1 << 24 {
            return Err(format!("node id must be below {}", 1u32 << 24));
        }
        Ok([10, (n >> 16) as u8, (n >> 8) as u8, n as u8])
    }
}

/// Non-negative decimal nanoseconds to picoseconds, exactly when possible.
pub(super) fn parse_ns_as_ps(s: &str) -> Result<u64, String> {
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    let digits = |t: &str| t.bytes().all(|b| b.is_ascii_digit());
    if !(int.is_empty() && frac.is_empty()) && digits(int) && digits(frac) {
        let too_big = || "too large".to_string();
        let whole: u64 = if int.is_empty() {
            0
        } else {
            int.parse().map_err(|_| too_big())?
        };
        let fb = frac.as_bytes();
        let mut ps_frac: u64 = 0;
        for k in 0..3 {
            ps_frac = ps_frac * 10 + fb.get(k).map_or(0, |b| u64::from(b - b'0'));
        }
        // Round to the nearest picosecond.
        if fb.get(3).is_some_and(|&b| b >= b'5') {
            ps_frac += 1;
        }
        return whole
            .checked_mul(1000)
            .and_then(|p| p.checked_add(ps_frac))
            .ok_or_else(too_big);
    }
    // Anything else (e.g. exponent notation) through f64.
    let v: f64 = s
        .parse()
        .map_err(|_| "expected a non-negative decimal number of nanoseconds".to_string())?;
    if !v.is_finite() || v < 0.0 {
        return Err("must be a finite, non-negative number of nanoseconds".to_string());
    }
    let ps = (v * 1000.0).round();
    if ps >= u64::MAX as f64 {
        return Err("too large".to_string());
    }
    Ok(ps as u64)
}

impl Source for TraceSource {
    fn next_arrival(&mut self) -> Result<Option<Arrival>, TrafficError> {
        if self.done {
            return Ok(None);
        }
        let r = self.next_inner();
        if !matches!(r, Ok(Some(_))) {
            self.done = true;
        }
        r
    }
}

impl TraceSource {
    fn next_inner(&mut self) -> Result<Option<Arrival>, TrafficError> {
        loop {
            self.buf.clear();
            let n = softspin_input::read_line(
                &mut self.reader,
                &mut self.buf,
                softspin_input::LINE_CAP,
            );
            self.line_no += 1;
            match n {
                Ok(0) => {
                    return match self.header {
                        Some((want, _)) if want != self.lines => Err(self.err(format!(
                            "the header announces {want} lines, the trace has {}",
                            self.lines
                        ))),
                        _ => Ok(None),
                    };
                }
                Ok(_) => {}
                Err(e) => return Err(self.err(format!("read error: {e}"))),
            }
            let line = match std::str::from_utf8(&self.buf) {
                Ok(l) => l.trim(),
                Err(_) => return Err(self.err("line is not valid UTF-8".to_string())),
            };
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if self.lines == 0 && self.header.is_none() {
                let f: Vec<&str> = line.split_whitespace().collect();
                if f.len() == 3 {
                    self.header = Some(parse_header(&f).map_err(|m| self.err(m))?);
                    continue;
                }
            }
            self.lines += 1;
            let TraceLine {
                src,
                dst,
                size,
                ipg_ps: ipg,
                msg_id,
                eom,
            } = self.parse_line(line).map_err(|m| self.err(m))?;
            self.time_ps = self
                .time_ps
                .checked_add(ipg)
                .ok_or_else(|| self.err("arrival time overflows u64 picoseconds".to_string()))?;
            if size == 0 {
                continue;
            }
            let frame = build_frame(
                self.kind,
                size,
                src,
                dst,
                DEFAULT_UDP_PORT,
                DEFAULT_UDP_PORT,
                Payload::Sequence.filler(self.index),
            )
            .map_err(|e| self.err(e.to_string()))?;
            self.index += 1;
            return Ok(Some(Arrival {
                time_ps: self.time_ps,
                frame,
                msg_id,
                eom,
                origin: format!("{}:{}", self.file, self.line_no).into(),
                ectx: None,
            }));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::traffic::tests::*;
    use std::path::PathBuf;

    fn write_trace(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn trace_exact_arrivals() {
        let d = scratch("trace");
        let p = write_trace(
            &d,
            "small.trace",
            "# src dst size ipg msgid is_last\n\
             10.0.0.1 10.0.0.2 64 1.28 5 0\n\
             \n\
             \t# indented comment\n\
             1 258 100 0.5 5 1\r\n\
             192.168.0.3   192.168.0.4\t1024 20.4805 6 1\n\
             3 4 64 1e3 7 1",
        );
        let mut t = TraceSource::open(&p, FrameKind::Eth).unwrap();
        let a = drain(&mut t);
        assert_eq!(a.len(), 4);
        let times: Vec<u64> = a.iter().map(|x| x.time_ps).collect();
        assert_eq!(
            times,
            vec![1280, 1780, 1780 + 20481, 1780 + 20481 + 1_000_000]
        );
        let ids: Vec<(u32, bool)> = a.iter().map(|x| (x.msg_id, x.eom)).collect();
        assert_eq!(ids, vec![(5, false), (5, true), (6, true), (7, true)]);
        let sizes: Vec<usize> = a.iter().map(|x| x.frame.len()).collect();
        assert_eq!(sizes, vec![64, 100, 1024, 64]);
        let file = p.display().to_string();
        let origins: Vec<String> = a.iter().map(|x| x.origin.to_string()).collect();
        assert_eq!(
            origins,
            vec![
                format!("{file}:2"),
                format!("{file}:5"),
                format!("{file}:6"),
                format!("{file}:7")
            ]
        );
        // Addresses: dotted quads and node ids.
        let ip = |f: &Vec<u8>| (f[26..30].to_vec(), f[30..34].to_vec());
        assert_eq!(ip(&a[0].frame), (vec![10, 0, 0, 1], vec![10, 0, 0, 2]));
        assert_eq!(ip(&a[1].frame), (vec![10, 0, 0, 1], vec![10, 0, 1, 2]));
        assert_eq!(
            ip(&a[2].frame),
            (vec![192, 168, 0, 3], vec![192, 168, 0, 4])
        );
        // Ports 9330, Sequence payload numbered by packet index.
        assert_eq!(a[1].frame[34..38], [0x24, 0x72, 0x24, 0x72]);
        assert_eq!(a[1].frame[42], 7);
        assert_eq!(t.next_arrival().unwrap(), None);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn trace_ip_frames() {
        let d = scratch("traceip");
        let p = write_trace(&d, "ip.trace", "1 2 28 0 0 1\n1 2 65535 0 1 1\n");
        let a = drain(&mut TraceSource::open(&p, FrameKind::Ip).unwrap());
        assert_eq!(a[0].frame.len(), 28);
        assert_eq!(a[0].frame[0], 0x54);
        assert_eq!(a[1].frame[2..4], [0xFF, 0xFF]);
        assert!(a.iter().all(|x| x.time_ps == 0));
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn pspin_header_and_wait_lines() {
        let d = scratch("tracepspin");
        // Header: 1 source, 4 lines, packets of at most 1024 B; the size-0
        // line adds its 100 ns to the gap before the next packet.
        let p = write_trace(
            &d,
            "p.trace",
            "1 4 1024\n1 2 64 10 0 0\n1 2 0 100 0 0\n1 2 64 10 0 1\n1 2 1024 0 1 1\n",
        );
        let a = drain(&mut TraceSource::open(&p, FrameKind::Ip).unwrap());
        let got: Vec<(u64, usize)> = a.iter().map(|x| (x.time_ps, x.frame.len())).collect();
        assert_eq!(got, vec![(10_000, 64), (120_000, 64), (120_000, 1024)]);
        // The header is checked: line count and largest size.
        let mut errs = Vec::new();
        for (name, text) in [
            ("count", "1 5 1024\n1 2 64 10 0 1\n"),
            ("max", "1 1 100\n1 2 200 10 0 1\n"),
            ("hdr", "1 x 100\n"),
        ] {
            let p = write_trace(&d, name, text);
            let mut t = TraceSource::open(&p, FrameKind::Ip).unwrap();
            let e = loop {
                match t.next_arrival() {
                    Ok(Some(_)) => continue,
                    Ok(None) => panic!("{name}: no error"),
                    Err(e) => break e.to_string(),
                }
            };
            errs.push(e);
        }
        assert!(
            errs[0].contains("announces 5 lines, the trace has 1"),
            "{}",
            errs[0]
        );
        assert!(
            errs[1].contains("above the header's MAX_SIZE 100"),
            "{}",
            errs[1]
        );
        assert!(errs[2].contains("bad header `PACKETS`"), "{}", errs[2]);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn trace_malformed_lines() {
        let d = scratch("tracebad");
        let good = "10.0.0.1 10.0.0.2 64 1 0 0\n# c\n";
        // (bad line, frame kind, text expected in the message); the bad line is line 3.
        let cases: Vec<(&str, FrameKind, &str)> = vec![
            ("1 2 64 1 0", FrameKind::Eth, "6 fields"),
            ("1 2 64 1 0 1 9", FrameKind::Eth, "6 fields"),
            ("1 2 abc 1 0 1", FrameKind::Eth, "`size`"),
            ("1 2 64 x 0 1", FrameKind::Eth, "`ipg`"),
            ("1 2 64 -1 0 1", FrameKind::Eth, "`ipg`"),
            ("1 2 64 1 -3 1", FrameKind::Eth, "`msgid`"),
            ("1 2 64 1 4294967296 1", FrameKind::Eth, "`msgid`"),
            ("1 2 64 1 0 2", FrameKind::Eth, "`is_last`"),
            ("1 2 64 1 0 yes", FrameKind::Eth, "`is_last`"),
            ("1 2 41 1 0 1", FrameKind::Eth, "too small"),
            ("1 2 27 1 0 1", FrameKind::Ip, "too small"),
            ("1 2 65536 1 0 1", FrameKind::Ip, "too large"),
            ("10.0.0.256 2 64 1 0 1", FrameKind::Eth, "`src`"),
            ("1 16777216 64 1 0 1", FrameKind::Eth, "`dst`"),
            ("1 2 64 99999999999999999999 0 1", FrameKind::Eth, "`ipg`"),
        ];
        for (k, (bad, kind, what)) in cases.iter().enumerate() {
            let name = format!("bad{k}.trace");
            let p = write_trace(&d, &name, &format!("{good}{bad}\n1 2 64 1 0 1\n"));
            let mut t = TraceSource::open(&p, *kind).unwrap();
            assert!(t.next_arrival().unwrap().is_some());
            let e = t.next_arrival().expect_err(bad);
            let msg = e.to_string();
            assert!(msg.contains(&name), "{msg}");
            assert!(msg.contains(&format!("{name}:3:")), "{msg}");
            assert!(msg.contains(what), "case {bad:?}: {msg}");
            assert_eq!(
                t.next_arrival().unwrap(),
                None,
                "source stops after an error"
            );
        }
        // Time overflow.
        let p = write_trace(
            &d,
            "ovf.trace",
            "1 2 64 18446744073709551 0 1\n1 2 64 18446744073709551 0 1\n",
        );
        let mut t = TraceSource::open(&p, FrameKind::Eth).unwrap();
        assert!(t.next_arrival().unwrap().is_some());
        assert!(t
            .next_arrival()
            .unwrap_err()
            .to_string()
            .contains("ovf.trace:2:"));
        // Missing file.
        let e = TraceSource::open(&d.join("nope.trace"), FrameKind::Eth)
            .err()
            .unwrap();
        assert!(e.to_string().contains("nope.trace"), "{e}");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn address_parsing() {
        assert_eq!(parse_addr("0"), Ok([10, 0, 0, 0]));
        assert_eq!(parse_addr("258"), Ok([10, 0, 1, 2]));
        assert_eq!(parse_addr("16777215"), Ok([10, 255, 255, 255]));
        assert_eq!(parse_addr("65539"), Ok([10, 1, 0, 3]));
        assert_eq!(parse_addr("1.2.3.4"), Ok([1, 2, 3, 4]));
        assert!(parse_addr("16777216").is_err());
        assert!(parse_addr("1.2.3").is_err());
        assert!(parse_addr("-1").is_err());
    }

    #[test]
    fn ipg_parsing() {
        assert_eq!(parse_ns_as_ps("0"), Ok(0));
        assert_eq!(parse_ns_as_ps("12"), Ok(12_000));
        assert_eq!(parse_ns_as_ps("1.28"), Ok(1280));
        assert_eq!(parse_ns_as_ps(".5"), Ok(500));
        assert_eq!(parse_ns_as_ps("3."), Ok(3000));
        assert_eq!(parse_ns_as_ps("0.0014"), Ok(1));
        assert_eq!(parse_ns_as_ps("0.0015"), Ok(2));
        assert_eq!(parse_ns_as_ps("2.5e1"), Ok(25_000));
        assert!(parse_ns_as_ps(".").is_err());
        assert!(parse_ns_as_ps("inf").is_err());
        assert!(parse_ns_as_ps("-0.5").is_err());
    }
}
