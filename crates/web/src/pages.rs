//! The dashboard's HTML. Live parts sit in `<div data-src=URL>` elements
//! that a few lines of script refresh from URL once a second.

use crate::chart::{svg, Line};
use crate::history::{key, DevPoint, History};
use blockdev::manage::DeviceStatus;
use rundir::live::{LivePoint, LiveRun};
use std::fmt::Write;
use std::path::Path;

/// The pages' style sheet, served as `/static/app.css` (the CSP allows no
/// inline style).
pub const STYLE: &str = "body{font-family:sans-serif;margin:0;background:#f4f5f7;color:#222}\
header{background:#1d3557;color:#fff;padding:10px 20px}header a{color:#fff;margin-right:18px}\
main{padding:10px 20px}section{background:#fff;border:1px solid #ddd;border-radius:6px;margin:10px 0;padding:10px 14px}\
.charts{display:flex;flex-wrap:wrap;gap:8px}table{border-collapse:collapse}td,th{padding:3px 10px;border-bottom:1px solid #eee;text-align:left}\
.warn{color:#a00;font-weight:bold}.muted{color:#777}";

/// The pages' script, served as `/static/app.js` (the CSP allows no inline
/// script): refreshes every `[data-src]` element once a second.
pub const SCRIPT: &str = "setInterval(()=>{document.querySelectorAll('[data-src]').forEach(e=>{\
fetch(e.dataset.src).then(r=>r.ok?r.text():Promise.reject(r.status)).then(t=>{e.innerHTML=t}).catch(()=>{})})},1000);\n";

pub use report::escape_html as esc;

/// Percent-encodes a query value.
fn url(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'/' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn page(title: &str, body: &str) -> String {
    format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{} — openvsl</title><link rel=\"stylesheet\" href=\"/static/app.css\"></head>\
<body><header><b>openvsl</b> &nbsp; <a href=\"/\">Dashboard</a><a href=\"/reports/\">Review reports</a><a href=\"/api/status\">JSON</a></header>\
<main>{body}</main><script src=\"/static/app.js\"></script></body></html>",
        esc(title)
    )
}

/// Bandwidth, IOPS and latency charts of a series.
fn perf_charts<T>(kind: &str, x: &str, pts: &[T], f: impl Fn(&T) -> [f64; 6]) -> String {
    let col = |i: usize| pts.iter().map(|p| (f(p)[0], f(p)[i])).collect::<Vec<_>>();
    let line = |name: &'static str, i: usize| Line {
        name,
        points: col(i),
    };
    [
        svg("Bandwidth", "MB/s", x, kind, &[line("MB/s", 1)]),
        svg("IOPS", "IOPS", x, kind, &[line("IOPS", 2)]),
        svg(
            "Latency",
            "µs",
            x,
            kind,
            &[line("avg", 3), line("p99", 4), line("max", 5)],
        ),
    ]
    .concat()
}

fn run_section(r: &LiveRun) -> String {
    let pts: Vec<_> = r.points.iter().collect();
    let mut s = format!(
        "<section><h3>{} <span class=\"muted\">({} pid {}, {} intervals)</span></h3><div class=\"charts\">",
        esc(&r.label),
        esc(&r.kind),
        r.pid,
        r.points_total
    );
    s += &perf_charts("run", "s (virtual)", &pts, |p| live_perf(p));
    let temp: Vec<_> = pts
        .iter()
        .filter_map(|p| Some((p.t_s, p.temperature_c?)))
        .collect();
    if !temp.is_empty() {
        let power = pts
            .iter()
            .filter_map(|p| Some((p.t_s, p.power_w?)))
            .collect();
        s += &svg(
            "Temperature",
            "°C",
            "s (virtual)",
            "run-temp",
            &[Line {
                name: "hottest member",
                points: temp,
            }],
        );
        s += &svg(
            "Power",
            "W",
            "s (virtual)",
            "run-power",
            &[Line {
                name: "card",
                points: power,
            }],
        );
    }
    s += "</div>";
    for (i, h) in r.health.iter().enumerate() {
        let _ = write!(
            s,
            "<p>member {i}: health <b>{}</b>, {:.1} °C (max {:.1}), {:.1} W, rated endurance remaining {:.2} %</p>",
            h.state, h.temperature_c, h.temperature_max_c, h.power_w, h.endurance_remaining_pct
        );
    }
    s + "</section>"
}

