//! Launch arguments: what may be passed to a kernel, and the check of a launch's arguments
//! against the kernel's signature.
//!
//! An argument becomes an [`ArgSlot`] through [`Arg`]; a tuple of arguments (or an
//! [`ArgList`]) becomes a list of slots through [`KernelArgs`]. Before a launch, [`check`]
//! matches the slots with [`ImageParts::params`](super::ImageParts::params): the count, each
//! argument's role and dtype, and the device each buffer lives on. Only then do raw addresses
//! reach the driver or the simulator.
//!
//! Roles: an [`Input`](ParamKind::Input) parameter takes `&Buffer<T>` or `&mut Buffer<T>`; an
//! [`Output`](ParamKind::Output) or [`Buffer`](ParamKind::Buffer) parameter takes only
//! `&mut Buffer<T>`, so the borrow checker
//! sees every buffer a kernel writes; a [`Scalar`](ParamKind::Scalar) parameter takes a value of
//! exactly its dtype. [`View`]s and [`ViewMut`]s of buffers work like buffers of the view's
//! length; so do cudarc's `CudaSlice<T>`, `CudaView<T>` and `CudaViewMut<T>` on CUDA. A
//! buffer's length (a view's, for a view) is what the kernel's bounds checks compare against.

use std::fmt;
use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaSlice, CudaView, CudaViewMut};
use smallvec::SmallVec;

use super::RuntimeError;
use super::buffer::{Buffer, BufferRepr, DeviceElement, View, ViewMut, ViewMutRepr, ViewRepr};
use super::driver::{CudaMem, CudaMemMut};
use super::error::Foreign;
use super::graph::GraphUse;
use super::image::{HiddenParam, KernelImage, ParamKind, ParamSig};
use crate::ir::{DType, Element};

/// What an argument is, or what a parameter takes, for matching and messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ArgKind {
    /// A buffer of `dtype`, borrowed shared (`&Buffer<T>`) or exclusively (`&mut Buffer<T>`,
    /// `writable`).
    Buffer {
        /// The element type.
        dtype: DType,
        /// Whether the buffer is borrowed exclusively, so the kernel may write it.
        writable: bool,
    },
    /// A scalar value of this dtype.
    Scalar(DType),
}

impl ArgKind {
    /// What a parameter takes, in the terms of the arguments that fit it (an input parameter
    /// is described as `&Buffer<T>`, though `&mut Buffer<T>` fits it too).
    pub fn expected_by(param: &ParamSig) -> ArgKind {
        match param.kind {
            ParamKind::Input => ArgKind::Buffer {
                dtype: param.dtype,
                writable: false,
            },
            ParamKind::Output | ParamKind::Buffer => ArgKind::Buffer {
                dtype: param.dtype,
                writable: true,
            },
            ParamKind::Scalar => ArgKind::Scalar(param.dtype),
        }
    }

    /// Whether an argument of this kind fits `param`.
    pub fn fits(self, param: &ParamSig) -> bool {
        match (param.kind, self) {
            (ParamKind::Input, ArgKind::Buffer { dtype, .. }) => dtype == param.dtype,
            (ParamKind::Output | ParamKind::Buffer, ArgKind::Buffer { dtype, writable }) => {
                writable && dtype == param.dtype
            }
            (ParamKind::Scalar, ArgKind::Scalar(dtype)) => dtype == param.dtype,
            _ => false,
        }
    }
}

impl fmt::Display for ArgKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArgKind::Buffer {
                dtype,
                writable: false,
            } => write!(f, "&Buffer<{dtype}>"),
            ArgKind::Buffer {
                dtype,
                writable: true,
            } => write!(f, "&mut Buffer<{dtype}>"),
            ArgKind::Scalar(dtype) => write!(f, "{dtype}"),
        }
    }
}

/// One launch argument, ready to be checked and passed. Opaque: made by [`Arg::into_slot`].
pub struct ArgSlot<'a>(pub(super) Slot<'a>);

