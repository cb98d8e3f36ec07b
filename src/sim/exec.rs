//! The thread interpreter: runs one thread's decoded instructions until it reaches a
//! collective, exits, faults or spends its budget.
//!
//! It is generic over whether undefined values are tracked (`U`), so the unchecked build of the
//! loop carries no shadow work at all. Registers are the thread's flat slice of slots; each
//! slot has an *origin* word when tracking: 0 when defined, `NEVER | slot` for a register never
//! written, `pc + 1` for a value that came from a load of unwritten memory (or a shuffle from a
//! lane outside the collective) at decoded instruction `pc`. A store of an undefined value to
//! shared memory leaves its bytes unwritten: moving a value is not using it. Arithmetic passes an operand's
//! origin on to its result; the first observable use of an undefined value is noted in
//! [`Env::pending`] and the thread goes on (the block decides what to report).

use super::alu::{AtomAt, AtomKind, atom_apply};
use super::cluster::{self, Cluster, ClusterHit, LOCAL_MASK};
use super::decode::{Atomic, Ext, Inst, LOCAL_SHIFT, Mem, NONE, Program, SHARED_SHIFT};
use super::error::{AccessKind, MemSpace, UseKind};
use super::global_race::{GlobalHit, GlobalRaces};
use super::memory::GlobalView;
use super::printf::{self, PrintfError};
use super::race::{RaceHit, RaceState};
use std::cell::RefCell;

/// Origin bit of a register never written; the low bits are its slot.
pub(crate) const NEVER: u32 = 1 << 31;

/// One mapped range of shared addresses: declaration `k` of the block is at `k <<
/// SHARED_SHIFT` (see [`super::decode::SHARED_SHIFT`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Segment {
    /// Bytes mapped from its address.
    pub len: u32,
    /// Where they are in [`SharedMem::data`].
    pub offset: u32,
}

/// A block's shared memory and its shadow state.
pub(crate) struct SharedMem {
    /// The declarations, by address: entry `k` maps `[k << SHARED_SHIFT, +len)`.
    pub segments: Vec<Segment>,
    /// Their bytes, back to back (the static declarations in order, then the dynamic part).
    pub data: Vec<u8>,
    /// One byte per shared byte: non-zero once written in this block.
    pub written: Vec<u8>,
    /// Present when race checking is on.
    pub race: Option<RaceState>,
}

/// What one thread may touch while it runs.
pub(crate) struct Env<'a> {
    pub prog: &'a Program,
    pub global: &'a GlobalView<'a>,
    pub params: &'a [u8],
    pub regs: &'a mut [u64],
    pub origin: &'a mut [u32],
    pub shared: &'a mut SharedMem,
    pub local: &'a mut [u8],
    pub local_written: &'a mut [u8],
    /// Index of the global allocation found last.
    pub hint: &'a mut usize,
    /// Linear thread index in the block.
    pub tid: u32,
    /// The block's clock when this run started.
    pub clock: u64,
    /// What the thread printed, each call's text after the others.
    pub printed: &'a mut Vec<(u32, String)>,
    /// The first undefined-value fault of this run and its pc. Such faults do not stop the
    /// thread: a race found later in the block explains them better (see the block module).
    pub pending: Option<(u32, Fault)>,
    /// Counts the global stores and atomics the thread executes.
    pub global_writes: &'a mut u64,
    /// In a cooperative launch with race checking: the global race checker, and the block's
    /// linear index in the grid.
    pub global_races: Option<(&'a RefCell<GlobalRaces>, u32)>,
    /// In a cluster launch: what the blocks of the cluster share, and the block's rank in it.
    pub cluster: Option<(&'a RefCell<Cluster>, u32)>,
}

/// Why a thread stopped.
#[derive(Debug)]
pub(crate) enum Stop {
    /// At a collective (its pc points at it).
    Coll,
    /// Exited (its pc points at the `ret`).
    Exit,
    /// Spent its budget, or paused at a `nanosleep` (its pc is past it).
    Yield,
    /// Polled memory with an ordered load (its pc is past the load): a spin-wait's step, so
    /// that the writer it waits for gets to run.
    Spin,
    /// Faulted at its pc.
    Fault(Fault),
}

/// A fault found while running a thread.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Fault {
    Bounds {
        space: MemSpace,
        addr: u64,
        size: u32,
    },
    Misaligned {
        space: MemSpace,
        addr: u64,
        size: u32,
    },
    Uninit {
        use_kind: UseKind,
        slot: u32,
        origin: u32,
    },
    UninitMemory {
        space: MemSpace,
        addr: u64,
    },
    Race {
        hit: RaceHit,
        kind: AccessKind,
    },
    /// A race on global memory with another block of a cooperative launch.
    GlobalRace {
        hit: GlobalHit,
        kind: AccessKind,
    },
    /// A race on shared memory with another block of the cluster.
    ClusterRace {
        hit: ClusterHit,
        kind: AccessKind,
    },
    /// A `vprintf` format with a conversion the simulator does not implement, at this byte.
    PrintFormat(u32),
}

