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
}

impl SparseHost {
    pub fn new(base: u64, size: u64) -> SparseHost {
        SparseHost {
            base,
            size,
            pages: HashMap::new(),
        }
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
}
