//! The node table: which host (interface, IPv4, MAC, UDP port) is which
//! rank. A TOML file with one `[[node]]` per rank (docs/cluster.md):
//!
//! ```toml
//! [[node]]
//! rank = 0
//! iface = "sCa0e"
//! ipv4 = "10.100.7.1"
//! mac = "02:53:0a:64:07:01"
//! udp_port = 9330
//! netns = "sCa0"        # optional: the namespace `cluster up` made
//! ```
//!
//! Ranks are 0..N-1, each exactly once; IPv4 and MAC addresses are unique.
//! Errors name the file, the line and the field.

use std::collections::HashMap;
use std::fmt;
use std::net::Ipv4Addr;
use std::path::Path;
use std::str::FromStr;

use serde::Deserialize;
use toml::Spanned;

/// Longest Linux interface name (IFNAMSIZ - 1).
pub const IFNAME_MAX: usize = 15;

/// An Ethernet address (as on the wire).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Mac(pub [u8; 6]);

impl fmt::Display for Mac {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        write!(
            f,
            "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            b[0], b[1], b[2], b[3], b[4], b[5]
        )
    }
}

impl FromStr for Mac {
    type Err = String;
    /// Six two-digit hex bytes separated by `:`; a node's address, so
    /// not a group (multicast/broadcast) address and not all zeros.
    fn from_str(s: &str) -> Result<Mac, String> {
        let want = "six two-digit hex bytes separated by `:` (e.g. 02:53:0a:64:07:01)";
        let parts: Vec<&str> = s.split(':').collect();
        if parts.len() != 6 {
            return Err(format!("`{s}` is not a MAC address: {want}"));
        }
        let mut b = [0u8; 6];
        for (i, p) in parts.iter().enumerate() {
            if p.len() != 2 || !p.bytes().all(|c| c.is_ascii_hexdigit()) {
                return Err(format!("`{s}` is not a MAC address: {want}"));
            }
            b[i] = u8::from_str_radix(p, 16).map_err(|e| e.to_string())?;
        }
        if b[0] & 1 != 0 {
            return Err(format!(
                "`{s}` is a group (multicast or broadcast) address, not a node's"
            ));
        }
        if b == [0; 6] {
            return Err(format!("`{s}` is all zeros, not a node's address"));
        }
        Ok(Mac(b))
    }
}

/// One node: where rank `rank`'s NIC is reached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    pub rank: u32,
    /// The interface its NIC attaches to (on its host, in `netns` if given).
    pub iface: String,
    pub ipv4: Ipv4Addr,
    pub mac: Mac,
    /// The UDP port its NIC's handlers serve.
    pub udp_port: u16,
    /// The network namespace the node lives in (`cluster up`); `None` on a
    /// real machine.
    pub netns: Option<String>,
}

/// A validated node table: `nodes[k].rank == k` for every k.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeTable {
    nodes: Vec<Node>,
}

/// A node table that could not be read or is not valid.
#[derive(Debug, thiserror::Error)]
pub enum TableError {
    #[error("node table {origin}: {source}")]
    Io {
        origin: String,
        source: std::io::Error,
    },
    #[error("node table {origin}: {msg}")]
    Syntax { origin: String, msg: String },
    /// A field's value is wrong (line of the field).
    #[error("node table {origin}:{line}: `{field}`: {msg}")]
    Field {
        origin: String,
        line: usize,
        field: &'static str,
        msg: String,
    },
    /// The table as a whole is wrong (no nodes, a rank missing).
    #[error("node table {origin}: {msg}")]
    Table { origin: String, msg: String },
}

