//! A built kernel: verified IR, its plan, and its cache key; PTX is emitted per arch on demand.

use crate::cache_key::{KernelKey, Writer};
use crate::codegen;
use crate::ir::ops::{LaneOp, OpKind};
use crate::ir::verify::{Info, verify};
use crate::ir::{Checks, Ir, KernelBuilder, Loc, OpId, Pipeline, Role};
use crate::planner::{self, ArrayHome, Plan, PlanError};
use crate::ptx::{self, Arch};
use crate::runtime::{
    Compile, DeviceLimits, DynamicArray, HiddenParam, ImageParts, KernelImage, ParamKind, ParamSig,
    Resources, RuntimeError, ptxas_resources,
};
use std::sync::Arc;

/// A kernel that verified and planned: ready to emit PTX for any supported arch and to
/// compile on a device.
#[derive(Debug, Clone)]
pub struct Kernel {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    ir: Ir,
    info: Info,
    plan: Plan,
    key: KernelKey,
    /// How many leading bytes of the key are the IR's serialization.
    ir_bytes: usize,
    entry: String,
}

// The orchestration of the stages (verify, then plan, then key) lives here, above them, so
// that the builder does not depend on what it feeds.
impl KernelBuilder {
    /// Verifies, plans and prepares the kernel for code generation. Every problem the
    /// verifier finds is reported at once, each naming the line that made it.
    ///
    /// ```
    /// use coopgraph::ir::{Reduce, VerifyErrorKind};
    /// use coopgraph::{Error, KernelBuilder, Load};
    ///
    /// // Logical warps of 3 lanes do not exist, and 1025 threads are too many for a block.
    /// let mut k = KernelBuilder::new("bad").block(1025).items_per_thread(1);
    /// let x = k.input::<u32>("x");
    /// let g = k.this_warp().group_by(3);
    /// let t = k.load_from(g, &x, Load::direct());
    /// k.reduce(g, &t, Reduce::sum());
    /// let Err(Error::Verify(e)) = k.build() else { panic!("built") };
    /// let kinds: Vec<_> = e.errors.iter().map(|e| &e.kind).collect();
    /// let too_large = VerifyErrorKind::BlockTooLarge { threads: 1025 };
    /// assert!(kinds.contains(&&too_large));
    /// assert!(kinds.contains(&&VerifyErrorKind::GroupWidth { width: 3 }));
    /// // Each error names the line it comes from.
    /// assert!(e.to_string().contains(file!()));
    /// ```
    pub fn build(self) -> Result<Kernel, crate::Error> {
        Kernel::from_ir(self.into_ir())
    }
}

impl<T: crate::ir::Element> Pipeline<T> {
    /// Verifies, plans and prepares the kernel (see [`KernelBuilder::build`]).
    ///
    /// ```
    /// use coopgraph::KernelBuilder;
    ///
    /// let kernel = KernelBuilder::new("negate").load::<f32>("x").map(|v| -v).store("y").build()?;
    /// assert_eq!(kernel.name(), "negate");
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    pub fn build(self) -> Result<Kernel, crate::Error> {
        self.into_builder().build()
    }
}

impl Kernel {
    pub(crate) fn from_ir(ir: Ir) -> Result<Kernel, crate::Error> {
        let info = verify(&ir)?;
        let plan = planner::plan(&ir, &info)?;
        let mut bytes = crate::cache_key::canonical_ir(&ir);
        let ir_bytes = bytes.len();
        // The planned barriers are the IR's.
        bytes.push(0);
        let entry = codegen::entry_name(&ir.name);
        Ok(Kernel {
            inner: Arc::new(Inner {
                ir,
                info,
                plan,
                key: KernelKey::new(bytes),
                ir_bytes,
                entry,
            }),
        })
    }

    /// The kernel's name.
    pub fn name(&self) -> &str {
        &self.inner.ir.name
    }

    /// The PTX entry symbol.
    pub fn entry(&self) -> &str {
        &self.inner.entry
    }

    /// The verified IR.
    pub fn ir(&self) -> &Ir {
        &self.inner.ir
    }

