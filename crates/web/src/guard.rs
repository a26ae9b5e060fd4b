//! What stands between a request and a card: [`Guard`] and its middleware
//! [`check`].
//!
//! - **Host**: every request's `Host` must name the address served, a
//!   loopback name, the machine's host name or an `--allowed-host`, with
//!   the port served. A DNS-rebinding page reaches the server under its
//!   own name and is refused, so it can neither read nor change anything.
//! - **Mutating requests** (any method but GET/HEAD): a same-origin
//!   `Origin` (or, without one, `Referer`) and the per-process token, in
//!   the form (field `token`, put there by the page) or in a header
//!   (`X-OpenVSL-Token`, or `Authorization: Bearer` with `--token-file`).
//!   Another site's page can send a form POST, but neither from this
//!   origin nor with the token; it cannot set a header without a CORS
//!   preflight, which this server never grants.
//! - **Authentication** (`--token-file`, required off loopback): the API
//!   takes `Authorization: Bearer TOKEN`; pages redirect to `/login`,
//!   whose form sets an HttpOnly, SameSite=Strict session cookie.
//! - **Headers**: every response carries a Content-Security-Policy that
//!   allows only this origin's script and style (reports get a sandbox),
//!   `X-Frame-Options: DENY`, `X-Content-Type-Options: nosniff` and
//!   `Referrer-Policy: same-origin`.

use anyhow::{bail, Context, Result};
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use std::collections::HashSet;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use subtle::ConstantTimeEq;

/// The header scripts send the per-process token in.
pub const TOKEN_HEADER: &str = "x-openvsl-token";
/// The session cookie set by `/login`.
const SESSION_COOKIE: &str = "openvsl_session";
/// Largest form body a mutating request may carry.
const FORM_LIMIT_BYTES: usize = 64 * 1024;

/// The CSP of the dashboard's own pages: scripts and styles only from
/// `/static/`, no framing, forms only to this origin.
const CSP_PAGES: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";
/// Review reports are files written by `vsl review` (inline styles and
/// scripts): they run sandboxed, in an origin of their own, so a script
/// in one cannot act on the dashboard.
const CSP_REPORTS: &str =
    "sandbox allow-scripts allow-popups; default-src 'self' 'unsafe-inline' data:; \
frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/// The server's security settings and secrets, for the life of the process.
pub struct Guard {
    /// Per-process token every mutating request must carry.
    token: String,
    /// `--token-file`'s token: authentication required when set.
    bearer: Option<String>,
    /// Sessions opened by `/login`.
    sessions: Mutex<HashSet<String>>,
    /// Host names (lower case, without brackets) a request may name.
    hosts: Vec<String>,
    /// `--allowed-host NAME:PORT` entries (lower case).
    host_ports: Vec<String>,
    port: u16,
    tls: bool,
    pub read_only: bool,
}

/// 32 random bytes as hex.
pub fn random_token() -> Result<String> {
    let mut b = [0u8; 32];
    getrandom::fill(&mut b).map_err(|e| anyhow::anyhow!("no random numbers: {e}"))?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

/// Constant-time string equality.
fn same(a: &str, b: &str) -> bool {
    a.as_bytes().ct_eq(b.as_bytes()).into()
}

/// Reads `--token-file`: refuses a file other users can read, and a token
/// too short to resist guessing.
pub fn read_token_file(path: &Path) -> Result<String> {
    use std::os::unix::fs::PermissionsExt;
    let meta =
        std::fs::metadata(path).with_context(|| format!("--token-file {}", path.display()))?;
    if meta.permissions().mode() & 0o077 != 0 {
        bail!(
            "--token-file {}: other users can read it (chmod 600 it)",
            path.display()
        );
    }
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("--token-file {}", path.display()))?;
    let token = text.trim().to_string();
    if token.len() < 16 || token.chars().any(|c| c.is_whitespace() || c.is_control()) {
        bail!(
            "--token-file {}: the token must be one word of at least 16 characters",
            path.display()
        );
    }
    Ok(token)
}

