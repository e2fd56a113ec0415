//! A [`KernelObject`] made of plain values, recording every kernel access
//! in order, so the query driver's tests (`single`, `stream_join`) can check
//! what was read, deleted and when, without root.

use super::object::{KernelObject, RecordSink};
use super::single::SingleQuery;
use super::stacks::Stacks;
use super::ProgramStats;
use ebq_exec::PerCpuMap;
use ebq_front::codegen::generate;
use ebq_front::codegen::MapRole;
use ebq_front::error::Result;
use ebq_front::plan::{KernelOutput, PhysicalPlan};
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, VecDeque};
use std::io;
use std::path::Path;
use std::rc::Rc;
use std::time::Duration;

/// One kernel access, as the fake saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Call {
    SetWindow(u64),
    Sequence,
    Wait,
    Detach,
    /// The group map's keys were listed.
    Keys,
    /// A group was read (its key).
    Read(Vec<u8>),
    /// A group was deleted (its key).
    Remove(Vec<u8>),
    /// The ring buffer was polled (`true`) or consumed.
    Ring(bool),
    TrackPid(u32),
}

/// The kernel state a test sets up and inspects; the fake object shares it.
#[derive(Default)]
pub(super) struct FakeKernel {
    /// Shared by the two streams of a join, which then log in one order.
    pub log: Rc<RefCell<Vec<Call>>>,
    /// `ebq_groups`: key → per-CPU values.
    pub groups: RefCell<BTreeMap<Vec<u8>, Vec<Vec<u8>>>>,
    /// `ebq_seq`.
    pub seq: Cell<u64>,
    /// `ebq_window`, as last written.
    pub window: Cell<u64>,
    /// `struct ebq_stats` per CPU.
    pub stats: RefCell<Vec<Vec<u8>>>,
    /// Records committed to the ring buffer and not yet read.
    pub records: RefCell<VecDeque<Vec<u8>>>,
    pub programs: Vec<ProgramStats>,
    /// A periodic timer's periods, as the object reads them once detached.
    pub timer_periods: Option<u64>,
}

impl FakeKernel {
    fn call(&self, c: Call) {
        self.log.borrow_mut().push(c);
    }

    /// The calls so far, forgotten.
    pub fn take_log(&self) -> Vec<Call> {
        std::mem::take(&mut *self.log.borrow_mut())
    }
}

/// The group map of a [`FakeKernel`], logging reads and deletes.
struct FakeGroups(Rc<FakeKernel>);

impl PerCpuMap for FakeGroups {
    fn all_keys(&self) -> Vec<Vec<u8>> {
        self.0.call(Call::Keys);
        self.0.groups.borrow().keys().cloned().collect()
    }
    fn read_percpu(&self, key: &[u8]) -> io::Result<Option<Vec<Vec<u8>>>> {
        self.0.call(Call::Read(key.to_vec()));
        Ok(self.0.groups.borrow().get(key).cloned())
    }
    fn write_percpu(&self, key: &[u8], values: &[Vec<u8>]) -> io::Result<()> {
        self.0.groups.borrow_mut().insert(key.to_vec(), values.to_vec());
        Ok(())
    }
    fn remove(&self, key: &[u8]) -> io::Result<()> {
        self.0.call(Call::Remove(key.to_vec()));
        self.0.groups.borrow_mut().remove(key);
        Ok(())
    }
}

/// The object a [`SingleQuery`] drives in tests.
pub(super) struct FakeObject {
    kernel: Rc<FakeKernel>,
    groups: Option<FakeGroups>,
    sink: Option<RecordSink>,
}

impl FakeObject {
    /// An object over `kernel`; `aggregates` gives it a group map.
    pub fn new(kernel: &Rc<FakeKernel>, aggregates: bool, sink: Option<RecordSink>) -> FakeObject {
        FakeObject { kernel: kernel.clone(), groups: aggregates.then(|| FakeGroups(kernel.clone())), sink }
    }

    fn drain(&mut self) {
        let sink = self.sink.as_mut().expect("a row program has a sink");
        while let Some(r) = self.kernel.records.borrow_mut().pop_front() {
            sink(&r);
        }
    }
}

impl KernelObject for FakeObject {
    fn groups(&self) -> Option<&dyn PerCpuMap> {
        self.groups.as_ref().map(|g| g as &dyn PerCpuMap)
    }
    fn groups_is_single_slot(&self) -> bool {
        false
    }
    fn sketch(&self) -> Option<&dyn PerCpuMap> {
        None
    }
    fn stacks(&self) -> Option<&Stacks> {
        None
    }
    fn set_window(&self, window: u64) -> Result<()> {
        self.kernel.call(Call::SetWindow(window));
        self.kernel.window.set(window);
        Ok(())
    }
    fn sequence(&self) -> Result<u64> {
        self.kernel.call(Call::Sequence);
        Ok(self.kernel.seq.get())
    }
    fn stats_per_cpu(&self) -> Result<Vec<Vec<u8>>> {
        Ok(self.kernel.stats.borrow().clone())
    }
    fn track_pid(&self, tgid: u32) -> Result<()> {
        self.kernel.call(Call::TrackPid(tgid));
        Ok(())
    }
    fn poll_ring(&mut self, _max_wait: Duration) -> Result<()> {
        self.kernel.call(Call::Ring(true));
        self.drain();
        Ok(())
    }
    fn consume_ring(&mut self) -> Result<()> {
        self.kernel.call(Call::Ring(false));
        self.drain();
        Ok(())
    }
    fn detach(&mut self) {
        self.kernel.call(Call::Detach);
    }
    fn wait_for_inflight_programs(&self) {
        self.kernel.call(Call::Wait);
    }
    fn pin(&mut self, _role: MapRole, _path: &Path) -> Result<bool> {
        Ok(false)
    }
    fn program_stats(&self) -> Vec<ProgramStats> {
        self.kernel.programs.clone()
    }
    fn timer_periods(&self) -> Option<u64> {
        self.kernel.timer_periods
    }
    fn pending(&self) -> Vec<&dyn super::object::PairMap> {
        vec![]
    }
}

/// `plan` (of one kernel program) driven over `kernel`; `rows_as_values` as
/// for a stream of a join.
pub(super) fn fake_query(plan: &PhysicalPlan, kernel: &Rc<FakeKernel>, rows_as_values: bool) -> SingleQuery {
    let program = generate(plan).remove(0);
    let aggregates = matches!(plan.programs[0].output, KernelOutput::Aggregate { .. });
    SingleQuery::new(plan, &program, rows_as_values, |sink| Ok(Box::new(FakeObject::new(kernel, aggregates, sink))))
        .expect("a fake object starts")
}

/// `struct ebq_stats` of one CPU: the counters in `StatsField::ALL` order.
pub(super) fn stats_bytes(counters: [u64; 6]) -> Vec<u8> {
    let all = ebq_front::codegen::StatsField::ALL;
    let mut b = vec![0u8; all.len() * 8];
    for (f, n) in all.into_iter().zip(counters) {
        b[f.offset()..f.offset() + 8].copy_from_slice(&n.to_ne_bytes());
    }
    b
}
