//! Draws one [`Chart`] as an SVG document with `plotters`.
//!
//! [`render_svg`] first turns the chart into [`Prepared`] data (finite points
//! only, categories mapped to 0, 1, 2, …, axis ranges that are never empty),
//! so that the drawing code never meets NaN, an empty range or a
//! non-positive value on a log axis.

use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::format::{format_tick, PALETTE};
use crate::model::{Chart, ChartKind, ValueFormat, XValue};

/// A review chart's width and plot height, pixels.
pub const WIDTH_PX: u32 = 860;
pub const PLOT_HEIGHT_PX: u32 = 470;
const LEGEND_ROW_PX: u32 = 22;
const FONT: &str = "sans-serif";
/// plotters writes `font-size = size / 1.24` into SVG; these are the sizes we
/// ask for, giving about 11, 13 and 17 px.
const TICK_FONT: f64 = 14.0;
const DESC_FONT: f64 = 16.0;
const TITLE_FONT: f64 = 21.0;
/// A line of more points than 4 × this is thinned to this many x buckets.
const DECIMATE_BUCKETS: usize = 600;
/// Draw point markers on lines with at most this many points.
const MARKER_POINTS_MAX: usize = 48;

type Svg<'a> = SVGBackend<'a>;
type PlotResult = Result<(), String>;

/// Colour index of each target name, fixed for the whole review.
pub(crate) trait ColourOf {
    fn colour_of(&self, target: &str) -> usize;
}

/// A chart reduced to what can be drawn.
struct Prepared {
    /// `Some` for a categorical x axis; x values are then category indices.
    categories: Option<Vec<String>>,
    series: Vec<PreparedSeries>,
    markers: Vec<PreparedMarker>,
    x_range: (f64, f64),
    y_range: (f64, f64),
}

struct PreparedSeries {
    name: String,
    colour: RGBColor,
    points: Vec<(f64, f64)>,
}

struct PreparedMarker {
    x: f64,
    colour: RGBColor,
    label: String,
}

/// Renders `chart` to an SVG document; returns it with its height in pixels
/// (the width is [`WIDTH_PX`]).
pub(crate) fn render_svg(chart: &Chart, colours: &dyn ColourOf) -> Result<(String, u32), String> {
    render_svg_sized(chart, colours, WIDTH_PX, PLOT_HEIGHT_PX)
}

/// [`render_svg`] at another width and plot height (the dashboard's smaller
/// charts), in pixels.
pub(crate) fn render_svg_sized(
    chart: &Chart,
    colours: &dyn ColourOf,
    width_px: u32,
    plot_height_px: u32,
) -> Result<(String, u32), String> {
    let data = prepare(chart, colours);
    let legend = legend_items(&data, chart.kind, width_px);
    let legend_rows = legend.last().map_or(0, |l| l.row + 1);
    let legend_px = if legend_rows == 0 {
        0
    } else {
        legend_rows as u32 * LEGEND_ROW_PX + 12
    };
    let height_px = plot_height_px + legend_px;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width_px, height_px)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let (plot_area, legend_area) = root.split_vertically(plot_height_px);
        if chart.log_y {
            let (lo, hi) = data.y_range;
            draw_plot(&plot_area, chart, &data, (lo..hi).log_scale())?;
        } else {
            let (lo, hi) = data.y_range;
            draw_plot(&plot_area, chart, &data, lo..hi)?;
        }
        draw_legend(&legend_area, &legend)?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok((svg, height_px))
}

fn rgb(index: usize) -> RGBColor {
    let (r, g, b) = PALETTE[index % PALETTE.len()];
    RGBColor(r, g, b)
}

