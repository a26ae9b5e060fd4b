//! `vsl fit` (issue 29): bad input is one line and writes nothing; a fit
//! from a review of a card whose preset it is not told recovers the hidden
//! parameter, predicts the card at another over-provisioning, and a rerun
//! resumes from the checkpoint. All in virtual time (deterministic); the
//! same loop on an attached card is `fit_loop.rs` and `bench/fit_loop.sh`.

mod common;
use common::{assert_one_line_error, set_field, vsl};
use std::path::{Path, PathBuf};

fn tmp(name: &str) -> PathBuf {
    common::scratch(&format!("fit-{name}"))
}

const FIGURE: &str = "[[figure]]\ntest = \"4k-randwrite\"\nformat = \"stock\"\nthreads = 16\nqd = 16\nstatistic = \"iops\"\nvalue = 42644\ntolerance = 0.05\n";

#[test]
fn fit_bad_input_is_one_line_and_writes_nothing() {
    let dir = tmp("bad");
    let out = dir.join("out.toml");
    let o = out.to_str().unwrap();
    let write = |name: &str, text: &str| -> String {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_string()
    };
    let cases: Vec<(String, &str)> = vec![
        (write("stat.toml", &FIGURE.replace("\"iops\"", "\"speed\"")), "unknown statistic 'speed'"),
        (write("tol0.toml", &FIGURE.replace("tolerance = 0.05", "tolerance = 0")), "tolerance = 0 must be > 0"),
        (write("tolneg.toml", &FIGURE.replace("tolerance = 0.05", "tolerance = -0.1")), "tolerance = -0.1 must be > 0"),
        (write("test.toml", &FIGURE.replace("4k-randwrite", "4k-nothing")), "unknown test '4k-nothing'"),
        (write("fmt.toml", &FIGURE.replace("\"stock\"", "\"huge\"")), "unknown format 'huge'"),
        (write("field.toml", &FIGURE.replace("qd = 16", "qd = 16\ncolour = 1")), "unknown field `colour`"),
        (write("fio.json", "{\"fio version\": \"fio-3.36\", \"jobs\": []}"), "fio's JSON, not a `vsl review` results.json"),
        (write("other.json", "{\"tool\": \"sysbench\", \"targets\": []}"), "'sysbench' JSON, not a `vsl review`"),
        (write("bad.csv", "test,format,threads,qd,statistic,value,tolerance\n4k-randwrite,stock,16,16,iops,42644,0\n"), "tolerance = 0 must be > 0"),
        (write("short.csv", "test,format,threads,qd,statistic,value,tolerance\n4k-randwrite,stock,16\n"), "3 columns, expected 7"),
        (write("empty.txt", ""), "expected a .toml or .csv"),
        (write("row.toml", ROW), "no `vsl validate` row '4K nothing'"),
        (write("rowtol.toml", &ROW.replace("4K nothing", "4K steady-state write 16T/16Q").replace("0.05", "0")), "tolerance = 0 must be > 0"),
        (write("range.toml", &FIGURE.replace("tolerance = 0.05", "tolerance = 0.05\nrange = [43000, 44000]")), "range = [43000, 44000] must hold value = 42644"),
        (write("range.csv", "test,format,threads,qd,statistic,value,tolerance,low,high\n4k-randwrite,stock,16,16,iops,42644,0.05,40000,x\n"), "high 'x' is not a number"),
        (write("frqd.toml", &FIGURE.replace("\"iops\"", "\"first_round_iops\"").replace("qd = 16", "qd = 8")), "first_round_iops is measured at 16 threads x qd 16 (the preconditioning's), not 16/8"),
        (write("rowfmt.toml", &ROW.replace("4K nothing", "4K steady-state write 16T/16Q").replace("\"stock\"", "\"op=20\"")), "no `vsl validate` row '4K steady-state write 16T/16Q' in the op=20 table"),
    ];
    for (file, needle) in &cases {
        assert_one_line_error(&["fit", file, "--out", o, "-q"], needle);
        assert!(!out.exists(), "{file}: wrote {o}");
        assert!(
            !Path::new(&format!("{o}.checkpoint.jsonl")).exists(),
            "{file}: wrote a checkpoint"
        );
    }
    let good = write("good.toml", FIGURE);
    assert_one_line_error(
        &["fit", &good, "--out", o, "--free", "vsl.colour", "-q"],
        "unknown free parameter 'vsl.colour'",
    );
    assert_one_line_error(
        &[
            "fit",
            &good,
            "--out",
            o,
            "--device",
            "/nonexistent/p.toml",
            "-q",
        ],
        "/nonexistent/p.toml",
    );
    assert_one_line_error(&["fit", &good, "--out", o, "--scale", "2", "-q"], "--scale");
    assert_one_line_error(
        &["fit", &good, "--out", o, "--review-first-round", "-q"],
        "--review-first-round: ",
    );
    for bad in ["2", "0", "full"] {
        assert_one_line_error(
            &["fit", &good, "--out", o, "--confirm", bad, "-q"],
            &format!("--confirm: '{bad}' must be a number in (0, 1]"),
        );
    }
    for bad in ["0", "1", "-0.5"] {
        assert_one_line_error(
            &["fit", &good, "--out", o, &format!("--progress={bad}"), "-q"],
            &format!("--progress: {bad} must be above 0 and below 1"),
        );
    }
    assert!(!out.exists());
    assert!(!Path::new(&format!("{o}.checkpoint.jsonl")).exists());
    // `vsl validate --rows` that names no row.
    assert_one_line_error(
        &["validate", "--rows", "5K nothing", "--scale", "0.01"],
        "--rows: no row's name contains '5K nothing'",
    );
    for bad in ["-1", "21", "NaN"] {
        assert_one_line_error(
            &[
                "validate",
                &format!("--min-capacities={bad}"),
                "--scale",
                "0.01",
            ],
            &format!("--min-capacities: {bad} must be a number of device capacities in [0, 20]"),
        );
    }
}

