//! CuTe text notation: `Display` and `FromStr` for [`IntTuple`], [`Layout`] and [`Coord`].
//!
//! Grammar (whitespace allowed between tokens):
//!
//! ```text
//! layout := tuple ':' tuple
//! tuple  := int | '(' [ tuple { ',' tuple } [','] ] ')'
//! int    := ['-'] digits | '_' ['-'] digits        (CuTe prints static integers as _8)
//! coord  := like tuple, where a lone '_' is a free coordinate
//! ```
//!
//! Printing gives the canonical form (`(4,3):(3,1)`, `8:1`, `():()`, a one-element tuple as
//! `(4)`), which parses back to the same value.

use std::fmt;
use std::str::FromStr;

use super::MAX_DEPTH;
use super::error::{LayoutError, ParseErrorKind};
use super::int_tuple::IntTuple;
use super::layout::Layout;
use super::slice::{Coord, CoordView};

impl fmt::Display for IntTuple {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.as_tuple() {
            None => write!(f, "{}", self.as_int().unwrap_or_default()),
            Some(items) => write_tuple(f, items),
        }
    }
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.shape(), self.stride())
    }
}

impl fmt::Debug for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for Coord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.view() {
            CoordView::Index(i) => write!(f, "{i}"),
            CoordView::Free => f.write_str("_"),
            CoordView::Tuple(items) => write_tuple(f, items),
        }
    }
}

impl fmt::Debug for Coord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

fn write_tuple<T: fmt::Display>(f: &mut fmt::Formatter<'_>, items: &[T]) -> fmt::Result {
    f.write_str("(")?;
    for (k, item) in items.iter().enumerate() {
        if k > 0 {
            f.write_str(",")?;
        }
        write!(f, "{item}")?;
    }
    f.write_str(")")
}

impl FromStr for IntTuple {
    type Err = LayoutError;

    fn from_str(s: &str) -> Result<IntTuple, LayoutError> {
        let mut p = Parser::new(s);
        let t = p.tree(0)?;
        p.finish()?;
        Ok(t)
    }
}

impl FromStr for Layout {
    type Err = LayoutError;

    fn from_str(s: &str) -> Result<Layout, LayoutError> {
        let mut p = Parser::new(s);
        let shape = p.tree(0)?;
        p.skip_ws();
        if !p.eat(b':') {
            return Err(p.error(ParseErrorKind::MissingColon));
        }
        let stride = p.tree(0)?;
        p.finish()?;
        Layout::new(shape, stride)
    }
}

impl FromStr for Coord {
    type Err = LayoutError;

    fn from_str(s: &str) -> Result<Coord, LayoutError> {
        let mut p = Parser::new(s);
        let t = p.tree(0)?;
        p.finish()?;
        Ok(t)
    }
}

/// What the parser builds: integers, free markers (where allowed) and tuples.
trait Tree: Sized {
    fn int(v: i64) -> Self;
    fn free(offset: usize) -> Result<Self, LayoutError>;
    fn tuple(items: Vec<Self>) -> Result<Self, LayoutError>;
}

impl Tree for IntTuple {
    fn int(v: i64) -> Self {
        IntTuple::int(v)
    }

    fn free(offset: usize) -> Result<Self, LayoutError> {
        Err(LayoutError::Parse {
            offset,
            kind: ParseErrorKind::FreeNotAllowed,
        })
    }

    fn tuple(items: Vec<Self>) -> Result<Self, LayoutError> {
        IntTuple::tuple(items)
    }
}

impl Tree for Coord {
    fn int(v: i64) -> Self {
        Coord::index(v)
    }

    fn free(_: usize) -> Result<Self, LayoutError> {
        Ok(Coord::free())
    }

    fn tuple(items: Vec<Self>) -> Result<Self, LayoutError> {
        Coord::tuple(items)
    }
}

struct Parser<'a> {
    text: &'a [u8],
    pos: usize,
}

impl<'a> Parser<'a> {
    fn new(s: &'a str) -> Self {
        Parser {
            text: s.as_bytes(),
            pos: 0,
        }
    }

