//! Parse: query text → [`Query`] (plain data, spans on the side).
//!
//! sqlparser tokenizes and parses expressions; this module owns the statement
//! shape so that eBQL's clause order (`FROM e GROUP BY … WHERE … WINDOW(…)`)
//! and SQL's are both accepted, and event names containing `/` and `:` can be
//! read straight from the text.

mod bpftrace;
mod checks;
mod dialect;
mod event;
mod union;
pub mod view;

pub use dialect::EbqDialect;
pub use event::{parse_event_name, uprobe_symbols, EventName, TimerUnit, EXPANDING_EVENTS};
pub use sqlparser::ast::{Expr, OrderByExpr, SelectItem};
pub use union::UnionBranch;
pub use view::View;

use crate::error::{Error, Location, Result, Span, Stage};
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer};

/// Queries longer than this are refused before tokenizing.
pub const MAX_QUERY_BYTES: usize = 1 << 20;

/// Queries with more tokens than this are refused before parsing: real
/// queries have a few hundred, and a bound keeps every later stage's
/// recursion shallow.
pub const MAX_QUERY_TOKENS: usize = 10_000;

/// A parsed eBQL query.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    /// `SELECT DISTINCT`.
    pub distinct: bool,
    /// The SELECT list.
    pub projection: Vec<SelectItem>,
    /// The event selected from (for `FROM (… UNION ALL …) q`, the first
    /// branch's event under the alias `q`).
    pub from: EventRef,
    /// `FROM (SELECT a, b FROM ev1 WHERE … UNION ALL SELECT a, b FROM ev2 …) q`:
    /// the branches, in order; empty when FROM names one event.
    pub union: Vec<UnionBranch>,
    /// `JOIN event ON expr` clauses, in order.
    pub joins: Vec<Join>,
    /// `FROM a, b`: the second event of a relational join of two streams,
    /// matched per WINDOW in user space (JOIN … ON is the in-kernel pairing).
    pub stream: Option<EventRef>,
    /// WHERE.
    pub selection: Option<Expr>,
    /// GROUP BY expressions.
    pub group_by: Vec<Expr>,
    /// HAVING.
    pub having: Option<Expr>,
    /// ORDER BY.
    pub order_by: Vec<OrderByExpr>,
    /// LIMIT.
    pub limit: Option<Expr>,
    /// WINDOW(kind, size, step).
    pub window: Option<WindowClause>,
}

/// An event in FROM or JOIN, with its optional alias.
#[derive(Debug, Clone, PartialEq)]
pub struct EventRef {
    /// The event.
    pub name: EventName,
    /// `AS alias` or a bare alias.
    pub alias: Option<String>,
    /// Where the event name stands in the text.
    pub span: Span,
}

/// `JOIN event ON condition`.
#[derive(Debug, Clone, PartialEq)]
pub struct Join {
    /// The joined event.
    pub event: EventRef,
    /// The ON condition.
    pub on: Expr,
    /// The JOIN keyword's position.
    pub span: Span,
}

/// What drives a window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowKind {
    /// Wall time, sizes in milliseconds.
    Time,
    /// Number of matching events.
    Count,
}

/// `WINDOW(kind, size, step)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowClause {
    /// Time or count.
    pub kind: WindowKind,
    /// Window size (ms or events).
    pub size: u64,
    /// Step (ms or events); equal to `size` for tumbling windows.
    pub step: u64,
    /// Where the clause stands.
    pub span: Span,
}

/// Parses one query.
pub fn parse_query(sql: &str) -> Result<Query> {
    if sql.len() > MAX_QUERY_BYTES {
        return Err(Error::query(
            Stage::Parse,
            format!("query is {} bytes; the limit is {MAX_QUERY_BYTES}", sql.len()),
            Some(Span { start: Location { line: 1, column: 1 }, end: Location { line: 1, column: 2 } }),
        ));
    }
    if let Some(e) = bpftrace::recognise(sql) {
        return Err(e);
    }
    let tokens = Tokenizer::new(&EbqDialect, sql).tokenize_with_location().map_err(|e| {
        let at = Location { line: e.location.line as u32, column: e.location.column as u32 };
        Error::query(Stage::Parse, e.message, Some(Span { start: at, end: at }))
    })?;
    let words = tokens.iter().filter(|t| !matches!(t.token, Token::Whitespace(_))).count();
    if words > MAX_QUERY_TOKENS {
        let at = tokens
            .iter()
            .filter(|t| !matches!(t.token, Token::Whitespace(_)))
            .nth(MAX_QUERY_TOKENS)
            .and_then(|t| Span::from_sql(t.span));
        return Err(Error::query(
            Stage::Parse,
            format!("query has {words} tokens; the limit is {MAX_QUERY_TOKENS}"),
            at,
        ));
    }
    checks::check_tokens(&tokens)?;
    QueryParser { sql, parser: Parser::new(&EbqDialect).with_tokens_with_locations(tokens) }.query()
}

