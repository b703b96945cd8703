//! Network namespaces for the live tests, as RAII guards: `Topo::pair` (two
//! namespaces and a veth pair, `scripts/netns.sh`) and `Topo::lossy_link`
//! (three namespaces, the lossy link in the middle, `scripts/lossy_link.sh`).
//! The scripts stay the one definition of each topology (benchmarks and
//! people use them too); the guard names it uniquely per test process and
//! takes it down when dropped, panics included. Addresses live only inside
//! the namespaces, so tests may share a /24.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};
use std::thread::JoinHandle;

use crate::root;

/// Interface names are limited to 15 bytes (IFNAMSIZ - 1).
const IFNAME_MAX: usize = 15;

/// One topology, up until dropped.
pub struct Topo {
    script: &'static str,
    prefix: String,
    net: String,
    lossy_bin: PathBuf,
}

impl Topo {
    /// `scripts/netns.sh`: namespaces PREFIXnic and PREFIXpeer joined by the
    /// veth pair PREFIX0 / PREFIX1; `NET.1` is the NIC side, `NET.2` the peer.
    pub fn pair(tag: &str, net: &str) -> Topo {
        Topo::pair_with_queues(tag, net, 1)
    }

    /// As `pair`, each veth end with `queues` RX/TX queues.
    pub fn pair_with_queues(tag: &str, net: &str, queues: u32) -> Topo {
        Topo::up(
            "netns.sh",
            tag,
            "0",
            net,
            &[("SS_QUEUES", &queues.to_string())],
        )
    }

    /// `scripts/lossy_link.sh`: namespaces PREFIXa, PREFIXm, PREFIXb; the
    /// forwarder (`cmd(&["fwd", ...])`) runs in M; `NET.1` is B, `NET.2` A.
    pub fn lossy_link(tag: &str, net: &str) -> Topo {
        Topo::up("lossy_link.sh", tag, "a0", net, &[])
    }

    fn up(
        script: &'static str,
        tag: &str,
        longest_if: &str,
        net: &str,
        env: &[(&str, &str)],
    ) -> Topo {
        let t = Topo {
            script,
            prefix: unique_prefix(tag, longest_if.len()),
            net: net.into(),
            lossy_bin: root().join("target/release/softspin-lossy"),
        };
        let mut c = t.cmd(&["up"]);
        c.envs(env.iter().copied());
        let o = c.output().unwrap_or_else(|e| panic!("{script}: {e}"));
        assert!(
            o.status.success(),
            "{script} up ({}): {}",
            t.prefix,
            String::from_utf8_lossy(&o.stderr)
        );
        t
    }

    /// The forwarder `fwd` runs (default: the release build's); the lossy
    /// link's own tests name the binary cargo built for them.
    pub fn with_lossy_bin(mut self, bin: impl Into<PathBuf>) -> Topo {
        self.lossy_bin = bin.into();
        self
    }

    /// The prefix of every name of this topology.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Namespace PREFIX`side` (`nic`/`peer` for a pair, `a`/`m`/`b` for the link).
    pub fn ns(&self, side: &str) -> String {
        format!("{}{side}", self.prefix)
    }

    /// Interface PREFIX`suffix` (`0`/`1` for a pair; `a0`, `ma`, `mb`, `b0`).
    pub fn iface(&self, suffix: &str) -> String {
        format!("{}{suffix}", self.prefix)
    }

    /// Address `NET.host`.
    pub fn ip(&self, host: u8) -> String {
        format!("{}.{host}", self.net)
    }

    // The pair's names, as netns.sh gives them.
    pub fn nic_ns(&self) -> String {
        self.ns("nic")
    }
    pub fn peer_ns(&self) -> String {
        self.ns("peer")
    }
    pub fn nic_if(&self) -> String {
        self.iface("0")
    }
    pub fn peer_if(&self) -> String {
        self.iface("1")
    }
    pub fn nic_ip(&self) -> String {
        self.ip(1)
    }
    pub fn peer_ip(&self) -> String {
        self.ip(2)
    }

    /// The topology's script with ARGS (`exec SIDE CMD...`, `fwd FLAGS...`).
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(root().join("scripts").join(self.script));
        c.args(args)
            .env("SS_NS_PREFIX", &self.prefix)
            .env("SS_NET", &self.net)
            .env("SS_LOSSY_BIN", &self.lossy_bin);
        c
    }

    /// `cmd(args)` to completion.
    pub fn run(&self, args: &[&str]) -> Output {
        let mut c = self.cmd(args);
        c.output().unwrap_or_else(|e| panic!("{c:?}: {e}"))
    }

    /// CMD in namespace `ns`, to completion.
    pub fn exec(&self, ns: &str, cmd: &[&str]) -> Output {
        Command::new("ip")
            .args(["netns", "exec", ns])
            .args(cmd)
            .output()
            .unwrap_or_else(|e| panic!("ip netns exec {ns} {cmd:?}: {e}"))
    }
}

