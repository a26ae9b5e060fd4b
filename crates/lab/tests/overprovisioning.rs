//! Over-provisioning must behave as the physics says: more spare area, lower
//! write amplification and higher steady-state random-write IOPS, and no
//! change to steady reads.

use device::{Card, CardConfig, Format, Preset, VirtualDevice};
use lab::{precondition_fill, run, RunOptions};
use sim::Nanos;
use workload::Profile;

struct Outcome {
    wa: f64,
    write_iops: f64,
    /// The reads right after the writes, until 5 s past the point where
    /// catch-up grooming starts (`catchup_after_ns` without writes).
    first_read_iops: f64,
    /// The next 5 s.
    read_iops: f64,
}

fn steady(format: Format) -> Outcome {
    let mut c = CardConfig::new(Preset::by_name("iodrive-duo-640-mlc").unwrap());
    c.scale = 0.01;
    c.format = format;
    let catch_up_s = c
        .ftl_config()
        .unwrap()
        .gc_catchup_after_ns
        .div_ceil(1_000_000_000);
    let mut card = Card::new(c).unwrap();
    let t = precondition_fill(&mut card, Nanos::ZERO).unwrap();
    let w = Profile::by_name("4k-randwrite").unwrap().spec();
    let o = |secs: u64| RunOptions {
        threads: 16,
        queue_depth: 16,
        duration_ns: secs * 1_000_000_000,
        interval_ns: secs * 1_000_000_000,
        seed: 3,
    };
    // write about three device capacities, then measure
    let cap = card.capacity_bytes() as f64;
    let warm_s = (3.0 * cap / 4096.0 / 60_000.0).ceil() as u64;
    let t = run(&mut card, &w, &o(warm_s), t, &mut |_| {}).unwrap().end;
    let m = run(&mut card, &w, &o(30), t, &mut |_| {}).unwrap();
    let t = m.end;
    let r = Profile::by_name("4k-randread").unwrap().spec();
    // The first reads after the writes wait behind catch-up grooming where
    // the writes stalled (stock; SYSTEM.md §4's ~1 s read peak after write
    // preconditioning), from when the writes have stopped for the preset's
    // catch-up delay: steady reads are measured after them.
    let first = run(&mut card, &r, &o(catch_up_s + 5), t, &mut |_| {}).unwrap();
    let rr = run(&mut card, &r, &o(5), first.end, &mut |_| {}).unwrap();
    Outcome {
        wa: m.summary.totals.write_amplification,
        write_iops: m.summary.totals.iops,
        first_read_iops: first.summary.totals.iops,
        read_iops: rr.summary.totals.iops,
    }
}

#[test]
fn more_spare_means_less_wa_and_faster_writes_same_reads() {
    let stock = steady(Format::Stock);
    let hp = steady(Format::Hp);
    let max = steady(Format::MaxWrite);
    for (n, o) in [("stock", &stock), ("hp", &hp), ("max-write", &max)] {
        eprintln!(
            "{n}: WA {:.2}, writes {:.0}, first reads {:.0}, reads {:.0} IOPS",
            o.wa, o.write_iops, o.first_read_iops, o.read_iops
        );
    }
    assert!(
        stock.wa > hp.wa && hp.wa > max.wa,
        "WA {} {} {}",
        stock.wa,
        hp.wa,
        max.wa
    );
    assert!(
        stock.write_iops < hp.write_iops && hp.write_iops < max.write_iops,
        "write IOPS {} {} {}",
        stock.write_iops,
        hp.write_iops,
        max.write_iops
    );
    for o in [&hp, &max] {
        let ratio = o.read_iops / stock.read_iops;
        assert!(
            (0.9..1.1).contains(&ratio),
            "reads changed with format: {ratio}"
        );
    }
    // Only the stock format's writes stall, so only its first reads wait
    // behind catch-up grooming.
    assert!(
        stock.first_read_iops < 0.95 * stock.read_iops && hp.first_read_iops > 0.95 * hp.read_iops,
        "first reads: stock {} of {}, hp {} of {}",
        stock.first_read_iops,
        stock.read_iops,
        hp.first_read_iops,
        hp.read_iops
    );
}
