//! The simulated system's parameters, as one named profile: seed 004
//! §4.2-4.3 (sPIN, SC'17). The extracted text of the seed lost most
//! symbols' values; each field says where its value comes from: the seed's
//! own words, arithmetic on them, or the published paper (Hoefler et al.,
//! SC'17, §4.2-4.3). docs/scale.md "Parameters" has the table. A
//! `--params FILE` (TOML, the same field names) overrides any of them.

use serde::{Deserialize, Serialize};

/// Where the NIC sits (seed 004 §4: "dis" and "int").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NicKind {
    /// Off-chip, over PCIe 4.0 x32 (seed 004 §4.3).
    Discrete,
    /// On the CPU's chip, at the memory controller (seed 004 §4.3).
    Integrated,
}

impl std::str::FromStr for NicKind {
    type Err = ParamsError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "discrete" | "dis" => Ok(NicKind::Discrete),
            "integrated" | "int" => Ok(NicKind::Integrated),
            _ => Err(ParamsError::Invalid(format!(
                "unknown NIC kind {s:?} (discrete or integrated)"
            ))),
        }
    }
}

/// A host's DMA path as a LogGP system (seed 004 §4.3: o = g = 0, because
/// the NIC model already times issuing a request).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DmaParams {
    /// L, one way (ns).
    pub latency_ns: f64,
    /// 1 / G, GiB/s (G in ns per byte = 1 / (this × 2^30 / 1e9)).
    pub bandwidth_gib_s: f64,
}

/// Network and node parameters (LogGOPS, seed 004 §4.2).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NetParams {
    /// The profile's name, reported with every result.
    pub name: String,
    /// o: CPU overhead to inject a message (not parallelisable). 65 ns:
    /// the paper's §4.2 ("measured on a modern InfiniBand system"); the
    /// seed's text lost the number.
    pub o_ns: f64,
    /// g: gap between two messages a NIC injects. 6.7 ns = 1 / (150 M
    /// messages/s), the ConnectX-4 rate the seed's §4.2 names (and the
    /// paper's value).
    pub g_ns: f64,
    /// Link bandwidth in GiB/s: 400 Gib/s (seed §4.2) / 8 = 50 GiB/s, the
    /// rate §5.1 also uses ("deposits data at a rate of 50 GiB/s"). G is
    /// per byte, as in LogGOPSim (sizes in bytes, `(s-1)G`): 18.63 ps/B.
    /// The paper's "G = 2.5 ps" is 1 / (400 × 10^9) s, the time of one
    /// bit; taken per byte it would model 3.2 Tb/s, so it is not used.
    pub link_gib_s: f64,
    /// Time a packet takes through one switch (cut-through): 50 ns, the
    /// paper's §4.2 ("as measured on modern switches"); lost in the seed.
    pub switch_ns: f64,
    /// Propagation delay of one cable: 33.4 ns, the paper's §4.2 (a 10 m
    /// wire; 10 m / c = 33.36 ns); lost in the seed.
    pub wire_ns: f64,
    /// Ports per switch of the fat tree: 36 (seed §4.2, in its text).
    pub switch_ports: u32,
    /// Largest packet (payload) on the wire: 4 KiB (seed §4.4.2 "full
    /// 4KiB packets"; LogGOPSim2's run.sh passes --network-pktsize=4096).
    pub mtu: u32,
    /// The discrete NIC's DMA path, PCIe 4.0 x32: 250 ns (seed §4.4.2 "the
    /// 250ns DMA latency"), 64 GiB/s (seed §4.3).
    pub discrete: DmaParams,
    /// The integrated NIC's DMA path, the memory controller: 50 ns (the
    /// paper's §4.3; lost in the seed, whose host DRAM latency is 51 ns),
    /// 150 GiB/s ("the same bandwidth as the main CPU", seed §4.3).
    pub integrated: DmaParams,
    /// The host CPU's rate for copying or XORing bytes in memory (one
    /// core, a stream in and out): 8.7 GiB/s, what the paper's host CPU
    /// reaches unpacking a datatype by copies (seed 004 §5.2, Fig. 7a:
    /// "RDMA remains at a bandwidth around 8.7 GiB/s due to the additional
    /// strided copies"). Host baselines that touch their data pay it
    /// (raid's rdma mode: the XOR and the store's update).
    pub host_copy_gib_s: f64,
}

impl NetParams {
    /// Seed 004 §4.2-4.3's system.
    pub fn sc17() -> NetParams {
        NetParams {
            name: "sc17".into(),
            o_ns: 65.0,
            g_ns: 6.7,
            link_gib_s: 400.0 / 8.0,
            switch_ns: 50.0,
            wire_ns: 33.4,
            switch_ports: 36,
            mtu: 4096,
            discrete: DmaParams {
                latency_ns: 250.0,
                bandwidth_gib_s: 64.0,
            },
            integrated: DmaParams {
                latency_ns: 50.0,
                bandwidth_gib_s: 150.0,
            },
            host_copy_gib_s: 8.7,
        }
    }

