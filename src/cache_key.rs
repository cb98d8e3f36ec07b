//! The cache key of a kernel: a canonical serialization of the whole IR, and its 128-bit hash.
//!
//! The serialization ([`canonical_ir`]) writes every field of the IR except source locations:
//! the name, block shape, items per thread, strict mode, bounds, compile options, every
//! parameter, group, payload (dtype, items, alignment), temp storage (size, alignment,
//! auto-sync, sharing), shared array, local array, constant array (its values too), expression
//! node, op with all its controls, every region, the body and the builder's issues. A kernel
//! built with line information ([`LineInfo::RustLines`]) carries its ops' source locations in
//! its PTX, so its serialization ends with every op's location too.
//! Each struct is destructured exhaustively and each enum matched without a wildcard, so a new
//! IR field or variant does not compile until it is written here. Integers are little-endian,
//! strings and lists carry their length, and enums a fixed tag, so the bytes are the same on
//! every machine and run, and no two IRs write the same bytes.
//!
//! A [`KernelKey`] holds the bytes and their 128-bit FNV-1a hash. Keys compare equal only when
//! the bytes are equal (the hash is checked first, so unequal keys almost never compare bytes),
//! so a hash collision can never make the cache return another kernel's module.

use crate::ir::dtype::DType;
use crate::ir::entities::{
    ArrayId, ConstId, DataId, ExprId, GroupId, LocalId, OpId, ParamId, RegionId, StorageId,
};
use crate::ir::ops::*;
use crate::ir::options::{Checks, CompileOptions, LineInfo, MathMode};

mod expr;
mod key;

pub use key::{KernelKey, StableHasher};

/// The canonical serialization of `ir`: a header with the crate version, then every field
/// except source locations, which only a kernel with line information adds (see the module
/// documentation).
pub fn canonical_ir(ir: &Ir) -> Vec<u8> {
    let mut w = Writer::default();
    w.str("coopgraph kernel ir");
    w.str(env!("CARGO_PKG_VERSION"));
    ir.write(&mut w);
    match ir.options.line_info {
        LineInfo::Off => {}
        LineInfo::RustLines => {
            for op in &ir.ops {
                w.str(op.loc.file);
                w.u32(op.loc.line);
                w.u32(op.loc.column);
            }
        }
    }
    w.out
}

/// The canonical byte writer.
#[derive(Debug, Default)]
pub(crate) struct Writer {
    out: Vec<u8>,
}

impl Writer {
    /// The bytes written so far.
    pub fn finish(self) -> Vec<u8> {
        self.out
    }

    /// One byte (an enum tag).
    pub fn tag(&mut self, t: u8) {
        self.out.push(t);
    }

    /// A flag.
    pub fn bool(&mut self, b: bool) {
        self.out.push(u8::from(b));
    }

    /// A 32-bit number, little-endian.
    pub fn u32(&mut self, v: u32) {
        self.out.extend_from_slice(&v.to_le_bytes());
    }

    /// A 64-bit number, little-endian.
    pub fn u64(&mut self, v: u64) {
        self.out.extend_from_slice(&v.to_le_bytes());
    }

    /// A length (of a string or list).
    pub fn count(&mut self, n: usize) {
        self.u64(n as u64);
    }

    /// A string, length first.
    pub fn str(&mut self, s: &str) {
        self.count(s.len());
        self.out.extend_from_slice(s.as_bytes());
    }

    /// A value that may be absent: a tag, then the value.
    pub fn opt<T: Canonical>(&mut self, v: &Option<T>) {
        match v {
            None => self.tag(0),
            Some(x) => {
                self.tag(1);
                x.write(self);
            }
        }
    }

    /// A list, length first.
    pub fn seq<T: Canonical>(&mut self, v: &[T]) {
        self.count(v.len());
        for x in v {
            x.write(self);
        }
    }
}

/// A value with a canonical serialization.
pub(crate) trait Canonical {
    /// Writes the value's canonical bytes.
    fn write(&self, w: &mut Writer);
}

impl Canonical for u32 {
    fn write(&self, w: &mut Writer) {
        w.u32(*self);
    }
}

impl Canonical for u64 {
    fn write(&self, w: &mut Writer) {
        w.u64(*self);
    }
}

impl Canonical for bool {
    fn write(&self, w: &mut Writer) {
        w.bool(*self);
    }
}

