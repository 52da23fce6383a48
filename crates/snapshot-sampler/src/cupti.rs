//! CUPTI's `cuptiGetTimestamp` as a tracer clock, the library loaded at
//! run time with `dlopen`: building needs no CUDA, and a machine without
//! it gets a clear error naming what was tried.

use std::ffi::{CStr, CString, c_char, c_int, c_void};

use crate::clock::TracerClock;
use crate::error::{Result, SamplerError};

/// `CUptiResult cuptiGetTimestamp(uint64_t *timestamp)`.
type GetTimestamp = unsafe extern "C" fn(*mut u64) -> c_int;

/// The names tried, in order, after `$CUPTI_LIBRARY` when that is set.
pub const CUPTI_NAMES: &[&str] = &[
    "libcupti.so",
    "libcupti.so.13",
    "libcupti.so.12",
    "libcupti.so.11.8",
    "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so",
    "/usr/local/cuda/lib64/libcupti.so",
];

/// CUPTI's timestamp (ns, the clock CUPTI stamps kernel records with).
///
/// The library stays loaded for the rest of the process.
#[derive(Debug)]
pub struct Cupti {
    get: GetTimestamp,
    library: String,
}

// SAFETY: the function pointer is into a library that is never unloaded,
// and `cuptiGetTimestamp` may be called from any thread.
unsafe impl Send for Cupti {}

impl Cupti {
    /// Load the library (`$CUPTI_LIBRARY`, else [`CUPTI_NAMES`]), find
    /// `cuptiGetTimestamp` and read it once.
    pub fn load() -> Result<Cupti> {
        let mut tried: Vec<String> = std::env::var("CUPTI_LIBRARY").into_iter().collect();
        tried.extend(CUPTI_NAMES.iter().map(|s| s.to_string()));
        let mut reason = String::from("not found");
        for name in &tried {
            let Ok(c_name) = CString::new(name.as_str()) else {
                continue;
            };
            // SAFETY: a NUL-terminated name; the handle is never closed.
            let handle =
                unsafe { libc::dlopen(c_name.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
            if handle.is_null() {
                reason = dl_error();
                continue;
            }
            let symbol = c"cuptiGetTimestamp";
            // SAFETY: a valid handle and symbol name.
            let address: *mut c_void = unsafe { libc::dlsym(handle, symbol.as_ptr()) };
            if address.is_null() {
                reason = format!("{name} has no cuptiGetTimestamp: {}", dl_error());
                continue;
            }
            // SAFETY: the symbol is CUPTI's, of the documented signature.
            let get = unsafe { std::mem::transmute::<*mut c_void, GetTimestamp>(address) };
            let cupti = Cupti {
                get,
                library: name.clone(),
            };
            cupti.read()?;
            return Ok(cupti);
        }
        Err(SamplerError::CuptiLibrary {
            tried: tried.join(", "),
            reason,
        })
    }
}

impl TracerClock for Cupti {
    fn name(&self) -> &str {
        "CUPTI"
    }

    fn describe(&self) -> String {
        format!("CUPTI cuptiGetTimestamp ({})", self.library)
    }

    fn read(&self) -> Result<i64> {
        let mut ns = 0u64;
        // SAFETY: `ns` is a valid, writable u64.
        let code = unsafe { (self.get)(&mut ns) };
        if code != 0 {
            return Err(SamplerError::CuptiCall { code });
        }
        i64::try_from(ns).map_err(|_| SamplerError::NegativeTime {
            clock: "CUPTI".into(),
            ns: ns as i64,
        })
    }
}

/// The loader's last message.
fn dl_error() -> String {
    // SAFETY: dlerror returns NULL or a NUL-terminated string.
    let message: *const c_char = unsafe { libc::dlerror() };
    if message.is_null() {
        return "unknown loader error".into();
    }
    // SAFETY: non-null, NUL-terminated, valid until the next dl* call.
    unsafe { CStr::from_ptr(message) }
        .to_string_lossy()
        .into_owned()
}
