//! The typed logical plan: what the query means, before deciding where each part runs.

use crate::catalog::{FieldKind, FileColumn, SystemColumn, TracepointFormat};
use crate::error::Span;
use crate::host::SyscallTable;
use crate::parse::{EventName, WindowKind};
use crate::types::DataType;
use std::fmt;
use std::sync::Arc;

/// Where a column's value comes from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ColumnSource {
    /// A field of the tracepoint record.
    Field {
        /// Field name.
        name: String,
        /// Byte offset in the record.
        offset: u32,
        /// Byte size in the record.
        size: u32,
        /// How to read it.
        kind: FieldKind,
    },
    /// A system column from a helper.
    System(SystemColumn),
    /// A column of the file behind the fd in record field `fd` (`fd` or `ret`),
    /// read through the kernel's BTF (see [`crate::catalog::file_columns`]).
    File {
        /// Which column.
        column: FileColumn,
        /// The record field holding the fd.
        fd: String,
    },
    /// A raw argument of a tracepoint, or a member reached from it through
    /// the kernel's structs (`rq.q.disk.disk_name`): read with CO-RE by a
    /// `tp_btf` program (see [`super::btf_args`]).
    Arg(Box<super::RawArg>),
    /// A column of a JOIN's start event, read when the pair opened and
    /// carried to the end event in the pairing map.
    Start {
        /// The column as written, qualified (`e.fd`).
        name: String,
        /// The column as read at the start event.
        column: Box<ColumnSource>,
    },
    /// Column `index` of a top-level `UNION ALL` (`FROM (SELECT … UNION ALL
    /// SELECT …) u`): a stand-in the planner replaces, in each branch's
    /// program, by that branch's expression ([`ScalarExpr::substitute`]). No
    /// program ever reads one.
    Union {
        /// The column's name.
        name: String,
        /// Its position in the branches' SELECT lists.
        index: usize,
    },
    /// Accumulator `index` of a chained JOIN's middle event
    /// ([`BoundMiddle::aggs`]): kept in the pair, zeroed when it opens,
    /// updated by each middle event on its key. Only ever read carried
    /// ([`ColumnSource::Start`]) at the end event.
    Middle {
        /// The aggregate as written (`SUM(r.count)`).
        name: String,
        /// Its index in [`BoundMiddle::aggs`].
        index: usize,
    },
}

impl ColumnSource {
    /// Is this execve's `argv` or `envp` (a `const char *const *` field)? Its
    /// read joins the strings and keeps where each entry starts after them.
    pub fn is_argv(&self) -> bool {
        matches!(self, ColumnSource::Field { kind: FieldKind::UserArgv, .. })
    }

    /// The column's name.
    pub fn name(&self) -> &str {
        match self {
            ColumnSource::Field { name, .. } => name,
            ColumnSource::System(s) => s.name(),
            ColumnSource::File { column, fd } => column.name_at(crate::catalog::file_columns::FdEnd::of_field(fd)),
            ColumnSource::Arg(a) => &a.path,
            ColumnSource::Start { name, .. } => name,
            ColumnSource::Union { name, .. } => name,
            ColumnSource::Middle { name, .. } => name,
        }
    }

    /// True for a column carried from a JOIN's start event.
    pub fn is_start(&self) -> bool {
        matches!(self, ColumnSource::Start { .. })
    }

    /// The column read at the start event for a carried column; any other, itself.
    pub fn read_at_start(&self) -> &ColumnSource {
        match self {
            ColumnSource::Start { column, .. } => column,
            other => other,
        }
    }

    /// Buffer capacity when the column is a string.
    pub fn string_cap(&self) -> Option<u16> {
        match self {
            ColumnSource::System(SystemColumn::Comm) => Some(16),
            ColumnSource::Field { kind: FieldKind::CharArray { len }, .. } => Some((*len).clamp(1, 256) as u16),
            ColumnSource::Field { kind: FieldKind::DataLocStr, .. } => Some(super::DATA_LOC_STRING_CAP),
            ColumnSource::Field { kind: FieldKind::UserStr | FieldKind::UserArgv, .. } => Some(super::USER_STRING_CAP),
            ColumnSource::Start { column, .. } => column.string_cap(),
            ColumnSource::Arg(a) => a.string_cap,
            ColumnSource::File { column, .. } => match column.data_type() {
                crate::types::DataType::Str { cap } => Some(cap),
                _ => None,
            },
            _ => None,
        }
    }
}

/// Binary operators on scalars.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/` (x / 0 is 0, as in BPF)
    Div,
    /// `%` (x % 0 is x, as in BPF)
    Mod,
    /// `&`
    BitAnd,
    /// `|`
    BitOr,
    /// `^`
    BitXor,
    /// `<<`
    Shl,
    /// `>>`
    Shr,
    /// `=`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `AND`
    And,
    /// `OR`
    Or,
}

impl BinaryOp {
    /// The C operator.
    pub fn c_op(self) -> &'static str {
        match self {
            BinaryOp::Add => "+",
            BinaryOp::Sub => "-",
            BinaryOp::Mul => "*",
            BinaryOp::Div => "/",
            BinaryOp::Mod => "%",
            BinaryOp::BitAnd => "&",
            BinaryOp::BitOr => "|",
            BinaryOp::BitXor => "^",
            BinaryOp::Shl => "<<",
            BinaryOp::Shr => ">>",
            BinaryOp::Eq => "==",
            BinaryOp::Ne => "!=",
            BinaryOp::Lt => "<",
            BinaryOp::Le => "<=",
            BinaryOp::Gt => ">",
            BinaryOp::Ge => ">=",
            BinaryOp::And => "&&",
            BinaryOp::Or => "||",
        }
    }

    /// True for `= != < <= > >=`.
    pub fn is_comparison(self) -> bool {
        matches!(self, BinaryOp::Eq | BinaryOp::Ne | BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge)
    }
}