fn prepare(chart: &Chart, colours: &dyn ColourOf) -> Prepared {
    let categories = chart.is_categorical().then(|| categories_of(chart));
    let x_of = |x: &XValue| -> Option<f64> {
        match (&categories, x) {
            (Some(cats), x) => {
                let text = x.text();
                cats.iter().position(|c| *c == text).map(|i| i as f64)
            }
            (None, XValue::Number(v)) if v.is_finite() => Some(*v),
            (None, _) => None,
        }
    };
    let drawable_y = |y: f64| y.is_finite() && (!chart.log_y || y > 0.0);
    let series: Vec<PreparedSeries> = chart
        .series
        .iter()
        .map(|s| {
            let mut points: Vec<(f64, f64)> = s
                .points
                .iter()
                .filter(|p| drawable_y(p.y))
                .filter_map(|p| x_of(&p.x).map(|x| (x, p.y)))
                .collect();
            // A line is drawn left to right whatever order the data came in.
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            if chart.kind == ChartKind::Line {
                points = decimate(points, DECIMATE_BUCKETS);
            }
            PreparedSeries {
                name: s.target.clone(),
                colour: rgb(colours.colour_of(&s.target)),
                points,
            }
        })
        .collect();
    let markers = chart
        .markers
        .iter()
        .filter_map(|m| {
            Some(PreparedMarker {
                x: x_of(&m.x)?,
                colour: rgb(colours.colour_of(&m.target)),
                label: m.label.clone(),
            })
        })
        .collect::<Vec<_>>();
    let x_range = match &categories {
        Some(cats) => (-0.5, cats.len().max(1) as f64 - 0.5),
        None => {
            let xs = series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
            let (lo, hi) = numeric_range(xs.chain(markers.iter().map(|m| m.x)));
            // Bars are centred on their x: make room for half a group each side.
            let pad = match chart.kind {
                ChartKind::Bars => bar_group_width(&series, false) * 0.625,
                ChartKind::Line => 0.0,
            };
            (lo - pad, hi + pad)
        }
    };
    let ys = series.iter().flat_map(|s| s.points.iter().map(|p| p.1));
    let y_range = if chart.log_y {
        log_range(ys)
    } else {
        linear_y_range(ys)
    };
    Prepared {
        categories,
        series,
        markers,
        x_range,
        y_range,
    }
}

/// Keeps a line of many points (hours of 1 s intervals) light to draw and
/// to load: splits the x range into `buckets` and keeps, per bucket, the
/// first, lowest, highest and last point in x order, so every spike (a
/// 1,000 ms max-latency blip) still shows. The CSV and JSON keep all points.
fn decimate(points: Vec<(f64, f64)>, buckets: usize) -> Vec<(f64, f64)> {
    if points.len() <= buckets * 4 {
        return points;
    }
    let (x_lo, x_hi) = (points[0].0, points[points.len() - 1].0);
    let width = (x_hi - x_lo) / buckets as f64;
    let bucket_of = |x: f64| (((x - x_lo) / width) as usize).min(buckets - 1);
    let mut out = Vec::with_capacity(buckets * 4);
    let mut start = 0;
    while start < points.len() {
        let b = bucket_of(points[start].0);
        let end = start
            + points[start..]
                .iter()
                .take_while(|p| bucket_of(p.0) == b)
                .count();
        let chunk = &points[start..end];
        let lowest = (0..chunk.len()).min_by(|&i, &j| chunk[i].1.total_cmp(&chunk[j].1));
        let highest = (0..chunk.len()).max_by(|&i, &j| chunk[i].1.total_cmp(&chunk[j].1));
        let mut keep = [Some(0), lowest, highest, Some(chunk.len() - 1)].map(|i| i.unwrap_or(0));
        keep.sort_unstable();
        let mut last = None;
        for i in keep {
            if last != Some(i) {
                out.push(chunk[i]);
                last = Some(i);
            }
        }
        start = end;
    }
    out
}

/// Category labels in the order they first appear (series, then markers).
fn categories_of(chart: &Chart) -> Vec<String> {
    let mut cats: Vec<String> = Vec::new();
    let xs = chart
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| &p.x))
        .chain(chart.markers.iter().map(|m| &m.x));
    for x in xs {
        let text = x.text();
        if !text.is_empty() && !cats.contains(&text) {
            cats.push(text);
        }
    }
    cats
}

fn min_max(values: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    values.fold(None, |acc, v| match acc {
        None => Some((v, v)),
        Some((lo, hi)) => Some((lo.min(v), hi.max(v))),
    })
}

fn numeric_range(values: impl Iterator<Item = f64>) -> (f64, f64) {
    match min_max(values) {
        None => (0.0, 1.0),
        Some((lo, hi)) if lo == hi => {
            let pad = if lo == 0.0 { 1.0 } else { lo.abs() * 0.5 };
            (lo - pad, hi + pad)
        }
        Some(range) => range,
    }
}

/// Includes zero, so bars and throughput lines are not exaggerated.
fn linear_y_range(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = min_max(values).unwrap_or((0.0, 1.0));
    let (lo, hi) = (lo.min(0.0), hi.max(0.0));
    if hi == lo {
        return (0.0, 1.0);
    }
    let pad = (hi - lo) * 0.08;
    (if lo < 0.0 { lo - pad } else { lo }, hi + pad)
}

