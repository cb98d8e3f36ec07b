//! What a cluster launch asks of a block: its link to the cluster's shared state, its shared
//! memory handed to the cluster while other blocks run, the threads waiting at a cluster
//! barrier, and the report of a distributed shared memory race.

use super::super::cluster::{Cluster, ClusterHit};
use super::super::decode::Inst;
use super::super::error::{Access, AccessKind, ClusterRaceFault, Location, SimError, ThreadRef};
use super::super::exec::SharedMem;
use super::{BlockRun, Status};
use std::cell::RefCell;

impl<'a> BlockRun<'a> {
    /// Runs the block as rank `rank` of the cluster `cluster`.
    pub(crate) fn join_cluster(&mut self, cluster: &'a RefCell<Cluster>, rank: u32) {
        self.cluster = Some((cluster, rank));
    }

    /// Takes the block's shared memory out (for the other blocks of the cluster to reach
    /// while this one does not run).
    pub(crate) fn take_shared(&mut self) -> SharedMem {
        let empty = SharedMem {
            segments: Vec::new(),
            data: Vec::new(),
            written: Vec::new(),
            race: None,
        };
        std::mem::replace(&mut self.shared, empty)
    }

    /// Gives the block its shared memory back before it runs.
    pub(crate) fn put_shared(&mut self, shared: SharedMem) {
        self.shared = shared;
    }

    /// Where the block's threads wait at a cluster barrier that has not completed, as
    /// (thread, location).
    pub(crate) fn cluster_waiting(&self) -> Vec<(u32, Location)> {
        (0..self.nthreads)
            .filter(|&t| {
                self.status[t] == Status::Ready
                    && matches!(
                        self.prog.code.get(self.pc[t] as usize).map(|i| &i.inst),
                        Some(Inst::ClusterBar { wait: true })
                    )
            })
            .map(|t| (t as u32, self.prog.location(self.pc[t])))
            .collect()
    }

    /// The block index of rank `rank` of this block's cluster.
    pub(crate) fn rank_ctaid(&self, rank: u32) -> [u32; 3] {
        let [cx, cy, cz] = self.prog.cluster.unwrap_or([1, 1, 1]).map(|d| d.max(1));
        let base = [
            self.ctaid[0] - self.ctaid[0] % cx,
            self.ctaid[1] - self.ctaid[1] % cy,
            self.ctaid[2] - self.ctaid[2] % cz,
        ];
        [
            base[0] + rank % cx,
            base[1] + (rank / cx) % cy,
            base[2] + rank / (cx * cy),
        ]
    }

    /// The report of a race on distributed shared memory found by thread `t` at `pc`.
    pub(super) fn cluster_race(
        &self,
        t: usize,
        pc: u32,
        hit: ClusterHit,
        kind: AccessKind,
    ) -> SimError {
        SimError::ClusterRace(Box::new(ClusterRaceFault {
            owner: self.rank_ctaid(hit.owner),
            address: hit.addr,
            first: Access {
                thread: ThreadRef {
                    block: self.rank_ctaid(hit.rank),
                    thread: self.tid3(hit.thread as usize),
                },
                kind: hit.kind,
                at: self.prog.location(hit.pc),
            },
            second: Access {
                thread: self.thread_ref(t),
                kind,
                at: self.prog.location(pc),
            },
        }))
    }
}
