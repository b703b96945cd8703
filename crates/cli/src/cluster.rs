//! `softspin cluster up/down/exec/status` (a cluster of hosts in network
//! namespaces, softspin-cluster's `local`), and the `--nodes/--rank`
//! arguments that give `softspin nic` and `sim` the node table
//! (docs/cluster.md).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context};
use softspin_cluster::local::{self, Names, Plan};
use softspin_host::{Nic, NodeTable};

/// `--nodes FILE --rank K`: the NIC's place in a cluster.
#[derive(clap::Args, Clone, Default)]
pub struct NodeArgs {
    /// The cluster's node table (docs/cluster.md); handlers read it through
    /// spin_node.h (spin_my_rank, spin_num_nodes, spin_node).
    #[arg(long, value_name = "FILE", requires = "rank")]
    pub nodes: Option<PathBuf>,
    /// This NIC's rank in --nodes.
    #[arg(long, value_name = "K", requires = "nodes")]
    pub rank: Option<u32>,
}

impl NodeArgs {
    /// The table and the rank, checked against each other.
    pub fn load(&self) -> anyhow::Result<Option<(NodeTable, u32)>> {
        let (Some(path), Some(rank)) = (&self.nodes, self.rank) else {
            return Ok(None);
        };
        let t = NodeTable::load(path)?;
        t.check_rank(rank)
            .map_err(|e| anyhow::anyhow!("--rank {rank}: {e} ({})", path.display()))?;
        Ok(Some((t, rank)))
    }

    /// Give `nic` the table (if any).
    pub fn apply(&self, nic: &mut Nic, loaded: Option<&(NodeTable, u32)>) -> anyhow::Result<()> {
        if let Some((t, rank)) = loaded {
            nic.set_node_table(t, *rank)
                .with_context(|| self.nodes.clone().unwrap_or_default().display().to_string())?;
        }
        Ok(())
    }
}

#[derive(clap::Subcommand)]
pub enum ClusterCmd {
    /// Make N nodes: network namespaces P0..P(N-1) on one bridge (in
    /// namespace Pbr), write the node table; with NIC arguments start one
    /// `softspin nic` per node.
    #[command(after_help = UP_HELP)]
    Up(Box<UpArgs>),
    /// Remove everything of a prefix: NIC processes, forwarders,
    /// namespaces, bridge, state directory (idempotent; also after a crash).
    Down {
        #[arg(long, default_value = DEFAULT_PREFIX)]
        prefix: String,
    },
    /// Run a command in node RANK's namespace; its exit status is ours.
    Exec {
        rank: u32,
        #[arg(long, default_value = DEFAULT_PREFIX)]
        prefix: String,
        #[arg(last = true, required = true, value_name = "CMD")]
        cmd: Vec<String>,
    },
    /// List the nodes and whether their namespace and NIC are there.
    Status {
        #[arg(long, default_value = DEFAULT_PREFIX)]
        prefix: String,
    },
}

pub(crate) const DEFAULT_PREFIX: &str = "ssn";

