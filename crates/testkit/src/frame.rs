//! Ethernet II / IPv4 / UDP frames built byte by byte, apart from
//! `softspin-wire` and the SDK, so tests can check those against them.

use crate::csum;

/// The addresses and header fields of the frames one test sends; `ipv4`
/// and `udp` wrap a payload in them.
#[derive(Clone, Debug)]
pub struct Frame {
    pub src_mac: [u8; 6],
    pub dst_mac: [u8; 6],
    pub src_ip: [u8; 4],
    pub dst_ip: [u8; 4],
    pub sport: u16,
    pub dport: u16,
    pub ident: u16,
    /// IPv4 flags and fragment offset (0x4000: Don't Fragment).
    pub flags_frag: u16,
    pub ttl: u8,
    /// The UDP checksum field as sent (0: none, legal in IPv4).
    pub udp_checksum: u16,
}

impl Default for Frame {
    /// 02:00:00:00:00:01 / 10.0.0.1:40000 to 02:00:00:00:00:02 / 10.0.0.2:9330
    /// (SLMP's port), DF, TTL 64, no UDP checksum.
    fn default() -> Frame {
        Frame {
            src_mac: [2, 0, 0, 0, 0, 1],
            dst_mac: [2, 0, 0, 0, 0, 2],
            src_ip: [10, 0, 0, 1],
            dst_ip: [10, 0, 0, 2],
            sport: 40000,
            dport: 9330,
            ident: 0,
            flags_frag: 0x4000,
            ttl: 64,
            udp_checksum: 0,
        }
    }
}

impl Frame {
    /// Ethernet and IPv4 (no options, header checksum filled) around `l4`,
    /// protocol `proto`.
    pub fn ipv4(&self, proto: u8, l4: &[u8]) -> Vec<u8> {
        let mut f = Vec::with_capacity(34 + l4.len());
        f.extend(self.dst_mac);
        f.extend(self.src_mac);
        f.extend([0x08, 0x00]);
        let mut ip = [0u8; 20];
        ip[0] = 0x45;
        ip[2..4].copy_from_slice(&((20 + l4.len()) as u16).to_be_bytes());
        ip[4..6].copy_from_slice(&self.ident.to_be_bytes());
        ip[6..8].copy_from_slice(&self.flags_frag.to_be_bytes());
        ip[8] = self.ttl;
        ip[9] = proto;
        ip[12..16].copy_from_slice(&self.src_ip);
        ip[16..20].copy_from_slice(&self.dst_ip);
        let c = csum(&ip);
        ip[10..12].copy_from_slice(&c.to_be_bytes());
        f.extend(ip);
        f.extend(l4);
        f
    }

    /// A UDP datagram of `payload` from `sport` to `dport`, in `ipv4`.
    pub fn udp(&self, payload: &[u8]) -> Vec<u8> {
        let mut u = Vec::with_capacity(8 + payload.len());
        u.extend(self.sport.to_be_bytes());
        u.extend(self.dport.to_be_bytes());
        u.extend(((8 + payload.len()) as u16).to_be_bytes());
        u.extend(self.udp_checksum.to_be_bytes());
        u.extend(payload);
        self.ipv4(17, &u)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every byte, against a frame written out by hand (the IPv4 checksum
    /// summed by hand: 0x4500+0x0021+0x0001+0x4000+0x4011+0x0a00+0x0001
    /// +0x0a00+0x0002 = 0xd936, complement 0x26c9).
    #[test]
    fn udp_frame_bytes() {
        let f = Frame {
            ident: 1,
            sport: 40000,
            dport: 7,
            ..Frame::default()
        }
        .udp(b"hello");
        let want: Vec<u8> = [
            &[2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00][..],
            &[0x45, 0, 0, 0x21, 0, 1, 0x40, 0, 64, 17, 0x26, 0xc9],
            &[10, 0, 0, 1, 10, 0, 0, 2],
            &[0x9c, 0x40, 0, 7, 0, 13, 0, 0],
            b"hello",
        ]
        .concat();
        assert_eq!(f, want);
    }
}
