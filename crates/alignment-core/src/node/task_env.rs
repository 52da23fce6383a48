//! The output's `Task Environment`.

use xplane_proto::{
    BufferSink, ORIGINAL_PROFILE_START_STAT, PROFILE_START_TIME, PROFILE_STOP_TIME, PlaneView,
    TASK_ENV_PLANE, XPlane, XPlaneExt, XSpaceWriter, x_stat,
};

use super::NodeAligner;
use crate::error::{AlignError, LineField, Result};
use crate::output::{PlaneOutput, PlaneWritten, apply_stats};

impl NodeAligner<'_> {
    /// The `Task Environment` plane this node's output gets, if any: the
    /// input's (or a new one when the output's session start is not 0)
    /// with the output's session start, the node's own kept as
    /// [`ORIGINAL_PROFILE_START_STAT`], and the stop time on the global
    /// clock.
    pub fn aligned_task_environment(&self) -> Result<Option<XPlane>> {
        for plane in self.view.planes() {
            let plane = plane.map_err(|e| AlignError::wire(&self.path, &self.view, e))?;
            if plane.name == TASK_ENV_PLANE {
                return self.task_environment(Some(&plane)).map(Some);
            }
        }
        if self.output_base_ns == 0 {
            return Ok(None);
        }
        self.task_environment(None).map(Some)
    }

    pub(super) fn write_task_environment<W: BufferSink + Send>(
        &self,
        plane: Option<&PlaneView<'_>>,
        output: &PlaneOutput,
        writer: &mut XSpaceWriter<W>,
    ) -> Result<PlaneWritten> {
        let mut owned = self.task_environment(plane)?;
        owned.id = output.id;
        owned.name = output.name.clone();
        apply_stats(&mut owned, output);
        writer.plane(&owned)?;
        Ok(PlaneWritten {
            lines: owned.lines.len() as u64,
            events: owned.lines.iter().map(|l| l.events.len() as u64).sum(),
        })
    }

    /// The output's `Task Environment`: session start = the output base,
    /// the node's own start kept as [`ORIGINAL_PROFILE_START_STAT`], the
    /// stop time mapped onto the global clock.
    fn task_environment(&self, plane: Option<&PlaneView<'_>>) -> Result<XPlane> {
        let mut owned = match plane {
            Some(p) => p
                .to_owned()
                .map_err(|e| AlignError::wire(&self.path, &self.view, e))?,
            None => XPlane {
                name: TASK_ENV_PLANE.to_owned(),
                ..Default::default()
            },
        };
        let stop = owned.integer_stat(PROFILE_STOP_TIME);
        let time = |stat, ns| self.time_value(stat, ns);
        owned.set_stat(
            PROFILE_START_TIME,
            time(PROFILE_START_TIME, self.output_base_ns)?,
        );
        owned.set_stat(
            ORIGINAL_PROFILE_START_STAT,
            time(ORIGINAL_PROFILE_START_STAT, self.session_start_ns)?,
        );
        if let Some(stop) = stop {
            owned.set_stat(
                PROFILE_STOP_TIME,
                time(PROFILE_STOP_TIME, self.stop_on_global(stop))?,
            );
        }
        // Lines of this plane (rare) keep their absolute times.
        for line in &mut owned.lines {
            let ts = line.timestamp_ns as i128 + self.session_start_ns - self.output_base_ns;
            line.timestamp_ns = i64::try_from(ts).map_err(|_| AlignError::LineFieldOverflow {
                path: self.path.clone(),
                plane: TASK_ENV_PLANE.to_owned(),
                line: line.name.clone(),
                line_id: line.id,
                field: LineField::TimestampNs,
                value: ts,
            })?;
        }
        Ok(owned)
    }

    /// A uint64 time stat value (epoch ns); a time before the epoch or
    /// past 2^64 ns is an error naming the stat.
    fn time_value(&self, stat: &'static str, ns: i128) -> Result<x_stat::Value> {
        u64::try_from(ns)
            .map(x_stat::Value::Uint64Value)
            .map_err(|_| AlignError::SessionTimeOutOfRange {
                path: self.path.clone(),
                stat,
                value_ns: ns,
            })
    }
}
