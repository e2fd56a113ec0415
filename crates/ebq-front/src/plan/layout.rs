//! Fixed-size C struct layouts for map keys, map values and ring-buffer records.
//!
//! Fields are laid out largest alignment first so the struct has no implicit
//! padding: hash-map keys must compare bytewise, so every byte is a named field
//! the generated code zeroes.

use crate::types::DataType;

/// One field of a generated struct.
#[derive(Debug, Clone, PartialEq)]
pub struct StructField {
    /// C identifier.
    pub name: String,
    /// Field type.
    pub ty: DataType,
    /// Byte offset.
    pub offset: u32,
    /// A string from user memory that may be unreadable: NULL when its
    /// byte 0 is a NUL and byte 1 is 1 ([`super::may_be_unreadable`]).
    pub null_marked: bool,
    /// execve's `argv`: its last bytes say where its entries start
    /// ([`crate::bind::ARGV_STARTS_BYTES`]), for quoting.
    pub argv: bool,
}

/// A generated struct.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StructLayout {
    /// Fields in memory order.
    pub fields: Vec<StructField>,
    /// Total size, a multiple of 8.
    pub size: u32,
}

impl StructLayout {
    /// Lays out `fields` (name, type); returns the layout and, for each input
    /// field, its index in the layout.
    pub fn new(fields: &[(String, DataType)]) -> (StructLayout, Vec<usize>) {
        let align = |t: &DataType| match t {
            DataType::Str { .. } | DataType::Registers { .. } => 1,
            DataType::Buckets { .. } => 8,
            t => t.byte_size(),
        };
        let mut order: Vec<usize> = (0..fields.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(align(&fields[i].1)));
        let mut layout = StructLayout::default();
        let mut position = vec![0; fields.len()];
        let mut offset = 0;
        for (slot, &i) in order.iter().enumerate() {
            let (name, ty) = &fields[i];
            layout.fields.push(StructField { name: name.clone(), ty: *ty, offset, null_marked: false, argv: false });
            offset += ty.byte_size();
            position[i] = slot;
        }
        let size = offset.div_ceil(8) * 8;
        if size > offset {
            layout.fields.push(StructField {
                name: "__pad".into(),
                ty: DataType::Str { cap: (size - offset) as u16 },
                offset,
                null_marked: false,
                argv: false,
            });
        }
        layout.size = size;
        (layout, position)
    }

    /// Marks the fields of `fields` (expression, field index) that hold a
    /// string from user memory: one which may be unreadable (the decoder
    /// reads its NULL mark), or an `argv` (the decoder quotes its entries).
    pub fn mark_user_strings(&mut self, fields: &[(crate::bind::ScalarExpr, usize)]) {
        for (e, i) in fields {
            self.fields[*i].null_marked = super::may_be_unreadable(e);
            self.fields[*i].argv = super::string_buffers::is_argv(e);
        }
    }

    /// Does any field carry the NULL mark of an unreadable string?
    pub fn has_null_strings(&self) -> bool {
        self.fields.iter().any(|f| f.null_marked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn largest_first_and_padded_to_eight() {
        let (l, pos) = StructLayout::new(&[
            ("cpu".into(), DataType::U32),
            ("comm".into(), DataType::Str { cap: 16 }),
            ("fd".into(), DataType::U64),
        ]);
        let names: Vec<_> = l.fields.iter().map(|f| (f.name.as_str(), f.offset)).collect();
        assert_eq!(names, [("fd", 0), ("cpu", 8), ("comm", 12), ("__pad", 28)]);
        assert_eq!(l.size, 32);
        assert_eq!(pos, [1, 2, 0]);
    }
}
