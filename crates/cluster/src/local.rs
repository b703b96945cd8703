//! A cluster on one Linux machine (docs/cluster.md "Topology"): node k is
//! network namespace `Pk` with one veth `Pke` (address NET.(k+1)/24, MAC
//! 02:53:NET:(k+1)); its peer `Pkb` sits in the bridge namespace `Pbr` on
//! the bridge `Pbr`, or, with a lossy link, is one side of a
//! `softspin-lossy` forwarder whose other side `Pkf` is veth-paired with
//! the bridge port `Pks`. Nothing is made in the root namespace, so the
//! machine's own interfaces stay untouched, and everything can be found
//! again by its prefix (`ip netns list`, `ip netns pids`), also after a
//! crash left no state: [`down`] needs only the prefix.
//!
//! Each node can run its own `softspin nic` (one process per host, as on
//! real machines): started in its namespace in a session of its own, with
//! a pid file, a log file and a ready file under the state directory.

use std::net::Ipv4Addr;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::table::{Mac, Node, NodeTable, IFNAME_MAX};

/// A failed cluster operation: what was done and why it failed.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ClusterError(pub String);

pub type Result<T> = std::result::Result<T, ClusterError>;

fn err<T>(msg: impl Into<String>) -> Result<T> {
    Err(ClusterError(msg.into()))
}

/// The UDP port every node's NIC serves in a local cluster (`--port`).
pub const DEFAULT_UDP_PORT: u16 = 9330;
/// Where state directories live (`SOFTSPIN_RUN_DIR` overrides).
pub const DEFAULT_RUN_DIR: &str = "/run/softspin";
/// At most this many nodes: hosts .1 to .254 of one /24.
pub const MAX_NODES: u32 = 254;
/// How long `up` waits for each NIC to attach.
pub const NIC_READY_TIMEOUT: Duration = Duration::from_secs(30);

/// The names of one cluster's namespaces and interfaces, from its prefix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Names {
    pub prefix: String,
}

impl Names {
    /// A prefix names everything, so it must keep names apart: ASCII
    /// letters, digits and `_`, starting and ending with a letter (so `P1`
    /// + rank 0 cannot be `P` + rank 10), short enough that `P<rank>s`
    ///   fits an interface name (15 bytes) for `nodes` nodes.
    pub fn new(prefix: &str, nodes: u32) -> Result<Names> {
        let ok = !prefix.is_empty()
            && prefix
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || c == b'_')
            && prefix.as_bytes()[0].is_ascii_alphabetic()
            && prefix.as_bytes()[prefix.len() - 1].is_ascii_alphabetic();
        if !ok {
            return err(format!(
                "--prefix `{prefix}`: use ASCII letters, digits and `_`, starting and ending with a letter"
            ));
        }
        let digits = nodes.saturating_sub(1).max(1).to_string().len();
        let longest = prefix.len() + digits + 1;
        if longest > IFNAME_MAX || prefix.len() + 2 > IFNAME_MAX {
            return err(format!(
                "--prefix `{prefix}` is too long for {nodes} nodes: interface names like `{prefix}{}s` must be at most {IFNAME_MAX} bytes (the prefix at most {} here)",
                nodes.saturating_sub(1),
                IFNAME_MAX - digits - 1
            ));
        }
        Ok(Names {
            prefix: prefix.into(),
        })
    }

    /// Node k's namespace.
    pub fn ns(&self, k: u32) -> String {
        format!("{}{k}", self.prefix)
    }
    /// The bridge's namespace (and the bridge in it).
    pub fn bridge(&self) -> String {
        format!("{}br", self.prefix)
    }
    /// Node k's interface (in its namespace): what its NIC attaches to.
    pub fn node_if(&self, k: u32) -> String {
        format!("{}{k}e", self.prefix)
    }
    /// Its veth peer in the bridge namespace.
    fn peer_if(&self, k: u32) -> String {
        format!("{}{k}b", self.prefix)
    }
    /// With a lossy link: the forwarder's bridge-side interface ...
    fn fwd_if(&self, k: u32) -> String {
        format!("{}{k}f", self.prefix)
    }
    /// ... and its veth peer, the bridge port.
    fn port_if(&self, k: u32) -> String {
        format!("{}{k}s", self.prefix)
    }

    /// Whether `ns` is one of this prefix's namespaces: `P<digits>` or `Pbr`.
    pub fn owns(&self, ns: &str) -> bool {
        ns == self.bridge()
            || ns
                .strip_prefix(&self.prefix)
                .is_some_and(|r| !r.is_empty() && r.bytes().all(|c| c.is_ascii_digit()))
    }
}

