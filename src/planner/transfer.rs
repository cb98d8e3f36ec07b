//! Transfer planning: how every load and store touches global memory.
//!
//! A transfer moves a tile between global memory and payload slots in *access groups* of `G`
//! threads: element `p(item, rank)` of an access group's tile is read or written by `rank`
//! into `item`. `p` comes from the layout algebra: the arrangement's layout of shape
//! `(items, threads)` ([`crate::layout::arrangement_layout`]), reduced to its affine form
//! `item * item_stride + rank * thread_stride`. Code generation evaluates that form and nothing
//! else.
//!
//! The access group is the op's group, except for the warp-transposing and warp-striped
//! algorithms, which move each warp's segment warp-striped (access groups of 32), the former
//! exchanging it with blocked order after (or before).

use super::arrangement::{Arrangements, of_algorithm};
use super::error::PlanError;
use super::form::striped_threads;
use super::plan::TransferPlan;
use super::scratch::lcm;
use crate::ir::ops::{Algorithm, GroupKind, OpKind, Role, Transfer, ValidOf};
use crate::ir::{Arrangement, Ir, Loc, OpId, RegionId};
use crate::layout::{Arrangement as LArr, affine_form, arrangement_layout};

/// The affine index map `(item_stride, thread_stride)` of an arrangement over an access group
/// of `threads` threads holding `items` items each, from its layout.
pub fn index_map(arr: Arrangement, threads: u32, items: u32) -> Option<(u32, u32)> {
    let kind = match arr {
        Arrangement::Blocked => LArr::Blocked,
        Arrangement::Striped { .. } => LArr::Striped,
    };
    let layout = arrangement_layout(kind, threads, items).ok()?;
    let form = affine_form(&layout)?;
    let item = u32::try_from(form.item_stride).ok()?;
    let thread = u32::try_from(form.thread_stride).ok()?;
    Some((item, thread))
}

/// Elements per vector access for `items` blocked items of `bytes`-byte elements: the largest
/// power of two dividing `items` with at most 4 elements and 16 bytes. Narrow elements (8 and
/// 16 bits) move packed in 32-bit words: up to 16 bytes of them, at least one whole word, else
/// one by one.
pub fn vector_width(items: u32, bytes: u32) -> u32 {
    let bytes = bytes.max(1);
    let (most, least) = if bytes < 4 {
        (16 / bytes, 4 / bytes)
    } else {
        (4u32.min(16 / bytes), 2)
    };
    let mut v = most;
    while v >= least && !items.is_multiple_of(v) {
        v /= 2;
    }
    if v < least { 1 } else { v }
}

/// The fewest 16-byte vectors a thread moves for its run to go through pairs of lanes.
pub const PAIRED_VECTORS: u32 = 2;

/// Whether a vectorized store's runs move in pairs of lanes. Alone, thread `t`'s `j`-th
/// 16-byte vector of a blocked run covers half of a 32-byte sector, and the other half comes
/// one access later: every access writes 32 half sectors. In pairs, ranks `2k` and `2k + 1`
/// exchange half their vectors by shuffles and access `j` of the pair writes the pair's 32-byte
/// sector `j` (rank `2k` its first half, rank `2k + 1` its second). That takes vectors of 16
/// bytes (elements of 4 or 8 bytes), an even number of them a thread (at least
/// [`PAIRED_VECTORS`]), a rank's partner in the next lane of the same warp (an even number of
/// threads in the block), and an access group of whole warps or the block, so that a warp's
/// lanes all take part (the lowering decides the path of each warp as one). Loads keep their
/// own vectors: the second half of a sector a load reads comes from L1. Measured on an H100
/// (f32 copy at 256 x 16, 2^28, GB/s, PTX edited by hand, two runs): neither paired 2321 and
/// 2315, loads 2490 and 2481, stores 3005 and 2996, both 2950 and 2951 (the device-to-device
/// copy about 2980); as the emitter writes them, stores 2972 and 2974 against both 2867 and
/// 2873, CUB's 2333 (one lease).
pub fn stores_in_pairs(vector: u32, bytes: u32, items: u32, threads: u32, block: u32) -> bool {
    let vectors = items.checked_div(vector).unwrap_or(0);
    bytes >= 4
        && vector * bytes == 16
        && vectors >= PAIRED_VECTORS
        && vectors.is_multiple_of(2)
        && (threads.is_multiple_of(32) || threads == block)
        && block.is_multiple_of(2)
}