/// A `vsl validate` row figure (statistic `row`) naming no row.
const ROW: &str = "[[figure]]\ntest = \"4K nothing\"\nformat = \"stock\"\nstatistic = \"row\"\nvalue = 42644\ntolerance = 0.05\n";

const SCALE: &str = "0.01";

/// A small review plan: the 4K random-write analysis at 16T/16Q only,
/// preconditioning in rounds of `round`.
fn plan(dir: &Path, round: &str) -> String {
    let p = dir.join(format!("plan-{round}.toml"));
    std::fs::write(
        &p,
        format!(
            "profiles = [\"4k-randwrite\"]\nmatrix_threads = [16]\nmatrix_qd = [16]\nround = \"{round}\"\n\
             window = \"20s\"\nmax_precondition = \"300s\"\nstandard = false\nsysbench = false\n\
             ioanalyzer = false\nscale = {SCALE}\n"
        ),
    )
    .unwrap();
    p.to_str().unwrap().to_string()
}

/// `vsl review` of one target with the small plan: its results.json.
fn review(dir: &Path, target: &str, tag: &str) -> serde_json::Value {
    review_rounds(dir, target, tag, "10s")
}

/// [`review`] with preconditioning rounds of `round`.
fn review_rounds(dir: &Path, target: &str, tag: &str, round: &str) -> serde_json::Value {
    let out = dir.join(tag);
    let (code, _, err) = vsl(&[
        "review",
        "--target",
        target,
        "--plan",
        &plan(dir, round),
        "--out",
        out.to_str().unwrap(),
        "-q",
    ]);
    assert_eq!(code, 0, "review {target}: {err}");
    serde_json::from_str(&std::fs::read_to_string(out.join("lab_results.json")).unwrap()).unwrap()
}

fn iops(r: &serde_json::Value) -> f64 {
    r["targets"][0]["profiles"][0]["matrix"][0]["stats"]["iops"]
        .as_f64()
        .unwrap()
}

/// The hidden card (the 640 MLC with 18 % reserved instead of 10 %) as a
/// preset file in `dir`, and its review at stock (`dir/measured`).
fn hidden_card_review(dir: &Path) -> (String, serde_json::Value) {
    let h = hidden_card(dir, &[]);
    let measured = review(dir, &format!("{h}:stock"), "measured");
    (h, measured)
}

/// The hidden card's preset file in `dir` (the 640 MLC with 18 % reserved,
/// and `fields` set too): its path.
fn hidden_card(dir: &Path, fields: &[(&str, &str)]) -> String {
    let (_, text, _) = vsl(&["devices", "--show", "iodrive-duo-640-mlc"]);
    let mut hidden_text = set_field(&text, "reserved_fraction", "0.18");
    assert_ne!(hidden_text, text);
    for (key, value) in fields {
        hidden_text = set_field(&hidden_text, key, value);
    }
    let hidden = dir.join("hidden.toml");
    std::fs::write(&hidden, hidden_text).unwrap();
    hidden.to_str().unwrap().to_string()
}

