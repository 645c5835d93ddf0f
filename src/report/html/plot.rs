//! Plots: panels of lines and of bars drawn by `plotters` into SVG text, each with
//! its legend, and the `<figure>` around a drawn plot.

use super::text::{escape, short_number};
use anyhow::{Context, Result};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::ops::Range;

/// A plot's width and height (before its legend) in CSS pixels: two side by side fit
/// a 1200-pixel window.
const PLOT_WIDTH_PX: u32 = 560;
const PLOT_HEIGHT_PX: u32 = 320;

/// Height of one row of a legend, in pixels.
const LEGEND_ROW_PX: i32 = 20;

/// Series colours, in the order series get them: Tableau 10 without its grey, which
/// the grid lines would hide.
const PALETTE: [RGBColor; 9] = [
    RGBColor(0x4e, 0x79, 0xa7),
    RGBColor(0xf2, 0x8e, 0x2b),
    RGBColor(0xe1, 0x57, 0x59),
    RGBColor(0x76, 0xb7, 0xb2),
    RGBColor(0x59, 0xa1, 0x4f),
    RGBColor(0xed, 0xc9, 0x48),
    RGBColor(0xb0, 0x7a, 0xa1),
    RGBColor(0xff, 0x9d, 0xa7),
    RGBColor(0x9c, 0x75, 0x5f),
];

/// Series of at most this many points also get a marker at every point, so that a
/// run of one or two epochs still shows its values.
const MARKED_POINTS_MAX: usize = 60;

/// `#rrggbb` of a colour.
fn hex(c: RGBColor) -> String {
    format!("#{:02x}{:02x}{:02x}", c.0, c.1, c.2)
}

/// The range an axis shows for `values`: from zero (or the least value, when negative)
/// to a little above the largest; never empty.
fn axis_range(values: impl Iterator<Item = f64>) -> Range<f64> {
    let (lo, hi) = values.filter(|v| v.is_finite()).fold((0.0f64, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let span = hi - lo;
    if span <= 0.0 {
        lo..lo + 1.0
    } else {
        lo..hi + span * 0.05
    }
}

/// The x range of a panel of lines: from its first point to its last, so that a run
/// of a few epochs (points at 31, 62 and 93 ms) fills the plot rather than its right
/// two thirds; a single point sits in the middle of a range around it.
pub(super) fn x_span(xs: impl Iterator<Item = f64>) -> Range<f64> {
    let (lo, hi) = xs.filter(|x| x.is_finite()).fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| (lo.min(x), hi.max(x)));
    if !lo.is_finite() {
        0.0..1.0
    } else if hi > lo {
        lo..hi
    } else {
        let half = if lo == 0.0 { 1.0 } else { lo.abs() * 0.5 };
        lo - half..lo + half
    }
}

/// One line of a panel of time series.
pub(super) struct Line {
    pub(super) name: String,
    pub(super) colour: RGBColor,
    pub(super) points: Vec<(f64, f64)>,
}

/// A panel of lines against a shared x axis.
pub(super) struct LinePanel {
    pub(super) title: String,
    pub(super) x_desc: String,
    pub(super) y_desc: String,
    /// The y axis's range when fixed (shares go from 0 to 1), else fitted to the data.
    pub(super) y_range: Option<Range<f64>>,
    pub(super) lines: Vec<Line>,
    pub(super) caption: String,
}

/// A panel of bars: in each group one bar per colour.
pub(super) struct BarPanel {
    pub(super) title: String,
    pub(super) y_desc: String,
    /// The name and colour of each bar of a group.
    pub(super) colours: Vec<(String, RGBColor)>,
    /// The label of each group, one line per axis value.
    pub(super) groups: Vec<Vec<String>>,
    /// The axis of each line of the groups' labels, written left of the first group.
    pub(super) group_axes: Vec<String>,
    /// Per group, per colour: the bar's height, or None when no run gave one.
    pub(super) values: Vec<Vec<Option<f64>>>,
    /// A horizontal line across the plot (1 for bars relative to a baseline).
    pub(super) reference: Option<f64>,
    pub(super) caption: String,
}

/// A drawn plot: its SVG text, the pixel box of its plotting area (left, top, right,
/// bottom) within the SVG, and the colours of the series it drew data with.
pub(super) struct Plot {
    title: String,
    svg: String,
    area_px: [i32; 4],
    colours: Vec<RGBColor>,
}

impl Plot {
    /// The plot as a `<figure>` with `caption` below it.
    pub(super) fn figure(&self, caption: &str) -> String {
        let colours: Vec<String> = self.colours.iter().map(|c| hex(*c)).collect();
        let [l, t, r, b] = self.area_px;
        // Inline SVG needs no namespace in HTML; without it the page names no URL.
        let svg = self.svg.replacen(" xmlns=\"http://www.w3.org/2000/svg\"", "", 1);
        let caption = if caption.is_empty() { String::new() } else { format!("<figcaption>{}</figcaption>\n", escape(caption)) };
        let width_px = svg_width_px(&svg);
        format!(
            "<figure class=\"plot\" style=\"width:{width_px}px\" data-title=\"{}\" data-colours=\"{}\" data-plot-area=\"{l} {t} {r} {b}\">\n{svg}{caption}</figure>\n",
            escape(&self.title),
            colours.join(" ")
        )
    }
}

/// The width attribute of an SVG's root element, in pixels.
fn svg_width_px(svg: &str) -> u32 {
    svg.split_once("width=\"").and_then(|(_, rest)| rest.split_once('"')).and_then(|(w, _)| w.parse().ok()).unwrap_or(PLOT_WIDTH_PX)
}

/// Estimated width of `text` at the legend's font size, in pixels (the SVG's text is
/// laid out by the browser; this only spaces the entries).
fn text_width_px(text: &str) -> i32 {
    text.chars().count() as i32 * 7
}

/// Places legend entries in rows across `width_px`: the top-left corner of each, and
/// the legend's height (0 without entries).
fn legend_layout(names: &[&str], width_px: i32) -> (Vec<(i32, i32)>, i32) {
    let (mut x, mut y) = (10, 2);
    let mut places = Vec::with_capacity(names.len());
    for name in names {
        let w = 18 + text_width_px(name) + 16;
        if x > 10 && x + w > width_px - 10 {
            x = 10;
            y += LEGEND_ROW_PX;
        }
        places.push((x, y));
        x += w;
    }
    let height = if names.is_empty() { 0 } else { y + LEGEND_ROW_PX + 2 };
    (places, height)
}

/// The style of the text of legends and group labels, anchored at its top-left or its
/// top centre.
fn label_style(h: HPos) -> TextStyle<'static> {
    TextStyle::from(("sans-serif", 15).into_font()).pos(Pos::new(h, VPos::Top))
}

