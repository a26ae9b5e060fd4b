//! Browser test of `vsl serve`: a simulation and an attached card run, the
//! dashboard is loaded in headless Chromium driven over the DevTools
//! protocol; the live chart must gain points within 3 s, the device page
//! must show the card's capacity, and screenshots are saved under
//! `$CARGO_TARGET_TMPDIR/dashboard/`. Also: a port in use, and malformed
//! requests. Needs root, FUSE, loop devices and `chromium` (installed by
//! scripts/setup.sh); skipped loudly without them.

mod common;

use common::{skip, wait_for, Proc, Rig, TINY_CARD};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// A minimal HTTP/1.1 request: (status, body).
fn http(addr: &str, method: &str, path: &str, body: &str) -> (u32, String) {
    http_with(addr, method, path, "", body)
}

/// [`http`] with extra header lines (each ending in CRLF).
fn http_with(addr: &str, method: &str, path: &str, extra: &str, body: &str) -> (u32, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n{extra}Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    // Read the head, then exactly Content-Length bytes (DevTools' server
    // does not close the connection).
    let mut r = BufReader::new(s);
    let mut head = String::new();
    let mut len = None;
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).unwrap() == 0 || line == "\r\n" {
            break;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            len = v.trim().parse::<usize>().ok();
        }
        head.push_str(&line);
    }
    let mut body = Vec::new();
    match len {
        Some(n) => {
            body.resize(n, 0);
            r.read_exact(&mut body).unwrap();
        }
        None => {
            r.read_to_end(&mut body).unwrap();
        }
    }
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, String::from_utf8_lossy(&body).into_owned())
}

/// A DevTools protocol session with one page.
struct Cdp {
    ws: tungstenite::WebSocket<tungstenite::stream::MaybeTlsStream<TcpStream>>,
    next: u64,
}

impl Cdp {
    fn call(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        let msg = json!({"id": id, "method": method, "params": params}).to_string();
        self.ws.send(tungstenite::Message::text(msg)).unwrap();
        loop {
            let m = self.ws.read().unwrap();
            let Ok(text) = m.to_text() else { continue };
            let v: Value = serde_json::from_str(text).unwrap_or(Value::Null);
            if v["id"] == id {
                assert!(v.get("error").is_none(), "{method}: {v}");
                return v["result"].clone();
            }
        }
    }

    fn eval(&mut self, expr: &str) -> Value {
        let r = self.call(
            "Runtime.evaluate",
            json!({"expression": expr, "returnByValue": true}),
        );
        r["result"]["value"].clone()
    }

    fn screenshot(&mut self, path: &Path) {
        use base64::Engine;
        let r = self.call(
            "Page.captureScreenshot",
            json!({"format": "png", "captureBeyondViewport": true}),
        );
        let png = base64::engine::general_purpose::STANDARD
            .decode(r["data"].as_str().unwrap())
            .unwrap();
        std::fs::write(path, png).unwrap();
        println!("screenshot: {}", path.display());
    }
}

/// Starts headless Chromium on `url`; returns it and a session with the page.
fn chromium(url: &str, profile: &Path) -> (Proc, Cdp) {
    // Its singleton socket goes under TMPDIR (/tmp/org.chromium.Chromium.*
    // otherwise, left behind when the browser is killed): keep it in the
    // rig's scratch, which the rig removes.
    let mut child = Command::new("chromium")
        .env("TMPDIR", profile.parent().unwrap())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--remote-debugging-port=0",
            "--window-size=1280,1000",
            &format!("--user-data-dir={}", profile.display()),
            url,
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start chromium");
    let stderr = child.stderr.take().unwrap();
    let proc = Proc(child);
    let mut lines = BufReader::new(stderr).lines();
    let port = loop {
        let line = lines
            .next()
            .expect("chromium exited before DevTools listened")
            .unwrap();
        if let Some(rest) = line.split("ws://127.0.0.1:").nth(1) {
            break rest.split('/').next().unwrap().to_string();
        }
    };
    // Keep draining stderr so Chromium never blocks on it.
    std::thread::spawn(move || lines.for_each(drop));
    let devtools = format!("127.0.0.1:{port}");
    let ws_url = wait_for(20, "the dashboard page target", || {
        let (_, body) = http(&devtools, "GET", "/json/list", "");
        let list: Value = serde_json::from_str(&body).ok()?;
        list.as_array()?
            .iter()
            .find(|t| t["type"] == "page" && t["url"].as_str().is_some_and(|u| u.starts_with(url)))
            .and_then(|t| Some(t["webSocketDebuggerUrl"].as_str()?.to_string()))
    });
    let (ws, _) = tungstenite::connect(ws_url).unwrap();
    (proc, Cdp { ws, next: 0 })
}

