//! [`KernelObject`] over libbpf: the loaded object, its links, its maps by
//! role and its ring buffer. The only place a running query calls libbpf.

use super::maps::PerCpuHandle;
use super::object::{KernelObject, PairMap, RecordSink};
use super::stacks::Stacks;
use super::time_order::TimeOrder;
use super::{attach, load, selfstats, ProgramStats, Scope};
use ebq_exec::PerCpuMap;
use ebq_front::codegen::{MapRole, Program};
use ebq_front::error::{Error, Result};
use libbpf_rs::{Link, MapCore, MapFlags, MapHandle, MapType, Object, RingBuffer, RingBufferBuilder};
use std::cell::RefCell;
use std::os::fd::{AsFd, AsRawFd};
use std::path::Path;
use std::rc::Rc;
use std::time::Duration;

/// The record sink, shared by every ring's callback.
type SharedSink = Rc<RefCell<RecordSink>>;

/// One loaded, attached object. Fields drop in order: the ring buffer and
/// the links (detaching) before the maps and the object.
pub(crate) struct LibbpfObject {
    ring: Option<RingBuffer<'static>>,
    /// Per-CPU rows with a `time`: the poll's records, held until every ring
    /// is drained, and the sink they go to in time order.
    ordered: Option<(Rc<RefCell<TimeOrder>>, SharedSink)>,
    /// Per-CPU rows: each CPU's ring (also held by the `ebq_rows` slots).
    _rings: Vec<MapHandle>,
    links: Vec<Link>,
    /// The `-c` fork and exit followers: left attached by `detach`, closed on drop.
    _tracking: Vec<Link>,
    /// Periodic timers' clocks, stopped, read into `timer_periods` and closed by `detach`.
    timers: Vec<attach::TimerClock>,
    timer_periods: Option<u64>,
    groups: Option<PerCpuHandle>,
    sketch: Option<PerCpuHandle>,
    names: Option<PerCpuHandle>,
    stacks: Option<Stacks>,
    stats: MapHandle,
    pids: MapHandle,
    /// `.bss`: `ebq_window` (time windows) or `ebq_seq` (count windows) at offset 0.
    bss: Option<MapHandle>,
    /// JOIN: the pairing map.
    pending: Vec<MapHandle>,
    /// A kernel fold's maps (`MapRole::Fold`), by their C names.
    fold: Vec<(String, MapHandle)>,
    object: Object,
}

impl LibbpfObject {
    /// Loads `object` (built from `program`), fills the tracked-pid set, sets
    /// up the ring buffer into `sink` (a row program), then attaches.
    pub(crate) fn load_and_attach(
        object: &[u8],
        program: &Program,
        scope: &Scope,
        sink: Option<RecordSink>,
    ) -> Result<LibbpfObject> {
        let object = load::load(object, program, scope)?;
        super::startup_trace::mark("loaded (libbpf open, maps, verifier)");
        let maps = load::Maps { program, object: &object };
        let pids = maps.required(MapRole::TrackedPids)?;
        if let Scope::Tracked(tgids) = scope {
            for t in tgids {
                track(&pids, *t).map_err(|e| map_err(&format!("track pid {t}"), e))?;
            }
        }
        let (ring, rings, ordered) = match sink {
            Some(sink) => {
                let map = maps.required(MapRole::Rows)?;
                let rings = match program.row_rings {
                    Some(sizing) => cpu_rings(&map, sizing)?,
                    None => vec![],
                };
                // Every ring's records go to the one sink; one consume drains them all.
                // With per-CPU rings and a `time` field, through the poll's time order first.
                let offset = program.row_rings.and_then(|r| r.time_offset).filter(|_| !rings.is_empty());
                let sink: SharedSink = Rc::new(RefCell::new(sink));
                let order = offset.map(|o| Rc::new(RefCell::new(TimeOrder::new(o))));
                let mut b = RingBufferBuilder::new();
                let readers: Vec<&MapHandle> = if rings.is_empty() { vec![&map] } else { rings.iter().collect() };
                for &r in &readers {
                    let sink = sink.clone();
                    let order = order.clone();
                    b.add(r, move |bytes: &[u8]| {
                        match &order {
                            Some(o) => o.borrow_mut().push(bytes),
                            None => (*sink.borrow_mut())(bytes),
                        }
                        0
                    })
                    .map_err(|e| map_err("set up the ring buffer", e))?;
                }
                let ring = b.build().map_err(|e| map_err("set up the ring buffer", e))?;
                wake_on_signal_only(&ring, &readers)?;
                (Some(ring), rings, order.map(|o| (o, sink)))
            }
            None => (None, vec![], None),
        };
        let built = LibbpfObject {
            ring,
            ordered,
            _rings: rings,
            links: vec![],
            _tracking: vec![],
            timers: vec![],
            timer_periods: None,
            groups: maps.optional(MapRole::Groups)?.map(PerCpuHandle),
            sketch: maps.optional(MapRole::Sketch)?.map(PerCpuHandle),
            names: maps.optional(MapRole::Names)?.map(PerCpuHandle),
            stacks: maps.optional(MapRole::Stacks)?.map(Stacks::new),
            stats: maps.required(MapRole::Stats)?,
            pids,
            bss: maps.optional(MapRole::WindowCounter)?,
            pending: maps.all(MapRole::Pending)?,
            fold: program
                .maps
                .iter()
                .filter(|m| m.role == MapRole::Fold)
                .map(|m| m.name.to_string())
                .zip(maps.all(MapRole::Fold)?)
                .collect(),
            object,
        };
        let links = attach::attach_all(&built.object, program, scope)?;
        super::startup_trace::mark("attached");
        Ok(LibbpfObject { links: links.counting, _tracking: links.tracking, timers: links.timers, ..built })
    }

