//! A window's groups → the user plan's input rows. The kernel keys a group
//! by its window and by any hidden COUNT(DISTINCT) keys too; here groups that
//! differ only in those are combined into one row (so panes of a sliding
//! window add up), and the number of hidden keys seen is the distinct count.

use super::decode::{self, Merged, Value};
use ebq_front::plan::{KernelOutput, PhysicalPlan};
use std::collections::{HashMap, HashSet};

/// One group of a closed window: its key bytes and its values merged across CPUs.
pub type Group = (Vec<u8>, Merged);

/// The distinct hidden-key values of one visible group (COUNT(DISTINCT)).
type HiddenKeys = HashSet<Vec<u8>>;

/// Groups → the user plan's input rows: panes combined (the window field
/// is ignored), hidden COUNT(DISTINCT) keys reduced and counted. Row order
/// is unspecified (the user plan sorts).
pub fn group_rows(plan: &PhysicalPlan, groups: impl IntoIterator<Item = Group>) -> Vec<Vec<Value>> {
    let output = &plan.programs[0].output;
    let (KernelOutput::Aggregate { hidden_keys, .. }, Some((key, key_fields))) = (output, output.display_key()) else {
        return vec![];
    };
    let funcs = decode::slot_funcs(plan);
    let visible = &key_fields[..key_fields.len() - hidden_keys];
    let bytes_of = |k: &[u8], fields: &[usize]| -> Vec<u8> {
        fields
            .iter()
            .flat_map(|i| {
                let f = &key.fields[*i];
                k[f.offset as usize..(f.offset + f.ty.byte_size()) as usize].to_vec()
            })
            .collect()
    };
    // Visible key bytes → (one full key, values merged over hidden keys, hidden keys seen).
    let mut by_visible: HashMap<Vec<u8>, (Vec<u8>, Merged, HiddenKeys)> = Default::default();
    for (k, merged) in groups {
        let entry = by_visible
            .entry(bytes_of(&k, visible))
            .or_insert_with(|| (k.clone(), Merged::default(), Default::default()));
        decode::combine(&mut entry.1, &merged, &funcs);
        entry.2.insert(bytes_of(&k, &key_fields[visible.len()..]));
    }
    by_visible
        .into_values()
        .flat_map(|(k, merged, hidden)| match decode::top_k_rows(plan, &merged) {
            // An APPROX_TOP_K group is one row per reported key.
            Some(top) => top.iter().map(|t| decode::group_inputs(plan, key, &k, &merged, 0, Some(t))).collect(),
            None => vec![decode::group_inputs(plan, key, &k, &merged, hidden.len() as u64, None)],
        })
        .collect()
}
