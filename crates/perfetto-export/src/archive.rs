//! Perfetto's multi-machine archive: a TAR holding several traces and a
//! `perfetto_manifest` (version 1) that says which machine each trace
//! belongs to and how their clocks relate, so that Perfetto UI and
//! `trace_processor` open them as one timeline.
//!
//! The manifest's fields are those of Perfetto's reference
//! (<https://perfetto.dev/docs/reference/perfetto-manifest>): `version`,
//! `trace_time` (the clock of the merged timeline, pinned to one file's
//! machine), `files` (each member's `machine` and `clocks`: one of its
//! clocks related to a clock of another file by a fixed `offset_ns`) and
//! `attributes` (string or integer values annotating the archive). A
//! manifest relates two clocks by one constant offset: it cannot say that
//! a clock drifts.
//!
//! The archive is POSIX ustar: a 512-byte header per member, the member's
//! bytes padded to 512, two zero blocks at the end.
//!
//! ```
//! use perfetto_export::archive::{ClockName, Manifest, ManifestFile, write_tar};
//!
//! let mut manifest = Manifest::new();
//! manifest.files.push(ManifestFile::on_machine("node0.pftrace", "node 0"));
//! manifest.files.push(
//!     ManifestFile::on_machine("node1.pftrace", "node 1")
//!         .synced_to("node0.pftrace", ClockName::Realtime, 0),
//! );
//! manifest.pin_trace_time("node0.pftrace", ClockName::Realtime);
//! let json = manifest.to_json();
//! let members = [
//!     (perfetto_export::archive::MANIFEST_NAME, json.as_bytes()),
//!     ("node0.pftrace", &b"..."[..]),
//!     ("node1.pftrace", &b"..."[..]),
//! ];
//! let mut tar = Vec::new();
//! write_tar(&mut tar, &members)?;
//! assert_eq!(tar.len() % 512, 0);
//! assert_eq!(&tar[257..263], b"ustar\0");
//! # Ok::<(), perfetto_export::Error>(())
//! ```

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use serde::Serialize;

use crate::error::{Error, Result};

/// The manifest's name in the archive (Perfetto finds a manifest by its
/// content; this is the name its UI gives one).
pub const MANIFEST_NAME: &str = "perfetto_manifest.json";

/// The only manifest version Perfetto reads.
pub const MANIFEST_VERSION: u32 = 1;

/// A clock, as the manifest names Perfetto's builtin clocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[non_exhaustive]
pub enum ClockName {
    /// `REALTIME`: the clock an export's events are on (absolute epoch ns).
    Realtime,
    /// `BOOTTIME`: Perfetto's default trace clock.
    Boottime,
    /// `MONOTONIC`.
    Monotonic,
}

/// A `perfetto_manifest` (version 1).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Manifest {
    /// The clock of the merged timeline, when pinned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_time: Option<TraceTime>,
    /// Per member: its machine and clock relation.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<ManifestFile>,
    /// Key/value pairs annotating the archive (namespaced keys).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub attributes: BTreeMap<String, Attribute>,
}

/// The manifest's `trace_time`: which clock, on whose machine, is the
/// merged timeline.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TraceTime {
    /// The clock.
    pub clock: ClockName,
    /// The member whose machine owns it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
}

/// One member's entry in the manifest's `files`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ManifestFile {
    /// The member's name in the archive.
    pub path: String,
    /// The machine the whole member belongs to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub machine: Option<Machine>,
    /// How one of its clocks relates to another member's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clocks: Option<Clocks>,
}

/// A machine, by name: members with one name share a machine.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Machine {
    /// Non-empty.
    pub name: String,
}

/// A member's clock related to a clock of another member: at one
/// instant, `clock` reads T when the reference reads T + `offset_ns`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Clocks {
    /// The member's own clock that is related.
    pub clock: ClockName,
    /// The reference clock.
    pub sync_to: SyncTo,
    /// The constant offset, ns.
    pub offset_ns: i64,
}

