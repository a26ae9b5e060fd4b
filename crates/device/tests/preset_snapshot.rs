//! Presets as data (issue 29): the TOML presets must give exactly the cards
//! the Rust statics of commit fd70002 gave. `tests/data/presets_before.json`
//! was written by that code (every field of every preset, as `vsl devices
//! --json` printed it) and so was `tests/data/ftl_configs_before.txt` (the
//! FTL configuration, command times and data path of every preset at four
//! formats and two scales). Re-write only for an intended change of a preset
//! (say why in the commit): `SNAPSHOT_BLESS=1 cargo test -p device --test
//! preset_snapshot`.

use device::{CardConfig, Format, Preset};
use std::path::PathBuf;

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// The fields the statics had (the new `vsl` table is checked through the
/// FTL configurations below).
fn presets_json() -> String {
    let mut v = serde_json::to_value(device::presets()).unwrap();
    for p in v.as_array_mut().unwrap() {
        let o = p.as_object_mut().unwrap();
        o.remove("vsl");
        o.remove("sources");
    }
    serde_json::to_string_pretty(&v).unwrap()
}

fn ftl_configs() -> String {
    let mut out = String::new();
    for p in device::presets() {
        for format in [
            Format::Stock,
            Format::Hp,
            Format::MaxWrite,
            Format::Overprovision(0.3),
        ] {
            for scale in [1.0, 0.02] {
                let mut c = CardConfig::new(Preset::by_name(p.name).unwrap());
                c.format = format;
                c.scale = scale;
                let cfg = c.ftl_config();
                out.push_str(&format!(
                    "{} {:?} {scale}: {:?} cmd {:?} datapath {:?} read_priority {} suspend {:?}\n",
                    p.name,
                    format,
                    cfg.map(|c| format!("{c:?}")),
                    p.command_ns(),
                    p.datapath_bytes_per_s(),
                    c.read_priority,
                    c.suspend_ns,
                ));
            }
        }
    }
    out
}

fn check(name: &str, got: String) {
    let path = data(name);
    if std::env::var_os("SNAPSHOT_BLESS").is_some() {
        std::fs::write(&path, &got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap();
    if got != want {
        let line = got
            .lines()
            .zip(want.lines())
            .find(|(g, w)| g != w)
            .map(|(g, w)| format!("got  {g}\nwant {w}"))
            .unwrap_or_else(|| "line counts differ".into());
        panic!("{name} differs from the statics' snapshot:\n{line}");
    }
}

#[test]
fn toml_presets_give_the_statics_presets() {
    check("presets_before.json", presets_json());
}

#[test]
fn toml_presets_give_the_statics_ftl_configs() {
    check("ftl_configs_before.txt", ftl_configs());
}
