//! Output formats by file name, and atomic output files.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use crate::chrome::ChromeWriter;
use crate::counter::NodeCounter;
use crate::error::{Error, Result};
use crate::perfetto::{Packets, PerfettoWriter};
use crate::track::NodeTrack;
use crate::walk::{Input, Summary, export_all};

/// An output format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Format {
    /// Perfetto's protobuf trace (`.pftrace`, `.perfetto-trace`), gzip-compressed
    /// when `gzip` (`.pftrace.gz`, `.perfetto-trace.gz`; Perfetto reads both).
    Perfetto {
        /// Compress with gzip.
        gzip: bool,
    },
    /// Chrome trace JSON (`.json`), gzip-compressed when `gzip` (`.json.gz`).
    ChromeJson {
        /// Compress with gzip.
        gzip: bool,
    },
}

impl Format {
    /// The format a file name asks for (ASCII case-insensitive), if any.
    ///
    /// ```
    /// use perfetto_export::Format;
    /// assert_eq!(Format::from_path("run.pftrace"), Some(Format::Perfetto { gzip: false }));
    /// assert_eq!(Format::from_path("a/run.JSON.gz"), Some(Format::ChromeJson { gzip: true }));
    /// assert_eq!(Format::from_path("run.xplane.pb"), None);
    /// ```
    pub fn from_path(path: impl AsRef<Path>) -> Option<Format> {
        let name = path.as_ref().file_name()?.to_str()?.to_ascii_lowercase();
        if name.ends_with(".pftrace") || name.ends_with(".perfetto-trace") {
            Some(Format::Perfetto { gzip: false })
        } else if name.ends_with(".pftrace.gz") || name.ends_with(".perfetto-trace.gz") {
            Some(Format::Perfetto { gzip: true })
        } else if name.ends_with(".json") {
            Some(Format::ChromeJson { gzip: false })
        } else if name.ends_with(".json.gz") {
            Some(Format::ChromeJson { gzip: true })
        } else {
            None
        }
    }
}

/// What to write besides the inputs' events, and how.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct Options {
    /// How a Perfetto trace stores its packets; under gzip they are always
    /// plain (compressing twice gains nothing).
    pub packets: Packets,
    /// Counter tracks to add, e.g. each node's clock correction.
    pub counters: Vec<NodeCounter>,
    /// Slice tracks to add, e.g. the cross-node critical path.
    pub tracks: Vec<NodeTrack>,
    /// The collectives of the inputs, already matched and checked (the
    /// report a merge made of its own output): the flows across nodes and
    /// the violation marks come from it, and the inputs are not read for
    /// them. `None` reads them from the inputs.
    pub collectives: Option<collective_check::Report>,
}

/// Export `inputs` in `format` to `out` (buffer it; it is flushed at the end).
pub fn write_format<W: Write>(
    inputs: &[Input<'_>],
    format: Format,
    options: &Options,
    out: W,
) -> Result<Summary> {
    let counters = &options.counters[..];
    let tracks = &options.tracks[..];
    let checked = options.collectives.as_ref();
    match format {
        Format::Perfetto { gzip: false } => export_all(
            inputs,
            counters,
            tracks,
            checked,
            &mut PerfettoWriter::with_packets(out, options.packets),
        ),
        Format::ChromeJson { gzip: false } => export_all(
            inputs,
            counters,
            tracks,
            checked,
            &mut ChromeWriter::new(out),
        ),
        Format::Perfetto { gzip: true } => gzipped(out, flate2::Compression::fast(), |w| {
            let mut writer = PerfettoWriter::new(w);
            export_all(inputs, counters, tracks, checked, &mut writer)
                .map(|s| (s, writer.into_inner()))
        }),
        Format::ChromeJson { gzip: true } => gzipped(out, flate2::Compression::default(), |w| {
            let mut writer = ChromeWriter::new(w);
            export_all(inputs, counters, tracks, checked, &mut writer)
                .map(|s| (s, writer.into_inner()))
        }),
    }
}

type Gz<W> = BufWriter<flate2::write::GzEncoder<W>>;

/// Run `write` on a buffered gzip stream over `out`, then finish the stream.
fn gzipped<W: Write>(
    out: W,
    level: flate2::Compression,
    write: impl FnOnce(Gz<W>) -> Result<(Summary, Gz<W>)>,
) -> Result<Summary> {
    let gz = flate2::write::GzEncoder::new(out, level);
    let (summary, buffered) = write(BufWriter::with_capacity(1 << 16, gz))?;
    let gz = buffered
        .into_inner()
        .map_err(|e| Error::Output(e.into_error()))?;
    gz.finish()
        .map_err(Error::Output)?
        .flush()
        .map_err(Error::Output)?;
    Ok(summary)
}

/// Export `inputs` to the file `path` in the format its name asks for
/// ([`Format::from_path`]), atomically: the file appears only when complete,
/// and an error leaves nothing behind (an existing file stays as it was).
/// A `.pftrace` holds deflated packets ([`Packets::Deflated`]).
pub fn export_file(inputs: &[Input<'_>], path: impl AsRef<Path>) -> Result<Summary> {
    export_file_with(inputs, path, &Options::default())
}

/// [`export_file`] with `options`: counter tracks, and how a Perfetto
/// trace stores its packets.
pub fn export_file_with(
    inputs: &[Input<'_>],
    path: impl AsRef<Path>,
    options: &Options,
) -> Result<Summary> {
    let path = path.as_ref();
    let (summary, tmp) = export_staged(inputs, path, options)?;
    tmp.persist(path).map_err(|e| Error::Write {
        path: path.to_path_buf(),
        source: e.into_io(),
    })?;
    Ok(summary)
}

/// [`export_file_with`] up to the rename: the complete, synced export in
/// a temporary beside `path`, for the caller to put in place with the
/// outputs that belong with it ([`safe_temp::persist_together`]);
/// dropped, it is removed.
pub fn export_staged(
    inputs: &[Input<'_>],
    path: &Path,
    options: &Options,
) -> Result<(Summary, safe_temp::TempFile)> {
    let format = Format::from_path(path).ok_or_else(|| Error::UnknownFormat {
        path: path.to_path_buf(),
    })?;
    let mut outcome: Option<Result<Summary>> = None;
    let written = xplane_proto::write_temp(path, |file: &mut File| {
        let result = write_format(
            inputs,
            format,
            options,
            BufWriter::with_capacity(1 << 20, file),
        );
        match result {
            Ok(summary) => {
                outcome = Some(Ok(summary));
                Ok(())
            }
            Err(Error::Output(e)) => Err(e),
            Err(e) => {
                outcome = Some(Err(e));
                Err(std::io::Error::other("export stopped"))
            }
        }
    });
    match (written, outcome) {
        (Ok(tmp), Some(Ok(summary))) => Ok((summary, tmp)),
        (_, Some(Err(e))) => Err(e),
        (Err(xplane_proto::Error::Io { source, .. }), _) => Err(Error::Write {
            path: path.to_path_buf(),
            source,
        }),
        (Err(e), _) => Err(Error::Read(e)),
        (Ok(_), None) => unreachable!("the closure sets the outcome on success"),
    }
}
