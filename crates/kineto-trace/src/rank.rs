//! Which rank a file belongs to.

use std::path::Path;

use serde::Serialize;

/// Where a rank number came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RankSource {
    /// `distributedInfo.rank`.
    DistributedInfo,
    /// `rank<N>` (or `rank_<N>`, `rank-<N>`) in the file name.
    FileName,
}

/// A file's rank and where it was read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Rank {
    /// The global rank.
    pub rank: u32,
    /// Where it came from.
    pub source: RankSource,
}

/// The number after the last `rank` (case-insensitive, optionally followed by
/// `_`, `-` or `.`) in the file name, if any.
pub fn rank_from_file_name(path: &Path) -> Option<u32> {
    let name = path.file_name()?.to_str()?.to_ascii_lowercase();
    let mut found = None;
    let mut rest = name.as_str();
    while let Some(i) = rest.find("rank") {
        rest = &rest[i + 4..];
        let digits = rest.trim_start_matches(['_', '-', '.']);
        let n: String = digits.chars().take_while(char::is_ascii_digit).collect();
        if let Ok(r) = n.parse() {
            found = Some(r);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_in_file_names() {
        let r = |s: &str| rank_from_file_name(Path::new(s));
        assert_eq!(r("run/rank3.pt.trace.json.gz"), Some(3));
        assert_eq!(r("host_Rank_12.1790.pt.trace.json"), Some(12));
        assert_eq!(r("frank-x/worker-rank-0.json"), Some(0));
        assert_eq!(r("host_1234.1790857026.pt.trace.json"), None);
        assert_eq!(r("ranking.json"), None);
    }
}