/// The reference clock of a [`Clocks`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SyncTo {
    /// The reference member.
    pub file: String,
    /// Its clock.
    pub clock: ClockName,
}

/// An attribute's value: Perfetto takes strings and integers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Attribute {
    /// A string.
    Text(String),
    /// An integer.
    Integer(i64),
}

impl ManifestFile {
    /// The member `path`, all of it on the machine `machine`.
    pub fn on_machine(path: impl Into<String>, machine: impl Into<String>) -> ManifestFile {
        ManifestFile {
            path: path.into(),
            machine: Some(Machine {
                name: machine.into(),
            }),
            clocks: None,
        }
    }

    /// This member's `clock` related to the same clock of `file` by
    /// `offset_ns`.
    pub fn synced_to(mut self, file: impl Into<String>, clock: ClockName, offset_ns: i64) -> Self {
        self.clocks = Some(Clocks {
            clock,
            sync_to: SyncTo {
                file: file.into(),
                clock,
            },
            offset_ns,
        });
        self
    }
}

impl Manifest {
    /// An empty manifest of version [`MANIFEST_VERSION`].
    pub fn new() -> Manifest {
        Manifest::default()
    }

    /// The merged timeline is `clock` of the machine of member `file`.
    pub fn pin_trace_time(&mut self, file: impl Into<String>, clock: ClockName) {
        self.trace_time = Some(TraceTime {
            clock,
            file: Some(file.into()),
        });
    }

    /// The manifest as Perfetto reads it: `{"perfetto_manifest": {"version": 1, ...}}`.
    pub fn to_json(&self) -> String {
        #[derive(Serialize)]
        struct Versioned<'a> {
            version: u32,
            #[serde(flatten)]
            manifest: &'a Manifest,
        }
        #[derive(Serialize)]
        struct Document<'a> {
            perfetto_manifest: Versioned<'a>,
        }
        let document = Document {
            perfetto_manifest: Versioned {
                version: MANIFEST_VERSION,
                manifest: self,
            },
        };
        serde_json::to_string_pretty(&document).expect("a manifest is plain data")
    }
}

/// The size of a TAR block.
const BLOCK: usize = 512;

/// The largest member a ustar header's 11 octal digits hold.
const MAX_MEMBER: u64 = 0o77_777_777_777;

/// Write `members` (name, bytes) as a ustar archive to `out`: each a
/// regular file of mode 0644 at time 0, in the order given. A name must be
/// plain ASCII of at most 100 bytes, with no `/` at either end and no
/// `..` ([`Error::ArchiveName`]); a member over 8 GiB is
/// [`Error::ArchiveMemberSize`].
pub fn write_tar<W: Write>(mut out: W, members: &[(&str, &[u8])]) -> Result<()> {
    for (name, bytes) in members {
        out.write_all(&header(name, bytes.len() as u64)?)
            .map_err(Error::Output)?;
        out.write_all(bytes).map_err(Error::Output)?;
        let pad = (BLOCK - bytes.len() % BLOCK) % BLOCK;
        out.write_all(&[0; BLOCK][..pad]).map_err(Error::Output)?;
    }
    out.write_all(&[0; 2 * BLOCK]).map_err(Error::Output)?;
    out.flush().map_err(Error::Output)
}

/// [`write_tar`] to a complete, synced temporary beside `path`, for the
/// caller to put in place (with the outputs that belong with it); dropped,
/// it is removed.
pub fn stage_tar(path: &Path, members: &[(&str, &[u8])]) -> Result<safe_temp::TempFile> {
    let mut failed = None;
    let staged = xplane_proto::write_temp(path, |file| {
        write_tar(std::io::BufWriter::with_capacity(1 << 20, file), members).map_err(|e| match e {
            Error::Output(io) => io,
            other => {
                failed = Some(other);
                std::io::Error::other("archive stopped")
            }
        })
    });
    if let Some(e) = failed {
        return Err(e);
    }
    staged.map_err(|e| match e {
        xplane_proto::Error::Io { source, .. } => Error::Write {
            path: path.to_path_buf(),
            source,
        },
        other => Error::Read(other),
    })
}

