//! The PTX parser: reads text in exactly the format [`crate::ptx::write`] prints back into
//! the typed model of [`crate::ptx`], so `parse(write_module(m)) == m`.
//!
//! Mnemonics are not spelled here: each instruction's text is matched against the writer's own
//! tables (`bin_mnemonic`, `un_mnemonic`, `cmp_name`, ...), so the two cannot drift apart.
//! The parser is line based (the writer prints one instruction, label, comment or declaration
//! per line), tolerant of extra whitespace, and never panics: every failure is a
//! [`ParseError`] naming the line.
//!
//! Two spellings print the same text, so the parse picks one: `and.pred`/`or.pred`/`xor.pred`
//! and `not.pred` always parse as [`Op::PredBin`] and [`Op::PredNot`]. The writer prints a
//! function's dynamic shared declarations (`.extern .shared`, at module scope before it) ahead
//! of its static ones, so the parse lists them first.

use super::error::{ParseError, ParseReason};
use ldst::{parse_ld_ordered, parse_ldst};
use vprintf::parse_vprintf;

mod ldst;
mod vprintf;
use crate::ptx::Arch;
use crate::ptx::write::{
    atom_name, bin_mnemonic, cmp_name, round_name, scope_name, sem_name, special_name, un_mnemonic,
};
use crate::ptx::*;
use smallvec::SmallVec;

/// Parses a whole module.
pub fn parse(text: &str) -> Result<Module, ParseError> {
    parse_with_lines(text).map(|p| p.module)
}

/// A parsed module with the source line of every body item.
#[derive(Debug, Clone)]
pub(crate) struct Parsed {
    pub module: Module,
    /// Per function, in order.
    pub lines: Vec<FnLines>,
}

/// Line numbers of one function.
#[derive(Debug, Clone)]
pub(crate) struct FnLines {
    /// The line of each body item (1-based).
    pub body: Vec<u32>,
    /// The line of the closing `}`.
    pub end: u32,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Top,
    Params,
    AfterParams,
    Body,
}

/// The current line, for errors.
#[derive(Clone, Copy)]
struct Cx<'a> {
    line: u32,
    text: &'a str,
}

impl Cx<'_> {
    fn err(&self, reason: ParseReason) -> ParseError {
        ParseError {
            line: self.line,
            text: self.text.trim().to_string(),
            reason,
        }
    }
}

type R<T> = Result<T, ParseReason>;

