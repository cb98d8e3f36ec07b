//! The disk cache of compiled modules: bytes (on CUDA, the cubin `ptxas` assembled from a
//! kernel's PTX) stored under a key, so that a second process loads them instead of running
//! the JIT again.
//!
//! An entry is one file in the cache directory, named by a 128-bit hash of its key, holding:
//!
//! ```text
//! magic "CGMODULE" | format u32 | key length u64 | payload length u64 | key | payload | check
//! ```
//!
//! (integers little-endian; `check` is a 128-bit checksum of everything before it). A lookup
//! reads the file whole and gives back the payload only when the magic, format, lengths and
//! checksum hold and the stored key equals the key asked for, byte for byte: a hash collision,
//! or an entry copied or renamed under another name, is a key mismatch, never another kernel's
//! module. An entry that fails any check (corrupted, truncated, tampered with) is reported
//! through `log`, deleted, and treated as a miss, so the caller rebuilds and stores it again.
//! The autotuner's records ([`DiskCache::tuning`]) are entries of the same format and checks,
//! in a subdirectory of their own.
//!
//! Writers never expose a partial file: an entry is written to a temporary file of its own in
//! the same directory and renamed over the entry's name, which replaces it whole. Several
//! threads or processes storing one key at once each rename a complete file; the last wins, and
//! every reader sees one complete file or none. No `fsync`: a file torn by a crash fails its
//! checksum and is rebuilt.
//!
//! The cache's total size is kept under a limit: after a store, the least recently used entries
//! (by modification time, refreshed by hits at most once an hour) are deleted until the total is
//! within it, and temporary files a crashed writer left behind (older than an hour) go too.
//!
//! The checksum detects accidents, not an attacker: anyone who can write the cache directory can
//! forge an entry (as with the driver's own JIT cache). So the directory is created private to
//! its user (mode `0700` on Unix), and on Unix a directory of entries that other users can write
//! (or, on Linux, that another user owns) is not used at all: lookups miss and stores fail, with
//! a warning.

use std::fmt;
use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

/// Names the cache directory (`COOPGRAPH_CACHE_DIR`); without it, the platform's cache directory
/// (see [`DiskCache::default_dir`]).
pub const CACHE_DIR_ENV: &str = "COOPGRAPH_CACHE_DIR";

/// `COOPGRAPH_DISK_CACHE=0` (or `off`, `false`, `no`) turns the disk cache off.
pub const DISK_CACHE_ENV: &str = "COOPGRAPH_DISK_CACHE";

/// The disk cache's size limit in MiB (`COOPGRAPH_DISK_CACHE_MAX_MB`); default
/// [`DiskCache::DEFAULT_MAX_BYTES`].
pub const DISK_CACHE_MAX_ENV: &str = "COOPGRAPH_DISK_CACHE_MAX_MB";

const MAGIC: &[u8; 8] = b"CGMODULE";
const FORMAT: u32 = 1;
/// Magic, format, the two lengths.
const HEADER: usize = 8 + 4 + 8 + 8;
const CHECK: usize = 16;
/// Compiled modules live in a subdirectory per format, so another format's files are never
/// read.
const SUBDIR: &str = "modules-v1";
/// The autotuner's records live beside them, in a subdirectory of their own.
const TUNING_SUBDIR: &str = "tuning-v1";
const ENTRY_EXT: &str = "cgm";
const TEMP_EXT: &str = "tmp";
/// A hit refreshes an entry's time at most this often (a hit is otherwise a read only).
const TOUCH_AFTER: Duration = Duration::from_secs(3600);
/// Temporary files older than this are a crashed writer's and are deleted.
const STALE_TEMP: Duration = Duration::from_secs(3600);

/// A directory of compiled modules, shared by every process that opens it. See the module
/// documentation for the format and the guarantees.
///
/// ```
/// use coopgraph::runtime::{DiskCache, Lookup};
///
/// let dir = std::env::temp_dir().join(format!("coopgraph-doc-{}", std::process::id()));
/// let cache = DiskCache::new(&dir).with_max_bytes(1 << 20);
/// assert!(matches!(cache.load(b"key"), Lookup::Miss));
/// cache.store(b"key", b"module bytes").expect("stored");
/// assert!(matches!(cache.load(b"key"), Lookup::Hit(bytes) if bytes == b"module bytes"));
/// cache.clear().expect("cleared");
/// # let _ = std::fs::remove_dir_all(&dir);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiskCache {
    dir: PathBuf,
    max_bytes: u64,
    holds: Holds,
}

