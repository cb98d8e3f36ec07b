//! The interpreter's own tests: orderings it must not assume.

use super::{Arg, Launch, run, value};
use coopgraph::KernelBuilder;
use coopgraph::ir::{Atomic, Expr, index};

/// A parameter of a test launch: a zeroed output of this many elements, or a scalar's bits.
enum P {
    Out(u64),
    Scalar(u64),
}

/// What the interpreter makes of element 0 of the first parameter, running `k` over `blocks`
/// blocks with `params`.
fn element_zero(k: KernelBuilder, blocks: u32, params: &[P]) -> value::V {
    let kernel = k.build().expect("builds");
    let zero = |_: u64| 0u64;
    let args = (params.iter())
        .map(|p| match *p {
            P::Out(len) => Arg::Output {
                len: Some(len),
                before: &zero,
            },
            P::Scalar(bits) => Arg::Scalar(bits),
        })
        .collect();
    let launch = Launch {
        grid: [blocks, 1, 1],
        cluster: None,
        dyn_len: None,
        args,
    };
    run(kernel.ir(), &launch).outputs[0][&0].v
}

/// Blocks never wait for each other: once two blocks wrote an element unordered, a later
/// write of either (even after its own barrier) does not decide what the element holds.
#[test]
fn writes_of_two_blocks_stay_unordered_after_a_barrier() {
    let mut k = KernelBuilder::new("two_blocks").block(1);
    let y = k.output::<u32>("y");
    k.write(&y, Expr::lit(0u32), index::block_index());
    k.sync_block();
    k.write(&y, Expr::lit(0u32), index::block_index() + 10u32);
    let v = element_zero(k, 2, &[P::Out(1)]);
    assert!(
        !v.known(),
        "block 0's last write (10) may land after block 1's (11): {:?}",
        v
    );
}

/// Values the interpreter does not know (here divisions by zero, which PTX leaves
/// unspecified) stand in as the same bits; two blocks writing them may still write
/// different values, so the element depends on the order.
#[test]
fn unknown_values_of_two_blocks_are_not_taken_as_equal() {
    let mut k = KernelBuilder::new("unknown_values").block(1);
    let y = k.output::<u32>("y");
    let d = k.scalar::<u32>("d");
    k.write(
        &y,
        Expr::lit(0u32),
        (index::block_index() + 1u32) / d.expr(),
    );
    let v = element_zero(k, 2, &[P::Out(1), P::Scalar(0)]);
    assert!(
        v.flags & value::NONDET != 0,
        "two blocks wrote values not known to be equal: {:?}",
        v
    );
}

/// Atomic exchanges of values not known to be equal do not commute: which lands last
/// decides the element.
#[test]
fn exchanges_of_unknown_values_do_not_commute() {
    let mut k = KernelBuilder::new("unknown_exchanges").block(2);
    let y = k.output::<u32>("y");
    let d = k.scalar::<u32>("d");
    let old = k.atomic(
        &y,
        Expr::lit(0u32),
        Atomic::exch((index::thread_rank() + 1u32) / d.expr()),
    );
    let olds = k.output::<u32>("olds");
    k.write(&olds, index::thread_rank(), old);
    let v = element_zero(k, 1, &[P::Out(1), P::Scalar(0), P::Out(2)]);
    assert!(
        v.flags & value::NONDET != 0,
        "two threads exchanged in values not known to be equal: {:?}",
        v
    );
}
