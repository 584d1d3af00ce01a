//! The figure: one panel per operation. Operations measured over the sweep show latency
//! against message size (log–log) for ours, OSHMEM, MPI and the floors (cache-line round
//! trip, and memcpy of the bytes each PE receives); those measured at one size (barriers,
//! atomics) show one bar per implementation.

use std::path::Path;

use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::cli::Transport;
use crate::ops::{Op, Sizes};
use crate::output::bytes_label;
use crate::regime::Regime;
use crate::report::Report;
use crate::scaling_points::{Point, Scaling};

const OURS: RGBColor = RGBColor(214, 39, 40);
const OSHMEM: RGBColor = RGBColor(31, 119, 180);
const MPI: RGBColor = RGBColor(44, 160, 44);
const FLOOR: RGBColor = RGBColor(110, 110, 110);
const MEMCPY: RGBColor = RGBColor(170, 170, 170);

pub(crate) const PANEL_W: u32 = 620;
pub(crate) const PANEL_H: u32 = 360;
pub(crate) const COLUMNS: usize = 2;
/// Height of the shared legend under the title.
pub(crate) const LEGEND_H: u32 = 30;
/// Height of the regime's line under the title.
const REGIME_H: u32 = 20;

pub(crate) type PlotResult = Result<(), Box<dyn std::error::Error>>;

/// Draws the report's figure into an SVG file at `path`.
pub(crate) fn write_svg(report: &Report, path: &Path) -> PlotResult {
    let ops: Vec<Op> = Op::ALL
        .into_iter()
        .filter(|&op| report.rows_of(op).next().is_some())
        .collect();
    let rows_of_panels = ops.len().div_ceil(COLUMNS).max(1);
    let size = (
        PANEL_W * COLUMNS as u32,
        PANEL_H * rows_of_panels as u32 + 40 + REGIME_H,
    );
    let root = SVGBackend::new(path, size).into_drawing_area();
    root.fill(&WHITE)?;
    let title = match report.transport {
        Transport::SharedMemory => format!(
            "Latency per call, {} PEs (median of 11 batches; lower is better)",
            report.npes
        ),
        Transport::Mpi => format!(
            "Latency per call on MPI, {} ranks, every peer remote (median of 11 batches; lower is better)",
            report.npes
        ),
    };
    let root = root.titled(&title, ("sans-serif", 22))?;
    let root = draw_regime(root, report.regime.as_ref())?;
    let (key, body) = root.split_vertically(LEGEND_H);
    draw_legend(&key, &report_keys(report))?;
    let panels = body.split_evenly((rows_of_panels, COLUMNS));
    for (op, panel) in ops.into_iter().zip(panels.iter()) {
        match op.sizes() {
            Sizes::Sweep | Sizes::SweepUpTo(_) => size_panel(report, op, panel)?,
            Sizes::Fixed(_) => bar_panel(report, op, panel)?,
        }
    }
    root.present()?;
    Ok(())
}

/// Draws the scaling run's figure into an SVG file at `path`: one log–log panel per
/// operation, latency against PE count for ours, OSHMEM and MPI.
pub(crate) fn write_scaling_svg(scaling: &Scaling, path: &Path) -> PlotResult {
    let rows_of_panels = scaling.series.len().div_ceil(COLUMNS).max(1);
    let size = (
        PANEL_W * COLUMNS as u32,
        PANEL_H * rows_of_panels as u32 + 40 + REGIME_H,
    );
    let root = SVGBackend::new(path, size).into_drawing_area();
    root.fill(&WHITE)?;
    let root = root.titled(
        &format!(
            "Latency per call against PEs on {} CPUs, 8 B (barriers 0 B); lower is better",
            scaling.cpus
        ),
        ("sans-serif", 22),
    )?;
    let root = draw_regime(root, scaling.regime.as_ref())?;
    let (key, body) = root.split_vertically(LEGEND_H);
    let has = |f: fn(&Point) -> bool| scaling.series.iter().any(|s| s.points.iter().any(f));
    let shown = keys_shown(
        has(|p| p.oshmem_us.is_some()),
        has(|p| p.mpi_us.is_some()),
        false,
    );
    draw_legend(&key, &shown)?;
    let panels = body.split_evenly((rows_of_panels, COLUMNS));
    for (series, panel) in scaling.series.iter().zip(panels.iter()) {
        let line = |f: fn(&Point) -> Option<f64>| -> Vec<(f64, f64)> {
            series
                .points
                .iter()
                .filter_map(|p| Some(((p.npes as f64).log2(), f(p)?)))
                .collect()
        };
        let lines = [
            (line(|p| p.mpi_us), KEYS[2]),
            (line(|p| p.oshmem_us), KEYS[1]),
            (line(|p| Some(p.ours_us)), KEYS[0]),
        ];
        log2_panel(panel, series.op.name(), "PEs", |n| n.to_string(), &lines)?;
    }
    root.present()?;
    Ok(())
}

