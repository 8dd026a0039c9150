//! Dependency-free SVG line charts for the benchmark report.
//!
//! [`render`] turns a [`Chart`] (series of `(x, y)` points, optional dashed
//! reference lines) into a standalone SVG 1.1 document of 640 × 400 px, to be
//! embedded in the generated Markdown report and read on GitHub in light
//! mode: white background, light grid, "nice" 1-2-5 ticks (powers of ten on
//! logarithmic axes), the Okabe–Ito colour-blind-friendly palette, a legend.
//!
//! What it must never do:
//!
//! - panic on odd data: NaN, ±∞, points invalid for a logarithmic axis,
//!   empty charts, a single point, equal values or extreme magnitudes all
//!   render something sensible (at worst a frame saying "no data");
//! - emit unescaped text: every piece of caller text (title, labels, series
//!   and reference names) goes through `escape`, which also drops the
//!   characters XML 1.0 forbids;
//! - be non-deterministic: the same chart always gives byte-identical output
//!   (no hash maps, no clocks, coordinates rounded to one decimal place);
//! - use anything beyond basic SVG elements (`svg`, `rect`, `line`,
//!   `polyline`, `circle`, `text`, `g`) with inline attributes: no CSS, no
//!   scripts, no external fonts.

/// One line on a chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// The name shown in the legend.
    pub name: String,
    /// The points, `(x, y)`; drawn in order of increasing x. Points that are
    /// not finite, or not positive on a logarithmic axis, are skipped.
    pub points: Vec<(f64, f64)>,
}

/// A horizontal reference line (a target, a limit) drawn dashed with its label.
#[derive(Debug, Clone, PartialEq)]
pub struct Reference {
    /// The text shown at the right end of the line.
    pub label: String,
    /// Where the line is, in data units of the y axis; the y axis is widened
    /// to include it. Skipped if not finite (or not positive on a log axis).
    pub y: f64,
}

/// A line chart: its texts, axes and lines.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    /// The title, at the top.
    pub title: String,
    /// The label under the x axis.
    pub x_label: String,
    /// The label along the y axis.
    pub y_label: String,
    /// Logarithmic x axis (points with x <= 0 are skipped).
    pub x_log: bool,
    /// Logarithmic y axis (points with y <= 0 are skipped).
    pub y_log: bool,
    /// On a linear y axis, start it at 0 rather than at the data's minimum.
    pub y_from_zero: bool,
    /// The lines, coloured from a fixed palette in this order.
    pub series: Vec<Series>,
    /// Dashed horizontal reference lines.
    pub references: Vec<Reference>,
}

/// Okabe–Ito palette, ordered so the colours that read best on white come
/// first (the yellow, faint on white, last).
const PALETTE: [&str; 8] = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000", "#F0E442"];

const WIDTH: f64 = 640.0;
const HEIGHT: f64 = 400.0;
const PLOT_LEFT: f64 = 72.0;
const PLOT_RIGHT: f64 = 470.0;
const PLOT_TOP: f64 = 44.0;
const PLOT_BOTTOM: f64 = 340.0;
const LEGEND_X: f64 = 484.0;
const LEGEND_TOP: f64 = 52.0;
const LEGEND_LINE_HEIGHT: f64 = 18.0;
/// Longer series names are cut (with an ellipsis) so the legend fits.
const LEGEND_NAME_CHARS: usize = 20;
/// A linear axis has at most this many intervals between ticks.
const MAX_LINEAR_INTERVALS: f64 = 7.0;
/// A logarithmic axis has at most this many intervals between ticks.
const MAX_LOG_INTERVALS: i32 = 8;

const GRID_COLOUR: &str = "#e6e6e6";
const FRAME_COLOUR: &str = "#888888";
const TEXT_COLOUR: &str = "#222222";
const TICK_COLOUR: &str = "#444444";
const REFERENCE_COLOUR: &str = "#777777";

