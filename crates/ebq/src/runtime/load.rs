//! libbpf: object bytes → loaded object, with the verifier log kept for errors.

use crate::codegen::scope;
use crate::error::{Error, Result};
use libbpf_rs::{Object, ObjectBuilder, PrintLevel};
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
}

static LIBBPF_LOG: Mutex<String> = Mutex::new(String::new());

fn capture(level: PrintLevel, msg: String) {
    if let Ok(mut log) = LIBBPF_LOG.lock() {
        if log.len() < 1 << 20 || matches!(level, PrintLevel::Warn) {
            log.push_str(&msg);
        }
    }
}

/// Opens the object, writes the scope into `.rodata`, and loads it.
pub fn load(object: &[u8], scope_: &Scope) -> Result<Object> {
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
    let (mode, tgid) = match scope_ {
        Scope::All => (scope::ALL, 0),
        Scope::Process(p) => (scope::PROCESS, *p),
        Scope::Tracked(_) => (scope::TRACKED, 0),
    };
    for mut m in open.maps_mut() {
        if m.name().to_string_lossy().ends_with(".rodata") {
            if let Some(data) = m.initial_value_mut() {
                if data.len() >= 8 {
                    data[0..4].copy_from_slice(&mode.to_ne_bytes());
                    data[4..8].copy_from_slice(&tgid.to_ne_bytes());
                }
            }
        }
    }
    open.load().map_err(|e| fail("load the query's BPF program", e))
}