/// A typed scalar expression, evaluated per event.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ScalarExpr {
    /// A column of the event.
    Column {
        /// Where it comes from.
        source: ColumnSource,
        /// Its type.
        ty: DataType,
    },
    /// An integer literal; `ty` is i64 for negative values, u64 otherwise.
    Int {
        /// The value's bits.
        value: u64,
        /// Its type.
        ty: DataType,
    },
    /// `TRUE` / `FALSE`.
    Bool(bool),
    /// An operator applied to two operands; `ty` is the result type.
    Binary {
        /// Operator.
        op: BinaryOp,
        /// Left operand.
        left: Box<ScalarExpr>,
        /// Right operand.
        right: Box<ScalarExpr>,
        /// Result type; for comparisons the operands are compared in `operand_ty`.
        ty: DataType,
        /// Type both operands are converted to before the operation.
        operand_ty: DataType,
    },
    /// Logical NOT.
    Not(Box<ScalarExpr>),
    /// Arithmetic negation (result i64).
    Neg(Box<ScalarExpr>),
    /// An integer converted to another integer type: `CAST(x AS BIGINT)`, or a
    /// union branch's narrower column widened to the union's type.
    Cast {
        /// The integer converted.
        expr: Box<ScalarExpr>,
        /// The type it becomes (C's conversion: sign-extended, zero-extended or truncated).
        ty: DataType,
    },
    /// `user_u64(addr)` (`user_i32`, …): the integer of type `ty` in the
    /// traced process's memory at `addr` (`bpf_probe_read_user`; 0 when the
    /// address cannot be read), read by the program that computes the
    /// expression: at the event, and in a `JOIN … ON` at the end event, when
    /// the pair completes (so `user_u64(e.arg4)` paired with a uretprobe reads
    /// what the call wrote through its pointer). For what a probe's argument
    /// points at: an MPI datatype's size, a struct field.
    UserRead {
        /// The address.
        addr: Box<ScalarExpr>,
        /// The integer type read (its width is the read's).
        ty: DataType,
    },
    /// `user_strlen(addr)`: the length of the NUL-terminated string in the
    /// traced process's memory at `addr` (u64), read as `user_u64` is (at the
    /// event; in a `JOIN … ON`, at the end event). It is measured by
    /// `bpf_probe_read_user_str` into a per-CPU scratch of
    /// [`USER_STRLEN_CHUNK`] bytes, chunk after chunk: exact up to
    /// [`USER_STRLEN_CAP`] bytes, and a longer string gives the cap itself
    /// (so a caller can count it). An address that cannot be read gives the
    /// bytes read before it (0 for a bad or NULL pointer) and is counted in
    /// `unreadable_strings`.
    UserStrlen(Box<ScalarExpr>),
    /// `env_int('PMI_RANK'[, 'OMPI_COMM_WORLD_RANK', …])`: the decimal number
    /// the first of these variables set in the current process's environment
    /// holds (i64; -1 when none is set to a number), read from the process's
    /// memory by the program that computes it, at the event. An MPI rank read
    /// this way is known even for a process that exits before user space
    /// could read `/proc/PID/environ`. The environment is walked one variable
    /// at a time ([`ENV_INT_VARS`] at most, [`ENV_INT_CHUNK`] bytes a read).
    EnvInt(Vec<String>),
    /// `CASE WHEN cond THEN a ELSE b END` over integers (nested for more WHENs).
    Cond {
        /// The condition.
        cond: Box<ScalarExpr>,
        /// Its value when the condition holds.
        then: Box<ScalarExpr>,
        /// Its value otherwise.
        otherwise: Box<ScalarExpr>,
        /// Result type (both branches are converted to it).
        ty: DataType,
    },
    /// A string constant (`'io_uring' AS path`), in a buffer of `cap` bytes
    /// (its length + NUL, or more where a CASE or a union gives it a wider
    /// column). A CASE whose values are all strings is a [`ScalarExpr::Cond`]
    /// of them: the kernel writes the chosen constant into its key or record
    /// field (`codegen::strings::constant`).
    Str {
        /// The text (no NUL inside).
        value: String,
        /// Buffer capacity in bytes.
        cap: u16,
    },
    /// A string column compared with a literal.
    StrMatch {
        /// The string-typed column.
        column: ColumnSource,
        /// Capacity of the column's buffer.
        cap: u16,
        /// The literal (the pattern without its `%`s).
        value: String,
        /// Where `value` must stand in the column's string.
        pattern: StrPattern,
        /// True for `!=` / `NOT LIKE`.
        negated: bool,
    },
}

/// What a string comparison asks of the column's string (the text before
/// its first NUL) with respect to the literal: the `%`s of a LIKE pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StrPattern {
    /// `= 'abc'`, `LIKE 'abc'`: the string is the literal.
    Exact,
    /// `LIKE 'abc%'`, `starts_with(s, 'abc')`: the string starts with it.
    Prefix,
    /// `LIKE '%abc'`: the string ends with it.
    Suffix,
    /// `LIKE '%abc%'`: the literal occurs in the string.
    Contains,
}

impl StrPattern {
    /// Does `s` match `lit` this way?
    pub fn matches(self, s: &str, lit: &str) -> bool {
        match self {
            StrPattern::Exact => s == lit,
            StrPattern::Prefix => s.starts_with(lit),
            StrPattern::Suffix => s.ends_with(lit),
            StrPattern::Contains => s.contains(lit),
        }
    }

    /// The LIKE pattern of `lit` matched this way (`'%abc'`).
    pub fn like(self, lit: &str) -> String {
        match self {
            StrPattern::Exact => lit.to_string(),
            StrPattern::Prefix => format!("{lit}%"),
            StrPattern::Suffix => format!("%{lit}"),
            StrPattern::Contains => format!("%{lit}%"),
        }
    }
}

impl ScalarExpr {
    /// The expression's type.
    pub fn ty(&self) -> DataType {
        match self {
            ScalarExpr::Column { ty, .. }
            | ScalarExpr::Int { ty, .. }
            | ScalarExpr::Binary { ty, .. }
            | ScalarExpr::Cast { ty, .. }
            | ScalarExpr::UserRead { ty, .. }
            | ScalarExpr::Cond { ty, .. } => *ty,
            ScalarExpr::UserStrlen(_) => DataType::U64,
            ScalarExpr::Bool(_) | ScalarExpr::Not(_) | ScalarExpr::StrMatch { .. } => DataType::Bool,
            ScalarExpr::Str { cap, .. } => DataType::Str { cap: *cap },
            ScalarExpr::Neg(_) | ScalarExpr::EnvInt(_) => DataType::I64,
        }
    }

    /// Calls `f` on this expression and each of its subexpressions, in
    /// preorder.
    pub fn visit<'a>(&'a self, f: &mut impl FnMut(&'a ScalarExpr)) {
        f(self);
        match self {
            ScalarExpr::Binary { left, right, .. } => {
                left.visit(f);
                right.visit(f);
            }
            ScalarExpr::Not(e)
            | ScalarExpr::Neg(e)
            | ScalarExpr::Cast { expr: e, .. }
            | ScalarExpr::UserRead { addr: e, .. }
            | ScalarExpr::UserStrlen(e) => e.visit(f),
            ScalarExpr::Cond { cond, then, otherwise, .. } => {
                cond.visit(f);
                then.visit(f);
                otherwise.visit(f);
            }
            ScalarExpr::Column { .. }
            | ScalarExpr::Int { .. }
            | ScalarExpr::Bool(_)
            | ScalarExpr::Str { .. }
            | ScalarExpr::EnvInt(_)
            | ScalarExpr::StrMatch { .. } => {}
        }
    }

    /// Calls `f` on every column the expression reads.
    pub fn visit_columns<'a>(&'a self, f: &mut impl FnMut(&'a ColumnSource)) {
        self.visit(&mut |e| match e {
            ScalarExpr::Column { source, .. } | ScalarExpr::StrMatch { column: source, .. } => f(source),
            _ => {}
        });
    }

    /// True for a string constant or a CASE choosing between string constants.
    pub fn is_const_str(&self) -> bool {
        match self {
            ScalarExpr::Str { .. } => true,
            ScalarExpr::Cond { then, otherwise, .. } => then.is_const_str() && otherwise.is_const_str(),
            _ => false,
        }
    }

    /// A constant string expression in a buffer of `cap` bytes (its column's).
    pub fn with_str_cap(self, cap: u16) -> ScalarExpr {
        match self {
            ScalarExpr::Str { value, .. } => ScalarExpr::Str { value, cap },
            ScalarExpr::Cond { cond, then, otherwise, .. } => ScalarExpr::Cond {
                cond,
                then: Box::new(then.with_str_cap(cap)),
                otherwise: Box::new(otherwise.with_str_cap(cap)),
                ty: DataType::Str { cap },
            },
            other => other,
        }
    }

