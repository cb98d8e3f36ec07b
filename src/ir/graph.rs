//! The op graph: a kernel's ops as the nodes of a `petgraph` graph, with an edge for each
//! dependence between two of them (a payload one writes and the other reads, a buffer or shared
//! array both touch, one writing) and for each op nested in another's region. For inspection:
//! what feeds what, what could run apart, and a picture of it ([`OpGraph::dot`]).
//!
//! Payload dependences are reaching definitions over the structured control flow: an edge from
//! each op whose write of a payload may still be there when another op reads it (a write of
//! every slot hides the writes before it; a write of some slots, as `set_item` or a load of a
//! partial tile without a default, does not). Inside a loop, a read also sees the writes of the
//! previous iteration; such an edge goes backwards in program order and is marked `carried`.
//! Memory dependences follow program order only: an edge from each earlier access of a buffer
//! or shared array to each later one when either writes (iterations of a loop, which move
//! different tiles, get none). Without the carried edges the graph is acyclic, and program
//! order is a topological order of it.

use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::BTreeSet;
use std::fmt;

use petgraph::dot::Dot;
use petgraph::graph::{DiGraph, EdgeReference, NodeIndex};

use super::entities::{ArrayId, DataId, ExprId, Loc, LocalId, OpId, ParamId, RegionId};
use super::expr::ExprKind;
use super::ops::{AtomicMemory, AtomicOp, Ir, OpKind};
use super::print::describe;

/// An op, as a node of the [`OpGraph`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpNode {
    /// The op.
    pub op: OpId,
    /// Its kind's name (`load`, `map`, `tiles`...).
    pub kind: &'static str,
    /// The op as the kernel's listing shows it (`d1 = map(d0) { arg0 * 2 }`).
    pub text: String,
    /// How many regions enclose it (0 in the kernel's body).
    pub depth: usize,
    /// Where the user made it.
    pub loc: Loc,
}

impl fmt::Display for OpNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}\n{}", self.op, self.text, self.loc)
    }
}

/// A memory that ops read and write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Memory {
    /// A buffer parameter (global memory).
    Buffer(ParamId),
    /// A shared array.
    Shared(ArrayId),
    /// A per-thread local array (each thread's own: its accesses are ordered in the thread).
    Local(LocalId),
}

impl fmt::Display for Memory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Memory::Buffer(p) => write!(f, "{p}"),
            Memory::Shared(a) => write!(f, "{a}"),
            Memory::Local(a) => write!(f, "{a}"),
        }
    }
}

/// The order two accesses of one memory must keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Hazard {
    /// The later op reads what the earlier wrote.
    ReadAfterWrite,
    /// The later op overwrites what the earlier read.
    WriteAfterRead,
    /// Both write.
    WriteAfterWrite,
}

/// An edge of the [`OpGraph`]: why its target depends on its source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dep {
    /// The target reads payload `data` as the source wrote it.
    Payload {
        /// The payload.
        data: DataId,
        /// The value comes around a loop: from the source in the previous iteration.
        carried: bool,
    },
    /// Both touch `memory`, the earlier one first.
    Memory {
        /// The buffer or shared array.
        memory: Memory,
        /// Which access writes.
        hazard: Hazard,
    },
    /// The target runs inside a region of the source (a branch, a loop, a tiles loop, a scan's
    /// prefix callback), so the source decides whether and how often it runs.
    Nested,
}

impl fmt::Display for Dep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dep::Payload {
                data,
                carried: false,
            } => write!(f, "{data}"),
            Dep::Payload {
                data,
                carried: true,
            } => write!(f, "{data} (previous iteration)"),
            Dep::Memory { memory, hazard } => {
                let h = match hazard {
                    Hazard::ReadAfterWrite => "RAW",
                    Hazard::WriteAfterRead => "WAR",
                    Hazard::WriteAfterWrite => "WAW",
                };
                write!(f, "{memory} {h}")
            }
            Dep::Nested => f.write_str("runs in"),
        }
    }
}

/// A kernel's op graph (see the [module documentation](self)):
/// [`Kernel::graph`](crate::Kernel::graph) makes it.
#[derive(Debug, Clone)]
pub struct OpGraph {
    graph: DiGraph<OpNode, Dep>,
    nodes: FxHashMap<OpId, NodeIndex>,
}

