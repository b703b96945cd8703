//! pcap / pcapng captures of Ethernet frames (FPsPIN's wire format, seed 000
//! §3.2.1): [`PcapSource`] reads them, [`write_pcap`] writes the packets
//! handlers sent.

use super::*;

pub(super) enum PcapInner {
    Classic {
        reader: PcapReader<File>,
        nanos: bool,
    },
    Ng(PcapNgReader<File>),
}

/// Packets of a pcap / pcapng capture of Ethernet frames.
pub struct PcapSource {
    file: String,
    inner: PcapInner,
    clock: Option<LineClock>,
    first_ps: Option<u128>,
    last_ps: u128,
    index: u64,
    done: bool,
}

pub(super) const PCAP_MAGICS: [[u8; 4]; 4] = [
    [0xA1, 0xB2, 0xC3, 0xD4],
    [0xD4, 0xC3, 0xB2, 0xA1],
    [0xA1, 0xB2, 0x3C, 0x4D],
    [0x4D, 0x3C, 0xB2, 0xA1],
];
pub(super) const PCAPNG_MAGIC: [u8; 4] = [0x0A, 0x0D, 0x0D, 0x0A];
pub(super) const LINKTYPE_ETHERNET: u32 = 1;

pub(super) fn pcap_error_text(e: &PcapError) -> String {
    match e {
        PcapError::IoError(io) if io.kind() == io::ErrorKind::UnexpectedEof => {
            "truncated or corrupt: the file ends inside this record (or its length field is bogus)"
                .to_string()
        }
        PcapError::IoError(io) => format!("read error: {io}"),
        other => format!("corrupt: {other}"),
    }
}

