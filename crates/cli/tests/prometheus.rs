//! Issue 32: `/metrics` scraped by a real Prometheus server (Debian's
//! `prometheus`, installed by scripts/setup.sh): a running simulation's
//! metrics, and, where the machine can attach (root, FUSE, loop devices),
//! an attached card's counters and latency histogram, are stored by
//! Prometheus; every query of the bundled Grafana dashboard runs on it.

mod common;

use common::{wait_for, Proc, Rig};

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A Prometheus instant query: the `data.result` array, or the error.
fn query(prom: &str, q: &str) -> Result<Vec<Value>, String> {
    let out = Command::new("curl")
        .args(["-s", "-G", "--data-urlencode"])
        .arg(format!("query={q}"))
        .arg(format!("http://{prom}/api/v1/query"))
        .output()
        .map_err(|e| e.to_string())?;
    let v: Value = serde_json::from_slice(&out.stdout).map_err(|e| format!("{e}: {:?}", out))?;
    if v["status"] != "success" {
        return Err(v.to_string());
    }
    Ok(v["data"]["result"].as_array().cloned().unwrap_or_default())
}

/// Attaches a tiny card and moves some data through it; None if the
/// machine cannot attach.
fn attach_and_write(rig: &Rig) -> Option<String> {
    if common::skip("prometheus_scrapes_metrics (attached-card part)", &[]) {
        return None;
    }
    let store = rig.root.join("store");
    let att = rig
        .cmd(
            &[
                &["attach", "--store", store.to_str().unwrap()],
                common::TINY_CARD,
            ]
            .concat(),
        )
        .output()
        .unwrap();
    assert!(
        att.status.success(),
        "{}",
        String::from_utf8_lossy(&att.stderr)
    );
    let dev = String::from_utf8_lossy(&att.stdout)
        .split('\t')
        .next()
        .unwrap()
        .to_string();
    for args in [
        vec![
            "if=/dev/urandom".to_string(),
            format!("of={dev}"),
            "oflag=direct".into(),
        ],
        vec![
            format!("if={dev}"),
            "of=/dev/null".into(),
            "iflag=direct".into(),
        ],
    ] {
        let out = Command::new("dd")
            .args(&args)
            .args(["bs=4k", "count=2000", "status=none"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "dd {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Some(store.display().to_string())
}

fn grafana_queries() -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../dist/grafana/openvsl.json");
    let d: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut out: Vec<String> = d["panels"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["targets"].as_array().unwrap().clone())
        .map(|t| t["expr"].as_str().unwrap().to_string())
        .collect();
    // Variables' label_values() are Grafana's, not PromQL: their metric is
    // checked by crates/web/tests/grafana.rs.
    for o in &mut out {
        *o = o.replace("$card", ".*").replace("$device", ".*");
    }
    out
}

#[test]
fn prometheus_scrapes_metrics() {
    if Command::new("prometheus")
        .arg("--version")
        .output()
        .is_err()
        || Command::new("curl").arg("--version").output().is_err()
    {
        eprintln!("\n!!!!! SKIPPED prometheus_scrapes_metrics: prometheus or curl is not installed (scripts/setup.sh installs them) !!!!!\n");
        println!("SKIPPED prometheus_scrapes_metrics");
        return;
    }
    let rig = Rig::new("prometheus");
    let store = attach_and_write(&rig);
    let _sim = rig.background_run();
    let served = rig.serve(&["--read-only"]);
    let addr = served.addr.clone();

    let prom_port = free_port();
    let prom = format!("127.0.0.1:{prom_port}");
    let cfg = rig.root.join("prometheus.yml");
    std::fs::write(
        &cfg,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: openvsl\n    static_configs:\n      - targets: ['{addr}']\n"
        ),
    )
    .unwrap();
    let _prom = Proc(
        Command::new("prometheus")
            .arg(format!("--config.file={}", cfg.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                rig.root.join("tsdb").display()
            ))
            .arg(format!("--web.listen-address={prom}"))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(rig.root.join("prometheus.log")).unwrap())
            .spawn()
            .unwrap(),
    );
    let log = || std::fs::read_to_string(rig.root.join("prometheus.log")).unwrap_or_default();
    wait_for(60, "Prometheus to scrape vsl serve (up == 1)", || {
        let r = query(&prom, "up{job=\"openvsl\"}").ok()?;
        (r.first()?["value"][1] == "1").then_some(())
    });
    let iops = wait_for(60, "openvsl_run_iops in Prometheus", || {
        let r = query(&prom, "openvsl_run_iops").ok()?;
        r.first()?["value"][1]
            .as_str()?
            .parse::<f64>()
            .ok()
            .filter(|v| *v > 0.0)
    });
    println!("Prometheus stored openvsl_run_iops = {iops}");
    if let Some(store) = &store {
        let writes = wait_for(30, "the card's writes in Prometheus", || {
            let r = query(&prom, "openvsl_writes_total").ok()?;
            let hit = r.iter().find(|s| s["metric"]["card"] == store.as_str())?;
            hit["value"][1]
                .as_str()?
                .parse::<f64>()
                .ok()
                .filter(|v| *v > 0.0)
        });
        assert!(writes >= 2000.0, "{writes} writes stored, 2000 made");
        let reads = query(&prom, "sum(openvsl_read_latency_seconds_count)").unwrap();
        let n: f64 = reads[0]["value"][1].as_str().unwrap().parse().unwrap();
        assert!(n >= 2000.0, "{n} reads in the latency histogram");
        let buckets = query(&prom, "openvsl_read_latency_seconds_bucket").unwrap();
        assert_eq!(buckets.len(), 17, "{buckets:?}");
    }
    // Every family of the exposition reached Prometheus under its name.
    let text = String::from_utf8(
        Command::new("curl")
            .args(["-s", &format!("http://{addr}/metrics")])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let stored: Vec<String> = query(&prom, "count by (__name__) ({__name__=~\"openvsl_.+\"})")
        .unwrap()
        .iter()
        .map(|s| s["metric"]["__name__"].as_str().unwrap().to_string())
        .collect();
    let exposed: std::collections::BTreeSet<&str> = text
        .lines()
        .filter(|l| l.starts_with("openvsl_"))
        .map(|l| l.split(['{', ' ']).next().unwrap())
        .collect();
    assert!(exposed.len() > 10, "{text}");
    for n in &exposed {
        assert!(
            stored.iter().any(|s| s == n),
            "{n} was exposed but Prometheus did not store it; it has {stored:?}\n{}",
            log()
        );
    }
    // The Grafana dashboard's queries are valid PromQL here, and those of
    // the simulation panels return data.
    for q in grafana_queries() {
        let r = query(&prom, &q).unwrap_or_else(|e| panic!("grafana query `{q}`: {e}"));
        if q.starts_with("openvsl_run_") {
            assert!(!r.is_empty(), "grafana query `{q}` returned nothing");
        }
    }
}