#[derive(clap::Args)]
pub struct UpArgs {
    /// Number of nodes (1..=254).
    #[arg(long)]
    nodes: u32,
    /// Names: namespaces PREFIX0.., PREFIXbr (letters, digits, `_`;
    /// starting and ending with a letter).
    #[arg(long, default_value = DEFAULT_PREFIX)]
    prefix: String,
    /// The /24 as A.B.C [default: 10.X.Y from a hash of the prefix].
    #[arg(long, value_name = "A.B.C")]
    net: Option<String>,
    /// The UDP port of every node's NIC in the table [default: 9330] (an
    /// application's port; RMA always uses its own, 21328).
    #[arg(long)]
    port: Option<u16>,
    /// Put softspin-lossy on every node's link with these flags (as the
    /// tool takes them, e.g. "--loss 0.03 --reorder 0.25 --dup 0.01").
    #[arg(long, value_name = "SPEC", allow_hyphen_values = true)]
    lossy: Option<String>,
    /// Run every node's NIC as an RMA target (docs/cluster.md "RMA mode"):
    /// examples/rma_target's handlers behind the RMA transport as rank k,
    /// host memory /dev/shm/softspin-PREFIX-k, control socket
    /// RUN_DIR/cluster-PREFIX/k.sock, a window of --window bytes under key 1.
    #[arg(long)]
    rma: bool,
    /// With --rma: each node's window (and host memory), in bytes with an
    /// optional K, M or G suffix.
    #[arg(long, value_name = "SIZE", requires = "rma", value_parser = crate::nic::parse_size, default_value = "1M")]
    window: u64,
    /// With --rma: run this image instead of examples/rma_target; it must be
    /// linked with examples/rma_target/handler.c (a use case's handlers
    /// beside the RMA ones, e.g. examples/cluster/pingpong).
    #[arg(long, value_name = "FILE", requires = "rma")]
    image: Option<PathBuf>,
    /// With --image: its header handler.
    #[arg(long, value_name = "SYM", requires = "image")]
    hh: Option<String>,
    /// With --image: its payload handler, which hands RMA frames to
    /// rma_target_ph [default: rma_target_ph].
    #[arg(long, value_name = "SYM", requires = "image")]
    ph: Option<String>,
    /// With --image: its completion handler.
    #[arg(long, value_name = "SYM", requires = "image")]
    th: Option<String>,
    /// With --rma: the NIC model every node runs and the handlers are built
    /// for (`softspin nic --profile`; fpspin: FPsPIN's 40 MHz FPGA, pspin:
    /// PsPIN's 1 GHz ASIC).
    #[arg(long, value_name = "NAME", requires = "rma", default_value = DEFAULT_RMA_PROFILE)]
    profile: String,
    /// Also write the node table here [always: RUN_DIR/cluster-PREFIX/nodes.toml].
    #[arg(long, value_name = "FILE")]
    table: Option<PathBuf>,
    /// Arguments for every node's `softspin nic` (as one string; or after `--`).
    #[arg(long, value_name = "ARGS", allow_hyphen_values = true)]
    nic_args: Option<String>,
    /// Arguments for every node's `softspin nic`.
    #[arg(last = true, value_name = "NIC ARGS")]
    nic: Vec<String>,
}

const UP_HELP: &str = "\
Node k: namespace PREFIXk, interface PREFIXke with NET.(k+1)/24 and MAC
02:53:NET:(k+1), UDP port --port; its veth peer PREFIXkb is a port of the
bridge PREFIXbr in namespace PREFIXbr (with --lossy: a softspin-lossy
forwarder between PREFIXkb and the bridge). Nothing is made in the root
namespace. With NIC arguments every node runs
  softspin nic --iface PREFIXke --nodes TABLE --rank k --ready-file F ARGS
in its namespace (pid, log and ready files in RUN_DIR/cluster-PREFIX/);
up waits until each has attached and removes everything if one fails.
With --rma every node's NIC also gets the RMA handlers, examples/rma_target
and examples/rma_chase (built for --profile into RUN_DIR/cluster-PREFIX/;
the ECTX takes UDP ports 21328 and 21329; --watchdog 100000000 unless the
NIC arguments give one), --rma (rank k), --host-shm softspin-PREFIX-k,
--control RUN_DIR/cluster-PREFIX/k.sock and --window SIZE,1; --image FILE
(with --hh/--ph/--th) runs a use case's image linked with the RMA handlers
instead (examples/cluster).
RUN_DIR is $SOFTSPIN_RUN_DIR or /run/softspin. Needs root.";

pub fn main(cmd: ClusterCmd) -> anyhow::Result<ExitCode> {
    match cmd {
        ClusterCmd::Up(a) => up(*a),
        ClusterCmd::Down { prefix } => {
            needs_root("down")?;
            let r = local::down(&prefix)?;
            println!(
                "cluster {prefix}: removed {} namespace(s), stopped {} process(es){}",
                r.namespaces.len(),
                r.processes,
                match r.shm_files {
                    0 => String::new(),
                    n => format!(", removed {n} shm file(s) of killed NICs"),
                }
            );
            Ok(ExitCode::SUCCESS)
        }
        ClusterCmd::Exec { rank, prefix, cmd } => {
            needs_root("exec")?;
            let st = local::exec(&prefix, rank, &cmd)?;
            use std::os::unix::process::ExitStatusExt;
            // A command killed by a signal: 128 + the signal, as shells say.
            let code = st.code().unwrap_or_else(|| 128 + st.signal().unwrap_or(0));
            Ok(ExitCode::from(code.clamp(0, 255) as u8))
        }
        ClusterCmd::Status { prefix } => status(&prefix),
    }
}

fn needs_root(what: &str) -> anyhow::Result<()> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        bail!("softspin cluster {what} needs root (network namespaces, veths, a bridge)");
    }
    Ok(())
}