impl PcapSource {
    /// Open a capture. With `rate_gbps` = Some(r), timestamps are ignored and
    /// packets arrive back-to-back at r Gbit/s; with None, each arrives at its
    /// timestamp minus the first packet's.
    pub fn open(path: &Path, rate_gbps: Option<f64>) -> Result<Self, TrafficError> {
        let file = path.display().to_string();
        let clock = match rate_gbps {
            Some(r) => Some(LineClock::new(r).map_err(|msg| TrafficError::Param {
                param: "rate_gbps",
                msg,
            })?),
            None => None,
        };
        let io_err = |source| TrafficError::Io {
            file: file.clone(),
            op: "read pcap",
            source,
        };
        let whole = |msg: String| TrafficError::PcapFile {
            file: file.clone(),
            msg,
        };
        let mut f = File::open(path).map_err(|source| TrafficError::Io {
            file: file.clone(),
            op: "open pcap",
            source,
        })?;
        let mut magic = [0u8; 4];
        match f.read_exact(&mut magic) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                return Err(whole("too short to be a pcap file".to_string()))
            }
            Err(e) => return Err(io_err(e)),
        }
        f.seek(SeekFrom::Start(0)).map_err(io_err)?;
        let inner = if PCAP_MAGICS.contains(&magic) {
            let reader = PcapReader::new(f)
                .map_err(|e| whole(format!("bad pcap header: {}", pcap_error_text(&e))))?;
            let h = reader.header();
            let link = u32::from(h.datalink);
            if link != LINKTYPE_ETHERNET {
                return Err(whole(format!(
                    "link type {link} ({:?}) is not Ethernet (LINKTYPE_ETHERNET = 1)",
                    h.datalink
                )));
            }
            PcapInner::Classic {
                reader,
                nanos: h.ts_resolution == TsResolution::NanoSecond,
            }
        } else if magic == PCAPNG_MAGIC {
            let reader = PcapNgReader::new(f).map_err(|e| {
                whole(format!(
                    "bad pcapng section header: {}",
                    pcap_error_text(&e)
                ))
            })?;
            PcapInner::Ng(reader)
        } else {
            return Err(whole(format!(
                "not a pcap or pcapng file (magic bytes {:02x} {:02x} {:02x} {:02x})",
                magic[0], magic[1], magic[2], magic[3]
            )));
        };
        Ok(PcapSource {
            file,
            inner,
            clock,
            first_ps: None,
            last_ps: 0,
            index: 0,
            done: false,
        })
    }

    fn err(&self, msg: String) -> TrafficError {
        TrafficError::PcapPacket {
            file: self.file.clone(),
            index: self.index,
            msg,
        }
    }

    /// Next packet as (absolute timestamp in ps, captured length == original length, data).
    fn next_raw(&mut self) -> Result<Option<(u128, Vec<u8>)>, TrafficError> {
        let (abs_ps, data, orig_len) = match &mut self.inner {
            PcapInner::Classic { reader, nanos } => {
                let nanos = *nanos;
                let raw = match reader.next_raw_packet() {
                    None => return Ok(None),
                    Some(Err(e)) => {
                        let m = pcap_error_text(&e);
                        return Err(self.err(m));
                    }
                    Some(Ok(raw)) => raw,
                };
                let (frac_limit, ps_per_unit) = if nanos {
                    (1_000_000_000, 1_000)
                } else {
                    (1_000_000, 1_000_000)
                };
                if raw.ts_frac >= frac_limit {
                    let m = format!(
                        "bad timestamp: fraction {} is not below {frac_limit}",
                        raw.ts_frac
                    );
                    return Err(self.err(m));
                }
                let abs = u128::from(raw.ts_sec) * PS_PER_S + u128::from(raw.ts_frac) * ps_per_unit;
                let orig = raw.orig_len;
                (abs, raw.data.into_owned(), orig)
            }
            PcapInner::Ng(reader) => loop {
                let (iface, units, data, orig) = match reader.next_block() {
                    None => return Ok(None),
                    Some(Err(e)) => {
                        let m = format!("pcapng block: {}", pcap_error_text(&e));
                        return Err(self.err(m));
                    }
                    Some(Ok(Block::EnhancedPacket(p))) => {
                        // pcap-file stores the raw timestamp units in a Duration's nanoseconds.
                        (p.interface_id, p.timestamp.as_nanos(), p.data.into_owned(), p.original_len)
                    }
                    Some(Ok(Block::SimplePacket(_) | Block::Packet(_))) => {
                        return Err(self.err(
                            "unsupported pcapng packet block (simple or obsolete); only enhanced packet blocks are read"
                                .to_string(),
                        ))
                    }
                    Some(Ok(_)) => continue,
                };
                let Some(idb) = reader.interfaces().get(iface as usize) else {
                    return Err(self.err(format!("no interface description for interface {iface}")));
                };
                let link = u32::from(idb.linktype);
                if link != LINKTYPE_ETHERNET {
                    let m = format!(
                        "link type {link} ({:?}) is not Ethernet (LINKTYPE_ETHERNET = 1)",
                        idb.linktype
                    );
                    return Err(self.err(m));
                }
                let mut tsresol = 6u8; // pcapng default: microseconds
                let mut offset_s = 0u64;
                for opt in &idb.options {
                    match opt {
                        InterfaceDescriptionOption::IfTsResol(r) => tsresol = *r,
                        InterfaceDescriptionOption::IfTsOffset(o) => offset_s = *o,
                        _ => {}
                    }
                }
                let Some(abs) =
                    ng_units_to_ps(units, tsresol).map(|p| p + u128::from(offset_s) * PS_PER_S)
                else {
                    return Err(self.err("timestamp out of range".to_string()));
                };
                break (abs, data, orig);
            },
        };
        if data.len() as u64 != u64::from(orig_len) {
            return Err(self.err(format!(
                "only {} of its {orig_len} bytes were captured (snap length too small)",
                data.len()
            )));
        }
        Ok(Some((abs_ps, data)))
    }

    fn next_inner(&mut self) -> Result<Option<Arrival>, TrafficError> {
        let Some((abs_ps, frame)) = self.next_raw()? else {
            return Ok(None);
        };
        let time_ps = match &mut self.clock {
            Some(clock) => {
                let t = clock.advance(frame.len());
                t.ok_or_else(|| self.err("arrival time overflows u64 picoseconds".to_string()))?
            }
            None => {
                let first = *self.first_ps.get_or_insert(abs_ps);
                if abs_ps < self.last_ps {
                    return Err(self.err(format!(
                        "timestamp goes backwards ({} ps before the previous packet's)",
                        self.last_ps - abs_ps
                    )));
                }
                self.last_ps = abs_ps;
                u64::try_from(abs_ps - first).map_err(|_| {
                    self.err("time since the first packet overflows u64 picoseconds".to_string())
                })?
            }
        };
        let index = self.index;
        self.index += 1;
        Ok(Some(Arrival {
            time_ps,
            frame,
            msg_id: index as u32,
            eom: true,
            origin: format!("{}#{index}", self.file).into(),
            ectx: None,
        }))
    }
}

