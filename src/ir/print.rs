//! The kernel's text form, used in error listings and `explain()`.

use super::dtype::DType;
use super::entities::{ExprId, GroupId, OpId, RegionId};
use super::error::VerifyError;
use super::expr::{BinaryOp, CmpOp, ExprKind, IndexKind, UnaryOp, VType};
use super::format::unparse;
use super::ops::*;
use rustc_hash::FxHashMap;
use std::fmt::Write;

/// The kernel as text, with each error printed under the op it concerns (errors with no op
/// come first).
pub fn listing(ir: &Ir, errors: &[VerifyError]) -> String {
    let mut out = String::new();
    let b = ir.block.dims;
    let cluster = ir
        .cluster
        .map(|c| match c.dims {
            Some(dims) => format!(" cluster={dims:?}"),
            None => " cluster=at launch".to_string(),
        })
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "kernel {} block=[{}, {}, {}]{cluster} items_per_thread={}",
        ir.name, b[0], b[1], b[2], ir.items_per_thread
    );
    for e in errors.iter().filter(|e| e.op.is_none()) {
        let _ = writeln!(out, "  ! error: {e}");
    }
    for (i, p) in ir.params.iter().enumerate() {
        let _ = writeln!(
            out,
            "  param{i} {}: {:?} {}   ; {}",
            p.name, p.role, p.dtype, p.loc
        );
    }
    for (i, d) in ir.datas.iter().enumerate() {
        let _ = writeln!(out, "  d{i}: {} x {}   ; {}", d.dtype, d.items, d.loc);
    }
    for (i, a) in ir.arrays.iter().enumerate() {
        if let Some(root) = a.view_of {
            let _ = writeln!(
                out,
                "  smem{i}: shared {} x {} viewing {root}   ; {}",
                a.dtype, a.len, a.loc
            );
            continue;
        }
        let shape = if a.dynamic {
            "dynamic (sized at launch)".to_string()
        } else {
            (a.dims.iter().map(u32::to_string))
                .collect::<Vec<_>>()
                .join(" x ")
        };
        let inside = if a.inside { " (indices inside)" } else { "" };
        let _ = writeln!(
            out,
            "  smem{i}: shared {} x {shape}{inside}   ; {}",
            a.dtype, a.loc
        );
    }
    for (i, a) in ir.locals.iter().enumerate() {
        let _ = writeln!(
            out,
            "  local{i}: local {} x {}   ; {}",
            a.dtype, a.len, a.loc
        );
    }
    for (i, a) in ir.consts.iter().enumerate() {
        let shown: Vec<String> = (a.data.iter().take(8))
            .map(|&b| const_text(b, VType::D(a.dtype)))
            .collect();
        let more = if a.data.len() > 8 { ", .." } else { "" };
        let _ = writeln!(
            out,
            "  cmem{i}: const {} x {} = [{}{more}]   ; {}",
            a.dtype,
            a.data.len(),
            shown.join(", "),
            a.loc
        );
    }
    for (i, st) in ir.storages.iter().enumerate() {
        let _ = writeln!(
            out,
            "  storage{i}: temp storage size={:?} align={:?} auto_sync={} {:?}   ; {}",
            st.size, st.align, st.auto_sync, st.sharing, st.loc
        );
    }
    listing_ops(ir, errors, &mut out);
    out
}

/// Indentation stops growing past this many levels (the listing of a kernel nested deeper than
/// the verifier allows stays linear in its size).
const MAX_INDENT: usize = 64;