    fn bss(&self) -> &MapHandle {
        self.bss.as_ref().expect("windowed programs have ebq_window / ebq_seq in .bss")
    }
}

/// Creates one ring per possible CPU, `sizing` big, and puts each in its
/// slot of the ARRAY_OF_MAPS `outer` (before attaching: until then the
/// program finds no ring and counts the event as dropped).
fn cpu_rings(outer: &MapHandle, sizing: ebq_front::codegen::RowRings) -> Result<Vec<MapHandle>> {
    let cpus = super::load::possible_cpus()?;
    let bytes = sizing.bytes_per_cpu(cpus as usize);
    let opts = libbpf_rs::libbpf_sys::bpf_map_create_opts {
        sz: std::mem::size_of::<libbpf_rs::libbpf_sys::bpf_map_create_opts>() as libbpf_rs::libbpf_sys::size_t,
        ..Default::default()
    };
    (0..cpus)
        .map(|cpu| {
            let ring = MapHandle::create(MapType::RingBuf, Some(format!("ebq_ring{cpu}")), 0, 0, bytes, &opts)
                .map_err(|e| map_err(&format!("create the ring buffer of CPU {cpu} ({bytes} B)"), e))?;
            let fd = ring.as_fd().as_raw_fd();
            outer
                .update(&cpu.to_ne_bytes(), &fd.to_ne_bytes(), MapFlags::ANY)
                .map_err(|e| map_err(&format!("install the ring buffer of CPU {cpu}"), e))?;
            Ok(ring)
        })
        .collect()
}

/// Makes the ring buffer's epoll edge-triggered: a poll sleeps until the
/// program signals (a multiple of `EBQ_WAKEUP_BYTES` waiting) or its timeout
/// (50 ms), as the plan says, even when a few records are already waiting.
///
/// libbpf registers each ring level-triggered, and a ring is readable as soon
/// as one record waits: under a steady stream every poll returned at once, so
/// a drain held what came in since the last one. Under `dd bs=1` (400,000
/// reads/s) that was 15 to 1,006 batches for the same 200,000 rows, down to
/// 32 rows each, from run to run, and every batch costs each sink a wake-up,
/// a queue entry and its per-batch encoding (issue 38: three sinks' CPU).
/// The program's `BPF_RB_FORCE_WAKEUP` still wakes the reader at once.
fn wake_on_signal_only(ring: &RingBuffer<'_>, readers: &[&MapHandle]) -> Result<()> {
    for (i, r) in readers.iter().enumerate() {
        // libbpf's event data is the ring's index (`data.fd`), kept.
        let mut ev = libc::epoll_event { events: (libc::EPOLLIN | libc::EPOLLET) as u32, u64: i as u64 };
        // SAFETY: both fds are live (the ring buffer's epoll and a ring map it watches); `ev` outlives the call.
        if unsafe { libc::epoll_ctl(ring.epoll_fd(), libc::EPOLL_CTL_MOD, r.as_fd().as_raw_fd(), &mut ev) } != 0 {
            return Err(Error::Io {
                what: "set up the ring buffer (epoll)".into(),
                source: std::io::Error::last_os_error(),
            });
        }
    }
    Ok(())
}

fn track(pids: &MapHandle, tgid: u32) -> libbpf_rs::Result<()> {
    pids.update(&tgid.to_ne_bytes(), &[1], MapFlags::ANY)
}

impl KernelObject for LibbpfObject {
    fn groups(&self) -> Option<&dyn PerCpuMap> {
        self.groups.as_ref().map(|m| m as &dyn PerCpuMap)
    }

    fn groups_is_single_slot(&self) -> bool {
        self.groups.as_ref().is_some_and(|m| m.0.map_type() == MapType::PercpuArray)
    }

    fn sketch(&self) -> Option<&dyn PerCpuMap> {
        self.sketch.as_ref().map(|m| m as &dyn PerCpuMap)
    }

    fn names(&self) -> Option<&dyn PerCpuMap> {
        self.names.as_ref().map(|m| m as &dyn PerCpuMap)
    }

    fn stacks(&self) -> Option<&Stacks> {
        self.stacks.as_ref()
    }

