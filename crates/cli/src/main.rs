//! `vsl`: the command-line front end. Argument parsing and glue only; the
//! model lives in the library crates, the glue in this crate's library.

use clap::Parser;
use vsl_cli::{
    args, cmd_devices, cmd_fit, cmd_pts, cmd_replay, cmd_review, cmd_run, cmd_torture,
    cmd_validate, sweep,
};

/// Commands that only print to stdout die quietly of SIGPIPE when a
/// reader such as `head` closes the pipe, as Unix tools do, instead of
/// panicking in `println!` (Rust ignores SIGPIPE). `attach` (its daemon
/// writes to control sockets) and `serve` keep ignoring it.
fn default_sigpipe() {
    #[cfg(unix)]
    // SAFETY: called first thing in main, before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn main() {
    let cli = args::Cli::parse();
    if !matches!(
        cli.command,
        args::Command::Attach(_) | args::Command::Serve(_)
    ) {
        default_sigpipe();
    }
    let result = match cli.command {
        args::Command::Run(a) => cmd_run::run(*a),
        args::Command::Devices(a) => cmd_devices::devices(a),
        args::Command::Profiles => cmd_devices::profiles(),
        args::Command::Policies => cmd_devices::policies(),
        args::Command::Validate(a) => cmd_validate::validate(a),
        args::Command::Review(a) => cmd_review::review(a),
        args::Command::Sweep(a) => sweep::cli(a),
        args::Command::Attach(a) => blockdev::cli::run_attach(*a),
        args::Command::Detach(a) => blockdev::cli::run_detach(a),
        args::Command::Atomic(a) => blockdev::atomic::run_atomic(a),
        args::Command::Trace(a) => blockdev::trace_cli::run_trace(a),
        args::Command::Status(a) => blockdev::manage::run_status(a),
        args::Command::Format(a) => blockdev::manage::run_format(a),
        args::Command::Erase(a) => blockdev::manage::run_erase(a),
        args::Command::Serve(a) => web::run_serve(a),
        args::Command::Torture(a) => cmd_torture::torture(a),
        args::Command::Fit(a) => cmd_fit::fit(*a),
        args::Command::Replay(a) => cmd_replay::replay(*a),
        args::Command::Pts(a) => cmd_pts::pts(*a),
    };
    if let Err(e) = result {
        eprintln!("vsl: error: {e:#}");
        std::process::exit(1);
    }
}