impl Canonical for String {
    fn write(&self, w: &mut Writer) {
        w.str(self);
    }
}

impl<T: Canonical> Canonical for Vec<T> {
    fn write(&self, w: &mut Writer) {
        w.seq(self);
    }
}

macro_rules! canonical_entity {
    ($($t:ty),*) => {$(
        impl Canonical for $t {
            fn write(&self, w: &mut Writer) {
                w.u32(self.0);
            }
        }
    )*};
}
canonical_entity!(
    ParamId, GroupId, DataId, OpId, RegionId, ExprId, StorageId, ArrayId, LocalId, ConstId
);

impl Canonical for DType {
    fn write(&self, w: &mut Writer) {
        w.tag(match self {
            DType::I8 => 0,
            DType::I16 => 1,
            DType::I32 => 2,
            DType::I64 => 3,
            DType::U8 => 4,
            DType::U16 => 5,
            DType::U32 => 6,
            DType::U64 => 7,
            DType::F32 => 8,
            DType::F64 => 9,
        });
    }
}

impl Canonical for Ir {
    fn write(&self, w: &mut Writer) {
        let Ir {
            name,
            block,
            items_per_thread,
            items_loc: _,
            strict_arrangements,
            bounds,
            options,
            params,
            groups,
            datas,
            storages,
            arrays,
            locals,
            consts,
            exprs,
            ops,
            regions,
            body,
            issues,
            cluster,
        } = self;
        w.str(name);
        let BlockShape { dims, loc: _ } = block;
        for d in dims {
            w.u32(*d);
        }
        w.u32(*items_per_thread);
        w.bool(*strict_arrangements);
        w.tag(match bounds {
            Bounds::Checked => 0,
            Bounds::Unchecked => 1,
        });
        options.write(w);
        w.seq(params);
        w.seq(groups);
        w.seq(datas);
        w.seq(storages);
        w.seq(arrays);
        w.seq(locals);
        w.seq(consts);
        w.seq(exprs.nodes());
        w.seq(ops);
        w.seq(regions);
        body.write(w);
        w.seq(issues);
        // Last, and only when set: kernels without clusters keep the keys they had.
        match cluster.map(|c| c.dims) {
            None => {}
            Some(Some(dims)) => {
                w.tag(1);
                for d in dims {
                    w.u32(d);
                }
            }
            Some(None) => w.tag(2),
        }
    }
}

impl Canonical for ClusterOp {
    fn write(&self, w: &mut Writer) {
        match self {
            ClusterOp::Sync => w.tag(0),
            ClusterOp::Arrive => w.tag(1),
            ClusterOp::Wait => w.tag(2),
            ClusterOp::Read {
                array,
                rank,
                index,
                dst,
            } => {
                w.tag(3);
                array.write(w);
                rank.write(w);
                index.write(w);
                dst.write(w);
            }
            ClusterOp::Write {
                array,
                rank,
                index,
                value,
            } => {
                w.tag(4);
                array.write(w);
                rank.write(w);
                index.write(w);
                value.write(w);
            }
            ClusterOp::Atomic {
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
                w.tag(5);
                rank.write(w);
                AtomicSpec {
                    memory: AtomicMemory::Shared(*array),
                    op: *op,
                    index: *index,
                    value: *value,
                    compare: *compare,
                    order: *order,
                    scope: *scope,
                    old: *old,
                }
                .write(w);
            }
        }
    }
}

impl Canonical for CompileOptions {
    fn write(&self, w: &mut Writer) {
        let CompileOptions {
            max_registers,
            min_blocks,
            line_info,
            math,
            checks,
        } = self;
        // The counts, not where they were set.
        w.opt(&max_registers.map(|m| m.count));
        w.opt(&min_blocks.map(|m| m.count));
        w.tag(match line_info {
            LineInfo::Off => 0,
            LineInfo::RustLines => 1,
        });
        w.tag(match math {
            MathMode::Accurate => 0,
            MathMode::Fast => 1,
        });
        w.tag(match checks {
            Checks::Off => 0,
            Checks::Debug => 1,
        });
    }
}

impl Canonical for Role {
    fn write(&self, w: &mut Writer) {
        w.tag(match self {
            Role::Input => 0,
            Role::Output => 1,
            Role::Scalar => 2,
            Role::Buffer => 3,
        });
    }
}