/// Parses a module and keeps the line number of every body item.
pub(crate) fn parse_with_lines(text: &str) -> Result<Parsed, ParseError> {
    let mut arch: Option<Arch> = None;
    let mut functions = Vec::new();
    let mut files = Vec::new();
    let mut lines = Vec::new();
    let mut cur: Option<(Function, FnLines)> = None;
    // `.extern .shared` and `.const` declarations belong to the entry that follows them.
    let mut dynamic: Vec<SharedDecl> = Vec::new();
    let mut consts: Vec<ConstDecl> = Vec::new();
    let mut strings: Vec<ConstDecl> = Vec::new();
    let mut state = State::Top;
    let mut last = Cx { line: 1, text: "" };
    for (i, raw) in text.split('\n').enumerate() {
        let raw = raw.strip_suffix('\r').unwrap_or(raw);
        let cx = Cx {
            line: u32::try_from(i + 1).unwrap_or(u32::MAX),
            text: raw,
        };
        last = cx;
        let line = raw.trim();
        match state {
            State::Top => {
                if line.is_empty() || line.starts_with("//") {
                    continue;
                }
                if let Some(rest) = line.strip_prefix(".version") {
                    parse_version(rest.trim()).map_err(|r| cx.err(r))?;
                } else if let Some(rest) = line.strip_prefix(".target") {
                    let name = rest.trim();
                    arch = Some(
                        Arch::ALL
                            .iter()
                            .copied()
                            .find(|a| a.to_string() == name)
                            .ok_or_else(|| cx.err(ParseReason::UnknownTarget))?,
                    );
                } else if let Some(rest) = line.strip_prefix(".address_size") {
                    if rest.trim() != "64" {
                        return Err(cx.err(ParseReason::BadDeclaration));
                    }
                } else if let Some(rest) = line.strip_prefix(".file") {
                    files.push(parse_file_decl(rest, files.len()).map_err(|r| cx.err(r))?);
                } else if let Some(rest) = line.strip_prefix(".const") {
                    consts.push(parse_const_decl(rest).map_err(|r| cx.err(r))?);
                } else if let Some(rest) = line.strip_prefix(".global") {
                    strings.push(parse_const_decl(rest).map_err(|r| cx.err(r))?);
                } else if line == VPRINTF_DECL {
                    continue;
                } else if let Some(rest) = line.strip_prefix(".extern") {
                    let rest = rest
                        .trim_start()
                        .strip_prefix(".shared")
                        .ok_or_else(|| cx.err(ParseReason::BadDeclaration))?;
                    let d = parse_shared_decl(rest, true).map_err(|r| cx.err(r))?;
                    dynamic.push(d);
                } else {
                    if arch.is_none() {
                        return Err(cx.err(ParseReason::UnexpectedLine));
                    }
                    let (name, closed) = parse_entry_header(line).map_err(|r| cx.err(r))?;
                    cur = Some((
                        Function {
                            name,
                            shared: std::mem::take(&mut dynamic),
                            consts: std::mem::take(&mut consts),
                            strings: std::mem::take(&mut strings),
                            ..Function::default()
                        },
                        FnLines {
                            body: Vec::new(),
                            end: 0,
                        },
                    ));
                    state = if closed {
                        State::AfterParams
                    } else {
                        State::Params
                    };
                }
            }
            State::Params => {
                let Some((f, _)) = cur.as_mut() else {
                    return Err(cx.err(ParseReason::UnexpectedLine));
                };
                if line.is_empty() {
                    continue;
                }
                if line == ")" {
                    state = State::AfterParams;
                    continue;
                }
                f.params.push(parse_param(line).map_err(|r| cx.err(r))?);
            }
            State::AfterParams => {
                let Some((f, _)) = cur.as_mut() else {
                    return Err(cx.err(ParseReason::UnexpectedLine));
                };
                if line.is_empty() {
                    continue;
                }
                if line == "{" {
                    state = State::Body;
                } else if let Some(rest) = line.strip_prefix(".reqntid") {
                    f.reqntid = Some(directive_values(rest).map_err(|r| cx.err(r))?);
                } else if let Some(rest) = line.strip_prefix(".maxnreg") {
                    f.maxnreg = Some(directive_values::<1>(rest).map_err(|r| cx.err(r))?[0]);
                } else if let Some(rest) = line.strip_prefix(".minnctapersm") {
                    f.minnctapersm = Some(directive_values::<1>(rest).map_err(|r| cx.err(r))?[0]);
                } else if let Some(rest) = line.strip_prefix(".reqnctapercluster") {
                    f.reqnctapercluster = Some(directive_values(rest).map_err(|r| cx.err(r))?);
                } else if line == ".explicitcluster" {
                    f.explicitcluster = true;
                } else {
                    return Err(cx.err(ParseReason::UnexpectedLine));
                }
            }
            State::Body => {
                let Some((f, fl)) = cur.as_mut() else {
                    return Err(cx.err(ParseReason::UnexpectedLine));
                };
                if line.is_empty() {
                    continue;
                }
                if line == "}" {
                    fl.end = cx.line;
                    if let Some((f, fl)) = cur.take() {
                        functions.push(f);
                        lines.push(fl);
                    }
                    state = State::Top;
                    continue;
                }
                if let Some(rest) = raw.trim_start().strip_prefix("//") {
                    // Keep the text exactly: only the one space the writer adds is removed.
                    let text = rest.strip_prefix(' ').unwrap_or(rest);
                    f.body.push(Op::Comment(text.to_string()).into());
                    fl.body.push(cx.line);
                } else if let Some(rest) = line.strip_prefix(".reg") {
                    parse_reg_decl(rest, &mut f.regs).map_err(|r| cx.err(r))?;
                } else if let Some(rest) = line.strip_prefix(".shared") {
                    f.shared
                        .push(parse_shared_decl(rest, false).map_err(|r| cx.err(r))?);
                } else if let Some(rest) = line.strip_prefix(".local") {
                    let d = parse_shared_decl(rest, false).map_err(|r| cx.err(r))?;
                    if d.bytes == 0 {
                        return Err(cx.err(ParseReason::BadDeclaration));
                    }
                    f.local.push(LocalDecl {
                        name: d.name,
                        align: d.align,
                        bytes: d.bytes,
                        comment: d.comment,
                    });
                } else if line.starts_with("{ ") {
                    f.body.push(parse_vprintf(line, f).map_err(|r| cx.err(r))?);
                    fl.body.push(cx.line);
                } else if let Some(rest) = line.strip_prefix(".loc ") {
                    let v: Vec<u32> = (rest.split_whitespace())
                        .map(|t| t.parse().map_err(|_| cx.err(ParseReason::BadNumber)))
                        .collect::<Result<_, _>>()?;
                    let [file, line, column] = v[..] else {
                        return Err(cx.err(ParseReason::BadDeclaration));
                    };
                    if file == 0 || file as usize > files.len() {
                        return Err(cx.err(ParseReason::BadDeclaration));
                    }
                    f.body.push(Op::Loc { file, line, column }.into());
                    fl.body.push(cx.line);
                } else if let Some(name) = line.strip_suffix(':') {
                    if !is_symbol(name) {
                        return Err(cx.err(ParseReason::BadOperand));
                    }
                    f.body.push(Op::Label(name.to_string()).into());
                    fl.body.push(cx.line);
                } else {
                    let ins = parse_instr(line, f).map_err(|r| cx.err(r))?;
                    f.body.push(ins);
                    fl.body.push(cx.line);
                }
            }
        }
    }
    if state != State::Top || !dynamic.is_empty() || !consts.is_empty() || !strings.is_empty() {
        return Err(last.err(ParseReason::UnexpectedEnd));
    }
    let arch = arch.ok_or_else(|| last.err(ParseReason::UnexpectedEnd))?;
    Ok(Parsed {
        module: Module {
            arch,
            files,
            functions,
        },
        lines,
    })
}

