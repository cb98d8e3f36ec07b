//! The interpreter's own tests: orderings it must not assume.

use super::{Arg, Launch, run, value};
use coopgraph::ir::{Atomic, Expr, index};
use coopgraph::{KernelBuilder, Load};

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
    run(kernel.ir(), &launch(blocks, args)).outputs[0][&0].v
}

/// A launch of `blocks` blocks in a row, with no cluster and no dynamic shared memory.
fn launch(blocks: u32, args: Vec<Arg<'_>>) -> Launch<'_> {
    Launch {
        grid: [blocks, 1, 1],
        cluster: None,
        dyn_len: None,
        args,
    }
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

/// A group's barrier orders the shared accesses of its own threads and no others'; a shuffle
/// orders none (only `bar.warp.sync` and the block's and groups' barriers order memory).
#[test]
fn group_barriers_order_their_own_threads_only() {
    // Each thread writes its element, then `sync` runs, then each reads its partner's.
    let races = |sync: &str, partner: u32| {
        let mut k = KernelBuilder::new("group_exchange").block(64);
        let y = k.output::<u32>("y");
        let s = k.shared_array::<u32>(64);
        k.shared_write(&s, index::thread_rank(), index::thread_rank());
        match sync {
            "tile" => {
                let tile = k.this_warp().group_by(8);
                k.sync(tile);
            }
            "warps" => {
                let pair = k.this_block().group_by_warps(2);
                k.sync(pair);
            }
            "shfl" => {
                let warp = k.this_warp();
                let v = k.shfl(warp, index::thread_rank(), 0u32);
                k.write(&y, index::thread_rank() + 64u32, v);
            }
            _ => {}
        }
        k.write(
            &y,
            index::thread_rank(),
            s.read(index::thread_rank() ^ partner),
        );
        let kernel = k.build().expect("builds");
        let zero = |_: u64| 0u64;
        let args = vec![Arg::Output {
            len: Some(128),
            before: &zero,
        }];
        let events = run(kernel.ir(), &launch(1, args)).events;
        (events.iter()).any(|e| matches!(e, super::Event::SharedRace { .. }))
    };
    assert!(races("none", 1));
    assert!(!races("tile", 1), "a tile's barrier orders its lanes");
    assert!(races("tile", 8), "but not another tile's");
    assert!(
        !races("warps", 32),
        "a group of two warps' barrier orders both"
    );
    assert!(races("shfl", 1), "a shuffle orders no memory");
}

/// A select whose side reads memory is lowered to a read guarded by its condition: an
/// undefined condition there is an undefined predicate (as the simulator reports it), while
/// the same select of plain values only carries the undefined value on.
#[test]
fn undefined_conditions_guarding_reads_are_reported() {
    let events = |reads: bool| {
        let mut k = KernelBuilder::new("guarded_read")
            .block(1)
            .items_per_thread(2);
        let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
        let valid = k.scalar::<u32>("valid");
        let table = k.const_array(&[7u32, 8]);
        // One valid item: item 1 is never written.
        let b = k.this_block();
        let d = k.load_from(b, &x, Load::direct().valid_items(valid.expr()));
        let taken = if reads {
            table.read(d.item(0))
        } else {
            d.item(0) + 7u32
        };
        k.write(&y, Expr::lit(0u32), d.item(1).gt(0u32).select(taken, 1u32));
        let kernel = k.build().expect("builds");
        let zero = |_: u64| 0u64;
        let args = vec![
            Arg::Input {
                len: Some(2),
                value: &zero,
            },
            Arg::Output {
                len: Some(1),
                before: &zero,
            },
            Arg::Scalar(1),
        ];
        run(kernel.ir(), &launch(1, args)).events
    };
    let guarded = |e: &[super::Event]| {
        e.iter().any(|e| {
            matches!(e, super::Event::Undefined { what, .. }
                if *what == "a condition guarding a memory read")
        })
    };
    assert!(guarded(&events(true)), "{:?}", events(true));
    assert!(!guarded(&events(false)), "{:?}", events(false));
}

/// A shuffle from a lane the interpreter does not know (here a quotient by zero, which PTX
/// leaves unspecified) takes a value it does not know either, however well known the values
/// of every lane are.
#[test]
fn shuffles_from_unknown_lanes_are_unknown() {
    let mut k = KernelBuilder::new("unknown_lane").block(32);
    let y = k.output::<u32>("y");
    let d = k.scalar::<u32>("d");
    let warp = k.this_warp();
    let got = k.shfl(
        warp,
        index::thread_rank() * 3u32,
        Expr::lit(5u32) / d.expr(),
    );
    k.write(&y, index::thread_rank(), got);
    let v = element_zero(k, 1, &[P::Out(32), P::Scalar(0)]);
    assert!(!v.known(), "the lane is unspecified: {v:?}");
}