/// The ops of the body and every region nested in it, indented by depth. The walk keeps its
/// own stack and enters each region once, so it ends on any IR, verified or not.
fn listing_ops(ir: &Ir, errors: &[VerifyError], out: &mut String) {
    let mut by_op: FxHashMap<OpId, Vec<&VerifyError>> = FxHashMap::default();
    for e in errors {
        if let Some(op) = e.op {
            by_op.entry(op).or_default().push(e);
        }
    }
    enum Work {
        /// The ops of a region from the `usize`th on, at a depth.
        Ops(RegionId, usize, usize),
        Text(String),
    }
    let mut entered = vec![false; ir.regions.len()];
    let mut stack = Vec::new();
    if let Some(e) = entered.get_mut(ir.body.index()) {
        *e = true;
        stack.push(Work::Ops(ir.body, 0, 1));
    }
    while let Some(work) = stack.pop() {
        let (r, next, depth) = match work {
            Work::Text(t) => {
                out.push_str(&t);
                continue;
            }
            Work::Ops(r, next, depth) => (r, next, depth),
        };
        let Some(&op) = ir.regions[r.index()].get(next) else {
            continue;
        };
        stack.push(Work::Ops(r, next + 1, depth));
        let pad = "  ".repeat(depth.min(MAX_INDENT));
        let Some(data) = ir.ops.get(op.index()) else {
            let _ = writeln!(out, "{pad}{op}: <unknown>");
            continue;
        };
        let _ = writeln!(out, "{pad}{op}: {}   ; {}", describe(ir, op), data.loc);
        for e in by_op.get(&op).into_iter().flatten() {
            let _ = writeln!(out, "{pad}  ! error: {e}");
        }
        for sub in data.kind.regions().into_iter().rev() {
            stack.push(Work::Text(format!("{pad}}}\n")));
            match entered.get_mut(sub.index()) {
                Some(e) if !*e => {
                    *e = true;
                    stack.push(Work::Ops(sub, 0, depth + 1));
                }
                _ => stack.push(Work::Text(format!("{pad}  {sub} (not shown again)\n"))),
            }
            stack.push(Work::Text(format!("{pad}{{\n")));
        }
    }
}

