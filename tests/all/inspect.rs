//! Inspecting a built kernel: the op graph (`Kernel::graph`, petgraph, DOT) and the listing and
//! plan `explain()` prints, with expressions in infix. Every kernel here is assembled for each
//! arch and run on the default device against a CPU reference.

use super::common::{Batch, device};
use coopgraph::ir::graph::{Dep, Hazard, Memory, OpGraph};
use coopgraph::ir::{Reduce, index};
use coopgraph::{Kernel, KernelBuilder, Load, Store};
use petgraph::algo::{is_cyclic_directed, toposort};
use petgraph::graph::NodeIndex;
use petgraph::visit::{EdgeFiltered, EdgeRef};

/// The edges of `g` as (from op, to op, dependence), sorted.
fn edges(g: &OpGraph) -> Vec<(u32, u32, Dep)> {
    let graph = g.graph();
    let op = |n: NodeIndex| graph[n].op.index() as u32;
    let mut v: Vec<(u32, u32, Dep)> = graph
        .edge_references()
        .map(|e| (op(e.source()), op(e.target()), *e.weight()))
        .collect();
    v.sort();
    v
}

/// The node of op `op`.
fn node(g: &OpGraph, op: u32) -> NodeIndex {
    let graph = g.graph();
    let n = graph
        .node_indices()
        .find(|&n| graph[n].op.index() as u32 == op)
        .expect("an op of the kernel");
    assert_eq!(g.node(graph[n].op), Some(n));
    n
}

fn payload(g: &OpGraph, from: u32, to: u32) -> Vec<(u32, bool)> {
    edges(g)
        .into_iter()
        .filter_map(|(a, b, d)| match d {
            Dep::Payload { data, carried } if (a, b) == (from, to) => {
                Some((data.index() as u32, carried))
            }
            _ => None,
        })
        .collect()
}

/// A running sum over the tiles of `x` (each tile's partial sums stored to `y`), then the
/// block's total stored to `y[0]`.
fn running_sum() -> (Kernel, coopgraph::ir::ParamId) {
    let mut k = KernelBuilder::new("graph_running_sum")
        .block(64)
        .items_per_thread(2);
    let x = k.input::<u32>("x");
    let y = k.output::<u32>("y");
    let n = k.scalar::<u32>("n");
    let b = k.this_block();
    let acc = k.fill(0u32); // op0, d0
    k.tiles(n, |k, _tile| {
        // op1
        let t = k.load_from(b, &x, Load::striped().oob_default(0)); // op2, d1
        let s = k.map2(&acc, &t, |a, v| a + v); // op3, d2
        k.assign(&acc, &s); // op4
        k.store_to(b, &y, &s, Store::striped()); // op5
    });
    let total = k.reduce(b, &acc, Reduce::sum()); // op6, d3
    k.store_to(
        b,
        &y,
        &total,
        Store::direct().offset(0u32).valid_items(1u32),
    ); // op7
    (k.build().expect("builds"), y.id())
}