/// The chart as a standalone SVG document (640 × 400 px).
///
/// The document starts with `<svg` (no XML declaration) and ends with
/// `</svg>` (no trailing newline). A chart without any drawable point gives
/// the frame, the title and the text "no data".
pub fn render(chart: &Chart) -> String {
    let series: Vec<Vec<(f64, f64)>> =
        chart.series.iter().map(|s| drawable_points(&s.points, chart.x_log, chart.y_log)).collect();
    let references: Vec<&Reference> = chart.references.iter().filter(|r| valid_value(r.y, chart.y_log)).collect();

    let mut out = String::new();
    out.push_str(&format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"{w}\" height=\"{h}\" \
         viewBox=\"0 0 {w} {h}\" font-family=\"sans-serif\">\n",
        w = num(WIDTH),
        h = num(HEIGHT)
    ));
    out.push_str(&format!(
        "<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"#ffffff\"/>\n",
        num(WIDTH),
        num(HEIGHT)
    ));
    push_text(
        &mut out,
        WIDTH / 2.0,
        26.0,
        "middle",
        &format!("font-size=\"16\" font-weight=\"bold\" fill=\"{TEXT_COLOUR}\""),
        &chart.title,
    );
    let plot_mid_x = (PLOT_LEFT + PLOT_RIGHT) / 2.0;
    let plot_mid_y = (PLOT_TOP + PLOT_BOTTOM) / 2.0;
    push_text(
        &mut out,
        plot_mid_x,
        380.0,
        "middle",
        &format!("font-size=\"12\" fill=\"{TEXT_COLOUR}\""),
        &chart.x_label,
    );
    push_text(
        &mut out,
        16.0,
        plot_mid_y,
        "middle",
        &format!("font-size=\"12\" fill=\"{TEXT_COLOUR}\" transform=\"rotate(-90 {} {})\"", num(16.0), num(plot_mid_y)),
        &chart.y_label,
    );

    let Some(extent) = Extent::of(&series) else {
        push_frame(&mut out);
        push_text(&mut out, plot_mid_x, plot_mid_y, "middle", "font-size=\"14\" fill=\"#777777\"", "no data");
        out.push_str("</svg>");
        return out;
    };
    let (mut y_min, mut y_max) = (extent.y_min, extent.y_max);
    for reference in &references {
        y_min = y_min.min(reference.y);
        y_max = y_max.max(reference.y);
    }
    let x_axis = Axis::new(extent.x_min, extent.x_max, chart.x_log, false);
    let y_axis = Axis::new(y_min, y_max, chart.y_log, chart.y_from_zero);
    let px = |x: f64| PLOT_LEFT + x_axis.fraction(x) * (PLOT_RIGHT - PLOT_LEFT);
    let py = |y: f64| PLOT_BOTTOM - y_axis.fraction(y) * (PLOT_BOTTOM - PLOT_TOP);

    // Grid.
    out.push_str(&format!("<g stroke=\"{GRID_COLOUR}\" stroke-width=\"1\">\n"));
    for tick in &x_axis.ticks {
        let x = num(PLOT_LEFT + x_axis.fraction_of_transformed(tick.at) * (PLOT_RIGHT - PLOT_LEFT));
        out.push_str(&format!("<line x1=\"{x}\" y1=\"{}\" x2=\"{x}\" y2=\"{}\"/>\n", num(PLOT_TOP), num(PLOT_BOTTOM)));
    }
    for tick in &y_axis.ticks {
        let y = num(PLOT_BOTTOM - y_axis.fraction_of_transformed(tick.at) * (PLOT_BOTTOM - PLOT_TOP));
        out.push_str(&format!("<line x1=\"{}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\"/>\n", num(PLOT_LEFT), num(PLOT_RIGHT)));
    }
    out.push_str("</g>\n");

    // Tick labels.
    out.push_str(&format!("<g font-size=\"11\" fill=\"{TICK_COLOUR}\">\n"));
    for tick in &x_axis.ticks {
        let x = PLOT_LEFT + x_axis.fraction_of_transformed(tick.at) * (PLOT_RIGHT - PLOT_LEFT);
        push_text(&mut out, x, PLOT_BOTTOM + 16.0, "middle", "", &tick.label);
    }
    for tick in &y_axis.ticks {
        let y = PLOT_BOTTOM - y_axis.fraction_of_transformed(tick.at) * (PLOT_BOTTOM - PLOT_TOP);
        push_text(&mut out, PLOT_LEFT - 6.0, y + 4.0, "end", "", &tick.label);
    }
    out.push_str("</g>\n");

    push_frame(&mut out);

    // Reference lines, under the data.
    if !references.is_empty() {
        out.push_str(&format!("<g stroke=\"{REFERENCE_COLOUR}\" stroke-width=\"1\" stroke-dasharray=\"6 4\">\n"));
        for reference in &references {
            let y = num(py(reference.y));
            out.push_str(&format!(
                "<line x1=\"{}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\"/>\n",
                num(PLOT_LEFT),
                num(PLOT_RIGHT)
            ));
        }
        out.push_str("</g>\n");
        out.push_str("<g font-size=\"11\" fill=\"#555555\">\n");
        for reference in &references {
            push_text(&mut out, PLOT_RIGHT - 4.0, py(reference.y) - 4.0, "end", "", &reference.label);
        }
        out.push_str("</g>\n");
    }

    // The series.
    for (index, points) in series.iter().enumerate() {
        let colour = colour(index);
        out.push_str(&format!("<g stroke=\"{colour}\" fill=\"{colour}\">\n"));
        if points.len() > 1 {
            let coordinates: Vec<String> =
                points.iter().map(|&(x, y)| format!("{},{}", num(px(x)), num(py(y)))).collect();
            out.push_str(&format!(
                "<polyline fill=\"none\" stroke-width=\"2\" stroke-linejoin=\"round\" points=\"{}\"/>\n",
                coordinates.join(" ")
            ));
        }
        for &(x, y) in points {
            out.push_str(&format!("<circle cx=\"{}\" cy=\"{}\" r=\"3\"/>\n", num(px(x)), num(py(y))));
        }
        out.push_str("</g>\n");
    }

    // Legend.
    if !chart.series.is_empty() {
        out.push_str(&format!("<g font-size=\"12\" fill=\"{TEXT_COLOUR}\">\n"));
        for (index, s) in chart.series.iter().enumerate() {
            let colour = colour(index);
            let y = LEGEND_TOP + index as f64 * LEGEND_LINE_HEIGHT;
            out.push_str(&format!(
                "<line x1=\"{}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\" stroke=\"{colour}\" stroke-width=\"2\"/>\n",
                num(LEGEND_X),
                num(LEGEND_X + 20.0),
                y = num(y)
            ));
            out.push_str(&format!(
                "<circle cx=\"{}\" cy=\"{}\" r=\"3\" fill=\"{colour}\"/>\n",
                num(LEGEND_X + 10.0),
                num(y)
            ));
            push_text(&mut out, LEGEND_X + 26.0, y + 4.0, "start", "", &truncate(&s.name, LEGEND_NAME_CHARS));
        }
        out.push_str("</g>\n");
    }

    out.push_str("</svg>");
    out
}

