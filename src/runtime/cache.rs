//! The specialization cache: one loaded module per (kernel, arch, crate version) per context.
//!
//! Architecture invariant: a function is never used in a context it was not loaded in. The map
//! lives with the context, not with the process: every CUDA [`Device`] of one context shares
//! that context's map (found through a registry keyed by the context handle), a device of
//! another context or ordinal has its own, and each simulator has its own. The map keeps the
//! context alive, so a context handle found in the registry always names the live context the
//! map was made for.
//!
//! A hit is a hash-map lookup under a lock with the key's hash precomputed by the kernel, and one
//! comparison of the key's bytes with the entry's (skipped when both share the bytes, as every
//! clone of one kernel does): well under a microsecond. Entries are told apart by their whole
//! key, so two kernels whose hashes collide get modules of their own. A miss emits and loads once per key even when many threads ask at the
//! same time (the others wait for the first); a failure is not cached, so the next call tries
//! again.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};
use std::time::Instant;

use cudarc::driver::CudaContext;

use super::device::{Device, Imp};
use super::disk_cache::Origin;
use super::error::RuntimeError;
use super::image::Compile;
use super::image::KernelImage;
use super::launch::{Function, LoadedKernel};
use super::load::{DiskModule, without_comments};
use super::ptxas::Ptxas;
use crate::cache_key::{KernelKey, StableHasher};
use crate::ptx::Arch;

/// The crate version, folded into every key so kernels emitted by another version of the code
/// generator are never taken for this one's (matters once keys also name a disk cache).
const VERSION_HASH: u64 = StableHasher::new()
    .field(env!("CARGO_PKG_VERSION").as_bytes())
    .value();

/// A cache key: the kernel's key (its serialization and hash), the arch, and the crate
/// version. Equal keys have equal serializations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct CacheKey {
    kernel: KernelKey,
    arch: Arch,
    version: u64,
}

impl CacheKey {
    pub(super) fn new(kernel: KernelKey, arch: Arch) -> Self {
        CacheKey {
            kernel,
            arch,
            version: VERSION_HASH,
        }
    }
}

impl Hash for CacheKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        // The kernel's key is already a hash: mix in the rest and hand over one word.
        let d = self.kernel.digest();
        let mixed = (d as u64)
            ^ ((d >> 64) as u64).rotate_left(31)
            ^ self.version.rotate_left(17)
            ^ u64::from(self.arch.sm()).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        state.write_u64(mixed);
    }
}

/// A hasher for keys that are hashes already: passes the word through (with a final mix, so
/// keys that differ only in high bits spread over buckets).
#[derive(Default)]
pub(super) struct PassThrough(u64);

impl Hasher for PassThrough {
    fn finish(&self) -> u64 {
        let mut x = self.0;
        x ^= x >> 33;
        x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
        x ^ (x >> 33)
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut h = StableHasher::new();
        h = h.field(&self.0.to_le_bytes());
        h = h.field(bytes);
        self.0 = h.value();
    }

    fn write_u64(&mut self, v: u64) {
        self.0 ^= v;
    }
}

/// One key's entry: the loaded kernel once there is one, and the lock the first compiler holds
/// while the others wait.
#[derive(Default)]
struct Slot {
    kernel: OnceLock<Arc<LoadedKernel>>,
    init: Mutex<()>,
}

/// The loaded kernels of one context (or one simulator).
pub(super) struct KernelCache {
    slots: Mutex<HashMap<CacheKey, Arc<Slot>, BuildHasherDefault<PassThrough>>>,
    /// Keeps the context (and so its handle's identity) alive as long as the map.
    _ctx: Option<Arc<CudaContext>>,
}

impl KernelCache {
    pub(super) fn new(ctx: Option<Arc<CudaContext>>) -> Self {
        KernelCache {
            slots: Mutex::new(HashMap::default()),
            _ctx: ctx,
        }
    }