    /// Whether the kernel synchronizes the grid ([`KernelBuilder::sync_grid`]), so that it is
    /// launched cooperatively: every block resident at once, as many as the device holds
    /// ([`Function::launch_cooperative`](crate::runtime::Function::launch_cooperative)).
    ///
    /// ```
    /// use coopgraph::KernelBuilder;
    ///
    /// let mut k = KernelBuilder::new("phases").block(64);
    /// k.sync_grid();
    /// assert!(k.build()?.needs_cooperative());
    /// assert!(!KernelBuilder::new("plain").block(64).build()?.needs_cooperative());
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    ///
    /// [`KernelBuilder::sync_grid`]: crate::KernelBuilder::sync_grid
    pub fn needs_cooperative(&self) -> bool {
        self.inner.ir.needs_cooperative()
    }

    /// The plan.
    pub fn plan(&self) -> &Plan {
        &self.inner.plan
    }

    /// The op graph: the ops as the nodes of a `petgraph` graph, the payload and memory
    /// dependences between them (and nesting in branches and loops) as its edges, with a DOT
    /// export. See [`ir::graph`](crate::ir::graph) for what each edge means.
    ///
    /// ```
    /// use coopgraph::ir::graph::Dep;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// # fn main() -> Result<(), coopgraph::Error> {
    /// let mut k = KernelBuilder::new("inc").block(64);
    /// let x = k.input::<u32>("x");
    /// let y = k.output::<u32>("y");
    /// let b = k.this_block();
    /// let t = k.load_from(b, &x, Load::direct());
    /// let t = k.map(&t, |v| v + 1u32);
    /// k.store_to(b, &y, &t, Store::direct());
    /// let graph = k.build()?.graph();
    /// // load -> map -> store, each through a payload.
    /// let g = graph.graph();
    /// assert_eq!((g.node_count(), g.edge_count()), (3, 2));
    /// assert!(g.edge_weights().all(|d| matches!(d, Dep::Payload { carried: false, .. })));
    /// assert!(graph.dot().contains("d1 = map(d0) { arg0 + 1 }"));
    /// # Ok(())
    /// # }
    /// ```
    pub fn graph(&self) -> crate::ir::graph::OpGraph {
        crate::ir::graph::op_graph(&self.inner.ir)
    }

    /// The cache key: the canonical serialization of the IR (and, for a kernel from
    /// [`without_barrier`](Self::without_barrier), of its barriers) with its 128-bit hash.
    /// Equal for kernels built the same way, whatever source lines (or builders) built them;
    /// stable across runs and machines.
    pub fn key(&self) -> &KernelKey {
        &self.inner.key
    }

    /// The same kernel with planned barrier `index` (into `plan().barriers`) left out, or
    /// `None` past the last. For verification only: it shows, on the simulator's race checker,
    /// that each barrier the planner placed is needed. Its key is the IR's serialization
    /// followed by the barriers it keeps, so it is cached apart from the original and from
    /// every other kernel.
    pub fn without_barrier(&self, index: usize) -> Option<Kernel> {
        let mut plan = self.inner.plan.clone();
        if index >= plan.barriers.len() {
            return None;
        }
        plan.barriers.remove(index);
        let ir_bytes = self.inner.ir_bytes;
        let mut w = Writer::default();
        // Explicit barriers: the ones left, each where it stands and what it synchronizes.
        w.tag(1);
        w.seq(&plan.barriers);
        let mut bytes = self.inner.key.bytes()[..ir_bytes].to_vec();
        bytes.extend(w.finish());
        Some(Kernel {
            inner: Arc::new(Inner {
                ir: self.inner.ir.clone(),
                info: self.inner.info.clone(),
                plan,
                key: KernelKey::new(bytes),
                ir_bytes,
                entry: self.inner.entry.clone(),
            }),
        })
    }

    /// How many explicit block barriers the kernel holds: its
    /// [`sync_block`](KernelBuilder::sync_block)s, and those the builder's composite ops
    /// record (a radix sort's), in program order.
    pub fn sync_blocks(&self) -> usize {
        self.sync_block_ops().len()
    }

    fn sync_block_ops(&self) -> Vec<OpId> {
        self.ops_where(|k| matches!(k, OpKind::SyncBlock))
    }

    /// The ops of `kind`, in program order.
    fn ops_where(&self, kind: impl Fn(&OpKind) -> bool) -> Vec<OpId> {
        let ir = &self.inner.ir;
        let mut ops = Vec::new();
        ir.walk(|op, _| {
            if kind(&ir.op(op).kind) {
                ops.push(op);
            }
        });
        ops
    }