    /// The truth value of a condition its constants decide (`… AND false`,
    /// `NOT true`, a CASE on a constant), or `None` when an event's columns
    /// may decide it.
    pub fn const_truth(&self) -> Option<bool> {
        match self {
            ScalarExpr::Bool(b) => Some(*b),
            ScalarExpr::Not(e) => e.const_truth().map(|b| !b),
            ScalarExpr::Binary { op: BinaryOp::And, left, right, .. } => {
                match (left.const_truth(), right.const_truth()) {
                    (Some(false), _) | (_, Some(false)) => Some(false),
                    (Some(true), Some(true)) => Some(true),
                    // `e.id IN (…) AND e.id IN (…)` with no value in both.
                    _ if self.has_disjoint_int_sets() => Some(false),
                    _ => None,
                }
            }
            ScalarExpr::Binary { op: BinaryOp::Or, left, right, .. } => {
                match (left.const_truth(), right.const_truth()) {
                    (Some(true), _) | (_, Some(true)) => Some(true),
                    (Some(false), Some(false)) => Some(false),
                    _ => None,
                }
            }
            ScalarExpr::Cond { cond, then, otherwise, .. } => match cond.const_truth() {
                Some(true) => then.const_truth(),
                Some(false) => otherwise.const_truth(),
                None => then.const_truth().filter(|t| otherwise.const_truth() == Some(*t)),
            },
            // Two integer constants (a view's `call` in a branch that fills it with one).
            ScalarExpr::Binary { op: op @ (BinaryOp::Eq | BinaryOp::Ne), left, right, .. } => {
                let (l, r) = (left.const_int()?, right.const_int()?);
                Some((l == r) == (*op == BinaryOp::Eq))
            }
            _ => None,
        }
    }

    /// The bits of an integer constant (cast or not), or `None`.
    pub(super) fn const_int(&self) -> Option<u64> {
        match self {
            ScalarExpr::Int { value, .. } => Some(*value),
            ScalarExpr::Cast { expr, ty } if ty.is_int() => expr.const_int(),
            _ => None,
        }
    }

    /// The expression with every CASE whose condition its constants decide
    /// replaced by the branch taken (cast to the CASE's type): a union
    /// branch's columns, once a view's constant columns (`path`) stand in
    /// them, read only what that branch's rows need.
    pub fn without_constant_cases(self) -> ScalarExpr {
        let f = |e: Box<ScalarExpr>| Box::new(e.without_constant_cases());
        match self {
            ScalarExpr::Cond { cond, then, otherwise, ty } => match cond.const_truth() {
                Some(taken) => {
                    let e = if taken { &then } else { &otherwise }.as_ref().clone().without_constant_cases();
                    match (e.ty(), ty) {
                        (t, want) if t == want => e,
                        (DataType::Str { .. }, DataType::Str { cap }) if e.is_const_str() => e.with_str_cap(cap),
                        (t, want) if t.is_int() && want.is_int() => ScalarExpr::Cast { expr: Box::new(e), ty },
                        _ => ScalarExpr::Cond { cond, then, otherwise, ty },
                    }
                }
                None => ScalarExpr::Cond { cond: f(cond), then: f(then), otherwise: f(otherwise), ty },
            },
            ScalarExpr::Binary { op, left, right, ty, operand_ty } => {
                ScalarExpr::Binary { op, left: f(left), right: f(right), ty, operand_ty }
            }
            ScalarExpr::Not(x) => ScalarExpr::Not(f(x)),
            ScalarExpr::Neg(x) => ScalarExpr::Neg(f(x)),
            ScalarExpr::Cast { expr, ty } => ScalarExpr::Cast { expr: f(expr), ty },
            ScalarExpr::UserRead { addr, ty } => ScalarExpr::UserRead { addr: f(addr), ty },
            leaf => leaf,
        }
    }

    /// A condition with the parts its constants decide taken out: `x AND
    /// true` is `x`, `x OR false` is `x`, a CASE on a constant its branch;
    /// `None` when it holds for every event (no filter). A view's constant
    /// columns (`io.ops`' `path`) leave such parts in each branch's WHERE.
    pub fn without_constants(self) -> Option<ScalarExpr> {
        let this = self.with_int_sets_intersected();
        this.without_decided_parts()
    }

    /// [`Self::without_constants`] once IN lists over one expression are one.
    fn without_decided_parts(self) -> Option<ScalarExpr> {
        if self.const_truth() == Some(true) {
            return None;
        }
        Some(match self {
            ScalarExpr::Binary { op: op @ (BinaryOp::And | BinaryOp::Or), left, right, ty, operand_ty } => {
                // The constant that leaves the other side deciding: true under AND, false under OR.
                let neutral = op == BinaryOp::And;
                match (left.const_truth(), right.const_truth()) {
                    (Some(t), _) if t == neutral => right.without_constants().unwrap_or(ScalarExpr::Bool(true)),
                    (_, Some(t)) if t == neutral => left.without_constants().unwrap_or(ScalarExpr::Bool(true)),
                    _ => {
                        let side =
                            |e: Box<ScalarExpr>| Box::new(e.without_constants().unwrap_or(ScalarExpr::Bool(true)));
                        ScalarExpr::Binary { op, left: side(left), right: side(right), ty, operand_ty }
                    }
                }
            }
            ScalarExpr::Cond { cond, then, otherwise, ty } if ty == DataType::Bool => match cond.const_truth() {
                Some(true) => then.without_constants().unwrap_or(ScalarExpr::Bool(true)),
                Some(false) => otherwise.without_constants().unwrap_or(ScalarExpr::Bool(true)),
                None => ScalarExpr::Cond { cond, then, otherwise, ty },
            },
            other => other,
        })
    }

    /// `self = 'lit'` (or LIKE 'lit%', '%lit', '%lit%' as `pattern` says;
    /// negated for `!=`) for a constant string expression, decided now where
    /// the constants decide it: a CASE of strings becomes a CASE of truth
    /// values over its conditions.
    pub fn str_match_const(&self, lit: &str, pattern: StrPattern, negated: bool) -> Option<ScalarExpr> {
        match self {
            ScalarExpr::Str { value, .. } => Some(ScalarExpr::Bool(pattern.matches(value, lit) != negated)),
            ScalarExpr::Cond { cond, then, otherwise, .. } => {
                let (t, o) =
                    (then.str_match_const(lit, pattern, negated)?, otherwise.str_match_const(lit, pattern, negated)?);
                Some(match (&t, &o) {
                    (ScalarExpr::Bool(a), ScalarExpr::Bool(b)) if a == b => t,
                    (ScalarExpr::Bool(true), ScalarExpr::Bool(false)) => (**cond).clone(),
                    (ScalarExpr::Bool(false), ScalarExpr::Bool(true)) => ScalarExpr::Not(cond.clone()),
                    _ => ScalarExpr::Cond {
                        cond: cond.clone(),
                        then: Box::new(t),
                        otherwise: Box::new(o),
                        ty: DataType::Bool,
                    },
                })
            }
            _ => None,
        }
    }

    /// Every column the expression reads with the type it is read as, in
    /// first-use order, without repeats.
    pub fn typed_columns(&self, out: &mut Vec<(ColumnSource, DataType)>) {
        let mut add = |c: &ColumnSource, ty: DataType| {
            if !out.iter().any(|(x, _)| x == c) {
                out.push((c.clone(), ty));
            }
        };
        match self {
            ScalarExpr::Column { source, ty } => add(source, *ty),
            ScalarExpr::StrMatch { column, cap, .. } => add(column, DataType::Str { cap: *cap }),
            ScalarExpr::Binary { left, right, .. } => {
                left.typed_columns(out);
                right.typed_columns(out);
            }
            ScalarExpr::Not(x)
            | ScalarExpr::Neg(x)
            | ScalarExpr::Cast { expr: x, .. }
            | ScalarExpr::UserRead { addr: x, .. }
            | ScalarExpr::UserStrlen(x) => x.typed_columns(out),
            ScalarExpr::Cond { cond, then, otherwise, .. } => {
                cond.typed_columns(out);
                then.typed_columns(out);
                otherwise.typed_columns(out);
            }
            ScalarExpr::Int { .. } | ScalarExpr::Bool(_) | ScalarExpr::Str { .. } | ScalarExpr::EnvInt(_) => {}
        }
    }

    /// The expression as text with every column qualified (`x.ret`), for plans.
    pub fn qualified(&self, qualifier: &str) -> String {
        self.clone()
            .map_columns(&|c| match c {
                ColumnSource::Start { .. } => c,
                c => ColumnSource::Start { name: format!("{qualifier}.{}", c.name()), column: Box::new(c) },
            })
            .to_string()
    }