fn up(a: UpArgs) -> anyhow::Result<ExitCode> {
    // Arguments first: a mistake is named whoever runs it.
    let names = Names::new(&a.prefix, a.nodes)?;
    let net = match &a.net {
        Some(s) => local::parse_net(s)?,
        None => local::default_net(&a.prefix),
    };
    if let Some(p) = a.image.as_ref().filter(|p| !p.is_file()) {
        bail!("--image {}: no such file", p.display());
    }
    if softspin_host::NicConfig::profile(&a.profile).is_none() {
        bail!(
            "--profile {}: no such NIC model (known: {})",
            a.profile,
            softspin_host::NicConfig::PROFILES.join(", ")
        );
    }
    needs_root("up")?;
    let exe = std::env::current_exe().context("finding the softspin binary")?;
    let lossy = match &a.lossy {
        Some(spec) => Some((lossy_bin(&exe)?, split_args(spec))),
        None => None,
    };
    let mut nic_args: Vec<String> = a.nic_args.as_deref().map(split_args).unwrap_or_default();
    nic_args.extend(a.nic.iter().cloned());
    if let Some(t) = &a.table {
        if t.is_dir() {
            bail!("--table {}: a directory; give a file name", t.display());
        }
    }
    let plan = Plan {
        names: names.clone(),
        nodes: a.nodes,
        net,
        udp_port: a.port.unwrap_or(local::DEFAULT_UDP_PORT),
        lossy,
        table: a.table.clone(),
    };
    let table = local::up(&plan)?;
    let table_path = local::default_table_path(&a.prefix);
    let image = |a: &UpArgs| -> anyhow::Result<RmaImage> {
        let (elf, default_ph, chase) = match &a.image {
            Some(p) => (p.clone(), "rma_target_ph", None),
            None => (
                build_rma_handlers(&a.prefix, &a.profile)?,
                "rma_chase_ph",
                Some(rma_chase_port()?),
            ),
        };
        Ok(RmaImage {
            elf,
            profile: a.profile.clone(),
            scratchpad: rma_scratchpad(&a.profile)?,
            hh: a.hh.clone(),
            ph: a.ph.clone().unwrap_or_else(|| default_ph.into()),
            th: a.th.clone(),
            chase_port: chase,
            watchdog: (!nic_args.iter().any(|x| x.starts_with("--watchdog")))
                .then_some(RMA_WATCHDOG),
        })
    };
    let rma_image = match a.rma.then(|| image(&a)) {
        Some(Err(e)) => {
            let _ = local::down(&a.prefix);
            return Err(e.context(format!("cluster {} removed", a.prefix)));
        }
        Some(Ok(p)) => Some(p),
        None => None,
    };
    let per_node = |k: u32| {
        let mut v = match &rma_image {
            Some(img) => rma_nic_args(&a.prefix, k, img, a.window),
            None => Vec::new(),
        };
        v.extend(nic_args.iter().cloned());
        v
    };
    if a.rma || !nic_args.is_empty() {
        if let Err(e) = local::start_nics(
            &names,
            &table,
            &table_path,
            &exe,
            &per_node,
            local::NIC_READY_TIMEOUT,
        ) {
            let _ = local::down(&a.prefix);
            return Err(anyhow::anyhow!("{e}; cluster {} removed", a.prefix));
        }
    }
    eprintln!(
        "softspin: cluster {}: {} node(s) on {}.{}.{}.0/24{}{}; node table {}",
        a.prefix,
        a.nodes,
        net[0],
        net[1],
        net[2],
        if a.lossy.is_some() {
            ", lossy links"
        } else {
            ""
        },
        if a.rma {
            format!(
                ", an RMA target NIC per node (window {} bytes, key {})",
                a.window,
                crate::nic::DEFAULT_WINDOW_KEY
            )
        } else if nic_args.is_empty() {
            String::new()
        } else {
            ", a NIC per node".into()
        },
        a.table.as_deref().unwrap_or(&table_path).display()
    );
    print!("{}", table.to_toml());
    Ok(ExitCode::SUCCESS)
}