impl OpGraph {
    /// The graph: one node per op, in program order (node `i` is the `i`th op of a pre-order
    /// walk), and the edges.
    pub fn graph(&self) -> &DiGraph<OpNode, Dep> {
        &self.graph
    }

    /// The graph, owned.
    pub fn into_graph(self) -> DiGraph<OpNode, Dep> {
        self.graph
    }

    /// The node of `op` (`None` for an op of no region).
    pub fn node(&self, op: OpId) -> Option<NodeIndex> {
        self.nodes.get(&op).copied()
    }

    /// The graph in Graphviz's DOT language: ops as boxes labelled with their text and source
    /// line, payload dependences as solid arrows named by the payload (carried ones grey and
    /// not constraining the layout), memory dependences dashed, nesting dotted. `dot -Tsvg`
    /// draws it.
    pub fn dot(&self) -> String {
        let edge = |_, e: EdgeReference<'_, Dep>| match e.weight() {
            Dep::Payload { carried: false, .. } => String::new(),
            Dep::Payload { carried: true, .. } => "color=gray, constraint=false".to_string(),
            Dep::Memory { .. } => "style=dashed, color=firebrick".to_string(),
            Dep::Nested => "style=dotted, arrowhead=none".to_string(),
        };
        let node = |_, (_, n): (NodeIndex, &OpNode)| {
            let shape = match n.kind {
                "if" | "for" | "tiles" => "shape=diamond",
                "load" | "store" => "shape=box, style=bold",
                _ => "shape=box",
            };
            shape.to_string()
        };
        Dot::with_attr_getters(&self.graph, &[], &edge, &node).to_string()
    }
}

/// The op graph of `ir` (see the [module documentation](self)). For verified IR only (the
/// walk recurses once per level of nesting, which the verifier bounds): `Kernel::graph`.
pub(crate) fn op_graph(ir: &Ir) -> OpGraph {
    let mut graph = DiGraph::new();
    let mut nodes = FxHashMap::default();
    ir.walk(|op, depth| {
        if let Some(data) = ir.ops.get(op.index()) {
            let node = graph.add_node(OpNode {
                op,
                kind: data.kind.name(),
                text: describe(ir, op),
                depth,
                loc: data.loc,
            });
            nodes.insert(op, node);
        }
    });
    let mut deps = Deps {
        ir,
        nodes: &nodes,
        edges: BTreeSet::new(),
        loops: 0,
        exposed: Vec::new(),
        jumps: Vec::new(),
    };
    let mut state = State::default();
    let mut entered = vec![false; ir.regions.len()];
    deps.region(ir.body, &mut state, &mut entered);
    let Deps { edges, .. } = deps;
    for (from, to, dep) in edges {
        graph.add_edge(from, to, dep);
    }
    OpGraph { graph, nodes }
}

/// The states at a loop's jumps: each `break_`'s reaches past the loop, each `continue_`'s
/// the next iteration (and past the loop, when that was the last).
#[derive(Default)]
struct Jumps {
    breaks: Vec<State>,
    continues: Vec<State>,
}

/// Who may have written a payload last: ops, or the entry of an enclosing loop's body (the
/// previous iteration's writes, resolved when the loop's walk ends).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Writer {
    Op(NodeIndex),
    LoopEntry(usize),
}

/// What the walk knows at a point of the program.
#[derive(Debug, Clone, Default)]
struct State {
    /// Per payload, the writes that may reach here.
    writers: FxHashMap<DataId, BTreeSet<Writer>>,
    /// Per memory, every access on some path to here (node, whether it writes).
    accesses: FxHashMap<Memory, BTreeSet<(NodeIndex, bool)>>,
}

impl State {
    fn join(&mut self, other: State) {
        for (d, w) in other.writers {
            self.writers.entry(d).or_default().extend(w);
        }
        for (m, a) in other.accesses {
            self.accesses.entry(m).or_default().extend(a);
        }
    }
}

struct Deps<'a> {
    ir: &'a Ir,
    nodes: &'a FxHashMap<OpId, NodeIndex>,
    edges: BTreeSet<(NodeIndex, NodeIndex, Dep)>,
    /// Loops entered so far (the ids of `Writer::LoopEntry`).
    loops: usize,
    /// Per enclosing loop, innermost last: the states at its `break_`s and `continue_`s.
    jumps: Vec<Jumps>,
    /// Reads that saw a loop's entry: (loop id, reader, payload).
    exposed: Vec<(usize, NodeIndex, DataId)>,
}

