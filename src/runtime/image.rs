//! The contract between code generation and the runtime: a [`KernelImage`] (PTX text plus the
//! signature and launch shape it was written for) and the [`Compile`] trait that produces one.
//!
//! The runtime trusts nothing in an image beyond what it can check: launch arguments are checked
//! against [`ImageParts::params`], the launch block against [`ImageParts::block`], and shared
//! memory against the device's limits. What it cannot check is the PTX's own behaviour: an image
//! whose [`bounds`](KernelImage::bounds) is [`Bounds::Checked`] promises that its accesses stay
//! inside the buffers passed, as generated kernels ensure with the lengths the runtime hands
//! them in [`hidden`](ImageParts::hidden) parameters. Safe code can make that promise only for
//! PTX the crate wrote: a hand-written image is [`KernelImage::unchecked_bounds`] (launched
//! only through the unsafe [`Function::launch_unchecked`](super::Function::launch_unchecked))
//! unless its author vouches for it with the unsafe [`KernelImage::assume_checked_bounds`].
//! An image's parts are read through it but not changed in place: editing a generated image
//! goes through [`KernelImage::into_parts`], and the edited parts are a hand-written image.

use crate::cache_key::{Canonical, KernelKey, Writer};
use std::fmt;
use std::ops::Deref;

use super::error::RuntimeError;
use crate::ir::{Bounds, CheckSite, DType};
use crate::ptx::Arch;
use std::sync::Arc;

/// Everything a launch needs to know about a kernel but whether its accesses stay inside the
/// buffers passed: the parts a [`KernelImage`] is made of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageParts {
    /// The name of the `.entry` in [`ptx`](Self::ptx) to launch.
    pub entry: String,
    /// The PTX module text (one or more entries).
    pub ptx: String,
    /// The architecture the PTX was written for.
    pub arch: Arch,
    /// The entry's parameters that launch arguments fill, in order.
    pub params: Vec<ParamSig>,
    /// Parameters after [`params`](Self::params) that the runtime fills itself, in order.
    pub hidden: Vec<HiddenParam>,
    /// The block shape the kernel was built for (its `.reqntid`); every launch uses it.
    pub block: [u32; 3],
    /// Elements one block handles per tile: [`Function::launch_over`] launches
    /// `ceil(n / tile_elems)` blocks.
    ///
    /// [`Function::launch_over`]: super::Function::launch_over
    pub tile_elems: u32,
    /// Bytes of statically declared shared memory per block.
    pub static_smem: u32,
    /// Bytes of dynamic shared memory per block the kernel needs at launch.
    pub dynamic_smem: u32,
    /// Whether the kernel synchronizes the whole grid, so it must be launched cooperatively
    /// (every block resident at once).
    pub needs_cooperative: bool,
    /// Whether some load or store takes its tile's offset from the block's index
    /// (`%ctaid.x` times [`tile_elems`](Self::tile_elems)) and, its positions being 32-bit,
    /// relies on the launch to keep them below 2^32: a launch whose `grid.x × tile_elems`
    /// passes `u32::MAX` is refused ([`RuntimeError::TooManyElements`]) instead of wrapping
    /// onto other blocks' elements.
    ///
    /// [`RuntimeError::TooManyElements`]: super::RuntimeError::TooManyElements
    pub tile_offsets: bool,
    /// How many grid dimensions the kernel tells blocks apart by: 1 when it reads only
    /// `%ctaid.x` and `%nctaid.x`, 2 with `.y`, 3 with `.z`. A launch whose grid extends past 1
    /// along a dimension the kernel cannot see is refused: those blocks would repeat the work
    /// of others and race with them on every output.
    pub grid_dims: u32,
    /// The kernel's dynamic shared array, whose length each launch gives
    /// ([`LaunchConfig::with_dynamic_array_len`](super::LaunchConfig::with_dynamic_array_len)):
    /// the launch's dynamic shared memory is then the array's offset plus its bytes.
    pub dynamic_array: Option<DynamicArray>,
}

