//! Reading the group of a single-slot aggregate (`plan::single_slot`): slot 0
//! of a per-CPU array, merged across CPUs like a hash entry. The slot always
//! exists, so "no group" is a count of 0 on every CPU; and it cannot be
//! deleted, so clearing writes zeros (what a fresh slot holds).

use super::decode;
use super::percpu_map::PerCpuMap;
use ebq_front::plan::StructLayout;

/// The group as `(window 0, key bytes, merged values)`, or `None` before the
/// first matching event (the same as an empty hash). The key bytes are a
/// zeroed `struct ebq_key` (window 0, no fields): what quantile sketch keys
/// hold as their group. With `clear`, the slot is zeroed on every CPU.
pub(crate) fn read(
    groups: &dyn PerCpuMap,
    key: &StructLayout,
    value: &StructLayout,
    funcs: &[Option<ebq_front::bind::AggFunc>],
    clear: bool,
) -> std::io::Result<Option<(u64, Vec<u8>, decode::Merged)>> {
    let slot = 0u32.to_ne_bytes();
    let Some(mut per_cpu) = groups.read_percpu(&slot)? else { return Ok(None) };
    let merged = decode::merge_percpu(value, funcs, &per_cpu);
    if clear && merged.count > 0 {
        per_cpu.iter_mut().for_each(|v| v.fill(0));
        groups.write_percpu(&slot, &per_cpu)?;
    }
    Ok((merged.count > 0).then(|| (0, vec![0; key.size as usize], merged)))
}