/// ` 2 "src/kernel.rs"`, the declaration of file number `known + 1` (the writer numbers
/// them in order from 1).
fn parse_file_decl(s: &str, known: usize) -> R<String> {
    let (number, name) = s
        .trim()
        .split_once(' ')
        .ok_or(ParseReason::BadDeclaration)?;
    let number: usize = number.parse().map_err(|_| ParseReason::BadNumber)?;
    let name = name
        .trim()
        .strip_prefix('"')
        .and_then(|n| n.strip_suffix('"'))
        .filter(|n| !n.contains(['"', '\\']))
        .ok_or(ParseReason::BadDeclaration)?;
    if number != known + 1 {
        return Err(ParseReason::BadDeclaration);
    }
    Ok(name.to_string())
}

fn parse_version(s: &str) -> R<()> {
    let (maj, min) = s.split_once('.').ok_or(ParseReason::BadNumber)?;
    maj.parse::<u32>().map_err(|_| ParseReason::BadNumber)?;
    min.parse::<u32>().map_err(|_| ParseReason::BadNumber)?;
    Ok(())
}

/// `.visible .entry name(` (or `.entry name()`): the name and whether the list is closed.
fn parse_entry_header(line: &str) -> R<(String, bool)> {
    let rest = line
        .strip_prefix(".visible")
        .map(str::trim_start)
        .unwrap_or(line);
    let rest = rest
        .strip_prefix(".entry")
        .ok_or(ParseReason::UnexpectedLine)?
        .trim_start();
    let (name, tail) = rest.split_once('(').ok_or(ParseReason::BadDeclaration)?;
    let name = name.trim();
    if !is_symbol(name) {
        return Err(ParseReason::BadDeclaration);
    }
    match tail.trim() {
        "" => Ok((name.to_string(), false)),
        ")" => Ok((name.to_string(), true)),
        _ => Err(ParseReason::BadDeclaration),
    }
}

fn parse_param(line: &str) -> R<Param> {
    let line = line.strip_suffix(',').unwrap_or(line).trim_end();
    let rest = line
        .strip_prefix(".param")
        .ok_or(ParseReason::UnexpectedLine)?
        .trim_start();
    let (ty, name) = rest
        .split_once(char::is_whitespace)
        .ok_or(ParseReason::BadDeclaration)?;
    let ty = ty
        .strip_prefix('.')
        .and_then(ty_of)
        .ok_or(ParseReason::BadType)?;
    let name = name.trim();
    if !is_symbol(name) {
        return Err(ParseReason::BadDeclaration);
    }
    Ok(Param {
        name: name.to_string(),
        ty,
    })
}

/// The `N` numbers of a directive such as `.reqntid 128, 1, 1`.
fn directive_values<const N: usize>(rest: &str) -> R<[u32; N]> {
    parse_u32_list(rest)?
        .try_into()
        .map_err(|_| ParseReason::BadDeclaration)
}

fn parse_u32_list(s: &str) -> R<Vec<u32>> {
    s.split(',')
        .map(|t| t.trim().parse::<u32>().map_err(|_| ParseReason::BadNumber))
        .collect()
}

/// ` .b32 %r<10>;`
fn parse_reg_decl(rest: &str, regs: &mut RegCounts) -> R<()> {
    let rest = rest
        .trim()
        .strip_suffix(';')
        .ok_or(ParseReason::MissingSemicolon)?;
    let (ty, decl) = rest
        .trim()
        .split_once(char::is_whitespace)
        .ok_or(ParseReason::BadDeclaration)?;
    let ty = ty
        .strip_prefix('.')
        .and_then(ty_of)
        .ok_or(ParseReason::BadType)?;
    let decl = decl.trim();
    let (prefix, count) = decl
        .strip_prefix('%')
        .and_then(|d| d.strip_suffix('>'))
        .and_then(|d| d.split_once('<'))
        .ok_or(ParseReason::BadDeclaration)?;
    let class = RegClass::ALL
        .iter()
        .copied()
        .find(|c| c.prefix() == prefix)
        .ok_or(ParseReason::BadRegister)?;
    if class.decl_ty() != ty {
        return Err(ParseReason::BadType);
    }
    let n = count.parse::<u32>().map_err(|_| ParseReason::BadNumber)?;
    let slot = regs.get_mut(class);
    if *slot != 0 || n == 0 {
        return Err(ParseReason::BadDeclaration);
    }
    *slot = n;
    Ok(())
}

/// ` .align 4 .b8 name[64];`, or with `dynamic` ` .align 16 .b8 name[];` (size 0), either
/// followed by an optional ` // comment`.
fn parse_shared_decl(rest: &str, dynamic: bool) -> R<SharedDecl> {
    let (rest, comment) = match rest.split_once("//") {
        Some((decl, c)) => (decl, Some(c.strip_prefix(' ').unwrap_or(c).to_string())),
        None => (rest, None),
    };
    let rest = rest
        .trim()
        .strip_suffix(';')
        .ok_or(ParseReason::MissingSemicolon)?;
    let mut words = rest.split_whitespace();
    if words.next() != Some(".align") {
        return Err(ParseReason::BadDeclaration);
    }
    let align = words
        .next()
        .ok_or(ParseReason::BadDeclaration)?
        .parse::<u32>()
        .map_err(|_| ParseReason::BadNumber)?;
    if words.next() != Some(".b8") {
        return Err(ParseReason::BadDeclaration);
    }
    let arr = words.next().ok_or(ParseReason::BadDeclaration)?;
    if words.next().is_some() {
        return Err(ParseReason::BadDeclaration);
    }
    let (name, bytes) = arr
        .strip_suffix(']')
        .and_then(|a| a.split_once('['))
        .ok_or(ParseReason::BadDeclaration)?;
    if !is_symbol(name) {
        return Err(ParseReason::BadDeclaration);
    }
    let bytes = match (dynamic, bytes) {
        (true, "") => 0,
        (true, _) => return Err(ParseReason::BadDeclaration),
        (false, b) => b.parse::<u32>().map_err(|_| ParseReason::BadNumber)?,
    };
    Ok(SharedDecl {
        name: name.to_string(),
        align,
        bytes,
        comment,
    })
}

