//! The black-box loop of issue 29 on a real attached card, at scale 0.02
//! (as the issue asks): attach a card from a preset file the lab is not
//! told (the 640 MLC with 18 % reserved instead of the shipped 13 %),
//! measure its loop device with `vsl review --target blockdev:`, `vsl fit`
//! the reserve and the host path from that review alone, predict the card
//! formatted to another capacity, `vsl format` the card to it and measure
//! again, once: the prediction must be within 15 % (the figure);
//! the larger run, with 8K 70/30 too, is `bench/fit_loop.sh`.
//!
//! The second format is a capacity, 290 GiB per ioDimm (311 GB; `G` is
//! binary in sizes, as in fio; stock is 320 GB):
//! what a fixed capacity leaves spare depends on the reserve, the
//! parameter the fit recovers, so the prediction tests the fit. (An
//! over-provisioning share of the usable NAND does not: the hidden card's
//! model at 20 % gives 35.2 K IOPS at reserve 0.18 and 34.5 K at 0.1954.)
//!
//! The host path: the lab's client gets about 28-29 K I/Os a second at
//! 16T/16Q through an attached card on this machine however fast its
//! model is, and the groomer's stop-and-go then leaves the array idle
//! while the runway trickles in, so the card gives 0.85-0.9 of its own
//! model in steady state (docs/MODEL.md, "The host path in a
//! measurement"). The fit takes the review's first
//! preconditioning round as a figure too (`--review-first-round`) and fits
//! `host.thread_ns` with the reserve, so it predicts the card through this
//! host; it models the review's own rounds, window and preconditioning cap.
//! The card's store is in RAM (/dev/shm) when there is room, since on this
//! machine's disk page-cache writeback throttled the attached card (20 %
//! iowait, 28.8 K against 33.1 K IOPS at 20 % over-provisioning).

mod common;
use common::{set_field, skip, Rig};
use std::path::Path;

const SCALE: &str = "0.02";

fn ok(rig: &Rig, args: &[&str]) -> String {
    let out = rig.cmd(args).output().unwrap();
    assert!(
        out.status.success(),
        "vsl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn review(rig: &Rig, dev: &str, plan: &Path, out: &Path) -> f64 {
    ok(
        rig,
        &[
            "review",
            "--target",
            &format!("blockdev:{dev}"),
            "--plan",
            plan.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "-q",
        ],
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("lab_results.json")).unwrap())
            .unwrap();
    let t = &v["targets"][0];
    assert!(t["error"].is_null(), "{}", t["error"]);
    t["profiles"][0]["matrix"][0]["stats"]["iops"]
        .as_f64()
        .unwrap()
}

/// An attached card measured under this share of its own model's
/// virtual-time figure was limited by the host beyond what the fit's host
/// path can stand for (a loaded machine): the loop says so and stops. On
/// this machine the attached card delivered 0.76-0.84 of its model on 4K
/// writes with the store in RAM (2026-11-28/29), which the fitted path
/// accounts for.
const HOST_SHORT: f64 = 0.7;

/// The second format: `vsl format --capacity` and `vsl fit --predict
/// capacity=`.
const CAPACITY: &str = "290G";

/// Room the card's store needs in /dev/shm (400 GiB raw x 0.02, and the
/// reviews' files).
const SHM_ROOM: u64 = 12 << 30;

/// Bytes free in the file system holding `dir` (0 if it cannot say).
fn free_bytes(dir: &Path) -> u64 {
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()) else {
        return 0;
    };
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return 0;
    }
    st.f_bavail as u64 * st.f_frsize as u64
}

/// `vsl fit` of the stock review's figures on `device` with the reserve
/// free, predicting the card at the second format: its JSON report.
/// `iters` 0 evaluates `device` as it is (no search).
fn fit(rig: &Rig, device: &str, iters: &str, name: &str) -> (String, serde_json::Value) {
    let dir = &rig.root;
    let report = dir.join(format!("{name}.json"));
    let out = ok(
        rig,
        &[
            "fit",
            dir.join("stock/lab_results.json").to_str().unwrap(),
            "--device",
            device,
            "--member",
            "0",
            "--scale",
            SCALE,
            "--free",
            "vsl.reserved_fraction,host.thread_ns",
            "--review-first-round",
            "--max-iters",
            iters,
            "--round",
            "3s",
            "--window",
            "10s",
            "--max-precondition",
            "120s",
            "--review-tolerance",
            "0.02",
            "--predict",
            &format!("capacity={CAPACITY}"),
            "--out",
            dir.join(format!("{name}.toml")).to_str().unwrap(),
            "--json",
            report.to_str().unwrap(),
        ],
    );
    let r = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    (out, r)
}

/// A fit report's 4K random write IOPS: the stock figure's model value and
/// the prediction at the second format.
fn iops(r: &serde_json::Value) -> (f64, f64) {
    let find = |key: &str, value: &str| {
        r[key]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["figure"].as_str().unwrap().ends_with(" iops"))
            .unwrap()[value]
            .as_f64()
            .unwrap()
    };
    (find("figures", "fitted"), find("predictions", "predicted"))
}

