//! `vsl run` reports temperature, power and endurance used per interval,
//! takes the card's environment, and refuses a bad one in one line.

use std::process::Command;

fn vsl(args: &[&str]) -> (bool, String, String) {
    let run_dir = std::env::temp_dir().join(format!("vsl-health-series-{}", std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_vsl"))
        .args(args)
        .env("OPENVSL_RUN_DIR", &run_dir)
        .output()
        .expect("run vsl");
    let _ = std::fs::remove_dir_all(&run_dir);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn run_json_has_one_health_point_per_interval() {
    let json = std::env::temp_dir().join(format!("vsl-health-{}.json", std::process::id()));
    let (ok, _, err) = vsl(&[
        "run",
        "--scale",
        "0.01",
        "--duration",
        "4s",
        "--interval",
        "1s",
        "--quiet",
        "--ambient-temp",
        "40",
        "--airflow",
        "0",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let _ = std::fs::remove_file(&json);
    let iv = v["intervals"].as_array().unwrap();
    let h = v["health"].as_array().unwrap();
    assert_eq!(h.len(), iv.len());
    for (a, b) in iv.iter().zip(h) {
        assert_eq!(a["t_s"], b["t_s"]);
    }
    let temps: Vec<f64> = h
        .iter()
        .map(|p| p["temperature_c"].as_f64().unwrap())
        .collect();
    assert!(temps[0] > 40.0, "{temps:?}");
    assert!(
        temps.windows(2).all(|w| w[1] >= w[0]),
        "writing flat out in still air cools: {temps:?}"
    );
    assert!(
        h.iter().all(|p| p["power_w"].as_f64().unwrap() > 10.0),
        "{h:?}"
    );
    let used = h.last().unwrap()["endurance_used_pct"].as_f64().unwrap();
    assert!((0.0..1.0).contains(&used), "{used}");
}

#[test]
fn bad_environment_is_one_line() {
    for (args, want) in [
        (["--external-power", "maybe"], "--external-power"),
        (["--ambient-temp", "500"], "--ambient-temp"),
        (["--airflow", "-3"], "--airflow"),
    ] {
        let mut all = vec!["run", "--scale", "0.01", "--duration", "1s"];
        all.extend(args);
        let (ok, _, err) = vsl(&all);
        assert!(!ok, "{all:?} succeeded");
        assert!(err.contains(want), "{all:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{all:?}: {err}");
    }
}

/// Issue 10: the review report carries the health series of a modelled
/// target (one sample per measured phase) in its JSON and as charts.
#[test]
fn review_report_has_health_series() {
    let dir = std::env::temp_dir().join(format!("vsl-review-health-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let plan = dir.join("plan.toml");
    std::fs::write(
        &plan,
        "scale = 0.01\nprofiles = [\"4k-randwrite\"]\nmatrix_threads = [2, 16]\nmatrix_qd = [2]\n\
         max_precondition = \"30s\"\nstandard = false\nsysbench = false\nioanalyzer = false\n",
    )
    .unwrap();
    let out = dir.join("out");
    let (ok, _, err) = vsl(&[
        "review",
        "--quick",
        "--quiet",
        "--plan",
        plan.to_str().unwrap(),
        "--target",
        "iodrive-duo-640-mlc:stock",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    let read = |name: &str| std::fs::read_to_string(out.join(name)).unwrap();
    let lab: serde_json::Value = serde_json::from_str(&read("lab_results.json")).unwrap();
    let t = &lab["targets"][0];
    let h = t["health"].as_array().unwrap();
    let rounds = t["profiles"][0]["precondition"].as_array().unwrap().len();
    assert_eq!(h.len(), rounds + 2, "one sample per round and matrix point");
    assert_eq!(h[0]["phase"], "4k-randwrite: preconditioning round 1");
    assert_eq!(h.last().unwrap()["phase"], "4k-randwrite: matrix 16T/2Q");
    let f = |p: &serde_json::Value, k: &str| p[k].as_f64().unwrap();
    for w in h.windows(2) {
        assert!(f(&w[1], "t_s") > f(&w[0], "t_s"), "{h:?}");
        assert!(f(&w[1], "endurance_used_pct") >= f(&w[0], "endurance_used_pct"));
    }
    assert!(h.iter().all(|p| f(p, "temperature_c") > 25.0), "{h:?}");
    assert!(h.iter().all(|p| f(p, "power_w") > 10.0), "{h:?}");
    assert!(f(h.last().unwrap(), "endurance_used_pct") > 0.0, "{h:?}");
    // The report: a health section with the three charts and their data.
    let report: serde_json::Value = serde_json::from_str(&read("results.json")).unwrap();
    let section = report["sections"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == "health")
        .expect("a health section");
    let ids: Vec<&str> = section["charts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "health-temperature",
            "health-power",
            "health-endurance-used"
        ]
    );
    let temps = &section["charts"][0]["series"][0]["points"];
    assert_eq!(temps.as_array().unwrap().len(), h.len());
    assert_eq!(temps[0]["y"], h[0]["temperature_c"]);
    let html = read("index.html");
    for id in ids {
        assert!(html.contains(&format!("charts/{id}.svg")), "{id}");
        assert!(out.join(format!("charts/{id}.svg")).exists(), "{id}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