/// Draws the run's regime centred at the top of `area` (nothing without one); returns
/// the area below it.
fn draw_regime<DB: DrawingBackend>(
    area: DrawingArea<DB, plotters::coord::Shift>,
    regime: Option<&Regime>,
) -> Result<DrawingArea<DB, plotters::coord::Shift>, Box<dyn std::error::Error>>
where
    DB::ErrorType: 'static,
{
    let (line, rest) = area.split_vertically(REGIME_H);
    if let Some(regime) = regime {
        let font = ("sans-serif", 13).into_font().color(&BLACK);
        let centre = (line.dim_in_pixel().0 as i32 / 2, REGIME_H as i32 / 2);
        line.draw(&Text::new(
            regime.line(),
            centre,
            font.pos(Pos::new(HPos::Center, VPos::Center)),
        ))?;
    }
    Ok(rest)
}

/// One line style of the figure and its name in the legend.
#[derive(Clone, Copy)]
pub(crate) struct Key {
    name: &'static str,
    color: RGBColor,
    width: u32,
    dashed: bool,
}

impl Key {
    fn style(self) -> ShapeStyle {
        self.color.stroke_width(self.width)
    }
}

/// Ours, OSHMEM, MPI, memcpy floor, round-trip floor (the legend's order).
pub(crate) const KEYS: [Key; 5] = [
    Key {
        name: "ours",
        color: OURS,
        width: 3,
        dashed: false,
    },
    Key {
        name: "OSHMEM",
        color: OSHMEM,
        width: 2,
        dashed: false,
    },
    Key {
        name: "MPI",
        color: MPI,
        width: 2,
        dashed: false,
    },
    Key {
        name: "memcpy of the bytes each PE receives",
        color: MEMCPY,
        width: 2,
        dashed: true,
    },
    Key {
        name: "cache-line round trip",
        color: FLOOR,
        width: 2,
        dashed: true,
    },
];

/// The keys of the report's figure: baselines only when measured, floors only on shared
/// memory (the only transport they are measured on).
fn report_keys(report: &Report) -> Vec<Key> {
    let has = |f: fn(&crate::report::Row) -> bool| report.rows.iter().any(f);
    keys_shown(
        has(|r| r.oshmem_us.is_some()),
        has(|r| r.mpi_us.is_some()),
        report.transport == Transport::SharedMemory,
    )
}

/// [`KEYS`] in the legend's order: ours always, each baseline and the floors as asked.
fn keys_shown(oshmem: bool, mpi: bool, floors: bool) -> Vec<Key> {
    KEYS.into_iter()
        .filter(|k| match k.name {
            "ours" => true,
            "OSHMEM" => oshmem,
            "MPI" => mpi,
            _ => floors,
        })
        .collect()
}

/// The legend shared by every panel: `shown`, in one row.
pub(crate) fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    shown: &[Key],
) -> PlotResult
where
    DB::ErrorType: 'static,
{
    let font = ("sans-serif", 14).into_font().color(&BLACK);
    // Without font files the backend cannot measure text; 8 px per character at 14 px
    // is a safe width for sans-serif.
    let widths: Vec<i32> = shown.iter().map(|k| 50 + 8 * k.name.len() as i32).collect();
    let total: i32 = widths.iter().sum();
    let mut x = (area.dim_in_pixel().0 as i32 - total).max(0) / 2;
    let y = LEGEND_H as i32 / 2;
    for (key, width) in shown.iter().zip(widths) {
        let line = vec![(x, y), (x + 28, y)];
        if key.dashed {
            area.draw(&PathElement::new(vec![(x, y), (x + 10, y)], key.style()))?;
            area.draw(&PathElement::new(
                vec![(x + 16, y), (x + 28, y)],
                key.style(),
            ))?;
        } else {
            area.draw(&PathElement::new(line, key.style()))?;
        }
        area.draw(&Text::new(
            key.name,
            (x + 34, y),
            font.clone().pos(Pos::new(HPos::Left, VPos::Center)),
        ))?;
        x += width;
    }
    Ok(())
}

/// Smallest and largest of `values`, widened by a margin on the log scale.
fn log_range(values: impl IntoIterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = values
        .into_iter()
        .filter(|v| v.is_finite() && *v > 0.0)
        .fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    if lo.is_infinite() {
        return (0.01, 1.0);
    }
    (lo / 1.6, hi * 1.6)
}