    /// The map of `ctx`, shared by every device of that context.
    pub(super) fn for_context(ctx: &Arc<CudaContext>) -> Arc<KernelCache> {
        type Registry = Vec<(usize, Weak<KernelCache>)>;
        static REGISTRY: Mutex<Registry> = Mutex::new(Vec::new());
        let handle = ctx.cu_ctx() as usize;
        let mut registry = relock(&REGISTRY);
        if let Some(cache) = registry
            .iter()
            .filter(|(h, _)| *h == handle)
            .find_map(|(_, weak)| weak.upgrade())
        {
            return cache;
        }
        registry.retain(|(_, weak)| weak.strong_count() > 0);
        let cache = Arc::new(KernelCache::new(Some(ctx.clone())));
        registry.push((handle, Arc::downgrade(&cache)));
        cache
    }

    fn slot(&self, key: CacheKey) -> Arc<Slot> {
        // `HashMap` compares keys whose hashes match: a collision compares the bytes and
        // finds them different, so the colliding kernel gets a slot of its own.
        relock(&self.slots).entry(key).or_default().clone()
    }

    /// Kernels loaded so far.
    fn len(&self) -> usize {
        relock(&self.slots)
            .values()
            .filter(|s| s.kernel.get().is_some())
            .count()
    }
}

/// Locks `m`, taking over the data if a panic poisoned it (every critical section here leaves
/// the data consistent: inserts of complete values only).
fn relock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The counters behind [`CacheStats`], one set per [`Device`] (clones share them).
#[derive(Debug, Default)]
pub(super) struct StatCounters {
    hits: AtomicU64,
    misses: AtomicU64,
    loads: AtomicU64,
    disk_hits: AtomicU64,
    disk_misses: AtomicU64,
}

/// How [`Device::compile`] calls through one device went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CacheStats {
    /// Calls answered from the cache (including calls that waited for another thread's load).
    pub hits: u64,
    /// Calls that emitted the kernel (each is followed by a load attempt).
    pub misses: u64,
    /// Modules loaded successfully (JIT or disk cache on CUDA, parse on the simulator).
    pub loads: u64,
    /// Loads whose cubin came from the disk cache (no JIT).
    pub disk_hits: u64,
    /// Loads that found no valid entry in the disk cache, so ran the JIT and stored the cubin.
    pub disk_misses: u64,
    /// Kernels in the cache of this device's context, loaded by any device of it.
    pub entries: u64,
}

