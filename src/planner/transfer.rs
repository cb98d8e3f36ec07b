//! Transfer planning: the index map of every load and store.
//!
//! A transfer moves a group's tile between global memory and its threads' payload slots.
//! Position `p(item, rank)` in the group's tile comes from the arrangement's layout of shape
//! `(items, threads)`; code generation only evaluates the affine form this pass extracts.

use super::arrangement::of_algorithm;
use super::error::PlanError;
use super::plan::TransferPlan;
use crate::ir::ops::{OpKind, Role};
use crate::ir::{Arrangement, Ir, OpId, RegionId};

/// The affine index map `(item_stride, thread_stride)` of an arrangement over a group of
/// `threads` threads holding `items` items each.
pub fn index_map(arr: Arrangement, threads: u32, items: u32) -> (u32, u32) {
    match arr {
        Arrangement::Blocked => (1, items),
        Arrangement::Striped { .. } => (threads, 1),
    }
}

/// Plans every load and store (indexed by op).
pub fn plan_transfers(
    ir: &Ir,
    _arrangements: &[Option<Arrangement>],
) -> Result<Vec<Option<TransferPlan>>, PlanError> {
    let mut out = vec![None; ir.ops.len()];
    let mut tiles = Vec::new();
    walk(ir, ir.body, &mut tiles, &mut out);
    Ok(out)
}

fn walk(ir: &Ir, r: RegionId, tiles: &mut Vec<OpId>, out: &mut Vec<Option<TransferPlan>>) {
    for &op in ir.region(r) {
        let kind = &ir.op(op).kind;
        if let OpKind::Load(t) | OpKind::Store(t) = kind {
            let group_threads = ir.group_threads(t.group);
            let items = ir.datas[t.data.index()].items;
            let arrangement = of_algorithm(t.algorithm, group_threads);
            let (item_stride, thread_stride) = index_map(arrangement, group_threads, items);
            out[op.index()] = Some(TransferPlan {
                group_threads,
                items,
                arrangement,
                item_stride,
                thread_stride,
                group_tile: group_threads * items,
                block_tile: ir.block_threads() * items,
                tiles: tiles.last().copied(),
                read_only: matches!(kind, OpKind::Load(_))
                    && ir.params[t.param.index()].role == Role::Input,
            });
        }
        let is_tiles = matches!(kind, OpKind::Tiles { .. });
        if is_tiles {
            tiles.push(op);
        }
        for sub in kind.regions() {
            walk(ir, sub, tiles, out);
        }
        if is_tiles {
            tiles.pop();
        }
    }
}