/// The inside of an [`ArgSlot`].
pub(super) enum Slot<'a> {
    /// A scalar: its dtype and its bits, zero-extended to 64.
    Scalar { dtype: DType, bits: u64 },
    /// A CUDA buffer the kernel may only read, of `len` elements.
    CudaRead {
        dtype: DType,
        mem: &'a dyn CudaMem,
        len: usize,
        keep: Option<&'a GraphUse>,
    },
    /// A CUDA buffer the kernel may write, of `len` elements.
    CudaWrite {
        dtype: DType,
        mem: &'a mut dyn CudaMemMut,
        len: usize,
        keep: Option<&'a GraphUse>,
    },
    /// A simulator buffer of `len` elements: its address in simulator `owner`.
    Sim {
        dtype: DType,
        writable: bool,
        addr: u64,
        owner: u64,
        len: usize,
        keep: Option<&'a GraphUse>,
    },
}

impl<'a> ArgSlot<'a> {
    /// What a graph that captures this argument holds of its buffer: `Some(None)` for a
    /// memory a graph cannot keep track of (a cudarc slice or view), `None` for a scalar.
    pub(super) fn graph_use(&self) -> Option<Option<&'a GraphUse>> {
        match &self.0 {
            Slot::Scalar { .. } => None,
            Slot::CudaRead { keep, .. } | Slot::CudaWrite { keep, .. } | Slot::Sim { keep, .. } => {
                Some(*keep)
            }
        }
    }

    /// The element count of a buffer argument (`None` for a scalar).
    fn buffer_len(&self) -> Option<usize> {
        match &self.0 {
            Slot::Scalar { .. } => None,
            Slot::CudaRead { len, .. } | Slot::CudaWrite { len, .. } | Slot::Sim { len, .. } => {
                Some(*len)
            }
        }
    }

    /// What this argument is.
    pub fn kind(&self) -> ArgKind {
        match &self.0 {
            Slot::Scalar { dtype, .. } => ArgKind::Scalar(*dtype),
            Slot::CudaRead { dtype, .. } => ArgKind::Buffer {
                dtype: *dtype,
                writable: false,
            },
            Slot::CudaWrite { dtype, .. } => ArgKind::Buffer {
                dtype: *dtype,
                writable: true,
            },
            Slot::Sim {
                dtype, writable, ..
            } => ArgKind::Buffer {
                dtype: *dtype,
                writable: *writable,
            },
        }
    }
}

impl fmt::Debug for ArgSlot<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ArgSlot({})", self.kind())
    }
}

/// A value that can be passed to a kernel: `&Buffer<T>`, `&mut Buffer<T>`, a view of a buffer
/// (`&View<T>`, `&ViewMut<T>`, `&mut ViewMut<T>`), cudarc's `&CudaSlice<T>`,
/// `&mut CudaSlice<T>`, `&CudaView<T>`, `&CudaViewMut<T>` and `&mut CudaViewMut<T>`, or a
/// scalar of an element type (`u32`, `f32`, ...) by value.
pub trait Arg<'a> {
    /// The argument as a launch slot.
    fn into_slot(self) -> ArgSlot<'a>;
}

impl<'a> Arg<'a> for ArgSlot<'a> {
    fn into_slot(self) -> ArgSlot<'a> {
        self
    }
}

impl<'a, T: DeviceElement> Arg<'a> for &'a Buffer<T> {
    fn into_slot(self) -> ArgSlot<'a> {
        let keep = Some(&self.graph_use);
        ArgSlot(match &self.repr {
            BufferRepr::Cuda(slice) => Slot::CudaRead {
                dtype: T::DTYPE,
                mem: slice,
                len: slice.len(),
                keep,
            },
            BufferRepr::Sim(sim) => Slot::Sim {
                dtype: T::DTYPE,
                writable: false,
                addr: sim.addr,
                owner: sim.shared.id,
                len: sim.len,
                keep,
            },
        })
    }
}