/// What a cache's entries are: each kind lives in a subdirectory of its own, so a lookup of
/// one never reads the other and each has its own size limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Holds {
    Modules,
    TuningRecords,
}

impl Holds {
    fn subdir(self) -> &'static str {
        match self {
            Holds::Modules => SUBDIR,
            Holds::TuningRecords => TUNING_SUBDIR,
        }
    }

    /// What happens after an entry is rejected, for the log.
    fn remedy(self) -> &'static str {
        match self {
            Holds::Modules => "the module is rebuilt",
            Holds::TuningRecords => "the kernel is tuned again",
        }
    }
}

/// What a lookup found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// A valid entry for the key: its payload.
    Hit(Vec<u8>),
    /// No entry for the key (or the directory cannot be read).
    Miss,
    /// An entry that failed a check; it was deleted, so this is a miss too.
    Rejected(Rejection),
}

/// Why an entry was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejection {
    /// Shorter than its header or than the lengths it declares, or longer (a truncated or
    /// appended file).
    Truncated,
    /// Not an entry file: the magic bytes differ.
    NotAnEntry,
    /// An entry of another format version.
    Format(u32),
    /// The checksum does not match the contents (a corrupted or tampered file).
    Checksum,
    /// A valid entry for another key (a hash collision, or a file copied under this name).
    KeyMismatch,
}

impl std::fmt::Display for Rejection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Rejection::Truncated => f.write_str("its length is not what its header declares"),
            Rejection::NotAnEntry => f.write_str("it is not a module entry"),
            Rejection::Format(v) => write!(f, "it is of format {v}, this build reads {FORMAT}"),
            Rejection::Checksum => f.write_str("its checksum does not match its contents"),
            Rejection::KeyMismatch => f.write_str("it holds another key's module"),
        }
    }
}

/// What an eviction pass found and did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Usage {
    /// Entries left.
    pub entries: u64,
    /// Their total size in bytes.
    pub bytes: u64,
    /// Entries deleted by this pass.
    pub evicted: u64,
}

impl DiskCache {
    /// The default size limit: 256 MiB.
    pub const DEFAULT_MAX_BYTES: u64 = 256 << 20;

    /// A cache in `dir` (created on the first store), limited to
    /// [`DEFAULT_MAX_BYTES`](Self::DEFAULT_MAX_BYTES).
    pub fn new(dir: impl Into<PathBuf>) -> DiskCache {
        DiskCache {
            dir: dir.into(),
            max_bytes: Self::DEFAULT_MAX_BYTES,
            holds: Holds::Modules,
        }
    }

    /// The same cache with a size limit of `bytes`.
    pub fn with_max_bytes(mut self, bytes: u64) -> DiskCache {
        self.max_bytes = bytes;
        self
    }

    /// The cache the environment asks for: `None` when [`DISK_CACHE_ENV`] turns it off or no
    /// directory can be found; else in [`CACHE_DIR_ENV`]'s directory or the
    /// [`default_dir`](Self::default_dir), with [`DISK_CACHE_MAX_ENV`]'s limit.
    pub fn from_env() -> Option<DiskCache> {
        let off = std::env::var(DISK_CACHE_ENV).is_ok_and(|v| {
            matches!(
                v.trim().to_ascii_lowercase().as_str(),
                "0" | "off" | "false" | "no"
            )
        });
        if off {
            return None;
        }
        let dir = match std::env::var_os(CACHE_DIR_ENV) {
            Some(d) if !d.is_empty() => PathBuf::from(d),
            _ => Self::default_dir()?,
        };
        let mut cache = DiskCache::new(dir);
        if let Some(mb) = std::env::var(DISK_CACHE_MAX_ENV)
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
        {
            cache.max_bytes = mb.saturating_mul(1 << 20);
        }
        Some(cache)
    }