/// The entry of a fit report's `list` ("figures", "predictions",
/// "parameters") whose `key` is `name`.
fn entry<'a>(
    rep: &'a serde_json::Value,
    list: &str,
    key: &str,
    name: &str,
) -> &'a serde_json::Value {
    rep[list]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e[key] == name)
        .unwrap_or_else(|| panic!("no {name} among the {list}: {}", rep[list]))
}

/// `vsl fit` of the hidden card's review (in scratch directory `name`) with
/// `free` free and `extra`: its output, its JSON report and its arguments
/// (for a rerun).
fn hidden_card_fit(
    name: &str,
    free: &str,
    extra: &[&str],
) -> (String, serde_json::Value, Vec<String>) {
    let dir = tmp(name);
    hidden_card_review(&dir);
    let mut args = fit_args(&dir, extra);
    let i = args.iter().position(|a| a == "--free").unwrap() + 1;
    args[i] = free.into();
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, out, err) = vsl(&a);
    assert_eq!(code, 0, "{err}");
    println!("{out}");
    let text = std::fs::read_to_string(dir.join("report.json")).unwrap();
    (out, serde_json::from_str(&text).unwrap(), args)
}

/// `vsl fit` of that review's figures (the reserve free, on the base
/// preset, writing `dir/fitted.toml` and `dir/report.json`), then `extra`.
fn fit_args(dir: &Path, extra: &[&str]) -> Vec<String> {
    let p = |f: &str| dir.join(f).to_str().unwrap().to_string();
    let mut a: Vec<String> = [
        "fit",
        &p("measured/lab_results.json"),
        "--device",
        "iodrive-duo-640-mlc",
        "--free",
        "vsl.reserved_fraction",
        "--scale",
        SCALE,
        "--window",
        "20s",
        "--review-tolerance",
        "0.02",
        "--out",
        &p("fitted.toml"),
        "--json",
        &p("report.json"),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    a.extend(extra.iter().map(|s| s.to_string()));
    a
}

#[test]
fn fit_recovers_a_hidden_reserve_and_predicts_another_format() {
    let dir = tmp("loop");
    let (hidden, measured) = hidden_card_review(&dir);
    let h = hidden.as_str();
    let fitted = dir.join("fitted.toml");
    let report = dir.join("report.json");
    let args = fit_args(&dir, &["--max-iters", "15"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, out, err) = vsl(&args);
    assert_eq!(code, 0, "{err}");
    println!("{out}");
    // Without --loo or --confirm the table has no columns for them.
    assert!(
        !out.contains("LOO error") && !out.contains("scale 0.02"),
        "{out}"
    );
    let rep: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let fitted_reserve = rep["parameters"][0]["fitted"].as_f64().unwrap();
    println!(
        "hidden reserve 0.18, fitted {fitted_reserve:.4}; cost {} -> {}",
        rep["cost_before"], rep["cost"]
    );
    assert!(rep["cost"].as_f64().unwrap() < rep["cost_before"].as_f64().unwrap());
    // The report says which rule ended the search.
    assert!(
        matches!(rep["search_end"].as_str(), Some("converged" | "stalled")),
        "search_end {}",
        rep["search_end"]
    );
    assert!(
        (fitted_reserve - 0.18).abs() < 0.03,
        "fitted reserve {fitted_reserve}"
    );
    for f in rep["figures"].as_array().unwrap() {
        assert!(f["within_tolerance"].as_bool().unwrap(), "{f}");
    }

    // --max-iters 0 evaluates the base as it is: on the hidden card's own
    // preset, the review's figure again (the same method, seed and runs).
    let zero: Vec<String> = fit_args(&dir, &["--max-iters", "0"])
        .into_iter()
        .map(|a| match a.as_str() {
            "iodrive-duo-640-mlc" => hidden.clone(),
            _ if a.ends_with("fitted.toml") => a.replace("fitted.toml", "as-is.toml"),
            _ if a.ends_with("report.json") => a.replace("report.json", "as-is.json"),
            _ => a,
        })
        .collect();
    let zero: Vec<&str> = zero.iter().map(String::as_str).collect();
    let (code, out, err) = vsl(&zero);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("--max-iters 0: the base preset, no search"),
        "{out}"
    );
    let as_is: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("as-is.json")).unwrap()).unwrap();
    assert_eq!(as_is["search_end"], "none");
    assert_eq!(as_is["parameters"][0]["fitted"].as_f64(), Some(0.18));
    let model = as_is["figures"][0]["fitted"].as_f64().unwrap();
    assert!(
        (model / iops(&measured) - 1.0).abs() < 0.02,
        "the hidden preset evaluated as it is: {model} against its review's {}",
        iops(&measured)
    );

    // Predict the card at the high-performance format (36 % over-provisioning), and measure it there.
    let f = fitted.to_str().unwrap();
    let predicted = iops(&review(&dir, &format!("{f}:hp"), "predicted"));
    let truth = iops(&review(&dir, &format!("{h}:hp"), "truth"));
    let base = iops(&review(&dir, "iodrive-duo-640-mlc:hp", "base"));
    println!(
        "4K random write at hp: predicted {predicted:.0}, measured {truth:.0} ({:+.1} %), unfitted base {base:.0} ({:+.1} %); stock measured {:.0}",
        (predicted / truth - 1.0) * 100.0,
        (base / truth - 1.0) * 100.0,
        iops(&measured)
    );
    assert!((predicted / truth - 1.0).abs() < 0.05, "prediction off");

    // A rerun resumes: every point comes from the checkpoint and the
    // fitted file is the same.
    let first = std::fs::read(&fitted).unwrap();
    let (code, out, err) = vsl(&args);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("run), cost") && out.contains(" 0 run"),
        "{out}"
    );
    assert_eq!(first, std::fs::read(&fitted).unwrap());
    // An interrupted fit (its checkpoint cut to the header and the first
    // half of its points, the last line torn) continues where it stopped
    // and ends at the same preset.
    let ck = dir.join("fitted.toml.checkpoint.jsonl");
    let text = std::fs::read_to_string(&ck).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let keep = 1 + (lines.len() - 1) / 2;
    let mut cut = lines[..keep].join("\n");
    cut.push_str("\n{\"values\":[0.1");
    std::fs::write(&ck, cut).unwrap();
    let (code, out, err) = vsl(&args);
    assert_eq!(code, 0, "{err}");
    let resumed = format!(
        "({} from the checkpoint, {} run)",
        keep - 1,
        lines.len() - keep
    );
    assert!(out.contains(&resumed), "{out} lacks {resumed}");
    assert_eq!(first, std::fs::read(&fitted).unwrap());
    // A checkpoint of another fit is refused in one line.
    let other: Vec<&str> = args
        .iter()
        .map(|a| if *a == "15" { "16" } else { *a })
        .chain(["--seed", "2"])
        .collect();
    assert_one_line_error(&other, "the checkpoint of another fit");
    // The fitted preset is a preset file like any other.
    let (code, show, _) = vsl(&["devices", "--show", f]);
    assert_eq!(code, 0);
    assert!(show.contains("calibrated: vsl fit"), "{show}");
}