/// Whole decades around the positive values.
fn log_range(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let Some((lo, hi)) = min_max(values) else {
        return (1.0, 10.0);
    };
    let lo_decade = lo.log10().floor();
    let mut hi_decade = hi.log10().ceil();
    if hi_decade <= lo_decade {
        hi_decade = lo_decade + 1.0;
    }
    // A hair beyond the decades, so float rounding keeps their ticks inside.
    (10f64.powf(lo_decade) * 0.999, 10f64.powf(hi_decade) * 1.001)
}

fn draw_plot<Y>(
    area: &DrawingArea<Svg<'_>, Shift>,
    chart: &Chart,
    data: &Prepared,
    y: Y,
) -> PlotResult
where
    Y: AsRangedCoord<Value = f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let err = |e: DrawingAreaErrorKind<_>| e.to_string();
    let categorical = data.categories.is_some();
    let (x_lo, x_hi) = data.x_range;
    let (y_lo, y_hi) = data.y_range;
    let mut ctx = ChartBuilder::on(area)
        .caption(&chart.title, (FONT, TITLE_FONT))
        .margin(14)
        .x_label_area_size(if categorical { 62 } else { 46 })
        .y_label_area_size(76)
        .build_cartesian_2d(x_lo..x_hi, y)
        .map_err(err)?;

    let x_format = |v: &f64| format_tick(*v, x_hi - x_lo, chart.x_format);
    // Log ticks span decades: each needs the decimals of its own magnitude.
    let y_span = |v: f64| if chart.log_y { v } else { y_hi - y_lo };
    let y_format = |v: &f64| format_tick(*v, y_span(*v), chart.y_format);
    let mut mesh = ctx.configure_mesh();
    mesh.x_desc(chart.x_label.as_str())
        .y_desc(chart.y_label.as_str())
        .x_label_formatter(&x_format)
        .y_label_formatter(&y_format)
        .label_style((FONT, TICK_FONT))
        .axis_desc_style((FONT, DESC_FONT))
        .bold_line_style(RGBColor(210, 210, 210))
        .light_line_style(RGBColor(242, 242, 242))
        .max_light_lines(4)
        .y_labels(8);
    if categorical {
        // Category labels are drawn below by hand, one per category.
        mesh.disable_x_mesh().x_labels(0);
    } else if chart.x_format == ValueFormat::Integer {
        // One tick per whole number while they fit, so none falls between.
        mesh.x_labels(((x_hi - x_lo).floor() as usize + 1).clamp(2, 10));
    } else {
        mesh.x_labels(10);
    }
    mesh.draw().map_err(err)?;

    match chart.kind {
        ChartKind::Bars => draw_bars(&mut ctx, data, chart.log_y)?,
        ChartKind::Line => draw_lines(&mut ctx, data)?,
    }
    draw_markers(&mut ctx, data)?;
    if let Some(cats) = &data.categories {
        draw_category_labels(&ctx, area, cats, y_lo)?;
    }
    if data.series.iter().all(|s| s.points.is_empty()) {
        let centre = ctx.backend_coord(&((x_lo + x_hi) / 2.0, y_lo));
        let style = TextStyle::from((FONT, DESC_FONT).into_font())
            .color(&RGBColor(120, 120, 120))
            .pos(Pos::new(HPos::Center, VPos::Bottom));
        area.draw(&Text::new("no data", (centre.0, centre.1 - 150), style))
            .map_err(err)?;
    }
    Ok(())
}

type Ctx<'a, 'b, Y> =
    ChartContext<'a, Svg<'b>, Cartesian2d<plotters::coord::types::RangedCoordf64, Y>>;