    /// The platform's cache directory for coopgraph, by the platform's rules: on Linux and other
    /// Unix `$XDG_CACHE_HOME/coopgraph` (when it is an absolute path) or
    /// `$HOME/.cache/coopgraph`; on macOS `$HOME/Library/Caches/coopgraph`; on Windows
    /// `%LOCALAPPDATA%\coopgraph`. `None` where the variables are missing.
    pub fn default_dir() -> Option<PathBuf> {
        let var = |name: &str| {
            std::env::var_os(name)
                .map(PathBuf::from)
                .filter(|p| p.is_absolute())
        };
        let base = if cfg!(windows) {
            var("LOCALAPPDATA")?
        } else if cfg!(target_os = "macos") {
            var("HOME")?.join("Library").join("Caches")
        } else {
            var("XDG_CACHE_HOME").or_else(|| var("HOME").map(|h| h.join(".cache")))?
        };
        Some(base.join("coopgraph"))
    }

    /// The cache directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The size limit in bytes.
    pub fn max_bytes(&self) -> u64 {
        self.max_bytes
    }

    /// The cache of the autotuner's records ([`Tuner`](super::Tuner)) in the same directory:
    /// entries of the same format and checks, in a subdirectory of their own with a size limit
    /// of its own (this cache's). Clearing one leaves the other alone.
    pub fn tuning(&self) -> DiskCache {
        DiskCache {
            holds: Holds::TuningRecords,
            ..self.clone()
        }
    }

    fn entries_dir(&self) -> PathBuf {
        self.dir.join(self.holds.subdir())
    }

    /// The file of `key`'s entry, named by a 128-bit hash of the key (a name, not a proof: a
    /// lookup compares the key stored in the entry).
    pub fn entry_path(&self, key: &[u8]) -> PathBuf {
        let hash = u128::from_le_bytes(checksum(key));
        self.entries_dir().join(format!("{hash:032x}.{ENTRY_EXT}"))
    }

    /// The payload stored under `key`, when a valid entry holds it. A rejected entry is
    /// deleted (and the deletion logged) unless another writer replaced it meanwhile.
    pub fn load(&self, key: &[u8]) -> Lookup {
        match check_private(&self.entries_dir()) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Lookup::Miss,
            Err(e) => {
                log::warn!("disk cache: not used: {e}");
                return Lookup::Miss;
            }
        }
        let path = self.entry_path(key);
        let (bytes, id) = match read_entry(&path) {
            Ok(read) => read,
            Err(e) => {
                if e.kind() != io::ErrorKind::NotFound {
                    log::warn!("disk cache: cannot read {}: {e}", path.display());
                }
                return Lookup::Miss;
            }
        };
        match decode(&bytes, key) {
            Ok(payload) => {
                touch(&path);
                Lookup::Hit(payload.to_vec())
            }
            Err(why) => {
                log::warn!(
                    "disk cache: deleting {}: {why}; {}",
                    path.display(),
                    self.holds.remedy()
                );
                delete_unless_replaced(&path, id);
                Lookup::Rejected(why)
            }
        }
    }

    /// Stores `payload` under `key`, replacing any entry of the key whole, then keeps the
    /// cache under its size limit. An entry larger than the limit is not stored.
    pub fn store(&self, key: &[u8], payload: &[u8]) -> io::Result<()> {
        let entry = encode(key, payload);
        if entry.len() as u64 > self.max_bytes {
            log::debug!(
                "disk cache: an entry of {} bytes exceeds the limit of {}; not stored",
                entry.len(),
                self.max_bytes
            );
            return Ok(());
        }
        let dir = self.entries_dir();
        create_private_dir(&dir)?;
        check_private(&dir)?;
        let path = self.entry_path(key);
        let temp = temp_path(&path);
        let written = (|| {
            let mut file = fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&temp)?;
            file.write_all(&entry)?;
            drop(file);
            fs::rename(&temp, &path)
        })();
        if let Err(e) = written {
            let _ = fs::remove_file(&temp);
            return Err(e);
        }
        log::debug!(
            "disk cache: stored {} ({} bytes)",
            path.display(),
            entry.len()
        );
        self.evict_to(self.max_bytes)?;
        Ok(())
    }

    /// Deletes the entry of `key`, if there is one.
    pub fn remove(&self, key: &[u8]) -> io::Result<()> {
        match fs::remove_file(self.entry_path(key)) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }

    /// Deletes the least recently used entries until the cache holds at most `max_bytes`,
    /// and temporary files left by crashed writers; returns what is left.
    pub fn evict_to(&self, max_bytes: u64) -> io::Result<Usage> {
        let dir = self.entries_dir();
        let listing = match fs::read_dir(&dir) {
            Ok(l) => l,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Usage::default()),
            Err(e) => return Err(e),
        };
        let now = SystemTime::now();
        let mut entries = Vec::new();
        for item in listing {
            let Ok(item) = item else { continue };
            let path = item.path();
            let Ok(meta) = item.metadata() else { continue };
            if !meta.is_file() {
                continue;
            }
            let modified = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
            match path.extension().and_then(|e| e.to_str()) {
                Some(ENTRY_EXT) => entries.push((modified, meta.len(), path)),
                Some(TEMP_EXT) => {
                    let age = now.duration_since(modified).unwrap_or_default();
                    if age > STALE_TEMP {
                        let _ = fs::remove_file(&path);
                    }
                }
                _ => {}
            }
        }
        let mut usage = Usage {
            entries: entries.len() as u64,
            bytes: entries.iter().map(|e| e.1).sum(),
            evicted: 0,
        };
        entries.sort();
        for (_, len, path) in entries {
            if usage.bytes <= max_bytes {
                break;
            }
            match fs::remove_file(&path) {
                Ok(()) => {
                    log::debug!("disk cache: evicted {}", path.display());
                    usage.evicted += 1;
                }
                // Another process evicted or replaced it meanwhile.
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
            usage.entries -= 1;
            usage.bytes -= len;
        }
        Ok(usage)
    }

    /// The entries and bytes the cache holds now (and stale temporary files deleted).
    pub fn usage(&self) -> io::Result<Usage> {
        self.evict_to(u64::MAX)
    }

    /// Deletes every entry.
    pub fn clear(&self) -> io::Result<()> {
        self.evict_to(0).map(|_| ())
    }
}