struct QueryParser<'a> {
    sql: &'a str,
    parser: Parser<'a>,
}

/// Top-level clauses, each allowed once, in any order after SELECT.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Clause {
    From,
    Where,
    GroupBy,
    Having,
    OrderBy,
    Limit,
    Window,
}

impl<'a> QueryParser<'a> {
    fn query(mut self) -> Result<Query> {
        self.expect_keyword(Keyword::SELECT, "a query starts with SELECT")?;
        let distinct = self.parser.parse_keyword(Keyword::DISTINCT);
        let projection = self.wrap(|p| p.parse_comma_separated(Parser::parse_select_item))?;
        checks::check_projection(&projection)?;
        let mut q = Query {
            distinct,
            projection,
            from: EventRef {
                name: EventName::Kprobe { function: String::new(), ret: false },
                alias: None,
                span: Span::default(),
            },
            union: vec![],
            joins: vec![],
            stream: None,
            selection: None,
            group_by: vec![],
            having: None,
            order_by: vec![],
            limit: None,
            window: None,
        };
        let mut seen: Vec<Clause> = vec![];
        loop {
            let tok = self.parser.peek_token();
            let span = Span::from_sql(tok.span);
            let clause = match &tok.token {
                Token::EOF => break,
                Token::SemiColon => {
                    self.parser.next_token();
                    let rest = self.parser.peek_token();
                    if rest.token != Token::EOF {
                        return Err(self.error_at(&rest, "only one query is allowed; found more text after `;`"));
                    }
                    break;
                }
                Token::Word(w) => match w.keyword {
                    Keyword::FROM => Clause::From,
                    Keyword::WHERE => Clause::Where,
                    Keyword::GROUP => Clause::GroupBy,
                    Keyword::HAVING => Clause::Having,
                    Keyword::ORDER => Clause::OrderBy,
                    Keyword::LIMIT => Clause::Limit,
                    Keyword::WINDOW => Clause::Window,
                    Keyword::JOIN | Keyword::INNER if seen.contains(&Clause::From) => {
                        q.joins.push(self.join()?);
                        continue;
                    }
                    _ => return Err(self.unexpected(&tok)),
                },
                _ => return Err(self.unexpected(&tok)),
            };
            if seen.contains(&clause) {
                return Err(Error::query(Stage::Parse, format!("{} appears twice", clause_name(clause)), span));
            }
            seen.push(clause);
            self.parser.next_token();
            self.clause(clause, span, &mut q)?;
        }
        if !seen.contains(&Clause::From) {
            let end = self.parser.peek_token();
            return Err(self.error_at(&end, "missing FROM: name the event to query, e.g. FROM syscalls.sys_enter_read"));
        }
        Ok(q)
    }

    /// The body of `clause` (its keyword just consumed) into `q`.
    fn clause(&mut self, clause: Clause, span: Option<Span>, q: &mut Query) -> Result<()> {
        match clause {
            Clause::From if self.parser.peek_token().token == Token::LParen => {
                (q.from, q.union) = self.union_from()?;
            }
            Clause::From => {
                q.from = self.event_ref()?;
                if self.parser.consume_token(&Token::Comma) {
                    q.stream = Some(self.event_ref()?);
                    let next = self.parser.peek_token();
                    if next.token == Token::Comma {
                        return Err(self.error_at(&next, "a join reads two event streams: FROM ev1 a, ev2 b"));
                    }
                }
            }
            Clause::Where => q.selection = Some(self.wrap(|p| p.parse_expr())?),
            Clause::GroupBy => {
                self.expect_keyword(Keyword::BY, "expected BY after GROUP")?;
                q.group_by = self.wrap(|p| p.parse_comma_separated(Parser::parse_expr))?;
            }
            Clause::Having => q.having = Some(self.wrap(|p| p.parse_expr())?),
            Clause::OrderBy => {
                self.expect_keyword(Keyword::BY, "expected BY after ORDER")?;
                q.order_by = self.wrap(|p| p.parse_comma_separated(Parser::parse_order_by_expr))?;
            }
            Clause::Limit => q.limit = Some(self.wrap(|p| p.parse_expr())?),
            Clause::Window => q.window = Some(self.window(span.unwrap_or_default())?),
        }
        Ok(())
    }