impl Device {
    /// Loads `kernel` for this device's arch, or finds it loaded already in this device's
    /// context.
    ///
    /// The cache key is `(kernel.cache_key(), arch, crate version)`, compared whole (the
    /// kernel's serialization, not only its hash). On a hit nothing is
    /// emitted or loaded. When several threads compile one kernel at once, one emits and loads
    /// it and the others wait for it. Errors (from [`Compile::emit`] or from loading) are not
    /// cached.
    ///
    /// On CUDA with a [disk cache](Self::disk_cache), a miss emits the PTX and then looks for
    /// its cubin on disk, keyed by the kernel's key, the PTX, the compute capability, the
    /// driver's and `ptxas`'s versions and the crate version: a valid entry is loaded without
    /// running the JIT; otherwise `ptxas` assembles the PTX and the cubin is stored for the
    /// next process. [`cache_stats`](Self::cache_stats) counts both outcomes. Without a
    /// `ptxas` (looked for in `COOPGRAPH_PTXAS`, `CUDA_HOME`, `CUDA_PATH`, `/usr/local/cuda`
    /// and `PATH`) modules are not stored: the driver's linker, the one other way to a cubin,
    /// compiles PTX as relocatable code, with more registers than the JIT gives it.
    ///
    /// The cache belongs to the context: devices opened on the same CUDA context share it,
    /// devices of other contexts (or ordinals) have their own, and so does each simulator. A
    /// function is therefore only ever launched in the context it was loaded in.
    pub fn compile<K: Compile + ?Sized>(&self, kernel: &K) -> Result<Function, RuntimeError> {
        let key = CacheKey::new(kernel.cache_key(), self.arch());
        let slot = self.inner.cache.slot(key);
        if let Some(loaded) = slot.kernel.get() {
            return Ok(self.hit(loaded));
        }
        let _first = relock(&slot.init);
        if let Some(loaded) = slot.kernel.get() {
            return Ok(self.hit(loaded));
        }
        let stats = &self.inner.stats;
        stats.misses.fetch_add(1, Ordering::Relaxed);
        let start = Instant::now();
        let image = kernel.emit(self.arch())?;
        log::debug!(
            "kernel cache miss: `{}` emitted for {} in {:.3} ms ({} bytes of PTX)",
            kernel.name(),
            self.arch(),
            start.elapsed().as_secs_f64() * 1e3,
            image.ptx.len()
        );
        let disk = match &self.inner.imp {
            Imp::Cuda(c) => self
                .disk_cache()
                .zip(Ptxas::find())
                .map(|(cache, ptxas)| DiskModule {
                    cache,
                    key: disk_key(
                        &kernel.cache_key(),
                        &image,
                        c.compute_capability,
                        c.driver_version,
                        &ptxas.version,
                    ),
                    ptxas,
                    arch: format!("sm_{}{}", c.compute_capability.0, c.compute_capability.1),
                }),
            Imp::Sim(_) => None,
        };
        // A CUDA device with a disk cache misses it whenever the module is built, stored or
        // not (without a `ptxas` nothing is).
        let disk_on = matches!(self.inner.imp, Imp::Cuda(_)) && self.disk_cache().is_some();
        let loaded = Arc::new(LoadedKernel::load(self, image, disk.as_ref())?);
        stats.loads.fetch_add(1, Ordering::Relaxed);
        match (loaded.origin(), disk_on) {
            (Origin::Disk, _) => stats.disk_hits.fetch_add(1, Ordering::Relaxed),
            (Origin::Built, true) => stats.disk_misses.fetch_add(1, Ordering::Relaxed),
            (Origin::Built, false) => 0,
        };
        // Only this thread sets the cell (it holds `init`), so the value set is `loaded`.
        let loaded = slot.kernel.get_or_init(|| loaded);
        Ok(Function::new(self.clone(), loaded.clone()))
    }

    fn hit(&self, loaded: &Arc<LoadedKernel>) -> Function {
        self.inner.stats.hits.fetch_add(1, Ordering::Relaxed);
        log::trace!("kernel cache hit: `{}`", loaded.entry());
        Function::new(self.clone(), loaded.clone())
    }

    /// Counts of cache hits, misses and loads through this device (and its clones), and the
    /// number of kernels in its context's cache.
    pub fn cache_stats(&self) -> CacheStats {
        let s = &self.inner.stats;
        CacheStats {
            hits: s.hits.load(Ordering::Relaxed),
            misses: s.misses.load(Ordering::Relaxed),
            loads: s.loads.load(Ordering::Relaxed),
            disk_hits: s.disk_hits.load(Ordering::Relaxed),
            disk_misses: s.disk_misses.load(Ordering::Relaxed),
            entries: self.inner.cache.len() as u64,
        }
    }

    /// Whether `self` and `other` share one specialization cache (same CUDA context, or the
    /// same simulator).
    pub fn shares_cache_with(&self, other: &Device) -> bool {
        Arc::ptr_eq(&self.inner.cache, &other.inner.cache)
    }

    /// The simulator id or CUDA context of this device, for launch checks.
    pub(super) fn target(&self) -> super::args::Target<'_> {
        match &self.inner.imp {
            Imp::Cuda(c) => super::args::Target::Cuda(&c.ctx),
            Imp::Sim(s) => super::args::Target::Sim(s.id),
        }
    }
}