type F = Result<(), Fault>;

#[inline(always)]
fn join(a: u32, b: u32) -> u32 {
    if a != 0 { a } else { b }
}

/// Runs thread `env.tid` from `*pc` for at most `budget` instructions; returns why it stopped
/// and how many instructions it executed. `*pc` is left at the stopping instruction.
pub(crate) fn run<const U: bool>(env: &mut Env<'_>, pc: &mut u32, budget: u64) -> (Stop, u64) {
    let code = &env.prog.code[..];
    let mut p = *pc as usize;
    let mut steps = 0u64;
    let stop = loop {
        if steps >= budget {
            break Stop::Yield;
        }
        let Some(ins) = code.get(p) else {
            break Stop::Exit;
        };
        if ins.guard != NONE {
            let g = ins.guard as usize;
            if U && !matches!(ins.inst, Inst::Bra { select: true, .. }) {
                check(env, ins.guard, UseKind::Predicate, p as u32);
            }
            if (env.regs[g] != 0) == ins.negate {
                steps += 1;
                p += 1;
                continue;
            }
        }
        match ins.inst {
            Inst::Un { f, dst, a } => {
                env.regs[dst as usize] = f(env.regs[a as usize]);
                if U {
                    env.origin[dst as usize] = env.origin[a as usize];
                }
            }
            Inst::Bin { f, dst, a, b } => {
                env.regs[dst as usize] = f(env.regs[a as usize], env.regs[b as usize]);
                if U {
                    env.origin[dst as usize] = join(env.origin[a as usize], env.origin[b as usize]);
                }
            }
            Inst::PredLogic { or, dst, a, b } => {
                let (x, y) = (env.regs[a as usize], env.regs[b as usize]);
                env.regs[dst as usize] = u64::from(if or {
                    x != 0 || y != 0
                } else {
                    x != 0 && y != 0
                });
                if U {
                    let (oa, ob) = (env.origin[a as usize], env.origin[b as usize]);
                    // A defined operand that decides the result alone makes it defined.
                    let decides = |v: u64, o: u32| o == 0 && (v != 0) == or;
                    env.origin[dst as usize] = if decides(x, oa) || decides(y, ob) {
                        0
                    } else {
                        join(oa, ob)
                    };
                }
            }
            Inst::Tri { f, dst, a, b, c } => {
                let r = &env.regs;
                env.regs[dst as usize] = f(r[a as usize], r[b as usize], r[c as usize]);
                if U {
                    let o = &env.origin;
                    env.origin[dst as usize] =
                        join(o[a as usize], join(o[b as usize], o[c as usize]));
                }
            }
            Inst::Selp { dst, a, b, p: c } => {
                let s = if env.regs[c as usize] != 0 { a } else { b };
                env.regs[dst as usize] = env.regs[s as usize];
                if U {
                    env.origin[dst as usize] = join(env.origin[c as usize], env.origin[s as usize]);
                }
            }
            Inst::Cvt { cvt, dst, src } => {
                env.regs[dst as usize] = cvt.apply(env.regs[src as usize]);
                if U {
                    env.origin[dst as usize] = env.origin[src as usize];
                }
            }
            Inst::Clock { dst } => {
                env.regs[dst as usize] = env.clock.wrapping_add(steps);
                if U {
                    env.origin[dst as usize] = 0;
                }
            }
            Inst::Ld(ref m) => {
                if let Err(f) = load::<U>(env, m, p as u32, None) {
                    break Stop::Fault(f);
                }
            }
            Inst::LdOrdered { ref mem, acquire } => {
                if let Err(f) = load::<U>(env, mem, p as u32, Some(acquire)) {
                    break Stop::Fault(f);
                }
                steps += 1;
                p += 1;
                break Stop::Spin;
            }
            // A pause in a spin loop: the thread gives way. It counts as progress (as a spent
            // quantum does), so a launch whose threads only sleep runs on to its step limit
            // rather than being taken for stuck.
            Inst::Sleep => {
                steps += 1;
                p += 1;
                break Stop::Yield;
            }
            Inst::St(ref m) => {
                if let Err(f) = store::<U>(env, m, p as u32) {
                    break Stop::Fault(f);
                }
            }
            Inst::Atom(ref a) => {
                if let Err(f) = atomic::<U>(env, a, p as u32) {
                    break Stop::Fault(f);
                }
            }
            Inst::Bra { target, .. } => {
                steps += 1;
                p = target as usize;
                continue;
            }
            Inst::Ret => {
                steps += 1;
                break Stop::Exit;
            }
            // Counted when the collective completes.
            Inst::Coll(_) => break Stop::Coll,
            Inst::Mapa { dst, src, rank } => {
                let r = &env.regs;
                env.regs[dst as usize] = cluster::mapa(r[src as usize], r[rank as usize]);
                if U {
                    let o = &env.origin;
                    env.origin[dst as usize] = join(o[src as usize], o[rank as usize]);
                }
            }
            Inst::ClusterBar { wait: false } => {
                if let Some((c, rank)) = env.cluster {
                    c.borrow_mut().arrive(rank, env.tid);
                }
                // An arrival can let blocks waiting at the barrier go on.
                *env.global_writes += 1;
            }
            Inst::ClusterBar { wait: true } => {
                let (done, barrier, threads) = match env.cluster {
                    Some((c, rank)) => {
                        let mut c = c.borrow_mut();
                        let (done, barrier) = c.wait(rank, env.tid);
                        (done, barrier, c.threads())
                    }
                    None => (true, false, 0),
                };
                if !done {
                    // Waits here (its pc stays at the wait) while the others arrive.
                    steps += 1;
                    break Stop::Spin;
                }
                if barrier && let Some(r) = env.shared.race.as_mut() {
                    let warps: Vec<usize> = (0..threads.div_ceil(32)).collect();
                    r.barrier(&warps);
                }
            }
            Inst::Print(i) => {
                if let Err(f) = print(env, i) {
                    break Stop::Fault(f);
                }
            }
            Inst::Nop => {}
        }
        steps += 1;
        p += 1;
    };
    *pc = p as u32;
    (stop, steps)
}

