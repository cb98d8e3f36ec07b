//! Cooperative launches: every block of the grid runs at once, interleaved.
//!
//! A grid barrier waits on global memory for the other blocks, so blocks cannot run one after
//! another as in an ordinary launch. Here each block has its own state, and the scheduler
//! gives the live blocks one round each in turn (a round runs every ready thread of the block
//! until it reaches a collective, exits, spins on an ordered load or spends its quantum).
//! A thread that polls memory with `ld.acquire` (or `ld.relaxed`) yields after the load, so
//! the block it waits for gets its round.
//!
//! When a whole pass over the live blocks changes nothing (no thread ran to a collective,
//! exited or spent a quantum, no collective completed, no global memory was written: threads
//! only spun on memory that stays as it is), no block can ever go on: the launch ends with a
//! participation fault at the barrier the blocks spin at, listing the blocks that exited
//! without arriving. Faults inside a block end the launch as in an ordinary one.

use super::SimOptions;
use super::block::{BlockRun, Counts, Round, Shape};
use super::control::Monitor;
use super::decode::Program;
use super::error::{ParticipationFault, ParticipationProblem, SimError};
use super::global_race::GlobalRaces;
use super::memory::GlobalView;
use std::cell::RefCell;

/// What a cooperative launch returns: its counters and what each block printed, as
/// (block, thread, text).
pub(crate) type Ran = (Counts, Vec<(u64, u32, String)>);

/// Runs every block of a cooperative launch to its end, interleaved.
pub(crate) fn run(
    prog: &Program,
    opts: &SimOptions,
    view: &GlobalView<'_>,
    params: &[u8],
    shape: Shape,
    monitor: &Monitor<'_>,
    ctaids: &[[u32; 3]],
) -> Result<Ran, SimError> {
    // Clocks for every block of the grid: a wave holds only some of them.
    let grid = shape.grid.iter().map(|&d| d as usize).product::<usize>();
    let races = RefCell::new(GlobalRaces::new(grid.max(ctaids.len())));
    let mut runs: Vec<BlockRun<'_>> = Vec::with_capacity(ctaids.len());
    for &c in ctaids {
        let mut run = BlockRun::new(prog, opts, view, params, shape, monitor);
        if opts.check_races {
            run.check_global_races(&races);
        }
        run.start(c)?;
        runs.push(run);
    }
    let mut live = vec![true; runs.len()];
    let result = schedule(&mut runs, &mut live);
    let mut counts = Counts::default();
    let mut printed = Vec::new();
    for run in &mut runs {
        run.flush();
        printed.extend(run.take_printed());
        let c = run.counts();
        counts.steps += c.steps;
        counts.barriers += c.barriers;
        counts.warp_collectives += c.warp_collectives;
        counts.rounds += c.rounds;
    }
    result.map(|()| (counts, printed))
}

fn schedule(runs: &mut [BlockRun<'_>], live: &mut [bool]) -> Result<(), SimError> {
    loop {
        let mut progressed = false;
        for (b, run) in runs.iter_mut().enumerate() {
            if !live[b] {
                continue;
            }
            match run.round() {
                Ok(Round::Done) => {
                    live[b] = false;
                    progressed = true;
                    run.finish(Ok(()))?;
                }
                Ok(Round::Running { progressed: p }) => progressed |= p,
                Err(e) => return run.finish(Err(e)),
            }
        }
        let Some(first) = live.iter().position(|l| *l) else {
            return Ok(());
        };
        if !progressed {
            return Err(deadlock(&runs[first], runs, live));
        }
    }
}

/// The blocks still running (`live`), then those that have exited, each in block order.
pub(super) fn split_live<'r, 'a>(
    runs: &'r [BlockRun<'a>],
    live: &[bool],
) -> (Vec<&'r BlockRun<'a>>, Vec<&'r BlockRun<'a>>) {
    let (waiting, exited): (Vec<_>, Vec<_>) = runs.iter().zip(live).partition(|(_, l)| **l);
    (
        waiting.into_iter().map(|(r, _)| r).collect(),
        exited.into_iter().map(|(r, _)| r).collect(),
    )
}

/// The fault of a launch whose live blocks can no longer go on.
fn deadlock(first: &BlockRun<'_>, runs: &[BlockRun<'_>], live: &[bool]) -> SimError {
    let (waiting, exited) = split_live(runs, live);
    // The first block with a spinning thread names the barrier.
    let spin = waiting
        .iter()
        .find_map(|r| r.spinning().into_iter().next().map(|s| (r, s)));
    let exited_at = exited
        .first()
        .and_then(|r| r.exits().into_iter().next())
        .map(|(_, at)| at);
    let problem = ParticipationProblem::GridBarrier {
        waiting_blocks: waiting.iter().map(|r| r.ctaid()).collect(),
        exited_blocks: exited.iter().map(|r| r.ctaid()).collect(),
        exited_at,
    };
    match spin {
        Some((run, (_, at))) => SimError::Participation(Box::new(ParticipationFault {
            block: run.ctaid(),
            at,
            problem,
            waiting: run.spinning().into_iter().map(|(t, _)| t).collect(),
            absent: Vec::new(),
        })),
        // A live block without progress always has a spinning thread (a round that only
        // completes nothing and yields nowhere is reported by the block as stuck); were there
        // none, the first live block's own stuck state is the report.
        None => first.stuck_error(),
    }
}
