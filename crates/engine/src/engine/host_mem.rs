//! Host memory behind the NIC's host DMA (seed 001 §3.3 "Flow 2"; seed 000
//! §3.3 Host DMA): the memory the host lends the NIC, as buffers at host
//! addresses.

use super::*;

/// Host memory behind the NIC's DMA engine. The simulator keeps plain
/// buffers; the live NIC and the host API plug their own in.
pub trait HostMemory: std::any::Any {
    /// Copy out `out.len()` bytes at host address `addr`; false if unmapped.
    fn read(&mut self, addr: u64, out: &mut [u8]) -> bool;
    fn write(&mut self, addr: u64, data: &[u8]) -> bool;
}

/// Memory the host lends the NIC: a `Vec<u8>`, or (through the host API's
/// bindings) an application's own array, used in place.
pub trait HostBuffer: Send {
    fn bytes(&mut self) -> &mut [u8];
}

impl HostBuffer for Vec<u8> {
    fn bytes(&mut self) -> &mut [u8] {
        self
    }
}

/// Host memory as a set of buffers at host addresses.
#[derive(Default)]
pub struct HostRegions {
    pub(super) regions: Vec<(u64, Box<dyn HostBuffer>)>,
}

impl HostRegions {
    pub(super) fn find(&mut self, addr: u64, len: usize) -> Option<(&mut [u8], usize)> {
        self.regions.iter_mut().find_map(|(base, buf)| {
            let off = addr.checked_sub(*base)? as usize;
            let b = buf.bytes();
            (off.checked_add(len)? <= b.len()).then_some((b, off))
        })
    }
}

impl HostMemory for HostRegions {
    fn read(&mut self, addr: u64, out: &mut [u8]) -> bool {
        match self.find(addr, out.len()) {
            Some((b, o)) => {
                out.copy_from_slice(&b[o..o + out.len()]);
                true
            }
            None => false,
        }
    }
    fn write(&mut self, addr: u64, data: &[u8]) -> bool {
        match self.find(addr, data.len()) {
            Some((b, o)) => {
                b[o..o + data.len()].copy_from_slice(data);
                true
            }
            None => false,
        }
    }
}

impl Engine {
    /// Replace the host memory (the simulator's default is `HostRegions`).
    pub fn set_host_memory(&mut self, host: Box<dyn HostMemory>) {
        self.core.host = host;
    }

    /// Register a zeroed host buffer at `base` (with the default host memory).
    pub fn add_host_region(&mut self, base: u64, size: usize) -> Result<(), String> {
        self.add_host_buffer(base, Box::new(vec![0u8; size]))
    }

    /// Lend the NIC `buf` as host memory at host address `base`.
    pub fn add_host_buffer(
        &mut self,
        base: u64,
        mut buf: Box<dyn HostBuffer>,
    ) -> Result<(), String> {
        let size = buf.bytes().len() as u64;
        let regions = (&mut *self.core.host as &mut dyn std::any::Any)
            .downcast_mut::<HostRegions>()
            .ok_or("the engine's host memory is not HostRegions")?;
        let end = base
            .checked_add(size)
            .ok_or_else(|| format!("host region at 0x{base:x} wraps around"))?;
        for (b, r) in regions.regions.iter_mut() {
            let e = *b + r.bytes().len() as u64;
            if base < e && *b < end {
                return Err(format!(
                    "host region 0x{base:x}+0x{size:x} overlaps the one at 0x{b:x}"
                ));
            }
        }
        regions.regions.push((base, buf));
        Ok(())
    }

    /// Take back the host buffer registered at `base`.
    pub fn remove_host_buffer(&mut self, base: u64) -> Option<Box<dyn HostBuffer>> {
        let regions =
            (&mut *self.core.host as &mut dyn std::any::Any).downcast_mut::<HostRegions>()?;
        let k = regions.regions.iter().position(|r| r.0 == base)?;
        Some(regions.regions.remove(k).1)
    }

    pub fn host_memory(&mut self) -> &mut dyn HostMemory {
        &mut *self.core.host
    }
}
