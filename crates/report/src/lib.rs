//! Renders a benchmark review as a report directory that reads like a
//! published enterprise SSD review.
//!
//! The input is a [`Review`] (compared [`TargetInfo`]s and [`Section`]s of
//! text, [`SteadyState`] results, [`Chart`]s of [`Series`] and [`Table`]s);
//! [`render`] writes it to a directory and returns a [`RenderedReport`]
//! listing the files; failures are [`ReportError`]s. The crate knows nothing
//! about devices or the lab: the lab converts its results into a `Review`.
//!
//! Layout of the output directory (it is self-contained: no file refers to
//! anything outside it, and nothing is fetched from the network):
//!
//! ```text
//! out_dir/index.html         the page; charts are <img src="charts/<id>.svg">
//! out_dir/charts/<id>.svg    one SVG per chart, drawn with plotters
//! out_dir/csv/<id>.csv       one CSV per chart: x column, one column per series
//! out_dir/results.json       the whole Review as JSON (read back with load_results)
//! ```
//!
//! Charts are SVG files beside the page rather than inline, so that each can
//! be opened, checked and reused on its own; SVG needs no fonts at build or
//! render time (the browser lays out the text). Every target keeps one
//! colour, chosen by its place in [`Review::targets`], in every chart.
//!
//! ```no_run
//! use report::{Chart, Review, Section, Series, SteadyState, TargetInfo};
//!
//! let review = Review {
//!     title: "ioDrive Duo 640 GB MLC: stock vs high-performance".into(),
//!     subtitle: "openvsl virtual-time review".into(),
//!     configuration: "vsl review --target iodrive-duo-640-mlc:stock --seed 1".into(),
//!     seed: Some(1),
//!     targets: vec![TargetInfo { name: "stock".into(), description: "320 GB".into() }],
//!     sections: vec![Section {
//!         id: "4k-random-write".into(),
//!         title: "4K random write".into(),
//!         steady_state: vec![SteadyState {
//!             target: "stock".into(),
//!             converged_round: Some(9),
//!             rounds_run: 9,
//!             note: String::new(),
//!         }],
//!         charts: vec![Chart::line(
//!             "4k-random-write-precondition-throughput",
//!             "4K random write: preconditioning throughput",
//!             "Time (minutes)",
//!             "Throughput (IOPS)",
//!             vec![Series::numeric("stock", [(1.0, 210_000.0), (2.0, 60_000.0)])],
//!         )],
//!         ..Section::default()
//!     }],
//! };
//! let rendered = report::render(&review, std::path::Path::new("review")).unwrap();
//! println!("{}", rendered.index_html.display());
//! ```

mod chart;
mod csv;
mod demo;
mod error;
mod format;
mod html;
mod model;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

pub use chart::{PLOT_HEIGHT_PX as CHART_PLOT_HEIGHT_PX, WIDTH_PX as CHART_WIDTH_PX};
pub use demo::{demo_review, MATRIX_POINTS};
pub use error::ReportError;
pub use format::{format_tick, target_colour_hex};
pub use html::escape as escape_html;
pub use model::{
    Chart, ChartKind, Marker, Point, Review, Section, Series, SteadyState, Table, TargetInfo,
    ValueFormat, XValue,
};

/// What [`render`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderedReport {
    pub index_html: PathBuf,
    pub results_json: PathBuf,
    pub charts: Vec<RenderedChart>,
    /// Every file written, in the order it was written.
    pub files: Vec<PathBuf>,
}

/// The files of one chart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderedChart {
    pub id: String,
    pub svg: PathBuf,
    pub csv: PathBuf,
}

/// Section ids the page uses itself.
const RESERVED_IDS: [&str; 3] = ["targets", "contents", "configuration"];

/// Draws one chart on its own as an SVG document `width_px` wide with a
/// plot `plot_height_px` high (the dashboard's charts; `vsl run
/// --rate-sweep` at a review chart's size, [`CHART_WIDTH_PX`] ×
/// [`CHART_PLOT_HEIGHT_PX`]): the same drawing as
/// a review's charts, series coloured in their order.
pub fn chart_svg(chart: &Chart, width_px: u32, plot_height_px: u32) -> Result<String, ReportError> {
    struct InOrder<'a>(&'a Chart);
    impl chart::ColourOf for InOrder<'_> {
        fn colour_of(&self, target: &str) -> usize {
            self.0
                .series
                .iter()
                .position(|s| s.target == target)
                .unwrap_or(0)
        }
    }
    chart::render_svg_sized(chart, &InOrder(chart), width_px, plot_height_px)
        .map(|(svg, _height)| svg)
        .map_err(|message| ReportError::Plot {
            chart: chart.id.clone(),
            message,
        })
}

