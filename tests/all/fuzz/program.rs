//! A kernel's IR written back as the builder program that makes it: the reproducer a failing
//! case prints, ready to paste into a test. It reads `Kernel::ir()` only and names every
//! field an op has (the IR listing leaves some out), so the program records what the failing
//! kernel was, whatever the generator did to make it.
//!
//! Payloads are `d<N>`, groups `g<N>`, temp storages `st<N>`, shared arrays `smem<N>`, map
//! and operator arguments `a0`, `a1`, loop counters `i<op>` and `tiles` loops `t<op>`; the
//! parameters keep their names.

use coopgraph::ir::expr::{Axis, BinaryOp, CmpOp, ExprKind, IndexKind, UnaryOp, VType};
use coopgraph::ir::ops::{
    AtomicMemory, AtomicOp, Bounds, ClusterOp, LaneOp, MemoryOrder, MemoryScope, OpKind, ReduceOp,
    Sharing, Transfer, ValidOf,
};
use coopgraph::ir::{
    Algorithm, Arrangement, DType, DataId, ExprId, GroupKind, Ir, MathMode, NeighborKind, OpId,
    PrintPiece, RegionId,
};
use std::collections::{HashMap, HashSet};
use std::fmt::Write;

/// Nodes of one expression written before the rest is elided. A subtree the expression uses
/// more than once is written once, bound by a `let` (`{ let e7 = ..; e7.clone().min(e7.clone()) }`),
/// so what is written is linear in the expression's distinct nodes; the budget only bounds
/// one expression of very many distinct nodes.
const EXPR_BUDGET: usize = 4000;

/// The builder program of `ir`, with `launch` (how the case runs it) as a comment.
pub fn program(ir: &Ir, launch: &str) -> String {
    let olds = ir
        .ops
        .iter()
        .filter_map(|o| match &o.kind {
            OpKind::Atomic(a) => Some(a.old),
            OpKind::Lanes(l) => l.out,
            OpKind::Cluster(c) => c.dst(),
            _ => None,
        })
        .collect();
    let mut p = Printer {
        ir,
        out: String::new(),
        depth: 1,
        olds,
        partitions: ir
            .ops
            .iter()
            .filter_map(|o| match &o.kind {
                OpKind::Lanes(l) if l.op.makes_partition() => l.out,
                _ => None,
            })
            .collect(),
        declared: vec![false; ir.datas.len()],
        total: None,
        pending: None,
    };
    let _ = writeln!(
        p.out,
        "fn kernel() -> Result<coopgraph::Kernel, coopgraph::Error> {{\n    use coopgraph::ir::*;"
    );
    p.header();
    if !launch.is_empty() {
        let _ = writeln!(p.out, "    // {launch}");
    }
    p.region(ir.body);
    p.out.push_str("    k.build()\n}\n");
    p.out
}

struct Printer<'a> {
    ir: &'a Ir,
    out: String,
    depth: usize,
    /// The payloads atomics put their old values in: expressions (`let d3 = k.atomic(..)`).
    olds: std::collections::HashSet<DataId>,
    /// The payloads holding partitions' lanes (`Partition` handles in the program).
    partitions: std::collections::HashSet<DataId>,
    declared: Vec<bool>,
    /// Inside a prefix callback: the aggregate payload, read as the callback's `total`.
    total: Option<DataId>,
    /// The op whose first line is next.
    pending: Option<OpId>,
}

fn rust_type(dt: DType) -> String {
    format!("{dt}")
}

/// A constant of `dt` with `bits` as a Rust literal that gives exactly those bits.
fn literal(dt: DType, bits: u64) -> String {
    let t = rust_type(dt);
    match dt {
        DType::F32 => {
            let v = f32::from_bits(bits as u32);
            if v.is_finite() && format!("{v:?}").parse::<f32>().map(f32::to_bits) == Ok(bits as u32)
            {
                format!("{v:?}f32")
            } else {
                format!("f32::from_bits({:#x})", bits as u32)
            }
        }
        DType::F64 => {
            let v = f64::from_bits(bits);
            if v.is_finite() && format!("{v:?}").parse::<f64>().map(f64::to_bits) == Ok(bits) {
                format!("{v:?}f64")
            } else {
                format!("f64::from_bits({bits:#x})")
            }
        }
        d if d.is_signed_int() => {
            let w = d.bytes() * 8;
            let v = ((bits << (64 - w)) as i64) >> (64 - w);
            format!("{v}{t}")
        }
        _ => format!("{bits}{t}"),
    }
}

fn arrangement(a: Arrangement) -> String {
    match a {
        Arrangement::Blocked => "Arrangement::Blocked".into(),
        Arrangement::Striped { threads } => {
            format!("Arrangement::Striped {{ threads: {threads} }}")
        }
    }
}