    /// This expression with every column `f` maps replaced by its expression
    /// (a union's columns by one branch's). A string comparison keeps its
    /// literal and reads the replacing column, which must then be a column.
    pub fn substitute(self, f: &impl Fn(&ColumnSource) -> Option<ScalarExpr>) -> ScalarExpr {
        match self {
            ScalarExpr::Column { source, ty } => f(&source).unwrap_or(ScalarExpr::Column { source, ty }),
            ScalarExpr::StrMatch { column, cap, value, pattern, negated } => match f(&column) {
                Some(ScalarExpr::Column { source, ty: DataType::Str { cap } }) => {
                    ScalarExpr::StrMatch { column: source, cap, value, pattern, negated }
                }
                // A union column that a branch fills with constants: decided by them.
                Some(c) if c.is_const_str() => c.str_match_const(&value, pattern, negated).expect("a constant string"),
                Some(other) => unreachable!("a string column stands for a string column, not {other}"),
                None => ScalarExpr::StrMatch { column, cap, value, pattern, negated },
            },
            ScalarExpr::Binary { op, left, right, ty, operand_ty } => ScalarExpr::Binary {
                op,
                left: Box::new(left.substitute(f)),
                right: Box::new(right.substitute(f)),
                ty,
                operand_ty,
            },
            ScalarExpr::Not(x) => ScalarExpr::Not(Box::new(x.substitute(f))),
            ScalarExpr::Cond { cond, then, otherwise, ty } => ScalarExpr::Cond {
                cond: Box::new(cond.substitute(f)),
                then: Box::new(then.substitute(f)),
                otherwise: Box::new(otherwise.substitute(f)),
                ty,
            },
            ScalarExpr::Neg(x) => ScalarExpr::Neg(Box::new(x.substitute(f))),
            ScalarExpr::Cast { expr, ty } => ScalarExpr::Cast { expr: Box::new(expr.substitute(f)), ty },
            ScalarExpr::UserRead { addr, ty } => ScalarExpr::UserRead { addr: Box::new(addr.substitute(f)), ty },
            ScalarExpr::UserStrlen(addr) => ScalarExpr::UserStrlen(Box::new(addr.substitute(f))),
            leaf @ (ScalarExpr::Int { .. } | ScalarExpr::Bool(_) | ScalarExpr::Str { .. } | ScalarExpr::EnvInt(_)) => {
                leaf
            }
        }
    }

    /// The same expression with every column rewritten by `f`.
    pub fn map_columns(self, f: &impl Fn(ColumnSource) -> ColumnSource) -> ScalarExpr {
        match self {
            ScalarExpr::Column { source, ty } => ScalarExpr::Column { source: f(source), ty },
            ScalarExpr::StrMatch { column, cap, value, pattern, negated } => {
                ScalarExpr::StrMatch { column: f(column), cap, value, pattern, negated }
            }
            ScalarExpr::Binary { op, left, right, ty, operand_ty } => ScalarExpr::Binary {
                op,
                left: Box::new(left.map_columns(f)),
                right: Box::new(right.map_columns(f)),
                ty,
                operand_ty,
            },
            ScalarExpr::Not(x) => ScalarExpr::Not(Box::new(x.map_columns(f))),
            ScalarExpr::Cond { cond, then, otherwise, ty } => ScalarExpr::Cond {
                cond: Box::new(cond.map_columns(f)),
                then: Box::new(then.map_columns(f)),
                otherwise: Box::new(otherwise.map_columns(f)),
                ty,
            },
            ScalarExpr::Neg(x) => ScalarExpr::Neg(Box::new(x.map_columns(f))),
            ScalarExpr::Cast { expr, ty } => ScalarExpr::Cast { expr: Box::new(expr.map_columns(f)), ty },
            ScalarExpr::UserRead { addr, ty } => ScalarExpr::UserRead { addr: Box::new(addr.map_columns(f)), ty },
            ScalarExpr::UserStrlen(addr) => ScalarExpr::UserStrlen(Box::new(addr.map_columns(f))),
            leaf @ (ScalarExpr::Int { .. } | ScalarExpr::Bool(_) | ScalarExpr::Str { .. } | ScalarExpr::EnvInt(_)) => {
                leaf
            }
        }
    }
}

/// An operand of an operator, printed in parentheses when it is itself an
/// operation: `(count / 1024) + 1`, `NOT (a = b)`. A whole expression (a
/// function's argument, a key, a filter) is printed without outer ones, as
/// it was written: `SUM(count / 1024 + 1)` reads `SUM((count / 1024) + 1)`.
struct Operand<'a, E>(&'a E);

/// An expression whose top is an operator (so an [`Operand`] needs parentheses).
/// Crate-wide: EXPLAIN prints user-space expressions with the same rule.
pub(crate) trait IsOperation {
    fn is_operation(&self) -> bool;
}

impl IsOperation for ScalarExpr {
    fn is_operation(&self) -> bool {
        matches!(self, ScalarExpr::Binary { .. } | ScalarExpr::Not(_) | ScalarExpr::StrMatch { .. })
    }
}

impl<R> IsOperation for PostExpr<R> {
    fn is_operation(&self) -> bool {
        matches!(self, PostExpr::Binary { .. } | PostExpr::Not(_))
    }
}

impl<E: IsOperation + fmt::Display> fmt::Display for Operand<'_, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_operation() {
            write!(f, "({})", self.0)
        } else {
            write!(f, "{}", self.0)
        }
    }
}

impl fmt::Display for ScalarExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScalarExpr::Column { source, .. } => f.write_str(source.name()),
            ScalarExpr::Int { value, ty } if ty.is_signed() => write!(f, "{}", *value as i64),
            ScalarExpr::Int { value, .. } => write!(f, "{value}"),
            ScalarExpr::Bool(b) => write!(f, "{b}"),
            ScalarExpr::Str { value, .. } => write!(f, "'{value}'"),
            ScalarExpr::Binary { op, left, right, .. } => {
                write!(f, "{} {} {}", Operand(&**left), op.c_op(), Operand(&**right))
            }
            ScalarExpr::Not(e) => write!(f, "NOT {}", Operand(&**e)),
            ScalarExpr::Cond { cond, then, otherwise, .. } => {
                write!(f, "CASE WHEN {cond} THEN {then} ELSE {otherwise} END")
            }
            ScalarExpr::Neg(e) => write!(f, "-{}", Operand(&**e)),
            ScalarExpr::Cast { expr, ty } => write!(f, "CAST({expr} AS {ty})"),
            ScalarExpr::UserRead { addr, ty } => write!(f, "user_{ty}({addr})"),
            ScalarExpr::UserStrlen(addr) => write!(f, "user_strlen({addr})"),
            ScalarExpr::EnvInt(names) => {
                let names: Vec<String> = names.iter().map(|n| format!("'{n}'")).collect();
                write!(f, "env_int({})", names.join(", "))
            }
            ScalarExpr::StrMatch { column, value, pattern, negated, .. } => {
                let op = match (pattern, negated) {
                    (StrPattern::Exact, false) => "=",
                    (StrPattern::Exact, true) => "!=",
                    (_, false) => "LIKE",
                    (_, true) => "NOT LIKE",
                };
                write!(f, "{} {op} '{}'", column.name(), pattern.like(value))
            }
        }
    }
}