/// A card measured through a slow host path (an attached card's FUSE and
/// loop path on a small VM: every 16T/16Q test capped at 24.6 K IOPS, here
/// `host.thread_ns` 650 µs) holds its steady state below the card's own:
/// the groomer's stop-and-go wastes the array while the host trickles the
/// runway in. The first preconditioning round, right after the purge and
/// fill, shows the cap; with it (`--review-first-round`) the fit recovers
/// the path and the reserve together and predicts the card through that
/// host at another capacity, where the path and the groomer both hold it.
#[test]
fn fit_first_round_recovers_a_slow_host_path() {
    let dir = tmp("path");
    let h = hidden_card(&dir, &[("thread_ns", "650000")]);
    // Rounds of 2 s: the first writes 2 % of the card (at scale 0.01), so
    // it is the burst, before the groomer has to keep up (10 s rounds write
    // 10 %, and the first round is the groomer's 17 K, not the path's).
    let measured = review_rounds(&dir, &format!("{h}:stock"), "measured", "2s");
    let mut args = fit_args(
        &dir,
        &[
            "--max-iters",
            "20",
            "--predict",
            "capacity=290G",
            "--round",
            "2s",
        ],
    );
    let i = args.iter().position(|a| a == "--free").unwrap() + 1;
    args[i] = "host.thread_ns,vsl.reserved_fraction".into();
    args.push("--review-first-round".into());
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, out, err) = vsl(&a);
    assert_eq!(code, 0, "{err}");
    println!("{out}");
    let rep: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap();
    let first = entry(
        &rep,
        "figures",
        "figure",
        "4k-randwrite stock 16T/16Q first_round_iops",
    );
    let measured_first = measured["targets"][0]["profiles"][0]["precondition"][0]["iops"]
        .as_f64()
        .unwrap();
    assert_eq!(first["measured"].as_f64(), Some(measured_first));
    let fitted = |name: &str| {
        entry(&rep, "parameters", "name", name)["fitted"]
            .as_f64()
            .unwrap()
    };
    let (thread_ns, reserve) = (fitted("host.thread_ns"), fitted("vsl.reserved_fraction"));
    println!("hidden thread_ns 650000, reserve 0.18; fitted {thread_ns:.0}, {reserve:.4}");
    assert!(
        (thread_ns / 650_000.0 - 1.0).abs() < 0.1,
        "fitted thread_ns {thread_ns}"
    );
    assert!((reserve - 0.18).abs() < 0.03, "fitted reserve {reserve}");
    // The prediction at 290 GiB (311 GB against stock's 320) against the
    // hidden card through that host, and against the card alone (the path
    // costs it a share of its steady state).
    let predicted = entry(
        &rep,
        "predictions",
        "figure",
        "4k-randwrite capacity=290G 16T/16Q iops",
    )["predicted"]
        .as_f64()
        .unwrap();
    let truth = iops(&review_rounds(
        &dir,
        &format!("{h}:capacity=290G"),
        "truth",
        "2s",
    ));
    let alone = set_field(&std::fs::read_to_string(&h).unwrap(), "thread_ns", "19500");
    let alone_path = dir.join("alone.toml");
    std::fs::write(&alone_path, alone).unwrap();
    let card = iops(&review_rounds(
        &dir,
        &format!("{}:capacity=290G", alone_path.display()),
        "alone",
        "2s",
    ));
    println!(
        "4K random write at 290 GiB through the path: predicted {predicted:.0}, measured {truth:.0} ({:+.1} %); the card alone {card:.0}",
        (predicted / truth - 1.0) * 100.0
    );
    assert!(
        card > truth * 1.05,
        "the path held the card back by under 5 %: {card} against {truth}"
    );
    assert!((predicted / truth - 1.0).abs() < 0.05, "prediction off");
}

