//! A node's host memory behind its NIC's DMA (seed 004 §4.3: the host side
//! of the discrete/integrated NIC), kept sparse: pages exist once written,
//! so a large window costs only what the handlers touch (16,384 nodes).

use softspin_engine::HostMemory;
use std::collections::HashMap;

const PAGE: u64 = 4096;

/// Host memory of one node: the window `[base, base + size)`.
pub struct SparseHost {
    base: u64,
    size: u64,
    pages: HashMap<u64, Box<[u8; PAGE as usize]>>,
    /// Ranges whose writes a host program waits for (`HostProgram::watch`),
    /// and the writes into them not yet taken: (address, length).
    watch: Vec<std::ops::Range<u64>>,
    touched: Vec<(u64, usize)>,
}

impl SparseHost {
    pub fn new(base: u64, size: u64) -> SparseHost {
        SparseHost {
            base,
            size,
            pages: HashMap::new(),
            watch: Vec::new(),
            touched: Vec::new(),
        }
    }

    /// Record the writes that touch `ranges` (the NIC's DMA and direct
    /// writes alike: the host sees its memory change, not how).
    pub fn set_watch(&mut self, ranges: Vec<std::ops::Range<u64>>) {
        self.watch = ranges;
    }

    /// The watched writes since the last call.
    pub fn take_touched(&mut self) -> Vec<(u64, usize)> {
        std::mem::take(&mut self.touched)
    }

    fn inside(&self, addr: u64, len: usize) -> bool {
        addr >= self.base
            && (addr - self.base)
                .checked_add(len as u64)
                .is_some_and(|e| e <= self.size)
    }
}

impl HostMemory for SparseHost {
    fn read(&mut self, addr: u64, out: &mut [u8]) -> bool {
        if !self.inside(addr, out.len()) {
            return false;
        }
        let mut done = 0;
        while done < out.len() {
            let a = addr + done as u64;
            let (page, off) = (a / PAGE, (a % PAGE) as usize);
            let n = (PAGE as usize - off).min(out.len() - done);
            match self.pages.get(&page) {
                Some(p) => out[done..done + n].copy_from_slice(&p[off..off + n]),
                None => out[done..done + n].fill(0),
            }
            done += n;
        }
        true
    }

    fn write(&mut self, addr: u64, data: &[u8]) -> bool {
        if !self.inside(addr, data.len()) {
            return false;
        }
        let mut done = 0;
        while done < data.len() {
            let a = addr + done as u64;
            let (page, off) = (a / PAGE, (a % PAGE) as usize);
            let n = (PAGE as usize - off).min(data.len() - done);
            let p = self
                .pages
                .entry(page)
                .or_insert_with(|| Box::new([0; PAGE as usize]));
            p[off..off + n].copy_from_slice(&data[done..done + n]);
            done += n;
        }
        let end = addr + data.len() as u64;
        if self.watch.iter().any(|r| r.start < end && addr < r.end) {
            self.touched.push((addr, data.len()));
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_back_across_pages_and_refuses_outside() {
        let mut h = SparseHost::new(0x1000, 3 * PAGE);
        let data: Vec<u8> = (0..5000u32).map(|i| (i * 7) as u8).collect();
        assert!(h.write(0x1000 + 100, &data));
        let mut out = vec![0u8; 5000];
        assert!(h.read(0x1000 + 100, &mut out));
        assert_eq!(out, data);
        let mut z = [1u8; 8];
        assert!(h.read(0x1000, &mut z));
        assert_eq!(z, [0; 8], "untouched bytes read as zero");
        assert!(!h.write(0x1000 + 3 * PAGE - 4, &[0; 8]), "past the end");
        assert!(!h.read(0xfff, &mut z), "below the base");
    }

    #[test]
    fn records_writes_that_touch_a_watched_range() {
        let mut h = SparseHost::new(0x1000, PAGE);
        h.set_watch(vec![0x1100..0x1108, 0x1f00..0x1f00]);
        assert!(h.write(0x10f8, &[0; 8]), "ends where the range starts");
        assert!(h.write(0x1200, &[0; 8]));
        assert!(h.take_touched().is_empty());
        assert!(h.write(0x10fc, &[0; 8]), "overlaps its first bytes");
        assert!(h.write(0x1107, &[0; 1]));
        assert_eq!(h.take_touched(), vec![(0x10fc, 8), (0x1107, 1)]);
        assert!(h.take_touched().is_empty(), "taken once");
    }
}