/// Latency against size for an operation measured over the sweep.
fn size_panel<DB: DrawingBackend>(
    report: &Report,
    op: Op,
    area: &DrawingArea<DB, plotters::coord::Shift>,
) -> PlotResult
where
    DB::ErrorType: 'static,
{
    let rows: Vec<_> = report.rows_of(op).collect();
    let log2 = |b: usize| (b as f64).log2();
    let ours: Vec<(f64, f64)> = rows.iter().map(|r| (log2(r.bytes), r.ours_us)).collect();
    let oshmem: Vec<(f64, f64)> = rows
        .iter()
        .filter_map(|r| Some((log2(r.bytes), r.oshmem_us?)))
        .collect();
    let mpi: Vec<(f64, f64)> = rows
        .iter()
        .filter_map(|r| Some((log2(r.bytes), r.mpi_us?)))
        .collect();
    // memcpy of the received bytes, as time per call.
    let memcpy: Vec<(f64, f64)> = rows
        .iter()
        .filter_map(|r| Some((log2(r.bytes), r.received as f64 / r.memcpy_gbps()? / 1e3)))
        .collect();
    let (x_lo, x_hi) = (ours[0].0, ours[ours.len() - 1].0.max(ours[0].0 + 1.0));
    let rtt: Vec<(f64, f64)> = report
        .floors
        .rtt_us
        .map(|t| vec![(x_lo, t), (x_hi, t)])
        .unwrap_or_default();
    let series = [
        (rtt, KEYS[4]),
        (memcpy, KEYS[3]),
        (mpi, KEYS[2]),
        (oshmem, KEYS[1]),
        (ours, KEYS[0]),
    ];
    log2_panel(area, op.name(), "bytes", bytes_label, &series)
}

/// A log–log panel of latency against a power-of-two quantity: `series` are
/// (log2 x, µs) points drawn in order, each in its key's style; ours also with a dot per
/// point. `x_label` names the whole powers of two on the x axis.
pub(crate) fn log2_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    caption: &str,
    x_desc: &str,
    x_label: fn(usize) -> String,
    series: &[(Vec<(f64, f64)>, Key)],
) -> PlotResult
where
    DB::ErrorType: 'static,
{
    let xs = || {
        series
            .iter()
            .flat_map(|(points, _)| points.iter().map(|p| p.0))
    };
    let x_lo = xs().fold(f64::INFINITY, f64::min);
    if !x_lo.is_finite() {
        return Ok(());
    }
    let x_hi = xs().fold(f64::NEG_INFINITY, f64::max).max(x_lo + 1.0);
    let (y_lo, y_hi) = log_range(
        series
            .iter()
            .flat_map(|(points, _)| points.iter().map(|p| p.1)),
    );

    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(34)
        .y_label_area_size(56)
        .build_cartesian_2d(x_lo..x_hi, (y_lo..y_hi).log_scale())?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .x_labels(10)
        .y_desc("µs per call")
        .x_label_formatter(&|x| {
            // Only whole powers of two are labelled.
            if (x - x.round()).abs() < 1e-9 {
                x_label(2f64.powf(*x).round() as usize)
            } else {
                String::new()
            }
        })
        .y_label_formatter(&|y| format_us(*y))
        .light_line_style(WHITE.mix(0.0))
        .draw()?;

    for (points, key) in series {
        if points.is_empty() {
            continue;
        }
        if key.dashed {
            chart.draw_series(DashedLineSeries::new(points.clone(), 6, 4, key.style()))?;
        } else {
            chart.draw_series(LineSeries::new(points.clone(), key.style()))?;
        }
        if key.name == KEYS[0].name {
            chart.draw_series(
                points
                    .iter()
                    .map(|&p| Circle::new(p, 3, key.color.filled())),
            )?;
        }
    }
    Ok(())
}