/// One op as text, e.g. `d1 = map(d0) { arg0 * 2 + 1 }`.
pub fn describe(ir: &Ir, op: OpId) -> String {
    let Some(data) = ir.ops.get(op.index()) else {
        return format!("{op}: <unknown>");
    };
    let e = |id: ExprId| expr_text(ir, id);
    let opt = |o: Option<ExprId>| o.map(e).unwrap_or_else(|| "default".into());
    let valid = |v: Option<ValidItems>| match v {
        None => " valid=default".to_string(),
        Some(ValidItems {
            count,
            of: ValidOf::Group,
        }) => format!(" valid={}", e(count)),
        Some(ValidItems {
            count,
            of: ValidOf::Block,
        }) => format!(" block_valid={}", e(count)),
    };
    match &data.kind {
        OpKind::Load(t) => format!(
            "{} = load.{:?} {} param{} offset={}{}{}",
            t.data,
            t.algorithm,
            group_text(ir, t),
            t.param.0,
            opt(t.offset),
            valid(t.valid),
            t.oob_default
                .map(|b| format!(" oob_default=0x{b:x}"))
                .unwrap_or_default()
        ),
        OpKind::Store(t) => format!(
            "store.{:?} {} param{} <- {} offset={}{}",
            t.algorithm,
            group_text(ir, t),
            t.param.0,
            t.data,
            opt(t.offset),
            valid(t.valid)
        ),
        OpKind::Map { dst, srcs, expr } => {
            let s: Vec<String> = srcs.iter().map(|d| d.to_string()).collect();
            format!("{dst} = map({}) {{ {} }}", s.join(", "), e(*expr))
        }
        OpKind::SetItem { dst, item, expr } => format!("{dst}[{item}] = {}", e(*expr)),
        OpKind::Assign { dst, src } => format!("{dst} = {src}"),
        OpKind::If { cond, .. } => format!("if {}", e(*cond)),
        OpKind::For {
            start, end, step, ..
        } => {
            let step = step.map(|s| format!(" step {}", e(s))).unwrap_or_default();
            format!("for i{} in {}..{}{step}", op.0, e(*start), e(*end))
        }
        OpKind::While { cond, .. } => format!("while {}", e(*cond)),
        OpKind::Break => "break".to_string(),
        OpKind::Continue => "continue".to_string(),
        OpKind::ReturnIf { cond } => format!("return if {}", e(*cond)),
        OpKind::Assert { cond, message } => format!("assert {}, {message:?}", e(*cond)),
        OpKind::Tiles { n, .. } => format!("tiles t{} of {}", op.0, e(*n)),
        OpKind::SharedWrite {
            array,
            index,
            value,
        } => format!("{array}[{}] = {}", e(*index), e(*value)),
        OpKind::LocalWrite {
            array,
            index,
            value,
        } => format!("{array}[{}] = {}", e(*index), e(*value)),
        OpKind::GlobalWrite {
            param,
            index,
            value,
        } => format!("param{}[{}] = {}", param.0, e(*index), e(*value)),
        OpKind::ReadRun { param, index, dst } => {
            format!("{dst} = param{}[{}..]", param.0, e(*index))
        }
        OpKind::WriteRun { param, index, src } => {
            format!("param{}[{}..] = {src}", param.0, e(*index))
        }
        OpKind::Atomic(a) => {
            let memory = match a.memory {
                AtomicMemory::Global(p) => format!("param{}", p.0),
                AtomicMemory::Shared(arr) => arr.to_string(),
            };
            let compare = a.compare.map(|c| format!("{}, ", e(c))).unwrap_or_default();
            format!(
                "{}[0] = atomic.{:?}.{:?}.{:?} {memory}[{}], {compare}{}",
                a.old,
                a.op,
                a.order,
                a.scope,
                e(a.index),
                e(a.value)
            )
        }
        OpKind::SyncBlock => "sync_block".into(),
        OpKind::Nanosleep { ns } => format!("nanosleep {ns}"),
        OpKind::Lanes(l) => {
            let args: Vec<String> = l.value.into_iter().chain(l.lane).map(e).collect();
            let out = l.out.map(|d| format!("{d}[0] = ")).unwrap_or_default();
            let group = match l.members {
                Some(m) => format!("partition({m})"),
                None => group_name(ir, l.group),
            };
            format!("{out}{group}.{}({})", l.op.name(), args.join(", "))
        }
        OpKind::SyncGrid => "sync_grid".into(),
        OpKind::Cluster(c) => {
            use crate::ir::ops::ClusterOp as C;
            match c {
                C::Sync | C::Arrive | C::Wait => c.name().into(),
                C::Read {
                    array,
                    rank,
                    index,
                    dst,
                } => format!("{dst}[0] = {array}@rank({})[{}]", e(*rank), e(*index)),
                C::Write {
                    array,
                    rank,
                    index,
                    value,
                } => format!("{array}@rank({})[{}] = {}", e(*rank), e(*index), e(*value)),
                C::Atomic {
                    array,
                    op,
                    rank,
                    index,
                    value,
                    compare,
                    order,
                    scope,
                    old,
                } => {
                    let compare = compare.map(|c| format!("{}, ", e(c))).unwrap_or_default();
                    format!(
                        "{old}[0] = atomic.{op:?}.{order:?}.{scope:?} {array}@rank({})[{}], \
                         {compare}{}",
                        e(*rank),
                        e(*index),
                        e(*value)
                    )
                }
            }
        }
        OpKind::Print { pieces, args } => {
            let args: Vec<String> = args.iter().map(|a| e(*a)).collect();
            format!("print {:?} ({})", unparse(pieces), args.join(", "))
        }
        OpKind::Scatter {
            src,
            ranks,
            flags,
            dst,
            to,
            holes,
            permutation,
            inside,
            defined,
            ..
        } => format!(
            "{dst} = scatter {src} by {ranks}{} to {to:?}{}{}{}{}",
            flags.map(|f| format!(" where {f}")).unwrap_or_default(),
            holes.map(|h| format!(" holes={h:#x}")).unwrap_or_default(),
            if *permutation { " permutation" } else { "" },
            if *inside { " inside" } else { "" },
            if *defined { " defined" } else { "" }
        ),
        OpKind::Neighbor(nb) => format!("{} = {:?} {}", nb.dst, nb.kind, nb.src),
        OpKind::Exchange { src, dst, to, .. } => format!("{dst} = exchange {src} to {to:?}"),
        OpKind::Scan(sc) => format!(
            "{} = scan.{} {:?} {}{}",
            sc.dst,
            if sc.inclusive {
                "inclusive"
            } else {
                "exclusive"
            },
            sc.op,
            sc.src,
            sc.initial
                .map(|v| format!(" initial={}", e(v)))
                .unwrap_or_default()
        ),
        OpKind::Reduce(r) => format!(
            "{} = reduce.{:?}{} {:?} {}{}",
            r.dst,
            r.algorithm,
            if r.broadcast { ".broadcast" } else { "" },
            r.op,
            r.src,
            r.valid
                .map(|v| format!(" valid={}", e(v)))
                .unwrap_or_default()
        ),
    }
}

fn group_text(ir: &Ir, t: &Transfer) -> String {
    group_name(ir, t.group)
}

