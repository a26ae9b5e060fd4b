//! Issue 32: stable-Rust fuzzing of what reaches `vsl serve` from outside.
//! Random and mutated paths, query strings, form bodies and headers, sent
//! in-process to the real router behind its guard: the server never
//! panics (no 500), refuses bad input with a 4xx whose body is one line,
//! and no POST without the token gets past the guard. `FUZZ_CASES`
//! (default 3000) and `FUZZ_SEED` set the run; a failure prints the seed.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use sim::Prng;
use std::sync::Arc;
use tower::ServiceExt;
use web::guard::Guard;

fn cases() -> u64 {
    std::env::var("FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3000)
}

fn base_seed() -> u64 {
    std::env::var("FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5e_a7e)
}

/// A seed string with a few bytes replaced, inserted, deleted or appended.
fn mutate(prng: &mut Prng, seeds: &[&str], alphabet: &[u8]) -> Vec<u8> {
    let mut s = seeds[prng.below(seeds.len() as u64) as usize]
        .as_bytes()
        .to_vec();
    for _ in 0..1 + prng.below(5) {
        let pick = |p: &mut Prng| -> u8 {
            if p.below(6) == 0 {
                p.below(256) as u8
            } else {
                alphabet[p.below(alphabet.len() as u64) as usize]
            }
        };
        let at = prng.below(s.len() as u64 + 1) as usize;
        match prng.below(5) {
            0 if at < s.len() => s[at] = pick(prng),
            1 => s.insert(at, pick(prng)),
            2 if at < s.len() => {
                s.remove(at);
            }
            3 => s.truncate(at),
            _ => s.extend((0..prng.below(16)).map(|_| pick(prng))),
        }
    }
    s
}

const PATHS: &[&str] = &[
    "/",
    "/fragment/overview",
    "/device?store=/tmp/x&member=0",
    "/fragment/device?store=%2Ftmp&member=1",
    "/format?store=/tmp/nostore",
    "/reports/",
    "/reports/a/index.html",
    "/reports/../etc/passwd",
    "/api/status",
    "/metrics",
    "/login",
    "/static/app.js",
];

const FORMS: &[&str] = &[
    "store=/tmp/x&preset=hp&capacity=&overprovision=&sector_size=4096&confirm=/tmp/y",
    "store=/tmp/x&preset=stock&sector_size=512&confirm=",
    "password=abc&token=",
    "garbage",
    "",
];

const HEADERS: &[(&str, &str)] = &[
    ("origin", "http://127.0.0.1:8080"),
    ("origin", "http://evil.example"),
    ("referer", "http://127.0.0.1:8080/format"),
    ("cookie", "openvsl_session=abc; x=y"),
    ("authorization", "Bearer abc"),
    ("x-openvsl-token", "abc"),
    ("content-type", "application/x-www-form-urlencoded"),
    ("content-type", "text/plain"),
];

fn request(prng: &mut Prng) -> Option<(String, String, Request<Body>)> {
    let alphabet = b"/?&=%.:_-+abcdefgmprstvxyz0123456789 \"'<>#;[]{}\\";
    let path = mutate(prng, PATHS, alphabet);
    let path = String::from_utf8_lossy(&path).into_owned();
    let method = ["GET", "POST", "HEAD", "PUT", "DELETE"][prng.below(5) as usize];
    let mut b = Request::builder().method(method).uri(&path);
    let hosts = [
        "127.0.0.1:8080",
        "localhost:8080",
        "evil.example",
        "127.0.0.1:8080:1",
        "[::1]:8080",
    ];
    b = b.header("host", hosts[prng.below(hosts.len() as u64) as usize]);
    for _ in 0..prng.below(4) {
        let (k, v) = HEADERS[prng.below(HEADERS.len() as u64) as usize];
        let v = mutate(prng, &[v], alphabet);
        if let Ok(v) = axum::http::HeaderValue::from_bytes(&v) {
            b = b.header(k, v);
        }
    }
    let body = mutate(prng, FORMS, alphabet);
    let summary = format!(
        "{method} {path:?} body {:?}",
        String::from_utf8_lossy(&body)
    );
    // Paths the http crate rejects never reach a server.
    let req = b.body(Body::from(body)).ok()?;
    Some((method.to_string(), summary, req))
}

#[tokio::test(flavor = "current_thread")]
async fn random_requests_never_panic_and_get_one_line_refusals() {
    let seed = base_seed();
    let mut prng = Prng::from_seed(seed);
    let reports = std::env::temp_dir().join(format!("vsl-fuzz-http-{}", std::process::id()));
    std::fs::create_dir_all(reports.join("a")).unwrap();
    std::fs::write(reports.join("a/index.html"), "<p>report</p>").unwrap();
    let guard =
        Arc::new(Guard::new("127.0.0.1:8080".parse().unwrap(), &[], None, false, false).unwrap());
    let app = web::router_for(reports.clone(), guard);
    let mut counts = std::collections::BTreeMap::new();
    for case in 0..cases() {
        let Some((method, what, req)) = request(&mut prng) else {
            continue;
        };
        let resp = app.clone().oneshot(req).await.unwrap();
        let status = resp.status();
        *counts.entry(status.as_u16()).or_insert(0u64) += 1;
        let body = axum::body::to_bytes(resp.into_body(), 1 << 24)
            .await
            .unwrap();
        let body = String::from_utf8_lossy(&body);
        let ctx = || format!("FUZZ_SEED={seed} case {case}: {what} -> {status}: {body}");
        assert!(status != StatusCode::INTERNAL_SERVER_ERROR, "{}", ctx());
        // No request here carries the token, so nothing changes a card.
        if method != "GET" && method != "HEAD" {
            assert!(!status.is_success(), "{}", ctx());
        }
        if status.is_client_error() && method != "HEAD" {
            assert_eq!(body.trim().lines().count(), 1, "{}", ctx());
        }
    }
    println!("FUZZ_SEED={seed}: statuses {counts:?}");
    assert!(
        counts.keys().any(|c| (200..300).contains(c)),
        "no request was let through: {counts:?}"
    );
    assert!(
        counts.contains_key(&403),
        "no request was refused: {counts:?}"
    );
    let _ = std::fs::remove_dir_all(&reports);
}