/// ` .align 4 .b8 name[8] = {1, 0, 0, 0, 2, 0, 0, 0};`, with exactly as many bytes as the
/// size says, followed by an optional ` // comment`.
fn parse_const_decl(rest: &str) -> R<ConstDecl> {
    let (decl, init) = rest.split_once('=').ok_or(ParseReason::BadDeclaration)?;
    let (init, comment) = match init.split_once("//") {
        Some((i, c)) => (i, Some(c.strip_prefix(' ').unwrap_or(c).to_string())),
        None => (init, None),
    };
    let d = parse_shared_decl(&format!("{};", decl.trim_end()), false)?;
    let init = init
        .trim()
        .strip_suffix(';')
        .ok_or(ParseReason::MissingSemicolon)?
        .trim();
    let inner = init
        .strip_prefix('{')
        .and_then(|i| i.strip_suffix('}'))
        .ok_or(ParseReason::BadDeclaration)?;
    let data = inner
        .split(',')
        .map(|b| b.trim().parse::<u8>().map_err(|_| ParseReason::BadNumber))
        .collect::<R<Vec<u8>>>()?;
    if data.len() != d.bytes as usize || data.is_empty() {
        return Err(ParseReason::BadDeclaration);
    }
    Ok(ConstDecl {
        name: d.name,
        align: d.align,
        data,
        comment,
    })
}

/// A symbol name: non-empty, no whitespace or punctuation the format uses.
fn is_symbol(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with('%')
        && s.chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '$' || c == '.')
}

fn ty_of(name: &str) -> Option<Ty> {
    Ty::ALL.iter().copied().find(|t| t.name() == name)
}

fn parse_instr(line: &str, f: &Function) -> R<Instr> {
    let body = line
        .strip_suffix(';')
        .ok_or(ParseReason::MissingSemicolon)?
        .trim_end();
    let (guard, rest) = match body.strip_prefix('@') {
        Some(g) => {
            let (tok, rest) = g
                .split_once(char::is_whitespace)
                .ok_or(ParseReason::BadOperand)?;
            let (negate, tok) = match tok.strip_prefix('!') {
                Some(t) => (true, t),
                None => (false, tok),
            };
            let pred = parse_reg(tok)?;
            if pred.class != RegClass::Pred {
                return Err(ParseReason::BadRegister);
            }
            (Some(Guard { pred, negate }), rest.trim_start())
        }
        None => (None, body),
    };
    let (mn, ops) = match rest.split_once(char::is_whitespace) {
        Some((m, o)) => (m, o.trim()),
        None => (rest, ""),
    };
    let ops = split_operands(ops)?;
    let op = parse_op(mn, &ops, f)?;
    Ok(Instr { guard, op })
}

