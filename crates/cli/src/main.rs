//! `softspin`: the command line of the software sPIN NIC.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod build;
mod capture;
mod cluster;
mod gdb;
mod isa;
mod jit;
mod live_timeline;
mod netsim;
mod new;
mod nic;
mod results;
mod rma;
mod rma_bench;
mod rma_host;
mod sim;
mod slmp;
mod slmp_recv;
mod status;
mod sweep;

#[derive(Parser)]
#[command(
    name = "softspin",
    version = jit::VERSION,
    about = "softspin: a software sPIN NIC (PsPIN model, RV32 handler interpreter, SDK)"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run RV32 programs on one HPU.
    Isa {
        #[command(subcommand)]
        cmd: isa::IsaCmd,
    },
    /// Compile handler sources into an RV32 image with the SDK (clang-19, ld.lld-19).
    Build(build::BuildArgs),
    /// Run handler images on the simulated PsPIN NIC with traffic.
    Sim(Box<sim::SimArgs>),
    /// Run the NIC live on a network interface (XDP + AF_XDP, or UDP sockets).
    Nic(Box<nic::NicArgs>),
    /// SLMP from the host: send files as messages (retransmission, adaptive window).
    Slmp {
        #[command(subcommand)]
        cmd: slmp::SlmpCmd,
    },
    /// A cluster of hosts, each with its own NIC, in network namespaces on
    /// one bridge (docs/cluster.md).
    Cluster {
        #[command(subcommand)]
        cmd: cluster::ClusterCmd,
    },
    /// Remote memory between the nodes of a cluster (docs/rma.md): put and
    /// get through a node's NIC process.
    Rma {
        #[command(subcommand)]
        cmd: rma::RmaCmd,
    },
    /// A grid of `sim` or `netsim` runs on Dask: one table (CSV, JSON) and
    /// plots; resumable (docs/sweep.md).
    Sweep(sweep::SweepArgs),
    /// A network of simulated NICs on SimGrid: every node runs a use
    /// case's handlers (docs/scale.md).
    Netsim(Box<netsim::NetsimArgs>),
    /// Print the SDK directory (for -I paths and the make fragment).
    SdkPath,
    /// Start a handler project: a directory with a handler, a Makefile, a
    /// test pcap and a Python check that passes as written (docs/first-handler.md).
    New(new::NewArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let r = match cli.cmd {
        Cmd::Isa { cmd } => isa::main(cmd),
        Cmd::Build(a) => build::main(a),
        Cmd::Sim(a) => sim::main(*a),
        Cmd::Nic(a) => nic::main(*a),
        Cmd::Slmp { cmd } => slmp::main(cmd),
        Cmd::New(a) => new::main(a),
        Cmd::Cluster { cmd } => cluster::main(cmd),
        Cmd::Rma { cmd } => rma::main(cmd),
        Cmd::Sweep(a) => sweep::main(a),
        Cmd::Netsim(a) => netsim::main(*a),
        Cmd::SdkPath => build::sdk_dir().map(|d| {
            println!("{}", d.display());
            ExitCode::SUCCESS
        }),
    };
    match r {
        Ok(c) => c,
        Err(e) => {
            eprintln!("softspin: error: {}", error_text(&e));
            ExitCode::from(exit::FAILURE)
        }
    }
}

/// An error and its causes on one line, each text once: several library
/// errors show their source in their own message and also return it as
/// `source()`, which `{:#}` would print a second time.
fn error_text(e: &anyhow::Error) -> String {
    let mut msg = e.to_string();
    for cause in e.chain().skip(1) {
        let t = cause.to_string();
        if !msg.contains(&t) {
            msg.push_str(": ");
            msg.push_str(&t);
        }
    }
    msg
}

/// Exit statuses of the CLI, defined once (`softspin sim --help` and
/// `docs/` print `SIM_HELP`).
pub mod exit {
    use std::process::ExitCode;

    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    #[repr(u8)]
    pub enum Status {
        /// Every packet that arrived was processed; no handler error, message
        /// timeout, rejected command or drop.
        Ok = 0,
        /// Bad input (file, configuration, flag value out of range) or a tool
        /// failure: nothing was simulated, or the run could not finish.
        Failure = 1,
        /// Command-line usage error (unknown flag, missing argument): clap's
        /// own status.
        Usage = 2,
        /// A handler faulted, ran out of its watchdog budget, aborted
        /// (`assert`, `abort`, `exit(n != 0)`) or had a command rejected.
        HandlerError = 3,
        /// A message timed out (no packet for its ECTX's timeout).
        MessageTimeout = 4,
        /// Packets were dropped (packet buffer full) or matched no ECTX, or
        /// handler output was dropped (its ECTX's output ring was full).
        Dropped = 5,
        /// Packets arrived but were not all processed (e.g. `--until-ns`
        /// stopped the run first).
        Unprocessed = 6,
        /// `softspin isa run` / `isa handler`: the guest faulted.
        GuestFault = 70,
    }

    impl From<Status> for ExitCode {
        fn from(s: Status) -> ExitCode {
            ExitCode::from(s as u8)
        }
    }

    /// Bad input, tool failure.
    pub const FAILURE: u8 = Status::Failure as u8;
    /// The guest faulted.
    pub const GUEST_FAULT: u8 = Status::GuestFault as u8;

    /// The exit-status table of `softspin sim --help`.
    pub const SIM_HELP: &str = "\
Exit status:
  0  every packet that arrived was processed: no handler error, message
     timeout, rejected command or drop
  1  bad input (file, configuration, value out of range) or tool failure
  2  usage error (unknown flag, missing argument)
  3  a handler faulted, hit its watchdog, aborted (assert, abort, exit(n != 0))
     or had a command rejected
  4  a message timed out
  5  packets were dropped (packet buffer full) or matched no ECTX, or
     handler output was dropped (output ring full: output_buffer)
  6  packets were left unprocessed (e.g. --until-ns ended the run first)
When several apply, the smallest of 3..6 is returned; stderr says why.";

    /// The exit-status table of `softspin isa handler --help`.
    pub const HANDLER_HELP: &str = "\
Exit status:
  0   the handler returned (or called exit(0))
  1   bad input (image, packet file, unknown handler symbol)
  2   usage error
  3   the handler aborted: assert, abort() or exit(n != 0)
  70  the handler faulted (access, illegal instruction, watchdog...)";
}