/// Aggregate functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AggFunc {
    /// `COUNT(*)` or `COUNT(expr)` (columns are never NULL, so both count events).
    Count,
    /// `SUM(expr)`.
    Sum,
    /// `MIN(expr)`.
    Min,
    /// `MAX(expr)`.
    Max,
    /// `AVG(expr)`: SUM / COUNT, divided in user space.
    Avg,
    /// `COUNT(DISTINCT expr)`: exact; the argument is grouped on in the kernel.
    CountDistinct,
    /// `APPROX_COUNT_DISTINCT(expr)`: a HyperLogLog sketch inline in the
    /// group's value (see [`crate::hll`]), for when distinct values are too
    /// many to keep as hidden groups.
    ApproxCountDistinct,
    /// `HIST(expr)`: log2 histogram (see [`crate::hist`]); the binder gives
    /// [`crate::hist::Log2::Floor`], the planner may switch it for exporters.
    Hist(crate::hist::Log2),
    /// `LHIST(expr, min, max, step)`: linear histogram with underflow and overflow buckets.
    Lhist(crate::hist::Linear),
    /// `QUANTILE(expr, q)`, `P50`…`P999`: the q-quantile (q in millionths)
    /// from an exponential sketch (OTel scale 6), within [`crate::hist::SKETCH_RELATIVE_ERROR`].
    Quantile {
        /// q × 10^6.
        ppm: u32,
    },
    /// `APPROX_TOP_K(expr, k [, weight])`: the `k` heaviest keys from a Count-Min
    /// sketch and candidate slots inline in the value (see [`crate::topk`]).
    /// The one call binds to three aggregates, one per output column.
    ApproxTopK {
        /// Keys reported.
        k: u16,
        /// Which column of the reported rows.
        part: TopKPart,
    },
}

/// The columns of an `APPROX_TOP_K` row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TopKPart {
    /// The key.
    Key,
    /// Its estimated count, or weight (at least the true one).
    Estimate,
    /// ε·N, or ε·W weighted: how far the estimate may exceed the truth.
    ErrorBound,
}

impl AggFunc {
    /// True for aggregates whose value is a histogram.
    pub fn is_histogram(self) -> bool {
        matches!(self, AggFunc::Hist(_) | AggFunc::Lhist(_))
    }
}

impl<R: fmt::Display> fmt::Display for PostExpr<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PostExpr::Ref(r) => write!(f, "{r}"),
            PostExpr::Output { index, .. } => write!(f, "col#{index}"),
            PostExpr::Int { value, ty } if ty.is_signed() => write!(f, "{}", *value as i64),
            PostExpr::Int { value, .. } => write!(f, "{value}"),
            PostExpr::Float(v) => write!(f, "{v}"),
            PostExpr::Binary { op, left, right, .. } => {
                write!(f, "{} {} {}", Operand(&**left), op.c_op(), Operand(&**right))
            }
            PostExpr::Not(e) => write!(f, "NOT {}", Operand(&**e)),
            PostExpr::Neg(e) => write!(f, "-{}", Operand(&**e)),
            PostExpr::SyscallName { nr, .. } => write!(f, "syscall_name({nr})"),
            PostExpr::Cgroup(what, e) => write!(f, "{}({e})", what.name()),
            PostExpr::DevStr(e) => write!(f, "dev_str({e})"),
            PostExpr::LinuxName(which, e) => write!(f, "{}({e})", which.function()),
            PostExpr::PartName { disk, partno } => write!(f, "part_name({disk}, {partno})"),
            PostExpr::ReqFlags { flags, .. } => write!(f, "req_flags({flags})"),
        }
    }
}

impl fmt::Display for GroupRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GroupRef::Key { index, .. } => write!(f, "key#{index}"),
            GroupRef::Agg { index, .. } => write!(f, "agg#{index}"),
        }
    }
}

impl fmt::Display for Input {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "in#{}", self.index)
    }
}

impl fmt::Display for AggFunc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AggFunc::Count => "COUNT",
            AggFunc::Sum => "SUM",
            AggFunc::Min => "MIN",
            AggFunc::Max => "MAX",
            AggFunc::Avg => "AVG",
            AggFunc::CountDistinct => "COUNT DISTINCT",
            AggFunc::ApproxCountDistinct => "APPROX_COUNT_DISTINCT",
            AggFunc::Hist(_) => "HIST",
            AggFunc::Lhist(_) => "LHIST",
            AggFunc::Quantile { .. } => "QUANTILE",
            AggFunc::ApproxTopK { .. } => "APPROX_TOP_K",
        })
    }
}

/// One aggregate call.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AggCall {
    /// Which function.
    pub func: AggFunc,
    /// Its argument (`None` for `COUNT(*)`).
    pub arg: Option<ScalarExpr>,
    /// `APPROX_TOP_K(x, k, weight)`'s weight: an unsigned integer each event
    /// adds to its key instead of 1 (`None` for every other aggregate).
    pub weight: Option<ScalarExpr>,
}

impl fmt::Display for AggCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.arg, self.func) {
            (Some(x), AggFunc::CountDistinct) => write!(f, "COUNT(DISTINCT {x})"),
            (Some(x), AggFunc::Lhist(l)) => write!(f, "LHIST({x}, {}, {}, {})", l.min, l.max, l.step),
            (Some(x), AggFunc::Quantile { ppm }) => write!(f, "QUANTILE({x}, {})", ppm_text(ppm)),
            (Some(x), AggFunc::ApproxTopK { k, part }) => match &self.weight {
                Some(w) => write!(f, "APPROX_TOP_K({x}, {k}, {w}).{part:?}"),
                None => write!(f, "APPROX_TOP_K({x}, {k}).{part:?}"),
            },
            (Some(x), func) => write!(f, "{func}({x})"),
            (None, func) => write!(f, "{func}(*)"),
        }
    }
}

/// q in millionths as a decimal (`990000` → `0.99`).
pub fn ppm_text(ppm: u32) -> String {
    if ppm == 1_000_000 {
        return "1".into();
    }
    format!("0.{ppm:06}").trim_end_matches('0').to_string()
}

impl AggCall {
    /// The result type.
    pub fn ty(&self) -> DataType {
        match (self.func, &self.arg) {
            (AggFunc::Count | AggFunc::CountDistinct | AggFunc::ApproxCountDistinct, _) => DataType::U64,
            (AggFunc::Avg, _) => DataType::Float,
            (AggFunc::Hist(_) | AggFunc::Lhist(_), Some(a)) => DataType::Hist { signed: a.ty().is_signed() },
            (AggFunc::Quantile { .. }, Some(a)) if a.ty().is_signed() => DataType::I64,
            (AggFunc::Quantile { .. }, _) => DataType::U64,
            (AggFunc::ApproxTopK { part: TopKPart::Key, .. }, Some(a)) if a.ty().is_signed() => DataType::I64,
            (AggFunc::ApproxTopK { .. }, _) => DataType::U64,
            (AggFunc::Sum, Some(a)) => {
                if a.ty().is_signed() {
                    DataType::I64
                } else {
                    DataType::U64
                }
            }
            (_, Some(a)) => a.ty(),
            (_, None) => DataType::U64,
        }
    }
}

/// What a bind-time user-space expression reads: a GROUP BY key or an
/// aggregate of the query. The planner turns each into an [`Input`] of the
/// user plan ([`GroupRef::input`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum GroupRef {
    /// The i-th GROUP BY key.
    Key {
        /// Key index.
        index: usize,
        /// Its type.
        ty: DataType,
    },
    /// The i-th aggregate.
    Agg {
        /// Aggregate index.
        index: usize,
        /// Its type.
        ty: DataType,
    },
}

impl GroupRef {
    /// The user plan's input for this reference, when the inputs are the
    /// `nkeys` keys, then the aggregates.
    pub fn input(self, nkeys: usize) -> Input {
        match self {
            GroupRef::Key { index, ty } => Input { index, ty },
            GroupRef::Agg { index, ty } => Input { index: nkeys + index, ty },
        }
    }
}

/// Input value `index` of the user plan (what it fetches per group or row).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Input {
    /// Input index.
    pub index: usize,
    /// Its type.
    pub ty: DataType,
}