impl<'a, T: DeviceElement> Arg<'a> for &'a mut Buffer<T> {
    fn into_slot(self) -> ArgSlot<'a> {
        let keep = Some(&self.graph_use);
        ArgSlot(match &mut self.repr {
            BufferRepr::Cuda(slice) => {
                let len = slice.len();
                Slot::CudaWrite {
                    dtype: T::DTYPE,
                    mem: slice,
                    len,
                    keep,
                }
            }
            BufferRepr::Sim(sim) => Slot::Sim {
                dtype: T::DTYPE,
                writable: true,
                addr: sim.addr,
                owner: sim.shared.id,
                len: sim.len,
                keep,
            },
        })
    }
}

impl<'a, T: DeviceElement> Arg<'a> for &'a View<'_, T> {
    fn into_slot(self) -> ArgSlot<'a> {
        let keep = Some(self.graph_use);
        ArgSlot(match &self.repr {
            ViewRepr::Cuda(view) => Slot::CudaRead {
                dtype: T::DTYPE,
                mem: view,
                len: view.len(),
                keep,
            },
            ViewRepr::Sim(r) => Slot::Sim {
                dtype: T::DTYPE,
                writable: false,
                addr: r.addr,
                owner: r.shared.id,
                len: r.len,
                keep,
            },
        })
    }
}

impl<'a, T: DeviceElement> Arg<'a> for &'a ViewMut<'_, T> {
    fn into_slot(self) -> ArgSlot<'a> {
        let keep = Some(self.graph_use);
        ArgSlot(match &self.repr {
            ViewMutRepr::Cuda(view) => Slot::CudaRead {
                dtype: T::DTYPE,
                mem: view,
                len: view.len(),
                keep,
            },
            ViewMutRepr::Sim(r) => Slot::Sim {
                dtype: T::DTYPE,
                writable: false,
                addr: r.addr,
                owner: r.shared.id,
                len: r.len,
                keep,
            },
        })
    }
}

impl<'a, T: DeviceElement> Arg<'a> for &'a mut ViewMut<'_, T> {
    fn into_slot(self) -> ArgSlot<'a> {
        let keep = Some(self.graph_use);
        ArgSlot(match &mut self.repr {
            ViewMutRepr::Cuda(view) => {
                let len = view.len();
                Slot::CudaWrite {
                    dtype: T::DTYPE,
                    mem: view,
                    len,
                    keep,
                }
            }
            ViewMutRepr::Sim(r) => Slot::Sim {
                dtype: T::DTYPE,
                writable: true,
                addr: r.addr,
                owner: r.shared.id,
                len: r.len,
                keep,
            },
        })
    }
}

impl<'a, T: DeviceElement> Arg<'a> for &'a CudaSlice<T> {
    fn into_slot(self) -> ArgSlot<'a> {
        ArgSlot(Slot::CudaRead {
            dtype: T::DTYPE,
            mem: self,
            len: self.len(),
            keep: None,
        })
    }
}

impl<'a, T: DeviceElement> Arg<'a> for &'a mut CudaSlice<T> {
    fn into_slot(self) -> ArgSlot<'a> {
        let len = self.len();
        ArgSlot(Slot::CudaWrite {
            dtype: T::DTYPE,
            mem: self,
            len,
            keep: None,
        })
    }
}

impl<'a, T: DeviceElement> Arg<'a> for &'a CudaView<'_, T> {
    fn into_slot(self) -> ArgSlot<'a> {
        ArgSlot(Slot::CudaRead {
            dtype: T::DTYPE,
            mem: self,
            len: self.len(),
            keep: None,
        })
    }
}

impl<'a, T: DeviceElement> Arg<'a> for &'a CudaViewMut<'_, T> {
    fn into_slot(self) -> ArgSlot<'a> {
        ArgSlot(Slot::CudaRead {
            dtype: T::DTYPE,
            mem: self,
            len: self.len(),
            keep: None,
        })
    }
}