#[test]
fn fit_leave_one_out_and_full_card_confirmation() {
    // The hidden card of the test above; its review gives two figures (the
    // 4K random write's IOPS and mean latency) that both follow the
    // reserve: each is predicted by a fit of the other alone. Both ways of
    // refitting: on a surface over the search's points (the default), then
    // on the model (the second run resumes the first's search from the
    // checkpoint). A third run, surrogate again, resumes a checkpoint that
    // now holds the other refits' points too: its surface is built from
    // the search's points alone, so its predictions are the first run's.
    let dir = tmp("loo");
    hidden_card_review(&dir);
    let report = dir.join("report.json");
    let mut surrogate_loo: Vec<Vec<f64>> = Vec::new();
    let mut first_points = 0;
    for method in ["surrogate", "search", "surrogate"] {
        let args = fit_args(
            &dir,
            &[
                "--max-iters",
                "12",
                "--loo",
                "--loo-method",
                method,
                "--loo-iters",
                "6",
                "--confirm",
                "0.02",
            ],
        );
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, out, err) = vsl(&args);
        assert_eq!(code, 0, "{err}");
        println!("{out}");
        assert!(
            out.contains("leave-one-out")
                && out.contains("confirmation")
                && out.contains("LOO error")
                && out.contains("scale 0.02"),
            "{out}"
        );
        let rep: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
        let figs = rep["figures"].as_array().unwrap();
        assert_eq!(figs.len(), 2, "{rep}");
        assert_eq!(rep["confirm_scale"].as_f64(), Some(0.02));
        assert!(rep["loo_s"].as_f64().unwrap() > 0.0 && rep["confirm_s"].as_f64().unwrap() > 0.0);
        assert_eq!(rep["loo_method"].as_str(), Some(method), "{rep}");
        if method == "surrogate" {
            surrogate_loo.push(
                figs.iter()
                    .map(|f| f["loo_predicted"].as_f64().unwrap())
                    .collect(),
            );
            // One parameter: a quadratic needs 2 + 3 points; the search
            // evaluated more than that.
            let s = &rep["loo_surface"];
            assert_eq!(s["quadratic"].as_bool(), Some(true), "{rep}");
            assert!(s["points"].as_u64().unwrap() >= 5, "{rep}");
            first_points = s["points"].as_u64().unwrap();
            assert!(out.contains("quadratic surface"), "{out}");
            // The surface follows this one-parameter model: the model
            // bears out every refit's point (none replaced by a search).
            for f in figs {
                assert!(f.get("loo_surface_rejected").is_none(), "{f}");
            }
            assert!(!out.contains("was rejected"), "{out}");
        } else {
            assert!(rep.get("loo_surface").is_none(), "{rep}");
        }
        assert!(out.contains("leave-one-out refit's point"), "{out}");
        let params = rep["parameters"].as_array().unwrap();
        for f in figs {
            let measured = f["measured"].as_f64().unwrap();
            let fitted = f["fitted"].as_f64().unwrap();
            let loo = f["loo_predicted"].as_f64().unwrap();
            let confirmed = f["confirmed"].as_f64().unwrap();
            // Where the refit without this figure ended: one value per free
            // parameter, inside its range; the other figure follows the
            // same single parameter, so the refit stays within a tenth of
            // the range of the fit's value.
            let point = f["loo_point"].as_array().expect("loo_point");
            assert_eq!(point.len(), params.len(), "{f}");
            for (v, p) in point.iter().zip(params) {
                let (v, lo, hi) = (
                    v.as_f64().unwrap(),
                    p["lo"].as_f64().unwrap(),
                    p["hi"].as_f64().unwrap(),
                );
                assert!((lo..=hi).contains(&v), "{method}: {v} outside {p}");
                assert!(
                    (v - p["fitted"].as_f64().unwrap()).abs() <= 0.1 * (hi - lo),
                    "{method}: refit at {v}, fit at {p}"
                );
            }
            // The report's percentages are what the values say.
            let pct = |v: f64| (v / measured - 1.0) * 100.0;
            assert!(
                (f["loo_error_pct"].as_f64().unwrap() - pct(loo)).abs() < 1e-6,
                "{f}"
            );
            assert!(
                (f["confirmed_error_pct"].as_f64().unwrap() - pct(confirmed)).abs() < 1e-6,
                "{f}"
            );
            // Left out, the figure is still predicted (one parameter sets both).
            assert!(
                loo_predicts(f, &rep),
                "{method}: leave-one-out prediction off: {f}"
            );
            // A card twice the size gives the same figure (scale invariance of
            // throughput and mean latency: docs/MODEL.md, Scaling). Within
            // 10 %: scale 0.01 is below the range scale invariance is shown
            // for (0.02 and up; below about 0.015 the GC groups are capped),
            // and since a scaled card parks what its pool does not use
            // (2026-11-28) this stalling card's IOPS at 0.02 is 0.916 of its
            // IOPS at 0.01 (0.93 before; 0.02 is within 2.6 % of full size).
            assert!(
                (confirmed / fitted - 1.0).abs() < 0.10,
                "scale 0.02 gave {confirmed}, scale {SCALE} {fitted}: {f}"
            );
        }
    }
    assert_eq!(
        surrogate_loo[0], surrogate_loo[1],
        "a resumed fit refitted elsewhere"
    );

    // Two rounds of surrogate refits: the second round's surface also holds
    // the first round's refit points (the checkpoint gives them back).
    let args = fit_args(&dir, &["--max-iters", "12", "--loo", "--loo-rounds", "2"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, out, err) = vsl(&args);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("surface of") && out.contains("in round 2"),
        "{out}"
    );
    let rep: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let s = &rep["loo_surface"];
    assert_eq!(s["rounds"].as_u64(), Some(2), "{rep}");
    // Each figure alone pins the reserve and the fit meets both: left out,
    // either moves the surface's optimum nowhere, so every refit's point
    // is the fit's (a refit is the fit moved by its distance from the
    // surface's own optimum), in both rounds, and the second surface was
    // fitted to at least the first's points.
    assert!(s["points"].as_u64().unwrap() >= first_points, "{rep}");
    let fitted = rep["parameters"][0]["fitted"].as_f64().unwrap();
    assert_eq!(s["optimum"][0].as_f64(), Some(fitted), "{rep}");
    for f in rep["figures"].as_array().unwrap() {
        assert_eq!(f["loo_point"][0].as_f64(), Some(fitted), "{f}");
        assert!(loo_predicts(f, &rep), "round 2 prediction off: {f}");
    }
    // Out of range: one line, exit non-zero.
    let (code, _, err) = vsl(&["fit", "x.toml", "--loo-rounds", "0"]);
    assert_ne!(code, 0);
    assert!(err.contains("--loo-rounds"), "{err}");
}