/// A value a [`PostExpr`] reads, with its type.
pub trait PostRef {
    /// The value's type.
    fn ty(&self) -> DataType;
}

impl PostRef for GroupRef {
    fn ty(&self) -> DataType {
        match self {
            GroupRef::Key { ty, .. } | GroupRef::Agg { ty, .. } => *ty,
        }
    }
}

impl PostRef for Input {
    fn ty(&self) -> DataType {
        self.ty
    }
}

/// A bind-time user-space expression, over keys and aggregates.
pub type GroupExpr = PostExpr<GroupRef>;

/// An expression computed in user space, over values `R`: at bind time keys
/// and aggregates ([`GroupExpr`]), in the user plan its inputs (the default).
#[derive(Debug, Clone, PartialEq)]
pub enum PostExpr<R = Input> {
    /// A value read: a key or aggregate ([`GroupRef`]), or an input ([`Input`]).
    Ref(R),
    /// The i-th output column (ORDER BY by name or position).
    Output {
        /// Column index.
        index: usize,
        /// Its type.
        ty: DataType,
    },
    /// An integer literal (i64 for negative values, u64 otherwise).
    Int {
        /// The value's bits.
        value: u64,
        /// Its type.
        ty: DataType,
    },
    /// A float literal.
    Float(f64),
    /// A binary operator; `ty` is the result type.
    Binary {
        /// Operator.
        op: BinaryOp,
        /// Left operand.
        left: Box<PostExpr<R>>,
        /// Right operand.
        right: Box<PostExpr<R>>,
        /// Result type.
        ty: DataType,
    },
    /// Logical NOT.
    Not(Box<PostExpr<R>>),
    /// Arithmetic negation.
    Neg(Box<PostExpr<R>>),
    /// `syscall_name(nr)`: the system call's name, looked up in user space
    /// (the kernel has no name table a program could read) in the table of
    /// the kernel the query was bound against, carried here so evaluating
    /// it reads no host file.
    SyscallName {
        /// The system call number.
        nr: Box<PostExpr<R>>,
        /// The bound kernel's table ([`crate::host::KernelInfo::syscalls`]).
        names: Arc<SyscallTable>,
    },
    /// `cgroup_path(id)` or `container_id(id)` of a cgroup id, looked up in
    /// user space ([`crate::host::cgroups`]).
    Cgroup(CgroupInfo, Box<PostExpr<R>>),
    /// `dev_str(dev)`: a kernel `dev_t` (block tracepoints' `dev`: major in the
    /// high 12 bits, minor in the low 20) as `"major:minor"`, as `lsblk` and
    /// `/proc/partitions` name devices. Formatted in user space, per group.
    DevStr(Box<PostExpr<R>>),
    /// `errno_name(ret)` or `signal_name(sig)`: Linux's name for the number
    /// (`-2` → `ENOENT`, `9` → `SIGKILL`; a number with no name as text),
    /// given in user space, per group ([`super::LinuxName`]).
    LinuxName(super::LinuxName, Box<PostExpr<R>>),
    /// `part_name(disk, partno)`: a block partition's name as the kernel and
    /// `/proc/partitions` spell it, from its disk's name and partition number
    /// (`vda`, 1 → `vda1`; `loop3`, 1 → `loop3p1`; 0 → the disk itself).
    /// Formatted in user space, per group.
    PartName {
        /// The disk's name (`rq.q.disk.disk_name`).
        disk: Box<PostExpr<R>>,
        /// The partition number (`rq.part.__bd_flags.counter & 255` on kernels since 6.10).
        partno: Box<PostExpr<R>>,
    },
    /// `req_flags(cmd_flags)`: a block request's operation and flags as
    /// `biolatency -F` names them (`Sync-Write`), decoded in user space with
    /// the bound kernel's enums, carried here.
    ReqFlags {
        /// The request's `cmd_flags`.
        flags: Box<PostExpr<R>>,
        /// The bound kernel's operations and flag bits.
        names: Arc<super::req_flags::ReqFlagNames>,
    },
}

/// What [`PostExpr::Cgroup`] tells of a cgroup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CgroupInfo {
    /// Its path below the cgroup2 mount.
    Path,
    /// The container id in that path.
    ContainerId,
}

impl CgroupInfo {
    /// The SQL function's name.
    pub fn name(self) -> &'static str {
        match self {
            CgroupInfo::Path => "cgroup_path",
            CgroupInfo::ContainerId => "container_id",
        }
    }

    /// The value for cgroup `id`.
    pub fn of(self, id: u64) -> String {
        let path = crate::host::cgroups::cgroup_path(id);
        match self {
            CgroupInfo::Path => path,
            CgroupInfo::ContainerId => crate::host::cgroups::container_id(&path),
        }
    }
}

/// Capacity of `cgroup_path()`/`container_id()` strings (for widths; the values are not cut).
pub const CGROUP_TEXT_CAP: u16 = 255;

/// Capacity of `syscall_name()` strings.
pub const SYSCALL_NAME_CAP: u16 = 32;

/// Capacity of a `part_name()` string: a 32-byte disk name, `p` and the number.
pub const PART_NAME_CAP: u16 = 40;

impl<R> PostExpr<R> {
    /// The same expression with every value read rewritten by `f`.
    pub fn map_refs<S>(self, f: &impl Fn(R) -> S) -> PostExpr<S> {
        let again = |e: Box<PostExpr<R>>| Box::new(e.map_refs(f));
        match self {
            PostExpr::Ref(r) => PostExpr::Ref(f(r)),
            PostExpr::Output { index, ty } => PostExpr::Output { index, ty },
            PostExpr::Int { value, ty } => PostExpr::Int { value, ty },
            PostExpr::Float(v) => PostExpr::Float(v),
            PostExpr::Binary { op, left, right, ty } => {
                PostExpr::Binary { op, left: again(left), right: again(right), ty }
            }
            PostExpr::Not(e) => PostExpr::Not(again(e)),
            PostExpr::Neg(e) => PostExpr::Neg(again(e)),
            PostExpr::SyscallName { nr, names } => PostExpr::SyscallName { nr: again(nr), names },
            PostExpr::Cgroup(what, e) => PostExpr::Cgroup(what, again(e)),
            PostExpr::DevStr(e) => PostExpr::DevStr(again(e)),
            PostExpr::LinuxName(which, e) => PostExpr::LinuxName(which, again(e)),
            PostExpr::PartName { disk, partno } => PostExpr::PartName { disk: again(disk), partno: again(partno) },
            PostExpr::ReqFlags { flags, names } => PostExpr::ReqFlags { flags: again(flags), names },
        }
    }
}

impl<R: PostRef> PostExpr<R> {
    /// The expression's type.
    pub fn ty(&self) -> DataType {
        match self {
            PostExpr::Ref(r) => r.ty(),
            PostExpr::Output { ty, .. } | PostExpr::Int { ty, .. } | PostExpr::Binary { ty, .. } => *ty,
            PostExpr::Float(_) => DataType::Float,
            PostExpr::Not(_) => DataType::Bool,
            PostExpr::Neg(e) if e.ty() == DataType::Float => DataType::Float,
            PostExpr::Neg(_) => DataType::I64,
            PostExpr::SyscallName { .. } => DataType::Str { cap: SYSCALL_NAME_CAP },
            PostExpr::Cgroup(..) => DataType::Str { cap: CGROUP_TEXT_CAP },
            PostExpr::DevStr(_) => DataType::Str { cap: 16 },
            PostExpr::LinuxName(..) => DataType::Str { cap: super::LINUX_NAME_CAP },
            PostExpr::PartName { .. } => DataType::Str { cap: PART_NAME_CAP },
            PostExpr::ReqFlags { .. } => DataType::Str { cap: 64 },
        }
    }
}

