//! `vsl attach --path-cost`: how far ahead of the model's completion the
//! daemon answers. With `none` it answers at the model's completion, so its
//! own receipt-to-answer time (what a capture records) is the model's plus
//! only its lateness; with the default `probe` it answers earlier by the
//! kernel path's measured round trip.

mod common;

use common::*;

/// 256 direct 4 KiB writes, then the same reads, on `dev`.
fn io(dev: &str) {
    sh(&format!(
        "dd if=/dev/urandom of={dev} bs=4k count=256 oflag=direct status=none"
    ));
    sh(&format!(
        "dd if={dev} of=/dev/null bs=4k count=256 iflag=direct status=none"
    ));
}

/// The split of the daemon's wall time for `op` ("read" or "write").
fn split(rig: &Rig, op: &str) -> serde_json::Value {
    rig.status_json()[0]["members"][0]["wall_split"][op].clone()
}

#[test]
fn path_cost_none_answers_at_the_models_completion() {
    if skip("path_cost_none_answers_at_the_models_completion", &["dd"]) {
        return;
    }
    let rig = Rig::new("pathcost");

    // A value it does not know: one line naming the option, nothing made.
    rig.assert_attach_refused("--path-cost", "soon");

    // none: no lead and no trim, so every answer comes at or after the
    // model's completion.
    let devs = rig.attach(&[TINY_CARD, &["--path-cost", "none"]].concat());
    let st = rig.state();
    for k in ["read_ns", "read_ns_per_kib", "write_ns", "write_ns_per_kib"] {
        assert_eq!(st["path_cost"][k], 0, "path_cost.{k} with none: {st}");
    }
    assert_eq!(
        st["path_trim"], false,
        "--path-trim stays on with none: {st}"
    );
    io(&devs[0]);
    for op in ["read", "write"] {
        let s = split(&rig, op);
        assert!(s["count"].as_u64().unwrap() >= 256, "{op}: {s}");
        assert_eq!(
            s["lead_us"].as_f64().unwrap(),
            0.0,
            "{op} answered early: {s}"
        );
        let (wall, model) = (
            s["wall_us"].as_f64().unwrap(),
            s["model_us"].as_f64().unwrap(),
        );
        assert!(model > 0.0, "{op}: no model time: {s}");
        assert!(
            wall >= model,
            "{op}: answered before the model's completion: {s}"
        );
    }
    rig.detach_all();

    // The default answers reads ahead by the probed kernel path.
    std::fs::remove_dir_all(&rig.store).unwrap();
    let devs = rig.attach(TINY_CARD);
    let st = rig.state();
    assert!(
        st["path_cost"]["read_ns"].as_u64().unwrap() > 0,
        "the default probe measured no path: {st}"
    );
    io(&devs[0]);
    let s = split(&rig, "read");
    assert!(s["lead_us"].as_f64().unwrap() > 0.0, "probe: no lead: {s}");
    rig.detach_all();
}
