//! Issue 32: `vsl serve` must not let another site, a rebound host name or
//! an unauthenticated client change a card. The forged requests below are
//! what any web page the operator visits can send; each must get 403 and
//! leave the store byte-identical. No root needed: the store is made
//! directly and formatted detached.

mod common;

use blockdev::cli::card_config;
use blockdev::store::{CardSpec, Store, StoreHeader};
use common::Rig;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const VSL: &str = env!("CARGO_BIN_EXE_vsl");

/// A response: status, lower-case headers, body.
struct Resp {
    code: u32,
    headers: Vec<(String, String)>,
    body: String,
}

impl Resp {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// One HTTP/1.1 request with the given headers (Host among them, as the
/// attacker chooses it).
fn http(addr: &str, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Resp {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut req = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str(&format!(
        "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    ));
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let code = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    Resp {
        code,
        headers,
        body: body.to_string(),
    }
}

/// A detached tiny card's store.
fn make_store(dir: &Path) {
    let spec = CardSpec::tiny();
    let cfg = card_config(&spec).unwrap().ftl_config().unwrap();
    let slots = cfg.geometry.lebs() as u64 * cfg.slots_per_leb() as u64;
    let header = StoreHeader::new(spec, vec![0], &cfg, slots);
    drop(Store::open(dir, &header).unwrap());
}

/// Every file of a store, by path.
fn image(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(image(&p));
        } else {
            out.insert(p.clone(), std::fs::read(&p).unwrap());
        }
    }
    out
}

fn format_of(store: &str) -> String {
    let out = Command::new(VSL)
        .args(["status", store, "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v["devices"][0]["format"].as_str().unwrap().to_string()
}

#[test]
fn forged_format_requests_are_refused_and_change_nothing() {
    let rig = Rig::new("serve-forged");
    let root = rig.root.clone();
    let store = root.join("store");
    make_store(&store);
    let store_s = store.to_str().unwrap().to_string();
    let srv = rig.serve(&[]);
    let a = srv.addr.as_str();
    let own = format!("http://{a}");
    let before = image(&store);
    let rebound = format!("evil.example:{}", a.rsplit(':').next().unwrap());
    let form = |token: &str| {
        format!("store={store_s}&preset=max-write&capacity=&overprovision=50%25&sector_size=512&confirm={store_s}&token={token}")
    };
    type Forged<'a> = (&'a str, Vec<(&'a str, &'a str)>, String);
    let forged: Vec<Forged> = vec![
        (
            "another site's form (Origin evil.example), even with the token",
            vec![("Host", a), ("Origin", "http://evil.example")],
            form(&srv.token),
        ),
        (
            "a rebound Host (DNS rebinding)",
            vec![("Host", "evil.example"), ("Origin", "http://evil.example")],
            form(&srv.token),
        ),
        (
            "a rebound Host with the server's port",
            vec![("Host", &rebound)],
            form(&srv.token),
        ),
        (
            "same origin, no token",
            vec![("Host", a), ("Origin", &own)],
            form(""),
        ),
        (
            "same origin, wrong token",
            vec![("Host", a), ("Origin", &own)],
            form("0123"),
        ),
        (
            "no Origin nor Referer, token only in the form",
            vec![("Host", a)],
            form(&srv.token),
        ),
        (
            "a sandboxed page (Origin null)",
            vec![("Host", a), ("Origin", "null")],
            form(&srv.token),
        ),
        (
            "another site's Referer",
            vec![("Host", a), ("Referer", "http://evil.example/x")],
            form(&srv.token),
        ),
        (
            "a wrong script token header",
            vec![("Host", a), ("X-OpenVSL-Token", "not-the-token")],
            form(""),
        ),
        ("no Host at all", vec![("Origin", &own)], form(&srv.token)),
    ];
    for (what, headers, body) in &forged {
        let r = http(a, "POST", "/format", headers, body);
        assert_eq!(r.code, 403, "{what}: {} {}", r.code, r.body);
        assert_eq!(r.body.trim().lines().count(), 1, "{what}: {}", r.body);
        assert!(image(&store) == before, "{what}: the store changed");
    }
    // A rebinding page cannot read either.
    let r = http(a, "GET", "/api/status", &[("Host", "evil.example")], "");
    assert_eq!(r.code, 403, "{}", r.body);
    let r = http(a, "GET", "/", &[("Host", "evil.example:80")], "");
    assert_eq!(r.code, 403, "{}", r.body);

    // The security headers, on pages and refusals alike.
    let page = http(
        a,
        "GET",
        &format!("/format?store={store_s}"),
        &[("Host", a)],
        "",
    );
    assert_eq!(page.code, 200, "{}", page.body);
    for r in [
        &page,
        &http(a, "GET", "/api/status", &[("Host", "evil.example")], ""),
    ] {
        let csp = r.header("content-security-policy").unwrap_or("");
        assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
        assert!(
            csp.contains("script-src 'self'") && !csp.contains("unsafe"),
            "{csp}"
        );
        assert_eq!(r.header("x-frame-options"), Some("DENY"));
        assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
    }
    // No inline script for the CSP to allow: the page loads /static/app.js.
    assert!(page
        .body
        .contains("<script src=\"/static/app.js\"></script>"));
    assert_eq!(page.body.matches("<script").count(), 1, "{}", page.body);
    let js = http(a, "GET", "/static/app.js", &[("Host", a)], "");
    assert!(
        js.code == 200 && js.body.contains("data-src"),
        "{}",
        js.body
    );

    // The page's own form: same origin, the token it carries.
    let token = page
        .body
        .split("name=\"token\" value=\"")
        .nth(1)
        .and_then(|t| t.split('"').next())
        .unwrap();
    assert_eq!(token, srv.token);
    let body =
        format!("store={store_s}&preset=hp&sector_size=4096&confirm={store_s}&token={token}");
    let referer = format!("{own}/format?store={store_s}");
    let r = http(
        a,
        "POST",
        "/format",
        &[("Host", a), ("Origin", &own), ("Referer", &referer)],
        &body,
    );
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(format_of(&store_s), "hp");
    // A script: the token in a header, no Origin.
    let after_hp = image(&store);
    let body = format!("store={store_s}&preset=stock&sector_size=4096&confirm={store_s}");
    let r = http(
        a,
        "POST",
        "/format",
        &[("Host", a), ("X-OpenVSL-Token", &srv.token)],
        &body,
    );
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(format_of(&store_s), "stock");
    assert!(image(&store) != after_hp);
    // The confirmation still guards a request that passes the checks.
    let body = format!("store={store_s}&preset=hp&sector_size=4096&confirm=nope");
    let r = http(
        a,
        "POST",
        "/format",
        &[("Host", a), ("X-OpenVSL-Token", &srv.token)],
        &body,
    );
    assert_eq!(r.code, 400, "{}", r.body);
}

#[test]
fn read_only_serves_no_format() {
    let rig = Rig::new("serve-ro");
    let root = rig.root.clone();
    let store = root.join("store");
    make_store(&store);
    let store_s = store.to_str().unwrap().to_string();
    let srv = rig.serve(&["--read-only"]);
    let a = srv.addr.as_str();
    let own = format!("http://{a}");
    let before = image(&store);
    let r = http(
        a,
        "GET",
        &format!("/format?store={store_s}"),
        &[("Host", a)],
        "",
    );
    assert_eq!(r.code, 404, "{}", r.body);
    let body = format!("store={store_s}&preset=hp&sector_size=4096&confirm={store_s}");
    let r = http(
        a,
        "POST",
        "/format",
        &[
            ("Host", a),
            ("Origin", &own),
            ("X-OpenVSL-Token", &srv.token),
        ],
        &body,
    );
    assert!(r.code == 404 || r.code == 405, "{} {}", r.code, r.body);
    let r = http(
        a,
        "GET",
        &format!("/device?store={store_s}&member=0"),
        &[("Host", a)],
        "",
    );
    assert_eq!(r.code, 200, "{}", r.body);
    assert!(
        !r.body.contains("/format"),
        "the device page links to /format"
    );
    assert!(image(&store) == before);
}

#[test]
fn off_loopback_needs_a_token_file() {
    for listen in ["0.0.0.0:0", "[::]:0"] {
        let out = Command::new(VSL)
            .args(["serve", "--listen", listen])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{listen} started without a token");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains("--token-file"), "{err}");
    }
    // A token file others can read is refused too.
    let rig = Rig::new("serve-tokperm");
    let root = rig.root.clone();
    let f = root.join("token");
    std::fs::write(&f, "0123456789abcdef0123456789abcdef\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = Command::new(VSL)
        .args(["serve", "--listen", "127.0.0.1:0", "--token-file"])
        .arg(&f)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("chmod 600"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn token_file_requires_authentication() {
    let rig = Rig::new("serve-auth");
    let root = rig.root.clone();
    let f = root.join("token");
    let secret = "s3cret-token-of-the-operator-0123";
    std::fs::write(&f, format!("{secret}\n")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
    let srv = rig.serve(&["--token-file", f.to_str().unwrap()]);
    let a = srv.addr.as_str();
    let own = format!("http://{a}");
    let bearer = format!("Bearer {secret}");
    let r = http(a, "GET", "/api/status", &[("Host", a)], "");
    assert_eq!(r.code, 401, "{}", r.body);
    assert!(r.header("www-authenticate").is_some());
    let r = http(
        a,
        "GET",
        "/metrics",
        &[("Host", a), ("Authorization", "Bearer wrong")],
        "",
    );
    assert_eq!(r.code, 401, "{}", r.body);
    // The API answers the bearer token (503 until the first sample).
    let ok = (0..50).any(|_| {
        let r = http(
            a,
            "GET",
            "/api/status",
            &[("Host", a), ("Authorization", &bearer)],
            "",
        );
        assert!(r.code == 200 || r.code == 503, "{} {}", r.code, r.body);
        std::thread::sleep(Duration::from_millis(100));
        r.code == 200
    });
    assert!(ok, "no status with the bearer token");
    // Pages send a browser to the login form.
    let r = http(a, "GET", "/", &[("Host", a)], "");
    assert!((300..400).contains(&r.code), "{} {}", r.code, r.body);
    assert_eq!(r.header("location"), Some("/login"));
    let login = http(a, "GET", "/login", &[("Host", a)], "");
    assert_eq!(login.code, 200);
    let token = login
        .body
        .split("name=\"token\" value=\"")
        .nth(1)
        .and_then(|t| t.split('"').next())
        .unwrap()
        .to_string();
    let r = http(
        a,
        "POST",
        "/login",
        &[("Host", a), ("Origin", &own)],
        &format!("token={token}&password=wrong-password-xyz"),
    );
    assert_eq!(r.code, 401, "{}", r.body);
    assert!(r.header("set-cookie").is_none());
    let r = http(
        a,
        "POST",
        "/login",
        &[("Host", a), ("Origin", &own)],
        &format!("token={token}&password={secret}"),
    );
    assert!((300..400).contains(&r.code), "{} {}", r.code, r.body);
    let cookie = r.header("set-cookie").unwrap().to_string();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    let session = cookie.split(';').next().unwrap();
    let r = http(a, "GET", "/", &[("Host", a), ("Cookie", session)], "");
    assert_eq!(r.code, 200, "{}", r.body);
    // A cross-site login attempt is refused like any other forged POST.
    let r = http(
        a,
        "POST",
        "/login",
        &[("Host", a), ("Origin", "http://evil.example")],
        &format!("token={token}&password={secret}"),
    );
    assert_eq!(r.code, 403, "{}", r.body);
}

/// HTTPS with --tls-cert/--tls-key (a self-signed certificate made with
/// openssl; curl is the client).
#[test]
fn tls_serves_https() {
    let have = |t: &str| {
        Command::new(t)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
            || Command::new(t)
                .arg("version")
                .output()
                .is_ok_and(|o| o.status.success())
    };
    if !have("openssl") || !have("curl") {
        eprintln!("\n!!!!! SKIPPED tls_serves_https: openssl or curl is not installed (scripts/setup.sh installs them) !!!!!\n");
        println!("SKIPPED tls_serves_https");
        return;
    }
    let rig = Rig::new("serve-tls");
    let root = rig.root.clone();
    let (cert, key) = (root.join("cert.pem"), root.join("key.pem"));
    let gen = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
            "-keyout",
        ])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .unwrap();
    assert!(
        gen.status.success(),
        "{}",
        String::from_utf8_lossy(&gen.stderr)
    );
    // A bad key file: one line, non-zero.
    let out = Command::new(VSL)
        .args(["serve", "--listen", "127.0.0.1:0", "--tls-cert"])
        .arg(&cert)
        .arg("--tls-key")
        .arg(&cert)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("--tls-key"), "{err}");
    let srv = rig.serve(&[
        "--tls-cert",
        cert.to_str().unwrap(),
        "--tls-key",
        key.to_str().unwrap(),
    ]);
    let url = format!("https://{}/api/status", srv.addr);
    let ok = (0..50).any(|_| {
        let out = Command::new("curl")
            .args(["-sk", "-o", "/dev/null", "-w", "%{http_code}", &url])
            .output()
            .unwrap();
        std::thread::sleep(Duration::from_millis(100));
        out.stdout == b"200"
    });
    assert!(ok, "no HTTPS answer from {url}");
    // Plain HTTP on the TLS port gets no page.
    let out = Command::new("curl")
        .args([
            "-s",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            &format!("http://{}/api/status", srv.addr),
        ])
        .output()
        .unwrap();
    assert_ne!(out.stdout, b"200");
}