    /// The same kernel with `op` left out, verified and planned again.
    fn without_op(&self, op: Option<OpId>) -> Option<Kernel> {
        let op = op?;
        let mut ir = self.inner.ir.clone();
        for region in &mut ir.regions {
            region.retain(|&o| o != op);
        }
        Kernel::from_ir(ir).ok()
    }

    /// The same kernel with explicit block barrier `index` (in the order
    /// [`sync_blocks`](Self::sync_blocks) counts) left out, verified and planned again, or
    /// `None` past the last. For verification only, as [`without_barrier`](Self::without_barrier):
    /// it shows, on the simulator's race checker, that a barrier the user or a composite op
    /// recorded is needed. Its key is its own IR's.
    ///
    /// ```
    /// use coopgraph::ir::index;
    /// use coopgraph::KernelBuilder;
    ///
    /// let mut k = KernelBuilder::new("reverse").block(32);
    /// let y = k.output::<u32>("y");
    /// let s = k.shared_array::<u32>(32);
    /// k.shared_write(&s, index::thread_rank(), index::thread_rank());
    /// k.sync_block();
    /// k.write(&y, index::thread_rank(), s.read(31u32 - index::thread_rank()));
    /// let kernel = k.build()?;
    /// assert_eq!(kernel.sync_blocks(), 1);
    /// let racy = kernel.without_sync_block(0).expect("one barrier");
    /// assert_eq!(racy.sync_blocks(), 0);
    /// assert!(kernel.without_sync_block(1).is_none());
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    pub fn without_sync_block(&self, index: usize) -> Option<Kernel> {
        self.without_op(self.sync_block_ops().get(index).copied())
    }

    /// How many explicit group barriers the kernel holds: its [`sync`](KernelBuilder::sync)s
    /// of a logical warp, a warp or a group of whole warps (the block's are
    /// [`sync_blocks`](Self::sync_blocks)), and those the builder's composite ops record (a
    /// merge sort's over such a group), in program order.
    pub fn group_syncs(&self) -> usize {
        self.group_sync_ops().len()
    }

    fn group_sync_ops(&self) -> Vec<OpId> {
        self.ops_where(|k| matches!(k, OpKind::Lanes(spec) if spec.op == LaneOp::Sync))
    }

    /// The same kernel with explicit group barrier `index` (in the order
    /// [`group_syncs`](Self::group_syncs) counts) left out, verified and planned again, or
    /// `None` past the last. For verification only, as
    /// [`without_sync_block`](Self::without_sync_block).
    ///
    /// ```
    /// use coopgraph::ir::index;
    /// use coopgraph::KernelBuilder;
    ///
    /// let mut k = KernelBuilder::new("reverse8").block(32);
    /// let y = k.output::<u32>("y");
    /// let tile = k.this_warp().group_by(8);
    /// let s = k.shared_array::<u32>(32);
    /// k.shared_write(&s, index::thread_rank(), index::thread_rank());
    /// k.sync(tile);
    /// k.write(&y, index::thread_rank(), s.read(index::thread_rank() ^ 7u32));
    /// let kernel = k.build()?;
    /// assert_eq!(kernel.group_syncs(), 1);
    /// let racy = kernel.without_group_sync(0).expect("one barrier");
    /// assert_eq!(racy.group_syncs(), 0);
    /// assert!(kernel.without_group_sync(1).is_none());
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    pub fn without_group_sync(&self, index: usize) -> Option<Kernel> {
        self.without_op(self.group_sync_ops().get(index).copied())
    }

    /// The PTX module for `arch`, as a typed model. It fails only on an internal error
    /// ([`PlanError::Internal`]): the plan lacks something the planner guarantees.
    pub fn module(&self, arch: Arch) -> Result<ptx::Module, PlanError> {
        codegen::emit(&self.inner.ir, &self.inner.info, &self.inner.plan, arch)
    }

    /// The PTX text for `arch` (see [`Kernel::module`]).
    ///
    /// ```
    /// use coopgraph::ptx::Arch;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// # fn main() -> Result<(), coopgraph::Error> {
    /// let mut k = KernelBuilder::new("copy").block(64);
    /// let x = k.input::<u32>("x");
    /// let y = k.output::<u32>("y");
    /// let b = k.this_block();
    /// let t = k.load_from(b, &x, Load::direct());
    /// k.store_to(b, &y, &t, Store::direct());
    /// let ptx = k.build()?.ptx(Arch::Sm80)?;
    /// assert!(ptx.contains(".entry copy"));
    /// # Ok(())
    /// # }
    /// ```
    pub fn ptx(&self, arch: Arch) -> Result<String, PlanError> {
        Ok(ptx::write_module(&self.module(arch)?))
    }