/// A one-parameter fit's leave-one-out prediction of figure `f` (report
/// `rep`): within 5 % of the measured, or, where the model is steep, from a
/// refit that found the fit's value to within 0.5 % of its range and within
/// 10 %. On the 0.01 hidden card the IOPS are the same from reserve 0.1808
/// to 0.1809 and 5.2 % below 0.1802's (the fit) with the presets of
/// 2026-12-07 (the bus at 50 MB/s): a step, not a slope.
fn loo_predicts(f: &serde_json::Value, rep: &serde_json::Value) -> bool {
    let off = (f["loo_predicted"].as_f64().unwrap() / f["measured"].as_f64().unwrap() - 1.0).abs();
    let p = &rep["parameters"][0];
    let span = p["hi"].as_f64().unwrap() - p["lo"].as_f64().unwrap();
    let refit = f["loo_point"][0].as_f64().unwrap();
    let near = (refit - p["fitted"].as_f64().unwrap()).abs() <= 0.005 * span;
    off < 0.05 || (near && off < 0.10)
}

#[test]
fn fit_sensitivity_says_which_parameters_the_figures_do_not_pin() {
    // The hidden card's review is 4K random writes only: the reserve sets
    // its figures, the host's cost per read cannot touch them. Probed
    // across their ranges, the reserve is pinned and host.read_ns is not
    // anywhere, and the prediction at hp is made at its probes too.
    let (out, rep, args) = hidden_card_fit(
        "sensitivity",
        "vsl.reserved_fraction,host.read_ns",
        &["--max-iters", "8", "--sensitivity", "--predict", "hp"],
    );
    let noise = rep["noise"].as_f64().unwrap();
    let cost = rep["cost"].as_f64().unwrap();
    assert!(noise >= 1.0 && noise >= 0.05 * cost - 1e-9, "{rep}");
    // How many evaluated points lay around the fit (their spread of costs
    // is part of the noise when there are three or more; this search
    // wandered in host.read_ns, which changes nothing, so few do).
    assert!(rep["noise_points"].as_u64().is_some(), "{rep}");
    let params = rep["parameters"].as_array().unwrap();
    assert_eq!(params[0]["name"], "vsl.reserved_fraction");
    assert_eq!(params[1]["name"], "host.read_ns");
    for p in params {
        let probes = p["probes"].as_array().unwrap();
        assert!(!probes.is_empty(), "{p}");
        for q in probes {
            let rise = q["rise"].as_f64().unwrap();
            assert!(
                (q["cost"].as_f64().unwrap() - cost - rise).abs() < 1e-6,
                "{q}"
            );
            assert_eq!(q["pinned"].as_bool(), Some(rise >= noise), "{q}");
        }
    }
    // A reserve of 5 % or 25 % is far off a card with 18 %.
    assert_eq!(params[0]["pinned"].as_bool(), Some(true), "{}", params[0]);
    // No read in the figures: the cost does not move at all.
    assert_eq!(params[1]["pinned"].as_bool(), Some(false), "{}", params[1]);
    assert!(params[0].get("not_told_apart").is_some(), "{}", params[0]);
    let probes = params[1]["probes"].as_array().unwrap();
    assert!(probes.len() >= 4, "{}", params[1]);
    for q in probes {
        assert!(q["rise"].as_f64().unwrap().abs() < 1e-9, "{q}");
    }
    let span = &params[1]["not_told_apart"];
    assert_eq!(span[0].as_f64(), Some(5000.0), "{}", params[1]);
    assert_eq!(span[1].as_f64(), Some(60000.0), "{}", params[1]);
    assert!(out.contains("NOT PINNED"), "{out}");
    let preds = rep["predictions"].as_array().unwrap();
    assert!(!preds.is_empty(), "{rep}");
    for p in preds {
        let v = p["predicted"].as_f64().unwrap();
        let s = p["spread"].as_array().unwrap();
        let (lo, hi) = (s[0].as_f64().unwrap(), s[1].as_f64().unwrap());
        assert!(lo <= v && v <= hi, "{p}");
        let from: Vec<&str> = p["spread_from"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap())
            .collect();
        // The probes not told apart are host.read_ns's; the evaluated
        // points within the noise carry every parameter.
        assert!(
            !from.is_empty()
                && from.iter().all(|s| s.starts_with("host.read_ns=")
                    || s.starts_with("evaluated:vsl.reserved_fraction=")),
            "{p}"
        );
    }
    // The evaluated points within the noise: the fitted one among them,
    // every one inside the span not told apart.
    let within = rep["points_within_noise"].as_u64().unwrap();
    assert!(within >= 1, "{rep}");
    for p in params {
        let fitted = p["fitted"].as_f64().unwrap();
        let e = &p["evaluated_within_noise"];
        let (elo, ehi) = (e[0].as_f64().unwrap(), e[1].as_f64().unwrap());
        let n = &p["not_told_apart"];
        let (nlo, nhi) = (n[0].as_f64().unwrap(), n[1].as_f64().unwrap());
        assert!(
            nlo <= elo && elo <= fitted && fitted <= ehi && ehi <= nhi,
            "{p}"
        );
    }
    // A reserve within the noise is within a quarter of its range (5 %)
    // of the fitted one: that is what pinned says.
    let e = &params[0]["evaluated_within_noise"];
    let fitted = params[0]["fitted"].as_f64().unwrap();
    assert!(
        fitted - e[0].as_f64().unwrap() < 0.05 && e[1].as_f64().unwrap() - fitted < 0.05,
        "{}",
        params[0]
    );
    // A rerun takes the probes from the checkpoint too.
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, out, err) = vsl(&args);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(" 0 run"), "{out}");
}

