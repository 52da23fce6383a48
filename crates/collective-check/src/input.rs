//! Convenience entry points over files.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::check::check;
use crate::error::{Error, Result};
use crate::extract::{NodeSource, Options, extract_file};
use crate::occurrence::Extraction;
use crate::report::Report;
use crate::units::NodeId;

/// Extract and check several per-node files, each with its node id.
/// The same node id twice is an error. The files are read in parallel,
/// and the first error in the order of `files` is returned.
pub fn check_files(files: &[(NodeId, PathBuf)], options: &Options) -> Result<Report> {
    let mut seen: BTreeMap<NodeId, &Path> = BTreeMap::new();
    for (node, path) in files {
        if let Some(first) = seen.insert(*node, path) {
            return Err(Error::DuplicateNode {
                node: NodeId(node.0),
                first: first.to_path_buf(),
                second: path.clone(),
            });
        }
    }
    let per_file: Vec<Result<Extraction>> = files
        .par_iter()
        .with_max_len(1) // one task per file
        .map(|(node, path)| {
            let mut one = Extraction::new();
            extract_file(path, NodeSource::Given(*node), options, &mut one).map(|()| one)
        })
        .collect();
    let mut all = Extraction::new();
    for one in per_file {
        all.append(one?);
    }
    Ok(check(&all, options))
}

/// Extract and check one merged file (node identity from each plane's
/// `node_id` stat).
pub fn check_merged(path: impl AsRef<Path>, options: &Options) -> Result<Report> {
    let mut all = Extraction::new();
    extract_file(path, NodeSource::PlaneStat, options, &mut all)?;
    Ok(check(&all, options))
}

/// The node id in a file name: the digits after `node` or `rank` (ASCII
/// case-insensitive) in the file's name, e.g. `rank3.xplane.pb`,
/// `job_node12_host.xplane.pb`, else `None`.
///
/// ```
/// use collective_check::{NodeId, node_id_from_path};
/// assert_eq!(node_id_from_path("runs/x/rank3.xplane.pb"), Some(NodeId(3)));
/// assert_eq!(node_id_from_path("Node12-host.xplane.pb"), Some(NodeId(12)));
/// assert_eq!(node_id_from_path("trace.xplane.pb"), None);
/// ```
pub fn node_id_from_path(path: impl AsRef<Path>) -> Option<NodeId> {
    let name = path.as_ref().file_name()?.to_str()?.to_ascii_lowercase();
    for word in ["node", "rank"] {
        let mut from = 0;
        while let Some(at) = name[from..].find(word) {
            let digits: String = name[from + at + word.len()..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            if let Ok(n) = digits.parse::<u32>() {
                return Some(NodeId(n));
            }
            from += at + word.len();
        }
    }
    None
}

/// The digits after `node`/`rank` in a file name that cannot be a node id
/// (more than `u32::MAX`), when the name holds no readable one: such a
/// name says which node the file is but cannot be read, so it is refused
/// rather than given a node by another rule.
pub fn unreadable_node_id_in_path(path: impl AsRef<Path>) -> Option<String> {
    if node_id_from_path(path.as_ref()).is_some() {
        return None;
    }
    let name = path.as_ref().file_name()?.to_str()?.to_ascii_lowercase();
    ["node", "rank"].into_iter().find_map(|word| {
        name.match_indices(word).find_map(|(at, _)| {
            let digits: String = name[at + word.len()..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            (!digits.is_empty()).then_some(digits)
        })
    })
}

#[cfg(test)]
mod name_tests {
    use super::*;

    #[test]
    fn a_node_number_too_large_for_an_id_is_told_apart_from_none() {
        let u = |s: &str| unreadable_node_id_in_path(s);
        assert_eq!(
            u("run/rank4294967296.xplane.pb").as_deref(),
            Some("4294967296")
        );
        assert_eq!(
            u("NODE99999999999.xplane.pb").as_deref(),
            Some("99999999999")
        );
        assert_eq!(u("run/rank4294967295.xplane.pb"), None);
        assert_eq!(u("run/rank1.xplane.pb"), None);
        assert_eq!(u("host-a.xplane.pb"), None);
        assert_eq!(u("ranking.xplane.pb"), None);
    }
}