fn draw_lines<Y>(ctx: &mut Ctx<'_, '_, Y>, data: &Prepared) -> PlotResult
where
    Y: Ranged<ValueType = f64>,
{
    for s in &data.series {
        let style = s.colour.stroke_width(2);
        ctx.draw_series(LineSeries::new(s.points.iter().copied(), style))
            .map_err(|e| e.to_string())?;
        if s.points.len() <= MARKER_POINTS_MAX {
            let fill = s.colour.filled();
            ctx.draw_series(s.points.iter().map(|p| Circle::new(*p, 3, fill)))
                .map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

/// Width of one group of bars in x units: 0.8 of a category, or 0.8 of the
/// closest gap between numeric x values.
fn bar_group_width(series: &[PreparedSeries], categorical: bool) -> f64 {
    if categorical {
        return 0.8;
    }
    let mut xs: Vec<f64> = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .collect();
    xs.sort_by(f64::total_cmp);
    let gap = xs
        .windows(2)
        .map(|w| w[1] - w[0])
        .filter(|g| *g > 0.0)
        .fold(f64::INFINITY, f64::min);
    if gap.is_finite() {
        gap * 0.8
    } else {
        // One distinct x: any width reads the same, the axis is padded to fit.
        xs.first().map_or(1.0, |x| (x.abs() * 0.4).max(0.8))
    }
}

/// One group per x value; bars of one group side by side in series order,
/// growing from zero (or from the bottom of a log axis).
fn draw_bars<Y>(ctx: &mut Ctx<'_, '_, Y>, data: &Prepared, log_y: bool) -> PlotResult
where
    Y: Ranged<ValueType = f64>,
{
    let (y_lo, y_hi) = data.y_range;
    let base = if log_y {
        y_lo
    } else {
        0.0f64.clamp(y_lo, y_hi)
    };
    let group_width = bar_group_width(&data.series, data.categories.is_some());
    let bar = group_width / data.series.len().max(1) as f64;
    for (i, s) in data.series.iter().enumerate() {
        let fill = s.colour.filled();
        let rects = s.points.iter().map(|&(x, y)| {
            let x0 = x - group_width / 2.0 + i as f64 * bar + bar * 0.05;
            Rectangle::new([(x0, base), (x0 + bar * 0.9, y)], fill)
        });
        ctx.draw_series(rects).map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn draw_markers<Y>(ctx: &mut Ctx<'_, '_, Y>, data: &Prepared) -> PlotResult
where
    Y: Ranged<ValueType = f64>,
{
    let (y_lo, y_hi) = data.y_range;
    for m in &data.markers {
        // Thinner than data lines (2 px), so a marker never reads as data.
        let style = m.colour.stroke_width(1);
        ctx.draw_series(DashedLineSeries::new(
            [(m.x, y_lo), (m.x, y_hi)],
            8,
            5,
            style,
        ))
        .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Approximate width of `text` at the tick font, in pixels.
fn text_px(text: &str) -> f64 {
    text.chars().count() as f64 * TICK_FONT / 1.24 * 0.6
}

/// Writes each category under its slot; a label too wide for its slot is
/// split into two lines at '/' or ' ' ("16T/16Q" → "16T/" over "16Q").
fn draw_category_labels<Y>(
    ctx: &Ctx<'_, '_, Y>,
    area: &DrawingArea<Svg<'_>, Shift>,
    cats: &[String],
    y_lo: f64,
) -> PlotResult
where
    Y: Ranged<ValueType = f64>,
{
    let slot_px = {
        let a = ctx.backend_coord(&(0.0, y_lo)).0;
        let b = ctx.backend_coord(&(1.0, y_lo)).0;
        f64::from((b - a).abs())
    };
    let style = TextStyle::from((FONT, TICK_FONT).into_font())
        .color(&BLACK)
        .pos(Pos::new(HPos::Center, VPos::Top));
    // Split all labels or none, so the axis reads evenly.
    let split = cats.iter().any(|c| text_px(c) + 6.0 > slot_px);
    for (i, cat) in cats.iter().enumerate() {
        let (px, py) = ctx.backend_coord(&(i as f64, y_lo));
        let lines = if split {
            split_label(cat)
        } else {
            vec![cat.clone()]
        };
        for (row, line) in lines.into_iter().enumerate() {
            let y = py + 6 + row as i32 * 14;
            area.draw(&Text::new(line, (px, y), style.clone()))
                .map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

fn split_label(label: &str) -> Vec<String> {
    let mid = label.len() / 2;
    let cut = label
        .char_indices()
        .filter(|(_, c)| *c == '/' || *c == ' ')
        .min_by_key(|(i, _)| i.abs_diff(mid));
    match cut {
        Some((i, c)) => {
            let head = if c == '/' { &label[..=i] } else { &label[..i] };
            vec![head.to_owned(), label[i + 1..].to_owned()]
        }
        None => vec![label.to_owned()],
    }
}

/// What a legend entry shows before its text.
#[derive(Clone, Copy)]
enum Swatch {
    Line,
    Bar,
    Dashed,
}

/// One legend entry and its place: row and x offset in pixels.
struct LegendItem<'a> {
    text: &'a str,
    colour: RGBColor,
    swatch: Swatch,
    row: usize,
    x_px: i32,
}

/// Series first, then markers; entries wrap onto new rows.
fn legend_items<'a>(data: &'a Prepared, kind: ChartKind, width_px: u32) -> Vec<LegendItem<'a>> {
    let series_swatch = match kind {
        ChartKind::Line => Swatch::Line,
        ChartKind::Bars => Swatch::Bar,
    };
    let entries = data
        .series
        .iter()
        .map(|s| (s.name.as_str(), s.colour, series_swatch))
        .chain(
            data.markers
                .iter()
                .map(|m| (m.label.as_str(), m.colour, Swatch::Dashed)),
        );
    let usable = f64::from(width_px) - 100.0;
    let mut items = Vec::new();
    let (mut row, mut x) = (0usize, 0.0f64);
    for (text, colour, swatch) in entries {
        let width = 34.0 + text_px(text) * 1.1 + 24.0;
        if x > 0.0 && x + width > usable {
            row += 1;
            x = 0.0;
        }
        items.push(LegendItem {
            text,
            colour,
            swatch,
            row,
            x_px: x as i32,
        });
        x += width;
    }
    items
}

/// Legend below the plot: a swatch and the text per series and marker.
fn draw_legend(area: &DrawingArea<Svg<'_>, Shift>, items: &[LegendItem<'_>]) -> PlotResult {
    let err = |e: DrawingAreaErrorKind<_>| e.to_string();
    let left = 90;
    for item in items {
        let x = left + item.x_px;
        let y = 6 + item.row as i32 * LEGEND_ROW_PX as i32 + LEGEND_ROW_PX as i32 / 2;
        let colour = item.colour;
        match item.swatch {
            Swatch::Line => area.draw(&PathElement::new(
                vec![(x, y), (x + 26, y)],
                colour.stroke_width(3),
            )),
            Swatch::Bar => area.draw(&Rectangle::new(
                [(x + 6, y - 7), (x + 20, y + 7)],
                colour.filled(),
            )),
            // 1 px like the marker it stands for.
            Swatch::Dashed => [(x, x + 8), (x + 13, x + 21)]
                .into_iter()
                .try_for_each(|(a, b)| {
                    area.draw(&PathElement::new(
                        vec![(a, y), (b, y)],
                        colour.stroke_width(1),
                    ))
                }),
        }
        .map_err(err)?;
        let style = TextStyle::from((FONT, DESC_FONT).into_font())
            .color(&BLACK)
            .pos(Pos::new(HPos::Left, VPos::Center));
        area.draw(&Text::new(item.text, (x + 32, y), style))
            .map_err(err)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_never_empty() {
        assert_eq!(numeric_range(std::iter::empty()), (0.0, 1.0));
        assert_eq!(numeric_range([4.0].into_iter()), (2.0, 6.0));
        assert_eq!(linear_y_range([0.0, 0.0].into_iter()), (0.0, 1.0));
        let (lo, hi) = log_range([5.0].into_iter());
        assert!((lo - 0.999).abs() < 1e-12 && (hi - 10.01).abs() < 1e-9);
        let (lo, hi) = log_range([0.3, 250.0].into_iter());
        assert!((lo - 0.0999).abs() < 1e-12 && (hi - 1001.0).abs() < 1e-9);
    }

    #[test]
    fn decimation_keeps_spikes_and_ends() {
        let mut points: Vec<(f64, f64)> = (0..10_000).map(|i| (f64::from(i), 1.0)).collect();
        points[4321].1 = 1000.0;
        points[777].1 = -5.0;
        let thin = decimate(points.clone(), 100);
        assert!(thin.len() <= 400, "{}", thin.len());
        assert!(thin.contains(&(4321.0, 1000.0)));
        assert!(thin.contains(&(777.0, -5.0)));
        assert_eq!(thin.first(), points.first());
        assert_eq!(thin.last(), points.last());
        assert!(thin.windows(2).all(|w| w[0].0 < w[1].0));
        let few = vec![(0.0, 1.0), (1.0, 2.0)];
        assert_eq!(decimate(few.clone(), 100), few);
    }

    #[test]
    fn labels_split_at_the_slash() {
        assert_eq!(split_label("16T/16Q"), vec!["16T/", "16Q"]);
        assert_eq!(split_label("File Server"), vec!["File", "Server"]);
        assert_eq!(split_label("abc"), vec!["abc"]);
    }
}