#[test]
fn fit_profile_refits_the_others_at_each_probe() {
    // 4K random writes at steady state: the program time and the reserve
    // both set the rate. Moved alone (a slice), the program time leaves
    // the figures; with the reserve refitted at each probe (a profile), a
    // point nearer them is found.
    let (_, rep, _) = hidden_card_fit(
        "profile",
        "vsl.reserved_fraction,nand.program_ns",
        &["--max-iters", "4", "--sensitivity", "--profile-iters", "3"],
    );
    assert_eq!(rep["profile_iters"].as_u64(), Some(3), "{rep}");
    let cost = rep["cost"].as_f64().unwrap();
    let params = rep["parameters"].as_array().unwrap();
    let mut gained = 0;
    for (i, p) in params.iter().enumerate() {
        for q in p["probes"].as_array().unwrap() {
            let rise = q["rise"].as_f64().unwrap();
            let slice = q["slice_rise"].as_f64().unwrap();
            // The refit starts at the slice and keeps the better point.
            assert!(rise <= slice + 1e-9, "{q}");
            assert!(
                (q["cost"].as_f64().unwrap() - cost - rise).abs() < 1e-6,
                "{q}"
            );
            // The probed parameter is held at its probe.
            let at = q["at"].as_array().unwrap();
            assert!(
                (at[i].as_f64().unwrap() - q["value"].as_f64().unwrap()).abs() < 1e-9,
                "{q}"
            );
            if rise < slice - 1e-9 {
                gained += 1;
                if i == 1 {
                    println!("program × {} reserve {}", at[1], at[0]);
                }
            }
        }
    }
    assert!(gained > 0, "no refit lowered a probe's cost: {rep}");
    // The program time's probe farthest off as a slice (an end of its
    // range; which end depends on where the fit landed): the refit moved
    // the reserve and gained.
    let far = params[1]["probes"]
        .as_array()
        .unwrap()
        .iter()
        .max_by(|a, b| {
            let r = |q: &serde_json::Value| q["slice_rise"].as_f64().unwrap();
            r(a).total_cmp(&r(b))
        })
        .expect("the program time's probes");
    let fitted_reserve = params[0]["fitted"].as_f64().unwrap();
    assert!(
        far["rise"].as_f64().unwrap() < far["slice_rise"].as_f64().unwrap()
            && far["at"][0].as_f64().unwrap() != fitted_reserve,
        "{far}"
    );
}
