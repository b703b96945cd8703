//! The synthetic traffic generator: messages of equal-sized packets at a
//! line rate, as PsPIN's evaluation drives the NIC (seed 001 §4.2):
//! [`GenConfig`], [`Generator`], [`Payload`].

use super::*;

/// Contents of the UDP payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Payload {
    /// All zero bytes.
    Zero,
    /// Byte i of packet number seq is `(i + seq * 7) as u8`, so packets differ.
    Sequence,
    /// Deterministic pseudo-random bytes from `seed` and the packet number.
    Random { seed: u64 },
}

pub(super) const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

/// SplitMix64's next value from its state (the stream softspin-testkit's
/// `Rng` and bench/cluster's C programs draw, so a seed means one thing).
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(GOLDEN);
    mix64(*state)
}

/// SplitMix64 output function: a good 64-bit mixer.
pub(super) fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Bytes 0, 1, ..., 255, 0, ..., 255: any 256 consecutive ones start anywhere.
static RAMP: [u8; 512] = {
    let mut r = [0u8; 512];
    let mut i = 0;
    while i < 512 {
        r[i] = i as u8;
        i += 1;
    }
    r
};

impl Payload {
    /// Byte `i` of the UDP payload of packet number `seq`.
    pub fn byte(self, seq: u64, i: usize) -> u8 {
        match self {
            Payload::Zero => 0,
            Payload::Sequence => (i as u64).wrapping_add(seq.wrapping_mul(7)) as u8,
            Payload::Random { seed } => {
                let word = Self::random_word(Self::random_key(seed, seq), (i / 8) as u64);
                (word >> (8 * (i % 8))) as u8
            }
        }
    }

    fn random_key(seed: u64, seq: u64) -> u64 {
        mix64(seed ^ mix64(seq.wrapping_add(1).wrapping_mul(GOLDEN)))
    }

    // Counter-based, so any byte can be computed independently of the others.
    fn random_word(key: u64, k: u64) -> u64 {
        mix64(key.wrapping_add(k.wrapping_add(1).wrapping_mul(GOLDEN)))
    }

    /// The whole UDP payload of packet number `seq` into `out`: the bytes of
    /// [`Payload::byte`], written a slice at a time (the generator's frames;
    /// a byte at a time through a closure cost ~4 host instructions each).
    pub fn fill(self, seq: u64, out: &mut [u8]) {
        match self {
            Payload::Zero => out.fill(0),
            Payload::Sequence => {
                // (i + 7 seq) mod 256 = (7 seq mod 256) + (i mod 256), wrapping:
                // every 256 bytes repeat, copied from a ramp.
                let base = seq.wrapping_mul(7) as u8 as usize;
                for chunk in out.chunks_mut(256) {
                    chunk.copy_from_slice(&RAMP[base..base + chunk.len()]);
                }
            }
            Payload::Random { seed } => {
                let key = Self::random_key(seed, seq);
                for (k, chunk) in out.chunks_mut(8).enumerate() {
                    let w = Self::random_word(key, k as u64).to_le_bytes();
                    chunk.copy_from_slice(&w[..chunk.len()]);
                }
            }
        }
    }

    /// A payload closure for [`build_frame`] for packet number `seq`.
    pub fn filler(self, seq: u64) -> impl FnMut(usize) -> u8 {
        let key = match self {
            Payload::Random { seed } => Self::random_key(seed, seq),
            _ => 0,
        };
        let mut cached: Option<(u64, u64)> = None; // (word index, word)
        move |i| match self {
            Payload::Random { .. } => {
                let k = (i / 8) as u64;
                let word = match cached {
                    Some((ck, w)) if ck == k => w,
                    _ => {
                        let w = Self::random_word(key, k);
                        cached = Some((k, w));
                        w
                    }
                };
                (word >> (8 * (i % 8))) as u8
            }
            other => other.byte(seq, i),
        }
    }
}

/// Parameters of the synthetic traffic [`Generator`].
#[derive(Clone, Debug, PartialEq)]
pub struct GenConfig {
    /// Number of messages (M).
    pub messages: u32,
    /// Packets per message (P).
    pub packets_per_message: u32,
    /// Frame bytes, headers included.
    pub size: usize,
    /// Line rate in Gbit/s; `f64::INFINITY` = every packet at time 0.
    pub rate_gbps: f64,
    /// Messages in flight, packets interleaved round-robin among them (>= 1).
    pub concurrent: u32,
    pub frame: FrameKind,
    pub payload: Payload,
    pub first_msg_id: u32,
    pub udp_src_port: u16,
    pub udp_dst_port: u16,
    pub src_ip: [u8; 4],
    pub dst_ip: [u8; 4],
}