/// Checks the conversions before stores whose groups each have their own valid count: a
/// thread knows only its own group's count, so an exchange may move positions only inside the
/// store's groups, and its groups (the least common multiple of the two arrangements' group
/// sizes) must nest in them. Bigger groups mix several of the store's groups, and so do groups
/// that straddle them: a payload striped over 6 threads, stored by logical warps of 8,
/// converts in groups of 6, and threads 6..12 hold positions of two warps' tiles. With a count
/// of the block's tile every thread knows each position's validity, and any exchange may.
pub fn check_group_counts(ir: &Ir, arrangements: &Arrangements) -> Result<(), PlanError> {
    for c in &arrangements.conversions {
        let data = ir.op(c.op);
        let OpKind::Store(t) = &data.kind else {
            continue;
        };
        let width = match ir.groups[t.group.index()].kind {
            GroupKind::LogicalWarp { width } => width,
            GroupKind::Warps { warps } => warps.saturating_mul(32),
            GroupKind::Block => continue,
        };
        if t.valid.is_none_or(|v| v.of == ValidOf::Block) {
            continue;
        }
        let across = lcm(striped_threads(c.from), striped_threads(c.to));
        if across == 0 || !width.is_multiple_of(across) {
            return Err(PlanError::GroupCountAcrossGroups {
                op: c.op,
                loc: data.loc,
                group: width,
                across,
            });
        }
    }
    Ok(())
}

/// Plans every load and store (indexed by op).
pub fn plan_transfers(ir: &Ir) -> Result<Vec<Option<TransferPlan>>, PlanError> {
    let mut out = vec![None; ir.ops.len()];
    let mut tiles = Vec::new();
    walk(ir, ir.body, &mut tiles, &mut out)?;
    Ok(out)
}

fn plan_one(
    ir: &Ir,
    t: &Transfer,
    is_load: bool,
    tiles: Option<OpId>,
    op: OpId,
    loc: Loc,
) -> Result<TransferPlan, PlanError> {
    let g = ir.group_threads(t.group);
    let items = ir.datas[t.data.index()].items;
    let bytes = ir.datas[t.data.index()].dtype.bytes();
    let (access_threads, arrangement) = match t.algorithm {
        Algorithm::Transpose => (g, Arrangement::Striped { threads: g }),
        Algorithm::WarpTranspose | Algorithm::WarpTransposeTimesliced | Algorithm::WarpStriped => {
            (32, Arrangement::Striped { threads: 32 })
        }
        other => (g, of_algorithm(other, g)),
    };
    let (item_stride, thread_stride) =
        index_map(arrangement, access_threads, items).ok_or_else(|| PlanError::Layout {
            op,
            loc,
            reason: format!("{arrangement:?} over {access_threads} threads x {items} items"),
        })?;
    let vector = match t.algorithm {
        Algorithm::Vectorize => {
            // No wider than the payload's alignment allows.
            let align = ir.datas[t.data.index()].align.unwrap_or(16);
            let mut v = vector_width(items, bytes);
            while v > 1 && v * bytes > align {
                v /= 2;
            }
            // Narrow elements move in whole 32-bit words or one by one.
            if v * bytes < 4 { 1 } else { v }
        }
        _ => 1,
    };
    let paired = t.algorithm == Algorithm::Vectorize
        && !is_load
        && (item_stride, thread_stride) == (1, items)
        && stores_in_pairs(vector, bytes, items, access_threads, ir.block_threads());
    Ok(TransferPlan {
        group_threads: access_threads,
        items,
        arrangement,
        item_stride,
        thread_stride,
        group_tile: access_threads * items,
        block_tile: ir.block_threads() * items,
        tiles,
        read_only: is_load && ir.params[t.param.index()].role == Role::Input,
        algorithm: t.algorithm,
        vector,
        paired,
    })
}

fn walk(
    ir: &Ir,
    r: RegionId,
    tiles: &mut Vec<OpId>,
    out: &mut Vec<Option<TransferPlan>>,
) -> Result<(), PlanError> {
    for &op in ir.region(r) {
        let data = ir.op(op);
        let kind = &data.kind;
        if let OpKind::Load(t) | OpKind::Store(t) = kind {
            let is_load = matches!(kind, OpKind::Load(_));
            out[op.index()] = Some(plan_one(
                ir,
                t,
                is_load,
                tiles.last().copied(),
                op,
                data.loc,
            )?);
        }
        let is_tiles = matches!(kind, OpKind::Tiles { .. });
        if is_tiles {
            tiles.push(op);
        }
        for sub in kind.regions() {
            walk(ir, sub, tiles, out)?;
        }
        if is_tiles {
            tiles.pop();
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_maps_come_from_the_layouts() {
        assert_eq!(index_map(Arrangement::Blocked, 128, 4), Some((1, 4)));
        assert_eq!(
            index_map(Arrangement::Striped { threads: 128 }, 128, 4),
            Some((128, 1))
        );
        assert_eq!(
            index_map(Arrangement::Striped { threads: 8 }, 8, 3),
            Some((8, 1))
        );
    }

    #[test]
    fn vector_widths() {
        assert_eq!(vector_width(16, 4), 4);
        assert_eq!(vector_width(6, 4), 2);
        assert_eq!(vector_width(3, 4), 1);
        assert_eq!(vector_width(4, 8), 2);
        assert_eq!(vector_width(8, 1), 8);
        assert_eq!(vector_width(16, 1), 16);
        assert_eq!(vector_width(32, 1), 16);
        assert_eq!(vector_width(6, 1), 1);
        assert_eq!(vector_width(12, 1), 4);
        assert_eq!(vector_width(6, 2), 2);
        assert_eq!(vector_width(3, 2), 1);
    }
}
