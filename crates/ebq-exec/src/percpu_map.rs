//! The seam between the window code and the kernel: a per-CPU BPF map as
//! closing a window reads it (every key, each key's per-CPU values, delete,
//! overwrite). `runtime` implements it over a loaded map; tests implement it
//! over a `BTreeMap`, so merging, window selection and clearing run without
//! root or a kernel.

use std::io;

/// A per-CPU map (hash or array) seen as key bytes → one value per CPU.
///
/// The names differ from libbpf's `MapCore` methods so both traits can be in
/// scope without ambiguity.
pub trait PerCpuMap {
    /// Every key present now.
    fn all_keys(&self) -> Vec<Vec<u8>>;
    /// The value of `key` on each CPU, or `None` when the key is absent.
    fn read_percpu(&self, key: &[u8]) -> io::Result<Option<Vec<Vec<u8>>>>;
    /// Replaces `key`'s value on each CPU.
    fn write_percpu(&self, key: &[u8], values: &[Vec<u8>]) -> io::Result<()>;
    /// Removes `key`.
    fn remove(&self, key: &[u8]) -> io::Result<()>;
}

/// A fake map for tests: key → per-CPU values.
#[cfg(test)]
pub(crate) type FakeMap = std::cell::RefCell<std::collections::BTreeMap<Vec<u8>, Vec<Vec<u8>>>>;

#[cfg(test)]
impl PerCpuMap for FakeMap {
    fn all_keys(&self) -> Vec<Vec<u8>> {
        self.borrow().keys().cloned().collect()
    }
    fn read_percpu(&self, key: &[u8]) -> io::Result<Option<Vec<Vec<u8>>>> {
        Ok(self.borrow().get(key).cloned())
    }
    fn write_percpu(&self, key: &[u8], values: &[Vec<u8>]) -> io::Result<()> {
        self.borrow_mut().insert(key.to_vec(), values.to_vec());
        Ok(())
    }
    fn remove(&self, key: &[u8]) -> io::Result<()> {
        self.borrow_mut().remove(key);
        Ok(())
    }
}