/// The /24 a prefix's cluster lives in when `--net` is not given:
/// 10.X.Y.0 with X in 100..=163 and Y from an FNV-1a hash of the prefix,
/// clear of the 10.77/10.78 nets of scripts/netns.sh and lossy_link.sh.
pub fn default_net(prefix: &str) -> [u8; 3] {
    let mut h: u32 = 0x811c_9dc5;
    for b in prefix.bytes() {
        h = (h ^ b as u32).wrapping_mul(0x0100_0193);
    }
    [10, 100 + (h % 64) as u8, (h >> 8) as u8]
}

/// Parse `--net A.B.C` (the first three bytes of a /24).
pub fn parse_net(s: &str) -> Result<[u8; 3]> {
    let p: Vec<_> = s.split('.').map(|x| x.parse::<u8>()).collect();
    match p.as_slice() {
        [Ok(a), Ok(b), Ok(c)] => Ok([*a, *b, *c]),
        _ => err(format!(
            "--net `{s}`: give the first three bytes of a /24, e.g. 10.100.7"
        )),
    }
}

/// The deterministic addresses of node k: NET.(k+1) and 02:53:NET:(k+1)
/// (locally administered, unicast; 0x53 is `S`).
pub fn node_addrs(net: [u8; 3], k: u32) -> (Ipv4Addr, Mac) {
    let host = (k + 1) as u8;
    (
        Ipv4Addr::new(net[0], net[1], net[2], host),
        Mac([0x02, 0x53, net[0], net[1], net[2], host]),
    )
}

