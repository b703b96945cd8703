//! Host memory shared between a host program and the `softspin nic`
//! process: the memory a host lends its NIC (seed 001 §3.3 "Flow 2"), here
//! a file in /dev/shm mapped `MAP_SHARED` by both, so the NIC's DMA writes
//! are the host's loads and the host's stores what the NIC DMA-reads, with
//! no copies, as host DRAM is shared by a host CPU and its NIC's DMA engine.
//!
//! Soundness of the mapping: its length is fixed when it is made (the NIC
//! sizes the file before mapping it and never truncates it while mapped; a
//! client maps the size the NIC announced, after checking the file has at
//! least that many bytes), and it is unmapped only when the last owner
//! drops it. The bytes are plain `u8`, so any value the other process
//! writes is valid; concurrent access from the other process is the
//! sharing a real host and NIC have over DRAM: a race gives torn data, as
//! it would there, and nothing in this process depends on those bytes for
//! memory safety. Within one process, the mapping hands out its bytes only
//! through `&mut self` (one view at a time).

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::{Error, HostBuffer, Result};

/// Where `--host-shm NAME` puts the file: /dev/shm/NAME, as `shm_open(NAME)`
/// would. Only a plain name is taken, so the NIC, which replaces a stale
/// file of that name, never touches a file elsewhere.
pub fn shm_path(name: &str) -> Result<PathBuf> {
    let plain = !name.is_empty()
        && name != "."
        && name != ".."
        && !name.contains('/')
        && !name.contains('\0');
    if !plain {
        return Err(Error::Invalid(format!(
            "host shm name `{name}`: a file name (the file is /dev/shm/NAME), without `/`"
        )));
    }
    Ok(Path::new(softspin_cluster::local::SHM_DIR).join(name))
}

/// An exclusive `flock` on `f`, without waiting (held until `f` closes).
fn try_lock(f: &File) -> bool {
    // SAFETY: flock on a file descriptor we own; no memory involved.
    unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
}

/// A shared mapping of a whole file.
pub struct ShmMap {
    ptr: *mut u8,
    len: usize,
    path: PathBuf,
    /// Held (with its `flock`, for the NIC's side) while mapped.
    _file: File,
    /// The NIC's side removes the file when it goes.
    owner: bool,
}

// SAFETY: the mapping is plain memory owned by this value (no thread-local
// state); access goes through `&mut self` or through the `ShmSlice`s, which
// hand out disjoint ranges.
unsafe impl Send for ShmMap {}
// SAFETY: `&ShmMap` gives no access to the bytes (only `len`/`path`).
unsafe impl Sync for ShmMap {}

fn io(what: &str, path: &Path, e: std::io::Error) -> Error {
    Error::Io(format!("host shm {}: {what}: {e}", path.display()))
}

impl ShmMap {
    /// The NIC's side: create (or take over a stale) file of `len` zero
    /// bytes and map it. A file another live NIC holds is refused.
    pub fn create(path: &Path, len: usize) -> Result<ShmMap> {
        if len == 0 {
            return Err(Error::Invalid(format!(
                "host shm {}: no ECTX has a host window to share",
                path.display()
            )));
        }
        // A file left by a NIC that was killed is replaced by a new one,
        // not truncated: host programs that still map it keep their pages
        // (a truncated mapping would fault them with SIGBUS).
        if let Ok(old) = File::open(path) {
            if !try_lock(&old) {
                return Err(io(
                    "in use by another NIC",
                    path,
                    std::io::Error::last_os_error(),
                ));
            }
            std::fs::remove_file(path).map_err(|e| io("removing a stale one", path, e))?;
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .map_err(|e| io("create", path, e))?;
        if !try_lock(&file) {
            return Err(io("lock", path, std::io::Error::last_os_error()));
        }
        // Sized (zero-filled) before mapping, never after.
        file.set_len(len as u64).map_err(|e| io("size", path, e))?;
        Self::map(file, path, len, true)
    }

    /// A host program's side: map `len` bytes of the file the NIC made.
    pub fn open(path: &Path, len: usize) -> Result<ShmMap> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(|e| io("open", path, e))?;
        let have = file.metadata().map_err(|e| io("stat", path, e))?.len();
        if len == 0 || have < len as u64 {
            return Err(Error::Host(format!(
                "host shm {}: {have} bytes, the NIC announced {len}",
                path.display()
            )));
        }
        Self::map(file, path, len, false)
    }

    fn map(file: File, path: &Path, len: usize, owner: bool) -> Result<ShmMap> {
        // SAFETY: a new mapping (no address requested) of `len` bytes of a
        // file we hold open that has at least `len` bytes; the kernel picks
        // an address no Rust object uses.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io("mmap", path, std::io::Error::last_os_error()));
        }
        Ok(ShmMap {
            ptr: p.cast(),
            len,
            path: path.to_path_buf(),
            _file: file,
            owner,
        })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The whole mapping.
    pub fn bytes(&mut self) -> &mut [u8] {
        // SAFETY: `ptr` maps `len` bytes for as long as `self` lives (see
        // the module comment for the other process's access); `&mut self`
        // makes this the only view from this process.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }

    /// The address of the mapping (for bindings that wrap it in place).
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr
    }
}

impl Drop for ShmMap {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping `map` made; no view outlives
        // `self` (views borrow it, slices hold an `Arc` of it).
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
        if self.owner {
            // Host programs keep their own mappings of the pages.
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// `len` bytes at `offset` of a shared mapping, lent to the NIC as an
/// ECTX's host window (`Nic::lend`).
pub struct ShmSlice {
    map: Arc<ShmMap>,
    offset: usize,
    len: usize,
}

impl ShmSlice {
    /// Slices of one mapping must not overlap (the NIC's windows do not).
    pub fn new(map: &Arc<ShmMap>, offset: usize, len: usize) -> Result<ShmSlice> {
        if offset.checked_add(len).is_none_or(|e| e > map.len) {
            return Err(Error::Limit(format!(
                "host shm slice {offset}+{len} passes the mapping's {} bytes",
                map.len
            )));
        }
        Ok(ShmSlice {
            map: Arc::clone(map),
            offset,
            len,
        })
    }
}

impl HostBuffer for ShmSlice {
    fn bytes(&mut self) -> &mut [u8] {
        // SAFETY: inside the mapping (checked in `new`), which the `Arc`
        // keeps mapped; slices are made over disjoint ranges and each hands
        // out its range through `&mut self` only.
        unsafe { std::slice::from_raw_parts_mut(self.map.ptr.add(self.offset), self.len) }
    }
}
