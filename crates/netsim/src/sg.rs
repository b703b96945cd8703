//! The few functions of SimGrid's C API (3.32, `simgrid/{engine,actor,
//! mailbox,comm,host}.h`) the coupling uses, declared by hand.
//!
//! SimGrid keeps its state in globals: one simulation per process, ever
//! (it cannot be re-initialised). [`claim`] enforces it; tests that run
//! simulations use one process each (the CLI's `softspin netsim`).

use std::ffi::{c_char, c_int, c_long, c_void, CString};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

#[repr(C)]
pub struct Opaque {
    _p: [u8; 0],
}
pub type Host = *mut Opaque;
pub type Actor = *mut Opaque;
pub type Mailbox = *mut Opaque;
pub type Comm = *mut Opaque;
pub type MainFn = extern "C" fn(c_int, *mut *mut c_char);

/// The library, opened when a simulation starts, not linked: linked, its
/// and ns-3's ~20 shared objects and static constructors cost every
/// `softspin` command ~20 ms and ~30 MB before `main`, and a machine
/// without SimGrid could not run the rest of softspin.
const LIBS: [&str; 2] = ["libsimgrid.so.3.32", "libsimgrid.so"];

/// Declares each function once: a field of [`Api`] resolved by name at
/// [`load`], and a wrapper with the C signature for the call sites.
macro_rules! simgrid_api {
    ($($(#[$m:meta])* $vis:vis fn $name:ident = $sym:literal ($($arg:ident: $ty:ty),*) $(-> $ret:ty)?;)*) => {
        struct Api {
            $($name: unsafe extern "C" fn($($ty),*) $(-> $ret)?,)*
            _lib: libloading::Library,
        }

        impl Api {
            fn open(libs: &[&str]) -> Result<Api, String> {
                let mut why = Vec::new();
                let lib = libs.iter().find_map(|name| {
                    // SAFETY: SimGrid's initialisers only set up its globals.
                    unsafe { libloading::Library::new(name) }.map_err(|e| why.push(e.to_string())).ok()
                }).ok_or_else(|| format!(
                    "SimGrid's C library (3.32) could not be loaded ({}): install it with `apt-get install libsimgrid-dev` (scripts/setup.sh does)",
                    why.join("; ")
                ))?;
                // SAFETY: each symbol is SimGrid 3.32's, with the signature
                // its header declares (copied above); the library stays
                // loaded as long as the pointers (`_lib`, never dropped).
                unsafe {
                    $(let $name = *lib
                        .get::<unsafe extern "C" fn($($ty),*) $(-> $ret)?>(concat!($sym, "\0").as_bytes())
                        .map_err(|e| format!("SimGrid's library has no `{}` (3.32 expected): {e}", $sym))?;)*
                    Ok(Api { $($name,)* _lib: lib })
                }
            }
        }

        $($(#[$m])*
        /// # Safety
        /// As SimGrid's C function of that name; after [`load`].
        $vis unsafe fn $name($($arg: $ty),*) $(-> $ret)? {
            // SAFETY: the caller keeps SimGrid's contract.
            unsafe { (api().$name)($($arg),*) }
        })*
    };
}

simgrid_api! {
    pub fn simgrid_init = "simgrid_init"(argc: *mut c_int, argv: *mut *mut c_char);
    pub fn simgrid_load_platform = "simgrid_load_platform"(file: *const c_char);
    pub fn simgrid_run = "simgrid_run"();
    pub fn simgrid_get_clock = "simgrid_get_clock"() -> f64;
    pub fn sg_host_by_name = "sg_host_by_name"(name: *const c_char) -> Host;
    pub fn sg_actor_init = "sg_actor_init"(name: *const c_char, host: Host) -> Actor;
    pub fn sg_actor_start_ = "sg_actor_start_"(actor: Actor, code: MainFn, argc: c_int, argv: *const *const c_char);
    pub fn sg_actor_sleep_for = "sg_actor_sleep_for"(duration: f64);
    pub fn sg_actor_sleep_until = "sg_actor_sleep_until"(t: f64);
    pub fn sg_actor_set_stacksize = "sg_actor_set_stacksize"(actor: Actor, size: u32);
    pub fn sg_actor_self = "sg_actor_self"() -> Actor;
    pub fn sg_actor_suspend = "sg_actor_suspend"(actor: Actor);
    pub fn sg_actor_resume = "sg_actor_resume"(actor: Actor);
    pub fn sg_mailbox_by_name = "sg_mailbox_by_name"(name: *const c_char) -> Mailbox;
    pub fn sg_mailbox_set_receiver = "sg_mailbox_set_receiver"(name: *const c_char);
    pub fn sg_mailbox_put_init = "sg_mailbox_put_init"(mb: Mailbox, payload: *mut c_void, size: c_long) -> Comm;
    pub fn sg_comm_detach = "sg_comm_detach"(comm: Comm, clean: Option<extern "C" fn(*mut c_void)>);
    pub fn sg_mailbox_get_async = "sg_mailbox_get_async"(mb: Mailbox, data: *mut *mut c_void) -> Comm;
    pub fn sg_comm_unref = "sg_comm_unref"(comm: Comm);
    /// `simgrid::s4u::Comm::wait_any_for(const std::vector<CommPtr>&,
    /// double)` (static). The C wrapper `sg_comm_wait_any_for` of 3.32
    /// frees every comm it was given when it times out (its intrusive
    /// pointers are built without a reference and released on return), so
    /// a receive could not outlive a timed wait; the C++ function takes the
    /// vector by reference and leaves the references alone.
    fn s4u_comm_wait_any_for = "_ZN7simgrid3s4u4Comm12wait_any_forERKSt6vectorIN5boost13intrusive_ptrIS1_EESaIS5_EEd"(comms: *const CxxVec, timeout: f64) -> isize;
}

static API: OnceLock<Result<Api, String>> = OnceLock::new();

/// Open SimGrid's library (once per process); the error says how to get it.
pub fn load() -> Result<(), String> {
    API.get_or_init(|| Api::open(&LIBS))
        .as_ref()
        .map(|_| ())
        .map_err(Clone::clone)
}

fn api() -> &'static Api {
    match API.get() {
        Some(Ok(api)) => api,
        // Every path into SimGrid starts at `sim::run`, which loads first.
        _ => unreachable!("sg::load() must succeed before SimGrid is called"),
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_library_is_a_clear_error() {
        let Err(e) = Api::open(&["libsimgrid-not-here.so.0"]) else {
            panic!("opened a library that does not exist")
        };
        assert!(
            e.contains("libsimgrid-not-here.so.0") && e.contains("apt-get install libsimgrid-dev"),
            "{e}"
        );
    }

    #[test]
    fn every_function_resolves_in_the_installed_library() {
        // scripts/setup.sh installs SimGrid: its absence is a failure here.
        if let Err(e) = Api::open(&LIBS) {
            panic!("{e}");
        }
    }
}
