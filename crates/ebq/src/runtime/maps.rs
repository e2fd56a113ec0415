//! [`PerCpuMap`] over a loaded BPF map: the kernel side of the seam the
//! window code in `exec` reads groups and sketches through.

use crate::exec::PerCpuMap;
use libbpf_rs::{MapCore, MapFlags, MapHandle};
use std::io;

fn io_err(e: libbpf_rs::Error) -> io::Error {
    io::Error::other(e.to_string())
}

impl PerCpuMap for MapHandle {
    fn all_keys(&self) -> Vec<Vec<u8>> {
        self.keys().collect()
    }

    fn read_percpu(&self, key: &[u8]) -> io::Result<Option<Vec<Vec<u8>>>> {
        self.lookup_percpu(key, MapFlags::ANY).map_err(io_err)
    }

    fn write_percpu(&self, key: &[u8], values: &[Vec<u8>]) -> io::Result<()> {
        self.update_percpu(key, values, MapFlags::ANY).map_err(io_err)
    }

    fn remove(&self, key: &[u8]) -> io::Result<()> {
        self.delete(key).map_err(io_err)
    }
}
