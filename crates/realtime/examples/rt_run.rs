//! Runs one real-time workload and prints the result as one JSON line, for
//! bench/fio_agreement.sh (until `vsl run --target` exists).
//!
//! usage: rt_run TARGET RW BS THREADS QD SECONDS [fill]
//!   e.g. rt_run file:/dev/shm/x:1G randread 4k 4 16 5

use lab::RunOptions;
use realtime::{DirectMode, EngineChoice, EngineOptions, RealTarget, Target};
use workload::{units::parse_size, BlockSizes, WorkloadSpec};

fn main() {
    if let Err(e) = real_main() {
        eprintln!("rt_run: {e}");
        std::process::exit(1);
    }
}

fn real_main() -> Result<(), Box<dyn std::error::Error>> {
    let a: Vec<String> = std::env::args().skip(1).collect();
    if a.len() < 6 {
        return Err("usage: rt_run TARGET RW BS THREADS QD SECONDS [fill]".into());
    }
    let target = Target::parse(&a[0])?;
    let rt = RealTarget::open(&target, DirectMode::Auto)?;
    if a.get(6).map(String::as_str) == Some("fill") {
        let f = rt.precondition_fill(EngineChoice::Auto)?;
        eprintln!(
            "filled {} bytes in {:.2} s ({:?})",
            f.bytes, f.wall_s, f.engine
        );
    }
    let mut spec = WorkloadSpec::from_rw(&a[1], None)?;
    spec.block_sizes = BlockSizes::Fixed(parse_size(&a[2])?);
    let secs: f64 = a[5].parse()?;
    let opts = RunOptions {
        threads: a[3].parse()?,
        queue_depth: a[4].parse()?,
        duration_ns: (secs * 1e9) as u64,
        interval_ns: 1_000_000_000,
        seed: 1,
    };
    let r = rt.run(&spec, &opts, &EngineOptions::default(), &mut |_| {})?;
    let t = &r.result.summary.totals;
    println!(
        "{{\"iops\":{:.1},\"lat_avg_us\":{:.2},\"lat_p99_us\":{:.2},\"engine\":\"{:?}\",\"direct\":{},\"notes\":{:?}}}",
        t.iops, t.lat_avg_us, t.lat_p99_us, r.info.engine, r.info.direct, r.info.notes
    );
    Ok(())
}