fn device_link(d: &DeviceStatus) -> String {
    format!("/device?store={}&member={}", url(&d.store), d.member)
}

fn summary_line(d: &DeviceStatus) -> String {
    format!(
        "{} — {} — {:.2} GB ({} × {} B), OP {:.1} %, health <b>{}</b>, {:.1} °C, {:.1} W, endurance remaining {:.2} %",
        d.state.name(),
        esc(d.block_device.as_deref().unwrap_or("no block device")),
        d.formatted_capacity_bytes as f64 / 1e9,
        d.sectors,
        d.sector_bytes,
        d.overprovision_pct,
        d.health.state,
        d.health.temperature_c,
        d.health.power_w,
        d.health.endurance_remaining_pct
    )
}

/// Time, MB/s, IOPS, latency avg / p99 / max of an interval.
fn live_perf(p: &LivePoint) -> [f64; 6] {
    [
        p.t_s,
        p.mb_s,
        p.iops,
        p.latency_avg_us,
        p.latency_p99_us,
        p.latency_max_us,
    ]
}

fn dev_perf(p: &DevPoint) -> [f64; 6] {
    live_perf(&p.live)
}

fn dev_points(h: &History, d: &DeviceStatus) -> Vec<DevPoint> {
    h.devices
        .get(&key(d))
        .map(|v| v.iter().cloned().collect())
        .unwrap_or_default()
}

/// The live part of the overview.
pub fn overview_body(h: &History, reports: &[String]) -> String {
    let mut s = String::new();
    if let Some(e) = &h.error {
        let _ = write!(s, "<p class=\"warn\">status: {}</p>", esc(e));
    }
    let (runs, devices) = match &h.doc {
        Some(d) => (&d.runs[..], &d.devices[..]),
        None => (&[][..], &[][..]),
    };
    let _ = write!(s, "<h2>Running simulations ({})</h2>", runs.len());
    if runs.is_empty() {
        s += "<p class=\"muted\">none: start one with <code>vsl run</code> or <code>vsl review</code></p>";
    }
    for r in runs {
        s += &run_section(r);
    }
    let _ = write!(s, "<h2>Attached cards ({})</h2>", devices.len());
    if devices.is_empty() {
        s += "<p class=\"muted\">none: attach one with <code>vsl attach</code></p>";
    }
    for d in devices {
        let pts = dev_points(h, d);
        let _ = write!(
            s,
            "<section><h3><a href=\"{}\">{} ioMemory {}</a> <span class=\"muted\">{}</span></h3><p>{}</p><div class=\"charts\">{}</div></section>",
            esc(&device_link(d)),
            esc(&d.store),
            d.member,
            esc(&d.model),
            summary_line(d),
            perf_charts("device", "s", &pts, dev_perf)
        );
    }
    let _ = write!(
        s,
        "<h2>Review reports ({})</h2>{}",
        reports.len(),
        report_list(reports)
    );
    s
}

pub fn overview(h: &History, reports: &[String]) -> String {
    page(
        "Dashboard",
        &format!(
            "<div data-src=\"/fragment/overview\">{}</div>",
            overview_body(h, reports)
        ),
    )
}

fn rows(fields: &[(&str, String)]) -> String {
    fields
        .iter()
        .map(|(k, v)| format!("<tr><th>{k}</th><td>{}</td></tr>", esc(v)))
        .collect()
}

fn gb(b: u64) -> String {
    format!("{:.3} GB ({b} bytes)", b as f64 / 1e9)
}

