//! Keys spread across the ranks of a communicator, sorted (keys, and pairs), reduced and
//! scanned across them ([`coopgraph::multi`]), each checked against the host.
//!
//! With `COOPGRAPH_DEVICE=cuda` the ranks run on [`Device::all`]'s GPUs, one rank per GPU;
//! built with the feature `nccl`, through a `NcclCommunicator` over them (where `libnccl`
//! cannot be loaded, the example says so and falls back), otherwise through a
//! [`SimCommunicator::over`] them (peer copies between GPUs). `COOPGRAPH_RANKS` asks for
//! another number of ranks, dealt round-robin over the GPUs; more ranks than GPUs (several
//! on the one GPU of a one-GPU machine) always run on the `SimCommunicator`, as NCCL refuses
//! two ranks on one GPU. Otherwise four ranks run on four simulated devices. Each rank holds
//! `COOPGRAPH_BENCH_N` keys (2^22 on a GPU, 2^8 on the simulator), rank 1 half as many.
//! Prints keys/s per rank for each algorithm; exits non-zero when any result is wrong.

use std::process::ExitCode;
use std::time::Instant;

#[cfg(feature = "nccl")]
use coopgraph::multi::NcclCommunicator;
use coopgraph::multi::{self, Communicator, ReduceOp, SimCommunicator};
use coopgraph::runtime::{Buffer, Device};

type Failure = Box<dyn std::error::Error>;

/// The communicators the example runs on.
enum Comm {
    Sim(SimCommunicator),
    #[cfg(feature = "nccl")]
    Nccl(NcclCommunicator),
}

