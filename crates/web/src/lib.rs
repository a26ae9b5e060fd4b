//! `vsl serve`: the live web dashboard.
//!
//! - [`ServeArgs`] / [`run_serve`]: the command (127.0.0.1:8080 by default).
//! - `history`: a sampler polls `vsl status` (every attached card and
//!   every running simulation, [`blockdev::manage::status_doc`]) once a
//!   second and keeps each device's history.
//! - `chart`: server-rendered SVG charts; `pages`: the HTML. Pages refresh
//!   their live parts once a second with a few lines of inline script
//!   (`fetch` of an HTML fragment), so the dashboard works offline.
//!
//! Routes: `/` (overview: runs and cards with live bandwidth, IOPS and
//! latency charts), `/device?store=&member=` (status fields, lifetime,
//! endurance and temperature history), `/format?store=` (format with a
//! confirmation), `/reports/` (review reports under `--reports`),
//! `/api/status` (the `vsl status --json` document).
//! `/metrics` (Prometheus exposition, [`metrics`]), `/login` (with
//! `--token-file`), `/static/` (the pages' script and style).
//!
//! Every request passes [`guard::check`] first: Host, authentication,
//! same origin and the per-process token for anything that changes a card,
//! and the security headers (docs/ARCHITECTURE.md, "The dashboard's
//! defences").

mod chart;
pub mod guard;
mod history;
pub mod metrics;
mod pages;