/// pcapng timestamp units to ps: if_tsresol bit 7 clear = 10^-n s, set = 2^-n s.
pub(super) fn ng_units_to_ps(units: u128, tsresol: u8) -> Option<u128> {
    let n = u32::from(tsresol & 0x7F);
    if tsresol & 0x80 == 0 {
        if n <= 12 {
            units.checked_mul(10u128.pow(12 - n))
        } else {
            Some(10u128.checked_pow(n - 12).map_or(0, |d| units / d))
        }
    } else {
        let scaled = units.checked_mul(PS_PER_S)?;
        Some(if n >= 128 { 0 } else { scaled >> n })
    }
}

impl Source for PcapSource {
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

/// Write packets (time_ps, bytes) to a pcap file (nanosecond timestamps;
/// times are truncated to whole ns), with link type Ethernet for
/// `FrameKind::Eth` and raw IP (LINKTYPE_RAW, 101) for `FrameKind::Ip`
/// (PsPIN-layout headers, so dissectors will not decode those).
pub fn write_pcap(
    path: &Path,
    kind: FrameKind,
    packets: &[(u64, Vec<u8>)],
) -> Result<(), TrafficError> {
    let longest = packets.iter().map(|(_, d)| d.len()).max().unwrap_or(0);
    let mut sink = PcapSink::create(path, kind, longest)?;
    for (t, data) in packets {
        sink.write(*t, data)?;
    }
    sink.finish()
}

/// A pcap file written packet by packet as they come (the live NIC's
/// `--pcap-out`): memory stays bounded however long the run.
pub struct PcapSink {
    w: PcapWriter<BufWriter<File>>,
    file: String,
    index: u64,
}

impl PcapSink {
    /// Create `path`; packets up to `longest` bytes (at least
    /// MAX_FRAME_SIZE) are kept whole.
    pub fn create(path: &Path, kind: FrameKind, longest: usize) -> Result<PcapSink, TrafficError> {
        let file = path.display().to_string();
        let f = File::create(path).map_err(|source| TrafficError::Io {
            file: file.clone(),
            op: "create pcap",
            source,
        })?;
        let Ok(snaplen) = u32::try_from(longest.max(MAX_FRAME_SIZE)) else {
            return Err(TrafficError::PcapFile {
                file,
                msg: format!("a packet of {longest} B is too long for pcap"),
            });
        };
        let header = PcapHeader {
            version_major: 2,
            version_minor: 4,
            ts_correction: 0,
            ts_accuracy: 0,
            snaplen,
            datalink: match kind {
                FrameKind::Eth => DataLink::ETHERNET,
                FrameKind::Ip => DataLink::RAW,
            },
            ts_resolution: TsResolution::NanoSecond,
            endianness: Endianness::native(),
        };
        let w = PcapWriter::with_header(BufWriter::new(f), header)
            .map_err(|e| Self::err(&file, e, None))?;
        Ok(PcapSink { w, file, index: 0 })
    }

    fn err(file: &str, e: PcapError, index: Option<u64>) -> TrafficError {
        match (e, index) {
            (PcapError::IoError(source), _) => TrafficError::Io {
                file: file.to_string(),
                op: "write pcap",
                source,
            },
            (other, Some(index)) => TrafficError::PcapPacket {
                file: file.to_string(),
                index,
                msg: other.to_string(),
            },
            (other, None) => TrafficError::PcapFile {
                file: file.to_string(),
                msg: other.to_string(),
            },
        }
    }