/// Where a loaded module's machine code came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Origin {
    /// Built in this process (on CUDA, the driver's JIT compiled the PTX).
    Built,
    /// Code from a disk-cache entry (no JIT).
    Disk,
}

/// The module of `key`'s entry in `cache`, or one built now and stored for the next process.
///
/// `load` makes a module of stored code (on CUDA: loads a cubin); `build` makes the code and
/// its log when no valid entry has it (on CUDA: `ptxas`). Code from the disk is
/// never trusted past its checks: an entry that fails one (see [`DiskCache::load`]), whose
/// payload holds no code, or whose code `load` refuses is not used; the code is built and the
/// entry rewritten. A failure to store is logged and otherwise ignored (the module works; the
/// next process builds it again). Returns the module, the build's log (a disk hit has the log
/// stored with the code) and where the code came from.
pub(super) fn load_or_build<M, E: fmt::Display>(
    cache: &DiskCache,
    key: &[u8],
    name: &str,
    mut load: impl FnMut(&[u8]) -> Result<M, E>,
    build: impl FnOnce() -> Result<(Vec<u8>, String), E>,
) -> Result<(M, String, Origin), E> {
    if let Lookup::Hit(payload) = cache.load(key) {
        match split_payload(&payload) {
            Some((code, log)) => match load(code) {
                Ok(module) => return Ok((module, log.to_string(), Origin::Disk)),
                Err(e) => log::warn!(
                    "disk cache: the code stored for `{name}` does not load ({e}); it is rebuilt"
                ),
            },
            None => {
                log::warn!("disk cache: the entry of `{name}` holds no code; it is rebuilt")
            }
        }
    }
    let (code, log) = build()?;
    let module = load(&code)?;
    if let Err(e) = cache.store(key, &join_payload(&code, &log)) {
        log::warn!(
            "disk cache: cannot store `{name}` in {}: {e}",
            cache.dir().display()
        );
    }
    Ok((module, log, Origin::Built))
}

/// A payload: the build's log (length first), then the code.
fn join_payload(code: &[u8], log: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + log.len() + code.len());
    out.extend_from_slice(&(log.len() as u64).to_le_bytes());
    out.extend_from_slice(log.as_bytes());
    out.extend_from_slice(code);
    out
}