/// The run directory (`SOFTSPIN_RUN_DIR`, default /run/softspin).
pub fn run_dir() -> PathBuf {
    std::env::var_os("SOFTSPIN_RUN_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(DEFAULT_RUN_DIR))
}

/// A cluster's state directory: `RUN_DIR/cluster-P/` (node table
/// `nodes.toml`, per node `nic-K.pid`, `nic-K.log`, `nic-K.ready`, and
/// with a lossy link `fwd-K.pid`, `fwd-K.log`, `fwd-K.jsonl`).
pub fn state_dir(prefix: &str) -> PathBuf {
    run_dir().join(format!("cluster-{prefix}"))
}

/// Node k's control socket (`softspin nic --control`, docs/host-interface.md)
/// in a cluster with NICs: `RUN_DIR/cluster-P/K.sock`. Host programs on
/// node k find their NIC here (`NicClient::connect`).
pub fn control_path(prefix: &str, k: u32) -> PathBuf {
    state_dir(prefix).join(format!("{k}.sock"))
}

/// Where shared host memory files live (`--host-shm NAME` is
/// `SHM_DIR/NAME`, as `shm_open(NAME)` would put it).
pub const SHM_DIR: &str = "/dev/shm";

/// Node k's shared host memory name (`softspin nic --host-shm`):
/// `softspin-P-K`. A prefix has no `-` and ends with a letter, so the
/// names of two clusters never meet.
pub fn shm_name(prefix: &str, k: u32) -> String {
    format!("softspin-{prefix}-{k}")
}

/// Node k's shared host memory file: `/dev/shm/softspin-P-K`.
pub fn shm_path(prefix: &str, k: u32) -> PathBuf {
    Path::new(SHM_DIR).join(shm_name(prefix, k))
}

/// Whether `file` (a name in [`SHM_DIR`]) is one of `prefix`'s shm files.
fn owns_shm(prefix: &str, file: &str) -> bool {
    file.strip_prefix(&format!("softspin-{prefix}-"))
        .is_some_and(|r| !r.is_empty() && r.bytes().all(|c| c.is_ascii_digit()))
}

/// The node table `up` writes (unless `--table` names another file).
pub fn default_table_path(prefix: &str) -> PathBuf {
    state_dir(prefix).join("nodes.toml")
}

/// What `up` makes.
#[derive(Clone, Debug)]
pub struct Plan {
    pub names: Names,
    pub nodes: u32,
    pub net: [u8; 3],
    pub udp_port: u16,
    /// `softspin-lossy` and its flags for every node's link, if wanted.
    pub lossy: Option<(PathBuf, Vec<String>)>,
    /// Where to write the node table (the state directory's always too).
    pub table: Option<PathBuf>,
}

/// Run a command; its stderr in the error.
fn run(cmd: &mut Command) -> Result<()> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| ClusterError(format!("{}: {e}", show(cmd))))?;
    if !out.status.success() {
        return err(format!(
            "`{}` failed ({}): {}",
            show(cmd),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(())
}

fn show(cmd: &Command) -> String {
    std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

fn ip(args: &[&str]) -> Result<()> {
    run(Command::new("ip").args(args))
}

fn in_ns(ns: &str, args: &[&str]) -> Result<()> {
    run(Command::new("ip").args(["netns", "exec", ns]).args(args))
}

/// No IPv6 (its autoconfiguration and neighbour discovery put frames on
/// the links that tests do not expect), as scripts/lossy_link.sh does.
fn no_ipv6(ns: &str) -> Result<()> {
    in_ns(
        ns,
        &[
            "sysctl",
            "-qw",
            "net.ipv6.conf.all.disable_ipv6=1",
            "net.ipv6.conf.default.disable_ipv6=1",
        ],
    )
}

/// Finished checksums and wire-sized frames (a real wire's, and what a
/// handler's reply and the lossy forwarder need), as scripts/netns.sh does.
fn offloads_off(ns: &str, ifc: &str) -> Result<()> {
    in_ns(ns, &["ethtool", "-K", ifc, "tx", "off"])?;
    // Not every driver has all of these; `tx off` is the one that matters.
    let _ = in_ns(
        ns,
        &[
            "ethtool", "-K", ifc, "tso", "off", "gso", "off", "gro", "off",
        ],
    );
    Ok(())
}

/// The namespaces that exist now.
pub fn namespaces() -> Result<Vec<String>> {
    let out = Command::new("ip")
        .args(["netns", "list"])
        .output()
        .map_err(|e| ClusterError(format!("ip netns list: {e}")))?;
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(String::from))
        .collect())
}

/// Make the namespaces, veths and bridge and write the node table (state
/// directory, and `plan.table` if given); a stale cluster of the same
/// prefix is removed first. On failure what was made is removed.
pub fn up(plan: &Plan) -> Result<NodeTable> {
    if plan.nodes == 0 || plan.nodes > MAX_NODES {
        return err(format!("--nodes {}: 1..={MAX_NODES} (one /24)", plan.nodes));
    }
    down(&plan.names.prefix)?;
    let r = make(plan);
    if r.is_err() {
        let _ = down(&plan.names.prefix);
    }
    r
}

fn make(plan: &Plan) -> Result<NodeTable> {
    let n = &plan.names;
    let dir = state_dir(&n.prefix);
    std::fs::create_dir_all(&dir)
        .map_err(|e| ClusterError(format!("creating {}: {e}", dir.display())))?;
    let br = n.bridge();
    ip(&["netns", "add", &br])?;
    ip(&["-n", &br, "link", "set", "lo", "up"])?;
    no_ipv6(&br)?;
    ip(&["-n", &br, "link", "add", &br, "type", "bridge"])?;
    ip(&["-n", &br, "link", "set", &br, "up"])?;
    let mut nodes = Vec::new();
    for k in 0..plan.nodes {
        let (ns, ifc, peer) = (n.ns(k), n.node_if(k), n.peer_if(k));
        let (addr, mac) = node_addrs(plan.net, k);
        ip(&["netns", "add", &ns])?;
        ip(&["-n", &ns, "link", "set", "lo", "up"])?;
        no_ipv6(&ns)?;
        // Made in place: neither end ever exists in the root namespace.
        ip(&[
            "link",
            "add",
            &ifc,
            "netns",
            &ns,
            "address",
            &mac.to_string(),
            "type",
            "veth",
            "peer",
            "name",
            &peer,
            "netns",
            &br,
        ])?;
        ip(&["-n", &ns, "addr", "add", &format!("{addr}/24"), "dev", &ifc])?;
        offloads_off(&ns, &ifc)?;
        offloads_off(&br, &peer)?;
        if plan.lossy.is_some() {
            let (fwd, port) = (n.fwd_if(k), n.port_if(k));
            ip(&[
                "-n", &br, "link", "add", &fwd, "type", "veth", "peer", "name", &port,
            ])?;
            offloads_off(&br, &fwd)?;
            offloads_off(&br, &port)?;
            ip(&["-n", &br, "link", "set", &port, "master", &br])?;
            for i in [&fwd, &port] {
                ip(&["-n", &br, "link", "set", i, "up"])?;
            }
        } else {
            ip(&["-n", &br, "link", "set", &peer, "master", &br])?;
        }
        // The bridge knows where each node is from the start, as a switch
        // with static entries: it never floods a unicast frame for a node
        // that has not sent yet to every port, where the other nodes' NICs
        // (which match on headers, as FPsPIN's matching engine, not on the
        // MAC) would take it as theirs.
        let port = if plan.lossy.is_some() {
            n.port_if(k)
        } else {
            peer.clone()
        };
        let fdb = ["-n", &br, "fdb", "add", &mac.to_string(), "dev", &port];
        run(Command::new("bridge").args(fdb).args(["master", "static"]))?;
        ip(&["-n", &br, "link", "set", &peer, "up"])?;
        ip(&["-n", &ns, "link", "set", &ifc, "up"])?;
        nodes.push(Node {
            rank: k,
            iface: ifc,
            ipv4: addr,
            mac,
            udp_port: plan.udp_port,
            netns: Some(ns),
        });
    }
    let table = NodeTable::new(nodes).map_err(|e| ClusterError(e.to_string()))?;
    let text = table.to_toml();
    for p in std::iter::once(default_table_path(&n.prefix)).chain(plan.table.clone()) {
        std::fs::write(&p, &text)
            .map_err(|e| ClusterError(format!("writing the node table {}: {e}", p.display())))?;
    }
    if let Some((bin, flags)) = &plan.lossy {
        for k in 0..plan.nodes {
            start_forwarder(plan, bin, flags, k)?;
        }
    }
    Ok(table)
}

/// One `softspin-lossy` per node, in the bridge namespace between the
/// node's veth peer (side A) and the bridge (side B). Without `--seed` in
/// the flags node k's forwarder uses seed k+1, so the links differ.
fn start_forwarder(plan: &Plan, bin: &Path, flags: &[String], k: u32) -> Result<()> {
    let n = &plan.names;
    let dir = state_dir(&n.prefix);
    let mut args: Vec<String> = vec!["--a".into(), n.peer_if(k), "--b".into(), n.fwd_if(k)];
    args.extend(flags.iter().cloned());
    if !flags
        .iter()
        .any(|f| f == "--seed" || f.starts_with("--seed="))
    {
        args.extend(["--seed".into(), (k + 1).to_string()]);
    }
    if !flags
        .iter()
        .any(|f| f == "--report" || f.starts_with("--report="))
    {
        args.extend([
            "--report".into(),
            dir.join(format!("fwd-{k}.jsonl")).display().to_string(),
        ]);
    }
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", &n.bridge()])
        .arg(bin)
        .args(&args);
    let pid = spawn_daemon(&mut cmd, &dir.join(format!("fwd-{k}.log")))?;
    write_pid(&dir.join(format!("fwd-{k}.pid")), pid)?;
    // A forwarder that rejects its flags exits at once: say so now.
    std::thread::sleep(Duration::from_millis(50));
    if !alive(pid) {
        return err(format!(
            "the lossy forwarder of node {k} exited: {}",
            tail(&dir.join(format!("fwd-{k}.log")))
        ));
    }
    Ok(())
}

/// Start `cmd` in a session of its own (so it outlives `up` and a
/// terminal's signals), output to `log`; its pid (`ip netns exec` execs
/// the command, so the pid is the command's).
fn spawn_daemon(cmd: &mut Command, log: &Path) -> Result<u32> {
    let f = std::fs::File::create(log)
        .map_err(|e| ClusterError(format!("creating {}: {e}", log.display())))?;
    let f2 = f
        .try_clone()
        .map_err(|e| ClusterError(format!("{}: {e}", log.display())))?;
    cmd.stdin(Stdio::null()).stdout(f).stderr(f2);
    // SAFETY: setsid is async-signal-safe and touches no memory of ours.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = cmd
        .spawn()
        .map_err(|e| ClusterError(format!("starting `{}`: {e}", show(cmd))))?;
    Ok(child.id())
}

fn write_pid(path: &Path, pid: u32) -> Result<()> {
    std::fs::write(path, format!("{pid}\n"))
        .map_err(|e| ClusterError(format!("writing {}: {e}", path.display())))
}

fn read_pid(path: &Path) -> Option<u32> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// Whether `pid` runs (a zombie does not).
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the parenthesised command name.
        Ok(s) => s
            .rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X'])),
        Err(_) => false,
    }
}