impl Default for GenConfig {
    fn default() -> Self {
        GenConfig {
            messages: 1,
            packets_per_message: 1,
            size: 1024,
            rate_gbps: 400.0,
            concurrent: 1,
            frame: FrameKind::Ip,
            payload: Payload::Sequence,
            first_msg_id: 0,
            udp_src_port: DEFAULT_UDP_PORT,
            udp_dst_port: DEFAULT_UDP_PORT,
            src_ip: [10, 0, 0, 1],
            dst_ip: [10, 0, 0, 2],
        }
    }
}

/// Synthetic traffic: `concurrent` messages in flight, one packet from each
/// in turn; a finished message's slot is taken by the next message.
pub struct Generator {
    cfg: GenConfig,
    clock: LineClock,
    /// In-flight messages: (message number from 0, packets sent).
    slots: Vec<(u32, u32)>,
    cur: usize,
    next_msg: u32,
    emitted: u64,
    /// The headers every frame starts with (sizes, addresses and ports are
    /// the same for all; no checksum covers the payload): built once.
    headers: Vec<u8>,
}

impl Generator {
    /// Validate `cfg` and create the generator.
    pub fn new(cfg: GenConfig) -> Result<Generator, TrafficError> {
        let param = |param, msg: &str| TrafficError::Param {
            param,
            msg: msg.to_string(),
        };
        if cfg.messages == 0 {
            return Err(param("messages", "must be at least 1"));
        }
        if cfg.packets_per_message == 0 {
            return Err(param("packets_per_message", "must be at least 1"));
        }
        if cfg.concurrent == 0 {
            return Err(param("concurrent", "must be at least 1"));
        }
        let clock = LineClock::new(cfg.rate_gbps).map_err(|m| param("rate_gbps", &m))?;
        if let Some(m) = frame_size_problem(cfg.frame, cfg.size) {
            return Err(param("size", &m));
        }
        if cfg.first_msg_id.checked_add(cfg.messages - 1).is_none() {
            return Err(param(
                "first_msg_id",
                &format!(
                    "{} + {} messages overflows the u32 message id",
                    cfg.first_msg_id, cfg.messages
                ),
            ));
        }
        let inflight = cfg.concurrent.min(cfg.messages);
        let mut headers = build_frame(
            cfg.frame,
            cfg.size,
            cfg.src_ip,
            cfg.dst_ip,
            cfg.udp_src_port,
            cfg.udp_dst_port,
            |_| 0,
        )?;
        headers.truncate(cfg.frame.header_len());
        Ok(Generator {
            headers,
            slots: (0..inflight).map(|m| (m, 0)).collect(),
            next_msg: inflight,
            cur: 0,
            emitted: 0,
            clock,
            cfg,
        })
    }

    /// Total number of packets (M * P).
    pub fn total_packets(&self) -> u64 {
        u64::from(self.cfg.messages) * u64::from(self.cfg.packets_per_message)
    }
}

impl Generator {
    /// The next packet's timing and message; its frame is packet number
    /// `frame_id`'s (`write_frame`).
    fn next_info(&mut self) -> Result<Option<PacketInfo>, TrafficError> {
        if self.slots.is_empty() {
            return Ok(None);
        }
        let seq = self.emitted;
        let c = &self.cfg;
        let time_ps = self
            .clock
            .advance(c.size)
            .ok_or_else(|| TrafficError::Param {
                param: "rate_gbps",
                msg: format!("arrival time of packet {seq} overflows u64 picoseconds"),
            })?;
        let slot = &mut self.slots[self.cur];
        slot.1 += 1;
        let msg_id = c.first_msg_id + slot.0;
        let eom = slot.1 == c.packets_per_message;
        if !eom {
            self.cur += 1;
        } else if self.next_msg < c.messages {
            *slot = (self.next_msg, 0);
            self.next_msg += 1;
            self.cur += 1;
        } else {
            // The next slot shifts into `cur`.
            self.slots.remove(self.cur);
        }
        if self.cur >= self.slots.len() {
            self.cur = 0;
        }
        self.emitted += 1;
        Ok(Some(PacketInfo {
            time_ps,
            len: c.size,
            msg_id,
            eom,
            origin: Cow::Borrowed("generator"),
            frame_id: seq,
        }))
    }
}

impl Source for Generator {
    fn next_arrival(&mut self) -> Result<Option<Arrival>, TrafficError> {
        let Some(p) = self.next_info()? else {
            return Ok(None);
        };
        Ok(Some(p.into_arrival(self, Vec::new())))
    }