/// A dynamic shared array in the kernel's dynamic shared memory: where it starts (after the
/// bytes the kernel itself needs there, [`ImageParts::dynamic_smem`]) and its elements' size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DynamicArray {
    /// Its offset in the dynamic shared memory, in bytes.
    pub offset: u32,
    /// Bytes per element.
    pub elem_bytes: u32,
    /// What it is and where it was declared, for messages (`smem0: dynamic shared f32 at
    /// src/main.rs:10:5`).
    pub what: String,
    /// The kernel's other users of shared memory (its shared arrays, the ops whose scratch
    /// the planner placed), each with where it was written and its bytes, for the message of
    /// a launch that gives the array more than the device has room for
    /// ([`RuntimeError::DynamicArrayTooLarge`](super::RuntimeError::DynamicArrayTooLarge)).
    pub users: Vec<String>,
}

impl DynamicArray {
    /// The dynamic shared memory a launch needs for `len` elements of the array, or `None`
    /// past `u32::MAX` bytes.
    pub fn bytes_for(&self, len: u32) -> Option<u32> {
        let bytes = u64::from(self.offset) + u64::from(len) * u64::from(self.elem_bytes);
        u32::try_from(bytes).ok()
    }
}

impl ImageParts {
    /// The entry's thread-block cluster shape (its `.reqnctapercluster` in the PTX), when it
    /// runs in clusters: every launch's grid must be a whole number of them.
    ///
    /// ```
    /// use coopgraph::ptx::Arch;
    /// use coopgraph::runtime::Compile;
    /// use coopgraph::KernelBuilder;
    ///
    /// let mut k = KernelBuilder::new("pairs").block(32).cluster(2);
    /// k.sync_cluster();
    /// let image = k.build()?.emit(Arch::Sm90)?;
    /// assert_eq!(image.cluster_dims(), Some([2, 1, 1]));
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    pub fn cluster_dims(&self) -> Option<[u32; 3]> {
        let line = self
            .entry_directives()
            .find_map(|l| l.trim().strip_prefix(".reqnctapercluster"))?;
        let dims: Vec<u32> = (line.split(','))
            .map(|d| d.trim().parse().ok())
            .collect::<Option<_>>()?;
        match dims[..] {
            [x, y, z] => Some([x, y, z]),
            [x, y] => Some([x, y, 1]),
            [x] => Some([x, 1, 1]),
            _ => None,
        }
    }

    /// Whether each launch gives the entry's cluster shape (`.explicitcluster` in the PTX: a
    /// kernel built with [`cluster_at_launch`](crate::KernelBuilder::cluster_at_launch)).
    ///
    /// ```
    /// use coopgraph::ptx::Arch;
    /// use coopgraph::runtime::Compile;
    /// use coopgraph::KernelBuilder;
    ///
    /// let mut k = KernelBuilder::new("any").block(32).cluster_at_launch();
    /// k.sync_cluster();
    /// let image = k.build()?.emit(Arch::Sm90)?;
    /// assert!(image.cluster_at_launch());
    /// assert_eq!(image.cluster_dims(), None);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    pub fn cluster_at_launch(&self) -> bool {
        self.entry_directives()
            .any(|l| l.trim() == ".explicitcluster")
    }

    /// The lines of the entry's header (its parameters and directives, before its body).
    fn entry_directives(&self) -> impl Iterator<Item = &str> {
        let header = format!(".entry {}(", self.entry);
        let rest = self
            .ptx
            .find(&header)
            .map_or("", |start| &self.ptx[start..]);
        let body = rest.find('{').unwrap_or(rest.len());
        rest[..body].lines()
    }

    /// Threads per block (the product of [`block`](Self::block); `u64::MAX` where that does
    /// not fit).
    pub fn threads_per_block(&self) -> u64 {
        self.block
            .iter()
            .fold(1u64, |n, &d| n.saturating_mul(u64::from(d)))
    }

    /// Shared memory per block: static plus dynamic, in bytes.
    pub fn smem_per_block(&self) -> u64 {
        u64::from(self.static_smem) + u64::from(self.dynamic_smem)
    }

    /// Where each parameter lies in the entry's parameter block, as a launch hands them to the
    /// driver: a buffer is an 8-byte address, a scalar its dtype's size, then each hidden
    /// parameter, each at the next offset aligned to its size. The PTX entry must declare
    /// exactly this layout.
    pub fn param_layout(&self) -> Vec<ParamLayout> {
        let user = self.params.iter().map(|p| match p.kind {
            ParamKind::Input | ParamKind::Output | ParamKind::Buffer => 8,
            ParamKind::Scalar => p.dtype.bytes(),
        });
        ParamLayout::packed(user.chain(self.hidden.iter().map(HiddenParam::bytes)))
    }
}

