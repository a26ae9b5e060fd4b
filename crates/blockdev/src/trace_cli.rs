//! `vsl trace start DIR [CARD]`, `vsl trace stop [CARD]`, `vsl trace
//! status [CARD] [--json]`: trace capture ([`crate::capture`]) on an
//! attached card, through its control socket. CARD is a loop device,
//! store directory or attachment name, as for `vsl status`; without it,
//! the only attached card.

use crate::capture::{TraceOptions, TraceStatus};
use crate::daemon::control;
use crate::state::AttachState;
use anyhow::{anyhow, bail, Result};
use clap::{Args, Subcommand};
use std::path::PathBuf;

/// `vsl trace`: capture the requests an attached card serves.
#[derive(Args, Debug, Clone)]
pub struct TraceArgs {
    #[command(subcommand)]
    pub action: TraceAction,
}

#[derive(Subcommand, Debug, Clone)]
pub enum TraceAction {
    /// Start capturing into DIR (an existing directory; numbering
    /// continues after the trace files already there).
    Start {
        /// Directory of the trace files.
        dir: PathBuf,
        /// The attached card: loop device, store directory or name.
        card: Option<String>,
        /// Start a new trace file when one reaches this size.
        #[arg(long = "rotate", default_value = crate::capture::ROTATE_DEFAULT, value_name = "SIZE")]
        rotate: String,
        /// Trace files to write: iolog, blkparse or both.
        #[arg(long, default_value = "both")]
        format: String,
    },
    /// Stop capturing: what was captured is written and the files closed.
    Stop {
        /// The attached card: loop device, store directory or name.
        card: Option<String>,
    },
    /// Capture state, records, bytes and dropped records.
    Status {
        /// The attached card: loop device, store directory or name.
        card: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// The one attached card `card` names (or the only one attached).
fn one_card(card: Option<&str>) -> Result<AttachState> {
    let mut live = crate::state::select(card)?;
    match (live.len(), card) {
        (1, _) => Ok(live.remove(0)),
        (0, _) => bail!("no card attached"),
        (n, None) => bail!("{n} cards are attached; name one (a loop device, store or name)"),
        (n, Some(c)) => bail!("{c} names {n} attached cards; name a loop device"),
    }
}

/// Sends `cmd`; the error line of the daemon as an error.
fn ask(st: &AttachState, cmd: &str) -> Result<String> {
    let reply = control(&st.socket, cmd)?;
    if let Some(msg) = reply.strip_prefix("error ") {
        bail!("{msg}");
    }
    if reply.is_empty() {
        bail!("the daemon of {} did not answer", st.name);
    }
    Ok(reply)
}

/// The capture status of an attached card.
pub fn trace_status(st: &AttachState) -> Result<TraceStatus> {
    crate::cli::fetch_status(st)?.trace.ok_or_else(|| {
        anyhow!(
            "the daemon of {} predates trace capture; re-attach it",
            st.name
        )
    })
}

pub fn run_trace(a: TraceArgs) -> Result<()> {
    match a.action {
        TraceAction::Start {
            dir,
            card,
            rotate,
            format,
        } => {
            let opts = TraceOptions::new(&dir, &rotate, &format).map_err(|e| anyhow!("{e}"))?;
            let st = one_card(card.as_deref())?;
            ask(
                &st,
                &format!("trace-start {}", serde_json::to_string(&opts)?),
            )?;
            println!("capturing {} into {}", devices(&st), opts.dir.display());
        }
        TraceAction::Stop { card } => {
            let st = one_card(card.as_deref())?;
            ask(&st, "trace-stop")?;
            let s = trace_status(&st)?;
            println!(
                "stopped capturing {}: {} records, {} bytes in {} files since attach, {} dropped",
                devices(&st),
                s.records,
                s.bytes,
                s.files,
                s.dropped
            );
        }
        TraceAction::Status { card, json } => {
            let st = one_card(card.as_deref())?;
            let s = trace_status(&st)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&s)?);
            } else {
                let into = s
                    .dir
                    .as_deref()
                    .map(|d| format!(" into {d}"))
                    .unwrap_or_default();
                println!(
                    "{}: {}{into}; since attach {} records, {} bytes, {} files, {} dropped, {} out of order{}",
                    devices(&st),
                    s.state,
                    s.records,
                    s.bytes,
                    s.files,
                    s.dropped,
                    s.out_of_order,
                    s.error.map(|e| format!("; error: {e}")).unwrap_or_default()
                );
            }
        }
    }
    Ok(())
}

fn devices(st: &AttachState) -> String {
    st.devices
        .iter()
        .map(|d| d.loop_device.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}
