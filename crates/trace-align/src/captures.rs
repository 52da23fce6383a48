//! The captures of an xprof log folder (`LOGDIR/plugins/profile/<session>/
//! <host>.xplane.pb`): every host names its own session folder from its
//! own clock, so the hosts of one capture may land in folders a second or
//! two apart. Session folders whose starts lie within [`CAPTURE_GAP_NS`]
//! of each other are one capture; the newest is the run unless one is
//! picked by a session's name.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use crate::error::{Result, RunError};
use crate::locate::{Found, NotTrace, Skipped};

/// The most two session folders of one capture start apart (each from its
/// host's clock): the `Task Environment` profile start of its traces,
/// else the folder's name.
pub const CAPTURE_GAP_NS: i128 = 5_000_000_000;

/// One capture of an xprof log folder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Capture {
    /// Its session folders, oldest first.
    pub sessions: Vec<String>,
    /// Its first session's start, epoch ns, when known.
    pub start_ns: Option<i128>,
    /// Its traces.
    pub traces: usize,
}

/// The session folder of a trace in the xprof layout
/// (`plugins/profile/<session>/FILE`).
pub(crate) fn session_of(path: &Path) -> Option<String> {
    let session = path.parent()?;
    let profile = session.parent()?;
    let plugins = profile.parent()?;
    (profile.file_name()? == "profile" && plugins.file_name()? == "plugins")
        .then(|| session.file_name()?.to_str().map(str::to_owned))
        .flatten()
}

/// The epoch ns of a session folder named `YYYY_MM_DD_HH_MM_SS` (UTC, as
/// xprof names them), if it is so named.
pub(crate) fn folder_time_ns(name: &str) -> Option<i128> {
    let parts: Vec<i64> = name
        .split('_')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    let [y, mo, d, h, mi, s] = parts[..] else {
        return None;
    };
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || s > 60 {
        return None;
    }
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if mo <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(i128::from(days * 86_400 + h * 3600 + mi * 60 + s) * 1_000_000_000)
}

/// What choosing a capture left: the traces of the run, the capture
/// taken, the others.
pub(crate) struct Chosen {
    pub found: Vec<Found>,
    pub taken: Option<Capture>,
    pub others: Vec<Capture>,
    pub skipped: Vec<Skipped>,
}

/// Keep the traces of one capture: the one holding session `pick`, else
/// the newest. Traces outside the xprof layout are kept whatever the
/// capture.
pub(crate) fn choose(found: Vec<Found>, pick: Option<&str>) -> Result<Chosen> {
    let mut sessions: BTreeMap<String, (Option<i128>, Vec<Found>)> = BTreeMap::new();
    let mut loose = Vec::new();
    for f in found {
        match session_of(&f.path) {
            Some(s) => {
                let entry = sessions.entry(s).or_default();
                entry.0 = match (entry.0, f.start_ns.filter(|&t| t > 0)) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                entry.1.push(f);
            }
            None => loose.push(f),
        }
    }
    if sessions.is_empty() {
        if let Some(name) = pick {
            return Err(RunError::NoSuchSession {
                name: name.to_owned(),
                have: Vec::new(),
            });
        }
        return Ok(Chosen {
            found: loose,
            taken: None,
            others: Vec::new(),
            skipped: Vec::new(),
        });
    }
    let mut order: Vec<(Option<i128>, String)> = sessions
        .iter()
        .map(|(name, (start, _))| (start.or_else(|| folder_time_ns(name)), name.clone()))
        .collect();
    order.sort();
    let mut captures: Vec<Vec<(Option<i128>, String)>> = Vec::new();
    for (start, name) in order {
        let joins = captures.last().and_then(|c| c.last()).is_some_and(
            |(prev, _)| matches!((prev, start), (Some(a), Some(b)) if b - a <= CAPTURE_GAP_NS),
        );
        match captures.last_mut() {
            Some(last) if joins => last.push((start, name)),
            _ => captures.push(vec![(start, name)]),
        }
    }
    let index = match pick {
        Some(name) => captures
            .iter()
            .position(|c| c.iter().any(|(_, s)| s == name))
            .ok_or_else(|| RunError::NoSuchSession {
                name: name.to_owned(),
                have: sessions.keys().cloned().collect(),
            })?,
        None => captures.len() - 1,
    };
    let mut chosen = Chosen {
        found: loose,
        taken: None,
        others: Vec::new(),
        skipped: Vec::new(),
    };
    for (k, capture) in captures.into_iter().enumerate() {
        let mut summary = Capture {
            sessions: Vec::new(),
            start_ns: capture.first().and_then(|(s, _)| *s),
            traces: 0,
        };
        for (_, name) in capture {
            let (_, files) = sessions.remove(&name).unwrap_or_default();
            summary.traces += files.len();
            if k == index {
                chosen.found.extend(files);
            } else {
                chosen.skipped.extend(files.into_iter().map(|f| Skipped {
                    path: f.path,
                    why: NotTrace::OtherCapture {
                        session: name.clone(),
                    },
                }));
            }
            summary.sessions.push(name);
        }
        // Session folders are named by their start: in name order.
        summary.sessions.sort();
        if k == index {
            chosen.taken = Some(summary);
        } else {
            chosen.others.push(summary);
        }
    }
    Ok(chosen)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xprof_session_folders() {
        let p = Path::new("log/plugins/profile/2026_11_27_10_00_01/host0.xplane.pb");
        assert_eq!(session_of(p).as_deref(), Some("2026_11_27_10_00_01"));
        assert_eq!(session_of(Path::new("run/rank0.xplane.pb")), None);
        assert_eq!(
            folder_time_ns("1970_01_02_00_00_01"),
            Some(86_401 * 1_000_000_000)
        );
        assert_eq!(
            folder_time_ns("2026_11_27_10_00_01").unwrap()
                - folder_time_ns("2026_11_27_10_00_00").unwrap(),
            1_000_000_000
        );
        assert_eq!(folder_time_ns("2026_13_27_10_00_01"), None);
        assert_eq!(folder_time_ns("my_run"), None);
    }
}