/// Formats `vprintf` call `i` from the thread's local memory and keeps the text.
fn print(env: &mut Env<'_>, i: u32) -> F {
    let Some(call) = env.prog.prints.get(i as usize) else {
        return Ok(());
    };
    let base = call.args;
    let read = |off: u32, size: u32| -> Result<u64, Fault> {
        let addr = base.unwrap_or(0).wrapping_add(u64::from(off));
        let fault = Fault::Bounds {
            space: MemSpace::Local,
            addr,
            size,
        };
        if base.is_none() {
            return Err(fault);
        }
        let at = local_at(env, addr, size)?;
        env.local.get(at..at + size as usize).map(le).ok_or(fault)
    };
    match printf::format(&call.format, read)? {
        Ok(text) => {
            env.printed.push((env.tid, text));
            Ok(())
        }
        Err(PrintfError::Unsupported(at)) => Err(Fault::PrintFormat(at as u32)),
    }
}

/// Notes the first observable use of an undefined value.
#[inline(always)]
fn check(env: &mut Env<'_>, slot: u32, use_kind: UseKind, pc: u32) {
    let o = env.origin[slot as usize];
    if o != 0 && env.pending.is_none() {
        env.pending = Some((
            pc,
            Fault::Uninit {
                use_kind,
                slot,
                origin: o,
            },
        ));
    }
}

