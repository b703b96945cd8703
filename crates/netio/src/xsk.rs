//! AF_XDP sockets and the XDP port. OWNER: I/O helper. Provides `XdpPort`
//! (implements `Port`) with `XdpPort::open(iface) -> Result<XdpPort, NetError>`.

use crate::NetError;

pub struct XdpPort;

impl XdpPort {
    pub fn open(iface: &str) -> Result<crate::port::NullPort, NetError> {
        Err(NetError::Unsupported(format!("XDP port on {iface}: not built yet")))
    }
}