/// Splits on commas outside `{}` and `[]`.
fn split_operands(s: &str) -> R<Vec<&str>> {
    let mut out = Vec::new();
    if s.is_empty() {
        return Ok(out);
    }
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '{' | '[' => depth += 1,
            '}' | ']' => {
                depth -= 1;
                if depth < 0 {
                    return Err(ParseReason::BadOperand);
                }
            }
            ',' if depth == 0 => {
                out.push(s[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err(ParseReason::BadOperand);
    }
    out.push(s[start..].trim());
    if out.iter().any(|o| o.is_empty()) {
        return Err(ParseReason::BadOperand);
    }
    Ok(out)
}

fn want<const N: usize>(ops: &[&str]) -> R<[String; N]> {
    if ops.len() != N {
        return Err(ParseReason::OperandCount);
    }
    Ok(std::array::from_fn(|i| ops[i].to_string()))
}

fn parse_op(mn: &str, ops: &[&str], f: &Function) -> R<Op> {
    let parts: SmallVec<[&str; 6]> = mn.split('.').collect();
    let head = parts.first().copied().unwrap_or("");
    let reg = |s: &str| parse_reg(s);
    let opd = |s: &str| parse_operand(s, f);
    match head {
        "ld" if parts
            .get(1)
            .is_some_and(|p| Sem::ALL.iter().any(|s| sem_name(*s) == *p)) =>
        {
            parse_ld_ordered(&parts, ops, f)
        }
        "ld" | "st" => parse_ldst(head == "ld", &parts, ops, f),
        "mov" => {
            let [ty] = tys::<1>(&parts[1..])?;
            let [d, s] = want::<2>(ops)?;
            Ok(Op::Mov {
                ty,
                dst: reg(&d)?,
                src: opd(&s)?,
            })
        }
        "cvta" => {
            if mn != "cvta.to.global.u64" {
                return Err(ParseReason::UnknownMnemonic);
            }
            let [d, s] = want::<2>(ops)?;
            Ok(Op::CvtaToGlobal {
                dst: reg(&d)?,
                src: reg(&s)?,
            })
        }
        "fma" | "mad" => {
            let (wide, ty) = match parts[1..] {
                ["rn", t] if head == "fma" => (false, ty_of(t).filter(|t| t.is_float())),
                ["lo", t] if head == "mad" => (false, ty_of(t).filter(|t| !t.is_float())),
                ["wide", t] if head == "mad" => (true, ty_of(t)),
                _ => return Err(ParseReason::UnknownMnemonic),
            };
            let ty = ty.ok_or(ParseReason::BadType)?;
            let [d, a, b, c] = want::<4>(ops)?;
            let (dst, a, b, c) = (reg(&d)?, opd(&a)?, opd(&b)?, opd(&c)?);
            Ok(if wide {
                Op::MadWide { ty, dst, a, b, c }
            } else {
                Op::Mad { ty, dst, a, b, c }
            })
        }
        "setp" => {
            let [cmp, ty] = match parts[1..] {
                [c, t] => [c, t],
                _ => return Err(ParseReason::UnknownMnemonic),
            };
            let cmp = Cmp::ALL
                .iter()
                .copied()
                .find(|c| cmp_name(*c) == cmp)
                .ok_or(ParseReason::UnknownMnemonic)?;
            let ty = ty_of(ty).ok_or(ParseReason::BadType)?;
            let [d, a, b] = want::<3>(ops)?;
            Ok(Op::Setp {
                cmp,
                ty,
                dst: reg(&d)?,
                a: opd(&a)?,
                b: opd(&b)?,
            })
        }
        "selp" => {
            let [ty] = tys::<1>(&parts[1..])?;
            let [d, a, b, p] = want::<4>(ops)?;
            Ok(Op::Selp {
                ty,
                dst: reg(&d)?,
                a: opd(&a)?,
                b: opd(&b)?,
                p: reg(&p)?,
            })
        }
        "cvt" => {
            let mut rest = &parts[1..];
            let mut round = None;
            if let Some(r) = rest
                .first()
                .and_then(|r| Round::ALL.iter().copied().find(|x| round_name(*x) == *r))
            {
                round = Some(r);
                rest = &rest[1..];
            }
            let mut sat = false;
            if rest.first() == Some(&"sat") {
                sat = true;
                rest = &rest[1..];
            }
            let [dty, sty] = tys::<2>(rest)?;
            let [d, s] = want::<2>(ops)?;
            Ok(Op::Cvt {
                round,
                sat,
                dty,
                sty,
                dst: reg(&d)?,
                src: reg(&s)?,
            })
        }
        "bra" => {
            let uni = match parts[1..] {
                [] => false,
                ["uni"] => true,
                _ => return Err(ParseReason::UnknownMnemonic),
            };
            let [target] = want::<1>(ops)?;
            if !is_symbol(&target) {
                return Err(ParseReason::BadOperand);
            }
            Ok(Op::Bra { target, uni })
        }
        "ret" => {
            if parts.len() != 1 {
                return Err(ParseReason::UnknownMnemonic);
            }
            want::<0>(ops)?;
            Ok(Op::Ret)
        }
        "bar" => match parts[1..] {
            ["sync"] => {
                let n = |s: &str| s.parse::<u32>().map_err(|_| ParseReason::BadNumber);
                match ops {
                    [id] => Ok(Op::BarSync {
                        id: n(id)?,
                        count: None,
                    }),
                    [id, c] => Ok(Op::BarSync {
                        id: n(id)?,
                        count: Some(n(c)?),
                    }),
                    _ => Err(ParseReason::OperandCount),
                }
            }
            ["warp", "sync"] => {
                let [m] = want::<1>(ops)?;
                Ok(Op::BarWarpSync { mask: opd(&m)? })
            }
            _ => Err(ParseReason::UnknownMnemonic),
        },
        "shfl" => {
            let mode = match parts[1..] {
                ["sync", m, "b32"] => match m {
                    "up" => ShflMode::Up,
                    "down" => ShflMode::Down,
                    "bfly" => ShflMode::Bfly,
                    "idx" => ShflMode::Idx,
                    _ => return Err(ParseReason::UnknownMnemonic),
                },
                _ => return Err(ParseReason::UnknownMnemonic),
            };
            let [d, src, b, c, mask] = want::<5>(ops)?;
            let (dst, pred) = match d.split_once('|') {
                Some((d, p)) => (reg(d.trim())?, Some(reg(p.trim())?)),
                None => (reg(&d)?, None),
            };
            Ok(Op::Shfl {
                mode,
                dst,
                pred,
                src: opd(&src)?,
                b: opd(&b)?,
                c: opd(&c)?,
                mask: opd(&mask)?,
            })
        }
        "vote" => {
            let mode = match parts[1..] {
                ["sync", "all", "pred"] => VoteMode::All,
                ["sync", "any", "pred"] => VoteMode::Any,
                ["sync", "uni", "pred"] => VoteMode::Uni,
                ["sync", "ballot", "b32"] => VoteMode::Ballot,
                _ => return Err(ParseReason::UnknownMnemonic),
            };
            let [d, s, m] = want::<3>(ops)?;
            let (negate, s) = match s.strip_prefix('!') {
                Some(s) => (true, s),
                None => (false, s.as_str()),
            };
            Ok(Op::Vote {
                mode,
                dst: reg(&d)?,
                src: reg(s)?,
                negate,
                mask: opd(&m)?,
            })
        }
        "match" => {
            let (all, ty) = match parts[1..] {
                ["any", "sync", t] => (false, t),
                ["all", "sync", t] => (true, t),
                _ => return Err(ParseReason::UnknownMnemonic),
            };
            let ty = ty_of(ty).ok_or(ParseReason::BadType)?;
            let [d, s, m] = want::<3>(ops)?;
            Ok(Op::Match {
                all,
                ty,
                dst: reg(&d)?,
                src: opd(&s)?,
                mask: opd(&m)?,
            })
        }
        "redux" => {
            let (op, ty) = match parts[1..] {
                ["sync", o, t] => (atom_op_of(o)?, ty_of(t).ok_or(ParseReason::BadType)?),
                _ => return Err(ParseReason::UnknownMnemonic),
            };
            let [d, s, m] = want::<3>(ops)?;
            Ok(Op::Redux {
                op,
                ty,
                dst: reg(&d)?,
                src: opd(&s)?,
                mask: opd(&m)?,
            })
        }
        "activemask" => {
            if parts[1..] != ["b32"] {
                return Err(ParseReason::UnknownMnemonic);
            }
            let [d] = want::<1>(ops)?;
            Ok(Op::Activemask { dst: reg(&d)? })
        }
        "atom" | "red" => {
            let (order, rest) = parse_order(&parts[1..])?;
            let (space, rest) = parse_space(rest)?;
            let (op, ty) = match rest {
                [o, t] => (atom_op_of(o)?, ty_of(t).ok_or(ParseReason::BadType)?),
                _ => return Err(ParseReason::UnknownMnemonic),
            };
            if head == "atom" {
                let (d, addr, a, b) = match ops {
                    [d, addr, a] => (*d, *addr, *a, None),
                    [d, addr, a, b] => (*d, *addr, *a, Some(opd(b)?)),
                    _ => return Err(ParseReason::OperandCount),
                };
                Ok(Op::Atom {
                    order,
                    space,
                    op,
                    ty,
                    dst: reg(d)?,
                    addr: parse_address(addr, space, f)?,
                    a: opd(a)?,
                    b,
                })
            } else {
                let [addr, a] = want::<2>(ops)?;
                Ok(Op::Red {
                    order,
                    space,
                    op,
                    ty,
                    addr: parse_address(&addr, space, f)?,
                    a: opd(&a)?,
                })
            }
        }
        "nanosleep" if parts[1..] == ["u32"] => {
            let [ns] = want::<1>(ops)?;
            match opd(&ns)? {
                Operand::Imm(v) if (0..=1_000_000).contains(&v) => {
                    Ok(Op::Nanosleep { ns: v as u32 })
                }
                _ => Err(ParseReason::UnknownMnemonic),
            }
        }
        "mapa" => {
            if parts[1..] != ["shared::cluster", "u32"] {
                return Err(ParseReason::UnknownMnemonic);
            }
            let [d, a, r] = want::<3>(ops)?;
            Ok(Op::Mapa {
                dst: reg(&d)?,
                src: opd(&a)?,
                rank: opd(&r)?,
            })
        }
        "barrier" => {
            let wait = match parts[1..] {
                ["cluster", "arrive"] => false,
                ["cluster", "wait"] => true,
                _ => return Err(ParseReason::UnknownMnemonic),
            };
            want::<0>(ops)?;
            Ok(Op::BarrierCluster { wait })
        }
        "membar" => {
            let scope = match parts[1..] {
                ["cta"] => Scope::Cta,
                ["gl"] => Scope::Gpu,
                ["sys"] => Scope::Sys,
                _ => return Err(ParseReason::UnknownMnemonic),
            };
            want::<0>(ops)?;
            Ok(Op::Membar { scope })
        }
        "and" | "or" | "xor" if parts[1..] == ["pred"] => {
            let op = match head {
                "and" => BinOp::And,
                "or" => BinOp::Or,
                _ => BinOp::Xor,
            };
            let [d, a, b] = want::<3>(ops)?;
            Ok(Op::PredBin {
                op,
                dst: reg(&d)?,
                a: reg(&a)?,
                b: reg(&b)?,
            })
        }
        "not" if parts[1..] == ["pred"] => {
            let [d, a] = want::<2>(ops)?;
            Ok(Op::PredNot {
                dst: reg(&d)?,
                a: reg(&a)?,
            })
        }
        _ => {
            let (prefix, ty) = mn.rsplit_once('.').ok_or(ParseReason::UnknownMnemonic)?;
            let ty = ty_of(ty).ok_or(ParseReason::UnknownMnemonic)?;
            if let Some(op) = BinOp::ALL
                .iter()
                .copied()
                .find(|op| bin_mnemonic(*op, ty) == prefix)
            {
                let [d, a, b] = want::<3>(ops)?;
                return Ok(Op::Bin {
                    op,
                    ty,
                    dst: reg(&d)?,
                    a: opd(&a)?,
                    b: opd(&b)?,
                });
            }
            if let Some(op) = UnOp::ALL
                .iter()
                .copied()
                .find(|op| un_mnemonic(*op, ty) == prefix)
            {
                let [d, a] = want::<2>(ops)?;
                return Ok(Op::Un {
                    op,
                    ty,
                    dst: reg(&d)?,
                    a: opd(&a)?,
                });
            }
            Err(ParseReason::UnknownMnemonic)
        }
    }
}

fn tys<const N: usize>(parts: &[&str]) -> R<[Ty; N]> {
    if parts.len() != N {
        return Err(ParseReason::BadType);
    }
    let mut out = [Ty::Pred; N];
    for (o, p) in out.iter_mut().zip(parts) {
        *o = ty_of(p).ok_or(ParseReason::BadType)?;
    }
    Ok(out)
}

fn atom_op_of(s: &str) -> R<AtomOp> {
    AtomOp::ALL
        .iter()
        .copied()
        .find(|o| atom_name(*o) == s)
        .ok_or(ParseReason::UnknownMnemonic)
}

/// An atomic's optional `.sem.scope` at the start of `parts`, and what follows it.
fn parse_order<'p, 'a>(parts: &'p [&'a str]) -> R<(Order, &'p [&'a str])> {
    let Some(sem) = parts
        .first()
        .and_then(|p| Sem::ALL.into_iter().find(|s| sem_name(*s) == *p))
    else {
        return Ok((None, parts));
    };
    let scope = parts
        .get(1)
        .and_then(|p| Scope::ALL.into_iter().find(|s| scope_name(*s) == *p))
        .ok_or(ParseReason::UnknownMnemonic)?;
    Ok((Some((sem, scope)), &parts[2..]))
}