#[test]
fn the_op_graph_links_payloads_memory_and_regions() {
    let (kernel, y_id) = running_sum();
    Batch::default().add(&kernel);
    let g = kernel.graph();
    let graph = g.graph();
    assert_eq!(graph.node_count(), 8);
    // Nodes in program order, each with its listing text.
    for (i, n) in graph.node_indices().enumerate() {
        assert_eq!(graph[n].op.index(), i, "{:?}", graph[n]);
        assert_eq!(node(&g, i as u32), n);
    }
    assert_eq!(graph[node(&g, 3)].text, "d2 = map(d0, d1) { arg0 + arg1 }");
    assert_eq!(graph[node(&g, 3)].kind, "map");
    assert_eq!(graph[node(&g, 3)].depth, 1);
    assert_eq!(graph[node(&g, 1)].depth, 0);

    // The accumulator: from the fill before the loop and, around the loop, from the assign.
    assert_eq!(payload(&g, 0, 3), vec![(0, false)]);
    assert_eq!(payload(&g, 4, 3), vec![(0, true)]);
    assert_eq!(payload(&g, 2, 3), vec![(1, false)]);
    assert_eq!(payload(&g, 3, 4), vec![(2, false)]);
    assert_eq!(payload(&g, 3, 5), vec![(2, false)]);
    // After the loop: the fill (no tile) or the last assign.
    assert_eq!(payload(&g, 0, 6), vec![(0, false)]);
    assert_eq!(payload(&g, 4, 6), vec![(0, false)]);
    assert_eq!(payload(&g, 6, 7), vec![(3, false)]);
    let all = edges(&g);
    let payloads = all
        .iter()
        .filter(|e| matches!(e.2, Dep::Payload { .. }))
        .count();
    assert_eq!(payloads, 8, "{all:#?}");
    // `y` is written in the loop and after it; `x` is only read.
    let memory: Vec<_> = all
        .iter()
        .filter(|e| matches!(e.2, Dep::Memory { .. }))
        .collect();
    assert_eq!(
        memory,
        vec![&(
            5,
            7,
            Dep::Memory {
                memory: Memory::Buffer(y_id),
                hazard: Hazard::WriteAfterWrite
            }
        )]
    );
    let nested: Vec<(u32, u32)> = all
        .iter()
        .filter(|e| e.2 == Dep::Nested)
        .map(|e| (e.0, e.1))
        .collect();
    assert_eq!(nested, vec![(1, 2), (1, 3), (1, 4), (1, 5)]);

    // Around the loop the graph has a cycle; without the carried edge, program order is a
    // topological order.
    assert!(is_cyclic_directed(graph));
    let forward = EdgeFiltered::from_fn(graph, |e| {
        !matches!(e.weight(), Dep::Payload { carried: true, .. })
    });
    let order = toposort(&forward, None).expect("acyclic");
    let position = |op: u32| order.iter().position(|&n| graph[n].op.index() as u32 == op);
    for (a, b, d) in &all {
        if !matches!(d, Dep::Payload { carried: true, .. }) {
            assert!(position(*a) < position(*b), "{a} -> {b}");
        }
    }

    // DOT: every node and edge, labelled.
    let dot = g.dot();
    assert!(dot.starts_with("digraph {"), "{dot}");
    assert_eq!(dot.matches(" -> ").count(), graph.edge_count(), "{dot}");
    assert!(
        dot.contains("op3: d2 = map(d0, d1) { arg0 + arg1 }"),
        "{dot}"
    );
    assert!(dot.contains("d0 (previous iteration)"), "{dot}");
    assert!(dot.contains("style=dashed"), "{dot}");

    // The kernel computes what the graph says.
    let dev = device();
    let f = dev.compile(&kernel).expect("compiles");
    let n = 1000usize;
    let xs: Vec<u32> = (0..n as u32).map(|i| i * 7 + 1).collect();
    let x = dev.upload(&xs).expect("upload");
    let mut out = dev.alloc_zeroed::<u32>(n).expect("alloc");
    f.launch_grid(1, (&x, &mut out, n as u32)).expect("launch");
    let got = out.to_vec().expect("download");
    // One block: thread r's two slots accumulate positions r + 64 i of each tile of 128
    // (striped); each tile's stored partials are the running sums of their slot.
    let mut acc = vec![0u32; 128];
    let mut want = vec![0u32; n];
    for tile in 0..n.div_ceil(128) {
        for (p, a) in acc.iter_mut().enumerate() {
            let i = tile * 128 + p;
            *a = a.wrapping_add(xs.get(i).copied().unwrap_or(0));
            if i < n {
                want[i] = *a;
            }
        }
    }
    want[0] = acc.iter().fold(0u32, |s, v| s.wrapping_add(*v));
    assert_eq!(got, want);
}

