//! The structural cache key of a kernel: a canonical serialization of the IR, hashed.
//!
//! The serialization covers everything that changes the generated code (names, block shape,
//! parameters, payloads, expressions, ops, regions) and nothing that does not (source
//! locations). The hash is 64-bit FNV-1a, fixed here so keys are stable across runs and machines of one
//! byte order (std's `DefaultHasher` promises neither), which lets them key a disk cache.
//! Derived `Hash` impls feed it; they write integers in native byte order.

use crate::ir::Ir;
use std::hash::{Hash, Hasher};

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

    /// Mixes a number in (little-endian).
    pub fn u64(&mut self, v: u64) {
        self.bytes(&v.to_le_bytes());
    }

    /// Mixes a string in, length first.
    pub fn str(&mut self, s: &str) {
        self.u64(s.len() as u64);
        self.bytes(s.as_bytes());
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

/// The key of a kernel's IR, including the crate version.
pub fn key(ir: &Ir) -> u64 {
    let mut h = StableHasher::default();
    h.str(env!("CARGO_PKG_VERSION"));
    h.str(&ir.name);
    ir.block.dims.hash(&mut h);
    ir.items_per_thread.hash(&mut h);
    h.u64(ir.params.len() as u64);
    for p in &ir.params {
        (&p.name, p.role, p.dtype).hash(&mut h);
    }
    h.u64(ir.groups.len() as u64);
    for g in &ir.groups {
        g.kind.hash(&mut h);
    }
    h.u64(ir.datas.len() as u64);
    for d in &ir.datas {
        (d.dtype, d.items).hash(&mut h);
    }
    ir.exprs.nodes().hash(&mut h);
    h.u64(ir.ops.len() as u64);
    for op in &ir.ops {
        op.kind.hash(&mut h);
    }
    ir.regions.hash(&mut h);
    h.finish()
}