    /// The profile `sc17` with the fields `toml` sets replaced.
    pub fn from_toml(text: &str) -> Result<NetParams, ParamsError> {
        let p: NetParams = toml::from_str(text).map_err(|e| ParamsError::Invalid(e.to_string()))?;
        p.check()?;
        Ok(p)
    }

    /// The DMA path of a NIC kind.
    pub fn dma(&self, kind: NicKind) -> &DmaParams {
        match kind {
            NicKind::Discrete => &self.discrete,
            NicKind::Integrated => &self.integrated,
        }
    }

    /// G in picoseconds per byte.
    pub fn link_ps_per_byte(&self) -> f64 {
        1e12 / (self.link_gib_s * (1u64 << 30) as f64)
    }

    /// Every value positive and finite, switches with at least 4 ports.
    pub fn check(&self) -> Result<(), ParamsError> {
        let pos = [
            ("o_ns", self.o_ns, true),
            ("g_ns", self.g_ns, true),
            ("link_gib_s", self.link_gib_s, false),
            ("switch_ns", self.switch_ns, true),
            ("wire_ns", self.wire_ns, true),
            ("discrete.latency_ns", self.discrete.latency_ns, true),
            (
                "discrete.bandwidth_gib_s",
                self.discrete.bandwidth_gib_s,
                false,
            ),
            ("integrated.latency_ns", self.integrated.latency_ns, true),
            ("host_copy_gib_s", self.host_copy_gib_s, false),
            (
                "integrated.bandwidth_gib_s",
                self.integrated.bandwidth_gib_s,
                false,
            ),
        ];
        for (name, v, zero_ok) in pos {
            if !v.is_finite() || v < 0.0 || (!zero_ok && v == 0.0) {
                return Err(ParamsError::Invalid(format!(
                    "{name} = {v}: must be a finite number > 0"
                )));
            }
        }
        if self.switch_ports < 4 || !self.switch_ports.is_multiple_of(2) {
            return Err(ParamsError::Invalid(format!(
                "switch_ports = {}: an even number, at least 4",
                self.switch_ports
            )));
        }
        if !(64..=65536).contains(&self.mtu) {
            return Err(ParamsError::Invalid(format!(
                "mtu = {}: 64 to 65536 bytes",
                self.mtu
            )));
        }
        Ok(())
    }
}

impl Default for NetParams {
    fn default() -> Self {
        NetParams::sc17()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ParamsError {
    #[error("netsim parameters: {0}")]
    Invalid(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_overrides_only_what_it_names() {
        let p = NetParams::from_toml(
            "o_ns = 100.0\n[discrete]\nlatency_ns = 500.0\nbandwidth_gib_s = 32.0\n",
        )
        .unwrap();
        assert_eq!(p.o_ns, 100.0);
        assert_eq!(p.g_ns, NetParams::sc17().g_ns);
        assert_eq!(p.discrete.latency_ns, 500.0);
        assert_eq!(p.integrated, NetParams::sc17().integrated);
    }

    #[test]
    fn bad_files_are_refused_by_name() {
        for (text, what) in [
            ("o_nss = 1.0", "o_nss"),
            ("link_gib_s = 0.0", "link_gib_s"),
            ("switch_ports = 3", "switch_ports"),
            ("mtu = 10", "mtu"),
            ("g_ns = -1.0", "g_ns"),
            ("host_copy_gib_s = 0.0", "host_copy_gib_s"),
        ] {
            let e = NetParams::from_toml(text).unwrap_err().to_string();
            assert!(e.contains(what), "{text}: {e}");
        }
    }

    #[test]
    fn link_gap_per_byte() {
        // 50 GiB/s: 1e12 / (50 * 2^30) ps per byte.
        let p = NetParams::sc17();
        assert!((p.link_ps_per_byte() - 18.626).abs() < 1e-3);
        // Eight times the 400 Gib/s link's time per bit, 1e12 / (400 * 2^30)
        // ps; the paper's 2.5 ps is the same per bit at 400 * 10^9 b/s.
        assert!((p.link_ps_per_byte() / 8.0 - 2.328).abs() < 1e-3);
    }

    #[test]
    fn sc17_values_follow_from_the_seeds_words() {
        let p = NetParams::sc17();
        // 150 M messages/s.
        assert!((p.g_ns - 1e9 / 150e6).abs() < 0.05);
        // A 10 m wire at the speed of light.
        assert!((p.wire_ns - 10.0 / 299_792_458.0 * 1e9).abs() < 0.05);
        assert_eq!((p.switch_ports, p.mtu), (36, 4096));
        assert_eq!(
            (p.discrete.latency_ns, p.discrete.bandwidth_gib_s),
            (250.0, 64.0)
        );
        assert_eq!(p.integrated.bandwidth_gib_s, 150.0);
        // The host CPU's copies, seed 004 §5.2 (Fig. 7a's RDMA unpack).
        assert_eq!(p.host_copy_gib_s, 8.7);
    }
}
