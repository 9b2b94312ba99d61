//! The `/` filter language of the links table and heat map.
//!
//! ```text
//! expr  := or
//! or    := and ("or" and)*
//! and   := not ("and" not)*
//! not   := "not" not | atom
//! atom  := "(" expr ")" | FIELD OP NUMBER["%"] | "tier" OP TIERNAME | "down" | WORD
//! FIELD := util | gbps | drops | pfc | paused | ecn | plane | tier
//! OP    := > | >= | < | <= | = | == | !=
//! ```
//! `util`, `paused` and `ecn` are percentages; `drops` and `pfc` are per second; a bare
//! `WORD` matches links with an end whose name contains it (case-insensitive), so
//! `leaf-3`, `spine` or `p2-` all work. Tier names: `host` (0), `leaf` (1), `spine` /
//! `agg` (2) — a link's tier is its lower end's.
//!
//! ```
//! use fabric_tui::filter::Expr;
//! let e: Expr = "util>90 and pfc>0".parse().unwrap();
//! assert_eq!(e.to_string(), "(util>90 and pfc>0)");
//! assert!("util>>9".parse::<Expr>().unwrap_err().to_string().contains("column 6"));
//! ```

use crate::fabric::{FabricView, LinkLabel};
use crate::metrics::LinkRates;
use std::fmt;
use std::str::FromStr;

/// Longest filter accepted, in bytes.
pub const MAX_LEN: usize = 1000;
/// Deepest nesting of parentheses / `not` accepted.
pub const MAX_DEPTH: usize = 64;

/// A numeric property of a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// Utilisation, percent.
    Util,
    /// Throughput, Gb/s.
    Gbps,
    /// Drops per second.
    Drops,
    /// PFC pause frames per second.
    Pfc,
    /// Paused share, percent.
    Paused,
    /// ECN-marked share, percent.
    Ecn,
    /// Plane number.
    Plane,
    /// Link tier (0 host–leaf, 1 leaf–spine, 2 spine–core).
    Tier,
}

const FIELDS: [(&str, Field); 8] = [
    ("util", Field::Util),
    ("gbps", Field::Gbps),
    ("drops", Field::Drops),
    ("pfc", Field::Pfc),
    ("paused", Field::Paused),
    ("ecn", Field::Ecn),
    ("plane", Field::Plane),
    ("tier", Field::Tier),
];

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `=` or `==`
    Eq,
    /// `!=`
    Ne,
}

/// A parsed filter.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// Both.
    And(Box<Expr>, Box<Expr>),
    /// Either.
    Or(Box<Expr>, Box<Expr>),
    /// Not.
    Not(Box<Expr>),
    /// `field op value`.
    Cmp(Field, Op, f64),
    /// The link is down.
    Down,
    /// An end's name contains this text (lower case).
    Name(String),
}

/// Why a filter did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("at column {col}: {msg}")]
pub struct ParseError {
    /// 1-based column (byte offset + 1).
    pub col: usize,
    /// What was expected.
    pub msg: String,
}

impl FromStr for Expr {
    type Err = ParseError;
    fn from_str(s: &str) -> Result<Expr, ParseError> {
        if s.len() > MAX_LEN {
            return Err(ParseError {
                col: MAX_LEN + 1,
                msg: format!("filter longer than {MAX_LEN} bytes"),
            });
        }
        let mut p = Parser {
            toks: lex(s)?,
            i: 0,
            depth: 0,
            end: s.len(),
        };
        let e = p.or()?;
        match p.toks.get(p.i) {
            None => Ok(e),
            Some(t) => Err(p.err_at(
                t.pos,
                format!("unexpected `{}` after a complete filter", t.text(s)),
            )),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    LParen,
    RParen,
    Op(Op),
    Num(f64),
    Word(String),
}

#[derive(Debug, Clone)]
struct Token {
    tok: Tok,
    pos: usize,
    len: usize,
}

impl Token {
    fn text<'a>(&self, s: &'a str) -> &'a str {
        &s[self.pos..self.pos + self.len]
    }
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | ':' | '/')
}