impl Printer<'_> {
    fn line(&mut self, s: &str) {
        self.plain(s);
        if let Some(op) = self.pending.take() {
            self.out.pop();
            let _ = writeln!(self.out, " // {op}");
        }
    }

    /// A line that is not an op's (a declaration).
    fn plain(&mut self, s: &str) {
        for _ in 0..self.depth {
            self.out.push_str("    ");
        }
        self.out.push_str(s);
        self.out.push('\n');
    }

    fn header(&mut self) {
        let ir = self.ir;
        let block = match ir.block.dims {
            [x, 1, 1] => format!("block({x})"),
            d => format!("block_dims({d:?})"),
        };
        let mut k = format!(
            "let mut k = KernelBuilder::new({:?}).{block}.items_per_thread({})",
            ir.name, ir.items_per_thread
        );
        if ir.strict_arrangements {
            k.push_str(".strict_arrangements(true)");
        }
        if ir.bounds == Bounds::Unchecked {
            k.push_str(".unchecked_bounds()");
        }
        if ir.options.line_info == coopgraph::ir::LineInfo::RustLines {
            k.push_str(".lineinfo()");
        }
        if ir.options.math == MathMode::Fast {
            k.push_str(".fastmath()");
        }
        match ir.cluster.map(|c| c.dims) {
            Some(Some(dims)) => {
                let _ = write!(k, ".cluster_dims({dims:?})");
            }
            Some(None) => k.push_str(".cluster_at_launch()"),
            None => {}
        }
        k.push(';');
        self.line(&k);
        for p in &ir.params {
            let f = match p.role {
                coopgraph::ir::ops::Role::Input => "input",
                coopgraph::ir::ops::Role::Output => "output",
                coopgraph::ir::ops::Role::Scalar => "scalar",
                coopgraph::ir::ops::Role::Buffer => "buffer",
            };
            let s = format!(
                "let {} = k.{f}::<{}>({:?});",
                p.name,
                rust_type(p.dtype),
                p.name
            );
            self.line(&s);
        }
        for (i, g) in ir.groups.iter().enumerate() {
            let s = match g.kind {
                GroupKind::Block => format!("let g{i} = k.this_block();"),
                GroupKind::LogicalWarp { width } => {
                    format!("let g{i} = k.this_warp().group_by({width});")
                }
                GroupKind::Warps { warps } => {
                    format!("let g{i} = k.this_block().group_by_warps({warps});")
                }
            };
            self.line(&s);
        }
        for (i, st) in ir.storages.iter().enumerate() {
            let mut s = "StorageSpec::default()".to_string();
            if let Some(n) = st.size {
                let _ = write!(s, ".size_in_bytes({n})");
            }
            if let Some(a) = st.align {
                let _ = write!(s, ".alignment({a})");
            }
            let _ = write!(s, ".auto_sync({})", st.auto_sync);
            if st.sharing == Sharing::Exclusive {
                s.push_str(".sharing(Sharing::Exclusive)");
            }
            self.line(&format!("let st{i} = k.temp_storage({s});"));
        }
        for (i, a) in ir.arrays.iter().enumerate() {
            // Accesses are written at the linear index, through the flat view of an array of
            // several dimensions: the same IR.
            let t = rust_type(a.dtype);
            let s = match a.dims.as_slice() {
                _ if a.dynamic => format!("let smem{i} = k.dynamic_shared_array::<{t}>();"),
                [r, c] => format!("let smem{i} = k.shared_array_2d::<{t}>([{r}, {c}]).flat();"),
                [x, y, z] => {
                    format!("let smem{i} = k.shared_array_3d::<{t}>([{x}, {y}, {z}]).flat();")
                }
                _ => format!("let smem{i} = k.shared_array::<{t}>({});", a.len),
            };
            self.line(&s);
        }
        for (i, a) in ir.locals.iter().enumerate() {
            let s = format!(
                "let local{i} = k.local_array::<{}>({});",
                rust_type(a.dtype),
                a.len
            );
            self.line(&s);
        }
        for (i, a) in ir.consts.iter().enumerate() {
            let values: Vec<String> = a.data.iter().map(|&b| literal(a.dtype, b)).collect();
            let s = format!("let cmem{i} = k.const_array(&[{}]);", values.join(", "));
            self.line(&s);
        }
    }

    /// Declares payload `d` where it first appears without an op that makes it.
    fn declare(&mut self, d: DataId) {
        if self.declared[d.index()] {
            return;
        }
        self.declared[d.index()] = true;
        let decl = &self.ir.datas[d.index()];
        let t = rust_type(decl.dtype);
        let s = match decl.align {
            Some(a) => format!(
                "let {d} = k.thread_data_aligned::<{t}>({}, {a});",
                decl.items
            ),
            None => format!("let {d} = k.thread_data_n::<{t}>({});", decl.items),
        };
        self.plain(&s);
    }

    /// Payload `d`, made by the op being written.
    /// A cluster op: a barrier, or a remote access through a `map_shared_rank` handle.
    fn cluster(&mut self, c: &ClusterOp) {
        let (array, rank, index) = match c {
            ClusterOp::Sync => return self.line("k.sync_cluster();"),
            ClusterOp::Arrive => return self.line("k.cluster_arrive();"),
            ClusterOp::Wait => return self.line("k.cluster_wait();"),
            ClusterOp::Read {
                array, rank, index, ..
            }
            | ClusterOp::Write {
                array, rank, index, ..
            }
            | ClusterOp::Atomic {
                array, rank, index, ..
            } => (*array, *rank, *index),
        };
        let s = format!(
            "let remote = k.map_shared_rank(&smem{}, {});",
            array.index(),
            self.expr(rank)
        );
        self.line(&s);
        let index = self.expr(index);
        let s = match c {
            ClusterOp::Read { dst, .. } => {
                format!("let {} = k.remote_read(&remote, {index});", self.made(*dst))
            }
            ClusterOp::Write { value, .. } => {
                format!("k.remote_write(&remote, {index}, {});", self.expr(*value))
            }
            ClusterOp::Atomic { op, value, old, .. } => {
                let v = self.expr(*value);
                format!(
                    "let {} = k.remote_atomic(&remote, {index}, Atomic::{}({v}));",
                    self.made(*old),
                    format!("{op:?}").to_lowercase()
                )
            }
            _ => return,
        };
        self.line(&s);
    }

    fn made(&mut self, d: DataId) -> String {
        self.declared[d.index()] = true;
        format!("{d}")
    }

    fn group(&self, g: coopgraph::ir::GroupId) -> String {
        format!("g{}", g.index())
    }

    fn param(&self, p: coopgraph::ir::ParamId) -> String {
        self.ir.params[p.index()].name.clone()
    }

    fn region(&mut self, r: RegionId) {
        for &op in self.ir.region(r) {
            // The op's number (as error and race reports name it) ends its first line.
            self.pending = Some(op);
            self.op(op);
        }
    }

    fn nested(&mut self, r: RegionId) {
        self.depth += 1;
        self.region(r);
        self.depth -= 1;
    }

    fn transfer(&mut self, t: &Transfer, load: bool) -> String {
        let alg = match t.algorithm {
            Algorithm::Direct => "Direct",
            Algorithm::Striped => "Striped",
            Algorithm::Vectorize => "Vectorize",
            Algorithm::Transpose => "Transpose",
            Algorithm::WarpTranspose => "WarpTranspose",
            Algorithm::WarpTransposeTimesliced => "WarpTransposeTimesliced",
            Algorithm::WarpStriped => "WarpStriped",
        };
        let mut s = if load {
            format!("Load::direct().algorithm(Algorithm::{alg})")
        } else {
            format!("Store::default().algorithm(Algorithm::{alg})")
        };
        if let Some(o) = t.offset {
            let _ = write!(s, ".offset({})", self.expr(o));
        }
        if let Some(v) = t.valid {
            let which = match v.of {
                ValidOf::Group => "valid_items",
                ValidOf::Block => "block_valid_items",
            };
            let _ = write!(s, ".{which}({})", self.expr(v.count));
        }
        if let Some(b) = t.oob_default {
            let dt = self.ir.datas[t.data.index()].dtype;
            let _ = write!(s, ".oob_default({})", literal(dt, b));
        }
        if let Some(st) = t.storage {
            let _ = write!(s, ".temp_storage(&st{})", st.index());
        }
        s
    }

    fn reduce_op(&mut self, op: ReduceOp) -> String {
        match op {
            ReduceOp::Sum => "Reduce::sum()".into(),
            ReduceOp::Product => "Reduce::product()".into(),
            ReduceOp::Min => "Reduce::min()".into(),
            ReduceOp::Max => "Reduce::max()".into(),
            ReduceOp::BitAnd => "Reduce::bit_and()".into(),
            ReduceOp::BitOr => "Reduce::bit_or()".into(),
            ReduceOp::BitXor => "Reduce::bit_xor()".into(),
            ReduceOp::First => "Reduce::first()".into(),
            ReduceOp::Custom { expr, commutative } => {
                format!(
                    "Reduce::custom({commutative}, |a0, a1| {})",
                    self.expr(expr)
                )
            }
        }
    }

    fn op(&mut self, op: OpId) {
        let ir = self.ir;
        match &ir.op(op).kind {
            OpKind::Load(t) => {
                self.declare(t.data);
                let s = format!(
                    "k.load_into({}, &{}, &{}, {});",
                    self.group(t.group),
                    self.param(t.param),
                    t.data,
                    self.transfer(t, true)
                );
                self.line(&s);
            }
            OpKind::Store(t) => {
                self.declare(t.data);
                let s = format!(
                    "k.store_to({}, &{}, &{}, {});",
                    self.group(t.group),
                    self.param(t.param),
                    t.data,
                    self.transfer(t, false)
                );
                self.line(&s);
            }
            OpKind::Map { dst, srcs, expr } => {
                for s in srcs {
                    self.declare(*s);
                }
                let body = self.expr(*expr);
                let d = self.made(*dst);
                let s = match srcs.as_slice() {
                    [] => {
                        let t = rust_type(ir.datas[dst.index()].dtype);
                        format!("let {d} = k.fill::<{t}>({body});")
                    }
                    [a] => format!("let {d} = k.map(&{a}, |a0| {body});"),
                    [a, b] => format!("let {d} = k.map2(&{a}, &{b}, |a0, a1| {body});"),
                    more => {
                        let names: Vec<String> = more.iter().map(|m| m.to_string()).collect();
                        format!("// {d}: a map over {} ({body})", names.join(", "))
                    }
                };
                self.line(&s);
            }
            OpKind::SetItem { dst, item, expr } if ir.datas[dst.index()].var => {
                let v = self.expr(*expr);
                let s = if self.declared[dst.index()] {
                    format!("k.set(&{dst}, {v});")
                } else {
                    let t = rust_type(ir.datas[dst.index()].dtype);
                    format!("let {} = k.var::<{t}>({v});", self.made(*dst))
                };
                let _ = item;
                self.line(&s);
            }
            OpKind::SetItem { dst, item, expr } => {
                self.declare(*dst);
                let s = format!("k.set_item(&{dst}, {item}, {});", self.expr(*expr));
                self.line(&s);
            }
            OpKind::Assign { dst, src } => {
                self.declare(*dst);
                self.declare(*src);
                self.line(&format!("k.assign(&{dst}, &{src});"));
            }
            OpKind::If {
                cond,
                then,
                otherwise,
            } => {
                let c = self.expr(*cond);
                match otherwise {
                    None => {
                        self.line(&format!("k.if_({c}, |k| {{"));
                        self.nested(*then);
                        self.line("});");
                    }
                    Some(o) => {
                        self.line(&format!("k.if_else({c}, |k| {{"));
                        self.nested(*then);
                        self.line("}, |k| {");
                        self.nested(*o);
                        self.line("});");
                    }
                }
            }
            OpKind::For {
                start,
                end,
                step,
                body,
            } => {
                let (f, step) = match step {
                    Some(st) => ("for_range_step", format!(", {}", self.expr(*st))),
                    None => ("for_range", String::new()),
                };
                let s = format!(
                    "k.{f}({}, {}{step}, |k, i{}| {{",
                    self.expr(*start),
                    self.expr(*end),
                    op.index()
                );
                self.line(&s);
                self.nested(*body);
                self.line("});");
            }
            OpKind::While { cond, body } => {
                let s = format!("k.while_({}, |k| {{", self.expr(*cond));
                self.line(&s);
                self.nested(*body);
                self.line("});");
            }
            OpKind::Break => self.line("k.break_();"),
            OpKind::Continue => self.line("k.continue_();"),
            OpKind::ReturnIf { cond } => {
                let s = format!("k.return_if({});", self.expr(*cond));
                self.line(&s);
            }
            OpKind::Assert { cond, message } => {
                let s = format!("k.assert({}, {message:?});", self.expr(*cond));
                self.line(&s);
            }
            OpKind::Tiles { n, body } => {
                let s = format!("k.tiles({}, |k, t{}| {{", self.expr(*n), op.index());
                self.line(&s);
                self.nested(*body);
                self.line("});");
            }
            OpKind::SharedWrite {
                array,
                index,
                value,
            } => {
                let s = format!(
                    "k.shared_write(&smem{}, {}, {});",
                    array.index(),
                    self.expr(*index),
                    self.expr(*value)
                );
                self.line(&s);
            }
            OpKind::LocalWrite {
                array,
                index,
                value,
            } => {
                let s = format!(
                    "k.local_write(&local{}, {}, {});",
                    array.index(),
                    self.expr(*index),
                    self.expr(*value)
                );
                self.line(&s);
            }
            OpKind::GlobalWrite {
                param,
                index,
                value,
            } => {
                let s = format!(
                    "k.write(&{}, {}, {});",
                    self.param(*param),
                    self.expr(*index),
                    self.expr(*value)
                );
                self.line(&s);
            }
            OpKind::ReadRun { param, index, dst } => {
                let items = self.ir.datas[dst.index()].items;
                let s = format!(
                    "let {} = k.read_run(&{}, {}, {items});",
                    self.made(*dst),
                    self.param(*param),
                    self.expr(*index)
                );
                self.line(&s);
            }
            OpKind::WriteRun { param, index, src } => {
                self.declare(*src);
                let s = format!(
                    "k.write_run(&{}, {}, &{src});",
                    self.param(*param),
                    self.expr(*index)
                );
                self.line(&s);
            }
            OpKind::Atomic(a) => {
                let target = match a.memory {
                    AtomicMemory::Global(p) => self.param(p),
                    AtomicMemory::Shared(arr) => format!("smem{}", arr.index()),
                };
                let v = self.expr(a.value);
                let name = match a.op {
                    AtomicOp::Add => "add",
                    AtomicOp::Sub => "sub",
                    AtomicOp::Min => "min",
                    AtomicOp::Max => "max",
                    AtomicOp::NanMin => "nan_min",
                    AtomicOp::NanMax => "nan_max",
                    AtomicOp::And => "and",
                    AtomicOp::Or => "or",
                    AtomicOp::Xor => "xor",
                    AtomicOp::Exch => "exch",
                    AtomicOp::Cas => "cas",
                    AtomicOp::Inc => "inc",
                    AtomicOp::Dec => "dec",
                    AtomicOp::Load => "load",
                };
                let mut c = match a.compare {
                    Some(cmp) => format!("Atomic::{name}({}, {v})", self.expr(cmp)),
                    None if a.op == AtomicOp::Load => "Atomic::load()".to_string(),
                    None => format!("Atomic::{name}({v})"),
                };
                if a.order != MemoryOrder::Relaxed {
                    let _ = write!(c, ".order(MemoryOrder::{:?})", a.order);
                }
                if a.scope != MemoryScope::Gpu {
                    let _ = write!(c, ".scope(MemoryScope::{:?})", a.scope);
                }
                let d = self.made(a.old);
                let s = format!(
                    "let {d} = k.atomic(&{target}, {}, {c});",
                    self.expr(a.index)
                );
                self.line(&s);
            }
            OpKind::SyncBlock => self.line("k.sync_block();"),
            OpKind::Nanosleep { ns } => self.line(&format!("k.nanosleep({ns});")),
            OpKind::Lanes(l) => {
                let g = match l.members {
                    Some(m) => format!("{m}"),
                    None => self.group(l.group),
                };
                let mut args = if l.op == LaneOp::Coalesce {
                    Vec::new()
                } else {
                    vec![g]
                };
                args.extend(l.value.map(|v| self.expr(v)));
                args.extend(l.lane.map(|v| self.expr(v)));
                let call = format!("k.{}({})", l.op.name(), args.join(", "));
                let s = match l.out {
                    None => format!("{call};"),
                    // Votes give `bool`s; the IR holds them as `u32`.
                    Some(d) if matches!(l.op, LaneOp::Any | LaneOp::All) => {
                        format!("let {} = {call}.select(1u32, 0u32);", self.made(d))
                    }
                    Some(d) => format!("let {} = {call};", self.made(d)),
                };
                self.line(&s);
            }
            OpKind::SyncGrid => self.line("k.sync_grid();"),
            OpKind::Cluster(c) => self.cluster(c),
            OpKind::Print { pieces, args } => {
                let values: Vec<String> = (args.iter())
                    .map(|a| format!("PrintValue::new({})", self.expr(*a)))
                    .collect();
                let format: String = (pieces.iter())
                    .map(|p| match p {
                        PrintPiece::Text(t) => t.replace('{', "{{").replace('}', "}}"),
                        PrintPiece::Arg(spec) => spec.to_string(),
                    })
                    .collect();
                let s = format!("k.print({format:?}, vec![{}]);", values.join(", "));
                self.line(&s);
            }
            OpKind::Reduce(r) => {
                self.declare(r.src);
                let mut c = self.reduce_op(r.op);
                if ir.groups[r.group.index()].kind == GroupKind::Block {
                    let _ = write!(c, ".algorithm(ReduceAlgorithm::{:?})", r.algorithm);
                }
                if r.broadcast {
                    c.push_str(".broadcast()");
                }
                if let Some(v) = r.valid {
                    let _ = write!(c, ".valid_items({})", self.expr(v));
                }
                let d = self.made(r.dst);
                let s = format!(
                    "let {d} = k.reduce({}, &{}, {c});",
                    self.group(r.group),
                    r.src
                );
                self.line(&s);
            }
            OpKind::Scan(sc) => {
                self.declare(sc.src);
                let kind = if sc.inclusive {
                    "inclusive"
                } else {
                    "exclusive"
                };
                let mut c = format!("Scan::{kind}({})", self.reduce_op(sc.op));
                if let Some(i) = sc.initial {
                    let _ = write!(c, ".initial_value({})", self.expr(i));
                }
                if ir.groups[sc.group.index()].kind == GroupKind::Block {
                    let _ = write!(c, ".algorithm(ScanAlgorithm::{:?})", sc.algorithm);
                }
                if let Some(v) = sc.valid {
                    let _ = write!(c, ".valid_items({})", self.expr(v));
                }
                let g = self.group(sc.group);
                let d = self.made(sc.dst);
                match (&sc.callback, sc.aggregate) {
                    (Some(cb), Some(agg)) => {
                        self.made(agg);
                        let s = format!(
                            "let {d} = k.scan_with_prefix({g}, &{}, {c}, |k, total| {{",
                            sc.src
                        );
                        self.line(&s);
                        let outer = self.total.replace(agg);
                        self.nested(cb.body);
                        let prefix = self.expr(cb.prefix);
                        self.depth += 1;
                        self.line(&prefix);
                        self.depth -= 1;
                        self.total = outer;
                        self.line("});");
                    }
                    (None, Some(agg)) => {
                        let a = self.made(agg);
                        let s = format!(
                            "let ({d}, {a}) = k.scan_with_aggregate({g}, &{}, {c});",
                            sc.src
                        );
                        self.line(&s);
                    }
                    _ => {
                        let s = format!("let {d} = k.scan({g}, &{}, {c});", sc.src);
                        self.line(&s);
                    }
                }
            }
            OpKind::Neighbor(nb) => {
                self.declare(nb.src);
                let g = self.group(nb.group);
                let src = nb.src;
                // The controls: the operator (a difference or flag op records one), the edge
                // item, the valid count.
                let base = match (nb.kind, nb.op) {
                    (NeighborKind::AdjacentLeft | NeighborKind::AdjacentRight, Some(e)) => {
                        format!("Difference::custom(|a0, a1| {})", self.expr(e))
                    }
                    (NeighborKind::Heads | NeighborKind::Tails, Some(e)) => {
                        format!("Flags::custom(|a0, a1| {})", self.expr(e))
                    }
                    _ => "Shuffle::new()".into(),
                };
                let mut c = base;
                if let Some(e) = nb.edge {
                    let _ = write!(c, ".edge({})", self.expr(e));
                }
                if let Some(v) = nb.valid {
                    let _ = write!(c, ".valid_items({})", self.expr(v));
                }
                let d = self.made(nb.dst);
                let s = match (nb.kind, nb.shifted_out) {
                    (NeighborKind::AdjacentLeft, _) => {
                        format!("let {d} = k.adjacent_difference_left({g}, &{src}, {c});")
                    }
                    (NeighborKind::AdjacentRight, _) => {
                        format!("let {d} = k.adjacent_difference_right({g}, &{src}, {c});")
                    }
                    (NeighborKind::Heads, _) => {
                        format!("let {d} = k.flag_heads({g}, &{src}, {c});")
                    }
                    (NeighborKind::Tails, _) => {
                        format!("let {d} = k.flag_tails({g}, &{src}, {c});")
                    }
                    (NeighborKind::ShiftUp, Some(o)) => {
                        let o = self.made(o);
                        format!("let ({d}, {o}) = k.shuffle_up_with_suffix({g}, &{src}, {c});")
                    }
                    (NeighborKind::ShiftUp, None) => {
                        format!("let {d} = k.shuffle_up({g}, &{src}, {c});")
                    }
                    (NeighborKind::ShiftDown, Some(o)) => {
                        let o = self.made(o);
                        format!("let ({d}, {o}) = k.shuffle_down_with_prefix({g}, &{src}, {c});")
                    }
                    (NeighborKind::ShiftDown, None) => {
                        format!("let {d} = k.shuffle_down({g}, &{src}, {c});")
                    }
                    (NeighborKind::Offset(n), ..) => {
                        format!("let {d} = k.shuffle_offset({g}, &{src}, {n});")
                    }
                    (NeighborKind::Rotate(n), ..) => {
                        format!("let {d} = k.shuffle_rotate({g}, &{src}, {n});")
                    }
                };
                self.line(&s);
            }
            OpKind::Scatter {
                group,
                src,
                ranks,
                flags,
                dst,
                to,
                holes,
                permutation,
                // Set only inside the library's sorts; the public controls cannot ask for them.
                inside: _,
                defined: _,
            } => {
                self.declare(*src);
                self.declare(*ranks);
                if let Some(f) = flags {
                    self.declare(*f);
                }
                let d = self.made(*dst);
                let mut c = format!("Scatter::to({})", arrangement(*to));
                if let Some(f) = flags {
                    let _ = write!(c, ".flags(&{f})");
                }
                if let Some(h) = holes {
                    let dt = ir.datas[src.index()].dtype;
                    let _ = write!(c, ".holes({})", literal(dt, *h));
                }
                if *permutation {
                    c.push_str(".permutation()");
                }
                let s = format!(
                    "let {d} = k.scatter({}, &{src}, &{ranks}, {c});",
                    self.group(*group)
                );
                self.line(&s);
            }
            OpKind::Exchange {
                group,
                src,
                dst,
                to,
                via,
            } => {
                self.declare(*src);
                let d = self.made(*dst);
                let (g, to) = (self.group(*group), arrangement(*to));
                let s = format!("let {d} = k.exchange({g}, &{src}, {to}, ExchangeVia::{via:?});");
                self.line(&s);
            }
        }
    }

    /// Expression `e`: a block that binds each subtree it uses more than once (a leaf aside)
    /// before the expression, or the expression alone where it shares none.
    fn expr(&self, e: ExprId) -> String {
        let left = std::cell::Cell::new(EXPR_BUDGET);
        let (mut uses, mut order) = (HashMap::new(), Vec::new());
        self.uses(e, &mut uses, &mut order);
        let shared = order.into_iter().filter(|n| {
            uses.get(n).is_some_and(|&u| u > 1) && self.ir.expr(*n).kind.children().next().is_some()
        });
        let mut bound = HashSet::new();
        let mut lets = String::new();
        for n in shared {
            let _ = write!(
                lets,
                "let e{} = {}; ",
                n.index(),
                self.expr_within(n, &bound, &left)
            );
            bound.insert(n);
        }
        let root = self.expr_within(e, &bound, &left);
        if lets.is_empty() {
            root
        } else {
            format!("{{ {lets}{root} }}")
        }
    }

    /// Counts in `uses` how many times the distinct nodes of `e`'s tree refer to each node
    /// below it (`a.min(a)` refers to `a` twice), and lists the distinct nodes in `order`,
    /// children before their parents.
    fn uses(&self, e: ExprId, uses: &mut HashMap<ExprId, u32>, order: &mut Vec<ExprId>) {
        for &c in self.ir.expr(e).kind.children() {
            let n = uses.entry(c).or_insert(0);
            *n += 1;
            if *n == 1 {
                self.uses(c, uses, order);
            }
        }
        order.push(e);
    }

    /// Expression `e`, written with at most `left` nodes (taken from it), the nodes in `bound`
    /// by the names their `let`s give them.
    fn expr_within(
        &self,
        e: ExprId,
        bound: &HashSet<ExprId>,
        left: &std::cell::Cell<usize>,
    ) -> String {
        if left.get() == 0 {
            return "/* elided */".into();
        }
        left.set(left.get() - 1);
        let ir = self.ir;
        let node = ir.expr(e);
        let sub = |x: ExprId| {
            if bound.contains(&x) {
                format!("e{}.clone()", x.index())
            } else {
                self.expr_within(x, bound, left)
            }
        };
        match &node.kind {
            ExprKind::Const(b) => match node.ty {
                VType::Bool => format!("Expr::lit_bool({})", *b != 0),
                VType::D(dt) => format!("Expr::lit({})", literal(dt, *b)),
            },
            ExprKind::Param(p) => format!("{}.expr()", self.param(*p)),
            ExprKind::Arg(i) => format!("a{i}.clone()"),
            ExprKind::Item { data, item } => {
                if self.total == Some(*data) {
                    "total.clone()".into()
                } else if self.partitions.contains(data) {
                    format!("{data}.mask()")
                } else if self.olds.contains(data) {
                    format!("{data}.clone()")
                } else if self.ir.datas.get(data.index()).is_some_and(|d| d.var) {
                    format!("{data}.get()")
                } else {
                    format!("{data}.item({item})")
                }
            }
            ExprKind::Index(k) => {
                let axis = |a: Axis| format!("index::Axis::{}", a.name().to_uppercase());
                match k {
                    IndexKind::ThreadRank => "index::thread_rank()".into(),
                    IndexKind::Lane => "index::lane()".into(),
                    IndexKind::WarpRank => "index::warp_rank()".into(),
                    IndexKind::BlockIndex => "index::block_index()".into(),
                    IndexKind::GridBlocks => "index::grid_blocks()".into(),
                    IndexKind::BlockThreads => "index::block_threads()".into(),
                    IndexKind::Item => "index::item()".into(),
                    IndexKind::ThreadIdx(a) => format!("index::thread_idx({})", axis(*a)),
                    IndexKind::BlockIdx(a) => format!("index::block_idx({})", axis(*a)),
                    IndexKind::BlockDim(a) => format!("index::block_dim({})", axis(*a)),
                    IndexKind::GridDim(a) => format!("index::grid_dim({})", axis(*a)),
                    IndexKind::ClusterDim(a) => {
                        format!("k.this_cluster().dim({})", axis(*a))
                    }
                }
            }
            ExprKind::LoopVar { op, field } => match &ir.op(*op).kind {
                OpKind::Tiles { .. } => format!(
                    "t{}.{}.clone()",
                    op.index(),
                    ["index", "origin", "valid"][*field as usize % 3]
                ),
                _ => format!("i{}.clone()", op.index()),
            },
            ExprKind::Unary(op, a) => {
                let a = sub(*a);
                match op {
                    UnaryOp::Neg => format!("(-{a})"),
                    UnaryOp::Not => format!("(!{a})"),
                    UnaryOp::Abs => format!("{a}.abs()"),
                    UnaryOp::Sqrt => format!("{a}.sqrt()"),
                    UnaryOp::Rsqrt => format!("{a}.rsqrt()"),
                    UnaryOp::Rcp => format!("{a}.recip()"),
                    UnaryOp::Exp2 => format!("{a}.exp2()"),
                    UnaryOp::Log2 => format!("{a}.log2()"),
                    UnaryOp::Sin => format!("{a}.sin()"),
                    UnaryOp::Cos => format!("{a}.cos()"),
                    UnaryOp::Tanh => format!("{a}.tanh()"),
                    UnaryOp::Floor => format!("{a}.floor()"),
                    UnaryOp::Ceil => format!("{a}.ceil()"),
                    UnaryOp::Trunc => format!("{a}.trunc()"),
                    UnaryOp::Round => format!("{a}.round_even()"),
                    UnaryOp::Popc => format!("{a}.popc()"),
                    UnaryOp::Clz => format!("{a}.clz()"),
                    UnaryOp::Brev => format!("{a}.reverse_bits()"),
                    UnaryOp::IsNan => format!("{a}.is_nan()"),
                    UnaryOp::Exp => format!("{a}.exp()"),
                    UnaryOp::Exp10 => format!("{a}.exp10()"),
                    UnaryOp::Expm1 => format!("{a}.exp_m1()"),
                    UnaryOp::Ln => format!("{a}.ln()"),
                    UnaryOp::Log10 => format!("{a}.log10()"),
                    UnaryOp::Log1p => format!("{a}.ln_1p()"),
                    UnaryOp::Tan => format!("{a}.tan()"),
                    UnaryOp::Asin => format!("{a}.asin()"),
                    UnaryOp::Acos => format!("{a}.acos()"),
                    UnaryOp::Atan => format!("{a}.atan()"),
                    UnaryOp::Sinh => format!("{a}.sinh()"),
                    UnaryOp::Cosh => format!("{a}.cosh()"),
                    UnaryOp::Cbrt => format!("{a}.cbrt()"),
                    UnaryOp::Erf => format!("{a}.erf()"),
                    UnaryOp::Erfc => format!("{a}.erfc()"),
                    UnaryOp::Bitcast => {
                        let to = match node.ty {
                            VType::D(DType::F32) => "Expr::<f32>::from_bits",
                            VType::D(DType::F64) => "Expr::<f64>::from_bits",
                            _ => "",
                        };
                        if to.is_empty() {
                            format!("{a}.to_bits()")
                        } else {
                            format!("{to}({a})")
                        }
                    }
                }
            }
            ExprKind::Binary(op, a, b) => {
                let (x, y) = (sub(*a), sub(*b));
                let boolean = node.ty == VType::Bool;
                match op {
                    BinaryOp::And if boolean => format!("{x}.and(&{y})"),
                    BinaryOp::Or if boolean => format!("{x}.or(&{y})"),
                    BinaryOp::Min => format!("{x}.min({y})"),
                    BinaryOp::Max => format!("{x}.max({y})"),
                    BinaryOp::MulHi => format!("{x}.mul_hi({y})"),
                    BinaryOp::Atan2 => format!("{x}.atan2({y})"),
                    BinaryOp::Pow => format!("{x}.pow({y})"),
                    BinaryOp::Hypot => format!("{x}.hypot({y})"),
                    BinaryOp::Powi => format!("{x}.powi({y})"),
                    _ => {
                        let o = match op {
                            BinaryOp::Add => "+",
                            BinaryOp::Sub => "-",
                            BinaryOp::Mul => "*",
                            BinaryOp::Div => "/",
                            BinaryOp::Rem => "%",
                            BinaryOp::And => "&",
                            BinaryOp::Or => "|",
                            BinaryOp::Xor => "^",
                            BinaryOp::Shl => "<<",
                            _ => ">>",
                        };
                        format!("({x} {o} {y})")
                    }
                }
            }
            ExprKind::Cmp(op, a, b) => {
                let m = match op {
                    CmpOp::Eq => "eq",
                    CmpOp::Ne => "ne",
                    CmpOp::Lt => "lt",
                    CmpOp::Le => "le",
                    CmpOp::Gt => "gt",
                    CmpOp::Ge => "ge",
                };
                format!("{}.{m}({})", sub(*a), sub(*b))
            }
            ExprKind::Select(c, a, b) => format!("{}.select({}, {})", sub(*c), sub(*a), sub(*b)),
            ExprKind::Cast(a) => match node.ty {
                VType::D(dt) => format!("{}.cast::<{}>()", sub(*a), rust_type(dt)),
                VType::Bool => sub(*a),
            },
            ExprKind::Fma(a, b, c) => format!("{}.fma({}, {})", sub(*a), sub(*b), sub(*c)),
            ExprKind::SharedRead(arr, i) => format!("smem{}.read({})", arr.index(), sub(*i)),
            ExprKind::LocalRead(arr, i) => format!("local{}.read({})", arr.index(), sub(*i)),
            ExprKind::ConstRead(arr, i) => format!("cmem{}.read({})", arr.index(), sub(*i)),
            ExprKind::GlobalRead(p, i) => format!("{}.at({})", self.param(*p), sub(*i)),
        }
    }
}