/// The code and the log of a payload (`None` for a payload that holds no code).
fn split_payload(payload: &[u8]) -> Option<(&[u8], &str)> {
    let len = u64::from_le_bytes(payload.get(..8)?.try_into().ok()?);
    let end = 8usize.checked_add(usize::try_from(len).ok()?)?;
    let log = std::str::from_utf8(payload.get(8..end)?).ok()?;
    let code = payload.get(end..).filter(|c| !c.is_empty())?;
    Some((code, log))
}

/// Creates `dir` (and its parents), private to the user on Unix.
fn create_private_dir(dir: &Path) -> io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}

/// Whether `dir` is private enough to load code from: on Unix, no other user may write it (and,
/// on Linux, its owner is this process's user). An error says why not.
fn check_private(dir: &Path) -> io::Result<()> {
    let meta = fs::metadata(dir)?;
    if !meta.is_dir() {
        return Err(io::Error::other(format!(
            "{} is not a directory",
            dir.display()
        )));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if meta.mode() & 0o022 != 0 {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "{} is writable by other users (mode {:o})",
                    dir.display(),
                    meta.mode() & 0o777
                ),
            ));
        }
        // The owner of `/proc/self` is the process's user.
        #[cfg(target_os = "linux")]
        if let Ok(me) = fs::metadata("/proc/self")
            && me.uid() != meta.uid()
        {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!("{} belongs to another user", dir.display()),
            ));
        }
    }
    Ok(())
}

/// A temporary file beside `path`, unique to this process and call (the time in it keeps
/// processes of one id on machines sharing the directory apart).
fn temp_path(path: &Path) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("entry");
    let pid = std::process::id();
    path.with_file_name(format!(".{stem}.{pid}.{nanos}.{n}.{TEMP_EXT}"))
}

/// Which file a path named when it was read: device and inode on Unix; elsewhere length and
/// modification time (a replacing writer's file differs in one of them in practice).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileId(u64, u64, Option<SystemTime>);

impl FileId {
    fn of(meta: &fs::Metadata) -> FileId {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            FileId(meta.dev(), meta.ino(), None)
        }
        #[cfg(not(unix))]
        {
            FileId(meta.len(), 0, meta.modified().ok())
        }
    }
}

/// Deletes the file at `path` if it is still the file `id` (a writer may have renamed a good
/// entry over a bad one since it was read: that one stays).
fn delete_unless_replaced(path: &Path, id: FileId) {
    let same = fs::metadata(path).is_ok_and(|m| FileId::of(&m) == id);
    if same
        && let Err(e) = fs::remove_file(path)
        && e.kind() != io::ErrorKind::NotFound
    {
        log::warn!("disk cache: cannot delete {}: {e}", path.display());
    }
}

/// The bytes of the file at `path`, and which file it was.
fn read_entry(path: &Path) -> io::Result<(Vec<u8>, FileId)> {
    let mut file = fs::File::open(path)?;
    let meta = file.metadata()?;
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.read_to_end(&mut bytes)?;
    Ok((bytes, FileId::of(&meta)))
}

/// Marks an entry as used now, when it was last marked over [`TOUCH_AFTER`] ago (eviction
/// deletes the least recently used first). Best effort: a read-only cache still hits.
fn touch(path: &Path) {
    let now = SystemTime::now();
    let stale = fs::metadata(path)
        .and_then(|m| m.modified())
        .is_ok_and(|t| now.duration_since(t).unwrap_or_default() > TOUCH_AFTER);
    if stale && let Ok(file) = fs::OpenOptions::new().append(true).open(path) {
        let _ = file.set_modified(now);
    }
}

/// The entry file for `key` and `payload`.
pub(super) fn encode(key: &[u8], payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER + key.len() + payload.len() + CHECK);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&FORMAT.to_le_bytes());
    out.extend_from_slice(&(key.len() as u64).to_le_bytes());
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(key);
    out.extend_from_slice(payload);
    let check = checksum(&out);
    out.extend_from_slice(&check);
    out
}