impl Canonical for ParamDecl {
    fn write(&self, w: &mut Writer) {
        let ParamDecl {
            name,
            role,
            dtype,
            loc: _,
        } = self;
        w.str(name);
        role.write(w);
        dtype.write(w);
    }
}

impl Canonical for GroupKind {
    fn write(&self, w: &mut Writer) {
        match self {
            GroupKind::Block => w.tag(0),
            GroupKind::LogicalWarp { width } => {
                w.tag(1);
                w.u32(*width);
            }
            GroupKind::Warps { warps } => {
                w.tag(2);
                w.u32(*warps);
            }
        }
    }
}

impl Canonical for GroupDecl {
    fn write(&self, w: &mut Writer) {
        let GroupDecl { kind, loc: _ } = self;
        kind.write(w);
    }
}

impl Canonical for DataDecl {
    fn write(&self, w: &mut Writer) {
        let DataDecl {
            dtype,
            items,
            align,
            var,
            loc: _,
        } = self;
        dtype.write(w);
        w.u32(*items);
        w.opt(align);
        w.bool(*var);
    }
}

impl Canonical for ExchangeVia {
    fn write(&self, w: &mut Writer) {
        w.tag(match self {
            ExchangeVia::Shared => 0,
            ExchangeVia::TimeSliced => 1,
            ExchangeVia::Shuffles => 2,
        });
    }
}

impl Canonical for Sharing {
    fn write(&self, w: &mut Writer) {
        w.tag(match self {
            Sharing::Shared => 0,
            Sharing::Exclusive => 1,
        });
    }
}

impl Canonical for StorageDecl {
    fn write(&self, w: &mut Writer) {
        let StorageDecl {
            size,
            align,
            auto_sync,
            sharing,
            loc: _,
        } = self;
        w.opt(size);
        w.opt(align);
        w.bool(*auto_sync);
        sharing.write(w);
    }
}

impl Canonical for ArrayDecl {
    fn write(&self, w: &mut Writer) {
        let ArrayDecl {
            dtype,
            len,
            dims,
            dynamic,
            view_of,
            inside,
            loc: _,
        } = self;
        dtype.write(w);
        w.u32(*len);
        w.seq(dims);
        w.bool(*dynamic);
        w.opt(&view_of.map(|a| a.0));
        w.bool(*inside);
    }
}

impl Canonical for LocalDecl {
    fn write(&self, w: &mut Writer) {
        let LocalDecl { dtype, len, loc: _ } = self;
        dtype.write(w);
        w.u32(*len);
    }
}

impl Canonical for ConstDecl {
    fn write(&self, w: &mut Writer) {
        let ConstDecl {
            dtype,
            data,
            loc: _,
        } = self;
        dtype.write(w);
        w.seq(data);
    }
}

impl Canonical for Algorithm {
    fn write(&self, w: &mut Writer) {
        w.tag(match self {
            Algorithm::Direct => 0,
            Algorithm::Striped => 1,
            Algorithm::Vectorize => 2,
            Algorithm::Transpose => 3,
            Algorithm::WarpTranspose => 4,
            Algorithm::WarpTransposeTimesliced => 5,
            Algorithm::WarpStriped => 6,
        });
    }
}

impl Canonical for ValidItems {
    fn write(&self, w: &mut Writer) {
        let ValidItems { count, of } = self;
        count.write(w);
        w.tag(match of {
            ValidOf::Group => 0,
            ValidOf::Block => 1,
        });
    }
}

impl Canonical for Arrangement {
    fn write(&self, w: &mut Writer) {
        match self {
            Arrangement::Blocked => w.tag(0),
            Arrangement::Striped { threads } => {
                w.tag(1);
                w.u32(*threads);
            }
        }
    }
}

impl Canonical for Transfer {
    fn write(&self, w: &mut Writer) {
        let Transfer {
            group,
            param,
            data,
            algorithm,
            offset,
            valid,
            oob_default,
            storage,
        } = self;
        group.write(w);
        param.write(w);
        data.write(w);
        algorithm.write(w);
        w.opt(offset);
        w.opt(valid);
        w.opt(oob_default);
        w.opt(storage);
    }
}