    fn len_hint(&self) -> Option<u64> {
        Some(self.total_packets())
    }

    fn next_packet(&mut self) -> Result<Option<Packet>, TrafficError> {
        Ok(self.next_info()?.map(Packet::Later))
    }

    /// The headers every frame starts with, then packet `frame_id`'s payload.
    fn write_frame(&self, frame_id: u64, out: &mut [u8]) {
        let h = self.headers.len();
        out[..h].copy_from_slice(&self.headers);
        self.cfg.payload.fill(frame_id, &mut out[h..]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::traffic::tests::*;

    #[test]
    fn generator_timing_64b_at_400() {
        let a = gen(GenConfig {
            messages: 2,
            packets_per_message: 50,
            size: 64,
            ..Default::default()
        });
        assert_eq!(a.len(), 100);
        for (k, x) in a.iter().enumerate() {
            assert_eq!(x.time_ps, (k as u64 + 1) * 1280, "packet {k}");
        }
    }

    #[test]
    fn generator_timing_1024b() {
        let a = gen(GenConfig {
            packets_per_message: 1000,
            size: 1024,
            rate_gbps: 100.0,
            ..Default::default()
        });
        for (k, x) in a.iter().enumerate() {
            assert_eq!(x.time_ps, (k as u64 + 1) * 81920);
        }
        let a = gen(GenConfig {
            packets_per_message: 3,
            size: 1024,
            ..Default::default()
        });
        assert_eq!(
            a.iter().map(|x| x.time_ps).collect::<Vec<_>>(),
            vec![20480, 40960, 61440]
        );
    }

    #[test]
    fn generator_timing_no_drift_on_inexact_rate() {
        // 64 B at 3 Gbit/s = 170666.67 ps each: must not drift after many packets.
        let n = 30_000u64;
        let a = gen(GenConfig {
            packets_per_message: n as u32,
            size: 64,
            rate_gbps: 3.0,
            ..Default::default()
        });
        let last = a.last().unwrap().time_ps;
        assert_eq!(
            last,
            (n * 512 * 1_000_000_000_000 + 1_500_000_000) / 3_000_000_000
        );
        assert!(a.windows(2).all(|w| w[1].time_ps - w[0].time_ps >= 170666));
    }

    #[test]
    fn generator_infinite_rate_all_at_zero() {
        let a = gen(GenConfig {
            packets_per_message: 5,
            rate_gbps: f64::INFINITY,
            ..Default::default()
        });
        assert_eq!(a.len(), 5);
        assert!(a.iter().all(|x| x.time_ps == 0));
    }

    #[test]
    fn generator_round_robin_and_eom() {
        let a = gen(GenConfig {
            messages: 3,
            packets_per_message: 4,
            concurrent: 2,
            first_msg_id: 10,
            ..Default::default()
        });
        let got: Vec<(u32, bool)> = a.iter().map(|x| (x.msg_id, x.eom)).collect();
        let want = vec![
            (10, false),
            (11, false),
            (10, false),
            (11, false),
            (10, false),
            (11, false),
            (10, true),
            (11, true),
            (12, false),
            (12, false),
            (12, false),
            (12, true),
        ];
        assert_eq!(got, want);
        assert!(a.iter().all(|x| x.origin == "generator"));
    }

    #[test]
    fn generator_more_concurrency_than_messages() {
        let a = gen(GenConfig {
            messages: 2,
            packets_per_message: 2,
            concurrent: 5,
            ..Default::default()
        });
        let got: Vec<(u32, bool)> = a.iter().map(|x| (x.msg_id, x.eom)).collect();
        assert_eq!(got, vec![(0, false), (1, false), (0, true), (1, true)]);
    }

    #[test]
    fn generator_len_hint() {
        let g = Generator::new(GenConfig {
            messages: 7,
            packets_per_message: 3,
            ..Default::default()
        })
        .unwrap();
        assert_eq!(g.len_hint(), Some(21));
        let mut g = g;
        assert_eq!(drain(&mut g).len(), 21);
        assert_eq!(g.next_arrival().unwrap(), None);
    }

    #[test]
    fn payload_patterns() {
        let base = GenConfig {
            messages: 1,
            packets_per_message: 3,
            size: 100,
            ..Default::default()
        };
        let hl = FrameKind::Ip.header_len();

        let z = gen(GenConfig {
            payload: Payload::Zero,
            ..base.clone()
        });
        assert!(z.iter().all(|a| a.frame[hl..].iter().all(|&b| b == 0)));

        let s = gen(GenConfig {
            payload: Payload::Sequence,
            ..base.clone()
        });
        for (seq, a) in s.iter().enumerate() {
            for (i, &b) in a.frame[hl..].iter().enumerate() {
                assert_eq!(b, ((i + seq * 7) % 256) as u8);
            }
        }
        // Sequence wraps at 256 for long payloads.
        let long = gen(GenConfig {
            size: 400,
            payload: Payload::Sequence,
            ..base.clone()
        });
        assert_eq!(long[0].frame[hl + 300], 44);

        let r1 = gen(GenConfig {
            payload: Payload::Random { seed: 42 },
            ..base.clone()
        });
        let r1b = gen(GenConfig {
            payload: Payload::Random { seed: 42 },
            ..base.clone()
        });
        let r2 = gen(GenConfig {
            payload: Payload::Random { seed: 43 },
            ..base.clone()
        });
        assert_eq!(r1, r1b);
        assert_ne!(r1[0].frame[hl..], r2[0].frame[hl..]);
        assert_ne!(r1[0].frame[hl..], r1[1].frame[hl..]);
        // Headers are unaffected by the payload; the bytes look random.
        assert_eq!(r1[0].frame[..hl], z[0].frame[..hl]);
        let pld = &r1[0].frame[hl..];
        let distinct: std::collections::HashSet<u8> = pld.iter().copied().collect();
        assert!(
            distinct.len() > 40,
            "only {} distinct bytes",
            distinct.len()
        );
        // filler and byte() agree.
        for (i, &b) in pld.iter().enumerate() {
            assert_eq!(b, Payload::Random { seed: 42 }.byte(0, i));
        }
    }

    /// `Payload::fill` (the generator's) writes what `byte` and `filler` give.
    #[test]
    fn fill_agrees_with_byte_and_filler() {
        for p in [
            Payload::Zero,
            Payload::Sequence,
            Payload::Random { seed: 7 },
        ] {
            for seq in [0, 1, 37, 1 << 40] {
                for len in [0, 1, 7, 8, 9, 300, 1500] {
                    let mut out = vec![0xa5; len];
                    p.fill(seq, &mut out);
                    let mut f = p.filler(seq);
                    for (i, &b) in out.iter().enumerate() {
                        assert_eq!(b, p.byte(seq, i), "{p:?} seq {seq} byte {i}");
                        assert_eq!(b, f(i), "{p:?} seq {seq} byte {i}");
                    }
                }
            }
        }
    }

    #[test]
    fn generator_parameter_errors() {
        let cases: Vec<(GenConfig, &str)> = vec![
            (
                GenConfig {
                    messages: 0,
                    ..Default::default()
                },
                "messages",
            ),
            (
                GenConfig {
                    packets_per_message: 0,
                    ..Default::default()
                },
                "packets_per_message",
            ),
            (
                GenConfig {
                    concurrent: 0,
                    ..Default::default()
                },
                "concurrent",
            ),
            (
                GenConfig {
                    rate_gbps: 0.0,
                    ..Default::default()
                },
                "rate_gbps",
            ),
            (
                GenConfig {
                    rate_gbps: -5.0,
                    ..Default::default()
                },
                "rate_gbps",
            ),
            (
                GenConfig {
                    rate_gbps: f64::NAN,
                    ..Default::default()
                },
                "rate_gbps",
            ),
            (
                GenConfig {
                    size: 27,
                    ..Default::default()
                },
                "size",
            ),
            (
                GenConfig {
                    size: 41,
                    frame: FrameKind::Eth,
                    ..Default::default()
                },
                "size",
            ),
            (
                GenConfig {
                    size: 65536,
                    ..Default::default()
                },
                "size",
            ),
            (
                GenConfig {
                    first_msg_id: u32::MAX,
                    messages: 2,
                    ..Default::default()
                },
                "first_msg_id",
            ),
        ];
        for (cfg, param) in cases {
            let e = Generator::new(cfg.clone())
                .err()
                .unwrap_or_else(|| panic!("accepted {cfg:?}"));
            let msg = e.to_string();
            assert!(msg.contains(&format!("`{param}`")), "{msg}");
        }
        // The boundaries are accepted.
        assert!(Generator::new(GenConfig {
            size: 28,
            ..Default::default()
        })
        .is_ok());
        assert!(Generator::new(GenConfig {
            size: 42,
            frame: FrameKind::Eth,
            ..Default::default()
        })
        .is_ok());
        assert!(Generator::new(GenConfig {
            size: 65535,
            ..Default::default()
        })
        .is_ok());
        assert!(Generator::new(GenConfig {
            first_msg_id: u32::MAX,
            ..Default::default()
        })
        .is_ok());
    }
}
