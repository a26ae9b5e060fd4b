//! Issue 31: the pages of `vsl pts` printed to PDF (`--pdf`, headless
//! Chromium; a loud SKIP where there is none) and served by
//! `vsl serve --reports DIR` (a directory of several runs: every link of
//! the index and of each test page resolves, under the reports' sandbox
//! headers).

mod common;

use common::{Rig, PTS_QUICK};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// A small, fast run: two tests, one modelled card at scale 0.01, short
/// rounds.
fn small_pts(out: &Path, extra: &[&str]) -> std::process::Output {
    small_pts_cmd(out, extra).output().expect("run vsl")
}

fn small_pts_cmd(out: &Path, extra: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_vsl"));
    c.args([
        "pts",
        "--test",
        "iops,latency",
        "--target",
        "iodrive-duo-640-mlc:stock",
    ])
    .args(PTS_QUICK)
    .args(["--block-sizes", "4k,8k,128k", "-q", "--out"])
    .arg(out)
    .args(extra)
    .stdin(Stdio::null());
    c
}

fn have(tool: &str, arg: &str) -> bool {
    Command::new(tool)
        .arg(arg)
        .output()
        .is_ok_and(|o| o.status.success())
}

fn scratch(name: &str) -> PathBuf {
    common::scratch(&format!("pts-pages-{name}"))
}

/// Text of the pages' titles (`<title>` of each test page).
const TITLES: [(&str, &str); 2] = [
    ("iops", "SNIA PTS-E: IOPS"),
    ("latency", "SNIA PTS-E: Latency"),
];