#[inline(always)]
fn address<const U: bool>(
    env: &mut Env<'_>,
    space: MemSpace,
    base: u32,
    disp: i64,
    size: u32,
    pc: u32,
) -> Result<u64, Fault> {
    let b = if base == NONE {
        0
    } else {
        if U {
            check(env, base, UseKind::Address, pc);
        }
        env.regs[base as usize]
    };
    let addr = b.checked_add_signed(disp).ok_or(Fault::Bounds {
        space,
        addr: b.wrapping_add_signed(disp),
        size,
    })?;
    if addr % u64::from(size) != 0 {
        return Err(Fault::Misaligned { space, addr, size });
    }
    Ok(addr)
}

#[inline(always)]
fn extend(v: u64, size: u32, ext: Ext) -> u64 {
    let sh = 64 - size * 8;
    match ext {
        Ext::Zero => v,
        Ext::Sign32 => ((((v << sh) as i64) >> sh) as u64) & 0xFFFF_FFFF,
        Ext::Sign64 => (((v << sh) as i64) >> sh) as u64,
    }
}

#[inline(always)]
fn le(bytes: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    let n = bytes.len().min(8);
    b[..n].copy_from_slice(&bytes[..n]);
    u64::from_le_bytes(b)
}

/// Where shared bytes `[addr, addr+len)` are in the block's storage, when they lie inside one
/// declaration.
#[inline(always)]
fn shared_at(sh: &SharedMem, addr: u64, len: u32) -> Result<usize, Fault> {
    let k = addr >> SHARED_SHIFT;
    let off = addr & ((1 << SHARED_SHIFT) - 1);
    match usize::try_from(k).ok().and_then(|k| sh.segments.get(k)) {
        Some(s) if off + u64::from(len) <= u64::from(s.len) => Ok(s.offset as usize + off as usize),
        _ => Err(Fault::Bounds {
            space: MemSpace::Shared,
            addr,
            size: len,
        }),
    }
}

/// Where local bytes `[addr, addr+len)` are in the thread's storage (its window, then each
/// declaration), when they lie inside the window or one declaration.
#[inline(always)]
fn local_at(env: &Env<'_>, addr: u64, len: u32) -> Result<usize, Fault> {
    let bounds = Fault::Bounds {
        space: MemSpace::Local,
        addr,
        size: len,
    };
    let window = env.local.len() - env.prog.local_bytes as usize;
    let k = addr >> LOCAL_SHIFT;
    let off = addr & ((1 << LOCAL_SHIFT) - 1);
    let end = off + u64::from(len);
    if k == 0 {
        return if end <= window as u64 {
            Ok(off as usize)
        } else {
            Err(bounds)
        };
    }
    match usize::try_from(k - 1)
        .ok()
        .and_then(|k| env.prog.local.get(k))
    {
        Some(s) if end <= u64::from(s.bytes) => Ok(window + s.offset as usize + off as usize),
        _ => Err(bounds),
    }
}

/// The constant bytes `[addr, addr+len)`, when they lie inside one declaration.
#[inline(always)]
fn const_at(prog: &Program, addr: u64, len: u32) -> Result<&[u8], Fault> {
    let k = addr >> LOCAL_SHIFT;
    let off = (addr & ((1 << LOCAL_SHIFT) - 1)) as usize;
    let slot = k
        .checked_sub(1)
        .and_then(|k| usize::try_from(k).ok())
        .and_then(|k| prog.cmem.get(k));
    match slot.and_then(|s| s.data.get(off..off + len as usize)) {
        Some(bytes) => Ok(bytes),
        None => Err(Fault::Bounds {
            space: MemSpace::Const,
            addr,
            size: len,
        }),
    }
}

