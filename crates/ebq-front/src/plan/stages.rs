//! The benchmark knob of `ebq bench stages`: stop a row query's program after
//! one of the six stages of the tracing pipeline (IOTracer's dissection).
//!
//! The overhead of each stage is measured by switching the stages on one by
//! one in the *same* generated program, so the difference between two runs is
//! that stage's code and nothing else. Never set outside benchmarks: a limited
//! query delivers no rows (or, at [`StageLimit::Commit`], rows nobody reads).

/// The last stage a row query's BPF program runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum StageLimit {
    /// The program returns at once: the cost of the probe firing.
    Trigger,
    /// Scope check, stats and WHERE, then return.
    Filter,
    /// + `bpf_ringbuf_reserve` of the record, then discard it.
    Reserve,
    /// + read the columns and fill the record, then discard it.
    Build,
    /// + submit the record (without wake-ups); the reader leaves it unread.
    Commit,
}

impl StageLimit {
    /// Stages in pipeline order (the last, retrieve, is the unlimited query).
    pub const ALL: [StageLimit; 5] =
        [StageLimit::Trigger, StageLimit::Filter, StageLimit::Reserve, StageLimit::Build, StageLimit::Commit];

    /// The stage's name as the bench and the paper call it.
    pub fn name(self) -> &'static str {
        match self {
            StageLimit::Trigger => "trigger",
            StageLimit::Filter => "filter",
            StageLimit::Reserve => "reserve",
            StageLimit::Build => "build",
            StageLimit::Commit => "commit",
        }
    }

    /// Parses [`StageLimit::name`].
    pub fn from_name(s: &str) -> Option<StageLimit> {
        StageLimit::ALL.into_iter().find(|l| l.name() == s)
    }
}