impl Drop for Topo {
    fn drop(&mut self) {
        // Never panic here: a drop during a panic would abort the test binary.
        match self.cmd(&["down"]).output() {
            Ok(o) if o.status.success() => {}
            Ok(o) => eprintln!(
                "{} down ({}): {}",
                self.script,
                self.prefix,
                String::from_utf8_lossy(&o.stderr)
            ),
            Err(e) => eprintln!("{} down ({}): {e}", self.script, self.prefix),
        }
    }
}

/// SS_TEST_NS_PREFIX (at most 3 bytes: keeps one person's runs apart from
/// another's on a shared machine), `tag` (the test, for whoever reads `ip
/// netns`), the process id in base 36 (concurrent runs apart), then one
/// character counting this process's topologies (its tests apart). Panics
/// when the longest interface name would pass 15 bytes.
pub fn unique_prefix(tag: &str, longest_suffix: usize) -> String {
    static MADE: AtomicU32 = AtomicU32::new(0);
    let user = std::env::var("SS_TEST_NS_PREFIX").unwrap_or_default();
    let n = MADE.fetch_add(1, Ordering::Relaxed) % 36;
    let prefix = format!("{user}{tag}{}{}", base36(std::process::id()), base36(n));
    assert!(
        user.len() <= 3 && prefix.len() + longest_suffix <= IFNAME_MAX,
        "namespace prefix {prefix:?} too long: interface names are at most {IFNAME_MAX} bytes \
         (SS_TEST_NS_PREFIX at most 3, shorter test tag)"
    );
    prefix
}

fn base36(mut n: u32) -> String {
    let mut d = Vec::new();
    loop {
        d.push(b"0123456789abcdefghijklmnopqrstuvwxyz"[(n % 36) as usize]);
        n /= 36;
        if n == 0 {
            break;
        }
    }
    d.reverse();
    String::from_utf8(d).unwrap()
}

/// Enters namespace `ns` on the calling thread (setns(2) moves only it).
fn enter(ns: &str) {
    let path = format!("/run/netns/{ns}");
    let file = File::open(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    // SAFETY: a valid namespace fd, open for the call; CLONE_NEWNET only
    // changes this thread's network namespace.
    let r = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
    assert_eq!(r, 0, "setns {path}: {}", std::io::Error::last_os_error());
}

/// Runs `f` on a thread inside namespace `ns` and returns its result, so
/// its sockets and interfaces are that namespace's; the caller stays put.
pub fn in_netns<T: Send>(ns: &str, f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|s| {
        s.spawn(|| {
            enter(ns);
            f()
        })
        .join()
        .unwrap_or_else(|p| std::panic::resume_unwind(p))
    })
}

/// As `in_netns`, without waiting: join the handle for the result.
pub fn spawn_in_netns<T: Send + 'static>(
    ns: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> JoinHandle<T> {
    let ns = ns.to_string();
    std::thread::spawn(move || {
        enter(&ns);
        f()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_fit_interface_names() {
        assert_eq!(base36(0), "0");
        assert_eq!(base36(36), "10");
        assert_eq!(base36(4_194_304), "2hwcg"); // the largest pid_max, 5 bytes
        let p = unique_prefix("lk", 2);
        assert!(p.contains("lk") && p.len() + 2 <= IFNAME_MAX, "{p}");
        assert_ne!(p, unique_prefix("lk", 2), "two topologies of one process");
        assert!(std::panic::catch_unwind(|| unique_prefix("waytoolongtag", 2)).is_err());
    }

    /// Up, used from a thread inside, and gone after drop, also when the
    /// test panics while holding it.
    #[test]
    fn pair_is_created_and_removed() {
        if !crate::needs_root("the namespace guard test", "network namespaces") {
            return;
        }
        let names = || {
            String::from_utf8_lossy(
                &Command::new("ip")
                    .args(["netns", "list"])
                    .output()
                    .unwrap()
                    .stdout,
            )
            .into_owned()
        };
        let t = Topo::pair("tk", "10.93.0");
        let ns = t.nic_ns();
        assert!(names().contains(&ns), "{}", names());
        let nic_if = t.nic_if();
        // A child forked on the thread inside sees that namespace.
        let seen = in_netns(&ns, move || {
            let o = Command::new("ip")
                .args(["-o", "addr", "show", "dev", &nic_if])
                .output()
                .unwrap();
            String::from_utf8_lossy(&o.stdout).contains("10.93.0.1/24")
        });
        assert!(seen, "the NIC end has its address inside the namespace");
        let r = std::panic::catch_unwind(|| {
            let _t = t;
            panic!("a failing test");
        });
        assert!(r.is_err());
        assert!(!names().contains(&ns), "{ns} left behind: {}", names());
    }
}