fn group_name(ir: &Ir, g: GroupId) -> String {
    match ir.groups.get(g.index()).map(|g| g.kind) {
        Some(GroupKind::Block) => "block".into(),
        Some(GroupKind::LogicalWarp { width }) => format!("warp{width}"),
        Some(GroupKind::Warps { warps }) => format!("warps{warps}"),
        None => "?".into(),
    }
}

/// Characters of one expression's text past which the rest is elided.
const EXPR_TEXT_BUDGET: usize = 400;

/// How deep an expression's text is written out before a subtree is named by its id.
const EXPR_TEXT_DEPTH: usize = 12;

/// An expression as infix text with the fewest parentheses that keep its meaning, e.g.
/// `n - blockIdx.x * 512` or `x[0] < 10 ? x[0] as f32 : 0.5`. Operators bind as in Rust (with
/// C's `c ? a : b` for selects, loosest of all); operators of equal precedence group to the
/// left, so a right operand of equal precedence keeps its parentheses (`a - (b - c)`).
/// Minimum, maximum, fused multiply-add and the math functions are written as calls. Depth
/// limited and elided past a few hundred characters (shared subtrees are written out each time
/// they occur).
pub fn expr_text(ir: &Ir, id: ExprId) -> String {
    let mut s = String::new();
    expr_into(ir, id, &mut s, 0);
    s
}

/// Binding strength of an expression's outermost operator (higher binds tighter).
fn precedence(kind: &ExprKind<ExprId>, ty: VType) -> u8 {
    match kind {
        ExprKind::Select(..) => 1,
        ExprKind::Binary(BinaryOp::Or, ..) if ty == VType::Bool => 2,
        ExprKind::Binary(BinaryOp::And, ..) if ty == VType::Bool => 3,
        ExprKind::Cmp(..) => 4,
        ExprKind::Binary(BinaryOp::Or, ..) => 5,
        ExprKind::Binary(BinaryOp::Xor, ..) => 6,
        ExprKind::Binary(BinaryOp::And, ..) => 7,
        ExprKind::Binary(BinaryOp::Shl | BinaryOp::Shr, ..) => 8,
        ExprKind::Binary(BinaryOp::Add | BinaryOp::Sub, ..) => 9,
        ExprKind::Binary(BinaryOp::Mul | BinaryOp::Div | BinaryOp::Rem, ..) => 10,
        ExprKind::Cast(_) => 11,
        ExprKind::Unary(UnaryOp::Neg | UnaryOp::Not, _) => 12,
        // Constants (a negative one prints with its sign), calls, indexing, names.
        ExprKind::Const(_) => 12,
        _ => 13,
    }
}

fn binary_symbol(op: BinaryOp, ty: VType) -> Option<&'static str> {
    let boolean = ty == VType::Bool;
    Some(match op {
        BinaryOp::Add => "+",
        BinaryOp::Sub => "-",
        BinaryOp::Mul => "*",
        BinaryOp::Div => "/",
        BinaryOp::Rem => "%",
        BinaryOp::And if boolean => "&&",
        BinaryOp::Or if boolean => "||",
        BinaryOp::And => "&",
        BinaryOp::Or => "|",
        BinaryOp::Xor => "^",
        BinaryOp::Shl => "<<",
        BinaryOp::Shr => ">>",
        BinaryOp::Min
        | BinaryOp::Max
        | BinaryOp::MulHi
        | BinaryOp::Atan2
        | BinaryOp::Pow
        | BinaryOp::Hypot
        | BinaryOp::Powi => return None,
    })
}

fn cmp_symbol(op: CmpOp) -> &'static str {
    match op {
        CmpOp::Eq => "==",
        CmpOp::Ne => "!=",
        CmpOp::Lt => "<",
        CmpOp::Le => "<=",
        CmpOp::Gt => ">",
        CmpOp::Ge => ">=",
    }
}

