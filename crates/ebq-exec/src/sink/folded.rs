//! Folded stacks (`--format folded`): one line per distinct stack, frames from
//! the outermost to the innermost separated by `;`, then a space and the
//! count — the input of Brendan Gregg's `flamegraph.pl` and of `inferno`.
//!
//! ebq's stack columns (`ustack`, `kstack`, or any column whose name ends in
//! `stack`) hold frames innermost first, `"; "`-separated; they are reversed.
//! A row's other string columns (`comm`) become its outermost frames, then its
//! user stack, then its kernel stack (the kernel runs on behalf of the user
//! code, so it sits on top, as `perf script | stackcollapse` draws it). The
//! count is the row's first integer column (`COUNT(*)`), or 1 per row in a
//! row query. Lines are summed over all windows and written at the end,
//! sorted, so two runs over the same samples give the same file.

use super::{cell, Sink};
use crate::{Output, Value};
use arrow_schema::DataType;
use std::collections::BTreeMap;
use std::io::{self, Write};

/// Accumulates folded stacks and writes them when the query finishes.
pub struct FoldedSink<W: Write> {
    out: W,
    stacks: BTreeMap<String, u64>,
}

impl<W: Write> FoldedSink<W> {
    /// A sink writing to `out`.
    pub fn new(out: W) -> Self {
        FoldedSink { out, stacks: BTreeMap::new() }
    }

    /// The folded lines so far (stack → count).
    pub fn stacks(&self) -> &BTreeMap<String, u64> {
        &self.stacks
    }
}

/// A frame as folded text: `;` separates frames, so one inside a name becomes `:`.
fn frame(s: &str) -> String {
    s.trim().replace(';', ":")
}

/// One row's folded stack and count.
pub fn fold_row(names: &[&str], values: &[Value]) -> Option<(String, u64)> {
    let is_stack = |n: &str| n.ends_with("stack");
    let mut frames: Vec<String> = vec![];
    let mut count = None;
    for (n, v) in names.iter().zip(values) {
        match v {
            Value::S(s) if !is_stack(n) && !s.is_empty() => frames.push(frame(s)),
            Value::U(u) if count.is_none() => count = Some(*u),
            Value::I(i) if count.is_none() => count = Some((*i).max(0) as u64),
            _ => {}
        }
    }
    // User stacks below kernel stacks, each outermost first.
    let mut stacks: Vec<(&str, &str)> = names
        .iter()
        .zip(values)
        .filter_map(|(n, v)| match v {
            Value::S(s) if is_stack(n) => Some((*n, s.as_str())),
            _ => None,
        })
        .collect();
    stacks.sort_by_key(|(n, _)| n.starts_with('k'));
    for (_, s) in stacks {
        let inner_first: Vec<&str> = s.split("; ").filter(|f| !f.trim().is_empty()).collect();
        frames.extend(inner_first.into_iter().rev().map(frame));
    }
    (!frames.is_empty()).then(|| (frames.join(";"), count.unwrap_or(1)))
}

impl<W: Write> Sink for FoldedSink<W> {
    fn write(&mut self, o: &Output) -> io::Result<()> {
        let schema = o.batch.schema();
        let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        let wanted: Vec<usize> =
            (0..names.len()).filter(|&i| !matches!(schema.field(i).data_type(), DataType::List(_))).collect();
        let names: Vec<&str> = wanted.iter().map(|&i| names[i]).collect();
        for r in 0..o.batch.num_rows() {
            let values: Vec<Value> = wanted.iter().map(|&i| cell(o.batch.column(i), r)).collect();
            if let Some((stack, n)) = fold_row(&names, &values) {
                *self.stacks.entry(stack).or_default() += n;
            }
        }
        Ok(())
    }

    fn finish(&mut self) -> io::Result<()> {
        for (stack, n) in &self.stacks {
            writeln!(self.out, "{stack} {n}")?;
        }
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stacks_fold_outermost_first_under_their_comm() {
        let names = ["comm", "ustack", "kstack", "COUNT(*)"];
        let row = [
            Value::S("spin".into()),
            Value::S("hot+0x12; main+0x40; __libc_start_call_main+0x7a".into()),
            Value::S("asm_sysvec_apic_timer_interrupt+0x1a".into()),
            Value::U(42),
        ];
        assert_eq!(
            fold_row(&names, &row),
            Some((
                "spin;__libc_start_call_main+0x7a;main+0x40;hot+0x12;asm_sysvec_apic_timer_interrupt+0x1a".into(),
                42
            ))
        );
        // A row query: one sample per row; a `;` inside a frame cannot split it.
        assert_eq!(fold_row(&["ustack"], &[Value::S("a;b+0x1; main".into())]), Some(("main;a:b+0x1".into(), 1)));
        assert_eq!(fold_row(&["n"], &[Value::U(3)]), None);
    }
}