/// The payload of an entry file, when every check holds and its key is `key`.
pub(super) fn decode<'b>(bytes: &'b [u8], key: &[u8]) -> Result<&'b [u8], Rejection> {
    if bytes.len() < HEADER + CHECK {
        return Err(if bytes.starts_with(&MAGIC[..bytes.len().min(8)]) {
            Rejection::Truncated
        } else {
            Rejection::NotAnEntry
        });
    }
    if &bytes[..8] != MAGIC {
        return Err(Rejection::NotAnEntry);
    }
    let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap_or([0; 8]));
    let format = u32::from_le_bytes(bytes[8..12].try_into().unwrap_or([0; 4]));
    if format != FORMAT {
        return Err(Rejection::Format(format));
    }
    let (key_len, payload_len) = (word(12), word(20));
    let body = (HEADER as u64)
        .checked_add(key_len)
        .and_then(|n| n.checked_add(payload_len));
    if body.and_then(|n| n.checked_add(CHECK as u64)) != Some(bytes.len() as u64) {
        return Err(Rejection::Truncated);
    }
    let body = bytes.len() - CHECK;
    if checksum(&bytes[..body]) != bytes[body..] {
        return Err(Rejection::Checksum);
    }
    let key_end = HEADER + key_len as usize;
    if &bytes[HEADER..key_end] != key {
        return Err(Rejection::KeyMismatch);
    }
    Ok(&bytes[key_end..body])
}