fn lex(s: &str) -> Result<Vec<Token>, ParseError> {
    let mut out = Vec::new();
    let mut it = s.char_indices().peekable();
    while let Some(&(i, c)) = it.peek() {
        let take = |n: usize| {
            s[i..]
                .chars()
                .take_while(|&c| pred(n, c))
                .map(char::len_utf8)
                .sum::<usize>()
        };
        let (tok, len) = match c {
            c if c.is_whitespace() => {
                it.next();
                continue;
            }
            '(' => (Tok::LParen, 1),
            ')' => (Tok::RParen, 1),
            '>' | '<' | '=' | '!' => lex_op(s, i)?,
            c if c.is_ascii_digit() => {
                let len = take(0);
                let text = &s[i..i + len];
                let v: f64 = text.parse().map_err(|_| ParseError {
                    col: i + 1,
                    msg: format!("`{text}` is not a number"),
                })?;
                if !v.is_finite() {
                    return Err(ParseError {
                        col: i + 1,
                        msg: format!("`{text}` is too large"),
                    });
                }
                let len = len + usize::from(s[i + len..].starts_with('%'));
                if s[i + len..].chars().next().is_some_and(is_word) {
                    return Err(ParseError {
                        col: i + len + 1,
                        msg: "a number must be followed by a space, `)` or `%`".into(),
                    });
                }
                (Tok::Num(v), len)
            }
            c if is_word(c) => {
                let len = take(1);
                (Tok::Word(s[i..i + len].to_lowercase()), len)
            }
            c => {
                return Err(ParseError {
                    col: i + 1,
                    msg: format!("unexpected character `{c}`"),
                });
            }
        };
        out.push(Token { tok, pos: i, len });
        while it.peek().is_some_and(|&(j, _)| j < i + len) {
            it.next();
        }
    }
    Ok(out)
}

fn pred(kind: usize, c: char) -> bool {
    if kind == 0 {
        c.is_ascii_digit() || c == '.'
    } else {
        is_word(c)
    }
}

fn lex_op(s: &str, i: usize) -> Result<(Tok, usize), ParseError> {
    let two = s.get(i..i + 2).unwrap_or("");
    let (op, len) = match two {
        ">=" => (Op::Ge, 2),
        "<=" => (Op::Le, 2),
        "==" => (Op::Eq, 2),
        "!=" => (Op::Ne, 2),
        _ => match &s[i..i + 1] {
            ">" => (Op::Gt, 1),
            "<" => (Op::Lt, 1),
            "=" => (Op::Eq, 1),
            _ => {
                return Err(ParseError {
                    col: i + 1,
                    msg: "`!` must be followed by `=`".into(),
                });
            }
        },
    };
    Ok((Tok::Op(op), len))
}

struct Parser {
    toks: Vec<Token>,
    i: usize,
    depth: usize,
    end: usize,
}

impl Parser {
    fn err_at(&self, pos: usize, msg: String) -> ParseError {
        ParseError { col: pos + 1, msg }
    }

    fn pos(&self) -> usize {
        self.toks.get(self.i).map_or(self.end, |t| t.pos)
    }

    fn keyword(&mut self, k: &str) -> bool {
        if matches!(self.toks.get(self.i), Some(Token { tok: Tok::Word(w), .. }) if w == k) {
            self.i += 1;
            return true;
        }
        false
    }

    fn or(&mut self) -> Result<Expr, ParseError> {
        let mut e = self.and()?;
        while self.keyword("or") {
            e = Expr::Or(Box::new(e), Box::new(self.and()?));
        }
        Ok(e)
    }

    fn and(&mut self) -> Result<Expr, ParseError> {
        let mut e = self.not()?;
        while self.keyword("and") {
            e = Expr::And(Box::new(e), Box::new(self.not()?));
        }
        Ok(e)
    }

    fn not(&mut self) -> Result<Expr, ParseError> {
        if self.keyword("not") {
            self.enter()?;
            let e = Expr::Not(Box::new(self.not()?));
            self.depth -= 1;
            return Ok(e);
        }
        self.atom()
    }

