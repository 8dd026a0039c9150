//! The timing a bus analyser would read off the line: from the log of
//! frames ([`Line::frames`](super::Line::frames)), the gaps the standard
//! bounds.
//!
//! - **Tturnaround** (Clause 9.5.3: at least 40 bit times): from the end of
//!   a frame to the start of the next one from another station.
//! - **Reply delay** (Treply_delay, at most 250 ms): from the end of a
//!   BACnet Data Expecting Reply (or Test_Request) to the start of the
//!   answer (reply, Reply Postponed, Test_Response) from its destination.
//! - **Tusage_delay** (at most 15 ms): from the end of a Token or Poll For
//!   Master to the start of the addressed station's first frame.
//!
//! Only clean frames count, and only a next frame that follows directly.

use super::line::LineFrame;
use bacnet::mstp::{BROADCAST, FrameType, Micros};
use std::fmt;

/// The gaps found, µs, in line order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Timings {
    /// End of a frame to the next frame from another station.
    pub turnaround: Vec<Micros>,
    /// End of a request to the start of its answer.
    pub reply_delay: Vec<Micros>,
    /// End of a Token or Poll For Master to the addressed station's first
    /// octet.
    pub usage_delay: Vec<Micros>,
}

impl Timings {
    /// Read the gaps off `frames` (in line order).
    pub fn from_frames(frames: &[LineFrame]) -> Timings {
        let mut t = Timings::default();
        for pair in frames.windows(2) {
            let (a, b) = (&pair[0], &pair[1]);
            if !a.is_clean() || !b.is_clean() || b.start < a.end || a.station == b.station {
                continue;
            }
            let gap = b.start - a.end;
            t.turnaround.push(gap);
            let (Some(ha), Some(hb)) = (a.header(), b.header()) else { continue };
            if ha.destination == BROADCAST || hb.source != ha.destination {
                continue;
            }
            if ha.frame_type.expects_reply() {
                t.reply_delay.push(gap);
            } else if ha.frame_type == FrameType::TOKEN || ha.frame_type == FrameType::POLL_FOR_MASTER {
                t.usage_delay.push(gap);
            }
        }
        t
    }
}

/// Order statistics of a sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Percentiles {
    /// The sample size.
    pub count: usize,
    /// The least.
    pub min: Micros,
    /// The median.
    pub p50: Micros,
    /// The 90th percentile.
    pub p90: Micros,
    /// The 99th percentile.
    pub p99: Micros,
    /// The greatest.
    pub max: Micros,
}

impl Percentiles {
    /// `None` for an empty sample. Nearest-rank percentiles.
    pub fn of(sample: &[Micros]) -> Option<Percentiles> {
        if sample.is_empty() {
            return None;
        }
        let mut v = sample.to_vec();
        v.sort_unstable();
        let rank = |p: usize| v[((p * v.len()).div_ceil(100)).clamp(1, v.len()) - 1];
        Some(Percentiles {
            count: v.len(),
            min: v[0],
            p50: rank(50),
            p90: rank(90),
            p99: rank(99),
            max: v[v.len() - 1],
        })
    }
}

impl fmt::Display for Percentiles {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "n={} min={} p50={} p90={} p99={} max={} µs",
            self.count, self.min, self.p50, self.p90, self.p99, self.max
        )
    }
}