#[test]
fn pdf_pages_are_printed_with_their_title_and_landscape_a4() {
    if !["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .any(|c| have(c, "--version"))
    {
        common::skipped(
            "pdf_pages_are_printed",
            "no chromium on PATH (scripts/setup.sh installs it)",
        );
        return;
    }
    let dir = scratch("pdf");
    let out = dir.join("out");
    // Chromium's profile and singleton socket go under TMPDIR: vsl gives
    // it a directory of its own there and removes it.
    let tmp = dir.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let o = small_pts_cmd(&out, &["--pdf"])
        .env("TMPDIR", &tmp)
        .output()
        .expect("run vsl");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let left: Vec<_> = std::fs::read_dir(&tmp)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "vsl pts --pdf left {left:?} in TMPDIR");
    let poppler = have("pdfinfo", "-v") && have("pdftotext", "-v");
    if !poppler {
        common::skipped(
            "the page-count and text checks",
            "pdfinfo/pdftotext (poppler-utils) not installed; scripts/setup.sh installs them",
        );
    }
    for (test, title) in TITLES {
        let pdf = out.join(format!("{test}.pdf"));
        let bytes = std::fs::read(&pdf).unwrap_or_else(|e| panic!("{}: {e}", pdf.display()));
        assert!(bytes.starts_with(b"%PDF-"), "{}: not a PDF", pdf.display());
        assert!(
            bytes.len() > 10_000,
            "{}: {} bytes",
            pdf.display(),
            bytes.len()
        );
        // The page title of the HTML is in the page's own text, not the PDF's.
        let html = std::fs::read_to_string(out.join(test).join("index.html")).unwrap();
        assert!(html.contains(&format!("<title>{title}</title>")), "{test}");
        if !poppler {
            continue;
        }
        let info = Command::new("pdfinfo").arg(&pdf).output().unwrap();
        let info = String::from_utf8_lossy(&info.stdout);
        let pages: u32 = info
            .lines()
            .find_map(|l| l.strip_prefix("Pages:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("{}: no page count in {info}", pdf.display()));
        assert!(pages >= 1, "{}: {pages} pages", pdf.display());
        // The print style sheet: A4 landscape (842 x 595 pt).
        let size = info
            .lines()
            .find(|l| l.starts_with("Page size:"))
            .unwrap_or("");
        let wh: Vec<f64> = size
            .trim_start_matches("Page size:")
            .split_whitespace()
            .filter_map(|w| w.parse().ok())
            .collect();
        assert!(
            wh.len() == 2 && (wh[0] - 842.0).abs() < 2.0 && (wh[1] - 595.0).abs() < 2.0,
            "{}: {size} (not A4 landscape)",
            pdf.display()
        );
        let text = Command::new("pdftotext")
            .arg(&pdf)
            .arg("-")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&text.stdout);
        assert!(text.contains(title), "{}: lacks '{title}'", pdf.display());
        assert!(
            text.contains("Measurement window") && text.contains("Test set-up sheet"),
            "{}: section text missing",
            pdf.display()
        );
        if test == "iops" {
            assert!(
                text.contains("IOPS heat map"),
                "{}: no heat map",
                pdf.display()
            );
        }
        eprintln!("{}: {pages} pages, {size}", pdf.display());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A response: status, lower-case headers, body.
struct Resp {
    code: u32,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Resp {
    fn header(&self, name: &str) -> &str {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map_or("", |(_, v)| v.as_str())
    }
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

fn get(addr: &str, path: &str) -> Resp {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("an HTTP response");
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.lines();
    let code = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let mut body = raw[split + 4..].to_vec();
    if headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"))
    {
        body = unchunk(&body);
    }
    Resp {
        code,
        headers,
        body,
    }
}

fn unchunk(mut b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let eol = b.windows(2).position(|w| w == b"\r\n").unwrap();
        let n = usize::from_str_radix(std::str::from_utf8(&b[..eol]).unwrap().trim(), 16).unwrap();
        if n == 0 {
            return out;
        }
        out.extend_from_slice(&b[eol + 2..eol + 2 + n]);
        b = &b[eol + 2 + n + 2..];
    }
}

/// The `href`/`src` values of a page (either quote), without in-page
/// anchors.
fn links(page: &str) -> Vec<String> {
    let mut out = Vec::new();
    for attr in ["href=", "src="] {
        for (i, _) in page.match_indices(attr) {
            let rest = &page[i + attr.len()..];
            let Some(q) = rest.chars().next().filter(|c| *c == '"' || *c == '\'') else {
                continue;
            };
            let v = &rest[1..rest[1..].find(q).map_or(0, |j| j + 1)];
            if !v.is_empty() && !v.starts_with('#') {
                out.push(v.to_string());
            }
        }
    }
    out
}

/// `base` (a directory URL path ending in '/') joined with a relative link.
fn resolve(base: &str, link: &str) -> String {
    if link.starts_with('/') {
        return link.to_string();
    }
    let mut parts: Vec<&str> = base.trim_end_matches('/').split('/').collect();
    for c in link.split('/') {
        match c {
            ".." => {
                parts.pop();
            }
            "." => {}
            c => parts.push(c),
        }
    }
    parts.join("/")
}

/// The headers every report file must carry: its own sandboxed origin,
/// no framing, no sniffing.
fn sandboxed(r: &Resp, what: &str) {
    let csp = r.header("content-security-policy");
    assert!(csp.starts_with("sandbox"), "{what}: CSP '{csp}'");
    assert!(
        csp.contains("frame-ancestors 'none'"),
        "{what}: CSP '{csp}'"
    );
    assert_eq!(r.header("x-frame-options"), "DENY", "{what}");
    assert_eq!(r.header("x-content-type-options"), "nosniff", "{what}");
}

#[test]
fn serve_reports_serves_several_pts_runs_with_every_link_resolving() {
    let dir = scratch("serve");
    let reports = dir.join("reports");
    let o = small_pts(&reports.join("run-a"), &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // A second run in the same directory (a copy: the listing is the test).
    let ok = Command::new("cp")
        .arg("-a")
        .arg(reports.join("run-a"))
        .arg(reports.join("run-b"))
        .status()
        .unwrap();
    assert!(ok.success());

    let rig = Rig::new("pts-serve");
    let served = rig.serve(&["--reports", reports.to_str().unwrap()]);
    let addr = served.addr.as_str();

    let list = get(addr, "/reports/");
    assert_eq!(list.code, 200);
    for run in ["run-a", "run-b"] {
        assert!(
            list.text().contains(&format!("/reports/{run}/index.html")),
            "{run} not listed: {}",
            list.text()
        );
    }
    // A run's directory: redirected to its slash form, which is its index.
    let r = get(addr, "/reports/run-a");
    assert_eq!(r.code, 303, "{}", r.text());
    assert_eq!(r.header("location"), "/reports/run-a/");
    let r = get(addr, "/reports/run-a/");
    assert_eq!(r.code, 200, "{}", r.text());
    assert!(r.text().contains("<title>SNIA PTS report</title>"));
    assert_eq!(get(addr, "/reports/run-a/../run-b/index.html").code, 400);
    assert_eq!(get(addr, "/reports/run-a/nosuch.html").code, 404);

    let mut fetched = 0;
    for run in ["run-a", "run-b"] {
        let base = format!("/reports/{run}/");
        let index = get(addr, &format!("{base}index.html"));
        assert_eq!(index.code, 200);
        sandboxed(&index, "index");
        let text = index.text();
        assert!(text.contains("<title>SNIA PTS report</title>"));
        let index_links = links(&text);
        for (test, _) in TITLES {
            assert!(
                index_links.contains(&format!("{test}/index.html")),
                "{run}: no link to {test} in {index_links:?}"
            );
        }
        for l in &index_links {
            let url = resolve(&base, l);
            let r = get(addr, &url);
            assert_eq!(r.code, 200, "{url} (linked from {base}index.html)");
            sandboxed(&r, &url);
            fetched += 1;
            if !l.ends_with("/index.html") {
                continue;
            }
            let test = l.trim_end_matches("/index.html");
            let title = TITLES.iter().find(|(t, _)| *t == test).unwrap().1;
            let page = r.text();
            assert!(
                page.contains(&format!("<title>{title}</title>")),
                "{url}: title"
            );
            assert!(r.header("content-type").starts_with("text/html"));
            let page_base = format!("{base}{test}/");
            let page_links = links(&page);
            let images: Vec<&String> = page_links
                .iter()
                .filter(|l| l.ends_with(".svg") || l.ends_with(".png"))
                .collect();
            assert!(!images.is_empty(), "{url}: no charts");
            if test == "iops" {
                assert!(
                    images.iter().any(|l| l.starts_with("heatmap-")),
                    "{url}: no heat map in {images:?}"
                );
            }
            for l in page_links {
                let u = resolve(&page_base, &l);
                let r = get(addr, &u);
                assert_eq!(r.code, 200, "{u} (linked from {url})");
                sandboxed(&r, &u);
                fetched += 1;
                if l.ends_with(".svg") {
                    assert_eq!(r.header("content-type"), "image/svg+xml", "{u}");
                    assert!(r.text().contains("<svg"), "{u}: not an SVG");
                } else if l.ends_with(".png") {
                    assert_eq!(r.header("content-type"), "image/png", "{u}");
                    assert!(r.body.starts_with(b"\x89PNG"), "{u}: not a PNG");
                }
            }
        }
    }
    eprintln!("fetched {fetched} linked files, all 200 with the sandbox headers");
    drop(served);
    let _ = std::fs::remove_dir_all(&dir);
}