/// Says loudly, and returns true, when the attached card delivered well
/// under its own model: this machine could not serve it in real time.
fn host_limited(format: &str, measured: f64, model: f64) -> bool {
    if measured >= HOST_SHORT * model {
        return false;
    }
    let why = format!(
        "at {format} the attached card delivered {measured:.0} IOPS, {:.0} % of its model's {model:.0} in virtual time: this machine cannot serve it in real time (load: {})",
        measured / model * 100.0,
        std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim()
    );
    common::skipped("black_box_loop_on_an_attached_card", &why);
    println!("SKIPPED black_box_loop_on_an_attached_card: {why}");
    true
}

#[test]
fn black_box_loop_on_an_attached_card() {
    if skip("black_box_loop_on_an_attached_card", &[]) {
        return;
    }
    let shm = Path::new("/dev/shm");
    let rig = if free_bytes(shm) >= SHM_ROOM {
        Rig::new_in("fitloop", shm)
    } else {
        println!("/dev/shm has under {} GiB free: the card's store is on disk, where writeback may hold the attached card back", SHM_ROOM >> 30);
        Rig::new("fitloop")
    };
    let dir = &rig.root;
    let (_, text, _) = common::vsl(&["devices", "--show", "iodrive-duo-640-mlc"]);
    let hidden = dir.join("hidden.toml");
    std::fs::write(&hidden, set_field(&text, "reserved_fraction", "0.18")).unwrap();
    let plan = dir.join("plan.toml");
    std::fs::write(
        &plan,
        "profiles = [\"4k-randwrite\"]\nmatrix_threads = [16]\nmatrix_qd = [16]\nreal_round = \"3s\"\n\
         real_window = \"10s\"\nreal_phase_limit = \"120s\"\nstandard = false\nsysbench = false\nioanalyzer = false\n",
    )
    .unwrap();
    let store = dir.join("store");
    let s = store.to_str().unwrap();
    let out = ok(
        &rig,
        &[
            "attach",
            "--store",
            s,
            "--device",
            hidden.to_str().unwrap(),
            "--member",
            "0",
            "--scale",
            SCALE,
        ],
    );
    let dev = out.split('\t').next().unwrap().trim().to_string();
    let t0 = std::time::Instant::now();
    let stock = review(&rig, &dev, &plan, &dir.join("stock"));
    println!(
        "measured stock 4K random write {stock:.0} IOPS ({:.0} s)",
        t0.elapsed().as_secs_f64()
    );

    // The loop checks the model, the lab and the fit, not whether this
    // machine can serve the card in real time: when the attached card
    // delivered well under what its own model gives in virtual time by the
    // fit's method (a loaded machine: the kernel path, not the model, set
    // the rate), say so loudly and stop.
    let (_, truth) = fit(&rig, hidden.to_str().unwrap(), "0", "truth");
    let (model, op_model) = iops(&truth);
    println!("the hidden card's own model, virtual time: {model:.0} IOPS; attached and measured: {stock:.0}");
    if host_limited("stock", stock, model) {
        return;
    }

    let (fit_out, r) = fit(&rig, "iodrive-duo-640-mlc", "15", "fitted");
    println!("{fit_out}");
    let reserve = r["parameters"][0]["fitted"].as_f64().unwrap();
    let path_ns = r["parameters"][1]["fitted"].as_f64().unwrap();
    let (_, predicted) = iops(&r);

    ok(&rig, &["detach", "--all"]);
    ok(&rig, &["format", s, "--capacity", CAPACITY, "-y"]);
    let out = ok(&rig, &["attach", "--store", s]);
    let dev = out.split('\t').next().unwrap().trim().to_string();
    let op = review(&rig, &dev, &plan, &dir.join("op"));
    println!("the hidden card's own model at {CAPACITY}, virtual time: {op_model:.0} IOPS; attached and measured: {op:.0}");
    ok(&rig, &["detach", "--all"]);
    if host_limited(CAPACITY, op, op_model) {
        return;
    }
    let err = predicted / op - 1.0;
    println!(
        "black-box loop: hidden reserve 0.18, fitted {reserve:.4}; the host path {:.0} µs per I/O of a thread ({}); 4K random write at {CAPACITY}: predicted {predicted:.0}, measured {op:.0} ({:+.1} %); stock measured {stock:.0}; {:.0} s",
        path_ns / 1e3,
        if path_ns > 0.0 { format!("{:.0} IOPS at 16 threads", 16e9 / path_ns) } else { "no cap".into() },
        err * 100.0,
        t0.elapsed().as_secs_f64()
    );
    assert!(
        op > stock,
        "a smaller capacity did not raise write IOPS: {op} vs {stock}"
    );
    assert!(
        err.abs() < 0.15,
        "prediction {predicted:.0} vs measured {op:.0}"
    );
    assert!(
        (reserve - 0.18).abs() < 0.03,
        "fitted reserve {reserve:.4} against the hidden 0.18"
    );
}
