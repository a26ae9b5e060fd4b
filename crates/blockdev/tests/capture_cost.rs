//! What trace capture costs per request, off the attached card: serving
//! threads hand records to a running capture (both formats, files in
//! tmpfs when there is one) at a steady pace, and the test reports the
//! request path's time per record and the writer thread's CPU per record
//! (from /proc). `cargo test --release -p blockdev --test capture_cost --
//! --ignored --nocapture`; the figures are in bench/RESULTS.md. Ignored by
//! default: it measures, it does not check a bound a shared machine could
//! miss.

use blockdev::capture::{Capture, TraceDevice, TraceOp, TraceOptions, TraceRecord};
use std::time::{Duration, Instant};

/// utime + stime ticks of this process's threads named `name`.
fn thread_ticks(name: &str) -> u64 {
    let mut ticks = 0;
    for t in std::fs::read_dir("/proc/self/task").unwrap() {
        let p = t.unwrap().path();
        let comm = std::fs::read_to_string(p.join("comm")).unwrap_or_default();
        if comm.trim() != name {
            continue;
        }
        let stat = std::fs::read_to_string(p.join("stat")).unwrap_or_default();
        // Fields after the ")" of the command: state is field 3, utime 14.
        let rest = &stat[stat.rfind(')').unwrap() + 2..];
        let f: Vec<&str> = rest.split(' ').collect();
        ticks += f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap();
    }
    ticks
}

fn ticks_per_s() -> f64 {
    // SAFETY: sysconf reads a constant.
    unsafe { libc::sysconf(libc::_SC_CLK_TCK) as f64 }
}

#[test]
#[ignore]
fn capture_cost_per_record() {
    let base = if std::path::Path::new("/dev/shm").is_dir() {
        std::path::PathBuf::from("/dev/shm")
    } else {
        std::env::temp_dir()
    };
    let dir = base.join(format!("vsl-capture-cost-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let c = Capture::start_writer().unwrap();
    let dev = TraceDevice {
        member: 0,
        path: "/dev/loop7".into(),
        major: 7,
        minor: 7,
    };
    c.start(TraceOptions::new(&dir, "256M", "both").unwrap(), vec![dev])
        .unwrap();
    // Two serving threads, 100 k records a second each (in 1 ms steps),
    // latencies 20-1000 us: what the attached card serves at most.
    let threads = 2u64;
    let per_thread = 400_000u64;
    let step = 100u64;
    let t_start = Instant::now();
    let w0 = thread_ticks("vsl-trace");
    let spent: Vec<Duration> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|k| {
                let c = &c;
                s.spawn(move || {
                    let mut spent = Duration::ZERO;
                    let t0 = Instant::now();
                    for i in 0..per_thread {
                        if i % step == 0 {
                            let due = t0 + Duration::from_micros(i / step * 1000);
                            if let Some(d) = due.checked_duration_since(Instant::now()) {
                                std::thread::sleep(d);
                            }
                        }
                        let now = Instant::now();
                        let lat = Duration::from_micros(20 + (i * 7919) % 980);
                        let a = now.checked_sub(lat).unwrap_or(now);
                        let op = if i % 3 == 0 {
                            TraceOp::Write
                        } else {
                            TraceOp::Read
                        };
                        let off = ((i * 2_654_435_761 + k) % (1 << 20)) * 4096;
                        let t = Instant::now();
                        c.record(|| TraceRecord {
                            member: 0,
                            op,
                            offset: off,
                            len: 4096 << (i % 3),
                            arrival: a,
                            completion: now,
                            errno: 0,
                        });
                        spent += t.elapsed();
                    }
                    spent
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let fed = t_start.elapsed();
    // What is still held is written by stop: its time counts as the
    // writer's too.
    let t_stop = Instant::now();
    assert!(c.stop());
    let stop_s = t_stop.elapsed().as_secs_f64();
    let writer_s = (thread_ticks("vsl-trace") - w0) as f64 / ticks_per_s();
    let st = c.status();
    let n = threads * per_thread;
    let path_ns = spent.iter().map(|d| d.as_nanos() as f64).sum::<f64>() / n as f64;
    println!(
        "capture cost: {n} records from {threads} threads over {:.2} s: request path {path_ns:.0} ns \
         per record; writer thread {:.3} s CPU ({:.0} ns per record), stop {:.3} s; \
         {} bytes, {} dropped, {} out of order",
        fed.as_secs_f64(),
        writer_s,
        writer_s * 1e9 / n as f64,
        stop_s,
        st.bytes,
        st.dropped,
        st.out_of_order
    );
    assert_eq!(st.records + st.dropped, n);
    c.shutdown();
    let _ = std::fs::remove_dir_all(&dir);
}