impl TableError {
    /// The line a field error points at.
    pub fn line(&self) -> Option<usize> {
        match self {
            TableError::Field { line, .. } => Some(*line),
            _ => None,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTable {
    #[serde(default)]
    node: Vec<RawNode>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNode {
    rank: Spanned<i64>,
    iface: Spanned<String>,
    ipv4: Spanned<String>,
    mac: Spanned<String>,
    udp_port: Spanned<i64>,
    netns: Option<Spanned<String>>,
}

/// Largest table the format takes; a NIC's memory holds fewer
/// (`softspin_hpu::abi::MAX_NODES`, checked when a NIC is given the table).
pub const MAX_TABLE_NODES: usize = 65536;

impl NodeTable {
    /// Read and validate a node table file.
    pub fn load(path: &Path) -> Result<NodeTable, TableError> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| TableError::Io {
            origin: origin.clone(),
            source,
        })?;
        NodeTable::parse(&text, &origin)
    }

    /// Parse and validate a node table; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<NodeTable, TableError> {
        let raw: RawTable = toml::from_str(text).map_err(|e| TableError::Syntax {
            origin: origin.into(),
            msg: e.to_string().trim_end().replace('\n', " "),
        })?;
        let line =
            |s: std::ops::Range<usize>| text[..s.start.min(text.len())].lines().count().max(1);
        let field =
            |sp: std::ops::Range<usize>, field: &'static str, msg: String| TableError::Field {
                origin: origin.into(),
                line: line(sp),
                field,
                msg,
            };
        if raw.node.is_empty() {
            return Err(TableError::Table {
                origin: origin.into(),
                msg: "no nodes: give one [[node]] per rank".into(),
            });
        }
        if raw.node.len() > MAX_TABLE_NODES {
            return Err(TableError::Table {
                origin: origin.into(),
                msg: format!("{} nodes: at most {MAX_TABLE_NODES}", raw.node.len()),
            });
        }
        let n = raw.node.len();
        let mut slots: Vec<Option<Node>> = vec![None; n];
        let mut rank_at: HashMap<u32, usize> = HashMap::new();
        let mut ip_at: HashMap<Ipv4Addr, usize> = HashMap::new();
        let mut mac_at: HashMap<Mac, usize> = HashMap::new();
        for r in raw.node {
            let rank_line = line(r.rank.span());
            let rank = *r.rank.get_ref();
            if rank < 0 || rank as usize >= n {
                return Err(field(
                    r.rank.span(),
                    "rank",
                    format!("{rank} is out of range: {n} nodes have ranks 0..={}", n - 1),
                ));
            }
            let rank = rank as u32;
            if let Some(first) = rank_at.insert(rank, rank_line) {
                return Err(field(
                    r.rank.span(),
                    "rank",
                    format!("rank {rank} appears twice (first at line {first})"),
                ));
            }
            let iface = r.iface.get_ref();
            if iface.is_empty()
                || iface.len() > IFNAME_MAX
                || iface.bytes().any(|c| {
                    b"/:\\\"".contains(&c) || c.is_ascii_whitespace() || c.is_ascii_control()
                })
            {
                return Err(field(
                    r.iface.span(),
                    "iface",
                    format!("`{iface}` is not an interface name (1..={IFNAME_MAX} bytes, no `/`, `:` or blanks)"),
                ));
            }
            let ipv4: Ipv4Addr = r.ipv4.get_ref().parse().map_err(|_| {
                field(
                    r.ipv4.span(),
                    "ipv4",
                    format!(
                        "`{}` is not an IPv4 address (dotted quad, e.g. 10.0.0.1)",
                        r.ipv4.get_ref()
                    ),
                )
            })?;
            if ipv4.is_unspecified() || ipv4.is_broadcast() || ipv4.is_multicast() {
                return Err(field(
                    r.ipv4.span(),
                    "ipv4",
                    format!("{ipv4} is not a host's address"),
                ));
            }
            if let Some(first) = ip_at.insert(ipv4, rank_line) {
                return Err(field(
                    r.ipv4.span(),
                    "ipv4",
                    format!(
                        "{ipv4} is also rank {}'s (line {first})",
                        rank_of(&rank_at, first)
                    ),
                ));
            }
            let mac: Mac = r
                .mac
                .get_ref()
                .parse()
                .map_err(|e| field(r.mac.span(), "mac", e))?;
            if let Some(first) = mac_at.insert(mac, rank_line) {
                return Err(field(
                    r.mac.span(),
                    "mac",
                    format!(
                        "{mac} is also rank {}'s (line {first})",
                        rank_of(&rank_at, first)
                    ),
                ));
            }
            let port = *r.udp_port.get_ref();
            if !(1..=65535).contains(&port) {
                return Err(field(
                    r.udp_port.span(),
                    "udp_port",
                    format!("{port} is not a UDP port (1..=65535)"),
                ));
            }
            let netns = match r.netns {
                Some(s)
                    if s.get_ref().is_empty()
                        || s.get_ref().chars().any(|c| {
                            matches!(c, '/' | '"' | '\\') || c.is_whitespace() || c.is_control()
                        }) =>
                {
                    return Err(field(
                        s.span(),
                        "netns",
                        format!("{:?} is not a namespace name (no `/`, quotes, blanks or control characters)", s.get_ref()),
                    ))
                }
                s => s.map(|s| s.into_inner()),
            };
            slots[rank as usize] = Some(Node {
                rank,
                iface: r.iface.into_inner(),
                ipv4,
                mac,
                udp_port: port as u16,
                netns,
            });
        }
        // n entries with distinct ranks in 0..n: every rank is there.
        let nodes = slots
            .into_iter()
            .map(|s| s.expect("ranks 0..n each once"))
            .collect();
        Ok(NodeTable { nodes })
    }