use anyhow::{Context, Result};
use axum::extract::{Path as UrlPath, Query, State};
use axum::http::{header, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::{Form, Router};
use clap::Args;
use guard::Guard;
use history::History;
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// `vsl serve`.
#[derive(Args, Debug, Clone)]
pub struct ServeArgs {
    /// Address to listen on (only this machine by default). A non-loopback
    /// address needs --token-file.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: String,
    /// Directory whose review reports (`*/index.html`) are listed and served.
    #[arg(long, default_value = ".")]
    pub reports: PathBuf,
    /// A further name the server answers to in the Host header, `NAME` (with
    /// the port served) or `NAME:PORT` (behind a proxy); repeatable. Loopback
    /// names and the address served are always allowed.
    #[arg(long = "allowed-host", value_name = "HOST")]
    pub allowed_hosts: Vec<String>,
    /// File holding a secret token (one word, 16+ characters, mode 600):
    /// requires `Authorization: Bearer TOKEN` of the API and a login of the
    /// pages. Required to listen off loopback.
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Serve HTTPS with this PEM certificate (chain) and --tls-key.
    #[arg(long, value_name = "PEM", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert.
    #[arg(long, value_name = "PEM", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Serve no endpoint that changes a card (no /format).
    #[arg(long)]
    pub read_only: bool,
}

pub(crate) struct App {
    history: Mutex<History>,
    reports: PathBuf,
    guard: Arc<Guard>,
}

type Shared = Arc<App>;

/// An error page with its HTTP status.
pub(crate) struct WebError(StatusCode, String);

impl IntoResponse for WebError {
    fn into_response(self) -> Response {
        (self.0, format!("{}: {}\n", self.0, self.1)).into_response()
    }
}

fn bad(msg: impl Into<String>) -> WebError {
    WebError(StatusCode::BAD_REQUEST, msg.into())
}

fn not_found(msg: impl Into<String>) -> WebError {
    WebError(StatusCode::NOT_FOUND, msg.into())
}

/// Runs the dashboard until the process is killed.
pub fn run_serve(a: ServeArgs) -> Result<()> {
    let addr: std::net::SocketAddr = a.listen.parse().with_context(|| {
        format!(
            "--listen: '{}' is not an address like 127.0.0.1:8080",
            a.listen
        )
    })?;
    if !addr.ip().is_loopback() && a.token_file.is_none() {
        anyhow::bail!(
            "--listen {addr} is reachable from other machines: give --token-file FILE (and \
             --tls-cert/--tls-key), or keep 127.0.0.1 and use an SSH tunnel"
        );
    }
    let bearer = a
        .token_file
        .as_deref()
        .map(guard::read_token_file)
        .transpose()?;
    let tls = match (&a.tls_cert, &a.tls_key) {
        (Some(c), Some(k)) => Some(tls_config(c, k)?),
        _ => None,
    };
    let listener =
        std::net::TcpListener::bind(addr).with_context(|| format!("cannot listen on {addr}"))?;
    listener.set_nonblocking(true).context("listening socket")?;
    let bound = listener.local_addr().context("listening address")?;
    let guard = Arc::new(Guard::new(
        bound,
        &a.allowed_hosts,
        bearer,
        tls.is_some(),
        a.read_only,
    )?);
    let token_file = write_script_token(bound, guard.token());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the server runtime")?;
    rt.block_on(async move {
        let app = Arc::new(App {
            history: Mutex::new(History::default()),
            reports: a.reports,
            guard,
        });
        tokio::spawn(history::sample_forever(app.clone()));
        let scheme = if tls.is_some() { "https" } else { "http" };
        // Whoever started the server may close its stdout: the server
        // keeps serving (println! would panic on the broken pipe).
        use std::io::Write;
        let mut out = std::io::stdout();
        let _ = writeln!(out, "vsl serve: dashboard on {scheme}://{bound}/");
        let _ = match &token_file {
            Some(p) => writeln!(
                out,
                "vsl serve: scripts send the header X-OpenVSL-Token: <the token in {}>",
                p.display()
            ),
            None => writeln!(
                out,
                "vsl serve: could not write the scripts' token file; scripts use --token-file's bearer token"
            ),
        };
        let _ = out.flush();
        let routes = router(app).into_make_service();
        match tls {
            Some(cfg) => axum_server::from_tcp_rustls(listener, cfg)
                .context("serving")?
                .serve(routes)
                .await
                .context("serving"),
            None => {
                let l = tokio::net::TcpListener::from_std(listener).context("listening socket")?;
                axum::serve(l, routes).await.context("serving")
            }
        }
    })
}

/// The TLS configuration from PEM files, checked before listening.
fn tls_config(cert: &Path, key: &Path) -> Result<axum_server::tls_rustls::RustlsConfig> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let _ = rustls::crypto::ring::default_provider().install_default();
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .and_then(|i| i.collect::<Result<_, _>>())
        .map_err(|e| anyhow::anyhow!("--tls-cert {}: {e}", cert.display()))?;
    if certs.is_empty() {
        anyhow::bail!("--tls-cert {}: no certificate in the file", cert.display());
    }
    let key = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| anyhow::anyhow!("--tls-key {}: {e}", key.display()))?;
    let cfg = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| anyhow::anyhow!("--tls-cert/--tls-key: {e}"))?;
    Ok(axum_server::tls_rustls::RustlsConfig::from_config(
        Arc::new(cfg),
    ))
}

/// Writes the per-process token for scripts to
/// `<run dir>/serve-<port>.token` (mode 600), or None if it cannot.
fn write_script_token(bound: std::net::SocketAddr, token: &str) -> Option<PathBuf> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = rundir::run_base();
    std::fs::create_dir_all(&dir).ok()?;
    let path = dir.join(format!("serve-{}.token", bound.port()));
    let _ = std::fs::remove_file(&path);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .ok()?;
    use std::io::Write;
    writeln!(f, "{token}").ok()?;
    Some(path)
}

/// The routes behind `guard`, with no sampler running (the status stays
/// empty): what the fuzz tests drive in-process.
pub fn router_for(reports: PathBuf, guard: Arc<Guard>) -> Router {
    router(Arc::new(App {
        history: Mutex::new(History::default()),
        reports,
        guard,
    }))
}