/// Splits a `Host` header into (lower-case host without brackets, port).
fn split_host(h: &str) -> Option<(String, Option<u16>)> {
    let h = h.trim().to_ascii_lowercase();
    if let Some(rest) = h.strip_prefix('[') {
        let (ip, tail) = rest.split_once(']')?;
        let port = match tail {
            "" => None,
            t => Some(t.strip_prefix(':')?.parse().ok()?),
        };
        return Some((ip.to_string(), port));
    }
    match h.rsplit_once(':') {
        Some((name, p)) if !name.contains(':') => Some((name.to_string(), Some(p.parse().ok()?))),
        Some(_) => None,
        None => Some((h, None)),
    }
}

fn machine_hostname() -> Option<String> {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its length; gethostname NUL-terminates
    // within it or truncates.
    if unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } != 0 {
        return None;
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    Some(String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase())
}

impl Guard {
    /// `allowed`: `--allowed-host` entries, `NAME` (with the port served)
    /// or `NAME:PORT` (a reverse proxy's address).
    pub fn new(
        bound: SocketAddr,
        allowed: &[String],
        bearer: Option<String>,
        tls: bool,
        read_only: bool,
    ) -> Result<Guard> {
        let mut hosts: Vec<String> = ["localhost", "127.0.0.1", "::1"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        if !bound.ip().is_unspecified() {
            hosts.push(bound.ip().to_string());
        }
        if bearer.is_some() {
            // Off loopback, the machine's own name is how people reach it.
            hosts.extend(machine_hostname());
        }
        let mut host_ports = Vec::new();
        for a in allowed {
            let Some((h, p)) = split_host(a).filter(|(h, _)| !h.is_empty()) else {
                bail!("--allowed-host '{a}' is not a host name or NAME:PORT");
            };
            match p {
                Some(p) => host_ports.push(format!("{h}:{p}")),
                None => hosts.push(h),
            }
        }
        Ok(Guard {
            token: random_token()?,
            bearer,
            sessions: Mutex::new(HashSet::new()),
            hosts,
            host_ports,
            port: bound.port(),
            tls,
            read_only,
        })
    }

    /// The per-process token the pages put in their forms.
    pub fn token(&self) -> &str {
        &self.token
    }

    fn scheme(&self) -> &'static str {
        if self.tls {
            "https"
        } else {
            "http"
        }
    }

    /// The request's `Host` if it is one this server answers to.
    fn allowed_host<'a>(&self, headers: &'a HeaderMap) -> Option<&'a str> {
        let raw = headers.get(header::HOST)?.to_str().ok()?;
        let (h, p) = split_host(raw)?;
        if let Some(p) = p {
            if self.host_ports.iter().any(|hp| *hp == format!("{h}:{p}")) {
                return Some(raw);
            }
        }
        let default_port = if self.tls { 443 } else { 80 };
        let port_ok = p.unwrap_or(default_port) == self.port;
        (port_ok && self.hosts.contains(&h)).then_some(raw)
    }

    /// True when `Origin` (else `Referer`) is this origin; None when the
    /// request has neither.
    fn same_origin(&self, headers: &HeaderMap, host: &str) -> Option<bool> {
        let origin = format!("{}://{}", self.scheme(), host.to_ascii_lowercase());
        let get = |n: header::HeaderName| {
            headers
                .get(n)
                .map(|v| v.to_str().unwrap_or("\u{0}").to_ascii_lowercase())
        };
        if let Some(o) = get(header::ORIGIN) {
            return Some(o == origin);
        }
        get(header::REFERER).map(|r| r == origin || r.starts_with(&format!("{origin}/")))
    }

    fn bearer_ok(&self, headers: &HeaderMap) -> bool {
        let (Some(want), Some(got)) = (
            &self.bearer,
            headers
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer ")),
        ) else {
            return false;
        };
        same(got.trim(), want)
    }

    fn header_token_ok(&self, headers: &HeaderMap) -> bool {
        headers
            .get(TOKEN_HEADER)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| same(v.trim(), &self.token))
    }

    fn session_ok(&self, headers: &HeaderMap) -> bool {
        let Some(id) = cookie(headers, SESSION_COOKIE) else {
            return false;
        };
        let s = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        s.iter().any(|k| same(k, &id))
    }

    /// Opens a session if `password` is the `--token-file` token.
    pub fn login(&self, password: &str) -> Option<String> {
        let want = self.bearer.as_deref()?;
        if !same(password.trim(), want) {
            return None;
        }
        let id = random_token().ok()?;
        let mut s = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        s.insert(id.clone());
        Some(id)
    }

    /// The `Set-Cookie` value of a session.
    pub fn session_cookie(&self, id: &str) -> String {
        let secure = if self.tls { "; Secure" } else { "" };
        format!("{SESSION_COOKIE}={id}; Path=/; HttpOnly; SameSite=Strict{secure}")
    }
}

fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_string())
}

fn refuse(status: StatusCode, why: &str) -> Response {
    (status, format!("{status}: {why}\n")).into_response()
}

/// Paths served without authentication: the login page and the assets it
/// needs.
fn public(path: &str) -> bool {
    path == "/login" || path.starts_with("/static/")
}

/// The middleware: Host, authentication, origin and token, then the
/// security headers on whatever the handler answered.
pub async fn check(State(g): State<Arc<Guard>>, req: Request, next: Next) -> Response {
    let reports = req.uri().path().starts_with("/reports/");
    let mut resp = match admit(&g, req).await {
        Ok(req) => next.run(req).await,
        Err(r) => r,
    };
    let h = resp.headers_mut();
    let csp = if reports { CSP_REPORTS } else { CSP_PAGES };
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(csp),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    resp
}

/// The request, let through (its body restored), or the refusal.
async fn admit(g: &Guard, req: Request) -> Result<Request, Response> {
    let headers = req.headers();
    let Some(host) = g.allowed_host(headers).map(str::to_string) else {
        return Err(refuse(
            StatusCode::FORBIDDEN,
            "the Host header does not name this server (see vsl serve --allowed-host)",
        ));
    };
    let path = req.uri().path().to_string();
    let bearer = g.bearer_ok(headers);
    if g.bearer.is_some() && !bearer && !g.session_ok(headers) && !public(&path) {
        let wants_page = req.method() == Method::GET
            && !path.starts_with("/api/")
            && path != "/metrics"
            && !path.starts_with("/fragment/");
        if wants_page {
            return Err(Redirect::to("/login").into_response());
        }
        let mut r = refuse(
            StatusCode::UNAUTHORIZED,
            "authentication required: send Authorization: Bearer TOKEN (the --token-file token)",
        );
        r.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer realm=\"openvsl\""),
        );
        return Err(r);
    }
    if matches!(*req.method(), Method::GET | Method::HEAD) {
        return Ok(req);
    }
    let origin = g.same_origin(headers, &host);
    if origin == Some(false) {
        return Err(refuse(
            StatusCode::FORBIDDEN,
            "cross-origin request refused (Origin/Referer is not this server)",
        ));
    }
    if bearer || g.header_token_ok(headers) {
        return Ok(req);
    }
    if origin.is_none() {
        return Err(refuse(
            StatusCode::FORBIDDEN,
            "a form needs a same-origin Origin or Referer; scripts send the X-OpenVSL-Token header",
        ));
    }
    // A same-origin form: the token must be among its fields.
    let (parts, body) = req.into_parts();
    let bytes = axum::body::to_bytes(body, FORM_LIMIT_BYTES)
        .await
        .map_err(|_| refuse(StatusCode::PAYLOAD_TOO_LARGE, "form too large"))?;
    let token_ok =
        form_urlencoded::parse(&bytes).any(|(k, v)| k == "token" && same(v.trim(), &g.token));
    if !token_ok {
        return Err(refuse(
            StatusCode::FORBIDDEN,
            "missing or wrong token (reload the page and submit again)",
        ));
    }
    Ok(Request::from_parts(parts, Body::from(bytes)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_split() {
        assert_eq!(
            split_host("LocalHost:8080"),
            Some(("localhost".into(), Some(8080)))
        );
        assert_eq!(split_host("[::1]:80"), Some(("::1".into(), Some(80))));
        assert_eq!(split_host("[::1]"), Some(("::1".into(), None)));
        assert_eq!(
            split_host("example.org"),
            Some(("example.org".into(), None))
        );
        assert_eq!(split_host("a:b"), None);
        assert_eq!(split_host("::1"), None);
    }

    fn guard(allowed: &[&str]) -> Guard {
        let allowed: Vec<String> = allowed.iter().map(|s| s.to_string()).collect();
        Guard::new(
            "127.0.0.1:8080".parse().unwrap(),
            &allowed,
            None,
            false,
            false,
        )
        .unwrap()
    }

    fn with_host(h: &str) -> HeaderMap {
        let mut m = HeaderMap::new();
        m.insert(header::HOST, HeaderValue::from_str(h).unwrap());
        m
    }

    #[test]
    fn only_served_names_and_port() {
        let g = guard(&["dash.lan", "proxy.lan:443"]);
        for ok in [
            "127.0.0.1:8080",
            "localhost:8080",
            "[::1]:8080",
            "dash.lan:8080",
            "proxy.lan:443",
        ] {
            assert!(g.allowed_host(&with_host(ok)).is_some(), "{ok}");
        }
        for bad in [
            "evil.example",
            "evil.example:8080",
            "127.0.0.1:8081",
            "localhost",
            "dash.lan:80",
            "proxy.lan:8080",
        ] {
            assert!(g.allowed_host(&with_host(bad)).is_none(), "{bad}");
        }
        assert!(g.allowed_host(&HeaderMap::new()).is_none());
        assert!(Guard::new(
            "127.0.0.1:1".parse().unwrap(),
            &[":9".into()],
            None,
            false,
            false
        )
        .is_err());
    }

    #[test]
    fn origin_must_match_scheme_host_and_port() {
        let g = guard(&[]);
        let h = |o: Option<&str>, r: Option<&str>| {
            let mut m = with_host("127.0.0.1:8080");
            if let Some(o) = o {
                m.insert(header::ORIGIN, HeaderValue::from_str(o).unwrap());
            }
            if let Some(r) = r {
                m.insert(header::REFERER, HeaderValue::from_str(r).unwrap());
            }
            g.same_origin(&m, "127.0.0.1:8080")
        };
        assert_eq!(h(Some("http://127.0.0.1:8080"), None), Some(true));
        assert_eq!(
            h(Some("http://evil.example"), Some("http://127.0.0.1:8080/")),
            Some(false)
        );
        assert_eq!(h(Some("null"), None), Some(false));
        assert_eq!(h(Some("https://127.0.0.1:8080"), None), Some(false));
        assert_eq!(
            h(None, Some("http://127.0.0.1:8080/format?store=x")),
            Some(true)
        );
        assert_eq!(h(None, Some("http://127.0.0.1:80800/")), Some(false));
        assert_eq!(h(None, None), None);
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(same("abc", "abc"));
        assert!(!same("abc", "abd"));
        assert!(!same("abc", "abcd"));
        assert!(!same("", "a"));
        let a = random_token().unwrap();
        assert_eq!(a.len(), 64);
        assert_ne!(a, random_token().unwrap());
    }

    #[test]
    fn token_file_must_be_private_and_long() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("vsl-guard-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("t");
        std::fs::write(&f, "0123456789abcdef0123\n").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = read_token_file(&f).unwrap_err().to_string();
        assert!(e.contains("chmod 600"), "{e}");
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(read_token_file(&f).unwrap(), "0123456789abcdef0123");
        std::fs::write(&f, "short").unwrap();
        assert!(read_token_file(&f)
            .unwrap_err()
            .to_string()
            .contains("16 characters"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