impl<'a, T: DeviceElement> Arg<'a> for &'a mut CudaViewMut<'_, T> {
    fn into_slot(self) -> ArgSlot<'a> {
        let len = self.len();
        ArgSlot(Slot::CudaWrite {
            dtype: T::DTYPE,
            mem: self,
            len,
            keep: None,
        })
    }
}

macro_rules! scalar_args {
    ($($t:ty),*) => {$(
        impl<'a> Arg<'a> for $t {
            fn into_slot(self) -> ArgSlot<'a> {
                ArgSlot(Slot::Scalar { dtype: <$t as Element>::DTYPE, bits: Element::to_bits(self) })
            }
        }
    )*};
}

scalar_args!(i8, i16, i32, i64, u8, u16, u32, u64, f32, f64);

/// A list of launch arguments built at run time, for kernels whose arity is not known
/// statically. It is itself [`KernelArgs`].
#[derive(Debug, Default)]
pub struct ArgList<'a> {
    slots: SmallVec<[ArgSlot<'a>; 12]>,
}

impl<'a> ArgList<'a> {
    /// An empty list.
    pub fn new() -> Self {
        ArgList {
            slots: SmallVec::new(),
        }
    }

    /// Appends an argument.
    pub fn push(&mut self, arg: impl Arg<'a>) -> &mut Self {
        self.slots.push(arg.into_slot());
        self
    }

    /// Number of arguments.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }
}

/// The arguments of one launch: a tuple of up to 12 [`Arg`]s, `()`, or an [`ArgList`].
pub trait KernelArgs<'a> {
    /// Appends the arguments, in order, to `list`.
    fn push_into(self, list: &mut ArgList<'a>);
}

impl<'a> KernelArgs<'a> for ArgList<'a> {
    fn push_into(self, list: &mut ArgList<'a>) {
        list.slots.extend(self.slots);
    }
}

impl<'a> KernelArgs<'a> for () {
    fn push_into(self, _list: &mut ArgList<'a>) {}
}

macro_rules! tuple_args {
    ($($name:ident),+) => {
        impl<'a, $($name: Arg<'a>),+> KernelArgs<'a> for ($($name,)+) {
            #[allow(non_snake_case)]
            fn push_into(self, list: &mut ArgList<'a>) {
                let ($($name,)+) = self;
                $(list.push($name);)+
            }
        }
    };
}

tuple_args!(A);
tuple_args!(A, B);
tuple_args!(A, B, C);
tuple_args!(A, B, C, D);
tuple_args!(A, B, C, D, E);
tuple_args!(A, B, C, D, E, F);
tuple_args!(A, B, C, D, E, F, G);
tuple_args!(A, B, C, D, E, F, G, H);
tuple_args!(A, B, C, D, E, F, G, H, I);
tuple_args!(A, B, C, D, E, F, G, H, I, J);
tuple_args!(A, B, C, D, E, F, G, H, I, J, K);
tuple_args!(A, B, C, D, E, F, G, H, I, J, K, L);

/// Where a launch runs: the buffers passed must live there.
#[derive(Clone, Copy)]
pub(super) enum Target<'d> {
    /// A CUDA context.
    Cuda(&'d Arc<CudaContext>),
    /// The simulator with this id.
    Sim(u64),
}

/// Arguments that passed [`check`]: one per parameter, each fitting its parameter and living
/// on the launch's device, and the values of the hidden parameters after them, filled in from
/// those arguments. Only `check` makes one.
pub(super) struct CheckedArgs<'s, 'a> {
    slots: &'s mut [ArgSlot<'a>],
    hidden: SmallVec<[HiddenValue; 8]>,
}

/// The value of one hidden parameter: its bits and size in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct HiddenValue {
    pub(super) bits: u64,
    pub(super) bytes: u32,
}

