//! Checks sqlparser is lenient about, each a positioned error: an empty
//! alias or a second `AS` taken for one (`SELECT fd AS AS FROM …`), `(*)`
//! outside COUNT, and prefix chains (`NOT NOT … x`) deeper than the parser's
//! recursion limit, which sqlparser would otherwise cut short and report as an
//! unexpected token further on.

use crate::error::{Error, Result, Span, Stage};
use sqlparser::ast::{SelectItem, Spanned};
use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::{Token, TokenWithSpan};

/// Most prefix operators and open parentheses in a row: 47 `NOT`s in a WHERE
/// are the most sqlparser's recursion limit (50) lets through.
pub const MAX_PREFIX_RUN: usize = 47;

fn at(t: &TokenWithSpan, msg: impl Into<String>) -> Error {
    Error::query(Stage::Parse, msg, Span::from_sql(t.span))
}

/// Token-level checks, before parsing.
pub(super) fn check_tokens(tokens: &[TokenWithSpan]) -> Result<()> {
    let words: Vec<&TokenWithSpan> = tokens.iter().filter(|t| !matches!(t.token, Token::Whitespace(_))).collect();
    let mut run = 0;
    for (i, t) in words.iter().enumerate() {
        let prefix = match &t.token {
            Token::Word(w) => w.keyword == Keyword::NOT,
            Token::Minus | Token::Plus | Token::LParen | Token::Tilde => true,
            _ => false,
        };
        run = if prefix { run + 1 } else { 0 };
        if run > MAX_PREFIX_RUN {
            return Err(at(t, format!("expression nested too deeply (the limit is {MAX_PREFIX_RUN} levels)")));
        }
        // `(*)` where no function name precedes the parenthesis.
        if t.token == Token::Mul && i >= 1 && i + 1 < words.len() {
            let (open, close) = (&words[i - 1].token, &words[i + 1].token);
            let function = i >= 2
                && matches!(&words[i - 2].token, Token::Word(w)
                    if !matches!(w.keyword, Keyword::SELECT | Keyword::DISTINCT | Keyword::BY | Keyword::WHERE
                        | Keyword::AND | Keyword::OR | Keyword::NOT | Keyword::HAVING));
            if *open == Token::LParen && *close == Token::RParen && !function {
                return Err(at(t, "`*` cannot be parenthesized: write `*` or COUNT(*)"));
            }
        }
    }
    Ok(())
}

/// Checks the SELECT list's aliases.
pub(super) fn check_projection(items: &[SelectItem]) -> Result<()> {
    for item in items {
        if let SelectItem::ExprWithAlias { alias, .. } = item {
            // A string literal taken as an alias (`x ''`) has no span of its own.
            let span = Span::from_sql(alias.span).or_else(|| Span::from_sql(item.span()));
            if alias.value.is_empty() {
                return Err(Error::query(Stage::Parse, "an alias cannot be empty", span));
            }
            if alias.quote_style.is_none() && alias.value.eq_ignore_ascii_case("AS") {
                return Err(Error::query(
                    Stage::Parse,
                    "expected an alias after AS, found AS (quote it to use it as a name: \"AS\")",
                    span,
                ));
            }
        }
    }
    Ok(())
}
