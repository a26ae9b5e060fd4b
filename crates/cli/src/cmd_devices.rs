use crate::args::DevicesArgs;
use anyhow::{anyhow, Result};
use device::Preset;
use std::io::Write;
use workload::Profile;

fn opt(v: Option<u32>, scale: f64, unit: &str) -> String {
    v.map(|x| format!("{:.0}{unit}", x as f64 / scale))
        .unwrap_or_else(|| "-".into())
}

/// `vsl devices`: the built-in presets and those of `--device-dir`; `--show`
/// prints one as a preset file.
pub fn devices(a: DevicesArgs) -> Result<()> {
    if let Some(name) = &a.show {
        let p = Preset::resolve(name).map_err(|e| anyhow!("--show: {e}"))?;
        print!("{}", device::preset_file::to_toml(p));
        return Ok(());
    }
    let mut all: Vec<(String, &'static Preset)> = device::presets()
        .iter()
        .map(|p| ("built-in".to_string(), p))
        .collect();
    if let Some(dir) = &a.device_dir {
        all.extend(device::preset_file::load_dir(dir).map_err(|e| anyhow!("--device-dir: {e}"))?);
    }
    if a.json {
        let v: Vec<serde_json::Value> = all
            .iter()
            .map(|(from, p)| {
                let mut v = serde_json::to_value(p).expect("a preset serialises");
                v["origin"] = from.as_str().into();
                v
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    let mut o = std::io::stdout().lock();
    for (from, p) in &all {
        let g = &p.geometry;
        let from = if from == "built-in" {
            String::new()
        } else {
            format!(" ({from})")
        };
        let _ = writeln!(o, "{}{from}\n  {}", p.name, p.description);
        let _ = writeln!(
            o,
            "  {} x {:.0} GB stock ({} raw each); {} NAND: {} ch ({} parity) x {} banks x {} planes x {} blocks x {} pages x {} B",
            p.members, p.stock_bytes as f64 / 1e9, crate::output::human_bytes(g.raw_bytes()), p.timing.cell,
            g.channels, g.parity_channels, g.banks, g.planes, g.blocks_per_plane, g.pages_per_block, g.page_bytes
        );
        let d = &p.datasheet;
        let _ = writeln!(
            o,
            "  data sheet: {}/{} MB/s read/write; 512 B IOPS {}/{}; 4K IOPS {}/{}; latency {}/{}",
            d.read_mb_s,
            d.write_mb_s,
            opt(d.read_iops_512, 1e3, "K"),
            opt(d.write_iops_512, 1e3, "K"),
            opt(d.read_iops_4k, 1e3, "K"),
            opt(d.write_iops_4k, 1e3, "K"),
            opt(d.read_latency_us, 1.0, " us"),
            opt(d.write_latency_us, 1.0, " us")
        );
        let _ = writeln!(
            o,
            "  NAND: tR {} us, tPROG {} us, tBERS {} us, {} MB/s per channel, {} P/E cycles",
            p.timing.read_ns / 1000,
            p.timing.program_ns / 1000,
            p.timing.erase_ns / 1000,
            p.timing.bus_bytes_per_s / 1_000_000,
            p.timing.endurance_cycles
        );
        let ftl = if p.host_ftl {
            "host FTL (map in host RAM)"
        } else {
            "FTL on the card"
        };
        let comp = if p.compression {
            "; compresses data"
        } else {
            ""
        };
        let _ = writeln!(o, "  {ftl}{comp}\n  source: {}", p.source);
    }
    let _ = writeln!(o, "\ndefault: {}", Preset::names()[0]);
    Ok(())
}

pub fn profiles() -> Result<()> {
    for p in Profile::all() {
        println!("{:<14} {}", p.name, p.description);
    }
    Ok(())
}

/// `vsl policies`: every built-in GC victim policy, one line each.
pub fn policies() -> Result<()> {
    for p in ftl::POLICIES {
        println!("{:<13} {} [{}]", p.spelling, p.summary, p.source);
    }
    for p in ftl::PLACEMENTS {
        println!(
            "{:<13} (--placement) {} [{}]",
            p.spelling, p.summary, p.source
        );
    }
    Ok(())
}