/// A state space at the start of `parts` (`global`, `global.nc`, ...) and what follows it.
fn parse_space<'p, 'a>(parts: &'p [&'a str]) -> R<(Space, &'p [&'a str])> {
    match parts {
        ["param", rest @ ..] => Ok((Space::Param, rest)),
        ["global", "nc", rest @ ..] => Ok((Space::GlobalNc, rest)),
        ["global", rest @ ..] => Ok((Space::Global, rest)),
        ["shared", rest @ ..] => Ok((Space::Shared, rest)),
        ["shared::cluster", rest @ ..] => Ok((Space::SharedCluster, rest)),
        ["local", rest @ ..] => Ok((Space::Local, rest)),
        ["const", rest @ ..] => Ok((Space::Const, rest)),
        _ => Err(ParseReason::UnknownMnemonic),
    }
}

fn parse_reg_list(s: &str, n: usize) -> R<SmallVec<[Reg; 4]>> {
    let regs: SmallVec<[Reg; 4]> = match s.strip_prefix('{') {
        Some(inner) => {
            if n == 1 {
                return Err(ParseReason::OperandCount);
            }
            let inner = inner.strip_suffix('}').ok_or(ParseReason::BadOperand)?;
            inner
                .split(',')
                .map(|t| parse_reg(t.trim()))
                .collect::<R<_>>()?
        }
        None => smallvec::smallvec![parse_reg(s)?],
    };
    if regs.len() != n {
        return Err(ParseReason::OperandCount);
    }
    Ok(regs)
}