/// A kernel ready to load: its PTX text, everything a launch needs to know about it (its
/// [`ImageParts`], read through the image), and whether its accesses stay inside the buffers
/// passed ([`bounds`](Self::bounds)).
///
/// Generated kernels ([`Compile::emit`]) make images that keep their accesses in bounds
/// unless built with `unchecked_bounds`. A hand-written image is
/// [`unchecked_bounds`](Self::unchecked_bounds), launched only through the unsafe
/// [`Function::launch_unchecked`](super::Function::launch_unchecked), unless its author
/// vouches for its PTX with [`assume_checked_bounds`](Self::assume_checked_bounds).
///
/// ```
/// use coopgraph::ptx::Arch;
/// use coopgraph::ir::{Bounds, DType};
/// use coopgraph::runtime::{ImageParts, KernelImage, ParamKind, ParamSig};
/// let image = KernelImage::unchecked_bounds(ImageParts {
///     entry: "nothing".into(),
///     ptx: coopgraph::sim::entry_text("nothing", &["u64 p"], &[], "ret;"),
///     arch: Arch::Sm80,
///     params: vec![ParamSig::new("p", ParamKind::Input, DType::U32)],
///     hidden: Vec::new(),
///     block: [32, 1, 1],
///     tile_elems: 32,
///     static_smem: 0,
///     dynamic_smem: 0,
///     needs_cooperative: false,
///     tile_offsets: false,
///     grid_dims: 1,
///     dynamic_array: None,
/// });
/// assert_eq!((image.bounds(), image.threads_per_block()), (Bounds::Unchecked, 32));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelImage {
    parts: ImageParts,
    bounds: Bounds,
    /// The sites of the kernel's debug checks, in number order (see
    /// [`HiddenParam::CheckRecord`]); none for a hand-written image.
    checks: Arc<[CheckSite]>,
}

impl KernelImage {
    /// A hand-written image the runtime does not trust to stay inside its buffers: it launches
    /// only through the unsafe [`Function::launch_unchecked`](super::Function::launch_unchecked).
    pub fn unchecked_bounds(parts: ImageParts) -> KernelImage {
        KernelImage {
            parts,
            bounds: Bounds::Unchecked,
            checks: Arc::new([]),
        }
    }

    /// A hand-written image that the safe launches accept as [`Bounds::Checked`].
    ///
    /// # Safety
    ///
    /// Every launch of the image through the safe API must touch no memory outside the buffers
    /// passed, whatever the arguments: the PTX must guard each global access by the lengths the
    /// runtime passes in its [`hidden`](ImageParts::hidden) parameters (or by something else
    /// that holds for every argument a launch accepts). A launch of PTX that breaks this is
    /// undefined behaviour on a GPU.
    pub unsafe fn assume_checked_bounds(parts: ImageParts) -> KernelImage {
        KernelImage {
            parts,
            bounds: Bounds::Checked,
            checks: Arc::new([]),
        }
    }

    /// An image whose bounds claim the code generator has made good; `checks` are the sites
    /// of its debug checks, in the order its PTX numbers them (none without debug checks).
    pub(crate) fn generated(
        parts: ImageParts,
        bounds: Bounds,
        checks: Vec<CheckSite>,
    ) -> KernelImage {
        KernelImage {
            parts,
            bounds,
            checks: checks.into(),
        }
    }

    /// The sites of the kernel's debug checks, in the order the record numbers them (from 1):
    /// empty for a kernel without [`Checks::Debug`](crate::ir::Checks::Debug) and for a
    /// hand-written image.
    pub fn check_sites(&self) -> &[CheckSite] {
        &self.checks
    }

    /// The parts, to edit in the crate's tests (which keep what the claim rests on).
    #[cfg(test)]
    pub(crate) fn parts_mut(&mut self) -> &mut ImageParts {
        &mut self.parts
    }

    /// Whether the PTX keeps its accesses inside the buffers it is given. Only
    /// [`Function::launch_unchecked`](super::Function::launch_unchecked) launches an image
    /// that is [`Bounds::Unchecked`].
    pub fn bounds(&self) -> Bounds {
        self.bounds
    }

