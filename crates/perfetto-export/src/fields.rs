//! Field numbers and enum values of the Perfetto messages the writer encodes
//! by hand, named after `proto/perfetto_trace.proto` (the read-back tests
//! decode the output with the prost types generated from that file).

/// `Trace`.
pub mod trace {
    /// `repeated TracePacket packet = 1`.
    pub const PACKET: u32 = 1;
}

/// `TracePacket`.
pub mod packet {
    /// `uint64 timestamp = 8`.
    pub const TIMESTAMP: u32 = 8;
    /// `uint32 timestamp_clock_id = 58`.
    pub const TIMESTAMP_CLOCK_ID: u32 = 58;
    /// `ClockSnapshot clock_snapshot = 6`.
    pub const CLOCK_SNAPSHOT: u32 = 6;
    /// `uint32 trusted_packet_sequence_id = 10`.
    pub const SEQUENCE_ID: u32 = 10;
    /// `TrackEvent track_event = 11`.
    pub const TRACK_EVENT: u32 = 11;
    /// `InternedData interned_data = 12`.
    pub const INTERNED_DATA: u32 = 12;
    /// `uint32 sequence_flags = 13`.
    pub const SEQUENCE_FLAGS: u32 = 13;
    /// `TracePacketDefaults trace_packet_defaults = 59`.
    pub const DEFAULTS: u32 = 59;
    /// `TrackDescriptor track_descriptor = 60`.
    pub const TRACK_DESCRIPTOR: u32 = 60;
    /// `bool first_packet_on_sequence = 87`.
    pub const FIRST_PACKET_ON_SEQUENCE: u32 = 87;
    /// `bytes compressed_packets = 50`: a zlib stream of `Trace` bytes.
    pub const COMPRESSED_PACKETS: u32 = 50;
    /// `SEQ_INCREMENTAL_STATE_CLEARED`.
    pub const SEQ_INCREMENTAL_STATE_CLEARED: u64 = 1;
}

/// `TracePacketDefaults` (and `TrackEventDefaults` inside it).
pub mod defaults {
    /// `uint32 timestamp_clock_id = 58`.
    pub const TIMESTAMP_CLOCK_ID: u32 = 58;
    /// `TrackEventDefaults track_event_defaults = 11`.
    pub const TRACK_EVENT_DEFAULTS: u32 = 11;
    /// `TrackEventDefaults.track_uuid = 11`.
    pub const TRACK_UUID: u32 = 11;
}

/// `ClockSnapshot` and `ClockSnapshot.Clock`.
pub mod clock {
    /// `repeated Clock clocks = 1`.
    pub const CLOCKS: u32 = 1;
    /// `BuiltinClock primary_trace_clock = 2`.
    pub const PRIMARY_TRACE_CLOCK: u32 = 2;
    /// `Clock.clock_id = 1`.
    pub const CLOCK_ID: u32 = 1;
    /// `Clock.timestamp = 2`.
    pub const TIMESTAMP: u32 = 2;
    /// `Clock.is_incremental = 3`.
    pub const IS_INCREMENTAL: u32 = 3;
    /// `BUILTIN_CLOCK_REALTIME`.
    pub const REALTIME: u64 = 1;
    /// `BUILTIN_CLOCK_BOOTTIME`.
    pub const BOOTTIME: u64 = 6;
    /// The sequence-scoped clock (ids 64–127) our packets count in: ns,
    /// each timestamp a delta from the sequence's previous one.
    pub const INCREMENTAL: u64 = 64;
}

/// `TrackEvent`.
pub mod event {
    /// `repeated DebugAnnotation debug_annotations = 4`.
    pub const DEBUG_ANNOTATIONS: u32 = 4;
    /// `Type type = 9`.
    pub const TYPE: u32 = 9;
    /// `uint64 name_iid = 10`.
    pub const NAME_IID: u32 = 10;
    /// `string name = 23`.
    pub const NAME: u32 = 23;
    /// `repeated fixed64 flow_ids = 47`.
    pub const FLOW_IDS: u32 = 47;
    /// `TYPE_SLICE_BEGIN`.
    pub const SLICE_BEGIN: u64 = 1;
    /// `TYPE_SLICE_END`.
    pub const SLICE_END: u64 = 2;
    /// `TYPE_INSTANT`.
    pub const INSTANT: u64 = 3;
    /// `TYPE_COUNTER`.
    pub const COUNTER: u64 = 4;
    /// `int64 counter_value = 30`.
    pub const COUNTER_VALUE: u32 = 30;
}

/// `DebugAnnotation`.
pub mod annotation {
    /// `uint64 name_iid = 1`.
    pub const NAME_IID: u32 = 1;
    /// `string name = 10`.
    pub const NAME: u32 = 10;
    /// `uint64 uint_value = 3`.
    pub const UINT_VALUE: u32 = 3;
    /// `int64 int_value = 4`.
    pub const INT_VALUE: u32 = 4;
    /// `double double_value = 5`.
    pub const DOUBLE_VALUE: u32 = 5;
    /// `string string_value = 6`.
    pub const STRING_VALUE: u32 = 6;
    /// `uint64 string_value_iid = 17`.
    pub const STRING_VALUE_IID: u32 = 17;
}

/// `InternedData` and the entries it holds (`iid = 1`, `name`/`str = 2`).
pub mod interned {
    /// `repeated EventCategory event_categories = 1`.
    pub const EVENT_CATEGORIES: u32 = 1;
    /// `repeated EventName event_names = 2`.
    pub const EVENT_NAMES: u32 = 2;
    /// `repeated DebugAnnotationName debug_annotation_names = 3`.
    pub const DEBUG_ANNOTATION_NAMES: u32 = 3;
    /// `repeated InternedString debug_annotation_string_values = 29`.
    pub const DEBUG_ANNOTATION_STRING_VALUES: u32 = 29;
    /// `iid = 1` of every interned entry.
    pub const IID: u32 = 1;
    /// `name = 2` (or `str = 2`) of every interned entry.
    pub const NAME: u32 = 2;
}

/// `TrackDescriptor`, `ProcessDescriptor`, `ThreadDescriptor`.
pub mod track {
    /// `uint64 uuid = 1`.
    pub const UUID: u32 = 1;
    /// `string name = 2`.
    pub const NAME: u32 = 2;
    /// `ProcessDescriptor process = 3`.
    pub const PROCESS: u32 = 3;
    /// `ThreadDescriptor thread = 4`.
    pub const THREAD: u32 = 4;
    /// `uint64 parent_uuid = 5`.
    pub const PARENT_UUID: u32 = 5;
    /// `ProcessDescriptor.pid = 1` / `ThreadDescriptor.pid = 1`.
    pub const PID: u32 = 1;
    /// `ThreadDescriptor.tid = 2`.
    pub const TID: u32 = 2;
    /// `ProcessDescriptor.process_name = 6`.
    pub const PROCESS_NAME: u32 = 6;
    /// `ThreadDescriptor.thread_name = 5`.
    pub const THREAD_NAME: u32 = 5;
    /// `CounterDescriptor counter = 8`.
    pub const COUNTER: u32 = 8;
    /// `CounterDescriptor.unit = 3`.
    pub const COUNTER_UNIT: u32 = 3;
    /// `CounterDescriptor.UNIT_TIME_NS`.
    pub const UNIT_TIME_NS: u64 = 1;
}
