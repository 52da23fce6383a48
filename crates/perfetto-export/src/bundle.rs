//! Where the writer's packets go: appended in place to one buffer, which is
//! written out as it is ([`Packets::Plain`](crate::Packets)) or, deflated,
//! as one `compressed_packets` packet, as Perfetto's tracing service writes
//! them: each bundle is a zlib stream of `Trace` bytes (packets with their
//! field-1 preamble), so a reader inflates it and parses the packets in its
//! place. Bundles are compressed on the thread pool while the walk goes on,
//! and written in order.

use std::collections::VecDeque;
use std::io::Write;
use std::sync::mpsc::{Receiver, sync_channel};

use crate::error::{Error, Result};
use crate::fields::{packet, trace};
use xplane_proto::wire;

/// Uncompressed bytes per bundle (and per write of plain packets).
const BUNDLE_BYTES: usize = 1 << 20;
/// Bundles being compressed at once, at most (bounds memory to a few MiB).
const MAX_IN_FLIGHT: usize = 8;

/// The open buffer of packets, and how it leaves.
pub(crate) struct PacketBuffer {
    open: Vec<u8>,
    /// Set when packets are deflated in bundles.
    bundler: Option<Bundler>,
    written: u64,
}

impl PacketBuffer {
    /// Packets written as they are (`level` `None`), or deflated at `level`.
    pub fn new(level: Option<flate2::Compression>) -> Self {
        PacketBuffer {
            open: Vec::with_capacity(BUNDLE_BYTES + (BUNDLE_BYTES >> 3)),
            bundler: level.map(Bundler::new),
            written: 0,
        }
    }

    /// The open buffer: append whole packets (`Trace.packet` fields) to it,
    /// then call [`PacketBuffer::packet_done`].
    #[inline]
    pub fn open(&mut self) -> &mut Vec<u8> {
        &mut self.open
    }

    /// A packet was appended: when the buffer is full, it leaves.
    #[inline]
    pub fn packet_done<W: Write>(&mut self, out: &mut W) -> Result<()> {
        if self.open.len() >= BUNDLE_BYTES {
            self.send(out)?;
        }
        Ok(())
    }

    /// Bytes handed to the output so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Write out what is left (every bundle, in order).
    pub fn finish<W: Write>(&mut self, out: &mut W) -> Result<()> {
        if !self.open.is_empty() {
            self.send(out)?;
        }
        if let Some(bundler) = &mut self.bundler {
            self.written += bundler.finish(out)?;
        }
        Ok(())
    }

    #[cold]
    fn send<W: Write>(&mut self, out: &mut W) -> Result<()> {
        match &mut self.bundler {
            None => {
                self.written += write(out, &self.open)?;
                self.open.clear();
            }
            Some(bundler) => {
                let capacity = self.open.capacity();
                self.written += bundler.seal(std::mem::take(&mut self.open), out)?;
                self.open = bundler.buffer(capacity);
            }
        }
        Ok(())
    }
}

/// A compressed bundle, and the buffer it was compressed from (to be
/// filled again: its pages are already the process's).
type Done = (Vec<u8>, Vec<u8>);

/// Compresses bundles on the pool and writes them in order.
pub(crate) struct Bundler {
    level: flate2::Compression,
    in_flight: VecDeque<Receiver<Done>>,
    /// Buffers of written bundles, emptied.
    spare: Vec<Vec<u8>>,
}

impl Bundler {
    pub fn new(level: flate2::Compression) -> Self {
        Bundler {
            level,
            in_flight: VecDeque::new(),
            spare: Vec::new(),
        }
    }

    /// An empty buffer for the next bundle: one of a bundle already
    /// written, else a new one of `capacity` bytes.
    pub fn buffer(&mut self, capacity: usize) -> Vec<u8> {
        self.spare
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(capacity))
    }

    /// Start compressing `raw` (whole packets with their preambles) and
    /// write every bundle that is ready, waiting when too many are in
    /// flight. Returns the bytes written to `out`.
    pub fn seal<W: Write>(&mut self, raw: Vec<u8>, out: &mut W) -> Result<u64> {
        self.start(raw);
        let mut written = 0;
        while let Some(front) = self.in_flight.front() {
            let ready = if self.in_flight.len() > MAX_IN_FLIGHT {
                Some(front.recv().map_err(lost)?)
            } else {
                front.try_recv().ok()
            };
            let Some((bytes, mut raw)) = ready else {
                break;
            };
            self.in_flight.pop_front();
            written += write(out, &bytes)?;
            raw.clear();
            self.spare.push(raw);
        }
        Ok(written)
    }

    /// Write every bundle, in order. Returns the bytes written to `out`.
    pub fn finish<W: Write>(&mut self, out: &mut W) -> Result<u64> {
        let mut written = 0;
        while let Some(front) = self.in_flight.pop_front() {
            written += write(out, &front.recv().map_err(lost)?.0)?;
        }
        Ok(written)
    }

    /// Start compressing `raw` on the pool; inline when this thread is
    /// itself one of the pool's (waiting there for a task that needs a free
    /// worker could wait forever).
    fn start(&mut self, raw: Vec<u8>) {
        let (send, receive) = sync_channel(1);
        let level = self.level;
        let compress = move || {
            // The receiver is dropped only when the writer failed; then the
            // bundle is not needed.
            let bundle = compressed_packet(&raw, level);
            let _ = send.send((bundle, raw));
        };
        match rayon::current_thread_index() {
            Some(_) => compress(),
            None => rayon::spawn(compress),
        }
        self.in_flight.push_back(receive);
    }
}