    /// The image's parts.
    pub fn parts(&self) -> &ImageParts {
        &self.parts
    }

    /// The image's parts, to edit; whatever they become is a hand-written image.
    pub fn into_parts(self) -> ImageParts {
        self.parts
    }
}

/// An image reads as its parts (`image.block`, `image.param_layout()`); it has no `DerefMut`,
/// so no safe code changes the PTX under a bounds claim.
impl Deref for KernelImage {
    type Target = ImageParts;

    fn deref(&self) -> &ImageParts {
        &self.parts
    }
}

/// A parameter the runtime fills in itself at every launch, after the user's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HiddenParam {
    /// The element count of the buffer passed for [`ImageParts::params`]`[buffer]`, as a
    /// `u32`: kernels index elements with 32-bit integers, so a longer buffer passes
    /// `u32::MAX` (its elements from there on are out of the kernel's reach).
    Length {
        /// The index of the buffer parameter.
        buffer: usize,
    },
    /// The element count of the buffer passed for [`ImageParts::params`]`[buffer]`, as a
    /// `u64`: for buffers the kernel indexes with 64-bit indices.
    Length64 {
        /// The index of the buffer parameter.
        buffer: usize,
    },
    /// The global address of a zeroed record of
    /// [`RECORD_BYTES`](crate::ir::options::record::RECORD_BYTES), as a `u64`, for a kernel
    /// with debug checks ([`Checks::Debug`](crate::ir::Checks::Debug)): the runtime allocates
    /// it for each launch, waits for the launch and reads it, and a failure recorded there is
    /// the launch's error ([`RuntimeError::CheckFailed`]).
    CheckRecord,
    /// The global address of a zeroed `u32`, as a `u64`, for a cooperative kernel
    /// ([`ImageParts::needs_cooperative`]): the word its grid barriers count arrivals in. The
    /// runtime allocates it zeroed for each launch, so launches on different streams never
    /// share one; the barriers leave it ready for the next barrier without a reset.
    GridBarrier,
}

impl HiddenParam {
    /// Bytes of the parameter.
    pub fn bytes(&self) -> u32 {
        match self {
            HiddenParam::Length { .. } => 4,
            HiddenParam::Length64 { .. } | HiddenParam::CheckRecord | HiddenParam::GridBarrier => 8,
        }
    }

    /// The index of the buffer parameter whose length this is (`None` for the check record
    /// and the grid barrier's word).
    pub fn buffer(&self) -> Option<usize> {
        match *self {
            HiddenParam::Length { buffer } | HiddenParam::Length64 { buffer } => Some(buffer),
            HiddenParam::CheckRecord | HiddenParam::GridBarrier => None,
        }
    }
}

/// One parameter's place in an entry's parameter block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ParamLayout {
    /// Byte offset from the start of the block.
    pub offset: u32,
    /// Bytes.
    pub size: u32,
}

impl ParamLayout {
    /// Parameters of these sizes, each at the next offset aligned to its size (PTX's layout of
    /// `.param` scalars without an explicit `.align`).
    pub fn packed(sizes: impl IntoIterator<Item = u32>) -> Vec<ParamLayout> {
        let mut end = 0u32;
        sizes
            .into_iter()
            .map(|size| {
                let align = size.clamp(1, 8);
                let offset = end.div_ceil(align).saturating_mul(align);
                end = offset.saturating_add(size);
                ParamLayout { offset, size }
            })
            .collect()
    }
}

impl fmt::Display for ParamLayout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} bytes at {}", self.size, self.offset)
    }
}

/// One parameter of a kernel entry.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ParamSig {
    /// The parameter's name (for error messages).
    pub name: String,
    /// What the parameter is: a buffer read, a buffer written, or a scalar.
    pub kind: ParamKind,
    /// The element type of the buffer, or the scalar's type.
    pub dtype: DType,
}

impl ParamSig {
    /// A parameter.
    pub fn new(name: impl Into<String>, kind: ParamKind, dtype: DType) -> Self {
        ParamSig {
            name: name.into(),
            kind,
            dtype,
        }
    }
}