    /// The parameters in signature order.
    pub fn signature(&self) -> Vec<ParamSig> {
        self.inner
            .ir
            .params
            .iter()
            .map(|p| ParamSig {
                name: p.name.clone(),
                kind: match p.role {
                    Role::Input => ParamKind::Input,
                    Role::Output => ParamKind::Output,
                    Role::Scalar => ParamKind::Scalar,
                    Role::Buffer => ParamKind::Buffer,
                },
                dtype: p.dtype,
            })
            .collect()
    }

    /// Elements one block handles per tile (threads × items per thread).
    pub fn block_tile(&self) -> u32 {
        self.inner.plan.block_tile
    }

    /// Whether some load or store takes its tile's offset from the block's index (no offset
    /// of its own, outside any `tiles` loop): see [`ImageParts::tile_offsets`].
    fn tile_offsets(&self) -> bool {
        let (ir, plan) = (&self.inner.ir, &self.inner.plan);
        ir.ops.iter().enumerate().any(|(i, op)| match &op.kind {
            OpKind::Load(t) | OpKind::Store(t) => {
                let tiles = plan.transfers.get(OpId(i as u32)).and_then(Option::as_ref);
                t.offset.is_none() && tiles.is_some_and(|p| p.tiles.is_none())
            }
            _ => false,
        })
    }

    /// Checks the kernel's shared memory against what a block of `arch` can have; the error
    /// names every op and shared array that needs bytes.
    pub fn check_shared_memory(&self, arch: Arch) -> Result<(), PlanError> {
        let plan = &self.inner.plan;
        let limit = arch.max_shared_per_block();
        if plan.shared_bytes <= limit {
            return Ok(());
        }
        Err(PlanError::SharedMemory {
            need: plan.shared_bytes,
            limit,
            arch,
            users: self.shared_users(),
        })
    }

    /// Every op and shared array that needs shared memory (the dynamic array aside), with
    /// where it was written and its bytes.
    fn shared_users(&self) -> Vec<(String, Loc, u32)> {
        let (ir, plan) = (&self.inner.ir, &self.inner.plan);
        plan.slices
            .iter()
            .filter_map(|(i, s)| {
                let loc = match plan.arrays.iter().find(|&(_, &sl)| sl == i) {
                    Some((a, _)) if ir.arrays[a.index()].dynamic => return None,
                    Some((a, _)) => ir.arrays[a.index()].loc,
                    None => ir.op(s.op).loc,
                };
                Some((s.label.clone(), loc, s.bytes))
            })
            .collect()
    }

