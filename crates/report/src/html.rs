//! `index.html`: the review as a page, with charts referenced from
//! `charts/<id>.svg` and their data from `csv/<id>.csv`.

use std::fmt::Write as _;

use crate::format::target_colour_hex;
use crate::model::{Review, Section, SteadyState, Table};

/// Where a chart was written, as the page needs it.
pub(crate) struct ChartRef {
    pub id: String,
    pub title: String,
    pub svg_href: String,
    pub csv_href: String,
    pub width_px: u32,
    pub height_px: u32,
}

const STYLE: &str = r#"
body { margin: 0; background: #f4f4f2; color: #1d1d1d;
  font: 16px/1.55 -apple-system, "Segoe UI", "Helvetica Neue", Arial, sans-serif; }
main { max-width: 1780px; margin: 0 auto; padding: 24px 32px 48px; background: #fff; }
header { border-bottom: 3px solid #1d1d1d; margin-bottom: 24px; }
h1 { font-size: 2rem; line-height: 1.2; margin: 8px 0 4px; }
.subtitle { color: #555; margin: 0 0 16px; }
h2 { font-size: 1.45rem; margin: 40px 0 8px; padding-top: 8px; border-top: 1px solid #ddd; }
h3 { font-size: 1.05rem; margin: 20px 0 6px; }
p { max-width: 860px; }
.charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(min(100%, 760px), 1fr)); gap: 24px 32px; }
figure { margin: 0; }
figure img { display: block; width: 100%; max-width: 860px; height: auto; border: 1px solid #e4e4e4; }
figcaption { font-size: 0.85rem; color: #555; margin-top: 4px; }
table { border-collapse: collapse; margin: 8px 0 16px; font-size: 0.92rem; }
th, td { border: 1px solid #d8d8d8; padding: 5px 10px; text-align: left; vertical-align: top; }
th { background: #f0f0ee; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.swatch { display: inline-block; width: 14px; height: 14px; border-radius: 2px; margin-right: 8px; vertical-align: -2px; }
.ok { color: #0a6b2b; font-weight: 600; }
.no { color: #a4161a; font-weight: 600; }
pre { background: #f6f6f4; border: 1px solid #e0e0e0; padding: 12px; overflow-x: auto; font-size: 0.85rem; max-width: 1100px; }
nav ol { columns: 2; max-width: 860px; }
footer { margin-top: 40px; color: #555; font-size: 0.9rem; }
@media print {
  @page { size: A4 landscape; margin: 12mm; }
  body { background: #fff; font-size: 10.5pt; }
  main { max-width: none; padding: 0; }
  h2 { margin-top: 18px; break-after: avoid; }
  h3 { break-after: avoid; }
  p { max-width: none; }
  .charts { grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 4mm 6mm; }
  figure { break-inside: avoid; min-width: 0; }
  figure img { box-sizing: border-box; width: 100%; height: auto; max-width: 100%; max-height: 160mm; object-fit: contain; }
  table { font-size: 8.5pt; }
  th, td { padding: 2px 6px; }
  tr { break-inside: avoid; }
  pre { white-space: pre-wrap; font-size: 7.5pt; max-width: none; }
  nav ol { max-width: none; }
}
"#;

/// Renders the page. `charts` holds the written chart files of every
/// section, in the order of `review.sections[..].charts`.
pub(crate) fn page(review: &Review, charts: &[ChartRef]) -> String {
    let mut out = String::with_capacity(16 * 1024);
    let title = escape(&review.title);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{title}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<main>\n\
         <header>\n<h1>{title}</h1>\n"
    );
    if !review.subtitle.is_empty() {
        let _ = writeln!(
            out,
            "<p class=\"subtitle\">{}</p>",
            escape(&review.subtitle)
        );
    }
    out.push_str("</header>\n");
    targets(&mut out, review);
    contents(&mut out, review);
    let mut charts = charts.iter();
    for section in &review.sections {
        section_html(&mut out, section, &mut charts);
    }
    configuration(&mut out, review);
    out.push_str(
        "<footer>Every number plotted is in <a href=\"results.json\">results.json</a>; \
         each chart's data is also in <code>csv/&lt;chart&gt;.csv</code>. \
         Rendered by openvsl.</footer>\n</main>\n</body>\n</html>\n",
    );
    out
}

fn targets(out: &mut String, review: &Review) {
    out.push_str("<section id=\"targets\">\n<h2>Targets compared</h2>\n");
    out.push_str("<table>\n<tr><th>Target</th><th>Description</th></tr>\n");
    for (i, t) in review.targets.iter().enumerate() {
        let _ = writeln!(
            out,
            "<tr><td><span class=\"swatch\" style=\"background:{}\"></span>{}</td><td>{}</td></tr>",
            target_colour_hex(i),
            escape(&t.name),
            escape(&t.description)
        );
    }
    out.push_str("</table>\n</section>\n");
}

fn contents(out: &mut String, review: &Review) {
    out.push_str("<nav id=\"contents\">\n<h2>Contents</h2>\n<ol>\n");
    for s in &review.sections {
        let _ = writeln!(
            out,
            "<li><a href=\"#{}\">{}</a></li>",
            escape(&s.id),
            escape(&s.title)
        );
    }
    out.push_str("<li><a href=\"#configuration\">Test configuration</a></li>\n</ol>\n</nav>\n");
}

fn section_html<'a>(
    out: &mut String,
    section: &Section,
    charts: &mut impl Iterator<Item = &'a ChartRef>,
) {
    let _ = writeln!(
        out,
        "<section id=\"{}\">\n<h2>{}</h2>",
        escape(&section.id),
        escape(&section.title)
    );
    for paragraph in section
        .text
        .split("\n\n")
        .map(str::trim)
        .filter(|p| !p.is_empty())
    {
        let _ = writeln!(out, "<p>{}</p>", escape(paragraph));
    }
    if !section.steady_state.is_empty() {
        steady_state(out, &section.steady_state);
    }
    if !section.charts.is_empty() {
        out.push_str("<div class=\"charts\">\n");
        for chart in charts.take(section.charts.len()) {
            let _ = writeln!(
                out,
                "<figure id=\"chart-{id}\"><img src=\"{svg}\" alt=\"{title}\" width=\"{w}\" height=\"{h}\" loading=\"lazy\">\
                 <figcaption><a href=\"{csv}\">data (CSV)</a></figcaption></figure>",
                id = escape(&chart.id),
                svg = escape(&chart.svg_href),
                csv = escape(&chart.csv_href),
                title = escape(&chart.title),
                w = chart.width_px,
                h = chart.height_px,
            );
        }
        out.push_str("</div>\n");
    }
    for table in &section.tables {
        table_html(out, table);
    }
    out.push_str("</section>\n");
}

fn steady_state(out: &mut String, results: &[SteadyState]) {
    out.push_str(
        "<h3>Steady state (SNIA PTS)</h3>\n<table>\n<tr><th>Target</th><th>Steady state</th>\
         <th>Rounds run</th><th>Note</th></tr>\n",
    );
    for r in results {
        let verdict = match r.converged_round {
            Some(round) => format!("<span class=\"ok\">reached in round {round}</span>"),
            None => "<span class=\"no\">did not converge</span>".to_owned(),
        };
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{verdict}</td><td class=\"num\">{}</td><td>{}</td></tr>",
            escape(&r.target),
            r.rounds_run,
            escape(&r.note)
        );
    }
    out.push_str("</table>\n");
}

fn table_html(out: &mut String, table: &Table) {
    if !table.title.is_empty() {
        let _ = writeln!(out, "<h3>{}</h3>", escape(&table.title));
    }
    out.push_str("<table>\n<tr>");
    for c in &table.columns {
        let _ = write!(out, "<th>{}</th>", escape(c));
    }
    out.push_str("</tr>\n");
    for row in &table.rows {
        out.push_str("<tr>");
        for cell in row {
            let class = if looks_numeric(cell) {
                " class=\"num\""
            } else {
                ""
            };
            let _ = write!(out, "<td{class}>{}</td>", escape(cell));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
}

/// Right-align cells such as "140,230", "1.8 ms", "-3 %", "257K".
fn looks_numeric(cell: &str) -> bool {
    let first = cell.trim_start_matches(['-', '+', '≈', ' ']).chars().next();
    first.is_some_and(|c| c.is_ascii_digit())
}

fn configuration(out: &mut String, review: &Review) {
    out.push_str("<section id=\"configuration\">\n<h2>Test configuration</h2>\n");
    match review.seed {
        Some(seed) => {
            let _ = writeln!(out, "<p>Seed: <code>{seed}</code></p>");
        }
        None => out.push_str("<p>Seed: none (real-time run)</p>\n"),
    }
    if !review.configuration.is_empty() {
        let _ = writeln!(out, "<pre>{}</pre>", escape(&review.configuration));
    }
    out.push_str("</section>\n");
}

/// Escapes text for HTML content and double-quoted attributes: the one
/// escaping path of the report and the dashboard.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup() {
        assert_eq!(
            escape("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }

    #[test]
    fn numeric_cells() {
        assert!(looks_numeric("140,230"));
        assert!(looks_numeric("≈ 1.8 ms"));
        assert!(!looks_numeric("did not"));
        assert!(!looks_numeric(""));
    }
}
