#!/usr/bin/env python3
"""Check a Perfetto trace written by `align-cli export` against Perfetto's own
schema, as shipped in the `perfetto` PyPI package (`perfetto_trace_pb2`).

Run by hand (not in CI):

    python3 -m venv /tmp/pf && /tmp/pf/bin/pip install perfetto protobuf
    /tmp/pf/bin/python scripts/check-perfetto.py OUT.pftrace[.gz] [crates/perfetto-export/proto/perfetto_trace.proto]

It reports:
  1. every field of our .proto whose number or type differs from Perfetto's
     descriptor (or that Perfetto does not have);
  2. every unknown field met while parsing the trace with Perfetto's schema;
  3. counts: packets, sequences, slice begins/ends (balanced per sequence),
     instants, interned names, flows.
Exit status 1 when 1. or 2. found anything or begins and ends do not balance.
"""

import gzip
import re
import sys
import zlib
from collections import Counter, defaultdict

from google.protobuf import descriptor as _d
from google.protobuf import unknown_fields
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

SCALAR = {
    _d.FieldDescriptor.TYPE_UINT64: "uint64", _d.FieldDescriptor.TYPE_INT64: "int64",
    _d.FieldDescriptor.TYPE_UINT32: "uint32", _d.FieldDescriptor.TYPE_INT32: "int32",
    _d.FieldDescriptor.TYPE_BOOL: "bool", _d.FieldDescriptor.TYPE_STRING: "string",
    _d.FieldDescriptor.TYPE_BYTES: "bytes", _d.FieldDescriptor.TYPE_DOUBLE: "double",
    _d.FieldDescriptor.TYPE_FIXED64: "fixed64",
}


def our_fields(proto_path):
    """(message path, field name, type, number) of every field of our .proto."""
    stack, out = [], []
    for raw in open(proto_path):
        line = raw.split("//")[0].strip()
        m = re.match(r"(message|enum|oneof)\s+(\w+)\s*\{", line)
        if m:
            stack.append((m.group(1), m.group(2)))
            continue
        if line.startswith("}"):
            stack.pop()
            continue
        m = re.match(r"(?:optional|repeated)?\s*([\w.]+)\s+(\w+)\s*=\s*(\d+);", line)
        if m and stack and stack[-1][0] in ("message", "oneof"):
            path = ".".join(n for k, n in stack if k == "message")
            out.append((path, m.group(2), m.group(1), int(m.group(3))))
    return out


def check_schema(proto_path):
    problems = 0
    for path, name, typ, number in our_fields(proto_path):
        desc = pb.DESCRIPTOR.message_types_by_name.get(path.split(".")[0])
        for part in path.split(".")[1:]:
            desc = desc.nested_types_by_name.get(part) if desc else None
        if desc is None:
            print(f"schema: message {path} not in Perfetto's schema")
            problems += 1
            continue
        theirs = desc.fields_by_name.get(name)
        if theirs is None:
            print(f"schema: {path}.{name} not in Perfetto's schema")
            problems += 1
        elif theirs.number != number:
            print(f"schema: {path}.{name} = {number}, Perfetto has {theirs.number}")
            problems += 1
        elif theirs.type in SCALAR and SCALAR[theirs.type] != typ:
            print(f"schema: {path}.{name} is {typ}, Perfetto has {SCALAR[theirs.type]}")
            problems += 1
    return problems


def unknown(msg, where, found):
    for f in unknown_fields.UnknownFieldSet(msg):
        found[f"{where}#{f.field_number}"] += 1
    for fd, value in msg.ListFields():
        if fd.type != _d.FieldDescriptor.TYPE_MESSAGE:
            continue
        if fd.is_repeated:
            for v in value:
                unknown(v, f"{where}.{fd.name}", found)
        else:
            unknown(value, f"{where}.{fd.name}", found)


def main():
    trace_path = sys.argv[1]
    proto_path = sys.argv[2] if len(sys.argv) > 2 else "crates/perfetto-export/proto/perfetto_trace.proto"
    problems = check_schema(proto_path)
    print(f"schema: {len(our_fields(proto_path))} fields of our .proto checked, {problems} problem(s)")

    data = open(trace_path, "rb").read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    outer = pb.Trace()
    outer.ParseFromString(data)
    # Bundles (`compressed_packets`: zlib streams of Trace bytes) are
    # inflated in their place, as Perfetto's trace processor does.
    trace = pb.Trace()
    bundles = 0
    for p in outer.packet:
        if p.HasField("compressed_packets"):
            bundles += 1
            inner = pb.Trace()
            inner.ParseFromString(zlib.decompress(p.compressed_packets))
            trace.packet.extend(inner.packet)
        else:
            trace.packet.append(p)
    print(f"file: {len(outer.packet)} top-level packets, {bundles} compressed bundles")
    found = Counter()
    depth = defaultdict(int)
    begins = ends = flows = instants = 0
    names = set()
    unbalanced = 0
    for p in trace.packet:
        unknown(p, "TracePacket", found)
        seq = p.trusted_packet_sequence_id
        for n in p.interned_data.event_names:
            names.add(n.name)
        if p.HasField("track_event"):
            t = p.track_event.type
            if t == pb.TrackEvent.TYPE_SLICE_BEGIN:
                begins += 1
                depth[seq] += 1
                flows += len(p.track_event.flow_ids)
            elif t == pb.TrackEvent.TYPE_INSTANT:
                instants += 1
            elif t == pb.TrackEvent.TYPE_SLICE_END:
                ends += 1
                depth[seq] -= 1
                if depth[seq] < 0:
                    unbalanced += 1
    unbalanced += sum(1 for d in depth.values() if d != 0)
    for where, n in sorted(found.items()):
        print(f"unknown field: {where} ({n} times)")
    print(f"trace: {len(trace.packet)} packets on {len(depth)} event sequences; "
          f"{begins} slice begins, {ends} ends, {unbalanced} unbalanced sequences; {instants} instants; "
          f"{len(names)} distinct event names; {flows} flow ids on slices; "
          f"{sum(found.values())} unknown fields")
    sys.exit(1 if problems or found or unbalanced else 0)


if __name__ == "__main__":
    main()