/// The last lines of a log, for an error message.
fn tail(log: &Path) -> String {
    let t = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = t.lines().collect();
    let from = lines.len().saturating_sub(5);
    let s = lines[from..].join(" | ");
    if s.is_empty() {
        format!("(nothing in {})", log.display())
    } else {
        format!("{s} (log: {})", log.display())
    }
}

/// Start `softspin nic --iface IF --nodes TABLE --rank K --ready-file F
/// ARGS(K)` in every node's namespace and wait until each has attached (its
/// ready file appears); a NIC that exits or is not ready within `timeout`
/// is an error naming it, with its log's last lines.
pub fn start_nics(
    names: &Names,
    table: &NodeTable,
    table_path: &Path,
    softspin: &Path,
    nic_args: &dyn Fn(u32) -> Vec<String>,
    timeout: Duration,
) -> Result<()> {
    let dir = state_dir(&names.prefix);
    let mut started = Vec::new();
    for node in table.nodes() {
        let k = node.rank;
        let ready = dir.join(format!("nic-{k}.ready"));
        let _ = std::fs::remove_file(&ready);
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &names.ns(k)])
            .arg(softspin)
            .args(["nic", "--iface", &node.iface, "--nodes"])
            .arg(table_path)
            .args(["--rank", &k.to_string(), "--ready-file"])
            .arg(&ready)
            .args(nic_args(k));
        let log = dir.join(format!("nic-{k}.log"));
        let pid = spawn_daemon(&mut cmd, &log)?;
        write_pid(&dir.join(format!("nic-{k}.pid")), pid)?;
        started.push((k, pid, ready, log));
    }
    let t0 = Instant::now();
    for (k, pid, ready, log) in started {
        loop {
            if ready.exists() {
                break;
            }
            if !alive(pid) {
                return err(format!(
                    "the NIC of node {k} exited before it attached: {}",
                    tail(&log)
                ));
            }
            if t0.elapsed() > timeout {
                return err(format!(
                    "the NIC of node {k} did not attach within {} s: {}",
                    timeout.as_secs(),
                    tail(&log)
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    Ok(())
}

/// What [`down`] removed.
#[derive(Debug, Default)]
pub struct Removed {
    pub namespaces: Vec<String>,
    pub processes: usize,
    /// Shared host memory files left by NICs that were killed.
    pub shm_files: usize,
}

/// Remove everything of prefix `prefix`: the processes in its namespaces
/// and in its pid files (SIGTERM, then SIGKILL after 3 s), the namespaces
/// (and with them the veths, the bridge and any XDP program), the state
/// directory (with the control sockets), the nodes' shm files.
/// Idempotent; needs nothing but the prefix.
pub fn down(prefix: &str) -> Result<Removed> {
    let names = Names::new(prefix, 1)?;
    let ours: Vec<String> = namespaces()?
        .into_iter()
        .filter(|ns| names.owns(ns))
        .collect();
    let mut pids: Vec<u32> = Vec::new();
    for ns in &ours {
        let out = Command::new("ip").args(["netns", "pids", ns]).output();
        if let Ok(o) = out {
            pids.extend(
                String::from_utf8_lossy(&o.stdout)
                    .split_whitespace()
                    .filter_map(|p| p.parse::<u32>().ok()),
            );
        }
    }
    let dir = state_dir(prefix);
    if let Ok(rd) = std::fs::read_dir(&dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "pid") {
                // Only ours: a pid may have been reused since.
                if let Some(pid) = read_pid(&p).filter(|&pid| is_softspin(pid)) {
                    pids.push(pid);
                }
            }
        }
    }
    pids.sort_unstable();
    pids.dedup();
    pids.retain(|&p| p != std::process::id());
    let processes = pids.iter().filter(|&&p| alive(p)).count();
    stop_all(&pids);
    for ns in &ours {
        ip(&["netns", "del", ns])?;
    }
    if dir.exists() {
        std::fs::remove_dir_all(&dir)
            .map_err(|e| ClusterError(format!("removing {}: {e}", dir.display())))?;
    }
    // A NIC removes its shm file when it exits, but not after a SIGKILL.
    let mut shm_files = 0;
    if let Ok(rd) = std::fs::read_dir(SHM_DIR) {
        for e in rd.flatten() {
            if e.file_name().to_str().is_some_and(|f| owns_shm(prefix, f)) {
                std::fs::remove_file(e.path()).map_err(|err| {
                    ClusterError(format!("removing {}: {err}", e.path().display()))
                })?;
                shm_files += 1;
            }
        }
    }
    Ok(Removed {
        namespaces: ours,
        processes,
        shm_files,
    })
}

fn is_softspin(pid: u32) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .is_ok_and(|c| String::from_utf8_lossy(&c).contains("softspin"))
}

/// SIGTERM (a NIC detaches cleanly, a forwarder writes its report), then
/// SIGKILL whatever still runs after 3 s.
fn stop_all(pids: &[u32]) {
    let signal = |sig| {
        for &p in pids {
            if alive(p) {
                // SAFETY: kill(2) with a pid and a signal number; no memory.
                unsafe { libc::kill(p as libc::pid_t, sig) };
            }
        }
    };
    signal(libc::SIGTERM);
    let t0 = Instant::now();
    while pids.iter().any(|&p| alive(p)) && t0.elapsed() < Duration::from_secs(3) {
        std::thread::sleep(Duration::from_millis(20));
    }
    signal(libc::SIGKILL);
    while pids.iter().any(|&p| alive(p)) && t0.elapsed() < Duration::from_secs(6) {
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Run `cmd` in node `rank`'s namespace; its exit status.
pub fn exec(prefix: &str, rank: u32, cmd: &[String]) -> Result<ExitStatus> {
    // Any rank: a node that is not there is told by its namespace below.
    let names = Names::new(prefix, 1)?;
    let ns = names.ns(rank);
    if !namespaces()?.contains(&ns) {
        return err(format!(
            "no node {rank} in cluster `{prefix}`: namespace {ns} does not exist (softspin cluster up --prefix {prefix})"
        ));
    }
    if cmd.is_empty() {
        return err("no command: softspin cluster exec RANK -- CMD...");
    }
    Command::new("ip")
        .args(["netns", "exec", &ns])
        .args(cmd)
        .status()
        .map_err(|e| ClusterError(format!("ip netns exec {ns}: {e}")))
}

/// One node as `status` sees it.
#[derive(Debug)]
pub struct NodeStatus {
    pub node: Node,
    pub namespace: bool,
    /// The NIC's pid, if it runs.
    pub nic: Option<u32>,
    /// The forwarder's pid, if it runs.
    pub forwarder: Option<u32>,
    /// Its NIC's control socket ([`control_path`]), if it is there.
    pub control: Option<PathBuf>,
    /// Its NIC's shared host memory ([`shm_path`]), if it is there.
    pub shm: Option<PathBuf>,
}

/// The nodes of cluster `prefix` (from its state directory's node table).
pub fn status(prefix: &str) -> Result<Vec<NodeStatus>> {
    let path = default_table_path(prefix);
    if !path.exists() {
        return err(format!(
            "no cluster `{prefix}`: {} does not exist",
            path.display()
        ));
    }
    let table = NodeTable::load(&path).map_err(|e| ClusterError(e.to_string()))?;
    let nss = namespaces()?;
    let dir = state_dir(prefix);
    let running = |f: String| read_pid(&dir.join(f)).filter(|&p| alive(p));
    Ok(table
        .nodes()
        .iter()
        .map(|n| NodeStatus {
            namespace: n.netns.as_ref().is_some_and(|ns| nss.contains(ns)),
            nic: running(format!("nic-{}.pid", n.rank)),
            forwarder: running(format!("fwd-{}.pid", n.rank)),
            control: Some(control_path(prefix, n.rank)).filter(|p| p.exists()),
            shm: Some(shm_path(prefix, n.rank)).filter(|p| p.exists()),
            node: n.clone(),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_keep_names_apart_and_short() {
        assert!(Names::new("sCa", 8).is_ok());
        for bad in ["", "1a", "sC1", "a-b", "a b", "é"] {
            assert!(Names::new(bad, 4).is_err(), "{bad}");
        }
        // `P<rank>s` must fit 15 bytes: 12 + 2 digits + 1 = 15.
        assert!(Names::new("abcdefghijkl", 101).is_err());
        assert!(Names::new("abcdefghijkl", 100).is_ok());
        let e = Names::new("abcdefghijklmn", 4).unwrap_err().to_string();
        assert!(e.contains("at most 15 bytes"), "{e}");
        let n = Names::new("sCa", 12).unwrap();
        assert_eq!(
            (n.ns(3), n.bridge(), n.node_if(11)),
            ("sCa3".into(), "sCabr".into(), "sCa11e".into())
        );
        assert!(n.owns("sCa0") && n.owns("sCa11") && n.owns("sCabr"));
        assert!(!n.owns("sCa") && !n.owns("sCab0") && !n.owns("sCa0x") && !n.owns("sCbbr"));
    }

    #[test]
    fn per_node_control_and_shm_names() {
        assert!(control_path("sJa", 3).ends_with("cluster-sJa/3.sock"));
        assert_eq!(
            control_path("sJa", 3).parent(),
            Some(state_dir("sJa").as_path())
        );
        assert_eq!(shm_name("sJa", 12), "softspin-sJa-12");
        assert_eq!(shm_path("sJa", 0), Path::new("/dev/shm/softspin-sJa-0"));
        assert!(owns_shm("sJa", "softspin-sJa-0") && owns_shm("sJa", "softspin-sJa-12"));
        for other in [
            "softspin-sJa-",
            "softspin-sJa-1x",
            "softspin-sJab-1",
            "softspin-sJ-1",
            "sJa-1",
        ] {
            assert!(!owns_shm("sJa", other), "{other}");
        }
    }

    #[test]
    fn addresses_are_deterministic_and_distinct() {
        let net = default_net("sCa");
        assert_eq!(net, default_net("sCa"));
        assert_ne!(net, default_net("sCb"));
        assert!(net[0] == 10 && (100..164).contains(&net[1]));
        let (ip, mac) = node_addrs([10, 100, 7], 0);
        assert_eq!(ip, Ipv4Addr::new(10, 100, 7, 1));
        assert_eq!(mac.to_string(), "02:53:0a:64:07:01");
        assert_eq!(parse_net("10.1.2").unwrap(), [10, 1, 2]);
        for bad in ["10.1", "10.1.2.3", "10.1.256", "a.b.c"] {
            assert!(parse_net(bad).is_err(), "{bad}");
        }
    }
}