    fn join(&mut self) -> Result<Join> {
        let tok = self.parser.next_token();
        if matches!(&tok.token, Token::Word(w) if w.keyword == Keyword::INNER) {
            self.expect_keyword(Keyword::JOIN, "expected JOIN after INNER")?;
        }
        let event = self.event_ref()?;
        self.expect_keyword(Keyword::ON, "a JOIN needs an ON condition")?;
        let on = self.wrap(|p| p.parse_expr())?;
        Ok(Join { event, on, span: Span::from_sql(tok.span).unwrap_or_default() })
    }

    /// Reads an event name directly from the text: from the next token up to
    /// white space, `,`, `;` or `)`, so `tracepoint/a/b` and `uprobe:/x.so:f`
    /// need no quoting (nor `uprobe:/x.so:{f,g}`: a `,` inside braces is the name's).
    fn event_ref(&mut self) -> Result<EventRef> {
        let first = self.parser.peek_token();
        let Some(start) = Span::from_sql(first.span) else {
            return Err(self.error_at(&first, "expected an event name after FROM"));
        };
        let (text, end) = match &first.token {
            Token::Word(w) if w.quote_style.is_some() => {
                self.parser.next_token();
                (w.value.clone(), Span::from_sql(first.span).map(|s| s.end).unwrap_or(start.start))
            }
            Token::Word(_) | Token::Div => {
                let begin = start.start.byte_offset(self.sql);
                let mut depth = 0;
                let len = self.sql[begin..]
                    .find(|c: char| {
                        depth += i32::from(c == '{') - i32::from(c == '}');
                        c.is_whitespace() || matches!(c, ';' | ')' | '(') || (c == ',' && depth == 0)
                    })
                    .unwrap_or(self.sql.len() - begin);
                let end = advance(start.start, &self.sql[begin..begin + len]);
                while Span::from_sql(self.parser.peek_token().span).is_some_and(|s| s.start < end) {
                    self.parser.next_token();
                }
                (self.sql[begin..begin + len].to_string(), end)
            }
            _ => return Err(self.error_at(&first, "expected an event name after FROM")),
        };
        let span = Span { start: start.start, end };
        let name = parse_event_name(&text).map_err(|m| Error::query(Stage::Parse, m, Some(span)))?;
        let alias = self.alias()?;
        Ok(EventRef { name, alias, span })
    }

    fn alias(&mut self) -> Result<Option<String>> {
        let explicit = self.parser.parse_keyword(Keyword::AS);
        let tok = self.parser.peek_token();
        match &tok.token {
            Token::Word(w) if explicit || w.keyword == Keyword::NoKeyword => {
                self.parser.next_token();
                Ok(Some(w.value.clone()))
            }
            _ if explicit => Err(self.error_at(&tok, "expected an alias after AS")),
            _ => Ok(None),
        }
    }

    fn window(&mut self, at: Span) -> Result<WindowClause> {
        let usage = "expected WINDOW(time, SIZE_MS, STEP_MS) or WINDOW(count, N, N)";
        self.expect_token(Token::LParen, usage)?;
        let kind_tok = self.parser.next_token();
        let kind = match &kind_tok.token {
            Token::Word(w) if w.value.eq_ignore_ascii_case("time") => WindowKind::Time,
            Token::Word(w) if w.value.eq_ignore_ascii_case("count") => WindowKind::Count,
            _ => return Err(self.error_at(&kind_tok, usage)),
        };
        self.expect_token(Token::Comma, usage)?;
        let size = self.positive_int(usage)?;
        let step = if self.parser.peek_token().token == Token::Comma {
            self.parser.next_token();
            self.positive_int(usage)?
        } else {
            size
        };
        let close = self.expect_token(Token::RParen, usage)?;
        let span = at.union(Span::from_sql(close.span).unwrap_or(at));
        Ok(WindowClause { kind, size, step, span })
    }