fn router(app: Shared) -> Router {
    let guard = app.guard.clone();
    let mut r = Router::new()
        .route("/", get(overview))
        .route("/fragment/overview", get(overview_fragment))
        .route("/device", get(device_page))
        .route("/fragment/device", get(device_fragment))
        .route("/reports/", get(reports_page))
        .route("/reports/{*path}", get(report_file))
        .route("/api/status", get(api_status))
        .route("/metrics", get(metrics_page))
        .route(
            "/static/app.js",
            get(|| async { asset("text/javascript", pages::SCRIPT) }),
        )
        .route(
            "/static/app.css",
            get(|| async { asset("text/css", pages::STYLE) }),
        )
        .route("/login", get(login_page).post(login_post));
    if !guard.read_only {
        r = r.route("/format", get(format_page).post(format_post));
    }
    r.fallback(|| async { not_found("no such page") })
        .with_state(app)
        .layer(axum::middleware::from_fn_with_state(guard, guard::check))
}

fn asset(kind: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, kind),
            (header::CACHE_CONTROL, "max-age=3600"),
        ],
        body,
    )
        .into_response()
}

async fn metrics_page(State(app): State<Shared>) -> Response {
    let h = app.history.lock().unwrap_or_else(|p| p.into_inner());
    match &h.doc {
        Some(doc) => (
            [(header::CONTENT_TYPE, metrics::CONTENT_TYPE)],
            metrics::render(doc),
        )
            .into_response(),
        None => WebError(StatusCode::SERVICE_UNAVAILABLE, "no status yet".into()).into_response(),
    }
}

async fn login_page(State(app): State<Shared>) -> Html<String> {
    Html(pages::login(app.guard.token(), None))
}

#[derive(Deserialize)]
struct LoginForm {
    #[serde(default)]
    password: String,
}

async fn login_post(State(app): State<Shared>, Form(f): Form<LoginForm>) -> Response {
    match app.guard.login(&f.password) {
        Some(id) => (
            [(header::SET_COOKIE, app.guard.session_cookie(&id))],
            axum::response::Redirect::to("/"),
        )
            .into_response(),
        None => (
            StatusCode::UNAUTHORIZED,
            Html(pages::login(app.guard.token(), Some("wrong token"))),
        )
            .into_response(),
    }
}

async fn overview(State(app): State<Shared>) -> Html<String> {
    let h = app.history.lock().unwrap_or_else(|p| p.into_inner());
    Html(pages::overview(&h, &pages::reports(&app.reports)))
}

async fn overview_fragment(State(app): State<Shared>) -> Html<String> {
    let h = app.history.lock().unwrap_or_else(|p| p.into_inner());
    Html(pages::overview_body(&h, &pages::reports(&app.reports)))
}

#[derive(Deserialize)]
struct DeviceQuery {
    store: String,
    member: u32,
}

fn device_status(q: &DeviceQuery) -> Result<blockdev::manage::DeviceStatus, WebError> {
    let all = blockdev::manage::device_status(std::path::Path::new(&q.store))
        .map_err(|e| not_found(format!("{e:#}")))?;
    all.into_iter()
        .find(|d| d.member == q.member)
        .ok_or_else(|| {
            not_found(format!(
                "store {} has no ioMemory device {}",
                q.store, q.member
            ))
        })
}

async fn device_page(
    State(app): State<Shared>,
    Query(q): Query<DeviceQuery>,
) -> Result<Html<String>, WebError> {
    let d = tokio::task::spawn_blocking(move || device_status(&q).map(|d| (d, q)))
        .await
        .map_err(|e| WebError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))??;
    let h = app.history.lock().unwrap_or_else(|p| p.into_inner());
    Ok(Html(pages::device(&d.0, &h, !app.guard.read_only)))
}

async fn device_fragment(
    State(app): State<Shared>,
    Query(q): Query<DeviceQuery>,
) -> Result<Html<String>, WebError> {
    let d = tokio::task::spawn_blocking(move || device_status(&q))
        .await
        .map_err(|e| WebError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))??;
    let h = app.history.lock().unwrap_or_else(|p| p.into_inner());
    Ok(Html(pages::device_body(&d, &h)))
}

#[derive(Deserialize)]
struct StoreQuery {
    store: String,
}

