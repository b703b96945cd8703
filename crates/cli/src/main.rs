//! `softspin`: the command line of the software sPIN NIC.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod build;
mod isa;
mod sim;

#[derive(Parser)]
#[command(name = "softspin", version, about = "softspin: a software sPIN NIC (PsPIN model, RV32 handler interpreter, SDK)")]
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
    /// Compile handler sources into an RV32 image with the SDK (clang-14, ld.lld-14).
    Build(build::BuildArgs),
    /// Run handler images on the simulated PsPIN NIC with traffic.
    Sim(Box<sim::SimArgs>),
    /// Print the SDK directory (for -I paths and the make fragment).
    SdkPath,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let r = match cli.cmd {
        Cmd::Isa { cmd } => isa::main(cmd),
        Cmd::Build(a) => build::main(a),
        Cmd::Sim(a) => sim::main(*a),
        Cmd::SdkPath => build::sdk_dir().map(|d| {
            println!("{}", d.display());
            ExitCode::SUCCESS
        }),
    };
    match r {
        Ok(c) => c,
        Err(e) => {
            eprintln!("softspin: error: {e:#}");
            ExitCode::from(exit::FAILURE)
        }
    }
}

/// Exit statuses of the CLI (besides a guest's own exit status).
pub mod exit {
    /// Bad input, tool failure.
    pub const FAILURE: u8 = 1;
    /// The guest faulted.
    pub const GUEST_FAULT: u8 = 70;
}