    fn enter(&mut self) -> Result<(), ParseError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.err_at(self.pos(), format!("nested deeper than {MAX_DEPTH}")));
        }
        Ok(())
    }

    fn atom(&mut self) -> Result<Expr, ParseError> {
        let pos = self.pos();
        let Some(t) = self.toks.get(self.i).cloned() else {
            return Err(self.err_at(
                pos,
                "expected a condition (e.g. `util>90`, `down` or a switch name)".into(),
            ));
        };
        self.i += 1;
        match t.tok {
            Tok::LParen => {
                self.enter()?;
                let e = self.or()?;
                self.depth -= 1;
                match self.toks.get(self.i) {
                    Some(Token {
                        tok: Tok::RParen, ..
                    }) => {
                        self.i += 1;
                        Ok(e)
                    }
                    _ => Err(self.err_at(self.pos(), "expected `)`".into())),
                }
            }
            Tok::Word(w) => self.word(w, pos),
            Tok::RParen => Err(self.err_at(pos, "unexpected `)`".into())),
            Tok::Op(_) => Err(self.err_at(
                pos,
                "expected a field before the operator (e.g. `util>90`)".into(),
            )),
            Tok::Num(_) => Err(self.err_at(
                pos,
                "expected a field before the number (e.g. `util>90`)".into(),
            )),
        }
    }

    fn word(&mut self, w: String, pos: usize) -> Result<Expr, ParseError> {
        let Some(Token {
            tok: Tok::Op(op), ..
        }) = self.toks.get(self.i).cloned()
        else {
            if matches!(w.as_str(), "and" | "or" | "not") {
                return Err(self.err_at(pos, format!("expected a condition before `{w}`")));
            }
            return Ok(if w == "down" {
                Expr::Down
            } else {
                Expr::Name(w)
            });
        };
        let Some(&(_, field)) = FIELDS.iter().find(|(n, _)| *n == w) else {
            let names: Vec<_> = FIELDS.iter().map(|(n, _)| *n).collect();
            return Err(self.err_at(
                pos,
                format!("unknown field `{w}` (fields: {})", names.join(", ")),
            ));
        };
        self.i += 1;
        let vpos = self.pos();
        let v = match self.toks.get(self.i).map(|t| &t.tok) {
            Some(Tok::Num(v)) => *v,
            Some(Tok::Word(t)) if field == Field::Tier => match t.as_str() {
                "host" => 0.0,
                "leaf" => 1.0,
                "spine" | "agg" => 2.0,
                _ => {
                    return Err(self.err_at(
                        vpos,
                        format!("unknown tier `{t}` (host, leaf, spine, agg or a number)"),
                    ));
                }
            },
            _ => return Err(self.err_at(vpos, format!("expected a number after `{w}`"))),
        };
        self.i += 1;
        Ok(Expr::Cmp(field, op, v))
    }
}

impl Op {
    fn holds(self, a: f64, b: f64) -> bool {
        match self {
            Op::Gt => a > b,
            Op::Ge => a >= b,
            Op::Lt => a < b,
            Op::Le => a <= b,
            Op::Eq => a == b,
            Op::Ne => a != b,
        }
    }
}

impl Expr {
    /// Does link `id` match?
    pub fn matches(&self, fabric: &FabricView, id: u32, r: &LinkRates) -> bool {
        let l = &fabric.links[id as usize];
        self.eval(fabric, l, r)
    }

    fn eval(&self, f: &FabricView, l: &LinkLabel, r: &LinkRates) -> bool {
        match self {
            Expr::And(a, b) => a.eval(f, l, r) && b.eval(f, l, r),
            Expr::Or(a, b) => a.eval(f, l, r) || b.eval(f, l, r),
            Expr::Not(a) => !a.eval(f, l, r),
            Expr::Down => r.down,
            Expr::Name(n) => contains_ci(f.node_name(l.a), n) || contains_ci(f.node_name(l.b), n),
            Expr::Cmp(field, op, v) => {
                let x = match field {
                    Field::Util => r.util as f64 * 100.0,
                    Field::Gbps => r.bps as f64 / 1e9,
                    Field::Drops => r.drops_per_s as f64,
                    Field::Pfc => r.pfc_per_s as f64,
                    Field::Paused => r.paused as f64 * 100.0,
                    Field::Ecn => r.ecn as f64 * 100.0,
                    Field::Plane => match l.plane {
                        Some(p) => p as f64,
                        None => return false,
                    },
                    Field::Tier => l.tier as f64,
                };
                op.holds(x, *v)
            }
        }
    }
}

