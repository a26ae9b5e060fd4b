//! Stand-alone front end of the real-time card until the `vsl` binary
//! wires `attach`, `detach` and `status` in; the tests drive it.

use blockdev::cli::{run_attach, run_detach, run_status, AttachArgs, DetachArgs, StatusArgs};
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "vsl-blockdev",
    about = "Serve the modelled card as Linux block devices"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Attach a card (or --list attached ones).
    Attach(Box<AttachArgs>),
    /// Flush, detach and stop an attached card.
    Detach(DetachArgs),
    /// Live counters of attached cards.
    Status(StatusArgs),
    /// Apply writes and trims to an attached card all-or-nothing.
    Atomic(blockdev::atomic::AtomicArgs),
    /// Capture the requests an attached card serves (start DIR, stop, status).
    Trace(blockdev::trace_cli::TraceArgs),
}

fn main() {
    let cli = Cli::parse();
    if matches!(cli.command, Command::Detach(_) | Command::Status(_)) {
        // Die quietly of SIGPIPE when a reader such as `head` closes the
        // pipe, as Unix tools do, instead of panicking in `println!`.
        // SAFETY: first thing in main, before any thread starts.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        }
    }
    let result = match cli.command {
        Command::Attach(a) => run_attach(*a),
        Command::Detach(a) => run_detach(a),
        Command::Status(a) => run_status(a),
        Command::Atomic(a) => blockdev::atomic::run_atomic(a),
        Command::Trace(a) => blockdev::trace_cli::run_trace(a),
    };
    if let Err(e) = result {
        eprintln!("vsl: error: {e:#}");
        std::process::exit(1);
    }
}