    /// Build a table from nodes (any order); the same checks as a file.
    pub fn new(nodes: Vec<Node>) -> Result<NodeTable, TableError> {
        NodeTable::parse(&NodeTable::text_of(&nodes), "(built)")
    }

    fn text_of(nodes: &[Node]) -> String {
        let mut s = String::new();
        for n in nodes {
            s += &format!(
                "[[node]]\nrank = {}\niface = \"{}\"\nipv4 = \"{}\"\nmac = \"{}\"\nudp_port = {}\n",
                n.rank, n.iface, n.ipv4, n.mac, n.udp_port
            );
            if let Some(ns) = &n.netns {
                s += &format!("netns = \"{ns}\"\n");
            }
            s += "\n";
        }
        s
    }

    /// The table as TOML (what [`NodeTable::parse`] reads back).
    pub fn to_toml(&self) -> String {
        format!(
            "# softspin node table (docs/cluster.md): one [[node]] per rank.\n\n{}",
            NodeTable::text_of(&self.nodes)
        )
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Node `rank`, if the table has it.
    pub fn node(&self, rank: u32) -> Option<&Node> {
        self.nodes.get(rank as usize)
    }

    /// The nodes in rank order.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// Node `rank`, or an error naming the table's ranks.
    pub fn check_rank(&self, rank: u32) -> Result<&Node, String> {
        self.node(rank).ok_or_else(|| {
            format!(
                "rank {rank} is not in the node table ({} nodes: ranks 0..={})",
                self.len(),
                self.len() - 1
            )
        })
    }
}

fn rank_of(rank_at: &HashMap<u32, usize>, line: usize) -> u32 {
    rank_at
        .iter()
        .find(|(_, l)| **l == line)
        .map(|(r, _)| *r)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(k: u32) -> String {
        format!(
            "[[node]]\nrank = {k}\niface = \"eth{k}\"\nipv4 = \"10.1.2.{}\"\nmac = \"02:00:00:00:00:{:02x}\"\nudp_port = 9330\n\n",
            k + 1,
            k + 1
        )
    }

    fn err(text: &str) -> String {
        NodeTable::parse(text, "t.toml").unwrap_err().to_string()
    }

    #[test]
    fn a_table_parses_in_rank_order_and_round_trips() {
        let text = format!("{}{}{}", node(2), node(0), node(1));
        let t = NodeTable::parse(&text, "t.toml").unwrap();
        assert_eq!(t.len(), 3);
        for (k, n) in t.nodes().iter().enumerate() {
            assert_eq!(n.rank, k as u32);
            assert_eq!(n.iface, format!("eth{k}"));
            assert_eq!(n.ipv4, Ipv4Addr::new(10, 1, 2, k as u8 + 1));
            assert_eq!(n.mac, Mac([2, 0, 0, 0, 0, k as u8 + 1]));
            assert_eq!(n.udp_port, 9330);
            assert_eq!(n.netns, None);
        }
        assert_eq!(NodeTable::parse(&t.to_toml(), "again").unwrap(), t);
        assert!(t.node(3).is_none());
        assert!(t.check_rank(3).unwrap_err().contains("ranks 0..=2"));
    }

    #[test]
    fn a_duplicate_rank_names_both_lines() {
        // node(1) twice: its rank line is line 2 of each block (7 lines).
        let e = err(&format!("{}{}", node(1), node(1)));
        assert_eq!(
            e,
            "node table t.toml:9: `rank`: rank 1 appears twice (first at line 2)"
        );
    }

    #[test]
    fn a_missing_rank_is_out_of_range() {
        let e = err(&format!("{}{}", node(0), node(2)));
        assert_eq!(
            e,
            "node table t.toml:9: `rank`: 2 is out of range: 2 nodes have ranks 0..=1"
        );
        assert!(err("").contains("no nodes"), "{}", err(""));
    }

    #[test]
    fn duplicate_and_bad_addresses_name_line_and_field() {
        let dup_ip = format!("{}{}", node(0), node(1).replace("10.1.2.2", "10.1.2.1"));
        assert_eq!(
            err(&dup_ip),
            "node table t.toml:11: `ipv4`: 10.1.2.1 is also rank 0's (line 2)"
        );
        let dup_mac = format!("{}{}", node(0), node(1).replace(":02\"", ":01\""));
        assert_eq!(
            err(&dup_mac),
            "node table t.toml:12: `mac`: 02:00:00:00:00:01 is also rank 0's (line 2)"
        );
        for (bad, why) in [
            ("02:00:00:00:00", "not a MAC address"),
            ("02:00:00:00:00:0g", "not a MAC address"),
            ("02-00-00-00-00-01", "not a MAC address"),
            ("03:00:00:00:00:01", "group"),
            ("ff:ff:ff:ff:ff:ff", "group"),
            ("00:00:00:00:00:00", "all zeros"),
        ] {
            let e = err(&node(0).replace("02:00:00:00:00:01", bad));
            assert!(e.starts_with("node table t.toml:5: `mac`: "), "{e}");
            assert!(e.contains(why), "{bad}: {e}");
        }
        let e = err(&node(0).replace("10.1.2.1", "10.1.2"));
        assert!(
            e.starts_with("node table t.toml:4: `ipv4`: `10.1.2` is not"),
            "{e}"
        );
        let e = err(&node(0).replace("10.1.2.1", "224.0.0.1"));
        assert!(e.contains("not a host's address"), "{e}");
        let e = err(&node(0).replace("9330", "0"));
        assert!(e.starts_with("node table t.toml:6: `udp_port`"), "{e}");
        let e = err(&node(0).replace("9330", "70000"));
        assert!(e.contains("not a UDP port"), "{e}");
        let e = err(&node(0).replace("\"eth0\"", "\"an-interface-name\""));
        assert!(e.starts_with("node table t.toml:3: `iface`"), "{e}");
        let e = err(&format!("{}netns = \"a\\nb\"\n", node(0)));
        assert!(
            e.starts_with("node table t.toml:8: `netns`: \"a\\nb\" is not"),
            "{e}"
        );
        let e = err(&node(0).replace("rank = 0", "rank = -1"));
        assert!(e.contains("`rank`: -1 is out of range"), "{e}");
    }

    #[test]
    fn unknown_or_missing_fields_are_syntax_errors() {
        let e = err(&node(0).replace("udp_port", "port"));
        assert!(
            e.starts_with("node table t.toml: ") && e.contains("port"),
            "{e}"
        );
        let e = err(&node(0).replace("mac = \"02:00:00:00:00:01\"\n", ""));
        assert!(e.contains("missing field `mac`"), "{e}");
        let e = err("[[node]\n");
        assert!(e.starts_with("node table t.toml: "), "{e}");
    }

    #[test]
    fn new_checks_as_parse_does() {
        let t = NodeTable::parse(&format!("{}{}", node(0), node(1)), "x").unwrap();
        let mut nodes = t.nodes().to_vec();
        assert_eq!(NodeTable::new(nodes.clone()).unwrap(), t);
        nodes[1].rank = 0;
        assert!(NodeTable::new(nodes)
            .unwrap_err()
            .to_string()
            .contains("appears twice"));
    }
}