async fn format_page(
    State(app): State<Shared>,
    Query(q): Query<StoreQuery>,
) -> Result<Html<String>, WebError> {
    let store = q.store.clone();
    let d = tokio::task::spawn_blocking(move || blockdev::manage::device_status(store.as_ref()))
        .await
        .map_err(|e| WebError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?
        .map_err(|e| not_found(format!("{e:#}")))?;
    Ok(Html(pages::format_form(&q.store, &d, app.guard.token())))
}

#[derive(Deserialize)]
struct FormatForm {
    store: String,
    preset: String,
    #[serde(default)]
    capacity: String,
    #[serde(default)]
    overprovision: String,
    sector_size: String,
    /// The store path typed again, as the confirmation.
    confirm: String,
}

async fn format_post(Form(f): Form<FormatForm>) -> Result<Html<String>, WebError> {
    if f.confirm.trim() != f.store {
        return Err(bad(
            "not formatted: type the store's path in the confirmation box to format it",
        ));
    }
    let mut args = vec!["format".to_string(), f.store.clone(), "-y".into()];
    let opt = |name: &str, v: &str| {
        (!v.trim().is_empty()).then(|| [name.to_string(), v.trim().to_string()])
    };
    let choice = opt("--capacity", &f.capacity)
        .or_else(|| opt("--overprovision", &f.overprovision))
        .or_else(|| opt("--preset", &f.preset))
        .ok_or_else(|| bad("choose a preset, a capacity or an over-provisioning"))?;
    args.extend(choice);
    args.extend(opt("--sector-size", &f.sector_size).into_iter().flatten());
    let exe = std::env::current_exe()
        .map_err(|e| WebError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
    let out = process_output(exe, args)
        .await
        .map_err(|e| WebError(StatusCode::INTERNAL_SERVER_ERROR, e))?;
    if !out.0 {
        return Err(WebError(StatusCode::CONFLICT, out.2.trim().to_string()));
    }
    Ok(Html(pages::formatted(&f.store, &out.1)))
}

/// Runs `exe args` off the async threads: (success, stdout, stderr).
async fn process_output(exe: PathBuf, args: Vec<String>) -> Result<(bool, String, String), String> {
    tokio::task::spawn_blocking(move || {
        let out = std::process::Command::new(exe)
            .args(args)
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| e.to_string())?;
        Ok((
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        ))
    })
    .await
    .map_err(|e| e.to_string())?
}

async fn reports_page(State(app): State<Shared>) -> Html<String> {
    Html(pages::reports_page(&pages::reports(&app.reports)))
}

async fn report_file(
    State(app): State<Shared>,
    UrlPath(path): UrlPath<String>,
) -> Result<Response, WebError> {
    // A directory (`run/` or `run`) is its index.html: the listing of
    // several `vsl pts` runs links to each run's directory page.
    let trimmed = path.strip_suffix('/').unwrap_or(&path);
    if trimmed
        .split('/')
        .any(|c| c == ".." || c.is_empty() && trimmed.len() > 1)
    {
        return Err(bad("report paths may not contain '..' or empty components"));
    }
    let mut file = app.reports.join(trimmed);
    if file.is_dir() {
        if !path.ends_with('/') {
            // Relative links in the page resolve against the directory.
            let to = format!("/reports/{trimmed}/");
            return Ok((StatusCode::SEE_OTHER, [(header::LOCATION, to)]).into_response());
        }
        file = file.join("index.html");
    }
    let bytes = std::fs::read(&file).map_err(|_| not_found(format!("no report file {path}")))?;
    let kind = match file.extension().and_then(|e| e.to_str()) {
        Some("html") => "text/html; charset=utf-8",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("json") => "application/json",
        Some("csv") => "text/csv",
        _ => "application/octet-stream",
    };
    Ok(([(header::CONTENT_TYPE, kind)], bytes).into_response())
}

async fn api_status(State(app): State<Shared>) -> Response {
    let h = app.history.lock().unwrap_or_else(|p| p.into_inner());
    match &h.doc {
        Some(doc) => axum::Json(doc.clone()).into_response(),
        None => WebError(StatusCode::SERVICE_UNAVAILABLE, "no status yet".into()).into_response(),
    }
}
