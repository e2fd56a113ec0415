//! Rows of per-CPU rings put back in time order, one poll at a time.
//!
//! One consume drains each CPU's ring in turn, so a poll's records arrive as
//! one run per CPU: a plain row stream would show CPU 0's rows, then CPU 1's.
//! When the record carries the event's `time` (`bpf_ktime_get_ns`, one clock
//! for all CPUs), the poll's records are held here and handed on sorted by it.
//! A stable sort rather than a strict k-way merge: a program can be preempted
//! between reading the clock and reserving its record, so a CPU's own run is
//! only nearly sorted; the sort orders it anyway, and on a few sorted runs it
//! costs about a merge.
//!
//! The bound: rows are in time order within a poll. A record is visible to
//! the reader only once committed, so a row that another CPU committed after
//! this poll's drain (an event in flight, or a preempted program) arrives in a
//! later poll with an earlier time. That window is the time between a program
//! reading the clock and its submit: the program's own run time, microseconds,
//! unless its task is preempted in between (then up to a scheduler slice).

/// A poll's records, held until [`TimeOrder::drain`].
pub(crate) struct TimeOrder {
    /// Byte offset of the `time` field (a native-endian u64) in a record.
    offset: usize,
    /// The records' bytes, back to back.
    bytes: Vec<u8>,
    /// (time, start, length) of each record in `bytes`.
    index: Vec<(u64, usize, usize)>,
}

impl TimeOrder {
    /// Orders records by the u64 at `offset`.
    pub(crate) fn new(offset: u32) -> TimeOrder {
        TimeOrder { offset: offset as usize, bytes: vec![], index: vec![] }
    }

    /// Holds one record. A record too short to hold the time sorts first.
    pub(crate) fn push(&mut self, record: &[u8]) {
        let time =
            record.get(self.offset..self.offset + 8).map_or(0, |b| u64::from_ne_bytes(b.try_into().expect("8 bytes")));
        self.index.push((time, self.bytes.len(), record.len()));
        self.bytes.extend_from_slice(record);
    }

    /// Hands every held record to `sink`, oldest first (arrival order among
    /// equal times), and forgets them.
    pub(crate) fn drain(&mut self, mut sink: impl FnMut(&[u8])) {
        self.index.sort_by_key(|(t, _, _)| *t);
        for &(_, start, len) in &self.index {
            sink(&self.bytes[start..start + len]);
        }
        self.index.clear();
        self.bytes.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::TimeOrder;

    fn record(time: u64, tag: u8) -> Vec<u8> {
        let mut r = vec![tag; 4];
        r.extend_from_slice(&time.to_ne_bytes());
        r
    }

    #[test]
    fn runs_of_two_cpus_come_out_merged_by_time_and_equal_times_keep_arrival_order() {
        let mut o = TimeOrder::new(4);
        // CPU 0's run, then CPU 1's, as one consume delivers them.
        for (t, tag) in [(10, 0), (30, 1), (50, 2), (20, 3), (30, 4), (60, 5)] {
            o.push(&record(t, tag));
        }
        let mut got = vec![];
        o.drain(|r| got.push((u64::from_ne_bytes(r[4..12].try_into().unwrap()), r[0])));
        assert_eq!(got, vec![(10, 0), (20, 3), (30, 1), (30, 4), (50, 2), (60, 5)]);
        let mut again = 0;
        o.drain(|_| again += 1);
        assert_eq!(again, 0, "drained records are forgotten");
    }
}
