//! RMA's memory registration from the host (docs/rma.md "Windows"): a host
//! exports part of an ECTX's host window under a key, with permissions, by
//! writing an entry of the window table the RMA target handlers read
//! (`examples/rma_target`, table layout `softspin_wire::rma::window`).

use softspin_wire::rma::window::{self, Window};

use crate::{Ectx, Error, Nic, Result};

impl Nic {
    /// Address of the ECTX's window table, and its host window's size.
    fn rma_table(&self, e: Ectx) -> Result<(u32, u64)> {
        let info = self.info(e)?;
        let table = info.rma_windows.ok_or_else(|| {
            Error::Invalid(format!(
                "ECTX {}: its image has no `{}` (not the RMA target handlers)",
                e.0,
                window::SYMBOL
            ))
        })?;
        let host = info.host_window.ok_or_else(|| {
            Error::Invalid(format!("ECTX {}: installed without a host window", e.0))
        })?;
        Ok((table, host.size))
    }

    /// The ECTX's window table as it is in NIC memory, free entries included.
    pub fn rma_windows(&self, e: Ectx) -> Result<Vec<Window>> {
        let (table, _) = self.rma_table(e)?;
        let bytes = self.nic_read(table, window::WINDOWS * window::ENTRY_LEN)?;
        Ok(bytes
            .chunks_exact(window::ENTRY_LEN)
            .map(|c| Window::from_bytes(c.try_into().unwrap_or(&[0; window::ENTRY_LEN])))
            .collect())
    }

    /// Export `size` bytes at `offset` in the ECTX's host window under `key`
    /// with `perms` (`window::PERM_*`), replacing the window of the same key
    /// if there is one. Requests naming `key` reach exactly these bytes.
    pub fn export_window(
        &mut self,
        e: Ectx,
        key: u32,
        offset: u64,
        size: u64,
        perms: u32,
    ) -> Result<()> {
        let (table, host_size) = self.rma_table(e)?;
        if key == window::KEY_FREE {
            return Err(Error::Invalid(format!(
                "RMA key {key} marks a free entry; export under another"
            )));
        }
        if perms == 0 || perms & !window::PERM_ALL != 0 {
            return Err(Error::Invalid(format!(
                "RMA permissions 0x{perms:x}: a non-empty set of READ 1, WRITE 2, ATOMIC 4"
            )));
        }
        if offset.checked_add(size).is_none_or(|end| end > host_size) {
            return Err(Error::Limit(format!(
                "RMA window {offset}+{size} passes the end of the ECTX's {host_size}-byte host window"
            )));
        }
        let windows = self.rma_windows(e)?;
        let slot = windows
            .iter()
            .position(|w| w.key == key)
            .or_else(|| windows.iter().position(|w| w.key == window::KEY_FREE))
            .ok_or_else(|| {
                Error::Limit(format!(
                    "RMA window table full ({} windows exported)",
                    window::WINDOWS
                ))
            })?;
        self.write_entry(
            table,
            slot,
            Window {
                key,
                perms,
                base: offset,
                size,
            },
        )
    }

    /// Withdraw the window exported under `key`; requests naming it get
    /// "bad key" from then on.
    pub fn unexport_window(&mut self, e: Ectx, key: u32) -> Result<()> {
        let (table, _) = self.rma_table(e)?;
        let slot = self
            .rma_windows(e)?
            .iter()
            .position(|w| key != window::KEY_FREE && w.key == key)
            .ok_or_else(|| Error::Invalid(format!("no RMA window is exported under key {key}")))?;
        self.write_entry(table, slot, Window::default())
    }

    /// The key is cleared first and written last, so a handler that finds
    /// the key finds the entry written whole (docs/rma.md says what one
    /// that matched it before the rewrite may see).
    fn write_entry(&mut self, table: u32, slot: usize, w: Window) -> Result<()> {
        // slot < WINDOWS and the table was read whole: no overflow.
        let at = table + (slot * window::ENTRY_LEN) as u32;
        let key = at + Window::KEY_OFFSET as u32;
        let bytes = w.to_bytes();
        let (k0, k1) = (Window::KEY_OFFSET, Window::KEY_OFFSET + 4);
        self.nic_write(key, &[0; 4])?;
        self.nic_write(at, &bytes[..k0])?;
        self.nic_write(at + k1 as u32, &bytes[k1..])?;
        self.nic_write(key, &bytes[k0..k1])
    }
}