/// The colour of the series at `index` (the palette repeats after 8).
fn colour(index: usize) -> &'static str {
    PALETTE[index % PALETTE.len()]
}

/// The frame around the plot area.
fn push_frame(out: &mut String) {
    out.push_str(&format!(
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"{FRAME_COLOUR}\" stroke-width=\"1\"/>\n",
        num(PLOT_LEFT),
        num(PLOT_TOP),
        num(PLOT_RIGHT - PLOT_LEFT),
        num(PLOT_BOTTOM - PLOT_TOP)
    ));
}

/// A `<text>` element; `content` is escaped, `attributes` (trusted, ours) are
/// copied as they are.
fn push_text(out: &mut String, x: f64, y: f64, anchor: &str, attributes: &str, content: &str) {
    let separator = if attributes.is_empty() { "" } else { " " };
    out.push_str(&format!(
        "<text x=\"{}\" y=\"{}\" text-anchor=\"{anchor}\"{separator}{attributes}>{}</text>\n",
        num(x),
        num(y),
        escape(content)
    ));
}

/// Text made safe for XML content and attribute values: `&`, `<`, `>`, `"`
/// and `'` escaped, tabs and line breaks turned into spaces, other control
/// characters and the non-characters U+FFFE and U+FFFF (invalid in XML 1.0)
/// dropped.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' | '\r' => out.push(' '),
            '\u{FFFE}' | '\u{FFFF}' => {}
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// `text` cut to at most `max_chars` characters, the last one an ellipsis if
/// it was cut.
fn truncate(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(max_chars.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// A coordinate with at most one decimal place, no trailing `.0`, no `-0`.
fn num(value: f64) -> String {
    let value = if value.is_finite() { value } else { 0.0 };
    let text = format!("{value:.1}");
    let text = text.strip_suffix(".0").unwrap_or(&text);
    if text == "-0" { "0".to_owned() } else { text.to_owned() }
}

/// Whether `value` can be drawn on an axis (logarithmic or not).
fn valid_value(value: f64, log: bool) -> bool {
    value.is_finite() && (!log || value > 0.0)
}

/// The points that can be drawn, in order of increasing x (stable).
fn drawable_points(points: &[(f64, f64)], x_log: bool, y_log: bool) -> Vec<(f64, f64)> {
    let mut drawable: Vec<(f64, f64)> =
        points.iter().copied().filter(|&(x, y)| valid_value(x, x_log) && valid_value(y, y_log)).collect();
    drawable.sort_by(|a, b| a.0.total_cmp(&b.0));
    drawable
}

/// The bounding box of all drawable points.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Extent {
    x_min: f64,
    x_max: f64,
    y_min: f64,
    y_max: f64,
}

impl Extent {
    /// The bounding box, or `None` if there is no point at all.
    fn of(series: &[Vec<(f64, f64)>]) -> Option<Extent> {
        let mut points = series.iter().flatten();
        let &(x, y) = points.next()?;
        let mut extent = Extent { x_min: x, x_max: x, y_min: y, y_max: y };
        for &(x, y) in points {
            extent.x_min = extent.x_min.min(x);
            extent.x_max = extent.x_max.max(x);
            extent.y_min = extent.y_min.min(y);
            extent.y_max = extent.y_max.max(y);
        }
        Some(extent)
    }
}

/// One tick on an axis.
#[derive(Debug, Clone, PartialEq)]
struct Tick {
    /// Position, in the axis's transformed space (log10 of the value on a
    /// logarithmic axis).
    at: f64,
    /// The label (not yet escaped).
    label: String,
}

/// An axis: its range, in transformed space (log10 of the values on a
/// logarithmic axis), and its ticks.
#[derive(Debug, Clone, PartialEq)]
struct Axis {
    log: bool,
    lo: f64,
    hi: f64,
    ticks: Vec<Tick>,
}

impl Axis {
    /// The axis for data from `min` to `max` (finite, positive if `log`).
    fn new(min: f64, max: f64, log: bool, from_zero: bool) -> Axis {
        if log { log_axis(min, max) } else { linear_axis(min, max, from_zero) }
    }

    /// Where a data value falls along the axis, 0 at its start and 1 at its
    /// end.
    fn fraction(&self, value: f64) -> f64 {
        self.fraction_of_transformed(if self.log { value.log10() } else { value })
    }

    /// Where a transformed value falls along the axis (halved first, so that
    /// differences of values near ±`f64::MAX` do not overflow).
    fn fraction_of_transformed(&self, t: f64) -> f64 {
        let fraction = (t / 2.0 - self.lo / 2.0) / (self.hi / 2.0 - self.lo / 2.0);
        if fraction.is_finite() { fraction.clamp(-0.5, 1.5) } else { 0.5 }
    }
}

/// `m`·10^`e` exactly as the decimal literal would be read (no `powi` noise).
fn decimal(m: u32, e: i32) -> f64 {
    format!("{m}e{e}").parse().unwrap_or(f64::NAN)
}

/// A linear axis covering `min..=max`, its ends and ticks on a 1-2-5 step
/// (at most [`MAX_LINEAR_INTERVALS`] intervals); padded when the values are
/// (nearly) equal; including 0 if `from_zero`.
fn linear_axis(min: f64, max: f64, from_zero: bool) -> Axis {
    let (mut lo, mut hi) = if from_zero { (min.min(0.0), max.max(0.0)) } else { (min, max) };
    let magnitude = lo.abs().max(hi.abs());
    // Written so that an overflowing difference (infinite) counts as a range.
    if hi / 2.0 - lo / 2.0 <= magnitude * 0.5e-9 {
        if magnitude == 0.0 {
            (lo, hi) = if from_zero { (0.0, 1.0) } else { (-1.0, 1.0) };
        } else {
            let pad = magnitude * 0.1;
            lo = (lo - pad).max(f64::MIN);
            hi = (hi + pad).min(f64::MAX);
        }
    }
    match nice_step(lo, hi) {
        Some((step, exponent, k_lo, k_hi)) => {
            let values: Vec<f64> = (0..=(k_hi - k_lo) as usize)
                .map(|i| {
                    let value = (k_lo + i as f64) * step;
                    if value == 0.0 { 0.0 } else { value }
                })
                .collect();
            let labels = linear_labels(&values, exponent);
            let ticks = values.iter().zip(labels).map(|(&at, label)| Tick { at, label }).collect();
            Axis { log: false, lo: k_lo * step, hi: k_hi * step, ticks }
        }
        None => {
            let ticks = [lo, hi].iter().map(|&at| Tick { at, label: trim_zeros(&format!("{at:.3e}")) }).collect();
            Axis { log: false, lo, hi, ticks }
        }
    }
}

/// The smallest 1-2-5 step giving at most [`MAX_LINEAR_INTERVALS`] intervals
/// over `lo..=hi`: `(step, its decimal exponent, first tick / step, last tick
/// / step)`, or `None` if the range is too extreme for one.
fn nice_step(lo: f64, hi: f64) -> Option<(f64, i32, f64, f64)> {
    let raw = (hi / 2.0 - lo / 2.0) / (MAX_LINEAR_INTERVALS / 2.0);
    if !(raw > 0.0 && raw.is_finite()) {
        return None;
    }
    let e0 = raw.log10().floor() as i32;
    for e in e0.saturating_sub(1)..=e0.saturating_add(2) {
        for m in [1, 2, 5] {
            let step = decimal(m, e);
            if !(step > 0.0 && step.is_finite()) {
                continue;
            }
            let k_lo = (lo / step + 1e-9).floor();
            let mut k_hi = (hi / step - 1e-9).ceil();
            if k_hi <= k_lo {
                k_hi = k_lo + 1.0;
            }
            if k_hi - k_lo <= MAX_LINEAR_INTERVALS && (k_lo * step).is_finite() && (k_hi * step).is_finite() {
                return Some((step, e, k_lo, k_hi));
            }
        }
    }
    None
}

/// Labels for ticks on a linear axis whose step is 1, 2 or 5 × 10^`step_exponent`:
/// as many decimals as the step needs, k/M/G/T suffixes from 10 000 up, and
/// scientific notation for very large or very small axes.
fn linear_labels(values: &[f64], step_exponent: i32) -> Vec<String> {
    let max_abs = values.iter().fold(0.0_f64, |acc, v| acc.max(v.abs()));
    if !(1e-3..1e15).contains(&max_abs) {
        return values
            .iter()
            .map(|&v| {
                if v == 0.0 {
                    return "0".to_owned();
                }
                let decimals = (v.abs().log10().floor() as i32).saturating_sub(step_exponent).clamp(0, 15) as usize;
                trim_zeros(&format!("{v:.decimals$e}"))
            })
            .collect();
    }
    let unit_exponent = if max_abs >= 1e4 { (max_abs.log10().floor() as i32 / 3 * 3).min(12) } else { 0 };
    let unit = decimal(1, unit_exponent);
    let decimals = unit_exponent.saturating_sub(step_exponent).clamp(0, 15) as usize;
    values
        .iter()
        .map(|&v| {
            let text = trim_zeros(&format!("{:.decimals$}", v / unit));
            if text == "0" || text == "-0" { "0".to_owned() } else { format!("{text}{}", suffix(unit_exponent)) }
        })
        .collect()
}

/// The SI suffix of 10^`exponent` (for 0, 3, 6, 9, 12).
fn suffix(exponent: i32) -> &'static str {
    match exponent {
        3 => "k",
        6 => "M",
        9 => "G",
        12 => "T",
        _ => "",
    }
}

