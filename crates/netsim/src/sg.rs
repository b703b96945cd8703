//! The few functions of SimGrid's C API (3.32, `simgrid/{engine,actor,
//! mailbox,comm,host}.h`) the coupling uses, declared by hand.
//!
//! SimGrid keeps its state in globals: one simulation per process, ever
//! (it cannot be re-initialised). [`claim`] enforces it; tests that run
//! simulations use one process each (the CLI's `softspin netsim`).

use std::ffi::{c_char, c_int, c_long, c_void, CString};
use std::sync::atomic::{AtomicBool, Ordering};

#[repr(C)]
pub struct Opaque {
    _p: [u8; 0],
}
pub type Host = *mut Opaque;
pub type Actor = *mut Opaque;
pub type Mailbox = *mut Opaque;
pub type Comm = *mut Opaque;
pub type MainFn = extern "C" fn(c_int, *mut *mut c_char);

#[link(name = "simgrid")]
extern "C" {
    pub fn simgrid_init(argc: *mut c_int, argv: *mut *mut c_char);
    pub fn simgrid_load_platform(file: *const c_char);
    pub fn simgrid_run();
    pub fn simgrid_get_clock() -> f64;
    pub fn sg_host_by_name(name: *const c_char) -> Host;
    pub fn sg_actor_init(name: *const c_char, host: Host) -> Actor;
    pub fn sg_actor_start_(actor: Actor, code: MainFn, argc: c_int, argv: *const *const c_char);
    pub fn sg_actor_sleep_for(duration: f64);
    pub fn sg_actor_sleep_until(t: f64);
    pub fn sg_actor_set_stacksize(actor: Actor, size: u32);
    pub fn sg_actor_self() -> Actor;
    pub fn sg_actor_suspend(actor: Actor);
    pub fn sg_actor_resume(actor: Actor);
    pub fn sg_mailbox_by_name(name: *const c_char) -> Mailbox;
    pub fn sg_mailbox_set_receiver(name: *const c_char);
    pub fn sg_mailbox_put_init(mb: Mailbox, payload: *mut c_void, size: c_long) -> Comm;
    pub fn sg_comm_detach(comm: Comm, clean: Option<extern "C" fn(*mut c_void)>);
    pub fn sg_mailbox_get_async(mb: Mailbox, data: *mut *mut c_void) -> Comm;
    pub fn sg_comm_unref(comm: Comm);
    /// `simgrid::s4u::Comm::wait_any_for(const std::vector<CommPtr>&,
    /// double)` (static). The C wrapper `sg_comm_wait_any_for` of 3.32
    /// frees every comm it was given when it times out (its intrusive
    /// pointers are built without a reference and released on return), so
    /// a receive could not outlive a timed wait; the C++ function takes the
    /// vector by reference and leaves the references alone.
    #[link_name = "_ZN7simgrid3s4u4Comm12wait_any_forERKSt6vectorIN5boost13intrusive_ptrIS1_EESaIS5_EEd"]
    fn s4u_comm_wait_any_for(comms: *const CxxVec, timeout: f64) -> isize;
}

/// libstdc++'s `std::vector<T*>` (begin, end, end of storage): a
/// `std::vector<boost::intrusive_ptr<Comm>>` of one element, borrowed.
#[repr(C)]
struct CxxVec {
    start: *mut Comm,
    finish: *mut Comm,
    end: *mut Comm,
}

/// Wait for `comm` (a receive of ours) at most `timeout` seconds (< 0:
/// without limit): true once it completed (the caller then releases it with
/// `sg_comm_unref`), false on timeout (it stays posted and ours).
///
/// # Safety
/// In an actor of an initialised SimGrid, with a live comm.
pub unsafe fn wait_one_for(comm: Comm, timeout: f64) -> bool {
    let mut one = [comm];
    let p = one.as_mut_ptr();
    let v = CxxVec {
        start: p,
        // SAFETY: one past the end of a one-element array.
        finish: unsafe { p.add(1) },
        // SAFETY: as above.
        end: unsafe { p.add(1) },
    };
    // SAFETY: `v` describes a valid vector of one intrusive pointer that
    // lives across the call; the callee only reads it.
    unsafe { s4u_comm_wait_any_for(&v, timeout) == 0 }
}

static CLAIMED: AtomicBool = AtomicBool::new(false);

/// Take this process's one SimGrid simulation; `false` if it was taken.
pub fn claim() -> bool {
    !CLAIMED.swap(true, Ordering::SeqCst)
}

/// `simgrid_init` with `--cfg=` settings and a quiet log.
pub fn init(cfg: &[String]) {
    let mut args: Vec<CString> = vec![CString::new("softspin-netsim").unwrap_or_default()];
    for c in cfg {
        args.push(CString::new(format!("--cfg={c}")).unwrap_or_default());
    }
    // SimGrid's own messages: warnings and worse only (not its banner and
    // per-setting notes).
    args.push(CString::new("--log=root.thresh:warning").unwrap_or_default());
    args.push(CString::new("--log=xbt_cfg.thresh:warning").unwrap_or_default());
    let mut ptrs: Vec<*mut c_char> = args.iter().map(|a| a.as_ptr() as *mut c_char).collect();
    ptrs.push(std::ptr::null_mut());
    let mut argc = args.len() as c_int;
    // SAFETY: argv is a NULL-terminated array of C strings that outlive the
    // call (SimGrid copies what it keeps); argc counts them.
    unsafe { simgrid_init(&mut argc, ptrs.as_mut_ptr()) };
    // SimGrid may keep pointers into argv: keep the strings alive.
    std::mem::forget(args);
}

/// The simulated clock in seconds.
pub fn now() -> f64 {
    // SAFETY: reads a global of an initialised SimGrid.
    unsafe { simgrid_get_clock() }
}

pub fn cstr(s: &str) -> CString {
    CString::new(s).unwrap_or_default()
}