/// The communicator the environment asks for.
fn communicator() -> Result<Comm, Failure> {
    let cuda = std::env::var("COOPGRAPH_DEVICE").is_ok_and(|v| v.trim().starts_with("cuda"));
    if !cuda {
        return Ok(Comm::Sim(SimCommunicator::new(4)?));
    }
    let gpus = Device::all()?;
    if gpus.is_empty() {
        return Err("COOPGRAPH_DEVICE=cuda but the driver sees no GPU".into());
    }
    let ranks = match std::env::var("COOPGRAPH_RANKS") {
        Ok(v) => v.trim().parse::<usize>()?,
        Err(_) => gpus.len(),
    };
    let devices: Vec<Device> = (0..ranks).map(|r| gpus[r % gpus.len()].clone()).collect();
    // One rank per GPU at most: NCCL, where the feature is on and the library loads.
    #[cfg(feature = "nccl")]
    {
        use coopgraph::Error;
        use coopgraph::multi::CommError;
        if ranks <= gpus.len() {
            match NcclCommunicator::new(devices.clone()) {
                Ok(comm) => return Ok(Comm::Nccl(comm)),
                Err(Error::Comm(e @ CommError::NcclUnavailable { .. })) => {
                    println!("NCCL NOT USED: {e}; peer copies instead");
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
    Ok(Comm::Sim(SimCommunicator::over(devices)?))
}

/// Keys of each rank: pseudo-random `u32`s below 2^20 (so the scan's sums fit), `n` on every
/// rank but rank 1 (half).
fn keys(ranks: usize, n: usize) -> Vec<Vec<u32>> {
    (0..ranks)
        .map(|r| {
            let len = if r == 1 { n / 2 } else { n };
            (0..len as u64)
                .map(|i| {
                    let x = (i + 1_000_003 * r as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                    (x >> 44) as u32
                })
                .collect()
        })
        .collect()
}

/// Runs `f`, waits for every rank's device, and prints keys/s per rank.
fn timed<R>(
    comm: &impl Communicator,
    what: &str,
    per_rank: &[usize],
    f: impl FnOnce() -> Result<R, Failure>,
) -> Result<R, Failure> {
    let start = Instant::now();
    let r = f()?;
    for d in comm.devices() {
        d.synchronize()?;
    }
    let secs = start.elapsed().as_secs_f64();
    let rates: Vec<String> = per_rank
        .iter()
        .map(|&n| format!("{:.3e}", n as f64 / secs))
        .collect();
    println!(
        "{what:>15}: {secs:.4} s, keys/s per rank [{}]",
        rates.join(", ")
    );
    Ok(r)
}

fn download(bufs: &[Buffer<u32>]) -> Result<Vec<Vec<u32>>, Failure> {
    Ok(bufs.iter().map(Buffer::to_vec).collect::<Result<_, _>>()?)
}

fn run() -> Result<Vec<String>, Failure> {
    match communicator()? {
        Comm::Sim(comm) => {
            println!("SimCommunicator");
            run_on(&comm)
        }
        #[cfg(feature = "nccl")]
        Comm::Nccl(comm) => {
            println!("NcclCommunicator");
            run_on(&comm)
        }
    }
}

fn run_on<C: Communicator>(comm: &C) -> Result<Vec<String>, Failure> {
    let on_gpu = comm.device(0).is_cuda();
    let n = match std::env::var("COOPGRAPH_BENCH_N") {
        Ok(v) => v.trim().parse()?,
        Err(_) if on_gpu => 1 << 22,
        Err(_) => 1 << 8,
    };
    println!("{} ranks on {:?}", comm.ranks(), comm.devices());
    let data = keys(comm.ranks(), n);
    let lens: Vec<usize> = data.iter().map(Vec::len).collect();
    let all: Vec<u32> = data.concat();
    let x: Vec<Buffer<u32>> = data
        .iter()
        .enumerate()
        .map(|(r, d)| comm.device(r).upload(d))
        .collect::<Result<_, _>>()?;
    let mut wrong = Vec::new();

    // Warm up: every kernel compiled on every rank's device before the timed runs.
    multi::sort_keys(comm, &x)?;

    let runs = timed(comm, "sort_keys", &lens, || Ok(multi::sort_keys(comm, &x)?))?;
    let runs = download(&runs)?;
    let mut want = all.clone();
    want.sort_unstable();
    if runs.concat() != want {
        wrong.push("sort_keys: the runs are not the sorted keys".to_string());
    }
    let sizes: Vec<usize> = runs.iter().map(Vec::len).collect();
    println!("{:>15}  run sizes {sizes:?}", "");

    for op in [ReduceOp::Sum, ReduceOp::Max] {
        let got = timed(comm, &format!("reduce {op:?}"), &lens, || {
            Ok(multi::reduce(comm, &x, op)?)
        })?;
        let want = match op {
            ReduceOp::Max => all.iter().copied().max(),
            _ => all.iter().copied().reduce(u32::wrapping_add),
        };
        if got != want {
            wrong.push(format!("reduce {op:?}: {got:?} instead of {want:?}"));
        }
    }

    let mut y: Vec<Buffer<u32>> = lens
        .iter()
        .enumerate()
        .map(|(r, &len)| comm.device(r).alloc_zeroed::<u32>(len))
        .collect::<Result<_, _>>()?;
    timed(comm, "inclusive_scan", &lens, || {
        Ok(multi::inclusive_scan(comm, &x, &mut y)?)
    })?;
    let mut acc = 0u32;
    let want: Vec<u32> = all
        .iter()
        .map(|&v| {
            acc = acc.wrapping_add(v);
            acc
        })
        .collect();
    if download(&y)?.concat() != want {
        wrong.push("inclusive_scan differs from the host's".to_string());
    }
    timed(comm, "scan Max", &lens, || {
        Ok(multi::inclusive_scan_with(comm, &x, &mut y, ReduceOp::Max)?)
    })?;
    let mut acc = 0u32;
    let want: Vec<u32> = all
        .iter()
        .map(|&v| {
            acc = acc.max(v);
            acc
        })
        .collect();
    if download(&y)?.concat() != want {
        wrong.push("inclusive_scan_with Max differs from the host's".to_string());
    }

    // Pairs: each key's place in the whole as its value; the sort is stable.
    let mut next = 0u32;
    let places: Vec<Buffer<u32>> = lens
        .iter()
        .enumerate()
        .map(|(r, &len)| {
            let v: Vec<u32> = (next..next + len as u32).collect();
            next += len as u32;
            comm.device(r).upload(&v)
        })
        .collect::<Result<_, _>>()?;
    multi::sort_pairs(comm, &x, &places)?;
    let (k, v) = timed(comm, "sort_pairs", &lens, || {
        Ok(multi::sort_pairs(comm, &x, &places)?)
    })?;
    let mut order: Vec<u32> = (0..all.len() as u32).collect();
    order.sort_by_key(|&i| all[i as usize]);
    if download(&v)?.concat() != order {
        wrong.push("sort_pairs: the values are not the keys' places in stable order".into());
    }
    if download(&k)?.concat() != order.iter().map(|&i| all[i as usize]).collect::<Vec<_>>() {
        wrong.push("sort_pairs: the keys are not sorted".into());
    }
    Ok(wrong)
}

fn main() -> ExitCode {
    match run() {
        Ok(wrong) if wrong.is_empty() => {
            println!("all results match the host");
            ExitCode::SUCCESS
        }
        Ok(wrong) => {
            for w in wrong {
                eprintln!("WRONG: {w}");
            }
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
