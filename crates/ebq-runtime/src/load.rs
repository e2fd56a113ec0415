//! libbpf: object bytes → loaded object, with the verifier log kept for errors.

use ebq_front::codegen::{scope, Config, ConfigLayout, MapRole, Program};
use ebq_front::error::{Error, Result};
use libbpf_rs::{MapCore, MapHandle, Object, ObjectBuilder, PrintLevel};
use std::sync::Mutex;

/// Who the program should see.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// Every process.
    All,
    /// Threads of one process (`-p PID`).
    Process(u32),
    /// These processes and, when the fork follower is attached, their descendants (`-c CMD`).
    Tracked(Vec<u32>),
    /// Tasks in a cgroup v2 group or its descendants (`--cgroup PATH`), checked
    /// in the kernel: the current task's ancestor at `level` must be `id`
    /// ([`ebq_front::host::cgroups::cgroup_of`] gives both).
    Cgroup {
        /// The group's id (its directory's inode number).
        id: u64,
        /// Its depth below the cgroup2 root.
        level: u32,
    },
}

static LIBBPF_LOG: Mutex<String> = Mutex::new(String::new());

fn capture(level: PrintLevel, msg: String) {
    if let Ok(mut log) = LIBBPF_LOG.lock() {
        if log.len() < 1 << 20 || matches!(level, PrintLevel::Warn) {
            log.push_str(&msg);
        }
    }
}

/// Opens the object, writes the scope into its config (`program.config`,
/// in the [`MapRole::Config`] section), and loads it.
pub fn load(object: &[u8], program: &Program, scope_: &Scope) -> Result<Object> {
    static INIT: std::sync::Once = std::sync::Once::new();
    INIT.call_once(|| {
        libbpf_rs::set_print(Some((PrintLevel::Warn, capture)));
    });
    let fail = |what: &str, e: libbpf_rs::Error| {
        let log = LIBBPF_LOG.lock().map(|mut l| std::mem::take(&mut *l)).unwrap_or_default();
        let errno = match e.kind() {
            libbpf_rs::ErrorKind::PermissionDenied => libc::EPERM,
            _ => libc::EINVAL,
        };
        Error::Load {
            what: what.to_string(),
            errno,
            log: if log.contains("processed") || log.contains("R1") || log.contains("invalid") {
                log
            } else {
                String::new()
            },
        }
    };
    if let Ok(mut l) = LIBBPF_LOG.lock() {
        l.clear();
    }
    let mut open = ObjectBuilder::default().open_memory(object).map_err(|e| fail("open the BPF object", e))?;
    let config = match scope_ {
        Scope::All => Config { scope: scope::ALL, ..Default::default() },
        Scope::Process(p) => Config { scope: scope::PROCESS, target_tgid: *p, ..Default::default() },
        Scope::Tracked(_) => Config { scope: scope::TRACKED, ..Default::default() },
        Scope::Cgroup { id, level } => {
            Config { scope: scope::CGROUP, cgroup_level: *level, cgroup_id: *id, ..Default::default() }
        }
    };
    let bytes = program.config.encode(&config);
    let at = ConfigLayout::OFFSET..ConfigLayout::OFFSET + bytes.len();
    if let Some(section) = program.map(MapRole::Config) {
        for mut m in open.maps_mut() {
            if section.is(&m.name().to_string_lossy()) {
                if let Some(data) = m.initial_value_mut().and_then(|d| d.get_mut(at.clone())) {
                    data.copy_from_slice(&bytes);
                }
            }
        }
    }
    if let (Some(_), Some(rows)) = (program.row_rings, program.map(MapRole::Rows)) {
        // Per-CPU rings: one slot of the ARRAY_OF_MAPS per possible CPU (the C declares one).
        let cpus = possible_cpus()?;
        for mut m in open.maps_mut() {
            if rows.is(&m.name().to_string_lossy()) {
                m.set_max_entries(cpus).map_err(|e| fail("size the per-CPU ring slots", e))?;
            }
        }
    }
    open.load().map_err(|e| fail("load the query's BPF program", e))
}

/// The number of possible CPUs (the slots of per-CPU maps and rings).
pub fn possible_cpus() -> Result<u32> {
    libbpf_rs::num_possible_cpus()
        .ok()
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| Error::Io { what: "count the possible CPUs".into(), source: std::io::Error::last_os_error() })
}

/// The maps of a loaded object, found through its contract.
pub struct Maps<'a> {
    /// The object's contract.
    pub program: &'a Program,
    /// The loaded object.
    pub object: &'a Object,
}

impl Maps<'_> {
    /// The map with `role`, when the contract has one.
    pub fn optional(&self, role: MapRole) -> Result<Option<MapHandle>> {
        self.program.map(role).map(|info| self.open(info)).transpose()
    }

    /// Every map with `role`, in the contract's order (a union's branches
    /// each have their own pairing map).
    pub fn all(&self, role: MapRole) -> Result<Vec<MapHandle>> {
        self.program.maps.iter().filter(|m| m.role == role).map(|info| self.open(info)).collect()
    }

    fn open(&self, info: &ebq_front::codegen::MapInfo) -> Result<MapHandle> {
        let map = self.object.maps().find(|m| info.is(&m.name().to_string_lossy())).ok_or_else(|| Error::Io {
            what: format!("find map {}", info.name),
            source: std::io::Error::other("not in the object"),
        })?;
        MapHandle::try_from(&map).map_err(|e| Error::Io {
            what: format!("open map {}", info.name),
            source: std::io::Error::other(e.to_string()),
        })
    }

    /// The map with `role`, which every object of this kind has.
    pub fn required(&self, role: MapRole) -> Result<MapHandle> {
        self.optional(role)?.ok_or_else(|| Error::Io {
            what: format!("find the {role:?} map"),
            source: std::io::Error::other("not in the program's contract"),
        })
    }
}