/// Writes `review` into `out_dir` (created if missing; files of an earlier
/// report with other chart ids are left alone). Checks every id before
/// writing anything.
pub fn render(review: &Review, out_dir: &Path) -> Result<RenderedReport, ReportError> {
    validate(review)?;
    let charts_dir = out_dir.join("charts");
    let csv_dir = out_dir.join("csv");
    for dir in [out_dir, &charts_dir, &csv_dir] {
        std::fs::create_dir_all(dir).map_err(|source| ReportError::Io {
            path: dir.to_owned(),
            source,
        })?;
    }
    let colours = Colours::of(review);
    let mut files = Vec::new();
    let mut rendered = Vec::new();
    let mut refs = Vec::new();
    for chart in review.sections.iter().flat_map(|s| &s.charts) {
        let (svg, height_px) =
            chart::render_svg(chart, &colours).map_err(|message| ReportError::Plot {
                chart: chart.id.clone(),
                message,
            })?;
        let svg_path = charts_dir.join(format!("{}.svg", chart.id));
        let csv_path = csv_dir.join(format!("{}.csv", chart.id));
        write(&svg_path, &svg, &mut files)?;
        write(&csv_path, &csv::chart_csv(chart), &mut files)?;
        refs.push(html::ChartRef {
            id: chart.id.clone(),
            title: chart.title.clone(),
            svg_href: format!("charts/{}.svg", chart.id),
            csv_href: format!("csv/{}.csv", chart.id),
            width_px: chart::WIDTH_PX,
            height_px,
        });
        rendered.push(RenderedChart {
            id: chart.id.clone(),
            svg: svg_path,
            csv: csv_path,
        });
    }
    let results_json = out_dir.join("results.json");
    write(
        &results_json,
        &serde_json::to_string_pretty(review)?,
        &mut files,
    )?;
    let index_html = out_dir.join("index.html");
    write(&index_html, &html::page(review, &refs), &mut files)?;
    Ok(RenderedReport {
        index_html,
        results_json,
        charts: rendered,
        files,
    })
}

/// Reads a `results.json` written by [`render`] back into a [`Review`].
pub fn load_results(path: &Path) -> Result<Review, ReportError> {
    let text = std::fs::read_to_string(path).map_err(|source| ReportError::Read {
        path: path.to_owned(),
        source,
    })?;
    Ok(serde_json::from_str(&text)?)
}

/// Turns any text into a usable chart or section id: lower case ASCII
/// letters and digits, other runs of characters become one `-`.
/// `slug("4K random write / 2T/2Q")` is `"4k-random-write-2t-2q"`.
pub fn slug(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    while out.ends_with('-') {
        out.pop();
    }
    out
}

fn write(path: &Path, contents: &str, files: &mut Vec<PathBuf>) -> Result<(), ReportError> {
    std::fs::write(path, contents).map_err(|source| ReportError::Io {
        path: path.to_owned(),
        source,
    })?;
    files.push(path.to_owned());
    Ok(())
}

/// Ids become file names and anchors: they must be plain and unique.
fn validate(review: &Review) -> Result<(), ReportError> {
    let mut sections: Vec<&str> = Vec::new();
    let mut charts: Vec<&str> = Vec::new();
    for section in &review.sections {
        check_id("section", &section.id)?;
        if RESERVED_IDS.contains(&section.id.as_str()) {
            return Err(ReportError::InvalidId {
                what: "section",
                id: section.id.clone(),
                reason: "the page uses this id itself",
            });
        }
        if sections.contains(&section.id.as_str()) {
            return Err(ReportError::DuplicateId {
                what: "section",
                id: section.id.clone(),
            });
        }
        sections.push(&section.id);
        for chart in &section.charts {
            check_id("chart", &chart.id)?;
            // Case-insensitive: the files must not collide on such file systems.
            if charts.iter().any(|c| c.eq_ignore_ascii_case(&chart.id)) {
                return Err(ReportError::DuplicateId {
                    what: "chart",
                    id: chart.id.clone(),
                });
            }
            charts.push(&chart.id);
        }
    }
    Ok(())
}

fn check_id(what: &'static str, id: &str) -> Result<(), ReportError> {
    let reason = if id.is_empty() {
        Some("it is empty")
    } else if id.len() > 120 {
        Some("it is longer than 120 characters")
    } else if id.starts_with('.') {
        Some("it starts with '.'")
    } else if !id
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        Some("use only ASCII letters, digits, '-', '_' and '.' (see report::slug)")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(ReportError::InvalidId {
            what,
            id: id.to_owned(),
            reason,
        }),
        None => Ok(()),
    }
}

/// Target name → palette index: the review's targets first, in order, then
/// any other name a series uses, in order of appearance.
struct Colours {
    index: HashMap<String, usize>,
}

impl Colours {
    fn of(review: &Review) -> Self {
        let mut index = HashMap::new();
        let names = review.targets.iter().map(|t| &t.name).chain(
            review
                .sections
                .iter()
                .flat_map(|s| &s.charts)
                .flat_map(|c| {
                    c.series
                        .iter()
                        .map(|s| &s.target)
                        .chain(c.markers.iter().map(|m| &m.target))
                }),
        );
        for name in names {
            let next = index.len();
            index.entry(name.clone()).or_insert(next);
        }
        Colours { index }
    }
}

impl chart::ColourOf for Colours {
    fn colour_of(&self, target: &str) -> usize {
        self.index.get(target).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs() {
        assert_eq!(slug("4K random write / 2T/2Q"), "4k-random-write-2t-2q");
        assert_eq!(slug("--File Server--"), "file-server");
        assert_eq!(slug("µs"), "s");
    }

    #[test]
    fn ids_are_checked() {
        assert!(check_id("chart", "a-b_c.1").is_ok());
        assert!(check_id("chart", "").is_err());
        assert!(check_id("chart", "../x").is_err());
        assert!(check_id("chart", "a/b").is_err());
        assert!(check_id("chart", ".hidden").is_err());
    }
}
