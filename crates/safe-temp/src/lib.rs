//! Temporary files and folders that never outlive their process: named
//! after it, removed on error, on SIGINT/SIGTERM, or by the next run when
//! the process was killed outright.
//!
//! Every output of the workspace is written to a temporary in the target's
//! folder and renamed over the target when complete. This crate makes
//! sure that no such temporary is left behind:
//!
//! - [`TempFile`] and [`TempDir`] are removed when dropped (an error, a
//!   panic); a [`TempFile`] becomes its target with [`TempFile::persist`],
//!   and outputs that belong together become theirs all or none with
//!   [`persist_together`].
//! - Each live temporary is listed; [`remove_all_and_exit`] removes them
//!   all, for a signal handler to call before the process ends.
//! - Each name carries the machine and the process id
//!   (`.<target>~ta~<host>~<pid>~<random>.tmp`, see [`TempName`]); the
//!   first temporary a process creates in a folder removes the ones there
//!   whose process is gone ([`sweep_stale`]): a run killed with SIGKILL
//!   is cleaned up by the next run writing into that folder. Only names
//!   of this exact form, from this machine, whose process is not running,
//!   are touched.
//! - [`persist_together`] puts the outputs in place with their folders
//!   locked ([`DirLock`]): two processes writing the same outputs leave
//!   one's set whole, never a mix. [`persist_together_recorded`] also
//!   notes them in the folder's [`OutputRecord`], so that a later run
//!   replaces or removes only files it can show were written there.
//!
//! ```
//! use std::io::Write;
//! use safe_temp::TempFile;
//!
//! let dir = tempfile::tempdir()?;
//! let target = dir.path().join("report.json");
//!
//! let mut tmp = TempFile::beside(&target)?;
//! tmp.write_all(b"{}")?;
//! assert!(safe_temp::TempName::parse(tmp.path().file_name().unwrap()).is_some());
//! tmp.persist(&target)?;
//! assert_eq!(std::fs::read(&target)?, b"{}");
//!
//! // Dropped without persist: nothing is left.
//! let tmp = TempFile::beside(&target)?;
//! drop(tmp);
//! assert_eq!(std::fs::read_dir(dir.path())?.count(), 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

mod dir;
mod error;
mod file;
mod name;
mod record;
mod registry;
mod stale;
mod together;

pub use dir::TempDir;
pub use error::{Error, Result};
pub use file::TempFile;
pub use name::{TempName, this_host};
pub use record::{DirLock, OutputRecord, RECORD_FILE};
pub use registry::{forget_new_folder, list_new_folder, live_count, remove_all_and_exit};
pub use stale::sweep_stale;
pub use together::{persist_together, persist_together_recorded};