/// The role of a kernel parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ParamKind {
    /// A buffer the kernel only reads; passed as a 64-bit global address.
    Input,
    /// A buffer the kernel writes; passed as a 64-bit global address.
    Output,
    /// A value passed by copy.
    Scalar,
    /// A buffer the kernel both reads and writes; passed as a 64-bit global address.
    Buffer,
}

impl fmt::Display for ParamKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ParamKind::Input => "input",
            ParamKind::Output => "output",
            ParamKind::Scalar => "scalar",
            ParamKind::Buffer => "buffer",
        })
    }
}

/// Something that can be turned into a [`KernelImage`]: the kernel builder's built kernel, or a
/// hand-written image.
///
/// [`Device::compile`](super::Device::compile) calls [`cache_key`](Self::cache_key) on every
/// call and [`emit`](Self::emit) only when no image for that key and arch has been loaded in the
/// device's context yet.
pub trait Compile {
    /// The identity of everything [`emit`](Self::emit) depends on except the arch (the IR and
    /// the options): a canonical serialization and its hash, stable across runs and machines.
    /// Two kernels with equal keys must emit the same image for the same arch (up to comments).
    /// The cache compares whole keys, so distinct kernels need distinct bytes, not only
    /// distinct hashes. Computing it should be cheap (precompute it when the kernel is built
    /// and clone it, which shares the bytes): with one comparison of the bytes, it is the whole
    /// cost of a cache hit.
    fn cache_key(&self) -> KernelKey;

    /// The kernel's name, for messages.
    fn name(&self) -> &str;

    /// Writes the kernel as PTX for `arch`.
    fn emit(&self, arch: Arch) -> Result<KernelImage, RuntimeError>;
}

impl Canonical for ParamSig {
    fn write(&self, w: &mut Writer) {
        let ParamSig { name, kind, dtype } = self;
        w.str(name);
        w.tag(match kind {
            ParamKind::Input => 0,
            ParamKind::Output => 1,
            ParamKind::Scalar => 2,
            ParamKind::Buffer => 3,
        });
        dtype.write(w);
    }
}

/// A [`KernelImage`] compiles to itself (for hand-written PTX). Its cache key serializes the
/// whole image, PTX text included, so it is computed on each call: prefer a precomputed key on
/// hot paths.
impl Compile for KernelImage {
    fn cache_key(&self) -> KernelKey {
        // The sites follow from the PTX and the kernel (they name what its checks test).
        let KernelImage {
            parts,
            bounds,
            checks: _,
        } = self;
        let ImageParts {
            entry,
            ptx,
            arch,
            params,
            block,
            tile_elems,
            static_smem,
            dynamic_smem,
            needs_cooperative,
            tile_offsets,
            grid_dims,
            hidden,
            dynamic_array,
        } = parts;
        let mut w = Writer::default();
        w.str("coopgraph kernel image");
        w.str(entry);
        w.str(ptx);
        w.u32(arch.sm());
        w.seq(params);
        for d in block {
            w.u32(*d);
        }
        w.u32(*tile_elems);
        w.u32(*static_smem);
        w.u32(*dynamic_smem);
        w.bool(*needs_cooperative);
        w.bool(*tile_offsets);
        w.u32(*grid_dims);
        match dynamic_array {
            None => w.tag(0),
            Some(DynamicArray {
                offset,
                elem_bytes,
                what,
                users,
            }) => {
                w.tag(1);
                w.u32(*offset);
                w.u32(*elem_bytes);
                w.str(what);
                w.u64(users.len() as u64);
                for u in users {
                    w.str(u);
                }
            }
        }
        w.u64(hidden.len() as u64);
        for h in hidden {
            match h {
                HiddenParam::Length { buffer } => {
                    w.tag(0);
                    w.u64(*buffer as u64);
                }
                HiddenParam::Length64 { buffer } => {
                    w.tag(1);
                    w.u64(*buffer as u64);
                }
                HiddenParam::CheckRecord => w.tag(2),
                HiddenParam::GridBarrier => w.tag(3),
            }
        }
        w.tag(match bounds {
            Bounds::Checked => 0,
            Bounds::Unchecked => 1,
        });
        KernelKey::new(w.finish())
    }

    fn name(&self) -> &str {
        &self.entry
    }