/// The live part of a device page.
pub fn device_body(d: &DeviceStatus, h: &History) -> String {
    let x = &d.health;
    let l = &d.lifetime;
    let general = rows(&[
        ("state", d.state.name().into()),
        (
            "block device",
            d.block_device.clone().unwrap_or_else(|| "—".into()),
        ),
        ("model", d.model.clone()),
        ("serial", d.serial.clone()),
        ("firmware", d.firmware_version.clone()),
        ("format version", d.format_version.to_string()),
        ("format", d.format.clone()),
        ("formatted capacity", gb(d.formatted_capacity_bytes)),
        ("sectors", format!("{} × {} B", d.sectors, d.sector_bytes)),
        ("raw NAND", gb(d.raw_bytes)),
        ("over-provisioning", format!("{:.2} %", d.overprovision_pct)),
        (
            "host RAM now / peak",
            format!(
                "{:.1} / {:.1} MB",
                d.host_ram_bytes as f64 / 1e6,
                d.host_ram_peak_bytes as f64 / 1e6
            ),
        ),
    ]);
    let health = rows(&[
        ("health", x.state.to_string()),
        ("reserves", format!("{:.2} %", x.reserve_pct)),
        (
            "rated endurance remaining",
            format!("{:.2} %", x.endurance_remaining_pct),
        ),
        (
            "blocks retired",
            format!(
                "{} of {} ({:.2} % healthy)",
                x.retired_blocks, x.total_blocks, x.healthy_blocks_pct
            ),
        ),
        (
            "erase count min / avg / max",
            format!(
                "{} / {:.1} / {}",
                x.erase_count_min, x.erase_count_avg, x.erase_count_max
            ),
        ),
        (
            "temperature now / max",
            format!("{:.1} / {:.1} °C", x.temperature_c, x.temperature_max_c),
        ),
        (
            "power now / avg / max",
            format!(
                "{:.1} / {:.1} / {:.1} W",
                x.power_w, x.power_avg_w, x.power_max_w
            ),
        ),
        ("write throttle", format!("{:?}", x.throttle)),
        (
            "environment",
            format!(
                "{:.0} °C ambient, {:.0} LFM, external power {}",
                x.ambient_c,
                x.airflow_lfm,
                if x.external_power { "on" } else { "off" }
            ),
        ),
    ]);
    let life = rows(&[
        (
            "host written / read",
            format!("{} / {}", gb(l.host_bytes_written), gb(l.host_bytes_read)),
        ),
        (
            "physical written / read",
            format!(
                "{} / {}",
                gb(x.physical_bytes_written),
                gb(x.physical_bytes_read)
            ),
        ),
        (
            "write amplification",
            format!("{:.2}", d.write_amplification),
        ),
        (
            "I/Os: reads / writes / trims / flushes",
            format!("{} / {} / {} / {}", l.reads, l.writes, l.trims, l.flushes),
        ),
        (
            "GC runs / sectors moved / erases",
            format!("{} / {} / {}", l.gc_runs, l.gc_sectors_moved, l.erases),
        ),
        ("time attached", format!("{:.0} s", l.attached_s)),
    ]);
    let pts = dev_points(h, d);
    let series =
        |f: fn(&DevPoint) -> f64| pts.iter().map(|p| (p.live.t_s, f(p))).collect::<Vec<_>>();
    let history = [
        svg(
            "Temperature",
            "°C",
            "s",
            "device-temp",
            &[Line {
                name: "internal",
                points: series(|p| p.live.temperature_c.unwrap_or(0.0)),
            }],
        ),
        svg(
            "Power",
            "W",
            "s",
            "device-power",
            &[Line {
                name: "power",
                points: series(|p| p.live.power_w.unwrap_or(0.0)),
            }],
        ),
        svg(
            "Endurance used",
            "%",
            "s",
            "device-endurance",
            &[Line {
                name: "rated endurance used",
                points: series(|p| p.live.endurance_used_pct.unwrap_or(0.0)),
            }],
        ),
        svg(
            "Lifetime physical writes",
            "GB",
            "s",
            "device-life",
            &[Line {
                name: "written",
                points: series(|p| p.physical_gb_written),
            }],
        ),
    ]
    .concat();
    let perf = perf_charts("device", "s", &pts, dev_perf);
    format!(
        "<div class=\"charts\"><section><h3>Device</h3><table>{general}</table></section>\
<section><h3>Health</h3><table>{health}</table></section><section><h3>Lifetime</h3><table>{life}</table></section></div>\
<section><h3>Live</h3><div class=\"charts\">{perf}</div></section>\
<section><h3>History since the dashboard started</h3><div class=\"charts\">{history}</div></section>"
    )
}