    /// Append one packet, sent at `time_ps`.
    pub fn write(&mut self, time_ps: u64, data: &[u8]) -> Result<(), TrafficError> {
        let pkt = PcapPacket::new(
            Duration::from_nanos(crate::units::Ps(time_ps).to_ns().0),
            data.len() as u32,
            data,
        );
        let index = self.index;
        self.index += 1;
        self.w
            .write_packet(&pkt)
            .map_err(|e| Self::err(&self.file, e, Some(index)))?;
        Ok(())
    }

    /// Flush and close.
    pub fn finish(self) -> Result<(), TrafficError> {
        let file = self.file;
        self.w
            .into_writer()
            .flush()
            .map_err(|source| TrafficError::Io {
                file,
                op: "write pcap",
                source,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::traffic::tests::*;

    fn eth_frames(n: usize) -> Vec<Vec<u8>> {
        (0..n)
            .map(|k| {
                build_frame(
                    FrameKind::Eth,
                    60 + 37 * k,
                    [10, 0, 0, 1],
                    [10, 0, 0, 2],
                    1,
                    2,
                    Payload::Sequence.filler(k as u64),
                )
                .unwrap()
            })
            .collect()
    }

    #[test]
    fn pcap_round_trip_timestamps() {
        let d = scratch("pcap");
        let p = d.join("rt.pcap");
        let frames = eth_frames(5);
        let times = [
            5_000_000u64,
            5_001_000,
            5_001_000,
            7_000_000_000_000,
            7_000_000_123_000,
        ];
        let pkts: Vec<(u64, Vec<u8>)> = times.iter().copied().zip(frames.iter().cloned()).collect();
        write_pcap(&p, FrameKind::Eth, &pkts).unwrap();
        let a = drain(&mut PcapSource::open(&p, None).unwrap());
        assert_eq!(a.len(), 5);
        for (k, x) in a.iter().enumerate() {
            assert_eq!(x.frame, frames[k]);
            assert_eq!(x.time_ps, times[k] - times[0]);
            assert_eq!(x.msg_id, k as u32);
            assert!(x.eom);
            assert_eq!(x.origin, format!("{}#{k}", p.display()));
        }
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn pcap_round_trip_generator_at_rate() {
        let d = scratch("pcaprate");
        let p = d.join("gen.pcap");
        let g = gen(GenConfig {
            messages: 4,
            packets_per_message: 3,
            size: 64,
            frame: FrameKind::Eth,
            ..Default::default()
        });
        let pkts: Vec<(u64, Vec<u8>)> = g.iter().map(|a| (a.time_ps, a.frame.clone())).collect();
        write_pcap(&p, FrameKind::Eth, &pkts).unwrap();
        // At the same rate the times are the generator's again.
        let a = drain(&mut PcapSource::open(&p, Some(400.0)).unwrap());
        assert_eq!(a.len(), 12);
        for (x, y) in a.iter().zip(&g) {
            assert_eq!(x.frame, y.frame);
            assert_eq!(x.time_ps, y.time_ps);
        }
        // From timestamps: truncated to ns, relative to the first.
        let a = drain(&mut PcapSource::open(&p, None).unwrap());
        for (x, y) in a.iter().zip(&g) {
            assert_eq!(x.time_ps, y.time_ps / 1000 * 1000 - 1000);
        }
        let e = PcapSource::open(&p, Some(0.0)).err().unwrap();
        assert!(e.to_string().contains("rate_gbps"), "{e}");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn pcap_microsecond_big_endian_file() {
        // Hand-made classic pcap: big-endian, microsecond resolution.
        let d = scratch("pcapus");
        let p = d.join("us.pcap");
        let frames = eth_frames(2);
        let mut b = Vec::new();
        b.extend_from_slice(&0xA1B2C3D4u32.to_be_bytes());
        b.extend_from_slice(&2u16.to_be_bytes());
        b.extend_from_slice(&4u16.to_be_bytes());
        b.extend_from_slice(&[0; 8]);
        b.extend_from_slice(&65535u32.to_be_bytes());
        b.extend_from_slice(&1u32.to_be_bytes());
        for (k, (sec, usec)) in [(100u32, 999_999u32), (101, 3)].iter().enumerate() {
            b.extend_from_slice(&sec.to_be_bytes());
            b.extend_from_slice(&usec.to_be_bytes());
            b.extend_from_slice(&(frames[k].len() as u32).to_be_bytes());
            b.extend_from_slice(&(frames[k].len() as u32).to_be_bytes());
            b.extend_from_slice(&frames[k]);
        }
        std::fs::write(&p, &b).unwrap();
        let a = drain(&mut PcapSource::open(&p, None).unwrap());
        assert_eq!(
            a.iter().map(|x| x.time_ps).collect::<Vec<_>>(),
            vec![0, 4_000_000]
        );
        assert_eq!(a[1].frame, frames[1]);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn pcap_errors() {
        let d = scratch("pcaperr");
        let frames = eth_frames(4);
        let pkts: Vec<(u64, Vec<u8>)> = frames
            .iter()
            .enumerate()
            .map(|(k, f)| (k as u64 * 1000, f.clone()))
            .collect();

        // Non-Ethernet link type.
        let raw = d.join("raw.pcap");
        write_pcap(&raw, FrameKind::Ip, &pkts).unwrap();
        let e = PcapSource::open(&raw, None).err().unwrap().to_string();
        assert!(e.contains("raw.pcap") && e.contains("link type 101"), "{e}");

        // Truncated mid-record: cut inside packet #2's data.
        let good = d.join("good.pcap");
        write_pcap(&good, FrameKind::Eth, &pkts).unwrap();
        let bytes = std::fs::read(&good).unwrap();
        let cut_at = 24 + (16 + frames[0].len()) + (16 + frames[1].len()) + 16 + 10;
        let trunc = d.join("trunc.pcap");
        std::fs::write(&trunc, &bytes[..cut_at]).unwrap();
        let mut s = PcapSource::open(&trunc, None).unwrap();
        assert!(s.next_arrival().unwrap().is_some());
        assert!(s.next_arrival().unwrap().is_some());
        let e = s.next_arrival().unwrap_err().to_string();
        assert!(e.contains("trunc.pcap") && e.contains("packet #2"), "{e}");
        assert_eq!(s.next_arrival().unwrap(), None);
        // Cut inside a record header.
        std::fs::write(&trunc, &bytes[..24 + 16 + frames[0].len() + 7]).unwrap();
        let mut s = PcapSource::open(&trunc, None).unwrap();
        assert!(s.next_arrival().unwrap().is_some());
        assert!(s
            .next_arrival()
            .unwrap_err()
            .to_string()
            .contains("packet #1"));

        // Bogus record length (larger than the file).
        let mut bogus = bytes.clone();
        let at = 24 + 8;
        bogus[at..at + 4].copy_from_slice(&0x7FFF_FFFFu32.to_ne_bytes());
        let bp = d.join("bogus.pcap");
        std::fs::write(&bp, &bogus).unwrap();
        let e = drain_err(&bp);
        assert!(e.contains("bogus.pcap") && e.contains("packet #0"), "{e}");

        // Capture shorter than the packet (orig_len > incl_len).
        let mut snap = bytes.clone();
        let orig_at = 24 + 12;
        snap[orig_at..orig_at + 4].copy_from_slice(&(frames[0].len() as u32 + 1).to_ne_bytes());
        let sp = d.join("snap.pcap");
        std::fs::write(&sp, &snap).unwrap();
        let e = drain_err(&sp);
        assert!(e.contains("packet #0") && e.contains("captured"), "{e}");

        // Timestamps going backwards.
        let back = d.join("back.pcap");
        write_pcap(
            &back,
            FrameKind::Eth,
            &[
                (5000, frames[0].clone()),
                (6000, frames[1].clone()),
                (4000, frames[2].clone()),
            ],
        )
        .unwrap();
        let e = drain_err(&back);
        assert!(e.contains("packet #2") && e.contains("backwards"), "{e}");
        // ... but ignored when a rate is given.
        assert_eq!(
            drain(&mut PcapSource::open(&back, Some(100.0)).unwrap()).len(),
            3
        );

        // Garbage, short and empty files, missing file.
        for (name, content) in [
            (
                "garbage.pcap",
                b"this is not a capture file at all, just some text".to_vec(),
            ),
            ("short.pcap", vec![0xD4, 0xC3]),
            ("empty.pcap", vec![]),
            ("hdr.pcap", bytes[..20].to_vec()),
        ] {
            let gp = d.join(name);
            std::fs::write(&gp, &content).unwrap();
            let e = PcapSource::open(&gp, None).err().unwrap().to_string();
            assert!(e.contains(name), "{e}");
        }
        let e = PcapSource::open(&d.join("missing.pcap"), None)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("missing.pcap"), "{e}");
        let _ = std::fs::remove_dir_all(&d);
    }

    fn drain_err(p: &Path) -> String {
        let mut s = PcapSource::open(p, None).unwrap();
        loop {
            match s.next_arrival() {
                Ok(Some(_)) => {}
                Ok(None) => panic!("no error from {}", p.display()),
                Err(e) => return e.to_string(),
            }
        }
    }

    #[test]
    fn pcapng_with_tsresol() {
        use pcap_file::pcapng::blocks::enhanced_packet::EnhancedPacketBlock;
        use pcap_file::pcapng::blocks::interface_description::InterfaceDescriptionBlock;
        use pcap_file::pcapng::PcapNgWriter;
        let d = scratch("pcapng");
        let frames = eth_frames(3);
        let write = |name: &str, link: DataLink, tsresol: Option<u8>, units: &[u64]| {
            let p = d.join(name);
            let mut w = PcapNgWriter::new(File::create(&p).unwrap()).unwrap();
            let mut idb = InterfaceDescriptionBlock::new(link, 65535);
            if let Some(r) = tsresol {
                idb.options.push(InterfaceDescriptionOption::IfTsResol(r));
            }
            w.write_pcapng_block(idb).unwrap();
            for (k, f) in frames.iter().enumerate() {
                let epb = EnhancedPacketBlock {
                    interface_id: 0,
                    timestamp: Duration::from_nanos(units[k]),
                    original_len: f.len() as u32,
                    data: std::borrow::Cow::Borrowed(&f[..]),
                    options: vec![],
                };
                w.write_pcapng_block(epb).unwrap();
            }
            p
        };
        // Nanosecond units.
        let p = write(
            "ns.pcapng",
            DataLink::ETHERNET,
            Some(9),
            &[1_000, 1_500, 4_000],
        );
        let a = drain(&mut PcapSource::open(&p, None).unwrap());
        assert_eq!(
            a.iter().map(|x| x.time_ps).collect::<Vec<_>>(),
            vec![0, 500_000, 3_000_000]
        );
        assert_eq!(
            a.iter().map(|x| x.frame.clone()).collect::<Vec<_>>(),
            frames
        );
        // Default resolution is microseconds.
        let p = write("us.pcapng", DataLink::ETHERNET, None, &[10, 11, 13]);
        let a = drain(&mut PcapSource::open(&p, None).unwrap());
        assert_eq!(
            a.iter().map(|x| x.time_ps).collect::<Vec<_>>(),
            vec![0, 1_000_000, 3_000_000]
        );
        // Binary resolution 2^-10 s.
        let p = write(
            "bin.pcapng",
            DataLink::ETHERNET,
            Some(0x80 | 10),
            &[0, 1, 1024],
        );
        let a = drain(&mut PcapSource::open(&p, None).unwrap());
        assert_eq!(
            a.iter().map(|x| x.time_ps).collect::<Vec<_>>(),
            vec![0, 976_562_500, 1_000_000_000_000]
        );
        // Non-Ethernet interface.
        let p = write("raw.pcapng", DataLink::RAW, Some(9), &[0, 1, 2]);
        let e = drain_err(&p);
        assert!(
            e.contains("raw.pcapng") && e.contains("packet #0") && e.contains("link type 101"),
            "{e}"
        );
        // Truncated pcapng.
        let p = write("cut.pcapng", DataLink::ETHERNET, Some(9), &[0, 1, 2]);
        let bytes = std::fs::read(&p).unwrap();
        std::fs::write(&p, &bytes[..bytes.len() - 30]).unwrap();
        let e = drain_err(&p);
        assert!(e.contains("cut.pcapng") && e.contains("packet #2"), "{e}");
        let _ = std::fs::remove_dir_all(&d);
    }
}