#[inline(always)]
fn set<const U: bool>(env: &mut Env<'_>, slot: u32, v: u64, defined: bool, pc: u32) {
    env.regs[slot as usize] = v;
    if U {
        env.origin[slot as usize] = if defined { 0 } else { pc + 1 };
    }
}

/// Tells the global race checker of a plain access (`write`: a store), or of an ordered load
/// (`ordered`: an acquire, checked against nothing).
/// Notes a global access for the race checker of cooperative launches; `ordered`: a load with
/// a memory order (`Some(true)` where it acquires), which never races.
fn track_global(
    env: &Env<'_>,
    addr: u64,
    len: u32,
    pc: u32,
    write: bool,
    ordered: Option<bool>,
) -> F {
    let Some((races, block)) = env.global_races else {
        return Ok(());
    };
    let mut g = races.borrow_mut();
    let r = if let Some(acquire) = ordered {
        if acquire {
            g.acquire(block, addr);
        }
        Ok(())
    } else if write {
        g.write(block, env.tid, pc, addr, len)
    } else {
        g.read(block, env.tid, pc, addr, len)
    };
    let kind = if write {
        AccessKind::Write
    } else {
        AccessKind::Read
    };
    r.map_err(|hit| Fault::GlobalRace { hit, kind })
}

fn load<const U: bool>(env: &mut Env<'_>, m: &Mem, pc: u32, ordered: Option<bool>) -> F {
    let size = u32::from(m.size);
    let total = size * u32::from(m.n);
    let addr = address::<U>(env, m.space, m.base, m.disp, total, pc)?;
    let bounds = Fault::Bounds {
        space: m.space,
        addr,
        size: total,
    };
    match m.space {
        MemSpace::Global => {
            let (a, off) = env.global.find(addr, total, env.hint).ok_or(bounds)?;
            track_global(env, addr, total, pc, false, ordered)?;
            for k in 0..usize::from(m.n) {
                let (v, def) = a.load(off + (k as u64) * u64::from(size), size);
                set::<U>(env, m.regs[k], extend(v, size, m.ext), def, pc);
            }
        }
        MemSpace::Shared => {
            let start = shared_at(env.shared, addr, total)?;
            if let Some(race) = env.shared.race.as_mut() {
                for b in start..start + total as usize {
                    race.read(b, env.tid, pc).map_err(|hit| Fault::Race {
                        hit,
                        kind: AccessKind::Read,
                    })?;
                }
            }
            track_cluster(env, None, start, addr, total, pc, AccessKind::Read)?;
            for k in 0..usize::from(m.n) {
                let o = start + k * size as usize;
                let v = le(&env.shared.data[o..o + size as usize]);
                let def = !U
                    || env.shared.written[o..o + size as usize]
                        .iter()
                        .all(|w| *w != 0);
                set::<U>(env, m.regs[k], extend(v, size, m.ext), def, pc);
            }
        }
        MemSpace::Local => {
            let start = local_at(env, addr, total)?;
            for k in 0..usize::from(m.n) {
                let o = start + k * size as usize;
                let v = le(&env.local[o..o + size as usize]);
                let def = !U
                    || env.local_written[o..o + size as usize]
                        .iter()
                        .all(|w| *w != 0);
                set::<U>(env, m.regs[k], extend(v, size, m.ext), def, pc);
            }
        }
        MemSpace::Cluster => {
            let (owner, local) = cluster_target(env, addr, total)?;
            if owner.is_none() {
                let mut own = *m;
                own.space = MemSpace::Shared;
                own.base = NONE;
                own.disp = local as i64;
                return load::<U>(env, &own, pc, ordered).map_err(|f| in_cluster(f, addr));
            }
            let (c, _) = env.cluster.ok_or(bounds)?;
            let owner = owner.unwrap_or(0);
            let start = {
                let cl = c.borrow();
                let mem = cl.mems.get(owner as usize).and_then(Option::as_ref);
                shared_at(mem.ok_or(bounds)?, local, total).map_err(|_| bounds)?
            };
            track_cluster(env, Some(owner), start, local, total, pc, AccessKind::Read)?;
            let cl = c.borrow();
            let mem = cl.mems[owner as usize].as_ref().ok_or(bounds)?;
            let mut got = [(0u64, true); 4];
            for (k, g) in got.iter_mut().enumerate().take(usize::from(m.n)) {
                let o = start + k * size as usize;
                let v = le(&mem.data[o..o + size as usize]);
                let def = !U || mem.written[o..o + size as usize].iter().all(|w| *w != 0);
                *g = (v, def);
            }
            drop(cl);
            for (k, (v, def)) in got.into_iter().enumerate().take(usize::from(m.n)) {
                set::<U>(env, m.regs[k], extend(v, size, m.ext), def, pc);
            }
        }
        MemSpace::Const => {
            let bytes = const_at(env.prog, addr, total)?;
            for k in 0..usize::from(m.n) {
                let o = k * size as usize;
                let v = le(&bytes[o..o + size as usize]);
                set::<U>(env, m.regs[k], extend(v, size, m.ext), true, pc);
            }
        }
        MemSpace::Param => {
            let end = addr.saturating_add(u64::from(total));
            let inside = env.prog.params.iter().any(|p| {
                addr >= u64::from(p.offset) && end <= u64::from(p.offset) + u64::from(p.size)
            });
            if !inside {
                return Err(bounds);
            }
            let start = addr as usize;
            for k in 0..usize::from(m.n) {
                let o = start + k * size as usize;
                let v = env.params.get(o..o + size as usize).map_or(0, le);
                set::<U>(env, m.regs[k], extend(v, size, m.ext), true, pc);
            }
        }
    }
    Ok(())
}