/// One ORDER BY key: over keys and aggregates at bind time, over the user
/// plan's inputs after planning (the default).
#[derive(Debug, Clone, PartialEq)]
pub struct SortKey<R = Input> {
    /// What to sort by.
    pub expr: PostExpr<R>,
    /// Descending when true.
    pub desc: bool,
}

/// A named output column.
#[derive(Debug, Clone, PartialEq)]
pub struct OutputColumn<S> {
    /// Column name (alias, or the expression as written).
    pub name: String,
    /// Column type.
    pub ty: DataType,
    /// Where the value comes from.
    pub source: S,
}

/// The body of a query: per-event rows or grouped aggregates.
#[derive(Debug, Clone, PartialEq)]
pub enum QueryBody {
    /// One output row per matching event.
    Rows {
        /// Output columns.
        columns: Vec<OutputColumn<ScalarExpr>>,
    },
    /// One output row per group per window.
    Aggregate {
        /// GROUP BY keys (empty for an ungrouped aggregate).
        keys: Vec<ScalarExpr>,
        /// Distinct aggregate calls.
        aggs: Vec<AggCall>,
        /// Output columns, expressions over keys and aggregates.
        columns: Vec<OutputColumn<GroupExpr>>,
        /// HAVING, over keys and aggregates.
        having: Option<GroupExpr>,
    },
}

/// A window, as bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// Time or count.
    pub kind: WindowKind,
    /// Size (ms or events).
    pub size: u64,
    /// Step (ms or events).
    pub step: u64,
    /// Where the WINDOW clause stands.
    pub span: Option<Span>,
}

/// The event a query reads.
#[derive(Debug, Clone, PartialEq)]
pub struct BoundEvent {
    /// The event.
    pub name: EventName,
    /// Its columns: a tracepoint's record layout, or a probe's arguments
    /// (see [`crate::catalog::probe::argument_format`]).
    pub format: TracepointFormat,
    /// What the program attaches to.
    pub source: EventSource,
}

/// One USDT site to attach: file offsets of the probe and its semaphore
/// (0: none), and the attach cookie naming its argument spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsdtAttach {
    /// File offset of the probe's `nop`.
    pub offset: u64,
    /// File offset of the semaphore (the uprobe's reference counter), 0 for none.
    pub semaphore: u64,
    /// `bpf_get_attach_cookie` at this site: its index in `UsdtSpecs::variants`.
    pub cookie: u64,
}

/// What the program attaches to, resolved at bind time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventSource {
    /// A tracefs tracepoint (its layout is the event's `format`).
    Tracepoint,
    /// The same tracepoint, attached as `tp_btf`: the program receives the
    /// tracepoint's raw arguments (typed by the kernel's BTF) instead of its
    /// format record. Chosen when a query reads raw arguments.
    TracepointBtf,
    /// A function in a user-space binary, at a file offset.
    Uprobe {
        /// The binary, canonical.
        path: std::path::PathBuf,
        /// The function, or the `{a,b}` list as written.
        symbol: String,
        /// File offset of its first instruction (what the kernel attaches at);
        /// the first function's for a list.
        offset: u64,
        /// True for the return probe.
        ret: bool,
        /// A list's functions and their file offsets, in the list's order (the
        /// `func` column is the position, given to each as its BPF cookie);
        /// empty for one function.
        functions: Vec<(String, u64)>,
    },
    /// A USDT probe: a uprobe on each of its sites (with the semaphore as the
    /// uprobe's reference counter), arguments decoded from the sites' specs.
    Usdt {
        /// The binary, canonical.
        path: std::path::PathBuf,
        /// Provider.
        provider: String,
        /// Probe name.
        name: String,
        /// Where each site attaches.
        sites: Vec<UsdtAttach>,
        /// The sites' argument specs; a site's cookie indexes `specs.variants`.
        specs: crate::catalog::usdt::UsdtSpecs,
    },
    /// A perf software cpu-clock event (`SEC("perf_event")`): on every CPU
    /// (`profile:hz:N`) or on CPU 0 (`interval:ms:N`).
    Timer {
        /// Samples per second (perf's `freq` mode), or 0 with `period_ns`.
        hz: u64,
        /// ns of CPU clock between samples, or 0 with `hz`.
        period_ns: u64,
        /// Every online CPU (profile) or CPU 0 only (interval).
        all_cpus: bool,
    },
    /// A kernel function through kprobes (or the return through kretprobes).
    Kprobe {
        /// The function.
        function: String,
        /// True for kretprobe.
        ret: bool,
        /// A tracepoint to suggest where kprobes are unavailable.
        alternative: Option<String>,
    },
    /// A `syscalls:sys_enter_X` / `sys_exit_X` event run on the raw
    /// `sys_enter` / `sys_exit` tracepoint (tp_btf) behind a check of the
    /// system call number, or `raw_syscalls:sys_enter` / `sys_exit` run
    /// there for every call; the planner chooses it (`plan::syscall_attach`).
    /// The columns are the tracepoint's `format`, read from the saved registers.
    RawSyscall {
        /// The system call's number (x86-64 numbering); `None` for a
        /// `raw_syscalls` event, which is every call (32-bit ones too, as
        /// the classic `raw_syscalls` tracepoints see them).
        nr: Option<i64>,
        /// True for `sys_exit_X` (the raw `sys_exit`, `ret` in the second argument).
        exit: bool,
    },
    /// An expanding event (`aio.submit`): a program on a system call's
    /// tracepoint that runs the query's row code once per element of an
    /// array the call passes (`catalog::expand`). The columns are ebq's
    /// record of one element; `trigger` is the call's own format file.
    Expand {
        /// Which array, of which call.
        expansion: crate::catalog::expand::Expansion,
        /// The format of the tracepoint the program attaches to.
        trigger: crate::catalog::TracepointFormat,
    },
    /// A kernel function through a BPF trampoline (fentry / fexit).
    Fentry {
        /// The function.
        function: String,
        /// True for fexit.
        exit: bool,
        /// Argument slots in the context array (fexit's retval follows them).
        arg_slots: u32,
        /// A tracepoint to suggest where trampolines are unavailable.
        alternative: Option<String>,
    },
}

impl BoundEvent {
    /// The event as users write it, for comments and messages.
    pub fn event_description(&self) -> String {
        self.name.to_string()
    }
}

/// An enter→exit pairing (`FROM start s JOIN end e ON s.k = e.k`): each end
/// event is joined with the latest unmatched start event of the same key.
#[derive(Debug, Clone, PartialEq)]
pub struct BoundJoin {
    /// The event that opens a pair (the FROM event).
    pub start: BoundEvent,
    /// The start event as written in qualified column names (`e`).
    pub start_name: String,
    /// The end event as written in qualified column names (`x`).
    pub end_name: String,
    /// Pairing keys: (expression over the start event's own columns,
    /// expression over the end event, type both are compared in).
    pub keys: Vec<(ScalarExpr, ScalarExpr, DataType)>,
    /// WHERE conjuncts over start columns only, checked before a pair opens.
    pub start_filter: Option<ScalarExpr>,
    /// `FROM (… UNION ALL …) q JOIN …`: the start events after the first
    /// (which is `start`), each opening pairs in the same map.
    pub also: Vec<StartBranch>,
    /// A chained JOIN's middle event (`FROM a JOIN b ON … JOIN c ON …`).
    pub middle: Option<BoundMiddle>,
    /// `Some` when this pairing is a row of one `sys_enter_*` event whose
    /// `str_at_exit()` calls read at the call's exit (`super::at_exit`): the
    /// carried strings those calls read (their [`ColumnSource::Start`]
    /// sources), the only ones read at the end event; the query's other
    /// strings are the entry's. `None` for a JOIN as written, which reads
    /// every carried user string at the end when it can
    /// ([`crate::plan::Pairing::strings_at_end`]).
    pub str_at_exit: Option<Vec<ColumnSource>>,
    /// The JOIN clause, for plan errors.
    pub span: Span,
}

