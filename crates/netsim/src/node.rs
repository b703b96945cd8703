//! The node table of a simulated network: node k's addresses derive from k
//! (k + 1 in the low bytes, so no address is all zeros), and a frame's
//! destination MAC names the node it goes to.

use softspin_hpu::abi;

/// Locally administered MACs 02:53:xx:xx:xx:xx ("S" for softspin).
const MAC_PREFIX: [u8; 2] = [0x02, 0x53];

pub fn mac(k: u32) -> [u8; 6] {
    let b = (k + 1).to_be_bytes();
    [MAC_PREFIX[0], MAC_PREFIX[1], b[0], b[1], b[2], b[3]]
}

pub fn ipv4(k: u32) -> [u8; 4] {
    let b = (k + 1).to_be_bytes();
    [10, b[1], b[2], b[3]]
}

/// The node a frame's destination MAC names, if it is one of `n`.
pub fn of_frame(frame: &[u8], n: u32) -> Option<u32> {
    let d = frame.get(0..6)?;
    if d[0..2] != MAC_PREFIX {
        return None;
    }
    let k = u32::from_be_bytes([d[2], d[3], d[4], d[5]]).checked_sub(1)?;
    (k < n).then_some(k)
}

/// Node r's entry in every node's table (what spin_node.h reads).
pub fn entry(r: u32, udp_port: u16) -> abi::NodeEntry {
    abi::NodeEntry {
        ipv4: ipv4(r),
        mac: mac(r),
        udp_port,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_name_their_node() {
        for k in [0u32, 1, 255, 256, 16383] {
            let mut f = mac(k).to_vec();
            f.extend([0u8; 8]);
            assert_eq!(of_frame(&f, 16384), Some(k));
            assert_eq!(of_frame(&f, k), None, "outside the network");
        }
        assert_eq!(ipv4(0), [10, 0, 0, 1]);
        assert_eq!(ipv4(300), [10, 0, 1, 45]);
        assert_eq!(of_frame(&[0xff; 14], 4), None);
    }
}