/// Draws a legend of `entries` (name and colour) at `places` on `area`.
fn draw_legend(area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>, entries: &[(&str, RGBColor)], places: &[(i32, i32)]) -> Result<()> {
    for ((name, colour), &(x, y)) in entries.iter().zip(places) {
        area.draw(&Rectangle::new([(x, y + 3), (x + 12, y + 15)], colour.filled()))?;
        area.draw(&Text::new(name.to_string(), (x + 18, y + 2), label_style(HPos::Left)))?;
    }
    Ok(())
}

/// Draws a panel of lines.
fn draw_lines(panel: &LinePanel) -> Result<Plot> {
    let names: Vec<&str> = if panel.lines.len() > 1 { panel.lines.iter().map(|l| l.name.as_str()).collect() } else { Vec::new() };
    let (places, legend_px) = legend_layout(&names, PLOT_WIDTH_PX as i32);
    let size = (PLOT_WIDTH_PX, PLOT_HEIGHT_PX + legend_px as u32);
    let x_range = x_span(panel.lines.iter().flat_map(|l| l.points.iter().map(|p| p.0)));
    let y_range = panel.y_range.clone().unwrap_or_else(|| axis_range(panel.lines.iter().flat_map(|l| l.points.iter().map(|p| p.1))));
    let mut svg = String::new();
    let area_px;
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        root.fill(&WHITE)?;
        let body = root.titled(&panel.title, ("sans-serif", 18))?;
        let (key, body) = body.split_vertically(legend_px);
        let entries: Vec<(&str, RGBColor)> = names.iter().zip(&panel.lines).map(|(n, l)| (*n, l.colour)).collect();
        draw_legend(&key, &entries, &places)?;
        let mut chart = ChartBuilder::on(&body)
            .margin_top(4)
            .margin_right(18)
            .margin_bottom(4)
            .x_label_area_size(44)
            .y_label_area_size(68)
            .build_cartesian_2d(x_range, y_range)?;
        chart
            .configure_mesh()
            .x_desc(panel.x_desc.as_str())
            .y_desc(panel.y_desc.as_str())
            .x_label_formatter(&|v| short_number(*v))
            .y_label_formatter(&|v| short_number(*v))
            .max_light_lines(1)
            .label_style(("sans-serif", 14))
            .axis_desc_style(("sans-serif", 15))
            .draw()?;
        for l in &panel.lines {
            let points: Vec<(f64, f64)> = l.points.iter().copied().filter(|p| p.0.is_finite() && p.1.is_finite()).collect();
            chart.draw_series(LineSeries::new(points.iter().copied(), l.colour.stroke_width(2)))?;
            if points.len() <= MARKED_POINTS_MAX {
                chart.draw_series(points.iter().map(|&p| Circle::new(p, 3, l.colour.filled())))?;
            }
        }
        let (xs, ys) = chart.plotting_area().get_pixel_range();
        area_px = [xs.start, ys.start, xs.end, ys.end];
        root.present()?;
    }
    // A line counts as drawn when it has a point and no line drawn after it covers it.
    let drawn = |i: usize, l: &Line| l.points.iter().any(|p| p.0.is_finite() && p.1.is_finite()) && panel.lines[i + 1..].iter().all(|later| later.points != l.points);
    let colours = panel.lines.iter().enumerate().filter(|(i, l)| drawn(*i, l)).map(|(_, l)| l.colour).collect();
    Ok(Plot { title: panel.title.clone(), svg, area_px, colours })
}

