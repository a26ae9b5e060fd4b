//! The input model: what a review says, independent of how it was measured.
//!
//! A [`Review`] holds the compared [`TargetInfo`]s and a list of
//! [`Section`]s; a section holds text, [`SteadyState`] results, [`Chart`]s
//! and [`Table`]s. Every type round-trips through JSON (`results.json` is a
//! serialized `Review`); non-finite numbers are written as `null` and read
//! back as NaN, because JSON has no NaN.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A whole review: what `index.html` shows and `results.json` holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Review {
    /// Page title, e.g. "ioDrive Duo 640 GB MLC: stock vs high-performance format".
    pub title: String,
    /// One line under the title, e.g. the date or the lab version.
    #[serde(default)]
    pub subtitle: String,
    /// The exact configuration that produced the review (plan file, command
    /// line, seed), shown verbatim in a `<pre>` block.
    #[serde(default)]
    pub configuration: String,
    /// The seed every random choice came from, if the run was seeded.
    #[serde(default)]
    pub seed: Option<u64>,
    /// The compared targets. Their order fixes each target's colour in
    /// every chart.
    pub targets: Vec<TargetInfo>,
    /// The body of the review, in reading order.
    pub sections: Vec<Section>,
}

/// One compared device, format or file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetInfo {
    /// The name series refer to, e.g. "iodrive-duo-640-mlc:stock".
    pub name: String,
    /// What it is, e.g. "modelled card, stock format, 640 GB usable".
    #[serde(default)]
    pub description: String,
}

/// A heading with its text, steady-state results, charts and tables.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Section {
    /// Anchor in the page (`index.html#id`); letters, digits, `-`, `_`, `.`.
    pub id: String,
    pub title: String,
    /// Prose; blank lines separate paragraphs. Plain text, not HTML.
    #[serde(default)]
    pub text: String,
    /// The round each target's preconditioning reached steady state in.
    #[serde(default)]
    pub steady_state: Vec<SteadyState>,
    #[serde(default)]
    pub charts: Vec<Chart>,
    #[serde(default)]
    pub tables: Vec<Table>,
}

/// Outcome of the SNIA PTS steady-state check for one target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SteadyState {
    pub target: String,
    /// The round steady state was reached in, or `None` if it was not.
    pub converged_round: Option<u32>,
    /// How many rounds were run in total.
    pub rounds_run: u32,
    /// Anything worth saying, e.g. "stopped at the 6 h limit".
    #[serde(default)]
    pub note: String,
}

/// How a chart draws its series.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChartKind {
    /// Lines through the points; with categorical x, one point per category.
    #[default]
    Line,
    /// Grouped bars: one group per x value, one bar per series.
    Bars,
}

/// How axis tick labels are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ValueFormat {
    /// SI suffixes (K, M, G) from 10,000 up, plain decimals below.
    #[default]
    Auto,
    /// Always SI suffixes: 150K, 1.2M.
    Si,
    /// Plain decimals: 0.25, 12, 1500.
    Plain,
    /// Whole numbers (rounds, counts): ticks only at whole numbers.
    Integer,
}

/// One chart: a statistic of every target on the same axes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Chart {
    /// File name stem: `charts/<id>.svg`, `csv/<id>.csv`. Unique in the
    /// review; letters, digits, `-`, `_`, `.` (see [`crate::slug`]).
    pub id: String,
    pub title: String,
    /// With the unit, e.g. "Time (minutes)" or "Threads / queue depth".
    pub x_label: String,
    /// With the unit, e.g. "Throughput (IOPS)" or "Average latency (ms)".
    pub y_label: String,
    #[serde(default)]
    pub kind: ChartKind,
    /// Logarithmic y axis; values ≤ 0 are then not drawn.
    #[serde(default)]
    pub log_y: bool,
    #[serde(default)]
    pub x_format: ValueFormat,
    #[serde(default)]
    pub y_format: ValueFormat,
    pub series: Vec<Series>,
    /// Vertical lines, e.g. where a target reached steady state.
    #[serde(default)]
    pub markers: Vec<Marker>,
}

/// The points of one target in one chart.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// A [`TargetInfo::name`]; fixes the colour.
    pub target: String,
    pub points: Vec<Point>,
}

/// One plotted value. Non-finite `y` (or numeric `x`) is kept in the data
/// but not drawn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    pub x: XValue,
    #[serde(with = "finite_or_null")]
    pub y: f64,
}

/// An x coordinate: a number (time, queue depth) or a category ("2T/4Q").
/// A chart with any category label draws its x axis as categories, in the
/// order they first appear.
#[derive(Debug, Clone, PartialEq)]
pub enum XValue {
    Number(f64),
    Label(String),
}