/// The key of a CUDA module in the disk cache: everything its cubin depends on, each field
/// length-prefixed. The kernel's key (its whole IR and options, or a hand-written image), the
/// PTX it emitted without comments and with its whitespace collapsed (the code generator's
/// output itself, so a cubin that an older build of the code generator stored under an
/// unchanged crate version is never taken for this one's; comments carry source lines, which
/// the kernel's key leaves out too), the
/// arch the PTX was written for, the exact compute capability the JIT compiles for, the
/// driver's version, the crate version, the version of the `ptxas` that assembles the cubin
/// and its options.
fn disk_key(
    kernel: &KernelKey,
    image: &KernelImage,
    (major, minor): (u32, u32),
    driver_version: u32,
    ptxas_version: &str,
) -> Vec<u8> {
    const OPTIONS: &str = "ptxas -v, -lineinfo where .file";
    // Tokens one space apart: comments and layout change no cubin.
    let ptx = without_comments(&image.ptx)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let fields: [&[u8]; 10] = [
        b"coopgraph cubin",
        kernel.bytes(),
        ptx.as_bytes(),
        &image.arch.sm().to_le_bytes(),
        &major.to_le_bytes(),
        &minor.to_le_bytes(),
        &driver_version.to_le_bytes(),
        env!("CARGO_PKG_VERSION").as_bytes(),
        ptxas_version.as_bytes(),
        OPTIONS.as_bytes(),
    ];
    let mut out = Vec::with_capacity(fields.iter().map(|f| f.len() + 8).sum());
    for f in fields {
        out.extend_from_slice(&(f.len() as u64).to_le_bytes());
        out.extend_from_slice(f);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::hash_map::RandomState;
    use std::hash::BuildHasher;

    fn hash(key: CacheKey) -> u64 {
        BuildHasherDefault::<PassThrough>::default().hash_one(key)
    }

    fn key(n: u8, arch: Arch) -> CacheKey {
        CacheKey::new(KernelKey::new(vec![n]), arch)
    }

    #[test]
    fn keys_separate_kernel_and_arch() {
        let a = key(1, Arch::Sm90);
        assert_eq!(a, key(1, Arch::Sm90));
        assert_ne!(a, key(2, Arch::Sm90));
        assert_ne!(a, key(1, Arch::Sm80));
        assert_ne!(hash(a.clone()), hash(key(1, Arch::Sm80)));
        assert_ne!(hash(a.clone()), hash(key(2, Arch::Sm90)));
        // The std hasher agrees on equality (keys are usable in any map).
        let s = RandomState::new();
        assert_eq!(s.hash_one(&a), s.hash_one(key(1, Arch::Sm90)));
    }

    #[test]
    fn version_is_part_of_the_key() {
        assert_ne!(VERSION_HASH, StableHasher::new().value());
        assert_eq!(key(5, Arch::Sm75).version, VERSION_HASH);
    }

    /// A kernel whose key the test chooses, hash included.
    struct Forged {
        key: KernelKey,
        image: super::super::KernelImage,
    }

    impl Compile for Forged {
        fn cache_key(&self) -> KernelKey {
            self.key.clone()
        }
        fn name(&self) -> &str {
            &self.image.entry
        }
        fn emit(&self, _arch: Arch) -> Result<super::super::KernelImage, RuntimeError> {
            Ok(self.image.clone())
        }
    }

    fn forged(entry: &str, bytes: &[u8]) -> Forged {
        use super::super::{ImageParts, KernelImage, ParamKind, ParamSig};
        let ptx = crate::sim::entry_text(entry, &["u64 p"], &[], "ret;");
        Forged {
            // One hash for every forged kernel: only the bytes tell them apart.
            key: KernelKey::with_digest(0x5eed, bytes.to_vec()),
            image: KernelImage::generated(
                ImageParts {
                    entry: entry.into(),
                    ptx,
                    arch: Arch::Sm90,
                    params: vec![ParamSig::new("p", ParamKind::Input, crate::ir::DType::U32)],
                    block: [32, 1, 1],
                    tile_elems: 32,
                    static_smem: 0,
                    dynamic_smem: 0,
                    needs_cooperative: false,
                    tile_offsets: false,
                    grid_dims: 1,
                    dynamic_array: None,
                    hidden: vec![],
                },
                crate::ir::Bounds::Checked,
                Vec::new(),
            ),
        }
    }

    #[test]
    fn colliding_hashes_never_share_a_module() {
        let dev = Device::sim();
        let (a, b) = (forged("first", b"kernel a"), forged("second", b"kernel b"));
        assert_eq!(a.key.digest(), b.key.digest());
        let fa = dev.compile(&a).expect("loads");
        let fb = dev.compile(&b).expect("loads");
        assert!(!fa.same_module(&fb));
        assert_eq!((fa.name(), fb.name()), ("first", "second"));
        // Each finds its own module again, through a key of its own bytes (not a clone).
        let again = forged("unused", b"kernel b");
        assert!(dev.compile(&again).expect("hit").same_module(&fb));
        assert!(dev.compile(&a).expect("hit").same_module(&fa));
        let stats = dev.cache_stats();
        assert_eq!((stats.misses, stats.hits, stats.entries), (2, 2, 2));
    }

    #[test]
    fn disk_keys_name_everything_a_cubin_depends_on() {
        let k = forged("k", b"kernel");
        let base = disk_key(&k.key, &k.image, (9, 0), 12080, "V13.0.88");
        assert_eq!(base, disk_key(&k.key, &k.image, (9, 0), 12080, "V13.0.88"));
        // Each of these changes the cubin, so each changes the key.
        let other_kernel = KernelKey::new(b"kernel 2".to_vec());
        assert_ne!(
            base,
            disk_key(&other_kernel, &k.image, (9, 0), 12080, "V13.0.88")
        );
        assert_ne!(base, disk_key(&k.key, &k.image, (9, 1), 12080, "V13.0.88"));
        assert_ne!(base, disk_key(&k.key, &k.image, (10, 0), 12080, "V13.0.88"));
        assert_ne!(base, disk_key(&k.key, &k.image, (9, 0), 12090, "V13.0.88"));
        assert_ne!(base, disk_key(&k.key, &k.image, (9, 0), 12080, "V13.1.80"));
        let mut sm80 = k.image.clone();
        sm80.parts_mut().arch = Arch::Sm80;
        assert_ne!(base, disk_key(&k.key, &sm80, (9, 0), 12080, "V13.0.88"));
        // Other PTX under an unchanged kernel key (another build of the code generator) is
        // another entry; PTX that differs only in its comments (source lines) is the same.
        let mut changed = k.image.clone();
        changed.parts_mut().ptx = k.image.ptx.replace("ret;", "exit;");
        assert_ne!(base, disk_key(&k.key, &changed, (9, 0), 12080, "V13.0.88"));
        let mut commented = k.image.clone();
        commented.parts_mut().ptx = format!("// built at main.rs:10:5\n{}", k.image.ptx);
        assert_eq!(
            base,
            disk_key(&k.key, &commented, (9, 0), 12080, "V13.0.88")
        );
        // Fields are length-prefixed: bytes moved from one field to the next do not collide.
        let a = KernelKey::new(b"ab".to_vec());
        let mut moved = k.image.clone();
        moved.parts_mut().ptx = format!("b{}", k.image.ptx);
        let shifted = disk_key(
            &KernelKey::new(b"a".to_vec()),
            &moved,
            (9, 0),
            12080,
            "V13.0.88",
        );
        assert_ne!(disk_key(&a, &k.image, (9, 0), 12080, "V13.0.88"), shifted);
    }
}
