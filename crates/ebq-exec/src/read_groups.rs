//! Reading a window's groups out of the group map (and the quantile
//! sketches) through [`PerCpuMap`]: keys picked by their window number,
//! values merged across CPUs, optionally deleted as they are read (closing a
//! window clears it for reuse).

use super::decode::{self, Merged, Store, Value};
use super::percpu_map::PerCpuMap;
use super::single_slot;
use ebq_front::codegen::SketchKeyLayout;
use ebq_front::error::{Error, Result};
use ebq_front::plan::{KernelOutput, PhysicalPlan};

/// One group read from the map: (window, key bytes, values merged across CPUs).
pub type WindowGroup = (u64, Vec<u8>, Merged);

/// The maps a window's groups live in.
pub struct GroupMaps<'a> {
    /// `ebq_groups`.
    pub groups: &'a dyn PerCpuMap,
    /// True when `groups` is a single-slot per-CPU array (the loaded map's
    /// own type: a bundle compiled before keyless queries used an array slot
    /// still holds a hash, and reads as one).
    pub single_slot: bool,
    /// `ebq_sketch`, when the query has QUANTILE/Pxx.
    pub sketch: Option<&'a dyn PerCpuMap>,
    /// `ebq_names` and the names read from it so far, when the plan groups
    /// by names' identities (`plan::late_names`).
    pub names: Option<(&'a dyn PerCpuMap, &'a std::cell::RefCell<NameCache>)>,
}

/// Names read from `ebq_names`: (kind, identity) → the name's raw bytes (up
/// to its NUL). They go back into the display key as the kernel wrote them,
/// and are escaped once, when that key is decoded ([`decode::c_str`]).
pub type NameCache = std::collections::HashMap<(u32, u64), Vec<u8>>;

/// Reads (and with `delete`, removes) the groups whose window satisfies
/// `pick`, merged across CPUs, sorted by window. A row plan has none.
pub fn read_groups(
    plan: &PhysicalPlan,
    maps: &GroupMaps<'_>,
    pick: impl Fn(u64) -> bool,
    delete: bool,
) -> Result<Vec<WindowGroup>> {
    let KernelOutput::Aggregate { key, value, .. } = &plan.programs[0].output else {
        return Ok(vec![]);
    };
    // Queries without WINDOW have one window, 0, and no window field in their key.
    let window_field = key.fields.iter().find(|f| f.name == "window");
    let funcs = decode::slot_funcs(plan);
    let mut out = vec![];
    // A single slot is window 0's only group.
    if maps.single_slot && pick(0) {
        out.extend(single_slot::read(maps.groups, key, value, &funcs, delete).map_err(io_err("read the group"))?);
    }
    // Collect keys first: deleting while walking a hash map restarts the walk.
    let keys: Vec<Vec<u8>> = if maps.single_slot { vec![] } else { maps.groups.all_keys() };
    for k in keys {
        let w = match window_field.map(|f| decode::field_value(&k, f)) {
            None => 0,
            Some(Value::U(w)) => w,
            Some(_) => continue,
        };
        if !pick(w) {
            continue;
        }
        let Some(per_cpu) = maps.groups.read_percpu(&k).map_err(io_err("read a group"))? else {
            continue;
        };
        let merged = decode::merge_percpu(value, &funcs, &per_cpu);
        if delete {
            maps.groups.remove(&k).map_err(io_err("clear a group"))?;
        }
        out.push((w, k, merged));
    }
    if let Some(sketch) = maps.sketch {
        collect_sketches(sketch, key.size, &mut out, delete).map_err(io_err("read a sketch"))?;
    }
    if let (KernelOutput::Aggregate { late_names: Some(late), .. }, Some((map, cache))) =
        (&plan.programs[0].output, maps.names)
    {
        // The names were written before their groups were made: read after the groups, they are all there.
        let mut cache = cache.borrow_mut();
        drain_names(map, &mut cache).map_err(io_err("read the names"))?;
        let name = |kind: ebq_front::plan::late_names::NameKind, id: u64| -> Vec<u8> {
            match id {
                0 => vec![],
                _ => cache.get(&(kind as u32, id)).cloned().unwrap_or_else(|| format!("?{id:x}").into_bytes()),
            }
        };
        for (_, k, _) in &mut out {
            *k = crate::late_names::to_display(late, key, k, &name);
        }
    }
    out.sort_by_key(|(w, _, _)| *w);
    Ok(out)
}

/// Moves every name in `ebq_names` into `cache` and removes it from the map
/// (a group created later writes its names again), so the map holds only the
/// names of groups made since the last read. A CPU's copy is the name when
/// its writer filled it: the first non-empty copy wins.
fn drain_names(map: &dyn PerCpuMap, cache: &mut NameCache) -> std::io::Result<()> {
    for k in map.all_keys() {
        if k.len() < 16 {
            continue;
        }
        let kind = u32::from_ne_bytes(k[..4].try_into().expect("4 bytes"));
        let id = u64::from_ne_bytes(k[8..16].try_into().expect("8 bytes"));
        if let Some(copies) = map.read_percpu(&k)? {
            let raw = |c: &[u8]| c[..c.iter().position(|&b| b == 0).unwrap_or(c.len())].to_vec();
            let name = copies.iter().map(|c| raw(c)).find(|n| !n.is_empty()).unwrap_or_default();
            cache.insert((kind, id), name);
        }
        map.remove(&k)?;
    }
    Ok(())
}

/// A failed map access as the error the runtime has always reported.
fn io_err(what: &'static str) -> impl Fn(std::io::Error) -> Error {
    move |source| Error::Io { what: what.into(), source }
}

/// Adds the sketch entries of the groups in `groups` (key bytes → merged
/// values) to their `buckets`, summed across CPUs; with `delete`, removes them.
///
/// The sketch key is [`SketchKeyLayout`]'s: the group key, `agg`, `bucket`.
/// Entries of groups not in `groups` (other windows) are left alone.
fn collect_sketches(
    sketch: &dyn PerCpuMap,
    key_size: u32,
    groups: &mut [WindowGroup],
    delete: bool,
) -> std::io::Result<()> {
    let layout = SketchKeyLayout { group: key_size };
    let index: std::collections::HashMap<Vec<u8>, usize> =
        groups.iter().enumerate().map(|(i, (_, k, _))| (k.clone(), i)).collect();
    // Collect keys first: deleting while walking a hash map restarts the walk.
    let keys: Vec<Vec<u8>> = sketch.all_keys();
    for k in keys {
        let Some((group, agg, bucket)) = layout.decode(&k) else { continue };
        let Some(&g) = index.get(group) else { continue };
        let Some(per_cpu) = sketch.read_percpu(&k)? else { continue };
        let n: u64 = per_cpu.iter().map(|b| u64::from_ne_bytes(b[..8].try_into().expect("8 bytes"))).sum();
        if delete {
            sketch.remove(&k)?;
        }
        if n > 0 {
            *groups[g].2.buckets.entry((Store::Sketch(agg), bucket)).or_insert(0) += n;
        }
    }
    Ok(())
}
