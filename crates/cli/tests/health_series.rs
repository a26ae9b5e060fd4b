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
