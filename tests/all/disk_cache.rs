//! The disk cache: its file logic over bytes (no GPU needed) — round trips, corrupted,
//! truncated and tampered entries (each reported, deleted, then a miss), eviction, writers on
//! many threads and in several processes at once — and, on a GPU, modules that a second
//! process takes from the disk instead of the JIT.

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use super::common::{device, logged};
use coopgraph::runtime::{DiskCache, Lookup, Rejection};
use coopgraph::{KernelBuilder, Load, Store};

/// A fresh directory for one test.
fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "coopgraph-disk-{name}-{}-{}",
        std::process::id(),
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    ));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Whether a warning mentioning `path` was logged.
fn warned_about(path: &std::path::Path) -> bool {
    let needle = path.display().to_string();
    logged()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .any(|l| l.starts_with("WARN") && l.contains(&needle))
}

#[test]
fn damaged_entries_are_reported_deleted_and_missed() {
    logged();
    let dir = temp_dir("damaged");
    let cache = DiskCache::new(&dir);
    let payload: Vec<u8> = (0..5000u32).map(|i| (i * 7) as u8).collect();
    cache.store(b"kernel a", &payload).expect("stored");
    assert_eq!(cache.load(b"kernel a"), Lookup::Hit(payload.clone()));
    let path = cache.entry_path(b"kernel a");

    // A flipped bit in the payload.
    let mut bytes = std::fs::read(&path).expect("read");
    bytes[3000] ^= 0x04;
    std::fs::write(&path, &bytes).expect("write");
    assert_eq!(
        cache.load(b"kernel a"),
        Lookup::Rejected(Rejection::Checksum)
    );
    assert!(!path.exists(), "a rejected entry is deleted");
    assert!(warned_about(&path));
    assert_eq!(cache.load(b"kernel a"), Lookup::Miss);

    // Truncated.
    cache.store(b"kernel a", &payload).expect("stored");
    let bytes = std::fs::read(&path).expect("read");
    std::fs::write(&path, &bytes[..bytes.len() / 2]).expect("write");
    assert_eq!(
        cache.load(b"kernel a"),
        Lookup::Rejected(Rejection::Truncated)
    );
    assert!(!path.exists());

    // Tampered: another key's valid entry under this key's name (as a hash collision or a
    // copied file would leave it) is never taken for this key's.
    cache.store(b"kernel b", b"b's module").expect("stored");
    cache.store(b"kernel a", &payload).expect("stored");
    std::fs::copy(cache.entry_path(b"kernel b"), &path).expect("copy");
    assert_eq!(
        cache.load(b"kernel a"),
        Lookup::Rejected(Rejection::KeyMismatch)
    );
    assert_eq!(cache.load(b"kernel a"), Lookup::Miss);
    assert_eq!(cache.load(b"kernel b"), Lookup::Hit(b"b's module".to_vec()));

    // Not an entry at all.
    std::fs::write(&path, b"hello").expect("write");
    assert_eq!(
        cache.load(b"kernel a"),
        Lookup::Rejected(Rejection::NotAnEntry)
    );
    // The rebuild stores it again, and it hits.
    cache.store(b"kernel a", &payload).expect("stored");
    assert_eq!(cache.load(b"kernel a"), Lookup::Hit(payload));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn eviction_keeps_the_cache_under_its_limit_least_recently_used_first() {
    let dir = temp_dir("evict");
    let one = vec![1u8; 1000];
    // Room for three entries of a thousand bytes and their headers, not four.
    let cache = DiskCache::new(&dir).with_max_bytes(3500);
    let keys: [&[u8]; 4] = [b"k0", b"k1", b"k2", b"k3"];
    for (i, key) in keys.iter().take(3).enumerate() {
        cache.store(key, &one).expect("stored");
        // Older entries are older by an hour each, so the order is certain.
        let age = Duration::from_secs(3600 * (10 - i as u64));
        let file = std::fs::OpenOptions::new()
            .append(true)
            .open(cache.entry_path(key))
            .expect("open");
        file.set_modified(SystemTime::now() - age).expect("mtime");
    }
    assert_eq!(cache.usage().expect("usage").entries, 3);
    // A hit refreshes k0 (it was used an hour or more ago), so k1 is now the oldest.
    assert!(matches!(cache.load(b"k0"), Lookup::Hit(_)));
    cache.store(b"k3", &one).expect("stored");
    let usage = cache.usage().expect("usage");
    assert_eq!(usage.entries, 3);
    assert!(usage.bytes <= 3500);
    assert_eq!(
        cache.load(b"k1"),
        Lookup::Miss,
        "the least recently used went"
    );
    for key in [&b"k0"[..], b"k2", b"k3"] {
        assert!(matches!(cache.load(key), Lookup::Hit(_)));
    }
    // An entry larger than the whole limit is not stored.
    cache.store(b"huge", &vec![0u8; 10_000]).expect("skipped");
    assert_eq!(cache.load(b"huge"), Lookup::Miss);
    // A crashed writer's temporary file is deleted once stale; a fresh one is left alone.
    let stale = cache.entry_path(b"k0").with_file_name(".dead.1.0.tmp");
    let fresh = cache.entry_path(b"k0").with_file_name(".live.1.0.tmp");
    std::fs::write(&stale, b"partial").expect("write");
    std::fs::write(&fresh, b"partial").expect("write");
    std::fs::OpenOptions::new()
        .append(true)
        .open(&stale)
        .expect("open")
        .set_modified(SystemTime::now() - Duration::from_secs(7200))
        .expect("mtime");
    cache.usage().expect("usage");
    assert!(!stale.exists() && fresh.exists());
    cache.clear().expect("clear");
    assert_eq!(cache.usage().expect("usage").entries, 0);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The payload every writer stores for `key`: a function of the key alone, as a module is of
/// its specialization.
fn payload_of(key: &str) -> Vec<u8> {
    let seed = key
        .bytes()
        .fold(7u32, |h, b| h.wrapping_mul(31) ^ u32::from(b));
    (0..20_000u32)
        .map(|i| (seed.wrapping_mul(i + 1) >> 7) as u8)
        .collect()
}

/// Stores and loads the keys `k0..k8` over and over; panics on anything but a hit of the
/// right payload or a miss.
fn hammer(cache: &DiskCache, rounds: usize) {
    for round in 0..rounds {
        for k in 0..8 {
            let key = format!("k{k}");
            if (round + k) % 3 == 0 {
                cache
                    .store(key.as_bytes(), &payload_of(&key))
                    .expect("stored");
            }
            match cache.load(key.as_bytes()) {
                Lookup::Hit(p) => assert!(p == payload_of(&key), "wrong payload for {key}"),
                Lookup::Miss => {}
                Lookup::Rejected(why) => panic!("{key}: a concurrent write was seen torn: {why}"),
            }
        }
    }
}

#[test]
fn writers_on_many_threads_never_expose_a_partial_entry() {
    let dir = temp_dir("threads");
    let cache = Arc::new(DiskCache::new(&dir));
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let cache = cache.clone();
            std::thread::spawn(move || hammer(&cache, 25))
        })
        .collect();
    for t in threads {
        t.join().expect("no torn entry");
    }
    for k in 0..8 {
        let key = format!("k{k}");
        assert_eq!(cache.load(key.as_bytes()), Lookup::Hit(payload_of(&key)));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The entry point of the other processes of the test below: does nothing unless that test
/// started this process (so it is ignored in ordinary runs).
#[test]
#[ignore = "run by writers_in_several_processes_never_expose_a_partial_entry"]
fn disk_cache_writer_process() {
    let Some(dir) = std::env::var_os("DISK_CACHE_CHILD_DIR") else {
        return;
    };
    hammer(&DiskCache::new(PathBuf::from(dir)), 40);
}

#[test]
fn writers_in_several_processes_never_expose_a_partial_entry() {
    let dir = temp_dir("processes");
    let exe = std::env::current_exe().expect("the test binary");
    let children: Vec<_> = (0..2)
        .map(|_| {
            Command::new(&exe)
                .args([
                    "--exact",
                    "disk_cache::disk_cache_writer_process",
                    "--ignored",
                    "--test-threads=1",
                ])
                .env("DISK_CACHE_CHILD_DIR", &dir)
                .stdout(std::process::Stdio::null())
                .spawn()
                .expect("spawn a writer process")
        })
        .collect();
    // This process writes and reads meanwhile too.
    hammer(&DiskCache::new(&dir), 40);
    for mut child in children {
        let status = child.wait().expect("wait");
        assert!(
            status.success(),
            "a writer process saw a torn entry: {status}"
        );
    }
    let cache = DiskCache::new(&dir);
    for k in 0..8 {
        let key = format!("k{k}");
        assert_eq!(cache.load(key.as_bytes()), Lookup::Hit(payload_of(&key)));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The kernel the CUDA tests below cache: built the same way in every process, so its key is
/// the same in each.
fn disk_kernel() -> coopgraph::Kernel {
    let mut k = KernelBuilder::new("disk_cache_copy")
        .block(128)
        .items_per_thread(4);
    let x = k.input::<u32>("x");
    let y = k.output::<u32>("y");
    let b = k.this_block();
    let t = k.load_from(b, &x, Load::vectorize());
    let t = k.map(&t, |v| v ^ 0x0d15_c0deu32);
    k.store_to(b, &y, &t, Store::vectorize());
    k.build().expect("builds")
}

/// A CUDA device of its own over the tests' context (own statistics and disk setting), with
/// its disk cache in `dir`.
fn disk_device(dir: &std::path::Path) -> coopgraph::runtime::Device {
    let stream = device().cuda_stream().expect("a CUDA device").clone();
    let dev = coopgraph::runtime::Device::from_cuda_stream(stream).expect("adopt");
    dev.set_disk_cache(Some(DiskCache::new(dir)));
    dev
}

/// Compiles [`disk_kernel`] on `dev`, checks a launch against the CPU, and returns how long
/// the compile took and whether its module came from the disk.
fn compile_and_run(dev: &coopgraph::runtime::Device) -> (Duration, bool) {
    let kernel = disk_kernel();
    let before = dev.cache_stats();
    let t = Instant::now();
    let f = dev.compile(&kernel).expect("compiles");
    let took = t.elapsed();
    let after = dev.cache_stats();
    let from_disk = after.disk_hits == before.disk_hits + 1;
    assert!(
        from_disk || after.disk_misses == before.disk_misses + 1,
        "a compile on a device with a disk cache either hits or misses it"
    );
    let xs: Vec<u32> = (0..4096).collect();
    let x = dev.upload(&xs).expect("upload");
    let mut y = dev.alloc_zeroed::<u32>(4096).expect("alloc");
    f.launch_over(4096, (&x, &mut y)).expect("launch");
    let want: Vec<u32> = xs.iter().map(|v| v ^ 0x0d15_c0de).collect();
    assert_eq!(y.to_vec().expect("download"), want);
    (took, from_disk)
}

/// The second process of the test below: compiles the kernel with the disk cache in
/// `DISK_CACHE_CUDA_DIR` and checks that its module came from the disk exactly when
/// `DISK_CACHE_CUDA_EXPECT` is `hit`. Does nothing unless that test started this process.
#[test]
#[ignore = "run by cuda_modules_come_back_from_the_disk"]
fn disk_cache_cuda_process() {
    let (Some(dir), Ok(expect)) = (
        std::env::var_os("DISK_CACHE_CUDA_DIR"),
        std::env::var("DISK_CACHE_CUDA_EXPECT"),
    ) else {
        return;
    };
    let dev = disk_device(&PathBuf::from(dir));
    let kernel = disk_kernel();
    let t = Instant::now();
    let _ = coopgraph::runtime::Compile::emit(&kernel, dev.arch()).expect("emits");
    let emit = t.elapsed();
    let (took, from_disk) = compile_and_run(&dev);
    assert_eq!(from_disk, expect == "hit", "expected a disk {expect}");
    eprintln!(
        "disk cache, second process ({expect}): compile {:.3} ms, of which emitting PTX {:.3} ms",
        took.as_secs_f64() * 1e3,
        emit.as_secs_f64() * 1e3
    );
}

/// Runs [`disk_cache_cuda_process`] in a new process, expecting a disk `expect`.
fn second_process(dir: &std::path::Path, expect: &str) {
    let exe = std::env::current_exe().expect("the test binary");
    let status = Command::new(&exe)
        .args([
            "--exact",
            "disk_cache::disk_cache_cuda_process",
            "--ignored",
            "--nocapture",
        ])
        .env("DISK_CACHE_CUDA_DIR", dir)
        .env("DISK_CACHE_CUDA_EXPECT", expect)
        .stdout(std::process::Stdio::null())
        .status()
        .expect("spawn a second process");
    assert!(
        status.success(),
        "the process expecting a disk {expect} failed: {status}"
    );
}

/// On a GPU: the first process has `ptxas` assemble the cubin and stores it; a second process
/// loads the cubin from the disk (no JIT) and the kernel runs the same; a corrupted or truncated entry is
/// rejected, rebuilt and rewritten, and the rewritten entry is a hit again. Prints the times.
/// On the simulator: the simulator has no disk cache (it parses PTX, which costs little), even
/// when one is set.
#[test]
fn cuda_modules_come_back_from_the_disk() {
    if !device().is_cuda() {
        let sim = coopgraph::runtime::Device::sim();
        sim.set_disk_cache(Some(DiskCache::new(temp_dir("sim"))));
        assert!(sim.disk_cache().is_none() && device().disk_cache().is_none());
        eprintln!("cuda_modules_come_back_from_the_disk: the default device is the simulator");
        return;
    }
    let dir = temp_dir("cuda");
    // This process: a miss (the entry is new), which stores the cubin.
    let dev = disk_device(&dir);
    let (jit, from_disk) = compile_and_run(&dev);
    assert!(!from_disk);
    let entries: Vec<_> = std::fs::read_dir(dir.join("modules-v1"))
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "cgm"))
        .collect();
    if entries.is_empty() {
        // No `ptxas` here: modules are JIT-compiled and never stored, so every process misses.
        eprintln!("cuda_modules_come_back_from_the_disk: no ptxas, nothing stored");
        second_process(&dir, "miss");
        return;
    }
    assert_eq!(entries.len(), 1, "one entry: {entries:?}");
    let entry = &entries[0];
    eprintln!(
        "disk cache, first process (miss): compile {:.3} ms",
        jit.as_secs_f64() * 1e3
    );
    second_process(&dir, "hit");
    // A flipped byte in the cubin: rejected, rebuilt, rewritten; then a hit again.
    let mut bytes = std::fs::read(entry).expect("read");
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(entry, &bytes).expect("write");
    second_process(&dir, "miss");
    assert_ne!(std::fs::read(entry).expect("rewritten"), bytes);
    second_process(&dir, "hit");
    // Truncated, as a crash mid-write without the rename would leave it: the same.
    let bytes = std::fs::read(entry).expect("read");
    std::fs::write(entry, &bytes[..bytes.len() - 100]).expect("write");
    second_process(&dir, "miss");
    second_process(&dir, "hit");
    dev.set_disk_cache(None);
    let _ = std::fs::remove_dir_all(&dir);
}
