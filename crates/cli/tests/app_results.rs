//! `vsl review --app FILE`: the database results of bench/pg_insert.sh and
//! bench/sysbench_oltp.sh join the report as tables and charts; a malformed
//! file is one clear error line.

mod common;
use common::vsl;

fn tmp(name: &str) -> std::path::PathBuf {
    common::shared_scratch("app").join(name)
}

/// A tiny review plan: one profile, one matrix point, no other tests.
fn tiny_plan() -> std::path::PathBuf {
    let plan = tmp("plan.toml");
    std::fs::write(
        &plan,
        "scale = 0.01\nprofiles = [\"4k-randwrite\"]\nmatrix_threads = [2]\nmatrix_qd = [2]\n\
         max_precondition = \"10s\"\nstandard = false\nsysbench = false\nioanalyzer = false\n",
    )
    .unwrap();
    plan
}

// The schema bench/pg_insert.sh writes (two configurations of a run that
// failed at the third, so the status says so).
const PG_INSERT: &str = r#"{"tool": "pg_insert", "card": "iodrive-duo-640-mlc ioDimm 0", "card_scale": 0.01,
  "timing": "model", "preconditioned": true, "connections": 64, "rows_per_transaction": 1000,
  "rows": 256000, "postgres": "15.14", "status": "failed: PostgreSQL did not start (max-write, 4096 B)",
  "results": [
   {"format": "stock", "sector_bytes": 4096, "partitions": 1, "tablespaces": 1, "rows": 256000,
    "seconds": 61.37, "rows_per_s": 4171.4, "capacity_bytes": 3200000000, "host_bytes_written": 1,
    "nand_bytes_programmed": 2, "write_amplification": 2.0, "samples": 600, "active_backend_samples": 30000,
    "wait_events": [{"event": "LWLock:WALWrite", "samples": 15000, "share": 0.5},
                    {"event": "IO:WALSync", "samples": 9000, "share": 0.3},
                    {"event": "CPU", "samples": 6000, "share": 0.2}], "load_avg_1m": 3.5},
   {"format": "stock", "sector_bytes": 4096, "partitions": 16, "tablespaces": 16, "rows": 256000,
    "seconds": 48.25, "rows_per_s": 5305.7, "capacity_bytes": 3200000000, "host_bytes_written": 0,
    "nand_bytes_programmed": 0, "write_amplification": null, "samples": 480, "active_backend_samples": 20000,
    "wait_events": [{"event": "IO:WALSync", "samples": 12000, "share": 0.6},
                    {"event": "CPU", "samples": 8000, "share": 0.4}], "load_avg_1m": 4.1}]}"#;

const SYSBENCH_OLTP: &str = r#"{"tool": "sysbench-oltp", "test": "oltp_read_write",
  "card": "iodrive-duo-640-mlc ioDimm 0", "card_scale": 0.01, "timing": "model", "preconditioned": true,
  "tables": 8, "table_size": 100000, "seconds": 30, "warmup_seconds": 5, "mariadb": "10.11.19-MariaDB-0+deb12u1",
  "status": "complete", "results": [
   {"format": "stock", "threads": 2, "tps": 101.5, "qps": 2030, "latency_avg_ms": 19.7, "latency_p99_ms": 43.39,
    "latency_max_ms": 80.1, "errors": 0, "capacity_bytes": 1, "host_bytes_written": 1, "nand_bytes_programmed": 3,
    "write_amplification": 3.0, "load_avg_1m": 2.0},
   {"format": "stock", "threads": 4, "tps": 150.25, "qps": 3005, "latency_avg_ms": 26.6, "latency_p99_ms": 55.82,
    "latency_max_ms": 90.0, "errors": 0, "capacity_bytes": 1, "host_bytes_written": 1, "nand_bytes_programmed": 3,
    "write_amplification": 3.0, "load_avg_1m": 2.0},
   {"format": "hp", "threads": 2, "tps": 120.75, "qps": 2415, "latency_avg_ms": 16.5, "latency_p99_ms": 31.94,
    "latency_max_ms": 70.0, "errors": 0, "capacity_bytes": 1, "host_bytes_written": 1, "nand_bytes_programmed": 2,
    "write_amplification": 2.0, "load_avg_1m": 2.0},
   {"format": "hp", "threads": 4, "tps": 180.5, "qps": 3610, "latency_avg_ms": 22.1, "latency_p99_ms": 47.47,
    "latency_max_ms": 85.0, "errors": 0, "capacity_bytes": 1, "host_bytes_written": 1, "nand_bytes_programmed": 2,
    "write_amplification": 2.0, "load_avg_1m": 2.0}]}"#;