    /// A readable report of the kernel and its plan: the listing (declarations, then each op
    /// with its expressions in infix and its source line, nested ops indented), then what the
    /// planner decided (arrangements, how each load and store touches memory, exchanges,
    /// shared-memory slices, barriers).
    ///
    /// ```
    /// use coopgraph::ir::index;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// # fn main() -> Result<(), coopgraph::Error> {
    /// let mut k = KernelBuilder::new("tail").block(128).items_per_thread(4);
    /// let x = k.input::<f32>("x");
    /// let y = k.output::<f32>("y");
    /// let n = k.scalar::<u32>("n");
    /// let b = k.this_block();
    /// let valid = n.expr() - index::block_index() * 512u32;
    /// let t = k.load_from(b, &x, Load::transpose().valid_items(valid.clone()));
    /// let t = k.map(&t, |v| (v + 1.0f32) * 0.5f32);
    /// k.store_to(b, &y, &t, Store::transpose().valid_items(valid));
    /// let report = k.build()?.explain();
    /// assert!(report.contains("valid=n - blockIdx.x * 512"));
    /// assert!(report.contains("d1 = map(d0) { (arg0 + 1.0) * 0.5 }"));
    /// assert!(report.contains("plan:"));
    /// # Ok(())
    /// # }
    /// ```
    pub fn explain(&self) -> String {
        let ir = &self.inner.ir;
        let plan = &self.inner.plan;
        let mut s = crate::ir::print::listing(ir, &[]);
        s.push_str("plan:\n");
        s.push_str(&format!(
            "  block {} threads, tile {} elements, shared memory {} bytes{}, {}\n",
            plan.block_threads,
            plan.block_tile,
            plan.shared_bytes,
            if plan.shared.window_dynamic {
                format!(
                    " ({} of them dynamic: the window, past the 48 KiB static limit)",
                    plan.shared.dynamic_bytes()
                )
            } else {
                String::new()
            },
            match ir.bounds {
                crate::ir::Bounds::Checked => "accesses checked against the buffers' lengths",
                crate::ir::Bounds::Unchecked => "accesses unchecked (launch_unchecked only)",
            }
        ));
        let options = &ir.options;
        if let Some(m) = options.max_registers {
            s.push_str(&format!("  at most {} registers per thread\n", m.count));
        }
        if let Some(m) = options.min_blocks {
            s.push_str(&format!(
                "  at least {} blocks per SM asked of ptxas\n",
                m.count
            ));
        }
        if options.line_info == crate::ir::LineInfo::RustLines {
            s.push_str("  line information: each op's instructions carry its Rust line\n");
        }
        if options.checks == Checks::Debug {
            s.push_str(
                "  debug checks: indices, valid items and assertions, reported after each launch\n",
            );
        }
        for (d, a) in plan.arrangements.iter() {
            if let Some(a) = a {
                s.push_str(&format!("  {d}: {a:?}\n"));
            }
        }
        for (op, t) in plan.transfers.iter() {
            if let Some(t) = t {
                s.push_str(&format!(
                    "  {op}: {:?}: access groups of {} threads x {} items, {:?}: element = item*{} + rank*{}{}{}{}\n",
                    t.algorithm,
                    t.group_threads,
                    t.items,
                    t.arrangement,
                    t.item_stride,
                    t.thread_stride,
                    if t.vector > 1 {
                        format!(", vectors of {}", t.vector)
                    } else {
                        String::new()
                    },
                    if t.read_only { ", read-only path" } else { "" },
                    t.tiles
                        .map(|op| format!(", tile from {op}"))
                        .unwrap_or_default()
                ));
            }
        }
        let listed = |ids: &mut dyn Iterator<Item = crate::planner::StepId>| {
            ids.map(|id| id.to_string()).collect::<Vec<_>>().join(" ")
        };
        for (op, list) in plan.exchanges.iter() {
            for e in list {
                s.push_str(&format!(
                    "  {op}: exchange{} {:?} -> {:?} in groups of {} threads{}{}{}, {}, steps {}\n",
                    e.data.map(|d| format!(" of {d}")).unwrap_or_default(),
                    e.from,
                    e.to,
                    e.scope,
                    if e.padded { ", padded" } else { "" },
                    if e.time_sliced {
                        format!(", {} turns", e.turns.len())
                    } else {
                        String::new()
                    },
                    if e.via_shuffles {
                        ", through shuffles"
                    } else {
                        ""
                    },
                    e.slice,
                    listed(&mut e.turns.iter().flat_map(|t| [t.write, t.read])),
                ));
            }
        }
        for (op, c) in plan.collectives.iter() {
            if let Some(c) = c {
                s.push_str(&format!(
                    "  {op}: {} shared entries of {} bytes{}{}, {}, steps {}\n",
                    c.entries,
                    c.elem_bytes,
                    match c.raking {
                        Some(r) => format!(
                            ", threads {}..{} share, raked in segments of {}",
                            r.first,
                            r.first + r.shared,
                            r.segment
                        ),
                        None => String::new(),
                    },
                    if c.padding.is_some() { ", padded" } else { "" },
                    c.slice,
                    listed(&mut c.steps.iter().copied()),
                ));
            }
        }
        for step in plan.steps.values().flatten() {
            let accesses: Vec<String> = (step.accesses.iter())
                .map(|a| format!("{} {}", if a.write { "write" } else { "read" }, a.slice))
                .collect();
            s.push_str(&format!(
                "  {}: {}; a barrier before it: {:?}\n",
                step.id,
                accesses.join(", "),
                step.scopes
            ));
        }
        for (i, sl) in plan.slices.iter() {
            let array = plan.arrays.iter().find(|&(_, &a)| a == i);
            let home = array.and_then(|(a, _)| plan.shared.arrays.get(a.index()));
            let place = match home {
                Some(ArrayHome::Own) => "in its own declaration".to_string(),
                Some(ArrayHome::Window) => format!(
                    "at {} of the window (past the static limit: checked against the window only)",
                    sl.offset
                ),
                Some(ArrayHome::Dynamic) => {
                    let at = plan.shared.dynamic_array.map_or(0, |(_, o)| o);
                    format!("dynamic, at {at} of the dynamic shared memory, sized at launch")
                }
                Some(ArrayHome::View) => "the bytes of the array it is a view of".to_string(),
                None => format!("at {}", sl.offset),
            };
            s.push_str(&format!(
                "  {i}: {} bytes {place} (align {}), live {}..={}: {}\n",
                sl.bytes, sl.align, sl.live.0, sl.live.1, sl.label
            ));
        }
        for b in &plan.barriers {
            s.push_str(&format!(
                "  barrier {:?} before {}: {:?} against {}\n",
                b.scope, b.step, b.hazard, b.after
            ));
        }
        if let Some(r) = self.resources(Arch::Sm90) {
            s.push_str(&format!("  resources on an H200: {r}\n"));
        }
        s
    }