/// A number's text without trailing zeros after the decimal point (and
/// without the point if nothing follows it); the exponent, if any, is kept.
fn trim_zeros(text: &str) -> String {
    let (mantissa, exponent) = match text.find('e') {
        Some(at) => text.split_at(at),
        None => (text, ""),
    };
    let mantissa = if mantissa.contains('.') { mantissa.trim_end_matches('0').trim_end_matches('.') } else { mantissa };
    format!("{mantissa}{exponent}")
}

/// A logarithmic axis covering `min..=max` (both positive) in whole decades:
/// ticks at the powers of 10, with the 2 and 5 multiples too over at most
/// two decades, and every n-th power over many decades.
fn log_axis(min: f64, max: f64) -> Axis {
    let snap = |l: f64| if (l - l.round()).abs() < 1e-9 { l.round() } else { l };
    let mut lo = snap(min.log10()).floor() as i32;
    let mut hi = snap(max.log10()).ceil() as i32;
    if lo >= hi {
        lo -= 1;
        hi = lo + 2;
    }
    let decades = hi - lo;
    let mut ticks = Vec::new();
    let mut push =
        |m: u32, k: i32| ticks.push(Tick { at: f64::from(m).log10() + f64::from(k), label: log_label(m, k) });
    if decades <= 2 {
        for k in lo..hi {
            for m in [1, 2, 5] {
                push(m, k);
            }
        }
        push(1, hi);
    } else {
        let stride = (decades + MAX_LOG_INTERVALS - 1) / MAX_LOG_INTERVALS;
        hi = lo + stride * ((decades + stride - 1) / stride);
        let mut k = lo;
        while k <= hi {
            push(1, k);
            k += stride;
        }
    }
    Axis { log: true, lo: f64::from(lo), hi: f64::from(hi), ticks }
}

