//! Lookup of types by name: a sorted array of (name hash, type id), built once.
//!
//! A kernel has ~100k named types; a `HashMap<String, _>` would allocate a string for
//! each. Hashing names in place and sorting the pairs costs one allocation, and a
//! lookup is a binary search plus a name comparison per hash collision.

use super::{Btf, TypeId};

pub(crate) struct NameIndex {
    by_hash: Vec<(u64, TypeId)>,
}

impl std::fmt::Debug for NameIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "NameIndex({} names)", self.by_hash.len())
    }
}

/// 64-bit FNV-1a: names are short and trusted not to be adversarial (collisions only
/// cost a comparison).
fn hash(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3))
}

impl NameIndex {
    pub(crate) fn build(btf: &Btf) -> NameIndex {
        let mut by_hash: Vec<(u64, TypeId)> = btf
            .types
            .iter()
            .enumerate()
            .filter(|(_, t)| t.name_off != 0)
            .map(|(id, t)| (hash(btf.name(t)), id as TypeId))
            .collect();
        by_hash.sort_unstable();
        NameIndex { by_hash }
    }

    pub(crate) fn lookup<'a>(&'a self, btf: &'a Btf, name: &'a str) -> impl Iterator<Item = TypeId> + 'a {
        let h = hash(name);
        let start = self.by_hash.partition_point(|&(x, _)| x < h);
        self.by_hash[start..]
            .iter()
            .take_while(move |&&(x, _)| x == h)
            .map(|&(_, id)| id)
            .filter(move |&id| btf.type_name(id) == name)
    }
}
