//! `softspin nic --pcap-out`: both directions of a live NIC in one pcapng
//! (issue 26, "Captures of both directions"). The frames the matching
//! engine handed to the NIC (seed 000 §3.2.1) and the frames its handlers
//! sent are two interfaces of one section, stamped with the wall clock
//! (NIC time 0's wall clock + NIC time) so the file merges (mergecap) with
//! captures taken elsewhere; each packet's comment names its ECTX. Written
//! as the run goes: nothing is held but the writer's buffer. (`sim
//! --pcap-out` stays classic pcap: a simulation has no wall clock.)

use std::borrow::Cow;
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use pcap_file::pcapng::blocks::enhanced_packet::{EnhancedPacketBlock, EnhancedPacketOption};
use pcap_file::pcapng::blocks::interface_description::{
    InterfaceDescriptionBlock, InterfaceDescriptionOption,
};
use pcap_file::pcapng::blocks::section_header::{SectionHeaderBlock, SectionHeaderOption};
use pcap_file::pcapng::PcapNgWriter;
use pcap_file::{DataLink, Endianness};
use softspin_engine::traffic::MAX_FRAME_SIZE;
use softspin_host::{Ectx, OutPacket, RxCaptured};

/// Interface id of the frames the NIC took (the first IDB).
pub const RX_IF: u32 = 0;
/// Interface id of the frames the handlers sent.
pub const TX_IF: u32 = 1;
/// `if_tsresol` 9: timestamps in nanoseconds (the EPB counts them so).
const TS_RESOL_NS: u8 = 9;
/// `epb_flags` direction bits (pcapng, "Enhanced Packet Block Flags Word").
const INBOUND: u32 = 0b01;
const OUTBOUND: u32 = 0b10;

/// The open capture of one live run.
pub struct Capture {
    w: PcapNgWriter<BufWriter<File>>,
    file: String,
    /// The wall clock (since the UNIX epoch) at NIC time 0.
    time0: Duration,
    names: HashMap<Ectx, String>,
}

/// One packet of a step, either direction, for ordering by time.
enum Frame<'a> {
    Rx(&'a RxCaptured),
    Tx(&'a OutPacket),
}

impl Frame<'_> {
    fn time_ps(&self) -> u64 {
        match self {
            Frame::Rx(c) => c.time_ps,
            Frame::Tx(o) => o.time_ps,
        }
    }
}

impl Capture {
    /// Create `path` for a NIC on `iface` whose NIC time 0 was at `time0`
    /// (UNIX time); `names` names the ECTXs in the comments.
    pub fn create(
        path: &Path,
        iface: &str,
        time0: Duration,
        names: HashMap<Ectx, String>,
    ) -> anyhow::Result<Capture> {
        let file = path.display().to_string();
        let f = File::create(path).with_context(|| format!("{file}: cannot create"))?;
        let section = SectionHeaderBlock {
            endianness: Endianness::native(),
            options: vec![
                SectionHeaderOption::UserApplication(Cow::Borrowed("softspin nic")),
                SectionHeaderOption::Comment(Cow::Owned(format!(
                    "softspin live NIC on {iface}; NIC time 0 at UNIX time {}.{:09} s",
                    time0.as_secs(),
                    time0.subsec_nanos()
                ))),
            ],
            ..Default::default()
        };
        let mut w = PcapNgWriter::with_section_header(BufWriter::new(f), section)
            .with_context(|| format!("{file}: cannot write"))?;
        for (name, what) in [("rx", "matched, to handlers"), ("tx", "sent by handlers")] {
            let idb = InterfaceDescriptionBlock {
                linktype: DataLink::ETHERNET,
                snaplen: MAX_FRAME_SIZE as u32,
                options: vec![
                    InterfaceDescriptionOption::IfName(Cow::Owned(format!("{iface} {name}"))),
                    InterfaceDescriptionOption::IfDescription(Cow::Owned(format!(
                        "{iface} {name} ({what})"
                    ))),
                    InterfaceDescriptionOption::IfTsResol(TS_RESOL_NS),
                ],
            };
            w.write_pcapng_block(idb)
                .with_context(|| format!("{file}: cannot write"))?;
        }
        Ok(Capture {
            w,
            file,
            time0,
            names,
        })
    }

    fn ectx(&self, e: Option<Ectx>) -> String {
        match e {
            Some(e) => match self.names.get(&e) {
                Some(n) => format!("ECTX {n}"),
                None => format!("ECTX #{}", e.0),
            },
            None => "no ECTX".into(),
        }
    }

    /// What a packet's comment says.
    fn comment(&self, f: &Frame) -> String {
        match f {
            Frame::Rx(c) => {
                let mut s = self.ectx(c.ectx);
                if let Some(m) = c.msg_id {
                    s += &format!(", msg {m}");
                }
                if c.eom {
                    s += ", EOM";
                }
                if let Some(why) = c.dropped {
                    s += &format!(", dropped: {why}");
                }
                s
            }
            Frame::Tx(o) => {
                let mut s = format!("sent by {}", self.ectx(Some(o.ectx)));
                if o.dest != 0 {
                    s += &format!(", RDMA put to {}", o.dest);
                }
                s
            }
        }
    }

