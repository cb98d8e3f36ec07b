//! What a cooperative launch asks of a block: where its threads spin or exited, its own
//! stuck state, and the global race checker it reports its accesses to.

use super::super::decode::Inst;
use super::super::error::{Location, SimError};
use super::super::global_race::GlobalRaces;
use super::{BlockRun, Status};
use std::cell::RefCell;

impl<'a> BlockRun<'a> {
    /// Where the block's spinning threads are (threads that stopped at an ordered load and
    /// wait for memory to change), as (thread, location); empty when none spins.
    pub(crate) fn spinning(&self) -> Vec<(u32, Location)> {
        (0..self.nthreads)
            .filter(|&t| {
                self.status[t] == Status::Ready
                    && self.pc[t] > 0
                    && matches!(
                        self.prog.code.get(self.pc[t] as usize - 1).map(|i| &i.inst),
                        Some(Inst::LdOrdered { .. })
                    )
            })
            .map(|t| (t as u32, self.prog.location(self.pc[t] - 1)))
            .collect()
    }

    /// Where the block's threads exited, as (thread, location).
    pub(crate) fn exits(&self) -> Vec<(u32, Location)> {
        (0..self.nthreads)
            .filter(|&t| self.status[t] == Status::Exited)
            .map(|t| (t as u32, self.prog.location(self.pc[t])))
            .collect()
    }

    /// The participation fault of the block's present state, as a stuck block reports it.
    pub(crate) fn stuck_error(&self) -> SimError {
        self.first(self.stuck())
    }

    /// Checks this block's global accesses against the other blocks' with `races` (a
    /// cooperative launch's checker).
    pub(crate) fn check_global_races(&mut self, races: &'a RefCell<GlobalRaces>) {
        self.global_races = Some(races);
    }

    /// The block's linear index in the grid.
    pub(super) fn linear_block(&self) -> u32 {
        let [gx, gy, _] = self.shape.grid;
        let [x, y, z] = self.ctaid;
        x + gx * (y + gy * z)
    }

    /// The block being run.
    pub(crate) fn ctaid(&self) -> [u32; 3] {
        self.ctaid
    }
}