#[test]
fn branches_join_the_writes_that_reach_past_them() {
    let build = |with_else: bool| {
        let mut k = KernelBuilder::new(format!("graph_branch_{with_else}"))
            .block(32)
            .items_per_thread(1);
        let x = k.input::<i32>("x");
        let y = k.output::<i32>("y");
        let b = k.this_block();
        let t = k.load_from(b, &x, Load::direct()); // op0
        let d = k.fill(5i32); // op1
        let cond = t.item(0).lt(0i32);
        if with_else {
            // If recorded after its arms: op2 (then), op3 (else), op4 (if).
            k.if_else(
                cond,
                |k| {
                    let m = k.map(&t, |v| -(v + 1i32));
                    k.assign(&d, &m);
                },
                |k| k.assign(&d, &t),
            );
        } else {
            k.if_(cond, |k| k.assign(&d, &t));
        }
        k.store_to(b, &y, &d, Store::direct());
        k.build().expect("builds")
    };
    let mut batch = Batch::default();
    let both = build(true);
    let one = build(false);
    batch.add(&both);
    batch.add(&one);
    batch.finish();

    let g = both.graph();
    let graph = g.graph();
    let kinds: Vec<&str> = graph.node_weights().map(|n| n.kind).collect();
    assert_eq!(
        kinds,
        ["load", "map", "if", "map", "assign", "assign", "store"]
    );
    // The arms are recorded before the branch: op2 and op3 (then), op4 (else), op5 (if).
    assert_eq!(graph[node(&g, 5)].kind, "if");
    // Both arms write `d`: only they reach the store, not the fill.
    let store = 6;
    let into_store: Vec<u32> = edges(&g)
        .into_iter()
        .filter(|e| e.1 == store && matches!(e.2, Dep::Payload { .. }))
        .map(|e| e.0)
        .collect();
    assert_eq!(into_store, vec![3, 4]);

    let g = one.graph();
    let store = 4;
    let into_store: Vec<u32> = edges(&g)
        .into_iter()
        .filter(|e| e.1 == store && matches!(e.2, Dep::Payload { .. }))
        .map(|e| e.0)
        .collect();
    // Without an else, the fill reaches past the branch too.
    assert_eq!(into_store, vec![1, 2]);

    let dev = device();
    let xs: Vec<i32> = (0..32).map(|i| i - 16).collect();
    let x = dev.upload(&xs).expect("upload");
    for (kernel, arm) in [(&both, true), (&one, false)] {
        let f = dev.compile(kernel).expect("compiles");
        let mut y = dev.alloc_zeroed::<i32>(32).expect("alloc");
        f.launch_grid(1, (&x, &mut y)).expect("launch");
        // Thread r's first item decides for its whole payload (items_per_thread 1 here).
        let want: Vec<i32> = xs
            .iter()
            .map(|&v| match (v < 0, arm) {
                (true, true) => -(v + 1),
                (true, false) => v,
                (false, true) => v,
                (false, false) => 5,
            })
            .collect();
        assert_eq!(y.to_vec().expect("download"), want, "{}", kernel.name());
    }
}

#[test]
fn shared_arrays_are_memory_dependences() {
    let mut k = KernelBuilder::new("graph_shared")
        .block(64)
        .items_per_thread(1);
    let x = k.input::<u32>("x");
    let y = k.output::<u32>("y");
    let b = k.this_block();
    let s = k.shared_array::<u32>(64);
    let t = k.load_from(b, &x, Load::direct()); // op0
    k.shared_write(&s, index::thread_rank(), t.item(0)); // op1
    k.sync_block(); // op2
    let r = k.fill(s.read(63u32 - index::thread_rank())); // op3
    k.store_to(b, &y, &r, Store::direct()); // op4
    let kernel = k.build().expect("builds");
    Batch::default().add(&kernel);
    let g = kernel.graph();
    let memory: Vec<(u32, u32, String)> = edges(&g)
        .into_iter()
        .filter_map(|(a, b, d)| match d {
            Dep::Memory {
                memory: Memory::Shared(array),
                hazard: Hazard::ReadAfterWrite,
            } => Some((a, b, array.to_string())),
            Dep::Memory { .. } => panic!("{d:?}"),
            _ => None,
        })
        .collect();
    assert_eq!(memory, vec![(1, 3, "smem0".to_string())]);
    let text = &g.graph()[node(&g, 3)].text;
    assert_eq!(text, "d1 = map() { smem0[63 - threadIdx.x] }");

    let dev = device();
    let f = dev.compile(&kernel).expect("compiles");
    let xs: Vec<u32> = (100..164).collect();
    let xb = dev.upload(&xs).expect("upload");
    let mut yb = dev.alloc_zeroed::<u32>(64).expect("alloc");
    f.launch_grid(1, (&xb, &mut yb)).expect("launch");
    let want: Vec<u32> = xs.iter().rev().copied().collect();
    assert_eq!(yb.to_vec().expect("download"), want);
}