    fn emit(&self, _arch: Arch) -> Result<KernelImage, RuntimeError> {
        Ok(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image() -> KernelImage {
        let parts = ImageParts {
            entry: "k".into(),
            ptx: ".version 7.8\n.target sm_90\n".into(),
            arch: Arch::Sm90,
            params: vec![ParamSig::new("x", ParamKind::Input, DType::F32)],
            block: [128, 1, 1],
            tile_elems: 512,
            static_smem: 0,
            dynamic_smem: 0,
            needs_cooperative: false,
            tile_offsets: false,
            grid_dims: 1,
            dynamic_array: None,
            hidden: vec![],
        };
        KernelImage::generated(parts, Bounds::Checked, Vec::new())
    }

    const PINNED_DIGEST: u128 = 0x4039_1fc7_3521_eb30_8fa4_1ad4_49c5_de00;

    #[test]
    fn image_key_is_stable_and_structural() {
        let a = image();
        assert_eq!(a.cache_key(), image().cache_key());
        // A fixed value: the key must not change between runs, machines or Rust versions.
        assert_eq!(a.cache_key().digest(), PINNED_DIGEST);
        let mut b = image();
        b.parts.block = [256, 1, 1];
        assert_ne!(a.cache_key(), b.cache_key());
        let mut c = image();
        c.parts.params[0].kind = ParamKind::Output;
        assert_ne!(a.cache_key(), c.cache_key());
        let mut d = image();
        d.parts.dynamic_array = Some(DynamicArray {
            offset: 0,
            elem_bytes: 4,
            what: "smem0".into(),
            users: Vec::new(),
        });
        assert_ne!(a.cache_key(), d.cache_key());
    }

    #[test]
    fn parameters_are_packed_by_natural_alignment() {
        let at = |offset, size| ParamLayout { offset, size };
        assert_eq!(
            ParamLayout::packed([8, 1, 2, 4, 1, 8]),
            vec![
                at(0, 8),
                at(8, 1),
                at(10, 2),
                at(12, 4),
                at(16, 1),
                at(24, 8)
            ]
        );
        let mut i = image();
        i.parts
            .params
            .push(ParamSig::new("k", ParamKind::Scalar, DType::I16));
        i.parts
            .params
            .push(ParamSig::new("y", ParamKind::Output, DType::I8));
        assert_eq!(i.param_layout(), vec![at(0, 8), at(8, 2), at(16, 8)]);
        i.parts.hidden = vec![
            HiddenParam::Length { buffer: 0 },
            HiddenParam::Length { buffer: 2 },
        ];
        assert_eq!(
            i.param_layout(),
            vec![at(0, 8), at(8, 2), at(16, 8), at(24, 4), at(28, 4)]
        );
    }

    #[test]
    fn every_field_is_in_the_key() {
        let base = image().cache_key();
        let changes: [fn(&mut KernelImage); 13] = [
            |i| i.parts.entry.push('x'),
            |i| i.parts.ptx.push(' '),
            |i| i.parts.arch = Arch::Sm80,
            |i| i.parts.params[0].name.push('x'),
            |i| i.parts.params[0].dtype = DType::U32,
            |i| i.parts.tile_elems += 1,
            |i| i.parts.static_smem += 1,
            |i| i.parts.dynamic_smem += 1,
            |i| i.parts.needs_cooperative = true,
            |i| i.parts.tile_offsets = true,
            |i| i.parts.grid_dims = 2,
            |i| i.parts.hidden.push(HiddenParam::Length { buffer: 0 }),
            |i| i.bounds = Bounds::Unchecked,
        ];
        for (n, change) in changes.into_iter().enumerate() {
            let mut other = image();
            change(&mut other);
            assert_ne!(other.cache_key(), base, "change {n}");
        }
        // Strings carry their length: moving a byte from the entry to the PTX is another key.
        let (mut a, mut b) = (image(), image());
        (a.parts.entry, a.parts.ptx) = ("k".into(), "ab".into());
        (b.parts.entry, b.parts.ptx) = ("ka".into(), "b".into());
        assert_ne!(a.cache_key(), b.cache_key());
    }

    #[test]
    fn sizes() {
        let mut a = image();
        a.parts.block = [32, 4, 2];
        a.parts.static_smem = 100;
        a.parts.dynamic_smem = 28;
        assert_eq!(a.threads_per_block(), 256);
        assert_eq!(a.smem_per_block(), 128);
    }
}
