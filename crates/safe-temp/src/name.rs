//! The temporary names: `.<target>~ta~<host>~<pid>~<random>.tmp`.

use std::ffi::OsStr;
use std::sync::OnceLock;

/// The marker between a temporary's target name and its owner.
const MARKER: &str = "~ta~";
/// The suffix of every temporary.
pub(crate) const SUFFIX: &str = ".tmp";
/// Longest target name kept in a temporary's name (bytes), so that the
/// whole name stays under the usual 255-byte limit.
const MAX_TARGET: usize = 96;

/// The owner of a temporary, read back from its name: the machine and
/// the process that created it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TempName {
    /// The (sanitised) host name of the machine.
    pub host: String,
    /// The process id.
    pub pid: u32,
}

impl TempName {
    /// Parse a file name; `None` when it is not one of our temporaries.
    pub fn parse(name: &OsStr) -> Option<TempName> {
        let body = name.to_str()?.strip_prefix('.')?.strip_suffix(SUFFIX)?;
        let mut parts = body.rsplitn(4, '~');
        let (random, pid, host, rest) =
            (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
        let ours = rest.ends_with(MARKER.trim_end_matches('~'))
            && !host.is_empty()
            && !random.is_empty()
            && random.bytes().all(|b| b.is_ascii_alphanumeric());
        // Canonical decimal only; never 0 (kill(0) is the process group)
        // nor above i32::MAX (negative pids).
        let canonical = pid.bytes().all(|b| b.is_ascii_digit()) && !pid.starts_with('0');
        let pid: u32 = pid.parse().ok()?;
        (ours && canonical && i32::try_from(pid).is_ok()).then(|| TempName {
            host: host.to_owned(),
            pid,
        })
    }
}

/// The prefix of a new temporary for `target` (a file name): tempfile adds
/// the random part and [`SUFFIX`].
pub(crate) fn prefix(target: &str) -> String {
    let mut end = target.len().min(MAX_TARGET);
    while !target.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        ".{}{MARKER}{}~{}~",
        &target[..end],
        this_host(),
        std::process::id()
    )
}

/// This machine's host name, with every character other than ASCII
/// letters, digits, `-` and `.` replaced by `_`; `unknown` when it cannot
/// be read.
pub fn this_host() -> &'static str {
    static HOST: OnceLock<String> = OnceLock::new();
    HOST.get_or_init(|| {
        let raw = read_host().unwrap_or_default();
        let clean: String = raw
            .chars()
            .take(64)
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        if clean.is_empty() {
            "unknown".to_owned()
        } else {
            clean
        }
    })
}

#[cfg(unix)]
fn read_host() -> Option<String> {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its length; gethostname writes at
    // most that many bytes.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return None;
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    Some(String::from_utf8_lossy(&buf[..end]).into_owned())
}

#[cfg(not(unix))]
fn read_host() -> Option<String> {
    std::env::var("COMPUTERNAME").ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Option<TempName> {
        TempName::parse(OsStr::new(s))
    }

    #[test]
    fn a_new_prefix_parses_back_to_this_process() {
        let name = format!("{}Ab12cD{SUFFIX}", prefix("combined.xplane.pb"));
        let owner = parse(&name).unwrap();
        assert_eq!(owner.pid, std::process::id());
        assert_eq!(owner.host, this_host());
    }

    #[test]
    fn names_not_ours_are_refused() {
        for name in [
            "combined.xplane.pb",
            ".combined.xplane.pb.Ab12cD",
            ".x~ta~host~123~Ab12cD",     // no suffix
            "x~ta~host~123~Ab12cD.tmp",  // no leading dot
            ".x~tb~host~123~Ab12cD.tmp", // other marker
            ".x~ta~host~0~Ab12cD.tmp",   // pid 0: the process group
            ".x~ta~host~-5~Ab12cD.tmp",  // negative
            ".x~ta~host~+5~Ab12cD.tmp",  // not canonical
            ".x~ta~host~4294967295~Ab12cD.tmp",
            ".x~ta~host~12~.tmp",   // no random part
            ".x~ta~~12~Ab12cD.tmp", // no host
            ".x~ta~host~12~Ab-2cD.tmp",
        ] {
            assert_eq!(parse(name), None, "{name}");
        }
    }

    #[test]
    fn target_names_with_tildes_and_long_names_still_parse() {
        let owner = parse(".a~b~ta~h.example~42~Zz9.tmp").unwrap();
        assert_eq!((owner.host.as_str(), owner.pid), ("h.example", 42));
        let long = "n".repeat(300);
        let p = prefix(&long);
        assert!(p.len() < 200);
        assert!(parse(&format!("{p}abcdef{SUFFIX}")).is_some());
    }
}
