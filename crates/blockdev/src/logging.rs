//! The daemon's logs and its word to a service manager.
//!
//! [`init`] sends `tracing` events to standard error: the forked daemon's
//! standard error is `daemon.log` in its run directory, and under systemd
//! (`vsl attach --foreground`) it is the journal, which stamps each line
//! itself (so no timestamp is written when `JOURNAL_STREAM` is set).
//! `OPENVSL_LOG` sets the level (error, warn, info — the default —, debug,
//! trace). [`notify`] speaks the `sd_notify` protocol: `READY=1` once the
//! block devices exist, `STOPPING=1` on the way out; without
//! `NOTIFY_SOCKET` it does nothing.

use tracing_subscriber::filter::LevelFilter;

/// Installs the stderr subscriber; a second call does nothing.
pub fn init() {
    let level = std::env::var("OPENVSL_LOG")
        .ok()
        .and_then(|s| s.parse::<LevelFilter>().ok())
        .unwrap_or(LevelFilter::INFO);
    let journal = std::env::var_os("JOURNAL_STREAM").is_some();
    let b = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_target(false)
        // A closed stderr (a pipe whose reader left) must not end the
        // daemon: by default the layer reports a failed write with
        // eprintln!, which panics when stderr is that same broken pipe.
        .log_internal_errors(false)
        .with_max_level(level);
    let _ = if journal {
        b.without_time().try_init()
    } else {
        b.try_init()
    };
}

/// Sends `states` to the service manager, if one listens; a failure is
/// logged, not fatal (the devices serve either way).
pub fn notify(states: &[sd_notify::NotifyState]) {
    if let Err(e) = sd_notify::notify(false, states) {
        tracing::warn!("sd_notify to the service manager failed: {e}");
    }
}

/// True when a service manager waits for our notifications.
pub fn under_service_manager() -> bool {
    std::env::var_os("NOTIFY_SOCKET").is_some()
}