impl Canonical for ReduceOp {
    fn write(&self, w: &mut Writer) {
        match self {
            ReduceOp::Sum => w.tag(0),
            ReduceOp::Product => w.tag(1),
            ReduceOp::Min => w.tag(2),
            ReduceOp::Max => w.tag(3),
            ReduceOp::BitAnd => w.tag(4),
            ReduceOp::BitOr => w.tag(5),
            ReduceOp::BitXor => w.tag(6),
            ReduceOp::First => w.tag(8),
            ReduceOp::Custom { expr, commutative } => {
                w.tag(7);
                expr.write(w);
                w.bool(*commutative);
            }
        }
    }
}

impl Canonical for ReduceAlgorithm {
    fn write(&self, w: &mut Writer) {
        w.tag(match self {
            ReduceAlgorithm::RakingCommutativeOnly => 0,
            ReduceAlgorithm::Raking => 1,
            ReduceAlgorithm::WarpReductions => 2,
        });
    }
}

impl Canonical for ScanAlgorithm {
    fn write(&self, w: &mut Writer) {
        w.tag(match self {
            ScanAlgorithm::Raking => 0,
            ScanAlgorithm::RakingMemoize => 1,
            ScanAlgorithm::WarpScans => 2,
        });
    }
}

impl Canonical for Reduction {
    fn write(&self, w: &mut Writer) {
        let Reduction {
            group,
            src,
            dst,
            op,
            broadcast,
            valid,
            algorithm,
        } = self;
        group.write(w);
        src.write(w);
        dst.write(w);
        op.write(w);
        w.bool(*broadcast);
        w.opt(valid);
        algorithm.write(w);
    }
}

impl Canonical for PrefixCallback {
    fn write(&self, w: &mut Writer) {
        let PrefixCallback { body, prefix } = self;
        body.write(w);
        prefix.write(w);
    }
}

impl Canonical for ScanSpec {
    fn write(&self, w: &mut Writer) {
        let ScanSpec {
            group,
            src,
            dst,
            op,
            inclusive,
            initial,
            aggregate,
            callback,
            algorithm,
            valid,
        } = self;
        group.write(w);
        src.write(w);
        dst.write(w);
        op.write(w);
        w.bool(*inclusive);
        w.opt(initial);
        w.opt(aggregate);
        w.opt(callback);
        algorithm.write(w);
        w.opt(valid);
    }
}

impl Canonical for NeighborKind {
    fn write(&self, w: &mut Writer) {
        match self {
            NeighborKind::AdjacentLeft => w.tag(0),
            NeighborKind::AdjacentRight => w.tag(1),
            NeighborKind::Heads => w.tag(2),
            NeighborKind::Tails => w.tag(3),
            NeighborKind::ShiftUp => w.tag(4),
            NeighborKind::ShiftDown => w.tag(5),
            NeighborKind::Offset(d) => {
                w.tag(6);
                w.u32(*d as u32);
            }
            NeighborKind::Rotate(d) => {
                w.tag(7);
                w.u32(*d as u32);
            }
        }
    }
}

impl Canonical for NeighborSpec {
    fn write(&self, w: &mut Writer) {
        let NeighborSpec {
            group,
            src,
            dst,
            kind,
            op,
            edge,
            shifted_out,
            valid,
        } = self;
        group.write(w);
        src.write(w);
        dst.write(w);
        kind.write(w);
        w.opt(op);
        w.opt(edge);
        w.opt(shifted_out);
        w.opt(valid);
    }
}

