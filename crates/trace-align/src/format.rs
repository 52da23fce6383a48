//! Which format a trace file is in, told from its first bytes (never from
//! its name): an XSpace protobuf or a Kineto Chrome-trace JSON, either
//! plain or gzip-compressed.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Result, RunError};

/// A trace file's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TraceFormat {
    /// XLA/TSL `XSpace` protobuf (`*.xplane.pb`).
    XSpace,
    /// PyTorch profiler (Kineto) Chrome-trace JSON (`*.pt.trace.json`).
    Kineto,
}

impl std::fmt::Display for TraceFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TraceFormat::XSpace => "XSpace",
            TraceFormat::Kineto => "Kineto JSON",
        })
    }
}

impl TraceFormat {
    /// How the collectives of traces in this format are read and checked,
    /// the same in every command (`merge`, `align`, `validate`, `report`):
    /// PyTorch profiler traces with their point-to-point transfers (a
    /// send/recv pair is matched, counted and drawn, never checked for
    /// happens-before), XSpace traces without.
    pub fn check_options(self) -> collective_check::Options {
        let mut options = collective_check::Options::default();
        options.include_point_to_point = self == TraceFormat::Kineto;
        options
    }

    /// The format of the file at `path`, from its first bytes (through
    /// gzip when compressed).
    pub fn detect(path: impl AsRef<Path>) -> Result<TraceFormat> {
        let path = path.as_ref();
        let head = xplane_proto::source::head(path, 64).map_err(|e| match e {
            xplane_proto::Error::Io { path, source } => RunError::Io { path, source },
            e => RunError::Trace(e),
        })?;
        // Bytes that give none: a gzip stream of nothing.
        if head.is_empty() && std::fs::metadata(path).is_ok_and(|m| m.len() > 0) {
            return Err(RunError::UnknownFormat {
                path: path.to_path_buf(),
                reason: "it is gzip of an empty file (or a gzip stream broken before its first byte)",
            });
        }
        Self::of_bytes(&head).map_err(|reason| RunError::UnknownFormat {
            path: path.to_path_buf(),
            reason,
        })
    }

    /// The format of a file that starts with `head` (decompressed).
    pub fn of_bytes(head: &[u8]) -> Result<TraceFormat, &'static str> {
        match head.iter().find(|b| !b.is_ascii_whitespace()) {
            None if head.is_empty() => Err("the file is empty"),
            None => Err("the file holds only white space"),
            Some(b'{') => Ok(TraceFormat::Kineto),
            // XSpace fields 1..=4 (planes, errors, warnings, hostnames) are
            // length-delimited: tags 0x0a, 0x12, 0x1a, 0x22.
            Some(_) if matches!(head[0], 0x0a | 0x12 | 0x1a | 0x22) => Ok(TraceFormat::XSpace),
            Some(_) => Err("its first byte starts neither a JSON object nor an XSpace field"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::TraceFormat;

    #[test]
    fn formats_from_first_bytes() {
        assert_eq!(TraceFormat::of_bytes(b"\x0a\x05"), Ok(TraceFormat::XSpace));
        assert_eq!(TraceFormat::of_bytes(b"\x22\x01h"), Ok(TraceFormat::XSpace));
        assert_eq!(
            TraceFormat::of_bytes(b"  \n{\"traceEvents\""),
            Ok(TraceFormat::Kineto)
        );
        assert!(TraceFormat::of_bytes(b"").is_err());
        assert!(TraceFormat::of_bytes(b"   ").is_err());
        assert!(TraceFormat::of_bytes(b"PK\x03\x04").is_err());
    }
}