fn store<const U: bool>(env: &mut Env<'_>, m: &Mem, pc: u32) -> F {
    let size = u32::from(m.size);
    let total = size * u32::from(m.n);
    let addr = address::<U>(env, m.space, m.base, m.disp, total, pc)?;
    // A store to global or local memory uses its value; one to shared memory moves it (an
    // exchange moves every register, the undefined ones of a partial tile too): the bytes stay
    // undefined, and a load of them yields an undefined value the checker reports where used.
    if U && m.space != MemSpace::Shared {
        for k in 0..usize::from(m.n) {
            check(env, m.regs[k], UseKind::StoreValue, pc);
        }
    }
    let bounds = Fault::Bounds {
        space: m.space,
        addr,
        size: total,
    };
    match m.space {
        MemSpace::Global => {
            let (a, off) = env.global.find(addr, total, env.hint).ok_or(bounds)?;
            let parallel = env.global.parallel;
            *env.global_writes += 1;
            track_global(env, addr, total, pc, true, None)?;
            for k in 0..usize::from(m.n) {
                let v = env.regs[m.regs[k] as usize];
                a.store(off + (k as u64) * u64::from(size), size, v, parallel);
            }
        }
        MemSpace::Shared => {
            let start = shared_at(env.shared, addr, total)?;
            if let Some(race) = env.shared.race.as_mut() {
                for b in start..start + total as usize {
                    race.write(b, env.tid, pc).map_err(|hit| Fault::Race {
                        hit,
                        kind: AccessKind::Write,
                    })?;
                }
            }
            track_cluster(env, None, start, addr, total, pc, AccessKind::Write)?;
            for k in 0..usize::from(m.n) {
                let o = start + k * size as usize;
                let v = env.regs[m.regs[k] as usize].to_le_bytes();
                env.shared.data[o..o + size as usize].copy_from_slice(&v[..size as usize]);
                let defined = !U || env.origin[m.regs[k] as usize] == 0;
                env.shared.written[o..o + size as usize].fill(u8::from(defined));
            }
        }
        MemSpace::Local => {
            let start = local_at(env, addr, total)?;
            for k in 0..usize::from(m.n) {
                let o = start + k * size as usize;
                let v = env.regs[m.regs[k] as usize].to_le_bytes();
                env.local[o..o + size as usize].copy_from_slice(&v[..size as usize]);
                env.local_written[o..o + size as usize].fill(1);
            }
        }
        MemSpace::Cluster => {
            let (owner, local) = cluster_target(env, addr, total)?;
            let Some(owner) = owner else {
                let mut own = *m;
                own.space = MemSpace::Shared;
                own.base = NONE;
                own.disp = local as i64;
                return store::<U>(env, &own, pc).map_err(|f| in_cluster(f, addr));
            };
            let (c, _) = env.cluster.ok_or(bounds)?;
            let start = {
                let cl = c.borrow();
                let mem = cl.mems.get(owner as usize).and_then(Option::as_ref);
                shared_at(mem.ok_or(bounds)?, local, total).map_err(|_| bounds)?
            };
            track_cluster(env, Some(owner), start, local, total, pc, AccessKind::Write)?;
            let mut cl = c.borrow_mut();
            let mem = cl.mems[owner as usize].as_mut().ok_or(bounds)?;
            for k in 0..usize::from(m.n) {
                let o = start + k * size as usize;
                let v = env.regs[m.regs[k] as usize].to_le_bytes();
                mem.data[o..o + size as usize].copy_from_slice(&v[..size as usize]);
                let defined = !U || env.origin[m.regs[k] as usize] == 0;
                mem.written[o..o + size as usize].fill(u8::from(defined));
            }
        }
        // Decoding refuses stores to parameters and constants.
        MemSpace::Param | MemSpace::Const => return Err(bounds),
    }
    Ok(())
}