impl Canonical for OpData {
    fn write(&self, w: &mut Writer) {
        let OpData { kind, loc: _ } = self;
        match kind {
            OpKind::Load(t) => {
                w.tag(0);
                t.write(w);
            }
            OpKind::Store(t) => {
                w.tag(1);
                t.write(w);
            }
            OpKind::Map { dst, srcs, expr } => {
                w.tag(2);
                dst.write(w);
                w.seq(srcs);
                expr.write(w);
            }
            OpKind::SetItem { dst, item, expr } => {
                w.tag(3);
                dst.write(w);
                w.u32(*item);
                expr.write(w);
            }
            OpKind::Assign { dst, src } => {
                w.tag(4);
                dst.write(w);
                src.write(w);
            }
            OpKind::If {
                cond,
                then,
                otherwise,
            } => {
                w.tag(5);
                cond.write(w);
                then.write(w);
                w.opt(otherwise);
            }
            OpKind::For {
                start,
                end,
                step,
                body,
            } => {
                w.tag(6);
                start.write(w);
                end.write(w);
                w.opt(step);
                body.write(w);
            }
            OpKind::While { cond, body } => {
                w.tag(17);
                cond.write(w);
                body.write(w);
            }
            OpKind::Break => w.tag(18),
            OpKind::Continue => w.tag(19),
            OpKind::ReturnIf { cond } => {
                w.tag(20);
                cond.write(w);
            }
            OpKind::Assert { cond, message } => {
                w.tag(22);
                cond.write(w);
                w.str(message);
            }
            OpKind::SharedWrite {
                array,
                index,
                value,
            } => {
                w.tag(7);
                array.write(w);
                index.write(w);
                value.write(w);
            }
            OpKind::LocalWrite {
                array,
                index,
                value,
            } => {
                w.tag(21);
                array.write(w);
                index.write(w);
                value.write(w);
            }
            OpKind::SyncBlock => w.tag(8),
            OpKind::Nanosleep { ns } => {
                w.tag(62);
                w.u32(*ns);
            }
            OpKind::Lanes(l) => {
                w.tag(24);
                l.write(w);
            }
            OpKind::SyncGrid => w.tag(60),
            OpKind::Cluster(c) => {
                w.tag(61);
                c.write(w);
            }
            OpKind::Print { pieces, args } => {
                w.tag(40);
                w.str(&crate::ir::format::unparse(pieces));
                w.seq(args);
            }
            OpKind::Reduce(r) => {
                w.tag(9);
                r.write(w);
            }
            OpKind::Scan(s) => {
                w.tag(10);
                s.write(w);
            }
            OpKind::Neighbor(nb) => {
                w.tag(11);
                nb.write(w);
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
                inside,
                defined,
            } => {
                w.tag(12);
                group.write(w);
                src.write(w);
                ranks.write(w);
                w.opt(flags);
                dst.write(w);
                to.write(w);
                w.opt(holes);
                w.bool(*permutation);
                w.bool(*inside);
                w.bool(*defined);
            }
            OpKind::Exchange {
                group,
                src,
                dst,
                to,
                via,
            } => {
                w.tag(13);
                group.write(w);
                src.write(w);
                dst.write(w);
                to.write(w);
                via.write(w);
            }
            OpKind::Tiles { n, body } => {
                w.tag(14);
                n.write(w);
                body.write(w);
            }
            OpKind::GlobalWrite {
                param,
                index,
                value,
            } => {
                w.tag(15);
                param.write(w);
                index.write(w);
                value.write(w);
            }
            OpKind::Atomic(a) => {
                w.tag(16);
                a.write(w);
            }
            OpKind::ReadRun { param, index, dst } => {
                w.tag(22);
                param.write(w);
                index.write(w);
                dst.write(w);
            }
            OpKind::WriteRun { param, index, src } => {
                w.tag(23);
                param.write(w);
                index.write(w);
                src.write(w);
            }
        }
    }
}

impl Canonical for AtomicSpec {
    fn write(&self, w: &mut Writer) {
        let AtomicSpec {
            memory,
            op,
            index,
            value,
            compare,
            order,
            scope,
            old,
        } = self;
        match memory {
            AtomicMemory::Global(p) => {
                w.tag(0);
                p.write(w);
            }
            AtomicMemory::Shared(a) => {
                w.tag(1);
                a.write(w);
            }
        }
        w.tag(match op {
            AtomicOp::Add => 0,
            AtomicOp::Sub => 1,
            AtomicOp::Min => 2,
            AtomicOp::Max => 3,
            AtomicOp::NanMin => 4,
            AtomicOp::NanMax => 5,
            AtomicOp::And => 6,
            AtomicOp::Or => 7,
            AtomicOp::Xor => 8,
            AtomicOp::Exch => 9,
            AtomicOp::Cas => 10,
            AtomicOp::Inc => 11,
            AtomicOp::Dec => 12,
            AtomicOp::Load => 13,
        });
        index.write(w);
        value.write(w);
        w.opt(compare);
        w.tag(match order {
            MemoryOrder::Relaxed => 0,
            MemoryOrder::Acquire => 1,
            MemoryOrder::Release => 2,
            MemoryOrder::AcqRel => 3,
        });
        w.tag(match scope {
            MemoryScope::Block => 0,
            MemoryScope::Gpu => 1,
            MemoryScope::System => 2,
        });
        old.write(w);
    }
}