    fn positive_int(&mut self, usage: &str) -> Result<u64> {
        let tok = self.parser.next_token();
        match &tok.token {
            Token::Number(n, _) => match n.parse::<u64>() {
                Ok(v) if v > 0 => Ok(v),
                _ => Err(self.error_at(&tok, "window size and step must be whole numbers from 1 to 2^64-1")),
            },
            _ => Err(self.error_at(&tok, usage)),
        }
    }

    fn expect_keyword(&mut self, kw: Keyword, message: &str) -> Result<()> {
        let tok = self.parser.peek_token();
        if self.parser.parse_keyword(kw) {
            Ok(())
        } else {
            Err(self.error_at(&tok, message))
        }
    }

    fn expect_token(&mut self, t: Token, message: &str) -> Result<TokenWithSpan> {
        let tok = self.parser.next_token();
        if tok.token == t {
            Ok(tok)
        } else {
            Err(self.error_at(&tok, message))
        }
    }

    fn unexpected(&self, tok: &TokenWithSpan) -> Error {
        let what = if tok.token == Token::EOF {
            "end of query".to_string()
        } else {
            format!("`{}`", tok.token.to_string().escape_debug())
        };
        self.error_at(
            tok,
            &format!("unexpected {what}; expected FROM, WHERE, GROUP BY, HAVING, ORDER BY, LIMIT, WINDOW or the end"),
        )
    }

    fn error_at(&self, tok: &TokenWithSpan, message: &str) -> Error {
        let span = Span::from_sql(tok.span).or_else(|| Some(self.end_span()));
        Error::query(Stage::Parse, message, span)
    }

    fn end_span(&self) -> Span {
        let end = advance(Location { line: 1, column: 1 }, self.sql);
        Span { start: end, end }
    }

    /// Runs a sqlparser routine and turns its error into a positioned one.
    fn wrap<T>(&mut self, f: impl FnOnce(&mut Parser<'a>) -> Result<T, ParserError>) -> Result<T> {
        let sql = self.sql;
        f(&mut self.parser).map_err(|e| {
            let (message, at) = match e {
                ParserError::ParserError(m) | ParserError::TokenizerError(m) => {
                    let (m, at) = split_position(&m);
                    match m.strip_prefix("No infix parser for token ") {
                        Some(op) => (format!("`{}` is not an operator ebq supports", op.escape_debug()), at),
                        None => (m.escape_debug().to_string(), at),
                    }
                }
                ParserError::RecursionLimitExceeded => {
                    ("expression nested too deeply (the limit is 50 levels)".to_string(), None)
                }
            };
            let span = at.map(|a| Span { start: a, end: Location { column: a.column + 1, ..a } });
            let mut span = span.or_else(|| Span::from_sql(self.parser.peek_token().span));
            if span.is_none() {
                let end = advance(Location { line: 1, column: 1 }, sql);
                span = Some(Span { start: end, end });
            }
            Error::query(Stage::Parse, message, span)
        })
    }
}

fn clause_name(c: Clause) -> &'static str {
    match c {
        Clause::From => "FROM",
        Clause::Where => "WHERE",
        Clause::GroupBy => "GROUP BY",
        Clause::Having => "HAVING",
        Clause::OrderBy => "ORDER BY",
        Clause::Limit => "LIMIT",
        Clause::Window => "WINDOW",
    }
}

/// sqlparser bakes ` at Line: L, Column: C` into its messages; take it back out.
fn split_position(message: &str) -> (String, Option<Location>) {
    let Some(i) = message.rfind(" at Line: ") else {
        return (message.to_string(), None);
    };
    let pos = &message[i + " at Line: ".len()..];
    let mut parts = pos.split(", Column: ");
    let line = parts.next().and_then(|l| l.trim().parse().ok());
    let column = parts.next().and_then(|c| c.trim().parse().ok());
    match (line, column) {
        (Some(line), Some(column)) => (message[..i].to_string(), Some(Location { line, column })),
        _ => (message.to_string(), None),
    }
}

/// The location just past `text` when it starts at `from`.
fn advance(from: Location, text: &str) -> Location {
    text.chars().fold(from, |at, c| {
        if c == '\n' {
            Location { line: at.line + 1, column: 1 }
        } else {
            Location { column: at.column + 1, ..at }
        }
    })
}

#[cfg(test)]
mod tests;