/// Where a `.shared::cluster` access goes: `None` for the thread's own block (the `.shared`
/// address is the second value), else the rank of the block whose shared memory it is.
fn cluster_target(env: &Env<'_>, addr: u64, size: u32) -> Result<(Option<u32>, u64), Fault> {
    let bounds = Fault::Bounds {
        space: MemSpace::Cluster,
        addr,
        size,
    };
    let local = addr & LOCAL_MASK;
    let (blocks, me) = match env.cluster {
        Some((c, me)) => (c.borrow().blocks() as u32, me),
        None => (1, 0),
    };
    match cluster::rank_of(addr) {
        None => Ok((None, local)),
        Some(r) if r == me => Ok((None, local)),
        Some(r) if r < blocks => Ok((Some(r), local)),
        Some(_) => Err(bounds),
    }
}

/// A fault of an access to the thread's own block through a `.shared::cluster` address,
/// reported at that address.
fn in_cluster(f: Fault, cluster_addr: u64) -> Fault {
    match f {
        Fault::Bounds { size, .. } => Fault::Bounds {
            space: MemSpace::Cluster,
            addr: cluster_addr,
            size,
        },
        Fault::Misaligned { size, .. } => Fault::Misaligned {
            space: MemSpace::Cluster,
            addr: cluster_addr,
            size,
        },
        other => other,
    }
}

/// Tells the cluster's race checker of an access to storage bytes `[start, start + len)` of
/// `owner`'s shared memory (`None`: the thread's own block) at `.shared` address `addr`.
fn track_cluster(
    env: &Env<'_>,
    owner: Option<u32>,
    start: usize,
    addr: u64,
    len: u32,
    pc: u32,
    kind: AccessKind,
) -> F {
    let Some((c, me)) = env.cluster else {
        return Ok(());
    };
    let owner = owner.unwrap_or(me);
    let mut c = c.borrow_mut();
    for (i, b) in (start..start + len as usize).enumerate() {
        let at = (addr as u32).wrapping_add(i as u32);
        c.access(owner, b, at, me, env.tid, pc, kind)
            .map_err(|hit| Fault::ClusterRace { hit, kind })?;
    }
    Ok(())
}