/// Draws a panel of bars.
pub(super) fn draw_bars(panel: &BarPanel) -> Result<Plot> {
    let (n_groups, n_colours) = (panel.groups.len().max(1), panel.colours.len().max(1));
    let width_px = PLOT_WIDTH_PX.max((n_groups * n_colours) as u32 * 18 + 140);
    let names: Vec<&str> = if panel.colours.len() > 1 { panel.colours.iter().map(|c| c.0.as_str()).collect() } else { Vec::new() };
    let (places, legend_px) = legend_layout(&names, width_px as i32);
    let label_lines = panel.groups.iter().map(Vec::len).max().unwrap_or(0) as u32;
    let label_px = 16 * label_lines + 8;
    // Room on the left for the y labels and for the group axes' names below them.
    let left_px = panel.group_axes.iter().map(|a| text_width_px(a) + 14).max().unwrap_or(0).max(68) as u32;
    let size = (width_px, PLOT_HEIGHT_PX + legend_px as u32 + label_px);
    let heights = panel.values.iter().flatten().flatten().copied().chain(panel.reference);
    let y_range = axis_range(heights);
    // Bars share 80 % of their group's width, each at most 30 % of it, centred.
    let bar_width = (0.8 / n_colours as f64).min(0.3);
    let first_bar = (1.0 - bar_width * n_colours as f64) / 2.0;
    let mut svg = String::new();
    let area_px;
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        root.fill(&WHITE)?;
        let body = root.titled(&panel.title, ("sans-serif", 18))?;
        let (key, body) = body.split_vertically(legend_px);
        let entries: Vec<(&str, RGBColor)> = names.iter().zip(&panel.colours).map(|(n, c)| (*n, c.1)).collect();
        draw_legend(&key, &entries, &places)?;
        let mut chart = ChartBuilder::on(&body)
            .margin_top(4)
            .margin_right(18)
            .margin_bottom(4)
            .x_label_area_size(label_px)
            .y_label_area_size(left_px)
            .build_cartesian_2d(0.0..n_groups as f64, y_range.clone())?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .y_desc(panel.y_desc.as_str())
            .y_label_formatter(&|v| short_number(*v))
            .max_light_lines(1)
            .label_style(("sans-serif", 14))
            .axis_desc_style(("sans-serif", 15))
            .draw()?;
        for (c, (_, colour)) in panel.colours.iter().enumerate() {
            let bars = panel.values.iter().enumerate().filter_map(|(g, row)| {
                let v = row.get(c).copied().flatten()?;
                let left = g as f64 + first_bar + c as f64 * bar_width;
                Some(Rectangle::new([(left, 0.0f64.max(y_range.start)), (left + bar_width * 0.92, v)], colour.filled()))
            });
            chart.draw_series(bars)?;
        }
        if let Some(r) = panel.reference {
            chart.draw_series(LineSeries::new([(0.0, r), (n_groups as f64, r)], BLACK.stroke_width(1)))?;
        }
        for (g, lines) in panel.groups.iter().enumerate() {
            let (x, y) = chart.backend_coord(&(g as f64 + 0.5, y_range.start));
            for (i, line) in lines.iter().enumerate() {
                root.draw(&Text::new(line.clone(), (x, y + 6 + 16 * i as i32), label_style(HPos::Center)))?;
            }
        }
        // The axis of each label line, in the label area left of the first group.
        let (x, y) = chart.backend_coord(&(0.0, y_range.start));
        for (i, axis) in panel.group_axes.iter().enumerate() {
            root.draw(&Text::new(format!("{axis}:"), (x - 4, y + 6 + 16 * i as i32), label_style(HPos::Right)))?;
        }
        let (xs, ys) = chart.plotting_area().get_pixel_range();
        area_px = [xs.start, ys.start, xs.end, ys.end];
        root.present()?;
    }
    // A colour counts as drawn when one of its bars is at least 2 % of the axis tall.
    let visible = |c: usize| panel.values.iter().any(|row| row.get(c).copied().flatten().is_some_and(|v| v >= 0.02 * y_range.end));
    let colours = panel.colours.iter().enumerate().filter(|(c, _)| visible(*c)).map(|(_, (_, colour))| *colour).collect();
    Ok(Plot { title: panel.title.clone(), svg, area_px, colours })
}

/// The figures of a list of drawn panels.
pub(super) fn panels_html(figures: &[String]) -> String {
    format!("<div class=\"panels\">\n{}</div>\n", figures.concat())
}

/// Draws each panel of lines as a figure.
pub(super) fn line_figures(panels: &[LinePanel]) -> Result<Vec<String>> {
    panels.iter().map(|p| Ok(draw_lines(p).with_context(|| format!("plot {}", p.title))?.figure(&p.caption))).collect()
}

/// The colour of a page's `i`th series.
pub(super) fn colour(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}