/// The label of `m`·10^`k` on a logarithmic axis: plain from 0.001 to 999,
/// with k/M/G/T suffixes up to 999T, scientific notation beyond.
fn log_label(m: u32, k: i32) -> String {
    match k {
        0..=2 => (u64::from(m) * 10_u64.pow(k.unsigned_abs())).to_string(),
        3..=14 => {
            let unit = (k / 3 * 3).min(12);
            format!("{}{}", u64::from(m) * 10_u64.pow((k - unit).unsigned_abs()), suffix(unit))
        }
        -3..=-1 => format!("0.{}{m}", "0".repeat((k.unsigned_abs() - 1) as usize)),
        _ => format!("{m}e{k}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(series: Vec<Series>) -> Chart {
        Chart {
            title: "Throughput".to_owned(),
            x_label: "clients".to_owned(),
            y_label: "requests/s".to_owned(),
            x_log: false,
            y_log: false,
            y_from_zero: true,
            series,
            references: vec![Reference { label: "target".to_owned(), y: 50_000.0 }],
        }
    }

    fn series(name: &str, points: &[(f64, f64)]) -> Series {
        Series { name: name.to_owned(), points: points.to_vec() }
    }

    fn sample() -> Chart {
        chart(vec![
            series("trellis", &[(1.0, 20_000.0), (2.0, 41_000.0), (4.0, 80_000.0), (8.0, 137_000.0)]),
            series("echo", &[(1.0, 30_000.0), (8.0, 190_000.0)]),
        ])
    }

    fn tick_values(axis: &Axis) -> Vec<f64> {
        axis.ticks.iter().map(|t| t.at).collect()
    }

    fn tick_labels(axis: &Axis) -> Vec<&str> {
        axis.ticks.iter().map(|t| t.label.as_str()).collect()
    }

    /// Checks that tags nest properly: every opened element is closed, in
    /// order, and returns the element names in document order.
    fn check_nesting(svg: &str) -> Vec<String> {
        let mut stack: Vec<String> = Vec::new();
        let mut names = Vec::new();
        for chunk in svg.split('<').skip(1) {
            let tag = &chunk[..chunk.find('>').expect("every < has its >")];
            if let Some(name) = tag.strip_prefix('/') {
                assert_eq!(stack.pop().as_deref(), Some(name), "closing tag matches the open one");
            } else {
                let name: String = tag.chars().take_while(|c| c.is_ascii_alphanumeric()).collect();
                names.push(name.clone());
                if !tag.ends_with('/') {
                    stack.push(name);
                }
            }
        }
        assert!(stack.is_empty(), "unclosed elements: {stack:?}");
        names
    }

    #[test]
    fn output_is_a_standalone_svg_document_with_the_svg_namespace() {
        let svg = render(&sample());
        assert!(svg.starts_with("<svg "));
        assert!(svg.contains("xmlns=\"http://www.w3.org/2000/svg\""));
        assert!(svg.contains("width=\"640\" height=\"400\""));
        assert!(svg.ends_with("</svg>"));
        assert!(svg.contains("font-family=\"sans-serif\""));
    }

    #[test]
    fn every_opened_element_is_closed_and_only_basic_elements_are_used() {
        let svg = render(&sample());
        assert_eq!(svg.matches("<text").count(), svg.matches("</text>").count());
        assert_eq!(svg.matches("<g ").count() + svg.matches("<g>").count(), svg.matches("</g>").count());
        assert_eq!(svg.matches("<svg").count(), 1);
        assert_eq!(svg.matches("</svg>").count(), 1);
        for name in check_nesting(&svg) {
            assert!(
                ["svg", "rect", "line", "polyline", "circle", "text", "g"].contains(&name.as_str()),
                "unexpected element {name}"
            );
        }
        assert!(!svg.contains("<script") && !svg.contains("<style"));
    }

    #[test]
    fn title_labels_series_names_and_references_are_escaped() {
        let mut c = sample();
        c.title = "A & B <fast>".to_owned();
        c.x_label = "it's".to_owned();
        c.y_label = "\"quoted\"".to_owned();
        c.series[0].name = "<&>".to_owned();
        c.references[0].label = "limit <1ms>".to_owned();
        let svg = render(&c);
        assert!(svg.contains(">A &amp; B &lt;fast&gt;</text>"));
        assert!(svg.contains(">it&#39;s</text>"));
        assert!(svg.contains(">&quot;quoted&quot;</text>"));
        assert!(svg.contains(">&lt;&amp;&gt;</text>"));
        assert!(svg.contains(">limit &lt;1ms&gt;</text>"));
        assert!(!svg.contains("<&>") && !svg.contains("<fast>"));
        check_nesting(&svg);
    }

    #[test]
    fn control_characters_are_dropped_from_text() {
        assert_eq!(escape("a\u{0}b\u{7}c\nd\u{FFFF}"), "abc d");
    }

    #[test]
    fn long_series_names_are_cut_in_the_legend() {
        let c = chart(vec![series("a very long series name indeed", &[(1.0, 1.0)])]);
        let svg = render(&c);
        assert!(svg.contains(">a very long series …</text>"));
    }

    #[test]
    fn nan_infinite_and_non_positive_log_points_are_skipped_without_panicking() {
        let mut c = chart(vec![series(
            "odd",
            &[
                (f64::NAN, 1.0),
                (1.0, f64::INFINITY),
                (f64::NEG_INFINITY, 3.0),
                (0.0, 10.0),
                (-1.0, 10.0),
                (2.0, 0.0),
                (10.0, 100.0),
                (100.0, 1000.0),
            ],
        )]);
        c.x_log = true;
        c.y_log = true;
        c.references = vec![
            Reference { label: "nan".to_owned(), y: f64::NAN },
            Reference { label: "negative".to_owned(), y: -5.0 },
        ];
        let svg = render(&c);
        check_nesting(&svg);
        // Only (10, 100) and (100, 1000) are drawn.
        assert_eq!(svg.matches("<circle").count(), 2 + 1, "two markers and one legend dot");
        assert_eq!(svg.matches("<polyline").count(), 1);
        assert!(!svg.contains("NaN") && !svg.contains("inf"));
        assert!(!svg.contains(">nan</text>") && !svg.contains(">negative</text>"));
    }

    #[test]
    fn a_chart_without_drawable_points_says_no_data() {
        let mut c = chart(vec![]);
        c.title = "Empty".to_owned();
        let svg = render(&c);
        assert!(svg.contains(">no data</text>"));
        assert!(svg.contains(">Empty</text>"));
        assert!(svg.ends_with("</svg>"));
        check_nesting(&svg);

        let mut only_bad = chart(vec![series("bad", &[(f64::NAN, f64::NAN), (-1.0, 2.0)])]);
        only_bad.x_log = true;
        let svg = render(&only_bad);
        assert!(svg.contains(">no data</text>"));
        assert!(!svg.contains("<circle"));
        check_nesting(&svg);
    }

    #[test]
    fn the_same_chart_renders_to_identical_bytes() {
        assert_eq!(render(&sample()), render(&sample()));
        assert_eq!(render(&sample()), render(&sample().clone()));
    }

    #[test]
    fn each_series_gets_its_own_palette_colour_and_a_legend_entry() {
        let svg = render(&sample());
        assert!(svg.contains(&format!("<g stroke=\"{}\" fill=\"{}\">", PALETTE[0], PALETTE[0])));
        assert!(svg.contains(&format!("<g stroke=\"{}\" fill=\"{}\">", PALETTE[1], PALETTE[1])));
        assert!(svg.contains(">trellis</text>"));
        assert!(svg.contains(">echo</text>"));
        assert_eq!(svg.matches("<polyline").count(), 2);
        // 4 + 2 markers, 2 legend dots.
        assert_eq!(svg.matches("<circle").count(), 8);
    }

    #[test]
    fn reference_lines_are_dashed_grey_with_their_label() {
        let svg = render(&sample());
        assert!(svg.contains(&format!("stroke=\"{REFERENCE_COLOUR}\" stroke-width=\"1\" stroke-dasharray=\"6 4\"")));
        assert!(svg.contains(">target</text>"));
    }

    #[test]
    fn coordinates_have_at_most_one_decimal_place() {
        let svg = render(&sample());
        for chunk in svg.split('"') {
            for number in chunk.split([' ', ',']) {
                if let Some((_, decimals)) = number.split_once('.')
                    && number.parse::<f64>().is_ok()
                {
                    assert!(decimals.len() <= 1, "{number} has more than one decimal");
                }
            }
        }
    }

    #[test]
    fn linear_ticks_use_1_2_5_steps_and_cover_the_data() {
        let axis = linear_axis(0.0, 137.0, false);
        assert_eq!(tick_values(&axis), [0.0, 20.0, 40.0, 60.0, 80.0, 100.0, 120.0, 140.0]);
        assert_eq!(tick_labels(&axis), ["0", "20", "40", "60", "80", "100", "120", "140"]);

        for (min, max) in
            [(0.0, 1.0), (0.0, 8.0), (3.2, 17.9), (-42.0, 7.0), (0.001, 0.0093), (1e6, 3.7e6), (0.0, 16.0)]
        {
            let axis = linear_axis(min, max, false);
            let values = tick_values(&axis);
            assert!((5..=8).contains(&values.len()) || values.len() == 4, "{min}..{max}: {values:?}");
            assert!(values[0] <= min && *values.last().unwrap() >= max, "{min}..{max}: {values:?}");
            let step = values[1] - values[0];
            let mantissa = step / 10_f64.powf(step.log10().floor());
            assert!(
                [1.0, 2.0, 5.0, 10.0].iter().any(|m| (mantissa - m).abs() < 1e-6),
                "{min}..{max}: step {step} is not 1-2-5"
            );
            for pair in values.windows(2) {
                assert!(((pair[1] - pair[0]) - step).abs() < step * 1e-6, "{min}..{max}: uneven {values:?}");
            }
        }
    }

    #[test]
    fn tick_labels_are_short_without_float_noise() {
        let axis = linear_axis(0.0, 0.3, false);
        assert_eq!(tick_labels(&axis), ["0", "0.05", "0.1", "0.15", "0.2", "0.25", "0.3"]);
        let axis = linear_axis(0.0, 2.6, false);
        assert_eq!(tick_labels(&axis), ["0", "0.5", "1", "1.5", "2", "2.5", "3"]);
        let axis = linear_axis(0.0, 137_000.0, false);
        assert_eq!(tick_labels(&axis), ["0", "20k", "40k", "60k", "80k", "100k", "120k", "140k"]);
        let axis = linear_axis(0.0, 1.3e6, false);
        assert_eq!(tick_labels(&axis), ["0", "0.2M", "0.4M", "0.6M", "0.8M", "1M", "1.2M", "1.4M"]);
        let axis = linear_axis(0.0, 0.00003, false);
        assert_eq!(tick_labels(&axis), ["0", "5e-6", "1e-5", "1.5e-5", "2e-5", "2.5e-5", "3e-5"]);
        for (min, max) in [(0.1, 0.7), (-0.3, 0.3), (1.1, 1.7), (99.0, 101.0), (1e20, 7e20)] {
            for label in tick_labels(&linear_axis(min, max, false)) {
                assert!(label.len() <= 7, "{min}..{max}: label {label:?} is too long");
                assert_ne!(label, "-0");
            }
        }
    }

    #[test]
    fn log_ticks_for_1_to_100_include_1_10_and_100() {
        let axis = log_axis(1.0, 100.0);
        assert_eq!(tick_labels(&axis), ["1", "2", "5", "10", "20", "50", "100"]);
        assert_eq!(axis.lo, 0.0);
        assert_eq!(axis.hi, 2.0);

        let wide = log_axis(0.002, 3e4);
        assert_eq!(tick_labels(&wide), ["0.001", "0.01", "0.1", "1", "10", "100", "1k", "10k", "100k"]);
        let wider = log_axis(0.002, 3e6);
        assert_eq!(tick_labels(&wider), ["0.001", "0.1", "10", "1k", "100k", "10M"], "every other decade");

        let huge = log_axis(1e-300, 1e300);
        assert!(huge.ticks.len() <= MAX_LOG_INTERVALS as usize + 1);
        assert!(huge.lo <= -300.0 && huge.hi >= 300.0);
    }

    #[test]
    fn a_single_point_or_equal_values_get_a_padded_axis() {
        let axis = linear_axis(5.0, 5.0, false);
        assert!(axis.lo < 5.0 && axis.hi > 5.0, "{axis:?}");
        assert!(axis.ticks.len() >= 3);
        let axis = linear_axis(0.0, 0.0, false);
        assert!(axis.lo < 0.0 && axis.hi > 0.0);
        let axis = linear_axis(0.0, 0.0, true);
        assert_eq!((axis.lo, axis.hi), (0.0, 1.0));
        let axis = log_axis(10.0, 10.0);
        assert_eq!(tick_labels(&axis), ["1", "2", "5", "10", "20", "50", "100"]);

        let svg = render(&chart(vec![series("one", &[(3.0, 7.0)])]));
        assert!(!svg.contains("no data"));
        assert_eq!(svg.matches("<polyline").count(), 0, "a single point has no line");
        assert_eq!(svg.matches("<circle").count(), 2, "but a marker and a legend dot");
    }

    #[test]
    fn extreme_values_do_not_panic() {
        let extremes = [f64::MAX, f64::MIN, f64::MIN_POSITIVE, 5e-324, -5e-324, 1e300, -1e300, 0.0, -0.0];
        for &a in &extremes {
            for &b in &extremes {
                for (x_log, y_log, y_from_zero) in [(false, false, false), (false, false, true), (true, true, false)] {
                    let mut c = chart(vec![series("x", &[(a, b), (b, a)])]);
                    c.x_log = x_log;
                    c.y_log = y_log;
                    c.y_from_zero = y_from_zero;
                    let svg = render(&c);
                    check_nesting(&svg);
                    assert!(!svg.contains("NaN") && !svg.contains("inf"), "{a} {b}: {svg}");
                }
            }
        }
    }
}