fn atomic<const U: bool>(env: &mut Env<'_>, at: &Atomic, pc: u32) -> F {
    let size = at.kind.bytes();
    let addr = address::<U>(env, at.space, at.base, at.disp, size, pc)?;
    if U {
        check(env, at.a, UseKind::Atomic, pc);
        if at.b != NONE {
            check(env, at.b, UseKind::Atomic, pc);
        }
    }
    let av = env.regs[at.a as usize];
    let bv = if at.b == NONE {
        0
    } else {
        env.regs[at.b as usize]
    };
    let (op, kind) = (at.op, at.kind);
    let bounds = Fault::Bounds {
        space: at.space,
        addr,
        size,
    };
    let old = match at.space {
        MemSpace::Global => {
            let (a, off) = env.global.find(addr, size, env.hint).ok_or(bounds)?;
            *env.global_writes += 1;
            if let Some((races, block)) = env.global_races {
                let mut g = races.borrow_mut();
                if at.acquire {
                    g.acquire(block, addr);
                }
                if at.release {
                    g.release(block, addr);
                }
            }
            let (old, def) = a.update(off, size, |old| {
                atom_apply(op, kind, AtomAt::Global, old, av, bv)
            });
            if U && !def && env.pending.is_none() {
                env.pending = Some((
                    pc,
                    Fault::UninitMemory {
                        space: at.space,
                        addr,
                    },
                ));
            }
            old
        }
        MemSpace::Shared => {
            let start = shared_at(env.shared, addr, size)?;
            let end = start + size as usize;
            if let Some(race) = env.shared.race.as_mut() {
                for b in start..end {
                    race.atomic(b, env.tid, pc).map_err(|hit| Fault::Race {
                        hit,
                        kind: AccessKind::Atomic,
                    })?;
                }
            }
            track_cluster(env, None, start, addr, size, pc, AccessKind::Atomic)?;
            if U && env.pending.is_none() && env.shared.written[start..end].contains(&0) {
                env.pending = Some((
                    pc,
                    Fault::UninitMemory {
                        space: at.space,
                        addr,
                    },
                ));
            }
            let old = le(&env.shared.data[start..end]);
            let new = atom_apply(op, kind, AtomAt::Shared, old, av, bv).to_le_bytes();
            env.shared.data[start..end].copy_from_slice(&new[..size as usize]);
            env.shared.written[start..end].fill(1);
            old
        }
        MemSpace::Cluster => {
            let (owner, local) = cluster_target(env, addr, size)?;
            let Some(owner) = owner else {
                let mut own = *at;
                own.space = MemSpace::Shared;
                own.base = NONE;
                own.disp = local as i64;
                return atomic::<U>(env, &own, pc).map_err(|f| in_cluster(f, addr));
            };
            let (c, _) = env.cluster.ok_or(bounds)?;
            let start = {
                let cl = c.borrow();
                let mem = cl.mems.get(owner as usize).and_then(Option::as_ref);
                shared_at(mem.ok_or(bounds)?, local, size).map_err(|_| bounds)?
            };
            let end = start + size as usize;
            track_cluster(env, Some(owner), start, local, size, pc, AccessKind::Atomic)?;
            let mut cl = c.borrow_mut();
            let mem = cl.mems[owner as usize].as_mut().ok_or(bounds)?;
            if U && env.pending.is_none() && mem.written[start..end].contains(&0) {
                env.pending = Some((
                    pc,
                    Fault::UninitMemory {
                        space: at.space,
                        addr,
                    },
                ));
            }
            let old = le(&mem.data[start..end]);
            let new = atom_apply(op, kind, AtomAt::Shared, old, av, bv).to_le_bytes();
            mem.data[start..end].copy_from_slice(&new[..size as usize]);
            mem.written[start..end].fill(1);
            old
        }
        // Decoding allows atomics only on global and shared memory.
        MemSpace::Local | MemSpace::Param | MemSpace::Const => return Err(bounds),
    };
    if at.dst != NONE {
        let old = if kind == AtomKind::S32 || kind == AtomKind::U32 || kind == AtomKind::F32 {
            old & 0xFFFF_FFFF
        } else {
            old
        };
        set::<U>(env, at.dst, old, true, pc);
    }
    Ok(())
}