/// The middle event of a chained JOIN: between a pair's start and end, each
/// middle event on the pair's key updates the pair's accumulators in place.
#[derive(Debug, Clone, PartialEq)]
pub struct BoundMiddle {
    /// The event.
    pub event: BoundEvent,
    /// As written in qualified column names (`r`).
    pub name: String,
    /// Per pairing key ([`BoundJoin::keys`], same order): the middle
    /// event's expression for it.
    pub keys: Vec<ScalarExpr>,
    /// The per-pair aggregates over the middle events.
    pub aggs: Vec<MiddleAgg>,
    /// The middle JOIN clause.
    pub span: Span,
}

/// One per-pair aggregate over a chained JOIN's middle events.
#[derive(Debug, Clone, PartialEq)]
pub struct MiddleAgg {
    /// COUNT or SUM (each an atomic add in the pair).
    pub func: AggFunc,
    /// Over the middle event's own columns (COUNT adds 1 whatever it is).
    pub arg: ScalarExpr,
    /// Its type in the pair and in rows.
    pub ty: DataType,
}

/// A further start event of a JOIN whose start side is a union.
#[derive(Debug, Clone, PartialEq)]
pub struct StartBranch {
    /// The event.
    pub event: BoundEvent,
    /// Its own WHERE and the query's start-only WHERE, over its own columns.
    pub filter: Option<ScalarExpr>,
    /// Each start column as the first branch reads it, and as this one does.
    pub columns: Vec<(ColumnSource, ColumnSource)>,
}

impl StartBranch {
    /// `c` (as the first branch reads it) as this branch reads it.
    pub fn column(&self, c: ColumnSource) -> ColumnSource {
        self.columns.iter().find(|(first, _)| *first == c).map_or(c, |(_, own)| own.clone())
    }
}

/// A bound query.
#[derive(Debug, Clone, PartialEq)]
pub struct LogicalPlan {
    /// The event read: the one whose arrival makes a row (for a JOIN, the
    /// end event; the start event is in `join`).
    pub event: BoundEvent,
    /// The pairing, for `FROM start JOIN end ON …`.
    pub join: Option<BoundJoin>,
    /// WHERE, if any.
    pub filter: Option<ScalarExpr>,
    /// Rows or aggregates.
    pub body: QueryBody,
    /// WINDOW, if any.
    pub window: Option<Window>,
    /// The SELECT list's extent, for plan errors about the query's size.
    pub select_span: Option<Span>,
    /// ORDER BY, applied per window (aggregates) or to all rows at the end:
    /// over output columns, keys and aggregates.
    pub order_by: Vec<SortKey<GroupRef>>,
    /// LIMIT: rows per window (aggregates) or in total (rows).
    pub limit: Option<u64>,
    /// `FROM a, b … WINDOW(time, …)`: the two streams and how user space
    /// joins them. The plan's own fields then describe the joined rows
    /// (`event` is the first stream's, `body` the joined columns).
    pub stream_join: Option<Box<StreamJoin>>,
    /// A top-level `UNION ALL`: its branches, in order. The plan's own
    /// expressions then read [`ColumnSource::Union`] columns, which each
    /// branch's program replaces by its own; `event` is the first branch's.
    pub union: Vec<UnionInput>,
}

/// One branch of a top-level `UNION ALL`: its event, its own WHERE and the
/// expression of each union column, over that event.
#[derive(Debug, Clone, PartialEq)]
pub struct UnionInput {
    /// The branch's event (attached as `tp_btf` when it reads raw arguments).
    pub event: BoundEvent,
    /// The branch's own WHERE.
    pub filter: Option<ScalarExpr>,
    /// Per union column, its value in this branch.
    pub columns: Vec<ScalarExpr>,
    /// `FROM start s JOIN end e ON …`: the branch's own pairing (`event` is
    /// then its end event).
    pub join: Option<BoundJoin>,
}

impl UnionInput {
    /// `e` as this branch computes it: union columns replaced by the branch's expressions.
    pub fn rewrite(&self, e: &ScalarExpr) -> ScalarExpr {
        e.clone().substitute(&|c| match c {
            ColumnSource::Union { index, .. } => Some(self.columns[*index].clone()),
            _ => None,
        })
    }
}

/// A relational join of two event streams, per time window, in user space.
///
/// Each stream is a row query of its own: its event, the WHERE conjuncts that
/// read only it (checked in its program), and the record fields the join
/// needs, `time` first. Everything that reads both streams — the equality
/// keys, the other cross-stream conditions, the output columns — is evaluated
/// over the joined row: the first stream's fields, then the second's.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamJoin {
    /// The two streams as row queries; field 0 of each record is `time`.
    pub sides: [LogicalPlan; 2],
    /// The streams' names (aliases), for plans and messages.
    pub names: [String; 2],
    /// Equality keys: field `left` of the first stream's row equals field
    /// `right` of the second's, compared as `ty`.
    pub keys: Vec<JoinKey>,
    /// The other cross-stream conditions, over the joined row.
    pub residual: Option<PostExpr>,
    /// GROUP BY and aggregates over each window's joined rows, if any.
    pub aggregate: Option<JoinAggregate>,
    /// The output columns: over the joined row, or with `aggregate` over
    /// the group row (its keys, then its aggregates).
    pub columns: Vec<OutputColumn<PostExpr>>,
    /// HAVING, over the group row.
    pub having: Option<PostExpr>,
    /// ORDER BY, over the joined (or with `aggregate` the group) row.
    pub order_by: Vec<SortKey>,
}

/// GROUP BY and aggregates of a stream join, computed in user space over
/// each window's joined rows.
#[derive(Debug, Clone, PartialEq)]
pub struct JoinAggregate {
    /// Group keys, over the joined row.
    pub keys: Vec<PostExpr>,
    /// Aggregates (COUNT, SUM, MIN, MAX, AVG, COUNT(DISTINCT)): the
    /// function, its argument over the joined row, its result type.
    pub aggs: Vec<(AggFunc, Option<PostExpr>, DataType)>,
}

/// One equality of a stream join: field `left` of the first stream's row
/// equals field `right` of the second's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JoinKey {
    /// Field of the first stream's row.
    pub left: usize,
    /// Field of the second stream's row.
    pub right: usize,
    /// The type both are compared in.
    pub ty: DataType,
}

impl LogicalPlan {
    /// Output column names and types, in order.
    pub fn schema(&self) -> Vec<(String, DataType)> {
        match &self.body {
            QueryBody::Rows { columns } => columns.iter().map(|c| (c.name.clone(), c.ty)).collect(),
            QueryBody::Aggregate { columns, .. } => columns.iter().map(|c| (c.name.clone(), c.ty)).collect(),
        }
    }
}

/// The bytes of `user_strlen()`'s per-CPU scratch: each `bpf_probe_read_user_str`
/// measures up to this many bytes less the NUL.
pub const USER_STRLEN_CHUNK: u64 = 4096;

/// The chunks `user_strlen()` reads at most.
pub const USER_STRLEN_CHUNKS: u64 = 16;

/// `user_strlen()`'s cap: a string this long or longer gives this (65,520 bytes).
pub const USER_STRLEN_CAP: u64 = USER_STRLEN_CHUNKS * (USER_STRLEN_CHUNK - 1);

/// The bytes each of `env_int()`'s reads copies of one environment variable:
/// the names it looks for and their numbers fit, and a longer variable
/// (`PATH`, `LS_COLORS`) costs one read a chunk.
pub const ENV_INT_CHUNK: u64 = 128;

/// The reads `env_int()` makes at most: an environment of more variables (or
/// long ones) than this gives -1 for a name after them.
pub const ENV_INT_VARS: u64 = 512;
