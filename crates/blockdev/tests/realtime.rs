//! `vsl attach --rt-priority`: the threads that answer I/Os at the model's
//! time (the FUSE ring queues' and the timer thread) run SCHED_FIFO, so a
//! client keeping every CPU busy does not make the answers late; `off`
//! leaves them ordinary threads, and so does `--timing none`.

mod common;

use common::*;

/// (policy, rt_priority) of every thread of `pid` named `prefix*`, from
/// /proc (stat fields 41 and 40).
fn threads_sched(pid: u32, prefix: &str) -> Vec<(String, u32, u32)> {
    let mut out = Vec::new();
    for t in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap() {
        let dir = t.unwrap().path();
        let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
        let comm = comm.trim().to_string();
        if !comm.starts_with(prefix) {
            continue;
        }
        let stat = std::fs::read_to_string(dir.join("stat")).unwrap();
        // Fields after the command's closing parenthesis start at field 3.
        let rest: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
        let prio = rest[40 - 3].parse().unwrap();
        let policy = rest[41 - 3].parse().unwrap();
        out.push((comm, policy, prio));
    }
    out
}

#[test]
fn answering_threads_run_realtime_unless_off() {
    if skip("answering_threads_run_realtime_unless_off", &["dd"]) {
        return;
    }
    let rig = Rig::new("realtime");

    // A value out of range: one line naming the option, nothing made.
    rig.assert_attach_refused("--rt-priority", "100");

    for mode in transports("answering_threads_run_realtime_unless_off") {
        // The default: SCHED_FIFO (1) at 10 (the tests run as root).
        let devs = rig.attach(&[TINY_CARD, &["--fuse-uring", mode]].concat());
        rig.assert_transport(mode);
        assert_eq!(rig.state()["rt_priority"], 10, "{}", rig.state());
        let pid = rig.daemon_pid();
        let mut answering = threads_sched(pid, "vsl-timer");
        if mode == "on" {
            let rings = threads_sched(pid, "fuse-uring-");
            assert!(!rings.is_empty(), "no FUSE ring threads");
            answering.extend(rings);
        }
        assert!(!answering.is_empty(), "no timer thread");
        for (name, policy, prio) in &answering {
            assert_eq!((*policy, *prio), (1, 10), "{name} is not SCHED_FIFO 10");
        }
        // The serving threads of /dev/fuse and the flusher stay ordinary.
        for (name, policy, _) in threads_sched(pid, "") {
            if !name.starts_with("vsl-timer") && !name.starts_with("fuse-uring-") {
                assert_eq!(policy, 0, "{name} is real-time");
            }
        }
        sh(&format!(
            "dd if=/dev/urandom of={} bs=4k count=64 oflag=direct status=none",
            devs[0]
        ));
        if mode == "on" {
            // The ring threads' answers and their lateness, by cause: both
            // parts reported, and means of a few µs, not the time since
            // attach (a split measured from the wrong instants).
            let fe = rig.status_json()[0]["fuse_entries"].clone();
            assert!(fe["answers"].as_u64().unwrap() >= 64, "{fe}");
            for k in ["late_waiting_mean_us", "late_working_mean_us"] {
                let v = fe[k].as_f64().unwrap();
                assert!((0.0..10_000.0).contains(&v), "{k}: {fe}");
            }
        }
        rig.detach_all();

        // off, and --timing none (nothing waits for a time): ordinary
        // threads, and the state says so.
        for opts in [["--rt-priority", "off"], ["--timing", "none"]] {
            let _ = rig.attach(&[TINY_CARD, &["--fuse-uring", mode], &opts].concat());
            assert!(
                rig.state()["rt_priority"].is_null(),
                "{opts:?}: {}",
                rig.state()
            );
            for (name, policy, _) in threads_sched(rig.daemon_pid(), "") {
                assert_eq!(policy, 0, "{name} is real-time with {opts:?}");
            }
            rig.detach_all();
        }
    }
}
