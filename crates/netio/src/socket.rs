//! The socket port. OWNER: I/O helper. Provides `SocketPort` (implements
//! `Port`) with `SocketPort::open(iface) -> Result<SocketPort, NetError>`.

use crate::NetError;

pub struct SocketPort;

impl SocketPort {
    pub fn open(iface: &str) -> Result<crate::port::NullPort, NetError> {
        Err(NetError::Unsupported(format!("socket port on {iface}: not built yet")))
    }
}
