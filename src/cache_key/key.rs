//! The key's hashing: FNV-1a, 64-bit for the runtime's stable hashes and 128-bit for
//! [`KernelKey`], which compares its bytes whenever the hashes agree.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// 64-bit FNV-1a over the bytes written to it: the one stable hash of the crate (kernel keys
/// here, cache and image keys in the runtime).
#[derive(Debug, Clone, Copy)]
pub struct StableHasher(u64);

impl Default for StableHasher {
    fn default() -> Self {
        StableHasher::new()
    }
}

const FNV_PRIME: u64 = 0x0100_0000_01b3;

impl StableHasher {
    /// The hasher with nothing written.
    pub const fn new() -> Self {
        StableHasher(0xcbf2_9ce4_8422_2325)
    }

    /// Mixes bytes in.
    pub fn bytes(&mut self, b: &[u8]) {
        for &x in b {
            self.0 ^= x as u64;
            self.0 = self.0.wrapping_mul(FNV_PRIME);
        }
    }

    /// Mixes bytes in, then a separator, so that `("ab", "c")` and `("a", "bc")` differ;
    /// usable in constants.
    pub const fn field(mut self, bytes: &[u8]) -> Self {
        let mut i = 0;
        while i < bytes.len() {
            self.0 ^= bytes[i] as u64;
            self.0 = self.0.wrapping_mul(FNV_PRIME);
            i += 1;
        }
        self.0 ^= 0xff;
        self.0 = self.0.wrapping_mul(FNV_PRIME);
        self
    }

    /// The hash so far (also usable in constants).
    pub const fn value(self) -> u64 {
        self.0
    }
}

impl Hasher for StableHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        self.bytes(bytes);
    }
}

/// 128-bit FNV-1a of `bytes`.
pub fn fnv128(bytes: &[u8]) -> u128 {
    const OFFSET: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
    const PRIME: u128 = 0x0000_0000_0100_0000_0000_0000_0000_013b;
    bytes
        .iter()
        .fold(OFFSET, |h, &b| (h ^ u128::from(b)).wrapping_mul(PRIME))
}

/// The identity of a kernel for the specialization cache: a canonical serialization of
/// everything its image depends on, and the serialization's 128-bit hash.
///
/// Two keys are equal exactly when their bytes are: the hash only makes unequal keys cheap to
/// tell apart. Cloning shares the bytes.
///
/// ```
/// use coopgraph::runtime::KernelKey;
///
/// let a = KernelKey::new(b"kernel a".to_vec());
/// assert_eq!(a, KernelKey::new(b"kernel a".to_vec()));
/// assert_ne!(a, KernelKey::new(b"kernel b".to_vec()));
/// assert_eq!(a.bytes(), b"kernel a");
/// ```
#[derive(Clone)]
pub struct KernelKey {
    digest: u128,
    bytes: Arc<[u8]>,
}

impl KernelKey {
    /// The key of these bytes (hashed here).
    pub fn new(bytes: impl Into<Arc<[u8]>>) -> KernelKey {
        let bytes = bytes.into();
        KernelKey {
            digest: fnv128(&bytes),
            bytes,
        }
    }

    /// A key whose hash is `digest` whatever its bytes: two keys with one digest and different
    /// bytes, as a hash collision would make them.
    #[cfg(test)]
    pub(crate) fn with_digest(digest: u128, bytes: impl Into<Arc<[u8]>>) -> KernelKey {
        KernelKey {
            digest,
            bytes: bytes.into(),
        }
    }

    /// The 128-bit FNV-1a hash of the bytes.
    pub fn digest(&self) -> u128 {
        self.digest
    }

    /// The canonical serialization.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}

impl PartialEq for KernelKey {
    fn eq(&self, other: &KernelKey) -> bool {
        Arc::ptr_eq(&self.bytes, &other.bytes)
            || (self.digest == other.digest && self.bytes == other.bytes)
    }
}

impl Eq for KernelKey {}

impl Hash for KernelKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64((self.digest as u64) ^ ((self.digest >> 64) as u64));
    }
}

impl fmt::Debug for KernelKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "KernelKey({:032x}, {} bytes)",
            self.digest,
            self.bytes.len()
        )
    }
}