/// The listing `explain()` prints writes expressions in infix, with parentheses only where
/// the grouping differs from what the operators' precedence gives.
#[test]
fn explain_writes_expressions_in_infix() {
    let mut k = KernelBuilder::new("explain_infix")
        .block(128)
        .items_per_thread(4);
    let x = k.input::<i32>("x");
    let y = k.output::<f32>("y");
    let n = k.scalar::<u32>("n");
    let b = k.this_block();
    let valid = n.expr() - index::block_index() * 512u32;
    let t = k.load_from(b, &x, Load::transpose().valid_items(valid).oob_default(0));
    let a = k.map(&t, |v| (v + 1i32) * 3i32);
    let c = k.map(&a, |v| &v - (&v - 2i32) - -4i32);
    let d = k.map(&c, |v| ((&v << 2u32) + 1i32).min(&v * -3i32));
    let e = k.map(&d, |v| {
        v.gt(1i32)
            .and(&v.lt(500i32).or(&v.eq(-1i32)))
            .select(-(&v + 1i32), v.abs())
    });
    let f = k.map(&e, |v| (&v + 1i32).cast::<f32>() * 0.5f32 + 1.0f32);
    k.store_to(
        b,
        &y,
        &f,
        Store::transpose().valid_items(n.expr() - index::block_index() * 512u32),
    );
    let kernel = k.build().expect("builds");
    Batch::default().add(&kernel);
    let text = kernel.explain();
    for want in [
        "valid=n - blockIdx.x * 512",
        "{ (arg0 + 1) * 3 }",
        "{ arg0 - (arg0 - 2) - -4 }",
        "{ min((arg0 << 2) + 1, arg0 * -3) }",
        "{ arg0 > 1 && (arg0 < 500 || arg0 == -1) ? -(arg0 + 1) : abs(arg0) }",
        "{ (arg0 + 1) as f32 * 0.5 + 1.0 }",
        "plan:",
    ] {
        assert!(text.contains(want), "{want:?} not in\n{text}");
    }

    let dev = device();
    let func = dev.compile(&kernel).expect("compiles");
    let n = 700usize;
    let xs: Vec<i32> = (0..n as i32).map(|i| i * 37 % 1201 - 600).collect();
    let xb = dev.upload(&xs).expect("upload");
    let mut yb = dev.alloc_zeroed::<f32>(n).expect("alloc");
    func.launch_over(n, (&xb, &mut yb, n as u32))
        .expect("launch");
    let want: Vec<f32> = xs
        .iter()
        .map(|&v| {
            let a = (v + 1) * 3;
            let c = a - (a - 2) + 4;
            let d = ((c << 2) + 1).min(c * -3);
            let e = if d > 1 && (d < 500 || d == -1) {
                -(d + 1)
            } else {
                d.abs()
            };
            (e + 1) as f32 * 0.5 + 1.0
        })
        .collect();
    assert_eq!(yb.to_vec().expect("download"), want);
}

