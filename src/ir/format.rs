//! The format of a kernel's `print`: text with placeholders, parsed when the op is recorded.

use super::dtype::DType;
use std::fmt;

/// The most decimals a `{:.N}` placeholder may ask for.
pub const MAX_PRINT_DECIMALS: u8 = 20;

/// A piece of a print's format.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PrintPiece {
    /// Text printed as it is.
    Text(String),
    /// The next value, written as the spec says.
    Arg(PrintSpec),
}

/// How a placeholder writes its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PrintSpec {
    /// `{}`: integers in decimal, floats with six decimals.
    Plain,
    /// `{:x}`: an integer in hexadecimal, of its own width.
    Hex,
    /// `{:e}`: a float in scientific notation (six decimals, C's `%e`).
    Exp,
    /// `{:.N}`: a float with `N` decimals.
    Fixed(u8),
}

impl fmt::Display for PrintSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PrintSpec::Plain => f.write_str("{}"),
            PrintSpec::Hex => f.write_str("{:x}"),
            PrintSpec::Exp => f.write_str("{:e}"),
            PrintSpec::Fixed(n) => write!(f, "{{:.{n}}}"),
        }
    }
}

/// What is wrong with a print's format.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PrintProblem {
    /// A `{` never closed, or a `}` never opened (not doubled), at this byte.
    UnmatchedBrace {
        /// The byte offset in the format.
        at: u32,
    },
    /// A placeholder this format language does not have (`{:?}`), at this byte.
    UnknownSpec {
        /// The byte offset in the format.
        at: u32,
        /// What was between the braces.
        spec: String,
    },
    /// Not as many values as placeholders.
    Count {
        /// Placeholders in the format.
        placeholders: u32,
        /// Values given.
        values: u32,
    },
    /// A placeholder for another kind of value (`{:x}` for a float, `{:e}` for an integer).
    SpecType {
        /// Which value (from 0).
        value: u32,
        /// Its placeholder.
        spec: PrintSpec,
        /// Its type.
        dtype: DType,
    },
}

impl fmt::Display for PrintProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PrintProblem::UnmatchedBrace { at } => {
                write!(
                    f,
                    "an unmatched brace at byte {at} of the format (`{{{{` and `}}}}` print braces)"
                )
            }
            PrintProblem::UnknownSpec { at, spec } => write!(
                f,
                "an unknown placeholder `{{{spec}}}` at byte {at} of the format (`{{}}`, `{{:x}}`, \
                 `{{:e}}` and `{{:.N}}` are known)"
            ),
            PrintProblem::Count {
                placeholders,
                values,
            } => write!(
                f,
                "the format has {placeholders} placeholders for {values} values"
            ),
            PrintProblem::SpecType { value, spec, dtype } => {
                write!(
                    f,
                    "value {value} is a {dtype}, which `{spec}` does not print"
                )
            }
        }
    }
}

/// The format the pieces parse from (braces doubled, placeholders as written).
pub(crate) fn unparse(pieces: &[PrintPiece]) -> String {
    (pieces.iter())
        .map(|p| match p {
            PrintPiece::Text(t) => t.replace('{', "{{").replace('}', "}}"),
            PrintPiece::Arg(spec) => spec.to_string(),
        })
        .collect()
}

/// Parses a format: text with `{}` placeholders (`{:x}` hexadecimal for integers, `{:e}`
/// scientific and `{:.N}` N decimals for floats), `{{` and `}}` for braces.
pub(crate) fn parse_format(format: &str) -> Result<Vec<PrintPiece>, PrintProblem> {
    let mut pieces = Vec::new();
    let mut text = String::new();
    let mut chars = format.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        match c {
            '{' if chars.peek().is_some_and(|&(_, n)| n == '{') => {
                chars.next();
                text.push('{');
            }
            '}' if chars.peek().is_some_and(|&(_, n)| n == '}') => {
                chars.next();
                text.push('}');
            }
            '}' => return Err(PrintProblem::UnmatchedBrace { at: at as u32 }),
            '{' => {
                let mut inside = String::new();
                let closed = loop {
                    match chars.next() {
                        Some((_, '}')) => break true,
                        Some((_, ch)) => inside.push(ch),
                        None => break false,
                    }
                };
                if !closed {
                    return Err(PrintProblem::UnmatchedBrace { at: at as u32 });
                }
                let spec = match inside.as_str() {
                    "" => PrintSpec::Plain,
                    ":x" => PrintSpec::Hex,
                    ":e" => PrintSpec::Exp,
                    _ => match inside.strip_prefix(":.").map(str::parse::<u8>) {
                        Some(Ok(n)) if n <= MAX_PRINT_DECIMALS => PrintSpec::Fixed(n),
                        _ => {
                            return Err(PrintProblem::UnknownSpec {
                                at: at as u32,
                                spec: inside,
                            });
                        }
                    },
                };
                if !text.is_empty() {
                    pieces.push(PrintPiece::Text(std::mem::take(&mut text)));
                }
                pieces.push(PrintPiece::Arg(spec));
            }
            _ => text.push(c),
        }
    }
    if !text.is_empty() {
        pieces.push(PrintPiece::Text(text));
    }
    Ok(pieces)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_parse_into_text_and_placeholders() {
        let p = parse_format("a {} b {{x}} {:x}{:e}{:.3}").unwrap();
        assert_eq!(
            p,
            vec![
                PrintPiece::Text("a ".into()),
                PrintPiece::Arg(PrintSpec::Plain),
                PrintPiece::Text(" b {x} ".into()),
                PrintPiece::Arg(PrintSpec::Hex),
                PrintPiece::Arg(PrintSpec::Exp),
                PrintPiece::Arg(PrintSpec::Fixed(3)),
            ]
        );
        assert_eq!(
            parse_format("x {"),
            Err(PrintProblem::UnmatchedBrace { at: 2 })
        );
        assert_eq!(
            parse_format("x } y"),
            Err(PrintProblem::UnmatchedBrace { at: 2 })
        );
        assert_eq!(
            parse_format("{:?}"),
            Err(PrintProblem::UnknownSpec {
                at: 0,
                spec: ":?".into()
            })
        );
        assert!(parse_format("{:.21}").is_err());
        let f = "a {} b {{x}} {:x}{:e}{:.3}";
        assert_eq!(unparse(&parse_format(f).unwrap()), f);
    }
}