/// Keeps the attached card busy (1 MiB every 20 ms, wrapping) so its live
/// charts have something to show.
fn write_until(dev: &str, stop: &std::sync::atomic::AtomicBool) {
    use std::io::{Seek, SeekFrom};
    let mut f = std::fs::OpenOptions::new().write(true).open(dev).unwrap();
    let buf = vec![0x5au8; 1 << 20];
    let mut off = 0u64;
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        f.seek(SeekFrom::Start(off)).unwrap();
        f.write_all(&buf).unwrap();
        f.sync_data().unwrap();
        off = (off + (1 << 20)) % (256 << 20);
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn dashboard_streams_a_simulation_and_shows_an_attached_card() {
    if skip(
        "dashboard_streams_a_simulation_and_shows_an_attached_card",
        &["chromium"],
    ) {
        return;
    }
    let rig = Rig::new("dashboard");
    let out_dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("dashboard");
    std::fs::create_dir_all(&out_dir).unwrap();
    let store = rig.root.join("store");
    let store_s = store.to_str().unwrap();
    let att = rig
        .cmd(&[&["attach", "--store", store_s], TINY_CARD].concat())
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
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let stop = stop.clone();
        std::thread::spawn(move || write_until(&dev, &stop))
    };
    let _sim = rig.background_run();
    let served = rig.serve(&[]);
    let addr = served.addr.clone();
    let base = format!("http://{addr}/");
    let token_header = format!("X-OpenVSL-Token: {}\r\n", served.token);

    // The server sees the simulation and the card before the browser comes.
    let status: Value = wait_for(30, "a run and a card in /api/status", || {
        let (code, body) = http(&addr, "GET", "/api/status", "");
        let v: Value = serde_json::from_str(&body).ok()?;
        let ready = code == 200
            && v["runs"]
                .as_array()?
                .iter()
                .any(|r| r["points"].as_array().is_some_and(|p| p.len() > 1))
            && !v["devices"].as_array()?.is_empty();
        ready.then_some(v)
    });
    let capacity = status["devices"][0]["formatted_capacity_bytes"]
        .as_u64()
        .unwrap();

    let (_browser, mut cdp) = chromium(&base, &rig.root.join("chromium"));
    let points = |cdp: &mut Cdp| {
        cdp.eval("Number((document.querySelector('svg.chart[data-kind=run]')||{dataset:{points:0}}).dataset.points)")
            .as_f64()
            .unwrap_or(0.0)
    };
    let before = wait_for(20, "the live chart", || {
        Some(points(&mut cdp)).filter(|&p| p > 0.0)
    });
    std::thread::sleep(Duration::from_secs(3));
    let after = points(&mut cdp);
    println!("live chart points: {before} then {after} three seconds later");
    assert!(
        after > before,
        "the live chart did not grow: {before} -> {after}"
    );
    let cards = cdp.eval("document.querySelectorAll('svg.chart[data-kind=device]').length");
    assert!(
        cards.as_f64().unwrap() >= 3.0,
        "no live charts of the attached card: {cards}"
    );
    cdp.screenshot(&out_dir.join("dashboard.png"));

    let device_url = format!("{base}device?store={store_s}&member=0");
    cdp.call("Page.navigate", json!({"url": device_url}));
    let want = format!("({capacity} bytes)");
    let text = wait_for(20, "the device page", || {
        let t = cdp.eval("document.body ? document.body.innerText : ''");
        t.as_str()
            .filter(|t| t.contains("formatted capacity"))
            .map(String::from)
    });
    assert!(text.contains(&want), "device page lacks {want}: {text}");
    cdp.screenshot(&out_dir.join("device.png"));

    // Malformed requests: 4xx with a message.
    let (code, body) = http(&addr, "GET", "/device?store=x&member=notanumber", "");
    assert_eq!(code, 400, "{body}");
    assert!(body.contains("member"), "{body}");
    let (code, body) = http(&addr, "GET", "/device?store=/no/such/store&member=0", "");
    assert_eq!(code, 404, "{body}");
    let (code, body) = http_with(
        &addr,
        "POST",
        "/format",
        &token_header,
        &format!("store={store_s}&preset=hp&sector_size=4096&confirm=nope"),
    );
    assert_eq!(code, 400, "{body}");
    assert!(body.contains("confirmation"), "{body}");
    let (code, body) = http_with(&addr, "POST", "/format", &token_header, "garbage");
    assert!((400..500).contains(&code), "{code} {body}");
    // Without the token: refused before the form is read.
    let (code, body) = http(&addr, "POST", "/format", "garbage");
    assert_eq!(code, 403, "{body}");

    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    writer.join().unwrap();

    // A second server on the same port: one line, non-zero exit.
    let out = rig.cmd(&["serve", "--listen", &addr]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("cannot listen on") && err.contains("in use"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

/// Issue 10: a running `vsl review` publishes its phases; the dashboard
/// lists it with live points (health included) in `/api/status` and on
/// the overview page. Needs only the binary (no browser, no root).
#[test]
fn dashboard_lists_a_running_review() {
    let rig = Rig::new("dashboard-review");
    let out = rig.root.join("review");
    // The whole quick review at scale 0.01 runs for a minute or more: it
    // is still running when the server looks, and is killed after.
    let _review = Proc(
        rig.cmd(&[
            "review",
            "--quick",
            "--quiet",
            "--scale",
            "0.01",
            "--target",
            "iodrive-duo-640-mlc:stock",
            "--out",
            out.to_str().unwrap(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap(),
    );
    let served = rig.serve(&[]);
    let addr = served.addr.clone();
    let run = wait_for(60, "a review with points in /api/status", || {
        let (code, body) = http(&addr, "GET", "/api/status", "");
        let v: Value = serde_json::from_str(&body).ok()?;
        if code != 200 {
            return None;
        }
        v["runs"]
            .as_array()?
            .iter()
            .find(|r| r["kind"] == "review" && r["points"].as_array().is_some_and(|p| p.len() > 1))
            .cloned()
    });
    assert_eq!(run["label"], "vsl review iodrive-duo-640-mlc:stock");
    let points = run["points"].as_array().unwrap();
    let t: Vec<f64> = points.iter().map(|p| p["t_s"].as_f64().unwrap()).collect();
    assert!(t.windows(2).all(|w| w[1] > w[0]), "{t:?}");
    assert!(points.iter().all(|p| p["iops"].as_f64().unwrap() > 0.0));
    assert!(
        points
            .iter()
            .all(|p| p["temperature_c"].as_f64().unwrap() > 25.0),
        "{points:?}"
    );
    assert_eq!(run["health"].as_array().unwrap().len(), 2, "both members");
    let (code, page) = http(&addr, "GET", "/", "");
    assert_eq!(code, 200);
    assert!(
        page.contains("vsl review iodrive-duo-640-mlc:stock"),
        "the overview lacks the running review"
    );
}