pub(crate) fn unary_name(op: UnaryOp) -> &'static str {
    match op {
        UnaryOp::Neg => "-",
        UnaryOp::Not => "!",
        UnaryOp::Abs => "abs",
        UnaryOp::Sqrt => "sqrt",
        UnaryOp::Rsqrt => "rsqrt",
        UnaryOp::Rcp => "rcp",
        UnaryOp::Exp2 => "exp2",
        UnaryOp::Log2 => "log2",
        UnaryOp::Sin => "sin",
        UnaryOp::Cos => "cos",
        UnaryOp::Tanh => "tanh",
        UnaryOp::Exp => "exp",
        UnaryOp::Exp10 => "exp10",
        UnaryOp::Expm1 => "expm1",
        UnaryOp::Ln => "ln",
        UnaryOp::Log10 => "log10",
        UnaryOp::Log1p => "log1p",
        UnaryOp::Tan => "tan",
        UnaryOp::Asin => "asin",
        UnaryOp::Acos => "acos",
        UnaryOp::Atan => "atan",
        UnaryOp::Sinh => "sinh",
        UnaryOp::Cosh => "cosh",
        UnaryOp::Cbrt => "cbrt",
        UnaryOp::Erf => "erf",
        UnaryOp::Erfc => "erfc",
        UnaryOp::Bitcast => "bitcast",
        UnaryOp::Floor => "floor",
        UnaryOp::Ceil => "ceil",
        UnaryOp::Trunc => "trunc",
        UnaryOp::Round => "round",
        UnaryOp::Popc => "popc",
        UnaryOp::Clz => "clz",
        UnaryOp::Brev => "brev",
        UnaryOp::IsNan => "is_nan",
    }
}

/// A built-in index as CUDA C++ spells it where it has a spelling (`threadIdx.x` for the rank
/// of a one-dimensional block).
fn index_name(ir: &Ir, k: IndexKind) -> String {
    let flat = ir.block.dims[1] == 1 && ir.block.dims[2] == 1;
    match k {
        IndexKind::ThreadRank if flat => "threadIdx.x".into(),
        IndexKind::ThreadRank => "thread_rank".into(),
        IndexKind::Lane => "lane".into(),
        IndexKind::WarpRank => "warp".into(),
        IndexKind::BlockIndex => "blockIdx.x".into(),
        IndexKind::GridBlocks => "gridDim.x".into(),
        IndexKind::BlockThreads if flat => "blockDim.x".into(),
        IndexKind::BlockThreads => "block_threads".into(),
        IndexKind::ThreadIdx(a) => format!("threadIdx.{}", a.name()),
        IndexKind::BlockIdx(a) => format!("blockIdx.{}", a.name()),
        IndexKind::BlockDim(a) => format!("blockDim.{}", a.name()),
        IndexKind::GridDim(a) => format!("gridDim.{}", a.name()),
        IndexKind::ClusterDim(a) => format!("clusterDim.{}", a.name()),
        IndexKind::Item => "item".into(),
    }
}

/// A constant of type `ty` from its bits: integers by their value (signed ones sign-extended
/// from their width), floats as Rust prints them, predicates as `true`/`false`.
fn const_text(bits: u64, ty: VType) -> String {
    match ty {
        VType::Bool => (bits != 0).to_string(),
        VType::D(d) => match d {
            DType::F32 => format!("{:?}", f32::from_bits(bits as u32)),
            DType::F64 => format!("{:?}", f64::from_bits(bits)),
            DType::I8 => (bits as i8).to_string(),
            DType::I16 => (bits as i16).to_string(),
            DType::I32 => (bits as i32).to_string(),
            DType::I64 => (bits as i64).to_string(),
            DType::U8 => (bits as u8).to_string(),
            DType::U16 => (bits as u16).to_string(),
            DType::U32 => (bits as u32).to_string(),
            DType::U64 => bits.to_string(),
        },
    }
}