/// `[base]`, `[base+off]`, `[base+-off]` or `[base-off]`.
fn parse_address(s: &str, space: Space, f: &Function) -> R<Address> {
    let inner = s
        .strip_prefix('[')
        .and_then(|s| s.strip_suffix(']'))
        .ok_or(ParseReason::BadAddress)?
        .trim();
    let (base, offset) = match inner.find(['+', '-']) {
        Some(i) => {
            let (b, o) = inner.split_at(i);
            let o = o.strip_prefix('+').unwrap_or(o).trim();
            (
                b.trim(),
                o.parse::<i64>().map_err(|_| ParseReason::BadAddress)?,
            )
        }
        None => (inner, 0),
    };
    let base = if base.starts_with('%') {
        AddrBase::Reg(parse_reg(base)?)
    } else {
        let param = f.params.iter().any(|p| p.name == base);
        let index = |i: usize| u32::try_from(i).map_err(|_| ParseReason::BadAddress);
        let symbol = match space {
            Space::Local => f.local.iter().position(|d| d.name == base).map(index),
            Space::Const => f.consts.iter().position(|d| d.name == base).map(index),
            _ => f.shared.iter().position(|d| d.name == base).map(index),
        };
        match (space, param, symbol) {
            (Space::Param, true, _) => AddrBase::Param(base.to_string()),
            (Space::Local, _, Some(i)) => AddrBase::Local(i?),
            (Space::Const, _, Some(i)) => AddrBase::Const(i?),
            (_, _, Some(i)) => AddrBase::Shared(i?),
            (_, true, None) => AddrBase::Param(base.to_string()),
            _ => return Err(ParseReason::UnknownSymbol),
        }
    };
    Ok(Address { base, offset })
}

fn parse_reg(s: &str) -> R<Reg> {
    let body = s.strip_prefix('%').ok_or(ParseReason::BadRegister)?;
    let (class, digits) = if let Some(d) = body.strip_prefix("rd") {
        (RegClass::B64, d)
    } else if let Some(d) = body.strip_prefix("fd") {
        (RegClass::F64, d)
    } else if let Some(d) = body.strip_prefix('r') {
        (RegClass::B32, d)
    } else if let Some(d) = body.strip_prefix('f') {
        (RegClass::F32, d)
    } else if let Some(d) = body.strip_prefix('p') {
        (RegClass::Pred, d)
    } else {
        return Err(ParseReason::BadRegister);
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(ParseReason::BadRegister);
    }
    let index = digits
        .parse::<u32>()
        .map_err(|_| ParseReason::BadRegister)?;
    Ok(Reg { class, index })
}