/// A dashed vertical line across a chart at `x`, in `target`'s colour; its
/// label is shown in the legend (e.g. "steady state (stock)").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Marker {
    pub target: String,
    pub x: XValue,
    pub label: String,
}

/// A table of text cells; numbers are formatted by the caller.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Table {
    pub title: String,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Series {
    /// A series over a numeric x axis.
    pub fn numeric(
        target: impl Into<String>,
        points: impl IntoIterator<Item = (f64, f64)>,
    ) -> Self {
        Series {
            target: target.into(),
            points: points
                .into_iter()
                .map(|(x, y)| Point {
                    x: XValue::Number(x),
                    y,
                })
                .collect(),
        }
    }

    /// A series over categories, e.g. `("2T/2Q", 41_000.0)`.
    pub fn categorical<L: Into<String>>(
        target: impl Into<String>,
        points: impl IntoIterator<Item = (L, f64)>,
    ) -> Self {
        Series {
            target: target.into(),
            points: points
                .into_iter()
                .map(|(x, y)| Point {
                    x: XValue::Label(x.into()),
                    y,
                })
                .collect(),
        }
    }
}

impl Chart {
    /// A line chart with default formats and no markers.
    pub fn line(
        id: impl Into<String>,
        title: impl Into<String>,
        x_label: impl Into<String>,
        y_label: impl Into<String>,
        series: Vec<Series>,
    ) -> Self {
        Chart {
            id: id.into(),
            title: title.into(),
            x_label: x_label.into(),
            y_label: y_label.into(),
            kind: ChartKind::Line,
            log_y: false,
            x_format: ValueFormat::Auto,
            y_format: ValueFormat::Auto,
            series,
            markers: Vec::new(),
        }
    }

    /// A grouped bar chart with default formats and no markers.
    pub fn bars(
        id: impl Into<String>,
        title: impl Into<String>,
        x_label: impl Into<String>,
        y_label: impl Into<String>,
        series: Vec<Series>,
    ) -> Self {
        Chart {
            kind: ChartKind::Bars,
            ..Chart::line(id, title, x_label, y_label, series)
        }
    }

    /// True if any point or marker has a category label as x.
    pub fn is_categorical(&self) -> bool {
        let labelled = |x: &XValue| matches!(x, XValue::Label(_));
        self.series
            .iter()
            .flat_map(|s| &s.points)
            .any(|p| labelled(&p.x))
            || self.markers.iter().any(|m| labelled(&m.x))
    }
}

impl XValue {
    /// The text used for a category and in CSV.
    pub fn text(&self) -> String {
        match self {
            XValue::Number(v) if v.is_finite() => format_number(*v),
            XValue::Number(_) => String::new(),
            XValue::Label(s) => s.clone(),
        }
    }
}

/// Shortest decimal text that reads back as the same f64 (`1` not `1.0`).
pub(crate) fn format_number(v: f64) -> String {
    if v == v.trunc() && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

impl From<f64> for XValue {
    fn from(v: f64) -> Self {
        XValue::Number(v)
    }
}

impl From<&str> for XValue {
    fn from(s: &str) -> Self {
        XValue::Label(s.to_owned())
    }
}

impl From<String> for XValue {
    fn from(s: String) -> Self {
        XValue::Label(s)
    }
}

impl Serialize for XValue {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            XValue::Number(v) => finite_or_null::serialize(v, serializer),
            XValue::Label(s) => serializer.serialize_str(s),
        }
    }
}

impl<'de> Deserialize<'de> for XValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = XValue;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a number, a string or null")
            }
            fn visit_f64<E>(self, v: f64) -> Result<XValue, E> {
                Ok(XValue::Number(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<XValue, E> {
                Ok(XValue::Number(v as f64))
            }
            fn visit_u64<E>(self, v: u64) -> Result<XValue, E> {
                Ok(XValue::Number(v as f64))
            }
            fn visit_str<E>(self, v: &str) -> Result<XValue, E> {
                Ok(XValue::Label(v.to_owned()))
            }
            fn visit_unit<E>(self) -> Result<XValue, E> {
                Ok(XValue::Number(f64::NAN))
            }
            fn visit_none<E>(self) -> Result<XValue, E> {
                Ok(XValue::Number(f64::NAN))
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

/// JSON has no NaN or infinity: write them as `null`, read `null` as NaN.
mod finite_or_null {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &f64, serializer: S) -> Result<S::Ok, S::Error> {
        if v.is_finite() {
            serializer.serialize_f64(*v)
        } else {
            serializer.serialize_none()
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
        Ok(Option::<f64>::deserialize(deserializer)?.unwrap_or(f64::NAN))
    }
}
