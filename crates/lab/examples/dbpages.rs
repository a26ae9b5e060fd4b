//! Database page flushes with a doublewrite buffer vs atomic writes, on
//! ioMemory 0 of a scaled card, in virtual time (bench/dbpages.sh).
//! Usage: dbpages [PRESET] [SCALE] [BATCHES]

use device::{CardConfig, MemberSel, Preset};
use lab::dbpages::{run_dbpages, DbPagesConfig, PageSafety};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let preset = args.get(1).map_or("iodrive-duo-640-mlc", |s| s.as_str());
    let scale: f64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(0.01);
    let batches: u64 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(400);
    let Some(p) = Preset::by_name(preset) else {
        eprintln!("dbpages: unknown preset '{preset}'");
        std::process::exit(2);
    };
    let mut card = CardConfig::new(p);
    card.scale = scale;
    card.member = MemberSel::parse("0").expect("member 0");
    let ftl = match card.ftl_config() {
        Ok(f) => f,
        Err(e) => {
            eprintln!("dbpages: {e}");
            std::process::exit(2);
        }
    };
    let cfg = DbPagesConfig {
        batches,
        controller_write_bytes_per_s: p.datapath_bytes_per_s().1,
        ..Default::default()
    };
    let mut out = Vec::new();
    for mode in [PageSafety::Doublewrite, PageSafety::AtomicWrite] {
        match run_dbpages(&ftl, &cfg, mode) {
            Ok(r) => out.push(r),
            Err(e) => {
                eprintln!("dbpages: {e}");
                std::process::exit(1);
            }
        }
    }
    println!(
        "{preset} scale {scale}, ioMemory 0 (controller write path {} MB/s): {} flush batches of {} x {} KiB pages, table {}% of the device, one flusher, virtual time",
        cfg.controller_write_bytes_per_s / 1_000_000,
        cfg.batches,
        cfg.batch_pages,
        cfg.page_bytes / 1024,
        cfg.table_fraction * 100.0
    );
    println!(
        "{:<12} {:>12} {:>14} {:>14} {:>12} {:>12}",
        "mode", "pages", "host GiB", "NAND GiB", "pages/s", "page MB/s"
    );
    for r in &out {
        println!(
            "{:<12} {:>12} {:>14.3} {:>14.3} {:>12.0} {:>12.1}",
            serde_json::to_value(r.mode).unwrap().as_str().unwrap(),
            r.pages_flushed,
            r.host_bytes as f64 / (1u64 << 30) as f64,
            r.nand_bytes as f64 / (1u64 << 30) as f64,
            r.pages_per_s,
            r.page_mb_per_s
        );
    }
    let (d, a) = (&out[0], &out[1]);
    println!(
        "atomic / doublewrite: throughput {:.2}x, host bytes {:.2}x, NAND bytes {:.2}x",
        a.pages_per_s / d.pages_per_s,
        a.host_bytes as f64 / d.host_bytes as f64,
        a.nand_bytes as f64 / d.nand_bytes as f64
    );
    if std::env::var("DBPAGES_JSON").is_ok() {
        println!("{}", serde_json::to_string_pretty(&out).unwrap());
    }
}
