//! The bundled Grafana dashboard (`dist/grafana/openvsl.json`) reads only
//! metrics `/metrics` exports: every query of every panel and variable
//! names series of `web::metrics`' table.

use serde_json::Value;

fn dashboard() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../dist/grafana/openvsl.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Every `openvsl_…` identifier in a PromQL expression.
fn metric_names(expr: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = expr;
    while let Some(i) = rest.find("openvsl_") {
        let tail = &rest[i..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        out.push(tail[..end].to_string());
        rest = &tail[end..];
    }
    out
}

/// (where, expression) of every query in the dashboard.
pub fn queries(d: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for p in d["panels"].as_array().unwrap() {
        let targets = p["targets"].as_array().unwrap();
        assert!(!targets.is_empty(), "panel {} has no query", p["title"]);
        for t in targets {
            out.push((
                p["title"].to_string(),
                t["expr"].as_str().unwrap().to_string(),
            ));
        }
    }
    for v in d["templating"]["list"].as_array().unwrap() {
        out.push((
            v["name"].to_string(),
            v["query"].as_str().unwrap().to_string(),
        ));
    }
    out
}

#[test]
fn every_query_names_an_exported_metric() {
    let exported = web::metrics::all_series();
    let d = dashboard();
    let qs = queries(&d);
    assert!(qs.len() >= 20, "only {} queries", qs.len());
    let mut seen = std::collections::BTreeSet::new();
    for (at, q) in &qs {
        let names = metric_names(q);
        assert!(!names.is_empty(), "{at}: `{q}` reads no openvsl metric");
        for n in names {
            assert!(
                exported.contains(&n),
                "{at}: `{q}` names {n}, which /metrics does not export"
            );
            seen.insert(n);
        }
    }
    // The dashboard covers the families an operator watches.
    for want in [
        "openvsl_read_latency_seconds_bucket",
        "openvsl_write_amplification",
        "openvsl_free_space_ratio",
        "openvsl_temperature_celsius",
        "openvsl_health_state",
        "openvsl_run_iops",
    ] {
        assert!(seen.contains(want), "no panel reads {want}");
    }
}

#[test]
fn the_name_scan_finds_names() {
    assert_eq!(
        metric_names("rate(openvsl_a_total{x=\"1\"}[1m]) / openvsl_b"),
        vec!["openvsl_a_total", "openvsl_b"]
    );
    assert!(metric_names("up").is_empty());
}
