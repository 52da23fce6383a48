//! What `inspect` prints about a file, plane by plane.

use std::io::{self, Write};

use xplane_proto::inspect::{FileReport, Span};
use xplane_proto::text::visible;
use xplane_proto::utc::{iso8601_ps, seconds_ps};

use crate::Global;

/// One span's line: UTC and from the session start.
fn write_span(out: &mut impl Write, label: &str, span: &Option<Span>) -> io::Result<()> {
    match span {
        Some(s) => writeln!(
            out,
            "{label}{} .. {} ({} .. {} from session start)",
            s.start_utc,
            s.end_utc,
            seconds_ps(s.start_rel_ps),
            seconds_ps(s.end_rel_ps)
        ),
        None => writeln!(out, "{label}no events"),
    }
}

/// The text report. `-q`: one line per plane; `-v`: also one per line.
pub fn write_text(out: &mut impl Write, file: &FileReport, global: &Global) -> io::Result<()> {
    let events: u64 = file.planes.iter().map(|p| p.event_count).sum();
    writeln!(
        out,
        "{}: {} bytes, {} planes, {events} events",
        file.path,
        file.bytes,
        file.planes.len()
    )?;
    if !global.quiet {
        match file.session_start_ns {
            Some(ns) => writeln!(out, "  session start: {} ({ns} ns)", iso8601_ps(ns * 1000))?,
            None => writeln!(
                out,
                "  session start: none (no Task Environment plane; times are taken as absolute)"
            )?,
        }
    }
    for p in &file.planes {
        let problems: u64 = p.problems.iter().map(|x| x.count).sum();
        writeln!(
            out,
            "  plane {} {} (id {}): {} lines, {} events, {problems} problems",
            p.index,
            visible(&format!("{:?}", p.name)),
            p.id,
            p.line_count,
            p.event_count
        )?;
        if global.quiet {
            continue;
        }
        write_span(out, "    span: ", &p.span)?;
        let stats: Vec<String> = p
            .stats
            .iter()
            .map(|s| format!("{} ({})", visible(&s.name), s.count))
            .collect();
        if stats.is_empty() {
            writeln!(out, "    stats: none")?;
        } else {
            writeln!(out, "    stats: {}", stats.join(", "))?;
        }
        if let Some(edges) = p.scope_range_edges {
            writeln!(
                out,
                "    scope range tree: {edges} edges (plane stats: child id -> parent id)"
            )?;
        }
        for x in &p.problems {
            writeln!(
                out,
                "    problem: {} x{}, first at {}",
                x.kind,
                x.count,
                visible(&x.first.to_string())
            )?;
        }
        if global.verbose > 0 {
            for l in &p.lines {
                writeln!(
                    out,
                    "    line {} {} (id {}, display id {}): {} events",
                    l.index,
                    visible(&format!("{:?}", l.name)),
                    l.id,
                    l.display_id,
                    l.event_count
                )?;
                write_span(out, "      span: ", &l.span)?;
            }
        }
    }
    Ok(())
}