    fn write(&mut self, f: &Frame) -> anyhow::Result<()> {
        let (interface_id, flags, data) = match f {
            Frame::Rx(c) => (RX_IF, INBOUND, &c.frame),
            Frame::Tx(o) => (TX_IF, OUTBOUND, &o.frame),
        };
        let epb = EnhancedPacketBlock {
            interface_id,
            timestamp: self.time0 + Duration::from_nanos(f.time_ps() / 1000),
            original_len: u32::try_from(data.len()).unwrap_or(u32::MAX),
            data: Cow::Borrowed(data),
            options: vec![
                EnhancedPacketOption::Comment(Cow::Owned(self.comment(f))),
                EnhancedPacketOption::Flags(flags),
            ],
        };
        self.w
            .write_pcapng_block(epb)
            .with_context(|| format!("{}: cannot write", self.file))?;
        Ok(())
    }

    /// Write one step's frames, both directions merged in time order (a
    /// reply is sent after its request arrived, so a step's frames are in
    /// order; steps follow one another).
    pub fn write_step<'a>(
        &mut self,
        rx: &'a [RxCaptured],
        tx: impl IntoIterator<Item = &'a OutPacket>,
    ) -> anyhow::Result<()> {
        let mut all: Vec<Frame> = rx
            .iter()
            .map(Frame::Rx)
            .chain(tx.into_iter().map(Frame::Tx))
            .collect();
        // Stable: equal times keep the request before its reply.
        all.sort_by_key(Frame::time_ps);
        for f in &all {
            self.write(f)?;
        }
        Ok(())
    }

    pub fn finish(self) -> anyhow::Result<()> {
        let file = self.file;
        let mut w = self.w.into_inner();
        w.flush().with_context(|| format!("{file}: cannot write"))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pcap_file::pcapng::{Block, PcapNgReader};

    /// Written blocks read back with the interfaces, wall-clock stamps,
    /// flags and comments a reader needs, in time order across directions.
    #[test]
    fn both_directions_read_back() {
        let path = std::env::temp_dir().join(format!("softspin-cap-{}.pcapng", std::process::id()));
        let time0 = Duration::new(1_700_000_000, 123_456_789);
        let names = HashMap::from([(Ectx(3), "pp".to_string())]);
        let mut c = Capture::create(&path, "ss0", time0, names).unwrap();
        let rx = [
            RxCaptured {
                time_ps: 5_000_000,
                ectx: Some(Ectx(3)),
                msg_id: Some(7),
                eom: true,
                dropped: None,
                frame: vec![1; 60],
            },
            RxCaptured {
                time_ps: 9_000_000,
                ectx: None,
                msg_id: None,
                eom: false,
                dropped: Some("no_ectx_for_ruleset"),
                frame: vec![2; 61],
            },
        ];
        let tx = [OutPacket {
            ectx: Ectx(3),
            time_ps: 6_000_000,
            dest: 0,
            frame: vec![3; 62],
        }];
        c.write_step(&rx, &tx).unwrap();
        c.finish().unwrap();

        let mut r = PcapNgReader::new(File::open(&path).unwrap()).unwrap();
        let mut idbs = Vec::new();
        let mut epbs = Vec::new();
        while let Some(b) = r.next_block() {
            match b.unwrap() {
                Block::InterfaceDescription(i) => idbs.push(i.into_owned()),
                Block::EnhancedPacket(p) => epbs.push(p.into_owned()),
                other => panic!("unexpected block {other:?}"),
            }
        }
        std::fs::remove_file(&path).unwrap();
        assert_eq!(idbs.len(), 2);
        for (i, name) in idbs.iter().zip(["ss0 rx", "ss0 tx"]) {
            assert_eq!(i.linktype, DataLink::ETHERNET);
            assert!(i
                .options
                .contains(&InterfaceDescriptionOption::IfName(name.into())));
            assert!(i
                .options
                .contains(&InterfaceDescriptionOption::IfTsResol(9)));
        }
        let got: Vec<(u32, Duration, usize, String)> = epbs
            .iter()
            .map(|p| {
                let comment = p.options.iter().find_map(|o| match o {
                    EnhancedPacketOption::Comment(c) => Some(c.to_string()),
                    _ => None,
                });
                (p.interface_id, p.timestamp, p.data.len(), comment.unwrap())
            })
            .collect();
        let at = |us: u64| time0 + Duration::from_micros(us);
        assert_eq!(
            got,
            [
                (0, at(5), 60, "ECTX pp, msg 7, EOM".to_string()),
                (1, at(6), 62, "sent by ECTX pp".to_string()),
                (
                    0,
                    at(9),
                    61,
                    "no ECTX, dropped: no_ectx_for_ruleset".to_string()
                ),
            ]
        );
        assert!(epbs[0]
            .options
            .contains(&EnhancedPacketOption::Flags(INBOUND)));
        assert!(epbs[1]
            .options
            .contains(&EnhancedPacketOption::Flags(OUTBOUND)));
    }
}
