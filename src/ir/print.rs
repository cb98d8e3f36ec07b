//! The kernel's text form, used in error listings and `explain()`.

use super::entities::{ExprId, OpId, RegionId};
use super::error::VerifyError;
use super::expr::ExprKind;
use super::ops::*;
use std::collections::HashMap;
use std::fmt::Write;

/// The kernel as text, with each error printed under the op it concerns (errors with no op
/// come first).
pub fn listing(ir: &Ir, errors: &[VerifyError]) -> String {
    let mut out = String::new();
    let b = ir.block.dims;
    let _ = writeln!(
        out,
        "kernel {} block=[{}, {}, {}] items_per_thread={}",
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
        let _ = writeln!(
            out,
            "  smem{i}: shared {} x {}   ; {}",
            a.dtype, a.len, a.loc
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
    let mut by_op: HashMap<OpId, Vec<&VerifyError>> = HashMap::new();
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
        OpKind::For { start, end, .. } => format!("for i{} in {}..{}", op.0, e(*start), e(*end)),
        OpKind::Tiles { n, .. } => format!("tiles t{} of {}", op.0, e(*n)),
        OpKind::SharedWrite {
            array,
            index,
            value,
        } => format!("{array}[{}] = {}", e(*index), e(*value)),
        OpKind::GlobalWrite {
            param,
            index,
            value,
        } => format!("param{}[{}] = {}", param.0, e(*index), e(*value)),
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
        OpKind::Scatter {
            src,
            ranks,
            flags,
            dst,
            to,
            holes,
            ..
        } => format!(
            "{dst} = scatter {src} by {ranks}{} to {to:?}{}",
            flags.map(|f| format!(" where {f}")).unwrap_or_default(),
            holes.map(|h| format!(" holes={h:#x}")).unwrap_or_default()
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
    match ir.groups.get(t.group.index()).map(|g| g.kind) {
        Some(GroupKind::Block) => "block".into(),
        Some(GroupKind::LogicalWarp { width }) => format!("warp{width}"),
        None => "?".into(),
    }
}

/// Characters of one expression's text past which the rest is elided.
const EXPR_TEXT_BUDGET: usize = 400;

/// An expression as text (depth-limited, and elided past a few hundred characters: shared
/// subtrees are written out each time they occur).
pub fn expr_text(ir: &Ir, id: ExprId) -> String {
    let mut s = String::new();
    expr_into(ir, id, &mut s, 0);
    s
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
    if depth > 12 {
        let _ = write!(out, "{id}");
        return;
    }
    let sub = |c: &ExprId, out: &mut String| expr_into(ir, *c, out, depth + 1);
    match &n.kind {
        ExprKind::Const(bits) => match n.ty.dtype() {
            Some(super::DType::F32) => {
                let _ = write!(out, "{:?}", f32::from_bits(*bits as u32));
            }
            Some(super::DType::F64) => {
                let _ = write!(out, "{:?}", f64::from_bits(*bits));
            }
            _ => {
                let _ = write!(out, "{bits}");
            }
        },
        ExprKind::Param(p) => {
            let name = ir.params.get(p.index()).map(|d| d.name.as_str());
            let _ = write!(out, "{}", name.unwrap_or("?"));
        }
        ExprKind::Arg(i) => {
            let _ = write!(out, "arg{i}");
        }
        ExprKind::Item { data, item } => {
            let _ = write!(out, "{data}[{item}]");
        }
        ExprKind::Index(k) => {
            let _ = write!(out, "{k:?}");
        }
        ExprKind::LoopVar { op, field } => {
            let _ = write!(out, "{op}.{field}");
        }
        ExprKind::Unary(o, a) => {
            let _ = write!(out, "{o:?}(");
            sub(a, out);
            out.push(')');
        }
        ExprKind::Binary(o, a, b) => {
            out.push('(');
            sub(a, out);
            let _ = write!(out, " {o:?} ");
            sub(b, out);
            out.push(')');
        }
        ExprKind::Cmp(o, a, b) => {
            out.push('(');
            sub(a, out);
            let _ = write!(out, " {o:?} ");
            sub(b, out);
            out.push(')');
        }
        ExprKind::Select(c, a, b) => {
            out.push('(');
            sub(c, out);
            out.push_str(" ? ");
            sub(a, out);
            out.push_str(" : ");
            sub(b, out);
            out.push(')');
        }
        ExprKind::Cast(a) => {
            let _ = write!(out, "{}(", n.ty);
            sub(a, out);
            out.push(')');
        }
        ExprKind::SharedRead(arr, i) => {
            let _ = write!(out, "{arr}[");
            sub(i, out);
            out.push(']');
        }
        ExprKind::GlobalRead(p, i) => {
            let name = ir.params.get(p.index()).map(|d| d.name.as_str());
            let _ = write!(out, "{}[", name.unwrap_or("?"));
            sub(i, out);
            out.push(']');
        }
        ExprKind::Fma(a, b, c) => {
            out.push_str("fma(");
            sub(a, out);
            out.push_str(", ");
            sub(b, out);
            out.push_str(", ");
            sub(c, out);
            out.push(')');
        }
    }
}