impl<'s, 'a> CheckedArgs<'s, 'a> {
    /// The checked slots, one per parameter.
    pub(super) fn slots(&self) -> &[ArgSlot<'a>] {
        self.slots
    }

    /// Puts the address of the launch's check record into its hidden parameter.
    pub(super) fn set_record(&mut self, image: &KernelImage, addr: u64) {
        self.set_hidden(image, HiddenParam::CheckRecord, addr);
    }

    /// Puts the address of the launch's grid barrier word into its hidden parameter.
    pub(super) fn set_grid_barrier(&mut self, image: &KernelImage, addr: u64) {
        self.set_hidden(image, HiddenParam::GridBarrier, addr);
    }

    fn set_hidden(&mut self, image: &KernelImage, which: HiddenParam, addr: u64) {
        let at = image.hidden.iter().position(|h| *h == which);
        if let Some(h) = at.and_then(|i| self.hidden.get_mut(i)) {
            h.bits = addr;
        }
    }

    /// The checked slots, then the hidden parameters' values.
    pub(super) fn into_parts(self) -> (&'s mut [ArgSlot<'a>], SmallVec<[HiddenValue; 8]>) {
        (self.slots, self.hidden)
    }
}

/// A buffer's length as its hidden parameter passes it: elements, at most `u32::MAX` (kernels
/// index with 32-bit integers, so they cannot reach further).
pub(super) fn length_value(len: usize) -> u32 {
    u32::try_from(len).unwrap_or(u32::MAX)
}

/// Matches `list` with the image's parameters: count, role and dtype of each argument, and the
/// device of each buffer; then fills in the hidden parameters from the arguments.
pub(super) fn check<'s, 'a>(
    image: &KernelImage,
    list: &'s mut ArgList<'a>,
    target: Target<'_>,
) -> Result<CheckedArgs<'s, 'a>, RuntimeError> {
    let params = &image.params;
    if list.slots.len() != params.len() {
        return Err(RuntimeError::ArgCount {
            expected: params.len(),
            got: list.slots.len(),
        });
    }
    for (index, (slot, param)) in list.slots.iter().zip(params).enumerate() {
        let got = slot.kind();
        if !got.fits(param) {
            return Err(RuntimeError::ArgMismatch {
                index,
                name: param.name.clone(),
                expected: ArgKind::expected_by(param),
                got,
            });
        }
        let same_device = match (&slot.0, target) {
            (Slot::Scalar { .. }, _) => true,
            (Slot::CudaRead { mem, .. }, Target::Cuda(ctx)) => **mem.context() == **ctx,
            (Slot::CudaWrite { mem, .. }, Target::Cuda(ctx)) => **mem.context() == **ctx,
            (Slot::Sim { owner, .. }, Target::Sim(id)) => *owner == id,
            _ => false,
        };
        if !same_device {
            return Err(RuntimeError::WrongDevice {
                what: Foreign::Argument {
                    index,
                    name: param.name.clone(),
                },
            });
        }
    }
    let mut hidden = SmallVec::new();
    for (i, h) in image.hidden.iter().enumerate() {
        let len = (h.buffer())
            .and_then(|b| list.slots.get(b))
            .and_then(ArgSlot::buffer_len);
        let value = match h {
            HiddenParam::Length { .. } => len.map(|len| u64::from(length_value(len))),
            HiddenParam::Length64 { .. } => len.map(|len| len as u64),
            // Filled in by the launch, which allocates the record (`set_record`).
            HiddenParam::CheckRecord | HiddenParam::GridBarrier => Some(0),
        };
        let Some(bits) = value else {
            return Err(RuntimeError::HiddenParam {
                entry: image.entry.clone(),
                index: i,
            });
        };
        hidden.push(HiddenValue {
            bits,
            bytes: h.bytes(),
        });
    }
    Ok(CheckedArgs {
        slots: &mut list.slots,
        hidden,
    })
}

