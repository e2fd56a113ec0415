//! The eBQL dialect for sqlparser's tokenizer and expression parser.
//!
//! Statement-level syntax (clause order, event names with `/` and `:`,
//! `WINDOW(...)`) is handled by [`super::parse_query`]; the dialect only has to
//! tokenize like generic SQL and treat `==` as `=` (sqlparser already does).

use sqlparser::dialect::Dialect;

/// eBQL: generic SQL tokens, double-quoted identifiers.
#[derive(Debug, Default, Clone, Copy)]
pub struct EbqDialect;

impl Dialect for EbqDialect {
    fn is_identifier_start(&self, ch: char) -> bool {
        ch.is_ascii_alphabetic() || ch == '_'
    }

    fn is_identifier_part(&self, ch: char) -> bool {
        ch.is_ascii_alphanumeric() || ch == '_'
    }

    fn is_delimited_identifier_start(&self, ch: char) -> bool {
        ch == '"'
    }

    fn supports_filter_during_aggregation(&self) -> bool {
        false
    }

    /// eBQL's clause keywords never name a column: `SELECT COUNT(*) WINDOW(…)`
    /// and `SELECT fd WINDOW …` must not read WINDOW as an alias.
    fn is_column_alias(&self, kw: &sqlparser::keywords::Keyword, _parser: &mut sqlparser::parser::Parser) -> bool {
        use sqlparser::keywords::{Keyword, RESERVED_FOR_COLUMN_ALIAS};
        !RESERVED_FOR_COLUMN_ALIAS.contains(kw) && !matches!(kw, Keyword::WINDOW | Keyword::JOIN | Keyword::INNER)
    }

    /// `<<` and `>>` on integers.
    fn supports_bitwise_shift_operators(&self) -> bool {
        true
    }
}
