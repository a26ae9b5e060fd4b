//! What survives a reboot: one [`AttachRecord`] per attached store in
//! `/var/lib/openvsl/attached/<name>.json` (or under `$OPENVSL_STATE_DIR`),
//! so that `vsl attach --restore` can re-attach every store that was
//! attached when the machine went down, with the options it had.
//!
//! The run directory (`/run/openvsl`) is a tmpfs lost at reboot; this one
//! is not. A record is written (and synced, with its directory) once the
//! daemon is up, before it reports ready, and removed only by an explicit
//! `vsl detach`: a daemon stopped by a signal (the machine shutting down,
//! `systemctl stop`) or killed keeps its record, because that store was
//! attached when the machine went down.

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The record format's version.
pub const RECORD_VERSION: u32 = 1;

/// Where persistent state lives: `$OPENVSL_STATE_DIR` or `/var/lib/openvsl`.
pub fn state_base() -> PathBuf {
    std::env::var_os("OPENVSL_STATE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/lib/openvsl"))
}

/// The directory of the attach records.
pub fn records_dir() -> PathBuf {
    state_base().join("attached")
}

/// One attached store, as `--restore` needs it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct AttachRecord {
    pub version: u32,
    /// The attachment's name ([`crate::state::name_for_store`]).
    pub name: String,
    /// The store directory (canonical).
    pub store: PathBuf,
    /// Attached by a service manager (`--foreground` with `NOTIFY_SOCKET`
    /// set): its unit brings it back, so `--restore` leaves it alone.
    #[serde(default)]
    pub service: bool,
    /// The `vsl attach` options ([`crate::cli::AttachArgs`] as JSON), so
    /// that the store comes back exactly as it was attached.
    pub options: serde_json::Value,
}

fn path_of(name: &str) -> PathBuf {
    records_dir().join(format!("{name}.json"))
}

/// Writes `rec` durably: a temporary file, synced, renamed over the old
/// record, and the directory synced.
pub fn save(rec: &AttachRecord) -> Result<()> {
    let dir = records_dir();
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let path = path_of(&rec.name);
    let tmp = dir.join(format!(".{}.json.tmp", rec.name));
    let text = serde_json::to_string_pretty(rec)? + "\n";
    let mut f =
        std::fs::File::create(&tmp).with_context(|| format!("writing {}", tmp.display()))?;
    f.write_all(text.as_bytes())?;
    f.sync_all()
        .with_context(|| format!("syncing {}", tmp.display()))?;
    std::fs::rename(&tmp, &path).with_context(|| format!("writing {}", path.display()))?;
    sync_dir(&dir)
}

/// Removes the record of attachment `name`, if any (durably).
pub fn remove(name: &str) -> Result<()> {
    let path = path_of(name);
    match std::fs::remove_file(&path) {
        Ok(()) => sync_dir(&records_dir()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).with_context(|| format!("removing {}", path.display())),
    }
}

fn sync_dir(dir: &Path) -> Result<()> {
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .with_context(|| format!("syncing {}", dir.display()))
}

/// Every record, sorted by name, and the files that could not be read
/// (with why).
pub fn list() -> (Vec<AttachRecord>, Vec<(PathBuf, String)>) {
    let mut good = Vec::new();
    let mut bad = Vec::new();
    let entries = std::fs::read_dir(records_dir()).into_iter().flatten();
    for e in entries.flatten() {
        let path = e.path();
        let is_record = path.extension().is_some_and(|x| x == "json")
            && !e.file_name().to_string_lossy().starts_with('.');
        if !is_record {
            continue;
        }
        let parsed = std::fs::read_to_string(&path)
            .map_err(|e| e.to_string())
            .and_then(|t| serde_json::from_str::<AttachRecord>(&t).map_err(|e| e.to_string()));
        match parsed {
            Ok(r) if r.version == RECORD_VERSION => good.push(r),
            Ok(r) => bad.push((
                path,
                format!("record version {} (expected {RECORD_VERSION})", r.version),
            )),
            Err(why) => bad.push((path, why)),
        }
    }
    good.sort_by(|a, b| a.name.cmp(&b.name));
    bad.sort();
    (good, bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One test touches the environment, so records of parallel tests
    /// cannot mix.
    #[test]
    fn records_save_list_and_remove_durably() {
        let dir = std::env::temp_dir().join(format!("openvsl-records-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::env::set_var("OPENVSL_STATE_DIR", &dir);
        assert_eq!(list(), (vec![], vec![]), "no directory: no record");
        let rec = |name: &str| AttachRecord {
            version: RECORD_VERSION,
            name: name.into(),
            store: PathBuf::from(format!("/srv/{name}")),
            service: false,
            options: serde_json::json!({"store": format!("/srv/{name}"), "timing": "none"}),
        };
        save(&rec("b")).unwrap();
        save(&rec("a")).unwrap();
        let mut a2 = rec("a");
        a2.service = true;
        save(&a2).unwrap();
        std::fs::write(records_dir().join("junk.json"), "{").unwrap();
        std::fs::write(records_dir().join("notes.txt"), "ignored").unwrap();
        let (good, bad) = list();
        assert_eq!(good, vec![a2, rec("b")]);
        assert_eq!(bad.len(), 1, "{bad:?}");
        assert!(bad[0].0.ends_with("junk.json"));
        remove("a").unwrap();
        remove("a").unwrap();
        assert_eq!(list().0, vec![rec("b")]);
        std::env::remove_var("OPENVSL_STATE_DIR");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