/// `can_format`: false under `vsl serve --read-only` (no link to /format).
pub fn device(d: &DeviceStatus, h: &History, can_format: bool) -> String {
    let src = format!(
        "/fragment/device?store={}&member={}",
        url(&d.store),
        d.member
    );
    let format_link = if can_format {
        format!(
            "<p><a href=\"/format?store={}\">Low-level format…</a></p>",
            esc(&url(&d.store))
        )
    } else {
        String::new()
    };
    page(
        &format!("{} ioMemory {}", d.store, d.member),
        &format!(
            "<h2>{} ioMemory {} <span class=\"muted\">{}</span></h2>{format_link}<div data-src=\"{}\">{}</div>",
            esc(&d.store),
            d.member,
            esc(&d.model),
            esc(&src),
            device_body(d, h)
        ),
    )
}

/// `token`: the per-process token, sent back with the form.
pub fn format_form(store: &str, devices: &[DeviceStatus], token: &str) -> String {
    let cur = devices.first();
    let (cap, sector) = cur.map_or((0, 4096), |d| (d.formatted_capacity_bytes, d.sector_bytes));
    let opt = |v: u32| {
        let sel = if v == sector { " selected" } else { "" };
        format!("<option{sel}>{v}</option>")
    };
    let body = format!(
        "<h2>Low-level format {store}</h2>\
<p>Now: {:.2} GB per ioMemory device in {sector}-byte sectors ({}). The card must be detached.</p>\
<p class=\"warn\">Formatting erases ALL data on the card. Lifetime counters, wear and temperature history are kept.</p>\
<form method=\"post\" action=\"/format\"><input type=\"hidden\" name=\"store\" value=\"{store}\">\
<input type=\"hidden\" name=\"token\" value=\"{token}\">\
<table><tr><th>preset</th><td><select name=\"preset\"><option>stock</option><option>hp</option><option>improved-write</option><option>max-write</option></select></td></tr>\
<tr><th>or capacity</th><td><input name=\"capacity\" placeholder=\"e.g. 256G\"></td></tr>\
<tr><th>or over-provisioning</th><td><input name=\"overprovision\" placeholder=\"e.g. 36%\"></td></tr>\
<tr><th>sector size</th><td><select name=\"sector_size\">{}{}</select></td></tr>\
<tr><th>confirm: type the store path</th><td><input name=\"confirm\" size=\"50\"></td></tr></table>\
<p><button type=\"submit\">Format</button></p></form>",
        cap as f64 / 1e9,
        esc(&cur.map_or(String::new(), |d| d.state.name().to_string())),
        opt(512),
        opt(4096),
        store = esc(store),
        token = esc(token),
    );
    page("Format", &body)
}

/// The login form of `--token-file`; `error` after a wrong token.
pub fn login(token: &str, error: Option<&str>) -> String {
    let err = error.map_or(String::new(), |e| {
        format!("<p class=\"warn\">{}</p>", esc(e))
    });
    page(
        "Log in",
        &format!(
            "<h2>Log in</h2>{err}<form method=\"post\" action=\"/login\">\
<input type=\"hidden\" name=\"token\" value=\"{}\">\
<p>Token (the contents of <code>--token-file</code>): <input type=\"password\" name=\"password\" size=\"50\" autofocus></p>\
<p><button type=\"submit\">Log in</button></p></form>",
            esc(token)
        ),
    )
}

pub fn formatted(store: &str, output: &str) -> String {
    page(
        "Formatted",
        &format!(
            "<h2>Formatted {}</h2><pre>{}</pre><p><a href=\"/\">Back</a></p>",
            esc(store),
            esc(output)
        ),
    )
}

/// Review reports under `dir`: the directories holding an `index.html`
/// (one level deep, and `dir` itself), sorted.
pub fn reports(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    if dir.join("index.html").is_file() {
        out.push("index.html".to_string());
    }
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            if e.path().join("index.html").is_file() {
                out.push(format!("{}/index.html", e.file_name().to_string_lossy()));
            }
        }
    }
    out.sort();
    out
}

fn report_list(reports: &[String]) -> String {
    if reports.is_empty() {
        return "<p class=\"muted\">none (serve a directory of reports with <code>--reports DIR</code>)</p>".into();
    }
    let items: String = reports
        .iter()
        .map(|r| {
            format!(
                "<li><a href=\"/reports/{}\">{}</a></li>",
                esc(&url(r)),
                esc(r)
            )
        })
        .collect();
    format!("<ul>{items}</ul>")
}

pub fn reports_page(reports: &[String]) -> String {
    page(
        "Review reports",
        &format!("<h2>Review reports</h2>{}", report_list(reports)),
    )
}
