//! The simulated system's parameters, as one named profile: seed 004
//! §4.2-4.3 (sPIN, SC'17). The extracted text of the seed lost the symbols'
//! values; they are taken from the published paper (Hoefler et al., SC'17,
//! §4.2-4.3) and cited per field. A `--params FILE` (TOML, the same field
//! names) overrides any of them.

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
    /// L, one way.
    pub latency_ns: f64,
    /// 1 / G.
    pub bandwidth_gib_s: f64,
}

/// Network and node parameters (LogGOPS, seed 004 §4.2).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NetParams {
    /// The profile's name, reported with every result.
    pub name: String,
    /// o: CPU overhead to inject a message (not parallelisable).
    pub o_ns: f64,
    /// g: gap between two messages a NIC injects (1 / message rate;
    /// 150 M messages/s, ConnectX-4).
    pub g_ns: f64,
    /// Link bandwidth (G = 1 / bandwidth per byte).
    pub link_gib_s: f64,
    /// Time a packet takes through one switch.
    pub switch_ns: f64,
    /// Propagation delay of one cable.
    pub wire_ns: f64,
    /// Ports per switch of the fat tree.
    pub switch_ports: u32,
    /// Largest packet (payload) on the wire.
    pub mtu: u32,
    /// The discrete NIC's DMA path (PCIe 4.0 x32).
    pub discrete: DmaParams,
    /// The integrated NIC's DMA path (the memory controller).
    pub integrated: DmaParams,
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
    }
}