/// Indexed reads and writes of a read-write buffer and atomics are memory dependences: an
/// atomic reads and writes its element, and its old value is a payload.
#[test]
fn indexed_accesses_and_atomics_are_memory_dependences() {
    use coopgraph::ir::Atomic;
    let mut k = KernelBuilder::new("graph_indexed")
        .block(64)
        .items_per_thread(1);
    let a = k.buffer::<u32>("a");
    let count = k.output::<u32>("count");
    let t = index::thread_rank();
    let v = a.at(&t); // read by op0
    k.write(&a, &t, v + 1u32); // op0
    let old = k.atomic(&count, 0u32, Atomic::add(a.at(&t))); // op1 (d0)
    k.write(&a, t.clone(), old); // op2
    let kernel = k.build().expect("builds");
    Batch::default().add(&kernel);
    let g = kernel.graph();
    let memory: Vec<(u32, u32, String, Hazard)> = edges(&g)
        .into_iter()
        .filter_map(|(from, to, d)| match d {
            Dep::Memory { memory, hazard } => Some((from, to, memory.to_string(), hazard)),
            _ => None,
        })
        .collect();
    let a_name = Memory::Buffer(a.id()).to_string();
    let c_name = Memory::Buffer(count.id()).to_string();
    for want in [
        (0, 1, a_name.clone(), Hazard::ReadAfterWrite),
        (0, 2, a_name.clone(), Hazard::WriteAfterWrite),
        (1, 2, a_name.clone(), Hazard::WriteAfterRead),
    ] {
        assert!(memory.contains(&want), "{want:?} in {memory:?}");
    }
    assert!(
        memory.iter().all(|(_, _, m, _)| *m != c_name),
        "one atomic on `count`: no dependence with itself, {memory:?}"
    );
    assert_eq!(payload(&g, 1, 2), vec![(0, false)]);

    let dev = device();
    let f = dev.compile(&kernel).expect("compiles");
    let mut ab = dev.upload(&(0..64u32).collect::<Vec<_>>()).expect("upload");
    let mut cb = dev.alloc_zeroed::<u32>(1).expect("alloc");
    f.launch_grid(1, (&mut ab, &mut cb)).expect("launch");
    // Each thread adds its a[t] + 1 to the counter: sum over t of (t + 1).
    assert_eq!(cb.to_vec().expect("download"), vec![(1..=64).sum::<u32>()]);
    let mut olds = ab.to_vec().expect("download");
    olds.sort();
    olds.dedup();
    assert_eq!(olds.len(), 64, "every thread saw another old value");
}

/// A `while_` loop's condition reads what its body wrote (a carried edge), and the writes
/// before a `break_` reach past the loop.
#[test]
fn while_loops_and_breaks_in_the_op_graph() {
    let mut k = KernelBuilder::new("graph_while")
        .block(32)
        .items_per_thread(1);
    let y = k.output::<u32>("y");
    let t = index::thread_rank();
    // An op is numbered when it is pushed: a loop or branch after its body.
    let v = k.var(0u32); // op0, d0
    let steps = k.var(0u32); // op1, d1
    k.while_(v.get().lt(100u32), |k| {
        // op7
        k.set(&v, v.get() + t.clone() + 1u32); // op2
        k.if_(v.get().gt(50u32), |k| {
            // op5
            k.set(&steps, 1000u32); // op3
            k.break_(); // op4
        });
        k.set(&steps, steps.get() + 1u32); // op6
    });
    k.write(&y, t.clone(), v.get() + steps.get()); // op8
    let kernel = k.build().expect("builds");
    Batch::default().add(&kernel);
    let g = kernel.graph();
    // The condition reads d0 from before the loop and, carried, from the body.
    assert_eq!(payload(&g, 0, 7), vec![(0, false)]);
    assert_eq!(payload(&g, 2, 7), vec![(0, true)]);
    // Past the loop, d1 comes from before it, from the break's path and from the body's end.
    assert_eq!(payload(&g, 1, 8), vec![(1, false)]);
    assert_eq!(payload(&g, 3, 8), vec![(1, false)]);
    assert_eq!(payload(&g, 6, 8), vec![(1, false)]);
    // The body's last set reads its own previous iteration, never the break's path.
    assert_eq!(payload(&g, 6, 6), vec![(1, true)]);
    assert_eq!(payload(&g, 3, 6), vec![]);

    let dev = device();
    let f = dev.compile(&kernel).expect("compiles");
    let mut yb = dev.alloc_zeroed::<u32>(32).expect("alloc");
    f.launch_grid(1, (&mut yb,)).expect("launch");
    let want: Vec<u32> = (0..32u32)
        .map(|t| {
            let (mut v, mut steps) = (0u32, 0u32);
            while v < 100 {
                v += t + 1;
                if v > 50 {
                    steps = 1000;
                    break;
                }
                steps += 1;
            }
            v + steps
        })
        .collect();
    assert_eq!(yb.to_vec().expect("download"), want);
}