/// The simulator's view of checked arguments: one `u64` per parameter (addresses and scalar
/// bits), the hidden ones last.
pub(super) fn sim_params(args: CheckedArgs<'_, '_>) -> SmallVec<[u64; 12]> {
    let (slots, hidden) = args.into_parts();
    slots
        .iter()
        .map(|slot| match slot.0 {
            Slot::Scalar { bits, .. } => bits,
            Slot::Sim { addr, .. } => addr,
            // `check` with a simulator target admits no CUDA buffers; a null address would
            // make the simulator report an out-of-bounds access, never touch host memory.
            Slot::CudaRead { .. } | Slot::CudaWrite { .. } => 0,
        })
        .chain(hidden.iter().map(|h| h.bits))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> Vec<ParamSig> {
        vec![
            ParamSig::new("x", ParamKind::Input, DType::F32),
            ParamSig::new("y", ParamKind::Output, DType::F32),
            ParamSig::new("n", ParamKind::Scalar, DType::U32),
        ]
    }

    fn image(hidden: Vec<HiddenParam>) -> KernelImage {
        KernelImage::generated(
            super::super::ImageParts {
                entry: "k".into(),
                ptx: String::new(),
                arch: crate::ptx::Arch::Sm90,
                params: params(),
                block: [32, 1, 1],
                tile_elems: 32,
                static_smem: 0,
                dynamic_smem: 0,
                needs_cooperative: false,
                tile_offsets: false,
                grid_dims: 1,
                dynamic_array: None,
                hidden,
            },
            crate::ir::Bounds::Checked,
            Vec::new(),
        )
    }

    fn sim_slot(dtype: DType, writable: bool, owner: u64) -> ArgSlot<'static> {
        ArgSlot(Slot::Sim {
            dtype,
            writable,
            addr: 0x1000,
            owner,
            len: 100,
            keep: None,
        })
    }

    #[test]
    fn kinds_fit_their_roles() {
        let p = params();
        let read = ArgKind::Buffer {
            dtype: DType::F32,
            writable: false,
        };
        let write = ArgKind::Buffer {
            dtype: DType::F32,
            writable: true,
        };
        assert!(read.fits(&p[0]) && write.fits(&p[0]));
        assert!(!read.fits(&p[1]) && write.fits(&p[1]));
        assert!(ArgKind::Scalar(DType::U32).fits(&p[2]));
        assert!(!ArgKind::Scalar(DType::I32).fits(&p[2]));
        assert!(!read.fits(&p[2]));
        assert_eq!(read.to_string(), "&Buffer<f32>");
        assert_eq!(write.to_string(), "&mut Buffer<f32>");
        assert_eq!(ArgKind::Scalar(DType::U32).to_string(), "u32");
    }

    #[test]
    fn check_reports_count_role_dtype_and_device() {
        let p = image(vec![]);
        let mut list = ArgList::new();
        list.push(sim_slot(DType::F32, false, 7));
        assert!(matches!(
            check(&p, &mut list, Target::Sim(7)),
            Err(RuntimeError::ArgCount {
                expected: 3,
                got: 1
            })
        ));

        let mut list = ArgList::new();
        list.push(sim_slot(DType::F32, false, 7))
            .push(sim_slot(DType::F32, false, 7))
            .push(5u32);
        match check(&p, &mut list, Target::Sim(7)) {
            Err(RuntimeError::ArgMismatch {
                index,
                name,
                expected,
                got,
            }) => {
                assert_eq!((index, name.as_str()), (1, "y"));
                assert_eq!(
                    expected,
                    ArgKind::Buffer {
                        dtype: DType::F32,
                        writable: true
                    }
                );
                assert_eq!(
                    got,
                    ArgKind::Buffer {
                        dtype: DType::F32,
                        writable: false
                    }
                );
            }
            other => panic!("expected ArgMismatch, got {:?}", other.err()),
        }

        let mut list = ArgList::new();
        list.push(sim_slot(DType::F32, false, 7))
            .push(sim_slot(DType::F32, true, 7))
            .push(5i32);
        assert!(matches!(
            check(&p, &mut list, Target::Sim(7)),
            Err(RuntimeError::ArgMismatch { index: 2, .. })
        ));

        let mut list = ArgList::new();
        list.push(sim_slot(DType::F32, false, 7))
            .push(sim_slot(DType::F32, true, 8))
            .push(5u32);
        assert!(matches!(
            check(&p, &mut list, Target::Sim(7)),
            Err(RuntimeError::WrongDevice { .. })
        ));

        let mut list = ArgList::new();
        list.push(sim_slot(DType::F32, true, 7))
            .push(sim_slot(DType::F32, true, 7))
            .push(5u32);
        let checked = check(&p, &mut list, Target::Sim(7)).expect("arguments fit");
        assert_eq!(sim_params(checked).as_slice(), &[0x1000, 0x1000, 5]);
    }

    #[test]
    fn hidden_lengths_come_from_the_buffers_passed() {
        let lengths = vec![
            HiddenParam::Length { buffer: 1 },
            HiddenParam::Length { buffer: 0 },
        ];
        let mut list = ArgList::new();
        list.push(sim_slot(DType::F32, false, 7))
            .push(ArgSlot(Slot::Sim {
                dtype: DType::F32,
                writable: true,
                addr: 0x2000,
                owner: 7,
                len: 5,
                keep: None,
            }))
            .push(9u32);
        let checked = check(&image(lengths), &mut list, Target::Sim(7)).expect("fits");
        assert_eq!(sim_params(checked).as_slice(), &[0x1000, 0x2000, 9, 5, 100]);
        // A 64-bit length is the buffer's whole count, in 8 bytes.
        let mut list = ArgList::new();
        list.push(sim_slot(DType::F32, false, 7))
            .push(sim_slot(DType::F32, true, 7))
            .push(9u32);
        let wide = image(vec![HiddenParam::Length64 { buffer: 0 }]);
        let (_, hidden) = check(&wide, &mut list, Target::Sim(7))
            .expect("fits")
            .into_parts();
        assert_eq!(
            hidden[0],
            HiddenValue {
                bits: 100,
                bytes: 8
            }
        );
        // A length of a scalar (a malformed image) is an error, not a guess.
        let mut list = ArgList::new();
        list.push(sim_slot(DType::F32, false, 7))
            .push(sim_slot(DType::F32, true, 7))
            .push(9u32);
        let bad = image(vec![HiddenParam::Length { buffer: 2 }]);
        assert!(matches!(
            check(&bad, &mut list, Target::Sim(7)),
            Err(RuntimeError::HiddenParam { index: 0, .. })
        ));
        assert_eq!(length_value(7), 7);
        assert_eq!(length_value(u32::MAX as usize + 5), u32::MAX);
    }

    #[test]
    fn scalars_carry_their_bits() {
        let slot = (-1i8).into_slot();
        assert_eq!(slot.kind(), ArgKind::Scalar(DType::I8));
        assert!(matches!(slot.0, Slot::Scalar { bits: 0xff, .. }));
        let slot = 1.5f32.into_slot();
        assert!(matches!(slot.0, Slot::Scalar { bits, .. } if bits == u64::from(1.5f32.to_bits())));
    }

    #[test]
    fn tuples_push_in_order() {
        let mut list = ArgList::new();
        (
            1u8, 2u16, 3u32, 4u64, 5i8, 6i16, 7i32, 8i64, 9.0f32, 10.0f64, 11u32, 12u32,
        )
            .push_into(&mut list);
        assert_eq!(list.len(), 12);
        assert_eq!(list.slots[0].kind(), ArgKind::Scalar(DType::U8));
        assert_eq!(list.slots[9].kind(), ArgKind::Scalar(DType::F64));
        let mut empty = ArgList::new();
        ().push_into(&mut empty);
        assert!(empty.is_empty());
    }
}
