//! The Chrome trace JSON writer (`{"displayTimeUnit":"ns","traceEvents":[…]}`),
//! streamed event by event.
//!
//! `ts` and `dur` are microseconds with exactly three decimals, written from
//! the integer ns, never through floating point. `ts` is relative to the
//! file's `baseTimeNanoseconds` (epoch ns, as Kineto writes it: absolute
//! time = base + `ts` × 1000), a whole second at or before the earliest
//! event, so that a viewer parsing `ts` as a float64 keeps every ns: the
//! value stays below 2^53 ns / 1000 for runs of up to 104 days, where
//! absolute epoch µs (≈ 1.8e15) keep only 0.25 µs and slices that nest
//! exactly would overlap after parsing.
//! One `pid` per node and one `tid` per track, named and ordered by `M`
//! events; slices are `X` events with their stats in `args`; flows are
//! `s`/`t`/`f` events bound to the enclosing slice.

use std::io::Write;

use crate::args::{ArgValue, hex, ref_text, stat_name};
use crate::error::{Error, Result};
use crate::sink::{FlowStep, InstantInfo, Process, Sink, SliceInfo, Track, TrackKind};

/// Flow ids are kept below 2^53 so JavaScript viewers read them exactly.
const FLOW_ID_MASK: u64 = (1 << 53) - 1;

/// Writes Chrome's JSON trace format to `W`.
///
/// Give it a buffered writer; [`Sink::finish`] closes the JSON and flushes.
pub struct ChromeWriter<W: Write> {
    out: W,
    started: bool,
    first: bool,
    pid: i32,
    tid: i32,
    category: &'static str,
    /// The current counter track's name, as JSON.
    counter: String,
    /// Epoch ns that `ts` counts from ([`Sink::time_base`]).
    base_ns: i64,
}

/// Write `ns` as microseconds with three decimals.
pub fn write_us(out: &mut impl Write, ns: i64) -> std::io::Result<()> {
    let sign = if ns < 0 { "-" } else { "" };
    let abs = ns.unsigned_abs();
    write!(out, "{sign}{}.{:03}", abs / 1000, abs % 1000)
}

fn string(out: &mut impl Write, s: &str) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, s).map_err(std::io::Error::from)
}

impl<W: Write> ChromeWriter<W> {
    /// A writer to `out`.
    pub fn new(out: W) -> Self {
        ChromeWriter {
            out,
            started: false,
            first: true,
            pid: 0,
            tid: 0,
            category: "",
            counter: String::new(),
            base_ns: 0,
        }
    }

    /// The underlying writer.
    pub fn into_inner(self) -> W {
        self.out
    }

    /// Open the JSON (once).
    fn open(&mut self) -> std::io::Result<()> {
        if !self.started {
            self.started = true;
            writeln!(
                self.out,
                "{{\"displayTimeUnit\":\"ns\",\"baseTimeNanoseconds\":{},\"traceEvents\":[",
                self.base_ns
            )?;
        }
        Ok(())
    }

    /// Open the JSON (once) and separate events.
    fn next_event(&mut self) -> std::io::Result<()> {
        self.open()?;
        if !self.first {
            self.out.write_all(b",\n")?;
        }
        self.first = false;
        Ok(())
    }

    fn metadata(
        &mut self,
        pid: i32,
        tid: i32,
        name: &str,
        key: &str,
        value: &str,
    ) -> std::io::Result<()> {
        self.next_event()?;
        write!(
            self.out,
            "{{\"ph\":\"M\",\"pid\":{pid},\"tid\":{tid},\"name\":\"{name}\",\"args\":{{\"{key}\":{value}}}}}"
        )
    }

    fn json_string(s: &str) -> String {
        serde_json::to_string(s).expect("a string serialises")
    }

    fn slice(&mut self, s: &SliceInfo<'_, '_>) -> std::io::Result<()> {
        self.next_event()?;
        let (pid, tid) = (self.pid, self.tid);
        write!(
            self.out,
            "{{\"ph\":\"X\",\"pid\":{pid},\"tid\":{tid},\"ts\":"
        )?;
        write_us(&mut self.out, s.begin_ns - self.base_ns)?;
        self.out.write_all(b",\"dur\":")?;
        write_us(&mut self.out, s.end_ns - s.begin_ns)?;
        self.out.write_all(b",\"name\":")?;
        string(&mut self.out, s.name())?;
        write!(self.out, ",\"cat\":\"{}\",\"args\":{{", self.category)?;
        let mut keys: Vec<String> = Vec::with_capacity(s.args.len());
        for (k, a) in s.args.iter().enumerate() {
            if k > 0 {
                self.out.write_all(b",")?;
            }
            let key = unique_key(&keys, &stat_name(s.names, a.name_id));
            string(&mut self.out, &key)?;
            keys.push(key);
            self.out.write_all(b":")?;
            match &a.value {
                ArgValue::Int(v) => write!(self.out, "{v}")?,
                ArgValue::Uint(v) => write!(self.out, "{v}")?,
                ArgValue::Double(v) => {
                    serde_json::to_writer(&mut self.out, v).map_err(std::io::Error::from)?
                }
                ArgValue::Str(t) => string(&mut self.out, t)?,
                ArgValue::Ref(id) => string(&mut self.out, &ref_text(s.names, *id))?,
                ArgValue::Bytes(b) => string(&mut self.out, &hex(b))?,
                ArgValue::Empty => self.out.write_all(b"null")?,
            }
        }
        self.out.write_all(b"}}")?;
        for f in s.flows {
            self.next_event()?;
            let ph = match f.step {
                FlowStep::Start => "s",
                FlowStep::Step => "t",
                FlowStep::End => "f",
            };
            write!(
                self.out,
                "{{\"ph\":\"{ph}\",\"id\":{},\"pid\":{pid},\"tid\":{tid},\"ts\":",
                f.id & FLOW_ID_MASK
            )?;
            write_us(&mut self.out, s.begin_ns - self.base_ns)?;
            self.out
                .write_all(b",\"name\":\"flow\",\"cat\":\"flow\",\"bp\":\"e\"}")?;
        }
        Ok(())
    }
}