impl Deps<'_> {
    fn region(&mut self, r: RegionId, state: &mut State, entered: &mut [bool]) {
        // The verifier bounds nesting; the walk enters each region once on any IR.
        match entered.get_mut(r.index()) {
            Some(e) if !*e => *e = true,
            _ => return,
        }
        let ops: Vec<OpId> = self.ir.regions[r.index()].clone();
        for op in ops {
            self.op(op, state, entered);
        }
    }

    fn read(&mut self, node: NodeIndex, data: DataId, state: &State) {
        let Some(writers) = state.writers.get(&data) else {
            return;
        };
        for w in writers {
            match *w {
                Writer::Op(from) => {
                    let carried = from.index() >= node.index();
                    self.edges
                        .insert((from, node, Dep::Payload { data, carried }));
                }
                Writer::LoopEntry(l) => self.exposed.push((l, node, data)),
            }
        }
    }

    /// A write of `data` by `node`: of every slot (`whole`), hiding the writes before, or of
    /// some.
    fn write(&mut self, node: NodeIndex, data: DataId, whole: bool, state: &mut State) {
        let set = state.writers.entry(data).or_default();
        if whole {
            set.clear();
        }
        set.insert(Writer::Op(node));
    }

    fn access(&mut self, node: NodeIndex, memory: Memory, writes: bool, state: &mut State) {
        // A view's accesses are its array's.
        let memory = match memory {
            Memory::Shared(a) => Memory::Shared(self.ir.array_storage(a)),
            m => m,
        };
        let seen = state.accesses.entry(memory).or_default();
        for &(from, wrote) in seen.iter() {
            let hazard = match (wrote, writes) {
                (false, false) => continue,
                (true, false) => Hazard::ReadAfterWrite,
                (false, true) => Hazard::WriteAfterRead,
                (true, true) => Hazard::WriteAfterWrite,
            };
            if from != node {
                self.edges
                    .insert((from, node, Dep::Memory { memory, hazard }));
            }
        }
        seen.insert((node, writes));
    }

    /// The payloads and memories (shared arrays, buffers read by index) expression `e` reads,
    /// each once.
    fn expr_reads(&self, e: ExprId, datas: &mut BTreeSet<DataId>, mems: &mut BTreeSet<Memory>) {
        let mut stack = vec![e];
        let mut seen = FxHashSet::default();
        while let Some(id) = stack.pop() {
            if !seen.insert(id) {
                continue;
            }
            let Some(n) = self.ir.exprs.get(id) else {
                continue;
            };
            match &n.kind {
                ExprKind::Item { data, .. } => {
                    datas.insert(*data);
                }
                ExprKind::SharedRead(a, _) => {
                    mems.insert(Memory::Shared(*a));
                }
                ExprKind::LocalRead(a, _) => {
                    mems.insert(Memory::Local(*a));
                }
                ExprKind::GlobalRead(p, _) => {
                    mems.insert(Memory::Buffer(*p));
                }
                _ => {}
            }
            stack.extend(n.kind.children().copied());
        }
    }

    /// The reads of expressions `exprs` by `node`.
    fn read_exprs(&mut self, node: NodeIndex, exprs: &[ExprId], state: &mut State) {
        let (mut datas, mut mems) = (BTreeSet::new(), BTreeSet::new());
        for &e in exprs {
            self.expr_reads(e, &mut datas, &mut mems);
        }
        for d in datas {
            self.read(node, d, state);
        }
        for m in mems {
            self.access(node, m, false, state);
        }
    }

    /// The op's reads and writes, and the regions it holds.
    fn op(&mut self, op: OpId, state: &mut State, entered: &mut [bool]) {
        let (Some(&node), Some(data)) = (self.nodes.get(&op), self.ir.ops.get(op.index())) else {
            return;
        };
        let kind = &data.kind;
        for sub in kind.regions() {
            for &inner in self.ir.regions.get(sub.index()).into_iter().flatten() {
                if let Some(&to) = self.nodes.get(&inner) {
                    self.edges.insert((node, to, Dep::Nested));
                }
            }
        }
        match kind {
            OpKind::Load(t) => {
                self.read_exprs(node, &kind.exprs(), state);
                self.access(node, Memory::Buffer(t.param), false, state);
                let whole = t.valid.is_none() || t.oob_default.is_some();
                self.write(node, t.data, whole, state);
            }
            OpKind::Store(t) => {
                self.read_exprs(node, &kind.exprs(), state);
                self.read(node, t.data, state);
                self.access(node, Memory::Buffer(t.param), true, state);
            }
            OpKind::Map { dst, srcs, expr } => {
                for &s in srcs {
                    self.read(node, s, state);
                }
                self.read_exprs(node, &[*expr], state);
                self.write(node, *dst, true, state);
            }
            OpKind::SetItem { dst, expr, .. } => {
                self.read_exprs(node, &[*expr], state);
                self.write(node, *dst, false, state);
            }
            OpKind::Assign { dst, src } => {
                self.read(node, *src, state);
                self.write(node, *dst, true, state);
            }
            OpKind::SharedWrite { array, .. } => {
                self.read_exprs(node, &kind.exprs(), state);
                self.access(node, Memory::Shared(*array), true, state);
            }
            OpKind::LocalWrite { array, .. } => {
                self.read_exprs(node, &kind.exprs(), state);
                self.access(node, Memory::Local(*array), true, state);
            }
            OpKind::GlobalWrite { param, .. } => {
                self.read_exprs(node, &kind.exprs(), state);
                self.access(node, Memory::Buffer(*param), true, state);
            }
            OpKind::ReadRun { param, dst, .. } => {
                self.read_exprs(node, &kind.exprs(), state);
                self.access(node, Memory::Buffer(*param), false, state);
                self.write(node, *dst, true, state);
            }
            OpKind::WriteRun { param, src, .. } => {
                self.read_exprs(node, &kind.exprs(), state);
                self.read(node, *src, state);
                self.access(node, Memory::Buffer(*param), true, state);
            }
            OpKind::Atomic(a) => {
                self.read_exprs(node, &kind.exprs(), state);
                let memory = match a.memory {
                    AtomicMemory::Global(p) => Memory::Buffer(p),
                    AtomicMemory::Shared(arr) => Memory::Shared(arr),
                };
                // A read-modify-write reads the element and writes it; a load only reads.
                self.access(node, memory, false, state);
                if a.op != AtomicOp::Load {
                    self.access(node, memory, true, state);
                }
                self.write(node, a.old, true, state);
            }
            OpKind::Lanes(l) => {
                self.read_exprs(node, &kind.exprs(), state);
                if let Some(m) = l.members {
                    self.read(node, m, state);
                }
                if let Some(out) = l.out {
                    self.write(node, out, true, state);
                }
            }
            OpKind::SyncBlock | OpKind::SyncGrid | OpKind::Nanosleep { .. } => {}
            OpKind::Cluster(c) => {
                self.read_exprs(node, &kind.exprs(), state);
                if let Some(arr) = c.array() {
                    let atomic = matches!(c, super::ops::ClusterOp::Atomic { .. });
                    let writes = !matches!(c, super::ops::ClusterOp::Read { .. });
                    if atomic || !writes {
                        self.access(node, Memory::Shared(arr), false, state);
                    }
                    if writes {
                        self.access(node, Memory::Shared(arr), true, state);
                    }
                }
                if let Some(d) = c.dst() {
                    self.write(node, d, true, state);
                }
            }
            OpKind::Print { .. } => self.read_exprs(node, &kind.exprs(), state),
            OpKind::Reduce(r) => {
                self.read_exprs(node, &kind.exprs(), state);
                self.read(node, r.src, state);
                self.write(node, r.dst, true, state);
            }
            OpKind::Scan(s) => {
                let mut before: Vec<ExprId> = s.initial.into_iter().chain(s.valid).collect();
                if let super::ops::ReduceOp::Custom { expr, .. } = s.op {
                    before.push(expr);
                }
                self.read_exprs(node, &before, state);
                self.read(node, s.src, state);
                if let Some(a) = s.aggregate {
                    self.write(node, a, true, state);
                }
                if let Some(cb) = &s.callback {
                    // The callback runs once, after the total is known; the prefix it leaves
                    // seeds the scan.
                    self.region(cb.body, state, entered);
                    self.read_exprs(node, &[cb.prefix], state);
                }
                self.write(node, s.dst, true, state);
            }
            OpKind::Neighbor(nb) => {
                self.read_exprs(node, &kind.exprs(), state);
                self.read(node, nb.src, state);
                self.write(node, nb.dst, true, state);
                if let Some(s) = nb.shifted_out {
                    self.write(node, s, true, state);
                }
            }
            OpKind::Scatter {
                src,
                ranks,
                flags,
                dst,
                holes,
                permutation,
                ..
            } => {
                for d in [Some(*src), Some(*ranks), *flags].into_iter().flatten() {
                    self.read(node, d, state);
                }
                self.write(node, *dst, holes.is_some() || *permutation, state);
            }
            OpKind::Exchange { src, dst, .. } => {
                self.read(node, *src, state);
                self.write(node, *dst, true, state);
            }
            OpKind::If {
                cond,
                then,
                otherwise,
            } => {
                self.read_exprs(node, &[*cond], state);
                let mut taken = state.clone();
                self.region(*then, &mut taken, entered);
                if let Some(o) = otherwise {
                    let mut other = state.clone();
                    self.region(*o, &mut other, entered);
                    *state = other;
                }
                // Without an `else`, the state before the branch reaches past it too.
                state.join(taken);
            }
            OpKind::For { body, .. } | OpKind::Tiles { body, .. } => {
                self.read_exprs(node, &kind.exprs(), state);
                self.loop_body(*body, state, entered);
            }
            OpKind::While { cond, body } => {
                self.read_exprs(node, &[*cond], state);
                self.loop_body(*body, state, entered);
                // The condition is evaluated again after each iteration: it reads what the
                // body wrote (carried edges, the body's ops coming after the loop's).
                self.read_exprs(node, &[*cond], state);
            }
            OpKind::Break | OpKind::Continue => {
                // Nothing after a jump runs on its path: the state goes to the loop.
                let here = std::mem::take(state);
                if let Some(j) = self.jumps.last_mut() {
                    if matches!(kind, OpKind::Break) {
                        j.breaks.push(here);
                    } else {
                        j.continues.push(here);
                    }
                }
            }
            OpKind::ReturnIf { cond } => {
                // The threads where it holds leave; the others go on with the same state.
                self.read_exprs(node, &[*cond], state);
            }
            OpKind::Assert { cond, .. } => self.read_exprs(node, &[*cond], state),
        }
    }

    /// A loop's body, run any number of times: its reads see the writes before the loop and,
    /// through its entry, the writes of the previous iteration (carried edges); after it, the
    /// writes before it and those of its last iteration may reach.
    fn loop_body(&mut self, body: RegionId, state: &mut State, entered: &mut [bool]) {
        let id = self.loops;
        self.loops += 1;
        let mut inside = state.clone();
        let first_exposed = self.exposed.len();
        let entry = Writer::LoopEntry(id);
        // Every payload, so a read of one written only inside the body sees the entry.
        for d in 0..self.ir.datas.len() {
            inside
                .writers
                .entry(DataId(d as u32))
                .or_default()
                .insert(entry);
        }
        self.jumps.push(Jumps::default());
        self.region(body, &mut inside, entered);
        let jumps = self.jumps.pop().unwrap_or_default();
        // A `continue_` ends an iteration as the body's end does.
        for c in jumps.continues {
            inside.join(c);
        }
        // The reads that saw this loop's entry also see what the body's end holds.
        let mine: Vec<(NodeIndex, DataId)> = self.exposed[first_exposed..]
            .iter()
            .filter(|e| e.0 == id)
            .map(|e| (e.1, e.2))
            .collect();
        self.exposed.retain(|e| e.0 != id);
        for (reader, data) in mine {
            let writers: Vec<Writer> = inside
                .writers
                .get(&data)
                .into_iter()
                .flatten()
                .copied()
                .collect();
            for w in writers {
                match w {
                    Writer::Op(from) => {
                        let carried = from.index() >= reader.index();
                        self.edges
                            .insert((from, reader, Dep::Payload { data, carried }));
                    }
                    // An enclosing loop's entry seen through this loop's whole body: that
                    // loop resolves it.
                    Writer::LoopEntry(outer) if outer != id => {
                        self.exposed.push((outer, reader, data))
                    }
                    Writer::LoopEntry(_) => {}
                }
            }
        }
        for w in inside.writers.values_mut() {
            w.remove(&entry);
        }
        inside.writers.retain(|_, w| !w.is_empty());
        state.join(inside);
        for mut b in jumps.breaks {
            for w in b.writers.values_mut() {
                w.remove(&entry);
            }
            b.writers.retain(|_, w| !w.is_empty());
            state.join(b);
        }
    }
}