/// The RMA handlers, built into the binary so `up --rma` works wherever
/// `softspin build` does: the target, and the handler-initiated commands
/// (pointer chasing: `softspin rma lat --initiator nic`).
const RMA_TARGET_SRC: &str = include_str!("../../../examples/rma_target/handler.c");
const RMA_CHASE_SRC: &str = include_str!("../../../examples/rma_chase/chase.c");
/// Instructions a handler may run per invocation on the RMA NICs: handlers
/// that wait for RMA responses poll while they wait (a pointer chase of
/// `rma lat --initiator nic` waits for each of its reads), which at 1 GHz
/// exhausts the NIC's default budget of 10^6 within a millisecond on a
/// loaded machine.
const RMA_WATCHDOG: u64 = 100_000_000;
/// The profile the NICs run by default (`softspin nic`'s default).
pub const DEFAULT_RMA_PROFILE: &str = "fpspin";
/// Scratchpad per cluster for the handlers' response buffers: NB_CORES x
/// RMA_BUF_BYTES (examples/rma_target/README.md "Where responses are
/// built"), read from the source the binary carries so they cannot differ.
/// examples/rma_chase's command port (its CHASE_PORT), read from the source
/// the binary carries.
pub fn rma_chase_port() -> anyhow::Result<u16> {
    RMA_CHASE_SRC
        .lines()
        .find_map(|l| l.strip_prefix("#define CHASE_PORT "))
        .and_then(|v| v.trim().parse::<u16>().ok())
        .context("examples/rma_chase/chase.c defines no CHASE_PORT")
}

fn rma_scratchpad(profile: &str) -> anyhow::Result<u32> {
    let buf = RMA_TARGET_SRC
        .lines()
        .find_map(|l| l.strip_prefix("#define RMA_BUF_BYTES "))
        .and_then(|v| v.trim().parse::<u32>().ok())
        .context("examples/rma_target/handler.c defines no RMA_BUF_BYTES")?;
    let cfg = softspin_host::NicConfig::profile(profile).context("the RMA profile")?;
    Ok(cfg.hpus_per_cluster * buf)
}

/// Build examples/rma_target and examples/rma_chase into one image, as
/// `softspin build --profile PROFILE` does, in the cluster's state
/// directory (made anew by every `up`).
fn build_rma_handlers(prefix: &str, profile: &str) -> anyhow::Result<PathBuf> {
    let dir = local::state_dir(prefix);
    let mut srcs = Vec::new();
    for (name, text) in [
        ("rma_target.c", RMA_TARGET_SRC),
        ("rma_chase.c", RMA_CHASE_SRC),
    ] {
        let src = dir.join(name);
        std::fs::write(&src, text).with_context(|| format!("writing {}", src.display()))?;
        srcs.push(src);
    }
    let elf = dir.join("rma.elf");
    crate::build::main(crate::build::BuildArgs::handler(srcs, elf.clone(), profile))
        .context("building the RMA handlers (examples/rma_target, examples/rma_chase)")?;
    Ok(elf)
}

/// The handlers every node runs in RMA mode: examples/rma_target, or a
/// use case's image linked with it (`--image`).
struct RmaImage {
    elf: PathBuf,
    profile: String,
    scratchpad: u32,
    hh: Option<String>,
    ph: String,
    th: Option<String>,
    /// The default image: its ECTX also takes rma_chase's command port.
    chase_port: Option<u16>,
    /// `--watchdog` for the NICs, unless their arguments give one.
    watchdog: Option<u64>,
}

/// Node k's NIC arguments in RMA mode: the handlers behind the transport
/// as rank k, its shm and control socket by the cluster's names, its window.
fn rma_nic_args(prefix: &str, k: u32, img: &RmaImage, window: u64) -> Vec<String> {
    let mut v: Vec<String> = vec!["--profile".into(), img.profile.clone(), "--image".into()];
    v.push(img.elf.display().to_string());
    for (flag, sym) in [("--hh", &img.hh), ("--th", &img.th)] {
        if let Some(sym) = sym {
            v.extend([flag.to_string(), sym.clone()]);
        }
    }
    let scratchpad = img.scratchpad;
    v.extend(
        [
            "--ph",
            &img.ph,
            "--match",
            &format!("udp:{}", softspin_wire::rma::UDP_PORT),
            "--scratchpad",
            &scratchpad.to_string(),
            "--host-size",
            &window.to_string(),
            "--rma",
            "--host-shm",
            &local::shm_name(prefix, k),
            "--control",
            &local::control_path(prefix, k).display().to_string(),
            "--window",
            &crate::nic::WindowArg {
                size: window,
                key: crate::nic::DEFAULT_WINDOW_KEY,
            }
            .to_string(),
        ]
        .map(String::from),
    );
    if let Some(port) = img.chase_port {
        v.extend(["--match".into(), format!("udp:{port}")]);
    }
    if let Some(w) = img.watchdog {
        v.extend(["--watchdog".into(), w.to_string()]);
    }
    v
}