impl<W: Write> Sink for ChromeWriter<W> {
    fn time_base(&mut self, base_ns: i64) -> Result<()> {
        if self.started {
            return Err(Error::TimeBaseAfterStart);
        }
        self.base_ns = base_ns;
        Ok(())
    }

    fn process(&mut self, p: &Process) -> Result<()> {
        let name = Self::json_string(&p.name);
        self.metadata(p.pid, 0, "process_name", "name", &name)
            .and_then(|()| {
                self.metadata(
                    p.pid,
                    0,
                    "process_sort_index",
                    "sort_index",
                    &p.node.to_string(),
                )
            })
            .map_err(Error::Output)
    }

    fn track(&mut self, t: &Track) -> Result<()> {
        self.pid = t.pid;
        self.tid = t.tid;
        self.category = t.category;
        let name = Self::json_string(&t.name);
        if t.kind == TrackKind::Counter {
            // A counter is a process-level series named by its events.
            self.counter = name;
            return Ok(());
        }
        self.metadata(t.pid, t.tid, "thread_name", "name", &name)
            .and_then(|()| {
                self.metadata(
                    t.pid,
                    t.tid,
                    "thread_sort_index",
                    "sort_index",
                    &t.sort_index.to_string(),
                )
            })
            .map_err(Error::Output)
    }

    fn begin(&mut self, s: &SliceInfo<'_, '_>) -> Result<()> {
        self.slice(s).map_err(Error::Output)
    }

    fn end(&mut self, _end_ns: i64) -> Result<()> {
        Ok(())
    }

    fn instant(&mut self, i: &InstantInfo) -> Result<()> {
        let write = |w: &mut Self| -> std::io::Result<()> {
            w.next_event()?;
            let (pid, tid) = (w.pid, w.tid);
            write!(
                w.out,
                "{{\"ph\":\"i\",\"s\":\"t\",\"pid\":{pid},\"tid\":{tid},\"ts\":"
            )?;
            write_us(&mut w.out, i.ns - w.base_ns)?;
            w.out.write_all(b",\"name\":")?;
            string(&mut w.out, &i.name)?;
            write!(w.out, ",\"cat\":\"{}\",\"args\":{{", w.category)?;
            let mut keys: Vec<String> = Vec::with_capacity(i.args.len());
            for (k, (name, value)) in i.args.iter().enumerate() {
                if k > 0 {
                    w.out.write_all(b",")?;
                }
                let key = unique_key(&keys, name);
                string(&mut w.out, &key)?;
                keys.push(key);
                w.out.write_all(b":")?;
                match value {
                    ArgValue::Double(v) => {
                        serde_json::to_writer(&mut w.out, v).map_err(std::io::Error::from)?
                    }
                    ArgValue::Str(t) => string(&mut w.out, t)?,
                    ArgValue::Int(v) => write!(w.out, "{v}")?,
                    ArgValue::Uint(v) => write!(w.out, "{v}")?,
                    _ => w.out.write_all(b"null")?,
                }
            }
            w.out.write_all(b"}}")
        };
        write(self).map_err(Error::Output)
    }

    fn counter(&mut self, ns: i64, value: i64) -> Result<()> {
        let write = |w: &mut Self| -> std::io::Result<()> {
            w.next_event()?;
            write!(w.out, "{{\"ph\":\"C\",\"pid\":{},\"ts\":", w.pid)?;
            write_us(&mut w.out, ns - w.base_ns)?;
            write!(
                w.out,
                ",\"name\":{},\"cat\":\"{}\",\"args\":{{\"ns\":{value}}}}}",
                w.counter, w.category
            )
        };
        write(self).map_err(Error::Output)
    }

    fn finish(&mut self) -> Result<()> {
        let close = |w: &mut Self| -> std::io::Result<()> {
            w.open()?;
            w.out.write_all(b"\n]}\n")?;
            w.out.flush()
        };
        close(self).map_err(Error::Output)
    }
}

/// `name` as a key of an `args` object that already holds `taken`: two
/// stats of one name (two metadata entries named alike) would make
/// duplicate JSON keys, of which viewers keep only the last, so a repeat
/// becomes `name (2)`, `name (3)`, ...
fn unique_key(taken: &[String], name: &str) -> String {
    if !taken.iter().any(|t| t == name) {
        return name.to_owned();
    }
    (2..)
        .map(|n| format!("{name} ({n})"))
        .find(|k| !taken.contains(k))
        .expect("some suffix is free")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn microseconds_have_three_exact_decimals() {
        let us = |ns| {
            let mut v = Vec::new();
            write_us(&mut v, ns).unwrap();
            String::from_utf8(v).unwrap()
        };
        assert_eq!(us(1_795_303_341_484_103_896), "1795303341484103.896");
        assert_eq!(us(7), "0.007");
        assert_eq!(us(1_000), "1.000");
        assert_eq!(us(-1_500), "-1.500");
        assert_eq!(us(i64::MAX), "9223372036854775.807");
    }
}
