//! The plot of the report: sync time and peak memory against the pod count, one line per peer,
//! as a hand-written SVG (no plotting dependency for two line charts).

use std::fmt::Write as _;

/// One line of a panel: a peer's points `(pods, value)`.
pub(crate) struct Series {
    pub(crate) peer: String,
    pub(crate) points: Vec<(f64, f64)>,
}

/// One chart.
pub(crate) struct Panel {
    pub(crate) title: String,
    pub(crate) unit: String,
    pub(crate) series: Vec<Series>,
}

const WIDTH: f64 = 440.0;
const HEIGHT: f64 = 320.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 16.0;
const TOP: f64 = 36.0;
const BOTTOM: f64 = 48.0;
const COLORS: [&str; 5] = ["#d62728", "#1f77b4", "#7f7f7f", "#2ca02c", "#9467bd"];

/// Renders the panels side by side.
pub(crate) fn svg(panels: &[Panel]) -> String {
    let width = WIDTH * panels.len() as f64;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{HEIGHT}" viewBox="0 0 {width} {HEIGHT}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(out, r#"<rect width="{width}" height="{HEIGHT}" fill="white"/>"#);
    for (i, panel) in panels.iter().enumerate() {
        self::panel(&mut out, panel, WIDTH * i as f64);
    }
    out.push_str("</svg>\n");
    out
}

fn panel(out: &mut String, panel: &Panel, x0: f64) {
    let points = panel.series.iter().flat_map(|s| s.points.iter());
    let (max_x, max_y) =
        points.fold((0.0_f64, 0.0_f64), |(mx, my), &(x, y)| (mx.max(x), my.max(y)));
    let (x_step, max_x) = nice(max_x);
    let (y_step, max_y) = nice(max_y);
    let (plot_w, plot_h) = (WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM);
    let px = |x: f64| x0 + LEFT + x / max_x * plot_w;
    let py = |y: f64| TOP + plot_h - y / max_y * plot_h;
    let _ = writeln!(
        out,
        r#"<text x="{}" y="20" text-anchor="middle" font-size="14">{}</text>"#,
        x0 + WIDTH / 2.0,
        panel.title
    );
    let mut x = 0.0;
    while x <= max_x + x_step / 2.0 {
        let _ = writeln!(
            out,
            r##"<line x1="{0}" y1="{1}" x2="{0}" y2="{2}" stroke="#ddd"/><text x="{0}" y="{3}" text-anchor="middle">{4}</text>"##,
            px(x),
            TOP,
            TOP + plot_h,
            TOP + plot_h + 16.0,
            label(x)
        );
        x += x_step;
    }
    let mut y = 0.0;
    while y <= max_y + y_step / 2.0 {
        let _ = writeln!(
            out,
            r##"<line x1="{0}" y1="{1}" x2="{2}" y2="{1}" stroke="#ddd"/><text x="{3}" y="{4}" text-anchor="end">{5}</text>"##,
            x0 + LEFT,
            py(y),
            x0 + LEFT + plot_w,
            x0 + LEFT - 6.0,
            py(y) + 4.0,
            label(y)
        );
        y += y_step;
    }
    let _ = writeln!(
        out,
        r#"<text x="{}" y="{}" text-anchor="middle">pods</text><text x="{}" y="{}" text-anchor="middle" transform="rotate(-90 {} {})">{}</text>"#,
        x0 + LEFT + plot_w / 2.0,
        HEIGHT - 10.0,
        x0 + 16.0,
        TOP + plot_h / 2.0,
        x0 + 16.0,
        TOP + plot_h / 2.0,
        panel.unit
    );
    for (i, series) in panel.series.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let path: Vec<String> =
            series.points.iter().map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y))).collect();
        let _ = writeln!(
            out,
            r#"<polyline points="{}" fill="none" stroke="{color}" stroke-width="2"/>"#,
            path.join(" ")
        );
        for &(x, y) in &series.points {
            let _ = writeln!(
                out,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{color}"/>"#,
                px(x),
                py(y)
            );
        }
        let legend_y = TOP + 14.0 + 16.0 * i as f64;
        let _ = writeln!(
            out,
            r#"<line x1="{0}" y1="{1}" x2="{2}" y2="{1}" stroke="{color}" stroke-width="2"/><text x="{3}" y="{4}">{5}</text>"#,
            x0 + LEFT + 10.0,
            legend_y,
            x0 + LEFT + 28.0,
            x0 + LEFT + 34.0,
            legend_y + 4.0,
            series.peer
        );
    }
}

/// A round tick step for an axis up to `max`, and the axis end (a whole number of steps).
fn nice(max: f64) -> (f64, f64) {
    if max <= 0.0 {
        return (1.0, 1.0);
    }
    let raw = max / 5.0;
    let magnitude = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|&s| s >= raw)
        .unwrap_or(10.0 * magnitude);
    (step, (max / step).ceil() * step)
}

fn label(v: f64) -> String {
    if v >= 1000.0 && (v / 1000.0).fract() == 0.0 {
        format!("{}k", v / 1000.0)
    } else if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes_end_on_round_numbers() {
        assert_eq!(nice(80_000.0), (20_000.0, 80_000.0));
        assert_eq!(nice(7.3), (2.0, 8.0));
        assert_eq!(nice(0.0), (1.0, 1.0));
        assert_eq!(label(20_000.0), "20k");
        assert_eq!(label(2.5), "2.5");
    }

    #[test]
    fn every_peer_gets_a_line_and_a_legend() {
        let series =
            |peer: &str| Series { peer: peer.into(), points: vec![(5e3, 1.0), (8e4, 9.0)] };
        let panel =
            Panel { title: "t".into(), unit: "s".into(), series: vec![series("a"), series("b")] };
        let svg = svg(&[panel]);
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert!(svg.contains(">a</text>") && svg.contains(">b</text>"));
        assert!(svg.trim_end().ends_with("</svg>"));
    }
}