#[test]
fn database_results_join_the_report() {
    let out = tmp("review");
    let plan = tiny_plan();
    let pg = tmp("pg_insert.json");
    let sb = tmp("sysbench_oltp.json");
    std::fs::write(&pg, PG_INSERT).unwrap();
    std::fs::write(&sb, SYSBENCH_OLTP).unwrap();
    let (code, stdout, err) = vsl(&[
        "review",
        "--quick",
        "--quiet",
        "--plan",
        plan.to_str().unwrap(),
        "--target",
        "iodrive-duo-640-mlc:stock",
        "--app",
        pg.to_str().unwrap(),
        "--app",
        sb.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stdout}\n{err}");
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    for section in ["pg-insert", "sysbench-oltp"] {
        assert!(
            html.contains(&format!("id=\"{section}\"")),
            "no section {section}"
        );
    }
    for needle in [
        "61.4",                  // completion time of stock 4K, 1 partition
        "into 1, 16 partitions", // the partition counts measured
        "LWLock:WALWrite",       // its top wait event
        "did not start",         // the failed run is said to be incomplete
        "43.39",                 // sysbench p99, stock, 2 threads
        "180.5",                 // sysbench TPS, hp, 4 threads
        "10.11.19-MariaDB",      // the server version
    ] {
        assert!(html.contains(needle), "'{needle}' is not in the report");
    }
    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    let charts: Vec<&serde_json::Value> = results["sections"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["id"] == "pg-insert" || s["id"] == "sysbench-oltp")
        .flat_map(|s| s["charts"].as_array().unwrap())
        .collect();
    let ids: Vec<&str> = charts.iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids,
        [
            "pg-insert-completion",
            "pg-insert-wa",
            "pg-insert-wait-events-4k",
            "sysbench-oltp-tps",
            "sysbench-oltp-avg-latency",
            "sysbench-oltp-p99-latency"
        ]
    );
    for c in &charts {
        let id = c["id"].as_str().unwrap();
        let svg = out.join(format!("charts/{id}.svg"));
        let bytes = std::fs::metadata(&svg).map(|m| m.len()).unwrap_or(0);
        assert!(bytes > 1024, "{id}.svg is only {bytes} bytes");
        assert!(html.contains(&format!("charts/{id}.svg")));
    }
    // Completion time: one series (stock 4K) over partitions 1 and 16; WA:
    // the run without a WA has no point; the wait chart (4 KiB only): one
    // series per event (3 distinct).
    assert_eq!(charts[0]["series"].as_array().unwrap().len(), 1);
    assert_eq!(
        charts[0]["series"][0]["points"].as_array().unwrap().len(),
        2
    );
    assert_eq!(
        charts[1]["series"][0]["points"].as_array().unwrap().len(),
        1
    );
    assert_eq!(charts[2]["series"].as_array().unwrap().len(), 3);
    // sysbench: one series per format, one point per thread count.
    let tps = charts[3]["series"].as_array().unwrap();
    assert_eq!(tps.len(), 2);
    assert_eq!(tps[1]["target"], "hp");
    assert_eq!(tps[1]["points"].as_array().unwrap().len(), 2);
}

#[test]
fn malformed_app_results_are_one_line() {
    let out = tmp("review-bad");
    let plan = tiny_plan();
    let cases = [
        ("not-json.json", "{ this is not json", "application results"),
        ("no-tool.json", r#"{"results": []}"#, "no \"tool\" key"),
        (
            "other-tool.json",
            r#"{"tool": "hammerdb", "results": []}"#,
            "unknown tool 'hammerdb'",
        ),
        (
            "missing-field.json",
            r#"{"tool": "sysbench-oltp", "results": [{"format": "stock"}]}"#,
            "missing field",
        ),
        (
            "empty.json",
            &PG_INSERT.replace(
                &PG_INSERT[PG_INSERT.find("\"results\": [").unwrap()..],
                "\"results\": []}",
            ),
            "no rows",
        ),
    ];
    for (name, body, needle) in cases {
        let f = tmp(name);
        std::fs::write(&f, body).unwrap();
        let (code, _, err) = vsl(&[
            "review",
            "--quick",
            "--quiet",
            "--plan",
            plan.to_str().unwrap(),
            "--target",
            "iodrive-duo-640-mlc:stock",
            "--app",
            f.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ]);
        assert_eq!(code, 1, "{name}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{name}: {err}");
        assert!(err.contains(needle), "{name}: '{err}' lacks '{needle}'");
        assert!(err.contains(name), "{name}: '{err}' does not name the file");
    }
    let (code, _, err) = vsl(&[
        "review",
        "--quick",
        "--target",
        "iodrive-duo-640-mlc:stock",
        "--app",
        "/nonexistent/results.json",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("cannot read application results"), "{err}");
}