    fn error(&self, kind: ParseErrorKind) -> LayoutError {
        LayoutError::Parse {
            offset: self.pos,
            kind,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.text.get(self.pos).copied()
    }

    fn eat(&mut self, b: u8) -> bool {
        if self.peek() == Some(b) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn skip_ws(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_whitespace()) {
            self.pos += 1;
        }
    }

    fn unexpected(&self) -> LayoutError {
        match std::str::from_utf8(&self.text[self.pos..])
            .ok()
            .and_then(|s| s.chars().next())
        {
            Some(c) => self.error(ParseErrorKind::UnexpectedChar(c)),
            None if self.pos < self.text.len() => {
                self.error(ParseErrorKind::UnexpectedChar('\u{fffd}'))
            }
            None => self.error(ParseErrorKind::UnexpectedEnd),
        }
    }

    fn finish(&mut self) -> Result<(), LayoutError> {
        self.skip_ws();
        if self.pos == self.text.len() {
            Ok(())
        } else {
            Err(self.error(ParseErrorKind::TrailingInput))
        }
    }

    /// One value; `level` is the number of enclosing parentheses.
    fn tree<T: Tree>(&mut self, level: usize) -> Result<T, LayoutError> {
        self.skip_ws();
        let start = self.pos;
        match self.peek() {
            Some(b'(') => {
                if level >= MAX_DEPTH {
                    return Err(LayoutError::TooDeep { limit: MAX_DEPTH });
                }
                self.pos += 1;
                let mut items = Vec::new();
                loop {
                    self.skip_ws();
                    if self.eat(b')') {
                        return T::tuple(items);
                    }
                    items.push(self.tree(level + 1)?);
                    self.skip_ws();
                    if !self.eat(b',') {
                        self.skip_ws();
                        return if self.eat(b')') {
                            T::tuple(items)
                        } else {
                            Err(self.unexpected())
                        };
                    }
                }
            }
            Some(b'_') => {
                self.pos += 1;
                match self.peek() {
                    Some(b'-' | b'0'..=b'9') => Ok(T::int(self.int()?)),
                    _ => T::free(start),
                }
            }
            Some(b'-' | b'0'..=b'9') => Ok(T::int(self.int()?)),
            _ => Err(self.unexpected()),
        }
    }

    fn int(&mut self) -> Result<i64, LayoutError> {
        let start = self.pos;
        let negative = self.eat(b'-');
        let digits = self.pos;
        let mut value: i64 = 0;
        while let Some(b @ b'0'..=b'9') = self.peek() {
            let digit = i64::from(b - b'0');
            // Accumulate negatively so that i64::MIN parses.
            value = value
                .checked_mul(10)
                .and_then(|v| v.checked_sub(digit))
                .ok_or(LayoutError::Parse {
                    offset: start,
                    kind: ParseErrorKind::IntOverflow,
                })?;
            self.pos += 1;
        }
        if self.pos == digits {
            return Err(self.unexpected());
        }
        if negative {
            Ok(value)
        } else {
            value.checked_neg().ok_or(LayoutError::Parse {
                offset: start,
                kind: ParseErrorKind::IntOverflow,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(s: &str) {
        let l: Layout = s.parse().expect("valid layout");
        assert_eq!(l.to_string(), s);
    }

    #[test]
    fn canonical_forms_round_trip() {
        for s in [
            "8:1",
            "(4,3):(3,1)",
            "((2,2),3):((24,2),8)",
            "1:0",
            "():()",
            "(4):(1)",
            "(2,()):(1,())",
            "4:-1",
            "((1,1)):((0,0))",
        ] {
            round_trip(s);
        }
    }

    #[test]
    fn lenient_input() {
        let l: Layout = " ( _4 , _3 ) : ( _3 , _1 ) "
            .parse()
            .expect("CuTe static form");
        assert_eq!(l.to_string(), "(4,3):(3,1)");
        let l: Layout = "(4,):(2,)".parse().expect("python one-tuple");
        assert_eq!(l.to_string(), "(4):(2)");
        assert_eq!(
            "-9223372036854775808".parse::<IntTuple>(),
            Ok(IntTuple::int(i64::MIN))
        );
    }

    #[test]
    fn errors_say_where() {
        let err = |s: &str| s.parse::<Layout>().expect_err("invalid");
        assert_eq!(
            err("(4,3)"),
            LayoutError::Parse {
                offset: 5,
                kind: ParseErrorKind::MissingColon
            }
        );
        assert_eq!(
            err("(4,3:(3,1)"),
            LayoutError::Parse {
                offset: 4,
                kind: ParseErrorKind::UnexpectedChar(':')
            }
        );
        assert_eq!(
            err("(4,3):(3,1"),
            LayoutError::Parse {
                offset: 10,
                kind: ParseErrorKind::UnexpectedEnd
            }
        );
        assert_eq!(
            err("4:1 x"),
            LayoutError::Parse {
                offset: 4,
                kind: ParseErrorKind::TrailingInput
            }
        );
        assert_eq!(
            err("9223372036854775808:1"),
            LayoutError::Parse {
                offset: 0,
                kind: ParseErrorKind::IntOverflow
            }
        );
        assert_eq!(
            err("(_,2):(1,2)"),
            LayoutError::Parse {
                offset: 1,
                kind: ParseErrorKind::FreeNotAllowed
            }
        );
        assert_eq!(
            err("(4,3):(1,(2,3))"),
            LayoutError::NotCongruent {
                shape_leaves: 2,
                stride_leaves: 3
            }
        );
        assert_eq!(
            err("é:1"),
            LayoutError::Parse {
                offset: 0,
                kind: ParseErrorKind::UnexpectedChar('é')
            }
        );
        let deep = format!("{}1{}", "(".repeat(10_000), ")".repeat(10_000));
        assert_eq!(
            deep.parse::<IntTuple>(),
            Err(LayoutError::TooDeep { limit: MAX_DEPTH })
        );
    }

    #[test]
    fn coordinates() {
        let c: Coord = "(_,(2,_))".parse().expect("coordinate");
        assert_eq!(c.to_string(), "(_,(2,_))");
        let c: Coord = "_".parse().expect("coordinate");
        assert_eq!(c, Coord::free());
    }
}
