//! The cluster's node table on a NIC (issue 27, docs/cluster.md): the host
//! gives its NIC the table and its rank; handlers read them from NIC memory
//! (`sdk/include/spin_node.h`), host programs from [`Nic::node_table`].

use softspin_cluster::{Node, NodeTable};
use softspin_hpu::abi;

use crate::{Error, Nic, Result};

impl Nic {
    /// Give the NIC the cluster's node table and its own rank: written to
    /// the node-table region of NIC memory (read-only for handlers) and kept
    /// for [`Nic::node_table`]. A rank outside the table, or more nodes
    /// than NIC memory holds (`abi::MAX_NODES`), is an error.
    pub fn set_node_table(&mut self, table: &NodeTable, rank: u32) -> Result<()> {
        table.check_rank(rank).map_err(Error::Invalid)?;
        let entries: Vec<abi::NodeEntry> = table
            .nodes()
            .iter()
            .map(|n| abi::NodeEntry {
                ipv4: n.ipv4.octets(),
                mac: n.mac.0,
                udp_port: n.udp_port,
            })
            .collect();
        let bytes = abi::encode_node_table(rank, &entries).ok_or_else(|| {
            Error::Limit(format!(
                "node table: {} nodes, a NIC holds at most {}",
                table.len(),
                abi::MAX_NODES
            ))
        })?;
        if !self.engine.set_node_table(&bytes) {
            return Err(Error::Limit(
                "node table: larger than its NIC memory region".into(),
            ));
        }
        self.nodes = Some((table.clone(), rank));
        Ok(())
    }

    /// The node table and this NIC's rank, if it was given one.
    pub fn node_table(&self) -> Option<(&NodeTable, u32)> {
        self.nodes.as_ref().map(|(t, r)| (t, *r))
    }

    /// This NIC's rank in its cluster, if it has a node table.
    pub fn rank(&self) -> Option<u32> {
        self.nodes.as_ref().map(|(_, r)| *r)
    }

    /// The node-table region as handlers see it: the header and `n` entries.
    pub fn node_table_bytes(&self, n: usize) -> Vec<u8> {
        self.engine.node_table_bytes(
            (abi::node_table::NODES + n as u32 * abi::node_table::ENTRY_SIZE) as usize,
        )
    }
}

/// Load a node table (docs/cluster.md) for the host API: an unreadable
/// file is an `Io` error, a bad table `InvalidArgument` naming the line and
/// field.
pub fn load_node_table(path: impl AsRef<std::path::Path>) -> Result<NodeTable> {
    NodeTable::load(path.as_ref()).map_err(|e| match e {
        softspin_cluster::TableError::Io { .. } => Error::Io(e.to_string()),
        e => Error::Invalid(e.to_string()),
    })
}

/// Check that `node`'s interface exists here (in this process's network
/// namespace) and has the table's MAC: a NIC started for that rank on
/// another machine or namespace fails here, clearly, instead of sending
/// frames with wrong addresses.
pub fn check_interface(node: &Node) -> Result<()> {
    let dir = std::path::Path::new("/sys/class/net").join(&node.iface);
    let Ok(mac) = std::fs::read_to_string(dir.join("address")) else {
        let ns = node
            .netns
            .as_deref()
            .map(|n| format!(" (the table puts it in namespace {n})"))
            .unwrap_or_default();
        return Err(Error::Invalid(format!(
            "node table: rank {} names interface `{}`, which does not exist here{ns}",
            node.rank, node.iface
        )));
    };
    let mac = mac.trim();
    if !mac.eq_ignore_ascii_case(&node.mac.to_string()) {
        return Err(Error::Invalid(format!(
            "node table: rank {}'s interface `{}` has MAC {mac}, the table says {}",
            node.rank, node.iface, node.mac
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &str = "[[node]]\nrank = 0\niface = \"lo\"\nipv4 = \"10.9.8.1\"\nmac = \"02:00:00:00:00:01\"\nudp_port = 9330\n\n\
        [[node]]\nrank = 1\niface = \"ssNoSuchIf\"\nipv4 = \"10.9.8.2\"\nmac = \"02:00:00:00:00:02\"\nudp_port = 4242\n";

    /// The bytes handlers read are the table's, in spin_node.h's layout.
    #[test]
    fn the_table_lands_in_nic_memory() {
        let t = NodeTable::parse(TABLE, "t").unwrap();
        let mut nic = Nic::open("pspin").unwrap();
        assert_eq!(nic.rank(), None);
        // Without a table: no rank, no nodes.
        assert_eq!(
            nic.node_table_bytes(0)[..8],
            [0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]
        );
        nic.set_node_table(&t, 1).unwrap();
        assert_eq!(nic.rank(), Some(1));
        assert_eq!(nic.node_table().unwrap().0, &t);
        let b = nic.node_table_bytes(2);
        assert_eq!(b[..8], [1, 0, 0, 0, 2, 0, 0, 0]);
        assert_eq!(
            b[32..48],
            [10, 9, 8, 2, 2, 0, 0, 0, 0, 2, 0x10, 0x92, 1, 0, 0, 0]
        );
        let e = nic.set_node_table(&t, 2).unwrap_err().to_string();
        assert!(e.contains("rank 2 is not in the node table"), "{e}");
    }

    #[test]
    fn an_unknown_interface_is_named() {
        let t = NodeTable::parse(TABLE, "t").unwrap();
        let e = check_interface(t.node(1).unwrap()).unwrap_err().to_string();
        assert_eq!(
            e,
            "node table: rank 1 names interface `ssNoSuchIf`, which does not exist here"
        );
        // lo exists, with MAC 00:00:00:00:00:00.
        let e = check_interface(t.node(0).unwrap()).unwrap_err().to_string();
        assert!(e.contains("has MAC 00:00:00:00:00:00"), "{e}");
    }
}