fn contains_ci(hay: &str, needle_lower: &str) -> bool {
    if hay.is_ascii() {
        hay.as_bytes()
            .windows(needle_lower.len().max(1))
            .any(|w| w.eq_ignore_ascii_case(needle_lower.as_bytes()))
            || needle_lower.is_empty()
    } else {
        hay.to_lowercase().contains(needle_lower)
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Op::Gt => ">",
            Op::Ge => ">=",
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Eq => "=",
            Op::Ne => "!=",
        })
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::And(a, b) => write!(f, "({a} and {b})"),
            Expr::Or(a, b) => write!(f, "({a} or {b})"),
            Expr::Not(a) => write!(f, "not {a}"),
            Expr::Down => f.write_str("down"),
            Expr::Name(n) => f.write_str(n),
            Expr::Cmp(field, op, v) => {
                let name = FIELDS
                    .iter()
                    .find(|(_, x)| x == field)
                    .map_or("?", |(n, _)| n);
                write!(f, "{name}{op}{v}")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn examples() {
        let e: Expr = "util>90 and pfc>0".parse().unwrap();
        assert_eq!(
            e,
            Expr::And(
                Box::new(Expr::Cmp(Field::Util, Op::Gt, 90.0)),
                Box::new(Expr::Cmp(Field::Pfc, Op::Gt, 0.0))
            )
        );
        assert_eq!(
            "tier=leaf".parse::<Expr>().unwrap(),
            Expr::Cmp(Field::Tier, Op::Eq, 1.0)
        );
        assert_eq!(
            "util >= 50%".parse::<Expr>().unwrap(),
            Expr::Cmp(Field::Util, Op::Ge, 50.0)
        );
        assert_eq!(
            "Leaf-3".parse::<Expr>().unwrap(),
            Expr::Name("leaf-3".into())
        );
        assert_eq!(
            "a or b and not down".parse::<Expr>().unwrap().to_string(),
            "(a or (b and not down))"
        );
    }

    #[test]
    fn errors_say_where_and_what() {
        let e = |s: &str| s.parse::<Expr>().unwrap_err().to_string();
        assert_eq!(
            e("speed>3"),
            "at column 1: unknown field `speed` (fields: util, gbps, drops, pfc, paused, ecn, plane, tier)"
        );
        assert_eq!(e("util>"), "at column 6: expected a number after `util`");
        assert_eq!(e("(util>3"), "at column 8: expected `)`");
        assert_eq!(
            e("util>3 pfc>1"),
            "at column 8: unexpected `pfc` after a complete filter"
        );
        assert_eq!(
            e(""),
            "at column 1: expected a condition (e.g. `util>90`, `down` or a switch name)"
        );
        assert_eq!(
            e("util>1e999"),
            "at column 7: a number must be followed by a space, `)` or `%`"
        );
        assert_eq!(
            e(&format!("util>{}", "9".repeat(400))),
            "at column 6: `".to_string() + &"9".repeat(400) + "` is too large"
        );
        assert!(e(&"(".repeat(100)).contains("nested deeper than 64"));
        assert!(e(&"a ".repeat(600)).contains("longer than 1000"));
    }

    fn arb_expr() -> impl Strategy<Value = Expr> {
        let fields = prop::sample::select(FIELDS.iter().map(|(_, f)| *f).collect::<Vec<_>>());
        let ops = prop::sample::select(vec![Op::Gt, Op::Ge, Op::Lt, Op::Le, Op::Eq, Op::Ne]);
        let leaf = prop_oneof![
            (fields.clone(), ops.clone(), 0.0f64..f64::MAX)
                .prop_map(|(f, o, v)| Expr::Cmp(f, o, v)),
            (fields, ops, any::<u64>()).prop_map(|(f, o, v)| Expr::Cmp(f, o, v as f64)),
            Just(Expr::Down),
            "[a-z][a-z0-9_.:-]{0,10}"
                .prop_filter("keyword", |s| !matches!(
                    s.as_str(),
                    "and" | "or" | "not" | "down"
                ))
                .prop_map(Expr::Name),
        ];
        leaf.prop_recursive(6, 40, 2, |inner| {
            prop_oneof![
                (inner.clone(), inner.clone())
                    .prop_map(|(a, b)| Expr::And(Box::new(a), Box::new(b))),
                (inner.clone(), inner.clone())
                    .prop_map(|(a, b)| Expr::Or(Box::new(a), Box::new(b))),
                inner.prop_map(|a| Expr::Not(Box::new(a))),
            ]
        })
    }

    proptest! {
        #[test]
        fn display_parses_back(e in arb_expr()) {
            let s = e.to_string();
            prop_assume!(s.len() <= MAX_LEN);
            prop_assert_eq!(s.parse::<Expr>().unwrap(), e);
        }

        #[test]
        fn any_text_never_panics(s in "\\PC{0,200}") {
            let _ = s.parse::<Expr>();
        }

        #[test]
        fn filter_like_text_never_panics(s in "[a-z0-9<>=!() .%-]{0,300}") {
            let _ = s.parse::<Expr>();
        }

        #[test]
        fn thresholds_split_links(v in 0.0f64..200.0, u in 0.0f32..1.0) {
            let f = topo::generators::leaf_spine(2, 1, 1, topo::Rate::gbps(100)).unwrap();
            let view = FabricView::from_topo(&f);
            let r = LinkRates { util: u, ..Default::default() };
            let gt: Expr = format!("util>{v}").parse().unwrap();
            let le: Expr = format!("util<={v}").parse().unwrap();
            prop_assert!(gt.matches(&view, 0, &r) != le.matches(&view, 0, &r));
        }
    }
}