/// The ustar header of a regular file `name` of `size` bytes.
fn header(name: &str, size: u64) -> Result<[u8; BLOCK]> {
    let plain = |c: char| c.is_ascii_graphic() && c != '\\';
    if name.is_empty()
        || name.len() > 100
        || !name.chars().all(plain)
        || name.starts_with('/')
        || name.ends_with('/')
        || name.split('/').any(|part| part == "..")
    {
        return Err(Error::ArchiveName {
            name: name.to_owned(),
        });
    }
    if size > MAX_MEMBER {
        return Err(Error::ArchiveMemberSize {
            name: name.to_owned(),
            size,
        });
    }
    let mut h = [0u8; BLOCK];
    h[..name.len()].copy_from_slice(name.as_bytes());
    octal(&mut h[100..108], 0o644);
    octal(&mut h[108..116], 0);
    octal(&mut h[116..124], 0);
    octal(&mut h[124..136], size);
    octal(&mut h[136..148], 0);
    h[156] = b'0';
    h[257..263].copy_from_slice(b"ustar\0");
    h[263..265].copy_from_slice(b"00");
    // The checksum counts its own field as spaces.
    h[148..156].fill(b' ');
    let sum: u64 = h.iter().map(|&b| u64::from(b)).sum();
    octal(&mut h[148..155], sum);
    h[155] = b' ';
    Ok(h)
}

/// `value` in octal, zero-padded to fill `field` but its last byte (NUL).
fn octal(field: &mut [u8], value: u64) {
    let digits = field.len() - 1;
    let text = format!("{value:0digits$o}");
    field[..digits].copy_from_slice(text.as_bytes());
    field[digits] = 0;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_checksum_counts_its_field_as_spaces() {
        let h = header("node0.pftrace", 1234).unwrap();
        let stored = u64::from_str_radix(std::str::from_utf8(&h[148..154]).unwrap(), 8).unwrap();
        let mut blank = h;
        blank[148..156].fill(b' ');
        let sum: u64 = blank.iter().map(|&b| u64::from(b)).sum();
        assert_eq!(stored, sum);
        assert_eq!(&h[124..136], b"00000002322\0");
    }

    #[test]
    fn refuses_names_a_reader_could_place_outside_its_folder() {
        for name in ["", "/abs", "a/../b", "dir/", "tab\tname", &"x".repeat(101)] {
            assert!(
                matches!(header(name, 0), Err(Error::ArchiveName { .. })),
                "{name:?}"
            );
        }
        assert!(header(&"x".repeat(100), 0).is_ok());
    }

    #[test]
    fn refuses_a_member_over_what_the_size_field_holds() {
        let err = header("big.pftrace", MAX_MEMBER + 1).unwrap_err();
        assert!(matches!(err, Error::ArchiveMemberSize { .. }), "{err}");
    }

    #[test]
    fn manifest_json_has_one_top_level_key_and_version_1() {
        let mut m = Manifest::new();
        m.files.push(ManifestFile::on_machine("a.pftrace", "a"));
        m.attributes.insert("x.n".into(), Attribute::Integer(3));
        let v: serde_json::Value = serde_json::from_str(&m.to_json()).unwrap();
        let obj = v.as_object().unwrap();
        assert_eq!(obj.len(), 1);
        assert_eq!(v["perfetto_manifest"]["version"], 1);
        assert_eq!(v["perfetto_manifest"]["files"][0]["machine"]["name"], "a");
        assert_eq!(v["perfetto_manifest"]["attributes"]["x.n"], 3);
        assert!(v["perfetto_manifest"].get("trace_time").is_none());
    }
}
