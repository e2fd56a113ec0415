//! [`PerCpuMap`] and [`PairMap`] over a loaded BPF map: the kernel side of
//! the seams the window code in `exec` reads groups and sketches through,
//! and the JOIN orphan sweep reads the pairing map through.

use super::libbpf_object::map_err;
use super::object::PairMap;
use ebq_exec::PerCpuMap;
use ebq_front::error::Result;
use libbpf_rs::{MapCore, MapFlags, MapHandle};
use std::io;

fn io_err(e: libbpf_rs::Error) -> io::Error {
    io::Error::other(e.to_string())
}

/// A loaded per-CPU map (groups, sketch, names), as the executor reads it.
/// (A wrapper: the trait is `ebq-exec`'s and the map type libbpf-rs's.)
pub(super) struct PerCpuHandle(pub(super) MapHandle);

impl PerCpuMap for PerCpuHandle {
    fn all_keys(&self) -> Vec<Vec<u8>> {
        self.0.keys().collect()
    }

    fn read_percpu(&self, key: &[u8]) -> io::Result<Option<Vec<Vec<u8>>>> {
        self.0.lookup_percpu(key, MapFlags::ANY).map_err(io_err)
    }

    fn write_percpu(&self, key: &[u8], values: &[Vec<u8>]) -> io::Result<()> {
        self.0.update_percpu(key, values, MapFlags::ANY).map_err(io_err)
    }

    fn remove(&self, key: &[u8]) -> io::Result<()> {
        self.0.delete(key).map_err(io_err)
    }
}

impl PairMap for MapHandle {
    fn pair_keys(&self) -> Vec<Vec<u8>> {
        self.keys().collect()
    }

    fn pair(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.lookup(key, MapFlags::ANY).map_err(|e| map_err("read the pairing map", e))
    }

    fn take_pair(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.lookup_and_delete(key).map_err(|e| map_err("evict from the pairing map", e))
    }

    fn restore_pair(&self, key: &[u8], value: &[u8]) -> Result<()> {
        // A start that reopened the key meanwhile wins: NO_EXIST fails then, as meant.
        let _ = self.update(key, value, MapFlags::NO_EXIST);
        Ok(())
    }
}