    /// What the kernel uses of an SM when compiled for `arch` (registers, local memory and
    /// spills, shared memory) and the occupancy that allows on the common GPU of that arch
    /// ([`DeviceLimits::simulated`]), from `ptxas -v`: `None` unless `COOPGRAPH_PTXAS` names a
    /// ptxas (as in CI). [`Function::resources`](crate::runtime::Function::resources) reports a
    /// loaded kernel on its device, from the driver on a GPU. [`explain`](Self::explain) prints
    /// this report for sm_90.
    ///
    /// ```
    /// use coopgraph::ptx::Arch;
    /// use coopgraph::KernelBuilder;
    ///
    /// let kernel = KernelBuilder::new("negate").load::<f32>("x").map(|v| -v).store("y").build()?;
    /// if let Some(r) = kernel.resources(Arch::Sm80) {
    ///     assert_eq!(r.arch, Arch::Sm80);
    ///     assert_eq!(r.local_bytes, Some(0));
    ///     assert!(kernel.explain().contains("resources on an H200"));
    /// }
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    pub fn resources(&self, arch: Arch) -> Option<Resources> {
        let image = self.emit(arch).ok()?;
        ptxas_resources(&image, &DeviceLimits::simulated(arch))
    }
}

impl Compile for Kernel {
    fn cache_key(&self) -> KernelKey {
        self.inner.key.clone()
    }

    fn name(&self) -> &str {
        &self.inner.ir.name
    }

    fn emit(&self, arch: Arch) -> Result<KernelImage, RuntimeError> {
        self.check_shared_memory(arch)?;
        let shared = &self.inner.plan.shared;
        let ir = &self.inner.ir;
        let (module, sites) =
            codegen::emit_with_checks(ir, &self.inner.info, &self.inner.plan, arch)?;
        let grid_dims = module.functions.iter().map(codegen::grid_dims).max();
        Ok(KernelImage::generated(
            ImageParts {
                entry: self.inner.entry.clone(),
                ptx: ptx::write_module(&module),
                arch,
                params: self.signature(),
                block: self.inner.ir.block.dims,
                tile_elems: self.inner.plan.block_tile,
                static_smem: shared.static_bytes,
                dynamic_smem: shared.dynamic_bytes(),
                needs_cooperative: ir.needs_cooperative(),
                tile_offsets: self.tile_offsets(),
                grid_dims: grid_dims.unwrap_or(1),
                dynamic_array: shared.dynamic_array.and_then(|(i, offset)| {
                    let a = self.inner.ir.arrays.get(i)?;
                    Some(DynamicArray {
                        offset,
                        elem_bytes: a.dtype.bytes(),
                        what: format!("smem{i}: dynamic shared {} at {}", a.dtype, a.loc),
                        users: (self.shared_users().into_iter())
                            .map(|(what, loc, bytes)| format!("{loc}: {what}: {bytes} bytes"))
                            .collect(),
                    })
                }),
                hidden: {
                    let wide = self.inner.ir.wide_indexed();
                    codegen::length_params(&self.inner.ir)
                        .into_iter()
                        .map(|p| match wide.get(p.index()) {
                            Some(true) => HiddenParam::Length64 { buffer: p.index() },
                            _ => HiddenParam::Length { buffer: p.index() },
                        })
                        .chain(
                            (ir.options.checks == Checks::Debug)
                                .then_some(HiddenParam::CheckRecord),
                        )
                        .chain(ir.needs_cooperative().then_some(HiddenParam::GridBarrier))
                        .collect()
                },
            },
            self.inner.ir.bounds,
            sites,
        ))
    }
}