    fn fold_map(&self, name: &str) -> Result<super::FoldEntries> {
        let Some((_, map)) = self.fold.iter().find(|(n, _)| n == name) else {
            let source = std::io::Error::other("the query's contract has no such map");
            return Err(Error::Io { what: format!("read fold map {name}"), source });
        };
        let per_cpu = matches!(map.map_type(), MapType::PercpuArray | MapType::PercpuHash | MapType::LruPercpuHash);
        let what = format!("read fold map {name}");
        map.keys()
            .filter_map(|k| {
                let v = if per_cpu {
                    map.lookup_percpu(&k, MapFlags::ANY).map_err(|e| map_err(&what, e))
                } else {
                    map.lookup(&k, MapFlags::ANY).map(|v| v.map(|v| vec![v])).map_err(|e| map_err(&what, e))
                };
                v.transpose().map(|v| v.map(|v| (k, v)))
            })
            .collect()
    }

    fn set_window(&self, window: u64) -> Result<()> {
        self.bss()
            .update(&0u32.to_ne_bytes(), &window.to_ne_bytes(), MapFlags::ANY)
            .map_err(|e| map_err("advance the window", e))
    }

    fn sequence(&self) -> Result<u64> {
        let v = self
            .bss()
            .lookup(&0u32.to_ne_bytes(), MapFlags::ANY)
            .map_err(|e| map_err("read the event sequence", e))?
            .unwrap_or_default();
        Ok(v.get(0..8).map_or(0, |b| u64::from_ne_bytes(b.try_into().expect("8 bytes"))))
    }

    fn stats_per_cpu(&self) -> Result<Vec<Vec<u8>>> {
        Ok(self
            .stats
            .lookup_percpu(&0u32.to_ne_bytes(), MapFlags::ANY)
            .map_err(|e| map_err("read stats", e))?
            .unwrap_or_default())
    }

    fn track_pid(&self, tgid: u32) -> Result<()> {
        track(&self.pids, tgid).map_err(|e| map_err("track pid", e))
    }

    fn poll_ring(&mut self, max_wait: Duration) -> Result<()> {
        let Some(ring) = &self.ring else { return Ok(()) };
        // A signal (Ctrl-C) interrupting the wait is not an error: the caller decides to stop.
        match ring.poll(max_wait) {
            Err(e) if e.kind() != libbpf_rs::ErrorKind::Interrupted => Err(map_err("poll the ring buffer", e)),
            _ => self.consume_ring(),
        }
    }

    fn consume_ring(&mut self) -> Result<()> {
        let Some(ring) = &self.ring else { return Ok(()) };
        ring.consume().map_err(|e| map_err("read the ring buffer", e))?;
        if let Some((order, sink)) = &self.ordered {
            let mut sink = sink.borrow_mut();
            order.borrow_mut().drain(|record| (*sink)(record));
        }
        Ok(())
    }

    fn detach(&mut self) {
        // Timers first: stopped, no firing comes between their count and the links'
        // close; their duplicate fds close here.
        let timers = std::mem::take(&mut self.timers);
        if !timers.is_empty() {
            self.timer_periods = Some(timers.iter().map(attach::TimerClock::stop_and_count_periods).sum());
        }
        // Closing a classic tracepoint's perf event waits in the kernel for RCU
        // grace periods (~80 ms each here); one after another that was most of
        // the time from a command's end to its results. On parallel threads the
        // waits overlap: all links are gone after about one. (tp_btf links close
        // at once; the process-tracking perf events stay until drop.)
        let links = std::mem::take(&mut self.links);
        std::thread::scope(|s| {
            for link in links {
                s.spawn(move || drop(link));
            }
        });
    }

    fn wait_for_inflight_programs(&self) {
        wait_for_inflight_programs()
    }

    fn pin(&mut self, role: MapRole, path: &Path) -> Result<bool> {
        let map = match role {
            MapRole::Groups => self.groups.as_mut().map(|m| &mut m.0),
            MapRole::Sketch => self.sketch.as_mut().map(|m| &mut m.0),
            MapRole::Stats => Some(&mut self.stats),
            _ => None,
        };
        let Some(map) = map else { return Ok(false) };
        map.pin(path).map_err(|e| map_err(&format!("pin {}", path.display()), e))?;
        Ok(true)
    }

    fn program_stats(&self) -> Vec<ProgramStats> {
        selfstats::program_stats(&self.object)
    }

    fn timer_periods(&self) -> Option<u64> {
        self.timer_periods
    }

    fn pending(&self) -> Vec<&dyn PairMap> {
        self.pending.iter().map(|p| p as &dyn PairMap).collect()
    }
}

/// Waits until every BPF program that started before this call has finished.
///
/// Tracepoint programs run inside RCU read-side sections, so an RCU grace
/// period (membarrier(MEMBARRIER_CMD_GLOBAL) runs synchronize_rcu) means no
/// program still holds the old window number.
fn wait_for_inflight_programs() {
    const MEMBARRIER_CMD_GLOBAL: libc::c_long = 1;
    // SAFETY: membarrier takes two integer arguments and no pointers.
    let rc = unsafe { libc::syscall(libc::SYS_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0) };
    if rc != 0 {
        // nohz_full kernels refuse it; programs run for microseconds.
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub(super) fn map_err(what: &str, e: libbpf_rs::Error) -> Error {
    Error::Io { what: what.into(), source: std::io::Error::other(e.to_string()) }
}