/// A 128-bit checksum of `bytes`: two 64-bit lanes over 8-byte words (several bytes a cycle,
/// so checking a module costs little beside loading it), the length mixed in. Every step is a
/// bijection of each lane's state for a given word, so a change to any one word (or the length)
/// always changes the result; changes that cancel out are as unlikely as a 64-bit collision per
/// lane. Stable across machines and builds (it is part of the file format).
pub(super) fn checksum(bytes: &[u8]) -> [u8; 16] {
    const K1: u64 = 0x9e37_79b9_7f4a_7c15;
    const K2: u64 = 0xc2b2_ae3d_27d4_eb4f;
    let (mut a, mut b) = (0x243f_6a88_85a3_08d3u64, 0x1319_8a2e_0370_7344u64);
    let mut words = bytes.chunks_exact(8);
    for w in &mut words {
        let w = u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
        a = (a ^ w).wrapping_mul(K1).rotate_left(31);
        b = b.wrapping_add(w).wrapping_mul(K2).rotate_left(27) ^ a;
    }
    let mut tail = [0u8; 8];
    let rest = words.remainder();
    tail[..rest.len()].copy_from_slice(rest);
    let t = u64::from_le_bytes(tail);
    a = (a ^ t).wrapping_mul(K1).rotate_left(31) ^ (bytes.len() as u64);
    b = b.wrapping_add(t).wrapping_mul(K2).rotate_left(27) ^ a;
    // Final mix of each lane (a bijection), so nearby inputs spread over all bits.
    let mix = |mut x: u64| {
        x ^= x >> 33;
        x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
        x ^= x >> 33;
        x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        x ^ (x >> 33)
    };
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&mix(a).to_le_bytes());
    out[8..].copy_from_slice(&mix(b).to_le_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_and_every_field_is_checked() {
        let entry = encode(b"the key", b"the payload");
        assert_eq!(decode(&entry, b"the key"), Ok(&b"the payload"[..]));
        assert_eq!(decode(&entry, b"another key"), Err(Rejection::KeyMismatch));
        // Any one byte changed anywhere is caught.
        for i in 0..entry.len() {
            let mut bad = entry.clone();
            bad[i] ^= 0x10;
            assert!(decode(&bad, b"the key").is_err(), "byte {i}");
        }
        // Truncated anywhere, or grown.
        for len in 0..entry.len() {
            assert!(decode(&entry[..len], b"the key").is_err(), "length {len}");
        }
        let mut long = entry.clone();
        long.push(0);
        assert_eq!(decode(&long, b"the key"), Err(Rejection::Truncated));
        assert_eq!(decode(b"garbage", b"k"), Err(Rejection::NotAnEntry));
        let mut other_format = entry.clone();
        other_format[8] = 2;
        assert_eq!(decode(&other_format, b"the key"), Err(Rejection::Format(2)));
        // An entry whose key was changed with a checksum made to match is another key's.
        let mut forged = encode(b"the kez", b"the payload");
        let n = forged.len();
        forged.truncate(n - CHECK);
        let check = checksum(&forged);
        forged.extend_from_slice(&check);
        assert_eq!(decode(&forged, b"the key"), Err(Rejection::KeyMismatch));
        assert!(decode(&encode(b"", b""), b"").is_ok_and(|p| p.is_empty()));
    }

    #[test]
    fn checksums_are_fixed_and_see_lengths() {
        // Part of the file format: the value must never change.
        assert_eq!(
            checksum(b"coopgraph"),
            [
                123, 92, 242, 189, 68, 141, 125, 62, 33, 127, 18, 95, 29, 230, 148, 134
            ]
        );
        assert_ne!(checksum(b""), checksum(b"\0"));
        assert_ne!(checksum(&[0; 8]), checksum(&[0; 16]));
    }

    fn temp_dir(name: &str) -> PathBuf {
        let nanos = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let pid = std::process::id();
        std::env::temp_dir().join(format!("coopgraph-unit-{name}-{pid}-{nanos}"))
    }

    /// A stand-in backend: "code" is bytes starting with `CODE:`, which is all its loader
    /// accepts.
    fn load_code(code: &[u8]) -> Result<Vec<u8>, &'static str> {
        if code.starts_with(b"CODE:") {
            Ok(code.to_vec())
        } else {
            Err("not code")
        }
    }

    #[test]
    fn load_or_build_trusts_only_entries_that_pass_every_check() {
        let dir = temp_dir("flow");
        let cache = DiskCache::new(&dir);
        let builds = std::cell::Cell::new(0);
        let build = || {
            builds.set(builds.get() + 1);
            Ok((b"CODE:k".to_vec(), "log of k".to_string()))
        };
        let run = || load_or_build(&cache, b"k", "k", load_code, build).expect("loads");
        let built = (b"CODE:k".to_vec(), "log of k".to_string(), Origin::Built);
        let from_disk = (b"CODE:k".to_vec(), "log of k".to_string(), Origin::Disk);
        // A miss builds and stores; the next call loads the stored code with its log.
        assert_eq!(run(), built);
        assert_eq!(run(), from_disk);
        assert_eq!(builds.get(), 1);
        let path = cache.entry_path(b"k");

        // A corrupted entry is never loaded: rebuilt, rewritten, then trusted again.
        let mut bytes = fs::read(&path).expect("read");
        let last = bytes.len() - CHECK - 1;
        bytes[last] ^= 1;
        fs::write(&path, &bytes).expect("write");
        assert_eq!(run(), built);
        assert_eq!(run(), from_disk);
        assert_eq!(builds.get(), 2);

        // Truncated: the same.
        let bytes = fs::read(&path).expect("read");
        fs::write(&path, &bytes[..bytes.len() - 1]).expect("write");
        assert_eq!(run(), built);
        assert_eq!(run(), from_disk);

        // A valid entry whose code the backend refuses, or that holds no code: rebuilt and
        // rewritten.
        cache
            .store(b"k", &join_payload(b"JUNK", "old log"))
            .expect("stored");
        assert_eq!(run(), built);
        assert_eq!(run(), from_disk);
        cache.store(b"k", b"\x01").expect("stored");
        assert_eq!(run(), built);
        cache
            .store(b"k", &join_payload(b"", "no code"))
            .expect("stored");
        assert_eq!(run(), built);
        assert_eq!(run(), from_disk);
        assert_eq!(builds.get(), 6);

        // A failed build is an error and stores nothing.
        let failed = load_or_build(&cache, b"bad", "bad", load_code, || Err("link failed"));
        assert_eq!(failed, Err("link failed"));
        assert_eq!(cache.load(b"bad"), Lookup::Miss);
        // Built code the backend refuses is an error too, and is not stored.
        let refused = load_or_build(&cache, b"bad", "bad", load_code, || {
            Ok((b"JUNK".to_vec(), String::new()))
        });
        assert_eq!(refused, Err("not code"));
        assert_eq!(cache.load(b"bad"), Lookup::Miss);

        // A cache that cannot be written still gives the module.
        let file = dir.join("not-a-directory");
        fs::write(&file, b"").expect("write");
        let unwritable = DiskCache::new(&file);
        let got = load_or_build(&unwritable, b"k", "k", load_code, build).expect("loads");
        assert_eq!(got, built);
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn payloads_split_back_into_code_and_log() {
        let payload = join_payload(b"CODE:x", "ptxas info: 10 registers");
        assert_eq!(
            split_payload(&payload),
            Some((&b"CODE:x"[..], "ptxas info: 10 registers"))
        );
        // A log length past the end, a log that is not text, and no code are not payloads.
        assert_eq!(split_payload(&payload[..7]), None);
        let mut long = payload.clone();
        long[0] = 0xff;
        assert_eq!(split_payload(&long), None);
        assert_eq!(split_payload(&join_payload(b"", "log")), None);
        let mut binary = join_payload(b"CODE:x", "ab");
        binary[8] = 0xff;
        assert_eq!(split_payload(&binary), None);
    }

    #[test]
    fn a_rejected_entry_replaced_meanwhile_is_kept() {
        let dir = temp_dir("replaced");
        let cache = DiskCache::new(&dir);
        cache.store(b"k", b"good").expect("stored");
        let path = cache.entry_path(b"k");
        let (_, old) = read_entry(&path).expect("read");
        // Another writer renames a new entry over the one read: deleting the old one leaves
        // the new one alone.
        cache.store(b"k", b"newer").expect("stored");
        delete_unless_replaced(&path, old);
        assert_eq!(cache.load(b"k"), Lookup::Hit(b"newer".to_vec()));
        let (_, new) = read_entry(&path).expect("read");
        delete_unless_replaced(&path, new);
        assert!(!path.exists());
        let _ = fs::remove_dir_all(&dir);
    }

    #[cfg(unix)]
    #[test]
    fn a_directory_others_can_write_is_not_used() {
        use std::os::unix::fs::PermissionsExt;
        let dir = temp_dir("shared");
        let cache = DiskCache::new(&dir);
        cache.store(b"k", b"code").expect("stored");
        assert_eq!(cache.load(b"k"), Lookup::Hit(b"code".to_vec()));
        let entries = dir.join(SUBDIR);
        fs::set_permissions(&entries, fs::Permissions::from_mode(0o777)).expect("chmod");
        assert_eq!(cache.load(b"k"), Lookup::Miss);
        let refused = cache.store(b"k", b"planted").expect_err("refused");
        assert_eq!(refused.kind(), io::ErrorKind::PermissionDenied);
        fs::set_permissions(&entries, fs::Permissions::from_mode(0o700)).expect("chmod");
        assert_eq!(cache.load(b"k"), Lookup::Hit(b"code".to_vec()));
        // A file where the directory should be is no cache either.
        let file = dir.join("file");
        fs::write(&file, b"").expect("write");
        assert!(check_private(&file).is_err());
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn tuning_records_live_apart_from_modules() {
        let dir = temp_dir("tuning");
        let modules = DiskCache::new(&dir);
        let records = modules.tuning();
        assert_eq!(records.dir(), modules.dir());
        assert_eq!(records.tuning(), records);
        modules.store(b"k", b"module").expect("stored");
        assert_eq!(records.load(b"k"), Lookup::Miss);
        records.store(b"k", b"record").expect("stored");
        assert_ne!(records.entry_path(b"k"), modules.entry_path(b"k"));
        assert_eq!(modules.load(b"k"), Lookup::Hit(b"module".to_vec()));
        assert_eq!(records.load(b"k"), Lookup::Hit(b"record".to_vec()));
        records.clear().expect("cleared");
        assert_eq!(records.load(b"k"), Lookup::Miss);
        assert_eq!(modules.load(b"k"), Lookup::Hit(b"module".to_vec()));
        modules.remove(b"k").expect("removed");
        modules.remove(b"k").expect("nothing to remove is no error");
        assert_eq!(modules.load(b"k"), Lookup::Miss);
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn default_dir_follows_the_platform() {
        if let Some(dir) = DiskCache::default_dir() {
            assert!(dir.is_absolute() && dir.ends_with("coopgraph"), "{dir:?}");
        }
    }
}
