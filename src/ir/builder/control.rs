//! Control flow: branches, loops, the grid-stride loop over tiles, and block barriers.

use super::KernelBuilder;
use crate::ir::entities::{Loc, OpId, RegionId};
use crate::ir::expr::{Expr, ExprKind};
use crate::ir::handles::Tile;
use crate::ir::ops::*;

impl KernelBuilder {
    /// A block barrier: every thread waits until all threads of the block reach it.
    #[track_caller]
    pub fn sync_block(&mut self) {
        let loc = Loc::caller();
        self.push(OpKind::SyncBlock, loc);
    }

    fn region(&mut self, f: impl FnOnce(&mut Self)) -> RegionId {
        let r = self.new_region();
        self.cursor.push(r);
        f(self);
        self.cursor.pop();
        r
    }

    /// Runs `then` where `cond` holds.
    #[track_caller]
    pub fn if_(&mut self, cond: impl Into<Expr<bool>>, then: impl FnOnce(&mut Self)) {
        let loc = Loc::caller();
        let cond = self.expr(&cond.into());
        let then = self.region(then);
        self.push(
            OpKind::If {
                cond,
                then,
                otherwise: None,
            },
            loc,
        );
    }

    /// Runs `then` where `cond` holds and `otherwise` elsewhere.
    #[track_caller]
    pub fn if_else(
        &mut self,
        cond: impl Into<Expr<bool>>,
        then: impl FnOnce(&mut Self),
        otherwise: impl FnOnce(&mut Self),
    ) {
        let loc = Loc::caller();
        let cond = self.expr(&cond.into());
        let then = self.region(then);
        let otherwise = Some(self.region(otherwise));
        self.push(
            OpKind::If {
                cond,
                then,
                otherwise,
            },
            loc,
        );
    }

    fn reserve_op(&self) -> OpId {
        OpId(self.ir.ops.len() as u32)
    }

    /// Runs `body` for `i` in `start..end`.
    ///
    /// The loop op takes the next op id; ops recorded by `body` come after it.
    #[track_caller]
    pub fn for_range(
        &mut self,
        start: impl Into<Expr<u32>>,
        end: impl Into<Expr<u32>>,
        body: impl FnOnce(&mut Self, Expr<u32>),
    ) {
        let loc = Loc::caller();
        let start = self.expr(&start.into());
        let end = self.expr(&end.into());
        let placeholder = self.reserve_op();
        let body_region = self.new_region();
        let op = self.push(
            OpKind::For {
                start,
                end,
                body: body_region,
            },
            loc,
        );
        debug_assert_eq!(op, placeholder);
        self.cursor.push(body_region);
        let i = Expr::owned(ExprKind::LoopVar { op, field: 0 }, self.lineage.id());
        body(self, i);
        self.cursor.pop();
    }

    /// A grid-stride loop over the tiles of `n` elements (one tile is
    /// [`block_tile`](Self::block_tile) elements). Loads and stores inside default to the
    /// tile's origin and valid count.
    #[track_caller]
    pub fn tiles(&mut self, n: impl Into<Expr<u32>>, body: impl FnOnce(&mut Self, Tile)) {
        let loc = Loc::caller();
        let n = self.expr(&n.into());
        let body_region = self.new_region();
        let op = self.push(
            OpKind::Tiles {
                n,
                body: body_region,
            },
            loc,
        );
        self.cursor.push(body_region);
        let tile = Tile::new(op, self.lineage.id());
        body(self, tile);
        self.cursor.pop();
    }
}