/// softspin-lossy: $SOFTSPIN_LOSSY, else next to this binary.
fn lossy_bin(exe: &Path) -> anyhow::Result<PathBuf> {
    let p = std::env::var_os("SOFTSPIN_LOSSY")
        .map(PathBuf::from)
        .unwrap_or_else(|| exe.with_file_name("softspin-lossy"));
    if !p.is_file() {
        bail!(
            "--lossy needs softspin-lossy: {} is missing (cargo build --release -p softspin-lossy, or set SOFTSPIN_LOSSY)",
            p.display()
        );
    }
    Ok(p)
}

/// Split a flag string on blanks (no quoting: the flags these take have
/// no blanks in their values).
fn split_args(s: &str) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

fn status(prefix: &str) -> anyhow::Result<ExitCode> {
    let nodes = local::status(prefix)?;
    println!(
        "{:>4}  {:<10} {:<15} {:<17} {:>5}  {:<9} nic",
        "rank", "netns", "ipv4", "mac", "port", "namespace"
    );
    for s in &nodes {
        let n = &s.node;
        println!(
            "{:>4}  {:<10} {:<15} {:<17} {:>5}  {:<9} {}{}",
            n.rank,
            n.netns.as_deref().unwrap_or("-"),
            n.ipv4.to_string(),
            n.mac.to_string(),
            n.udp_port,
            if s.namespace { "yes" } else { "MISSING" },
            match s.nic {
                Some(p) => format!("running (pid {p})"),
                None => "not running".into(),
            },
            match s.forwarder {
                Some(p) => format!(", lossy forwarder pid {p}"),
                None => String::new(),
            }
        );
    }
    // Where host programs find each node's NIC (docs/cluster.md "Names").
    for s in nodes
        .iter()
        .filter(|s| s.control.is_some() || s.shm.is_some())
    {
        let show = |p: &Option<PathBuf>| p.as_ref().map_or("-".into(), |p| p.display().to_string());
        println!(
            "node {}: control {}  host memory {}",
            s.node.rank,
            show(&s.control),
            show(&s.shm)
        );
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What node k's NIC is given in RMA mode: the cluster's names, the
    /// handlers' scratchpad (8 HPUs x 1536 bytes on fpspin), the window.
    #[test]
    fn rma_mode_names_each_node() {
        assert_eq!(rma_scratchpad("fpspin").unwrap(), 12288);
        let img = RmaImage {
            elf: "/x/rma.elf".into(),
            profile: "fpspin".into(),
            scratchpad: rma_scratchpad("fpspin").unwrap(),
            hh: None,
            ph: "rma_chase_ph".into(),
            th: None,
            chase_port: Some(rma_chase_port().unwrap()),
            watchdog: Some(RMA_WATCHDOG),
        };
        let v = rma_nic_args("sJa", 2, &img, 1 << 20).join(" ");
        for part in [
            "--profile fpspin --image /x/rma.elf --ph rma_chase_ph --match udp:21328 --scratchpad 12288",
            "--host-size 1048576 --rma --host-shm softspin-sJa-2 --control ",
            "cluster-sJa/2.sock --window 1048576,1 --match udp:21329 --watchdog 100000000",
        ] {
            assert!(v.contains(part), "{part} in {v}");
        }
        assert!(!v.contains("--hh") && !v.contains("--th"), "{v}");
        // A use case's image (`up --rma --image F --hh H --ph P --th T`).
        let img = RmaImage {
            elf: "/x/uc.elf".into(),
            hh: Some("uc_hh".into()),
            ph: "uc_ph".into(),
            th: Some("uc_th".into()),
            chase_port: None,
            ..img
        };
        let v = rma_nic_args("sJa", 2, &img, 1 << 20).join(" ");
        assert!(
            v.contains("--image /x/uc.elf --hh uc_hh --th uc_th --ph uc_ph --match udp:21328"),
            "{v}"
        );
        assert!(!v.contains("udp:21329"), "{v}");
        // Another model: built for and run with it, its scratchpad sized by its HPUs.
        let pspin = rma_scratchpad("pspin").unwrap();
        let img = RmaImage {
            profile: "pspin".into(),
            scratchpad: pspin,
            ..img
        };
        let v = rma_nic_args("sJa", 2, &img, 1 << 20).join(" ");
        assert!(v.starts_with("--profile pspin --image"), "{v}");
        assert!(v.contains(&format!("--scratchpad {pspin} ")), "{v}");
    }
}