/// One bar per implementation (and the round-trip floor) for an operation measured at
/// one size.
fn bar_panel<DB: DrawingBackend>(
    report: &Report,
    op: Op,
    area: &DrawingArea<DB, plotters::coord::Shift>,
) -> PlotResult
where
    DB::ErrorType: 'static,
{
    let Some(row) = report.rows_of(op).next() else {
        return Ok(());
    };
    let bars: Vec<(&str, f64, RGBColor)> = [
        ("ours", Some(row.ours_us), OURS),
        ("OSHMEM", row.oshmem_us, OSHMEM),
        ("MPI", row.mpi_us, MPI),
        ("cache-line rtt", report.floors.rtt_us, FLOOR),
    ]
    .into_iter()
    .filter_map(|(name, v, c)| Some((name, v?, c)))
    .collect();
    let top = bars.iter().map(|b| b.1).fold(0.0, f64::max) * 1.25;
    let names: Vec<&str> = bars.iter().map(|b| b.0).collect();
    let mut chart = ChartBuilder::on(area)
        .caption(op.name(), ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(34)
        .y_label_area_size(56)
        .build_cartesian_2d(
            (0..bars.len() as i32 - 1).into_segmented(),
            0.0..top.max(1e-3),
        )?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .light_line_style(WHITE.mix(0.0))
        .y_desc("µs per call")
        .x_label_formatter(&|x| match x {
            SegmentValue::CenterOf(i) | SegmentValue::Exact(i) => names
                .get(*i as usize)
                .map_or_else(String::new, |n| n.to_string()),
            SegmentValue::Last => String::new(),
        })
        .y_label_formatter(&|y| format_us(*y))
        .draw()?;
    chart.draw_series(bars.iter().enumerate().map(|(i, &(_, v, color))| {
        let i = i as i32;
        let mut bar = Rectangle::new(
            [
                (SegmentValue::Exact(i), 0.0),
                (SegmentValue::Exact(i + 1), v),
            ],
            color.filled(),
        );
        bar.set_margin(0, 0, 18, 18);
        bar
    }))?;
    chart.draw_series(bars.iter().enumerate().map(|(i, &(_, v, _))| {
        Text::new(
            format!("{v:.3}"),
            (SegmentValue::CenterOf(i as i32), v),
            ("sans-serif", 13)
                .into_font()
                .color(&BLACK)
                .pos(Pos::new(HPos::Center, VPos::Bottom)),
        )
    }))?;
    Ok(())
}

/// Microseconds without trailing noise: `0.05`, `1.5`, `120`.
fn format_us(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 1.0 {
        format!("{v:.1}")
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{Impl, Sample, RTT_OP};
    use std::collections::BTreeMap;

    #[test]
    fn the_figure_has_a_panel_per_measured_operation() {
        let mut samples = vec![
            Sample::new(Impl::Floor, RTT_OP, 64, 2, 0.1),
            Sample::new(Impl::Ours, "barrier_all", 0, 2, 0.15),
            Sample::new(Impl::Oshmem, "barrier_all", 0, 2, 0.28),
            Sample::new(Impl::Ours, "atomic_fetch_add", 8, 2, 0.05),
            Sample::new(Impl::Mpi, "atomic_fetch_add", 8, 2, 0.4),
        ];
        for (i, bytes) in [8usize, 64, 512, 4096].into_iter().enumerate() {
            samples.push(Sample::new(
                Impl::Ours,
                "fcollect",
                bytes,
                2,
                0.2 * (i + 1) as f64,
            ));
            samples.push(Sample::new(
                Impl::Mpi,
                "fcollect",
                bytes,
                2,
                0.3 * (i + 1) as f64,
            ));
        }
        let memcpy = BTreeMap::from([(8, 1.0), (64, 5.0), (512, 20.0), (4096, 30.0)]);
        let report = Report::new(Transport::SharedMemory, 2, &samples, memcpy, vec![]);
        let dir = std::env::temp_dir().join(format!("shmem-bench-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("plot.svg");
        write_svg(&report, &path).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(svg.contains("barrier_all"), "no barrier panel");
        assert!(svg.contains("fcollect"), "no fcollect panel");
        assert!(svg.contains("atomic_fetch_add"), "no atomic panel");
        assert!(
            svg.contains("memcpy of the bytes each PE receives"),
            "no memcpy floor"
        );
        assert!(!svg.contains("broadcast"), "a panel for an unmeasured op");
    }

    #[test]
    fn the_scaling_figure_has_a_panel_per_operation() {
        let samples = vec![
            Sample::new(Impl::Ours, "barrier", 0, 2, 0.2),
            Sample::new(Impl::Oshmem, "barrier", 0, 2, 0.5),
            Sample::new(Impl::Ours, "barrier", 0, 8, 2.0),
            Sample::new(Impl::Ours, "reduce_sum_f64", 8, 8, 3.0),
        ];
        let scaling = Scaling::new(2, Some(2.0), vec![(2, 1000), (8, 250)], &samples, vec![]);
        let dir = std::env::temp_dir().join(format!("shmem-bench-splot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("scaling.svg");
        write_scaling_svg(&scaling, &path).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        // A panel's title is a text node of its own (the figure's title also says
        // "barriers").
        let titled = |op: &str| svg.lines().any(|line| line.trim() == op);
        assert!(
            titled("barrier") && titled("reduce_sum_f64"),
            "a panel per op"
        );
        assert!(svg.contains("OSHMEM") && !svg.contains(">MPI<"), "legend");
        assert!(!svg.contains("fcollect"), "a panel for an unmeasured op");
    }

    #[test]
    fn microseconds_are_short() {
        assert_eq!(format_us(0.05), "0.05");
        assert_eq!(format_us(0.125), "0.125");
        assert_eq!(format_us(1.24), "1.2");
        assert_eq!(format_us(250.0), "250");
    }
}