fn expr_into(ir: &Ir, id: ExprId, out: &mut String, depth: usize) {
    let Some(n) = ir.exprs.get(id) else {
        out.push('?');
        return;
    };
    if out.len() > EXPR_TEXT_BUDGET {
        if !out.ends_with("..") {
            out.push_str("..");
        }
        return;
    }
    if depth > EXPR_TEXT_DEPTH {
        let _ = write!(out, "{id}");
        return;
    }
    let mine = precedence(&n.kind, n.ty);
    // A child written inside this node's text, in parentheses when it binds looser than
    // `min` (operands of calls and brackets take 0: never).
    let sub = |c: ExprId, min: u8, out: &mut String| {
        let child = ir.exprs.get(c).map_or(13, |k| precedence(&k.kind, k.ty));
        let wrap = child < min && depth < EXPR_TEXT_DEPTH;
        if wrap {
            out.push('(');
        }
        expr_into(ir, c, out, depth + 1);
        if wrap {
            out.push(')');
        }
    };
    let args = |children: &[ExprId], out: &mut String| {
        out.push('(');
        for (i, &c) in children.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            sub(c, 0, out);
        }
        out.push(')');
    };
    match &n.kind {
        ExprKind::Const(bits) => out.push_str(&const_text(*bits, n.ty)),
        ExprKind::Param(p) => {
            let name = ir.params.get(p.index()).map(|d| d.name.as_str());
            out.push_str(name.unwrap_or("?"));
        }
        ExprKind::Arg(i) => {
            let _ = write!(out, "arg{i}");
        }
        ExprKind::Item { data, item } => {
            let _ = write!(out, "{data}[{item}]");
        }
        ExprKind::Index(k) => out.push_str(&index_name(ir, *k)),
        ExprKind::LoopVar { op, field } => {
            match ir.ops.get(op.index()).map(|o| &o.kind) {
                Some(OpKind::Tiles { .. }) => {
                    let name = ["index", "origin", "valid"].get(usize::from(*field));
                    let _ = write!(out, "t{}.{}", op.0, name.unwrap_or(&"?"));
                }
                Some(OpKind::For { .. }) if *field == 0 => {
                    let _ = write!(out, "i{}", op.0);
                }
                _ => {
                    let _ = write!(out, "{op}.{field}");
                }
            };
        }
        ExprKind::Unary(o @ (UnaryOp::Neg | UnaryOp::Not), a) => {
            out.push_str(unary_name(*o));
            // `-(-x)` and `-(-1)`, not `--x`.
            let signed = ir.exprs.get(*a).is_some_and(|k| match k.kind {
                ExprKind::Unary(UnaryOp::Neg, _) => true,
                ExprKind::Const(bits) => const_text(bits, k.ty).starts_with('-'),
                _ => false,
            });
            if signed && *o == UnaryOp::Neg {
                out.push('(');
                expr_into(ir, *a, out, depth + 1);
                out.push(')');
            } else {
                sub(*a, mine, out);
            }
        }
        ExprKind::Unary(o, a) => {
            out.push_str(unary_name(*o));
            args(&[*a], out);
        }
        ExprKind::Binary(o, a, b) => match binary_symbol(*o, n.ty) {
            Some(sym) => {
                sub(*a, mine, out);
                let _ = write!(out, " {sym} ");
                sub(*b, mine + 1, out);
            }
            None => {
                out.push_str(match o {
                    BinaryOp::Min => "min",
                    BinaryOp::MulHi => "mul_hi",
                    BinaryOp::Atan2 => "atan2",
                    BinaryOp::Pow => "pow",
                    BinaryOp::Hypot => "hypot",
                    BinaryOp::Powi => "powi",
                    _ => "max",
                });
                args(&[*a, *b], out);
            }
        },
        ExprKind::Cmp(o, a, b) => {
            // Comparisons do not chain: both sides bind tighter.
            sub(*a, mine + 1, out);
            let _ = write!(out, " {} ", cmp_symbol(*o));
            sub(*b, mine + 1, out);
        }
        ExprKind::Select(c, a, b) => {
            sub(*c, mine + 1, out);
            out.push_str(" ? ");
            sub(*a, mine + 1, out);
            out.push_str(" : ");
            // `c ? a : d ? e : f` groups to the right, as in C.
            sub(*b, mine, out);
        }
        ExprKind::Cast(a) => {
            sub(*a, mine, out);
            let _ = write!(out, " as {}", n.ty);
        }
        ExprKind::SharedRead(arr, i) => {
            let _ = write!(out, "{arr}[");
            sub(*i, 0, out);
            out.push(']');
        }
        ExprKind::LocalRead(arr, i) => {
            let _ = write!(out, "{arr}[");
            sub(*i, 0, out);
            out.push(']');
        }
        ExprKind::ConstRead(arr, i) => {
            let _ = write!(out, "{arr}[");
            sub(*i, 0, out);
            out.push(']');
        }
        ExprKind::GlobalRead(p, i) => {
            let name = ir.params.get(p.index()).map(|d| d.name.as_str());
            let _ = write!(out, "{}[", name.unwrap_or("?"));
            sub(*i, 0, out);
            out.push(']');
        }
        ExprKind::Fma(a, b, c) => {
            out.push_str("fma");
            args(&[*a, *b, *c], out);
        }
    }
}