fn write<W: Write>(out: &mut W, bytes: &[u8]) -> Result<u64> {
    out.write_all(bytes).map_err(Error::Output)?;
    Ok(bytes.len() as u64)
}

fn lost(_: std::sync::mpsc::RecvError) -> Error {
    Error::Output(std::io::Error::other("a compression task stopped"))
}

/// `raw` (packets with their preambles) as one `Trace.packet` whose only
/// field is `compressed_packets`.
pub(crate) fn compressed_packet(raw: &[u8], level: flate2::Compression) -> Vec<u8> {
    let mut z = flate2::write::ZlibEncoder::new(Vec::with_capacity(raw.len() / 2), level);
    z.write_all(raw).expect("writing to memory cannot fail");
    let z = z.finish().expect("writing to memory cannot fail");
    let mut inner = Vec::with_capacity(z.len() + 8);
    wire::put_bytes_field(&mut inner, packet::COMPRESSED_PACKETS, &z);
    let mut outer = Vec::with_capacity(inner.len() + 8);
    wire::put_bytes_field(&mut outer, trace::PACKET, &inner);
    outer
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::{Trace, trace_packet::Data};
    use prost::Message;
    use std::io::Read;

    /// A small valid `TracePacket`: a timestamp and a sequence id.
    fn packet(ts: u64) -> Vec<u8> {
        let mut p = Vec::new();
        wire::put_varint_field(&mut p, packet::TIMESTAMP, ts);
        wire::put_varint_field(&mut p, packet::SEQUENCE_ID, 7);
        p
    }

    fn head(len: usize) -> Vec<u8> {
        let mut h = vec![wire::key_byte(
            trace::PACKET,
            wire::WireType::LengthDelimited,
        )];
        wire::put_varint(&mut h, len as u64);
        h
    }

    #[test]
    fn bundles_inflate_to_the_packets_in_order() {
        let mut buffer = PacketBuffer::new(Some(flate2::Compression::fast()));
        let mut out = Vec::new();
        let mut plain = Vec::new();
        let count = 400_000u64;
        for ts in 0..count {
            let p = packet(ts * 1_000_003);
            let h = head(p.len());
            plain.extend_from_slice(&h);
            plain.extend_from_slice(&p);
            buffer.open().extend_from_slice(&h);
            buffer.open().extend_from_slice(&p);
            buffer.packet_done(&mut out).unwrap();
        }
        buffer.finish(&mut out).unwrap();
        assert_eq!(buffer.written(), out.len() as u64);
        assert!(out.len() < plain.len(), "{} vs {}", out.len(), plain.len());

        let trace = Trace::decode(&out[..]).unwrap();
        assert!(trace.packet.len() > 2, "several bundles");
        let mut inflated = Vec::new();
        for p in &trace.packet {
            let Some(Data::CompressedPackets(z)) = &p.data else {
                panic!("only compressed packets at the top level");
            };
            flate2::read::ZlibDecoder::new(&z[..])
                .read_to_end(&mut inflated)
                .unwrap();
        }
        assert_eq!(inflated, plain);
        let inner = Trace::decode(&inflated[..]).unwrap();
        assert_eq!(inner.packet.len() as u64, count);
        assert_eq!(inner.packet[12_345].timestamp, Some(12_345 * 1_000_003));
    }

    #[test]
    fn inside_the_pool_bundles_are_compressed_inline() {
        // One worker, busy running this writer: a spawned compression could
        // never run, so the writer must not wait for one.
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        let (out, count) = pool.install(|| {
            let mut buffer = PacketBuffer::new(Some(flate2::Compression::fast()));
            let mut out = Vec::new();
            let count = 200_000u64;
            for ts in 0..count {
                let p = packet(ts);
                buffer.open().extend_from_slice(&head(p.len()));
                buffer.open().extend_from_slice(&p);
                buffer.packet_done(&mut out).unwrap();
            }
            buffer.finish(&mut out).unwrap();
            (out, count)
        });
        let mut inflated = Vec::new();
        for p in Trace::decode(&out[..]).unwrap().packet {
            let Some(Data::CompressedPackets(z)) = p.data else {
                panic!("a bundle")
            };
            flate2::read::ZlibDecoder::new(&z[..])
                .read_to_end(&mut inflated)
                .unwrap();
        }
        assert_eq!(
            Trace::decode(&inflated[..]).unwrap().packet.len() as u64,
            count
        );
    }

    #[test]
    fn nothing_pushed_writes_nothing() {
        for level in [None, Some(flate2::Compression::fast())] {
            let mut out = Vec::new();
            let mut buffer = PacketBuffer::new(level);
            buffer.finish(&mut out).unwrap();
            assert_eq!(buffer.written(), 0);
            assert!(out.is_empty());
        }
    }

    #[test]
    fn plain_packets_leave_as_they_are_in_writes_of_a_bundle() {
        let mut buffer = PacketBuffer::new(None);
        let (mut out, mut plain) = (Vec::new(), Vec::new());
        for ts in 0..300_000 {
            let p = packet(ts);
            plain.extend_from_slice(&head(p.len()));
            plain.extend_from_slice(&p);
            buffer.open().extend_from_slice(&head(p.len()));
            buffer.open().extend_from_slice(&p);
            buffer.packet_done(&mut out).unwrap();
            assert!(buffer.open().len() < BUNDLE_BYTES);
        }
        assert!(!out.is_empty(), "a full buffer was written before the end");
        buffer.finish(&mut out).unwrap();
        assert_eq!(out, plain);
        assert_eq!(buffer.written(), plain.len() as u64);
    }
}
