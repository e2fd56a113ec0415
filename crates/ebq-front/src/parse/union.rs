//! `FROM (SELECT a, b FROM ev1 [WHERE …] UNION ALL SELECT a, b FROM ev2 [WHERE …]) q`:
//! several events, each with its own filter, standing as one event `q`. A
//! branch selects columns by name or expressions named with `AS`
//! (`SELECT 1 << order AS pages FROM …`); the first branch names the columns.
//! A branch of a top-level union may itself pair two events
//! (`SELECT … FROM start s JOIN end e ON s.k = e.k WHERE …`).

use super::{EventRef, Join, QueryParser};
use crate::error::{Error, Result, Span, Stage};
use sqlparser::ast::{Expr, Ident, SelectItem};
use sqlparser::keywords::Keyword;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::Token;

/// One `SELECT cols FROM event [WHERE cond]` of a union in FROM.
#[derive(Debug, Clone, PartialEq)]
pub struct UnionBranch {
    /// The columns it yields, by name, in order.
    pub columns: Vec<Ident>,
    /// The expression of each column (a plain column is its own name).
    pub exprs: Vec<Expr>,
    /// Its event (a JOIN's start event).
    pub event: EventRef,
    /// `JOIN end ON …`: the branch pairs `event` with an end event.
    pub join: Option<Join>,
    /// Its own WHERE.
    pub selection: Option<Expr>,
    /// From its SELECT to the end of its event or WHERE.
    pub span: Span,
}

impl QueryParser<'_> {
    /// After FROM, at `(`: the branches and the union as one event named by
    /// the alias after `)` (required).
    pub(super) fn union_from(&mut self) -> Result<(EventRef, Vec<UnionBranch>)> {
        let open = self.parser.next_token();
        let mut branches = vec![self.union_branch()?];
        while self.parser.parse_keyword(Keyword::UNION) {
            let all = self.parser.peek_token();
            if !self.parser.parse_keyword(Keyword::ALL) {
                return Err(self.error_at(&all, "only UNION ALL is supported: every event of every branch counts"));
            }
            branches.push(self.union_branch()?);
        }
        let close = self.expect_token(Token::RParen, "expected UNION ALL SELECT … or `)` closing the union")?;
        let alias_at = self.parser.peek_token();
        let Some(alias) = self.alias()? else {
            return Err(self.error_at(&alias_at, "name the union: FROM (SELECT … UNION ALL SELECT …) q"));
        };
        if branches.len() < 2 {
            let span = Span::from_sql(open.span).map(|s| s.union(Span::from_sql(close.span).unwrap_or(s)));
            return Err(Error::query(
                Stage::Parse,
                "FROM ( … ) reads a UNION ALL of events: SELECT a, b FROM ev1 UNION ALL SELECT a, b FROM ev2",
                span,
            ));
        }
        let first = &branches[0].event;
        let from = EventRef { name: first.name.clone(), alias: Some(alias), span: first.span };
        Ok((from, branches))
    }

    fn union_branch(&mut self) -> Result<UnionBranch> {
        let select = self.parser.peek_token();
        self.expect_keyword(Keyword::SELECT, "each branch of a union is SELECT columns FROM event")?;
        let items = self.wrap(|p| p.parse_comma_separated(Parser::parse_select_item))?;
        let (mut columns, mut exprs) = (vec![], vec![]);
        for item in items {
            match item {
                SelectItem::UnnamedExpr(Expr::Identifier(id)) => {
                    exprs.push(Expr::Identifier(id.clone()));
                    columns.push(id);
                }
                SelectItem::ExprWithAlias { expr, alias } => {
                    exprs.push(expr);
                    columns.push(alias);
                }
                other => {
                    use sqlparser::ast::Spanned;
                    return Err(Error::query(
                        Stage::Parse,
                        "a branch of a union selects columns by name (rq, time) or named expressions (1 << order AS pages)",
                        Span::from_sql(other.span()),
                    ));
                }
            }
        }
        self.expect_keyword(Keyword::FROM, "expected FROM event after the branch's columns")?;
        let event = self.event_ref()?;
        let join = match &self.parser.peek_token().token {
            Token::Word(w) if matches!(w.keyword, Keyword::JOIN | Keyword::INNER) => Some(self.join()?),
            _ => None,
        };
        let selection =
            if self.parser.parse_keyword(Keyword::WHERE) { Some(self.wrap(|p| p.parse_expr())?) } else { None };
        let start = Span::from_sql(select.span).unwrap_or(event.span);
        let end = match &selection {
            Some(e) => {
                use sqlparser::ast::Spanned;
                Span::from_sql(e.span()).unwrap_or(event.span)
            }
            None => match &join {
                Some(j) => Span::from_sql(sqlparser::ast::Spanned::span(&j.on)).unwrap_or(j.span),
                None => event.span,
            },
        };
        Ok(UnionBranch { columns, exprs, event, join, selection, span: start.union(end) })
    }
}