impl Canonical for BuilderIssue {
    fn write(&self, w: &mut Writer) {
        match self {
            BuilderIssue::GroupWidth { width, loc: _ } => {
                w.tag(0);
                w.u32(*width);
            }
            BuilderIssue::ItemOutOfRange {
                item,
                items,
                loc: _,
            } => {
                w.tag(1);
                w.u32(*item);
                w.u32(*items);
            }
            BuilderIssue::DataAlign { align, loc: _ } => {
                w.tag(2);
                w.u32(*align);
            }
            BuilderIssue::Items { items, loc: _ } => {
                w.tag(3);
                w.u32(*items);
            }
            BuilderIssue::DuplicateParam { name, loc: _ } => {
                w.tag(4);
                w.str(name);
            }
            BuilderIssue::ForeignHandle { what, loc: _ } => {
                w.tag(5);
                w.str(what);
            }
            BuilderIssue::PrintFormat { problem, loc: _ } => {
                w.tag(6);
                w.str(&problem.to_string());
            }
            BuilderIssue::RadixSort { problem, loc: _ } => {
                w.tag(7);
                w.str(&problem.to_string());
            }
            BuilderIssue::Primitive { problem, loc: _ } => {
                w.tag(8);
                w.str(&problem.to_string());
            }
            BuilderIssue::MergeSort { problem, loc: _ } => {
                w.tag(9);
                w.str(&problem.to_string());
            }
        }
    }
}

impl Canonical for crate::planner::Barrier {
    fn write(&self, w: &mut Writer) {
        use crate::planner::{Hazard, SyncScope};
        let crate::planner::Barrier {
            step,
            scope,
            after,
            hazard,
        } = self;
        step.op.write(w);
        w.u32(step.index);
        match scope {
            SyncScope::Block => w.tag(0),
            SyncScope::Group { threads } => {
                w.tag(1);
                w.u32(*threads);
            }
            SyncScope::Warps { warps } => {
                w.tag(2);
                w.u32(*warps);
            }
        }
        after.op.write(w);
        w.u32(after.index);
        w.tag(match hazard {
            Hazard::ReadAfterWrite => 0,
            Hazard::WriteAfterRead => 1,
            Hazard::WriteAfterWrite => 2,
        });
    }
}

impl Canonical for LaneSpec {
    fn write(&self, w: &mut Writer) {
        let LaneSpec {
            group,
            members,
            op,
            value,
            lane,
            out,
        } = self;
        group.write(w);
        w.tag(match op {
            LaneOp::Shfl => 0,
            LaneOp::ShflUp => 1,
            LaneOp::ShflDown => 2,
            LaneOp::ShflXor => 3,
            LaneOp::Any => 4,
            LaneOp::All => 5,
            LaneOp::Ballot => 6,
            LaneOp::MatchAny => 7,
            LaneOp::MatchAll => 8,
            LaneOp::Sync => 9,
            LaneOp::Coalesce => 10,
            LaneOp::Labeled => 11,
            LaneOp::Binary => 12,
        });
        w.opt(members);
        w.opt(value);
        w.opt(lane);
        w.opt(out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv128_matches_the_reference_vectors() {
        assert_eq!(key::fnv128(b""), 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d);
        assert_eq!(key::fnv128(b"a"), 0xd228_cb69_6f1a_8caf_7891_2b70_4e4a_8964);
    }

    #[test]
    fn keys_compare_bytes_not_only_hashes() {
        let a = KernelKey::with_digest(7, b"one".to_vec());
        let b = KernelKey::with_digest(7, b"two".to_vec());
        assert_ne!(a, b);
        assert_eq!(a, KernelKey::with_digest(7, b"one".to_vec()));
        assert_eq!(a, a.clone());
    }

    #[test]
    fn lists_and_strings_carry_their_lengths() {
        let write = |f: &dyn Fn(&mut Writer)| {
            let mut w = Writer::default();
            f(&mut w);
            w.finish()
        };
        assert_ne!(
            write(&|w| {
                w.str("ab");
                w.str("c");
            }),
            write(&|w| {
                w.str("a");
                w.str("bc");
            })
        );
        assert_ne!(
            write(&|w| {
                w.seq(&[1u32, 2]);
                w.seq::<u32>(&[]);
            }),
            write(&|w| {
                w.seq(&[1u32]);
                w.seq(&[2u32]);
            })
        );
    }
}