fn parse_operand(s: &str, f: &Function) -> R<Operand> {
    if s.starts_with('%') {
        if let Some(sp) = Special::ALL
            .iter()
            .copied()
            .find(|sp| special_name(*sp) == s)
        {
            return Ok(Operand::Special(sp));
        }
        return parse_reg(s).map(Operand::Reg);
    }
    if let Some(hex) = s.strip_prefix("0f") {
        if hex.len() == 8 {
            let bits = u32::from_str_radix(hex, 16).map_err(|_| ParseReason::BadNumber)?;
            return Ok(Operand::F32(f32::from_bits(bits)));
        }
        return Err(ParseReason::BadNumber);
    }
    if let Some(hex) = s.strip_prefix("0d") {
        if hex.len() == 16 {
            let bits = u64::from_str_radix(hex, 16).map_err(|_| ParseReason::BadNumber)?;
            return Ok(Operand::F64(f64::from_bits(bits)));
        }
        return Err(ParseReason::BadNumber);
    }
    if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        let v = u64::from_str_radix(hex, 16).map_err(|_| ParseReason::BadNumber)?;
        return Ok(Operand::Imm(v as i64));
    }
    let first = s.chars().next().ok_or(ParseReason::BadOperand)?;
    if first == '-' || first.is_ascii_digit() {
        return s
            .parse::<i64>()
            .map(Operand::Imm)
            .map_err(|_| ParseReason::BadNumber);
    }
    let index = |i: usize| u32::try_from(i).map_err(|_| ParseReason::BadOperand);
    if let Some(i) = f.shared.iter().position(|d| d.name == s) {
        return Ok(Operand::SharedAddr(index(i)?));
    }
    if let Some(i) = f.local.iter().position(|d| d.name == s) {
        return Ok(Operand::LocalAddr(index(i)?));
    }
    match f.consts.iter().position(|d| d.name == s) {
        Some(i) => Ok(Operand::ConstAddr(index(i)?)),
        None => Err(ParseReason::UnknownSymbol),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_hold_distinct_variants() {
        // A variant missing from a table makes its instructions unparsable; the integration
        // tests round-trip every variant, and these checks keep each table free of repeats.
        fn distinct<T: PartialEq>(xs: &[T]) -> bool {
            xs.iter()
                .enumerate()
                .all(|(i, x)| xs[..i].iter().all(|y| y != x))
        }
        assert!(distinct(&BinOp::ALL));
        assert!(distinct(&UnOp::ALL));
        assert!(distinct(&Cmp::ALL));
        assert!(distinct(&Round::ALL));
        assert!(distinct(&AtomOp::ALL));
        assert!(distinct(&Special::ALL));
    }

    #[test]
    fn errors_name_the_line() {
        let text = ".version 7.0\n.target sm_80\n.address_size 64\n\n.visible .entry k(\n)\n{\n\tfrobnicate.u32 %r1;\n}\n";
        let e = parse(text).unwrap_err();
        assert_eq!(e.line, 8);
        assert_eq!(e.text, "frobnicate.u32 %r1;");
        assert_eq!(e.reason, ParseReason::UnknownMnemonic);
    }

    #[test]
    fn missing_close_brace_is_an_error() {
        let text = ".version 7.0\n.target sm_80\n.visible .entry k(\n)\n{\n\tret;\n";
        let e = parse(text).unwrap_err();
        assert_eq!(e.reason, ParseReason::UnexpectedEnd);
    }

    #[test]
    fn address_forms() {
        let f = Function {
            name: "k".into(),
            params: vec![Param {
                name: "p".into(),
                ty: Ty::U64,
            }],
            reqntid: None,
            reqnctapercluster: None,
            explicitcluster: false,
            maxnreg: None,
            minnctapersm: None,
            shared: vec![SharedDecl {
                name: "s".into(),
                align: 4,
                bytes: 16,
                comment: None,
            }],
            local: vec![LocalDecl {
                name: "l".into(),
                align: 4,
                bytes: 8,
                comment: None,
            }],
            consts: vec![ConstDecl {
                name: "c".into(),
                align: 4,
                data: vec![1, 2, 3, 4],
                comment: None,
            }],
            strings: vec![],
            regs: RegCounts::default(),
            body: vec![],
        };
        let a = parse_address("[%rd1+-8]", Space::Global, &f).unwrap();
        assert_eq!(a.offset, -8);
        let a = parse_address("[%rd1-8]", Space::Global, &f).unwrap();
        assert_eq!(a.offset, -8);
        let a = parse_address("[s+4]", Space::Shared, &f).unwrap();
        assert_eq!(a.base, AddrBase::Shared(0));
        let a = parse_address("[l+4]", Space::Local, &f).unwrap();
        assert_eq!(a.base, AddrBase::Local(0));
        let a = parse_address("[c]", Space::Const, &f).unwrap();
        assert_eq!(a.base, AddrBase::Const(0));
        // A symbol of another space is no symbol there.
        assert!(parse_address("[l]", Space::Shared, &f).is_err());
        assert!(parse_address("[s]", Space::Const, &f).is_err());
        let a = parse_address("[p]", Space::Param, &f).unwrap();
        assert_eq!(a.base, AddrBase::Param("p".into()));
        assert!(parse_address("[q]", Space::Param, &f).is_err());
        assert!(parse_address("%rd1", Space::Global, &f).is_err());
    }
}
