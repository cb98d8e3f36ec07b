//! The generator's dynamic-dtype layer: handles of any element type behind one enum each, and
//! [`Fz`], the per-type operations the generator picks from (integer-only and float-only ones
//! included), so generic code can choose a dtype at run time.

use coopgraph::KernelBuilder;
use coopgraph::ir::Buffer as IrBuffer;
use coopgraph::ir::{
    Atomic, AtomicOp, ConstArray, DType, Element, Expr, Input, LocalArray, MemoryOrder,
    MemoryScope, Output, Reduce, Scalar, SharedArray, ThreadData, Var,
};
use coopgraph::runtime::{ArgList, Buffer, Device, DeviceElement, RuntimeError};

/// Runs `$body` with `$T` the Rust type of dtype `$dt`.
macro_rules! with_dtype {
    ($dt:expr, $T:ident => $body:expr) => {
        match $dt {
            coopgraph::ir::DType::I8 => {
                type $T = i8;
                $body
            }
            coopgraph::ir::DType::I16 => {
                type $T = i16;
                $body
            }
            coopgraph::ir::DType::I32 => {
                type $T = i32;
                $body
            }
            coopgraph::ir::DType::I64 => {
                type $T = i64;
                $body
            }
            coopgraph::ir::DType::U8 => {
                type $T = u8;
                $body
            }
            coopgraph::ir::DType::U16 => {
                type $T = u16;
                $body
            }
            coopgraph::ir::DType::U32 => {
                type $T = u32;
                $body
            }
            coopgraph::ir::DType::U64 => {
                type $T = u64;
                $body
            }
            coopgraph::ir::DType::F32 => {
                type $T = f32;
                $body
            }
            coopgraph::ir::DType::F64 => {
                type $T = f64;
                $body
            }
        }
    };
}
pub(crate) use with_dtype;

macro_rules! any_handle {
    ($(#[$doc:meta] $name:ident($h:ident), $wrap:ident, $unwrap:ident;)*) => {$(
        #[$doc]
        #[derive(Debug, Clone, Copy)]
        #[allow(dead_code)]
        pub enum $name {
            I8($h<i8>),
            I16($h<i16>),
            I32($h<i32>),
            I64($h<i64>),
            U8($h<u8>),
            U16($h<u16>),
            U32($h<u32>),
            U64($h<u64>),
            F32($h<f32>),
            F64($h<f64>),
        }
    )*};
}

any_handle! {
    /// A payload of any dtype.
    AnyData(ThreadData), wrap_data, unwrap_data;
    /// An input of any dtype.
    AnyInput(Input), wrap_input, unwrap_input;
    /// A scalar of any dtype.
    AnyScalar(Scalar), wrap_scalar, unwrap_scalar;
    /// A shared array of any dtype.
    AnyArray(SharedArray), wrap_array, unwrap_array;
    /// A read-write buffer of any dtype.
    AnyBuffer(IrBuffer), wrap_buffer, unwrap_buffer;
    /// A per-thread variable of any dtype.
    AnyVar(Var), wrap_var, unwrap_var;
    /// A local array of any dtype.
    AnyLocal(LocalArray), wrap_local, unwrap_local;
    /// A constant array of any dtype.
    AnyConst(ConstArray), wrap_const, unwrap_const;
}

impl AnyData {
    /// The payload's id.
    pub fn id(&self) -> coopgraph::ir::DataId {
        match self {
            AnyData::I8(d) => d.id(),
            AnyData::I16(d) => d.id(),
            AnyData::I32(d) => d.id(),
            AnyData::I64(d) => d.id(),
            AnyData::U8(d) => d.id(),
            AnyData::U16(d) => d.id(),
            AnyData::U32(d) => d.id(),
            AnyData::U64(d) => d.id(),
            AnyData::F32(d) => d.id(),
            AnyData::F64(d) => d.id(),
        }
    }
}

/// An expression of any type, predicates included.
#[derive(Debug, Clone)]
#[allow(dead_code)]
pub enum AnyExpr {
    B(Expr<bool>),
    I8(Expr<i8>),
    I16(Expr<i16>),
    I32(Expr<i32>),
    I64(Expr<i64>),
    U8(Expr<u8>),
    U16(Expr<u16>),
    U32(Expr<u32>),
    U64(Expr<u64>),
    F32(Expr<f32>),
    F64(Expr<f64>),
}

/// Integer binary operators (beyond the arithmetic every type has).
#[derive(Debug, Clone, Copy)]
pub enum IntBin {
    And,
    Or,
    Xor,
    Rem,
    MulHi,
}

/// Integer unary operators.
#[derive(Debug, Clone, Copy)]
pub enum IntUn {
    Not,
    Brev,
    Popc,
    Clz,
}

/// Float unary operators; the library functions exist for `f32`, and at `f64` those of
/// [`F64_UNARY`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FloatUn {
    Sqrt,
    Rcp,
    Floor,
    Ceil,
    Trunc,
    Round,
    Rsqrt,
    Exp2,
    Log2,
    Sin,
    Cos,
    Tanh,
    Exp,
    Exp10,
    Expm1,
    Ln,
    Log10,
    Log1p,
    Tan,
    Asin,
    Acos,
    Atan,
    Sinh,
    Cosh,
    Cbrt,
    Erf,
    Erfc,
    /// The bits shifted right by one, through two bit casts.
    Bits,
}

/// Float functions of two operands (at `f64`, those of [`F64_BINARY`]; the exponent of `powi` is the second
/// operand's bits as an `i32`, masked to a small range).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FloatBin {
    Atan2,
    Pow,
    Hypot,
    Powi,
}

/// An element type the generator can choose at run time.
pub trait Fz: Element + DeviceElement + PartialOrd {
    /// Bits of the type.
    const BITS: u32;
    fn data(d: ThreadData<Self>) -> AnyData;
    fn of_data(d: &AnyData) -> Option<ThreadData<Self>>;
    fn input(d: Input<Self>) -> AnyInput;
    fn of_input(d: &AnyInput) -> Option<Input<Self>>;
    fn scalar(d: Scalar<Self>) -> AnyScalar;
    fn array(d: SharedArray<Self>) -> AnyArray;
    fn of_array(d: &AnyArray) -> Option<SharedArray<Self>>;
    fn buffer(d: IrBuffer<Self>) -> AnyBuffer;
    fn var(d: Var<Self>) -> AnyVar;
    fn local(d: LocalArray<Self>) -> AnyLocal;
    fn of_local(d: &AnyLocal) -> Option<LocalArray<Self>>;
    fn konst(d: ConstArray<Self>) -> AnyConst;
    fn of_const(d: &AnyConst) -> Option<ConstArray<Self>>;
    fn of_var(d: &AnyVar) -> Option<Var<Self>>;
    fn of_buffer(d: &AnyBuffer) -> Option<IrBuffer<Self>>;
    fn expr(e: Expr<Self>) -> AnyExpr;
    fn of_expr(e: &AnyExpr) -> Option<Expr<Self>>;
    /// `op(a, b)`; integers only (others return `a`).
    fn int_bin(op: IntBin, a: Expr<Self>, b: Expr<Self>) -> Expr<Self>;
    /// `a << s` or `a >> s`; integers only.
    fn shift(left: bool, a: Expr<Self>, s: Expr<u32>) -> Expr<Self>;
    /// Not and bit reversal in the type; popc and clz cast back to it. Integers only.
    fn int_un(op: IntUn, a: Expr<Self>) -> Expr<Self>;
    /// A float function; floats only (the approximate ones: `f32` only, else `a`).
    fn float_un(op: FloatUn, a: Expr<Self>) -> Expr<Self>;
    /// A float function of two operands; `f32` only (others return `a`).
    fn float_bin(op: FloatBin, a: Expr<Self>, b: Expr<Self>) -> Expr<Self>;
    /// Whether the value is NaN (floats; `false` for integers).
    fn is_nan(a: &Expr<Self>) -> Expr<bool>;
    /// Bitwise reductions (integers; sums for floats).
    fn bit_reduce(op: IntBin) -> Reduce<Self>;
    /// A value from a small integer (`as`).
    fn small(v: i64) -> Self {
        Self::cast_from_i64(v)
    }
}

macro_rules! fz_common {
    ($t:ty, $v:ident) => {
        const BITS: u32 = (std::mem::size_of::<$t>() * 8) as u32;
        fn data(d: ThreadData<$t>) -> AnyData {
            AnyData::$v(d)
        }
        fn of_data(d: &AnyData) -> Option<ThreadData<$t>> {
            match d {
                AnyData::$v(d) => Some(*d),
                _ => None,
            }
        }
        fn input(d: Input<$t>) -> AnyInput {
            AnyInput::$v(d)
        }
        fn of_input(d: &AnyInput) -> Option<Input<$t>> {
            match d {
                AnyInput::$v(d) => Some(*d),
                _ => None,
            }
        }
        fn scalar(d: Scalar<$t>) -> AnyScalar {
            AnyScalar::$v(d)
        }
        fn array(d: SharedArray<$t>) -> AnyArray {
            AnyArray::$v(d)
        }
        fn of_array(d: &AnyArray) -> Option<SharedArray<$t>> {
            match d {
                AnyArray::$v(d) => Some(*d),
                _ => None,
            }
        }
        fn buffer(d: IrBuffer<$t>) -> AnyBuffer {
            AnyBuffer::$v(d)
        }
        fn var(d: Var<$t>) -> AnyVar {
            AnyVar::$v(d)
        }
        fn local(d: LocalArray<$t>) -> AnyLocal {
            AnyLocal::$v(d)
        }
        fn of_local(d: &AnyLocal) -> Option<LocalArray<$t>> {
            match d {
                AnyLocal::$v(d) => Some(*d),
                _ => None,
            }
        }
        fn konst(d: ConstArray<$t>) -> AnyConst {
            AnyConst::$v(d)
        }
        fn of_const(d: &AnyConst) -> Option<ConstArray<$t>> {
            match d {
                AnyConst::$v(d) => Some(*d),
                _ => None,
            }
        }
        fn of_var(d: &AnyVar) -> Option<Var<$t>> {
            match d {
                AnyVar::$v(d) => Some(*d),
                _ => None,
            }
        }
        fn of_buffer(d: &AnyBuffer) -> Option<IrBuffer<$t>> {
            match d {
                AnyBuffer::$v(d) => Some(*d),
                _ => None,
            }
        }
        fn expr(e: Expr<$t>) -> AnyExpr {
            AnyExpr::$v(e)
        }
        fn of_expr(e: &AnyExpr) -> Option<Expr<$t>> {
            match e {
                AnyExpr::$v(e) => Some(e.clone()),
                _ => None,
            }
        }
    };
}

macro_rules! fz_int {
    ($($t:ty => $v:ident;)*) => {$(
        impl Fz for $t {
            fz_common!($t, $v);
            fn int_bin(op: IntBin, a: Expr<$t>, b: Expr<$t>) -> Expr<$t> {
                match op {
                    IntBin::And => a & b,
                    IntBin::Or => a | b,
                    IntBin::Xor => a ^ b,
                    IntBin::Rem => a % b,
                    IntBin::MulHi => a.mul_hi(b),
                }
            }
            fn shift(left: bool, a: Expr<$t>, s: Expr<u32>) -> Expr<$t> {
                if left { a << s } else { a >> s }
            }
            fn int_un(op: IntUn, a: Expr<$t>) -> Expr<$t> {
                match op {
                    IntUn::Not => !a,
                    IntUn::Brev => a.reverse_bits(),
                    IntUn::Popc => a.popc().cast::<$t>(),
                    IntUn::Clz => a.clz().cast::<$t>(),
                }
            }
            fn float_un(_op: FloatUn, a: Expr<$t>) -> Expr<$t> {
                a
            }
            fn float_bin(_op: FloatBin, a: Expr<$t>, _b: Expr<$t>) -> Expr<$t> {
                a
            }
            fn is_nan(_a: &Expr<$t>) -> Expr<bool> {
                Expr::lit_bool(false)
            }
            fn bit_reduce(op: IntBin) -> Reduce<$t> {
                match op {
                    IntBin::And => Reduce::bit_and(),
                    IntBin::Or => Reduce::bit_or(),
                    _ => Reduce::bit_xor(),
                }
            }
        }
    )*};
}

fz_int! {
    i8 => I8;
    i16 => I16;
    i32 => I32;
    i64 => I64;
    u8 => U8;
    u16 => U16;
    u32 => U32;
    u64 => U64;
}

macro_rules! fz_float {
    ($($t:ty => $v:ident, $approx:expr, $bin:expr;)*) => {$(
        impl Fz for $t {
            fz_common!($t, $v);
            fn int_bin(_op: IntBin, a: Expr<$t>, _b: Expr<$t>) -> Expr<$t> {
                a
            }
            fn shift(_left: bool, a: Expr<$t>, _s: Expr<u32>) -> Expr<$t> {
                a
            }
            fn int_un(_op: IntUn, a: Expr<$t>) -> Expr<$t> {
                a
            }
            fn float_un(op: FloatUn, a: Expr<$t>) -> Expr<$t> {
                match op {
                    FloatUn::Sqrt => a.sqrt(),
                    FloatUn::Rcp => a.recip(),
                    FloatUn::Floor => a.floor(),
                    FloatUn::Ceil => a.ceil(),
                    FloatUn::Trunc => a.trunc(),
                    FloatUn::Round => a.round_even(),
                    FloatUn::Rsqrt => a.rsqrt(),
                    FloatUn::Bits => Expr::<$t>::from_bits(a.to_bits() >> 1u32),
                    other => {
                        let f: fn(FloatUn, Expr<$t>) -> Expr<$t> = $approx;
                        f(other, a)
                    }
                }
            }
            fn float_bin(op: FloatBin, a: Expr<$t>, b: Expr<$t>) -> Expr<$t> {
                let f: fn(FloatBin, Expr<$t>, Expr<$t>) -> Expr<$t> = $bin;
                f(op, a, b)
            }
            fn is_nan(a: &Expr<$t>) -> Expr<bool> {
                a.is_nan()
            }
            fn bit_reduce(_op: IntBin) -> Reduce<$t> {
                Reduce::sum()
            }
        }
    )*};
}

fz_float! {
    f32 => F32, |op, a: Expr<f32>| match op {
        FloatUn::Exp2 => a.exp2(),
        FloatUn::Log2 => a.log2(),
        FloatUn::Sin => a.sin(),
        FloatUn::Cos => a.cos(),
        FloatUn::Exp => a.exp(),
        FloatUn::Exp10 => a.exp10(),
        FloatUn::Expm1 => a.exp_m1(),
        FloatUn::Ln => a.ln(),
        FloatUn::Log10 => a.log10(),
        FloatUn::Log1p => a.ln_1p(),
        FloatUn::Tan => a.tan(),
        FloatUn::Asin => a.asin(),
        FloatUn::Acos => a.acos(),
        FloatUn::Atan => a.atan(),
        FloatUn::Sinh => a.sinh(),
        FloatUn::Cosh => a.cosh(),
        FloatUn::Cbrt => a.cbrt(),
        FloatUn::Erf => a.erf(),
        FloatUn::Erfc => a.erfc(),
        _ => a.tanh(),
    }, |op, a: Expr<f32>, b: Expr<f32>| match op {
        FloatBin::Atan2 => a.atan2(b),
        FloatBin::Pow => a.pow(b),
        FloatBin::Hypot => a.hypot(b),
        FloatBin::Powi => a.powi((b.to_bits() & 31u32).cast::<i32>() - 15i32),
    };
    f64 => F64, |op, a: Expr<f64>| match op {
        FloatUn::Exp2 => a.exp2(),
        FloatUn::Log2 => a.log2(),
        FloatUn::Exp => a.exp(),
        FloatUn::Exp10 => a.exp10(),
        FloatUn::Ln => a.ln(),
        FloatUn::Log10 => a.log10(),
        FloatUn::Sin => a.sin(),
        FloatUn::Cos => a.cos(),
        FloatUn::Tan => a.tan(),
        FloatUn::Asin => a.asin(),
        FloatUn::Acos => a.acos(),
        FloatUn::Atan => a.atan(),
        FloatUn::Sinh => a.sinh(),
        FloatUn::Cosh => a.cosh(),
        FloatUn::Tanh => a.tanh(),
        FloatUn::Expm1 => a.exp_m1(),
        FloatUn::Log1p => a.ln_1p(),
        FloatUn::Cbrt => a.cbrt(),
        FloatUn::Erf => a.erf(),
        FloatUn::Erfc => a.erfc(),
        // The generator picks the others at f64 from F64_UNARY only.
        _ => a,
    }, |op, a: Expr<f64>, b: Expr<f64>| match op {
        FloatBin::Atan2 => a.atan2(b),
        FloatBin::Hypot => a.hypot(b),
        FloatBin::Pow => a.pow(b),
        FloatBin::Powi => a.powi((b.to_bits() & 31u64).cast::<i32>() - 15i32),
    };
}

/// The library functions of one operand the math library has at `f64`.
pub const F64_UNARY: &[FloatUn] = &[
    FloatUn::Rsqrt,
    FloatUn::Exp2,
    FloatUn::Log2,
    FloatUn::Exp,
    FloatUn::Exp10,
    FloatUn::Ln,
    FloatUn::Log10,
    FloatUn::Sin,
    FloatUn::Cos,
    FloatUn::Tan,
    FloatUn::Asin,
    FloatUn::Acos,
    FloatUn::Atan,
    FloatUn::Sinh,
    FloatUn::Cosh,
    FloatUn::Tanh,
    FloatUn::Expm1,
    FloatUn::Log1p,
    FloatUn::Cbrt,
    FloatUn::Erf,
    FloatUn::Erfc,
];

/// The library functions of two operands the math library has at `f64`.
pub const F64_BINARY: &[FloatBin] = &[
    FloatBin::Atan2,
    FloatBin::Pow,
    FloatBin::Hypot,
    FloatBin::Powi,
];

/// A buffer on a device, of any dtype.
pub enum AnyBuf {
    I8(Buffer<i8>),
    I16(Buffer<i16>),
    I32(Buffer<i32>),
    I64(Buffer<i64>),
    U8(Buffer<u8>),
    U16(Buffer<u16>),
    U32(Buffer<u32>),
    U64(Buffer<u64>),
    F32(Buffer<f32>),
    F64(Buffer<f64>),
}

macro_rules! each_buf {
    ($b:expr, $x:ident => $body:expr) => {
        match $b {
            AnyBuf::I8($x) => $body,
            AnyBuf::I16($x) => $body,
            AnyBuf::I32($x) => $body,
            AnyBuf::I64($x) => $body,
            AnyBuf::U8($x) => $body,
            AnyBuf::U16($x) => $body,
            AnyBuf::U32($x) => $body,
            AnyBuf::U64($x) => $body,
            AnyBuf::F32($x) => $body,
            AnyBuf::F64($x) => $body,
        }
    };
}

impl AnyBuf {
    /// A buffer of `dtype` holding `bits` (one element per entry, low bits used).
    pub fn upload(dev: &Device, dtype: DType, bits: &[u64]) -> Result<AnyBuf, RuntimeError> {
        macro_rules! up {
            ($t:ty, $v:ident) => {{
                let vals: Vec<$t> = bits
                    .iter()
                    .map(|&b| <$t as Element>::from_bits(b))
                    .collect();
                AnyBuf::$v(dev.upload(&vals)?)
            }};
        }
        Ok(match dtype {
            DType::I8 => up!(i8, I8),
            DType::I16 => up!(i16, I16),
            DType::I32 => up!(i32, I32),
            DType::I64 => up!(i64, I64),
            DType::U8 => up!(u8, U8),
            DType::U16 => up!(u16, U16),
            DType::U32 => up!(u32, U32),
            DType::U64 => up!(u64, U64),
            DType::F32 => up!(f32, F32),
            DType::F64 => up!(f64, F64),
        })
    }

    /// The contents as bits (zero-extended).
    pub fn bits(&self) -> Result<Vec<u64>, RuntimeError> {
        each_buf!(self, b => Ok(b.to_vec()?.into_iter().map(Element::to_bits).collect()))
    }

    /// Passes the buffer read-only.
    pub fn push_read<'a>(&'a self, list: &mut ArgList<'a>) {
        each_buf!(self, b => { list.push(b); })
    }

    /// Passes the buffer writable.
    pub fn push_write<'a>(&'a mut self, list: &mut ArgList<'a>) {
        each_buf!(self, b => { list.push(b); })
    }
}

/// Pushes a scalar argument of `dtype` with value `bits`.
pub fn push_scalar(list: &mut ArgList<'_>, dtype: DType, bits: u64) {
    with_dtype!(dtype, T => {
        list.push(<T as Element>::from_bits(bits));
    })
}

/// An element index: `u32`, or `u64`.
pub enum Ix {
    N(Expr<u32>),
    W(Expr<u64>),
}

/// The memory an atomic updates.
pub enum Target<T: Element> {
    Out(Output<T>),
    Buf(IrBuffer<T>),
    Shared(SharedArray<T>),
}

/// An atomic, as the generator asks for one.
pub struct AtomicCall<T: Element> {
    pub op: AtomicOp,
    pub v: Expr<T>,
    pub c: Expr<T>,
    pub order: MemoryOrder,
    pub scope: MemoryScope,
}

/// Atomics at a dtype chosen at run time: the operations the type takes, and the recording
/// of one (`None` where the type takes none: the 8- and 16-bit integers).
pub trait FzAtomic: Fz {
    fn atomic_ops() -> &'static [AtomicOp];
    fn record(
        k: &mut KernelBuilder,
        target: &Target<Self>,
        index: Ix,
        a: AtomicCall<Self>,
    ) -> Option<Expr<Self>>;
}

macro_rules! fz_no_atomics {
    ($($t:ty),*) => {$(
        impl FzAtomic for $t {
            fn atomic_ops() -> &'static [AtomicOp] {
                &[]
            }
            fn record(
                _k: &mut KernelBuilder,
                _target: &Target<$t>,
                _index: Ix,
                _a: AtomicCall<$t>,
            ) -> Option<Expr<$t>> {
                None
            }
        }
    )*};
}
fz_no_atomics!(i8, i16, u8, u16);

macro_rules! fz_atomics {
    ($($t:ty => [$($op:ident),*], $ctl:expr;)*) => {$(
        impl FzAtomic for $t {
            fn atomic_ops() -> &'static [AtomicOp] {
                &[$(AtomicOp::$op),*]
            }
            fn record(
                k: &mut KernelBuilder,
                target: &Target<$t>,
                index: Ix,
                a: AtomicCall<$t>,
            ) -> Option<Expr<$t>> {
                let ctl: fn(AtomicOp, Expr<$t>, Expr<$t>) -> Option<Atomic<$t>> = $ctl;
                let ctl = ctl(a.op, a.v, a.c)?.order(a.order).scope(a.scope);
                Some(match (target, index) {
                    (Target::Out(o), Ix::N(i)) => k.atomic(o, i, ctl),
                    (Target::Out(o), Ix::W(i)) => k.atomic(o, i, ctl),
                    (Target::Buf(b), Ix::N(i)) => k.atomic(b, i, ctl),
                    (Target::Buf(b), Ix::W(i)) => k.atomic(b, i, ctl),
                    (Target::Shared(s), Ix::N(i)) => k.atomic(s, i, ctl),
                    (Target::Shared(s), Ix::W(i)) => k.atomic(s, i.cast::<u32>(), ctl),
                })
            }
        }
    )*};
}

/// The controls every atomic type takes.
fn common<T: coopgraph::ir::AtomicElement>(
    op: AtomicOp,
    v: Expr<T>,
    c: Expr<T>,
) -> Option<Atomic<T>> {
    Some(match op {
        AtomicOp::Add => Atomic::add(v),
        AtomicOp::Sub => Atomic::sub(v),
        AtomicOp::Min => Atomic::min(v),
        AtomicOp::Max => Atomic::max(v),
        AtomicOp::NanMin => Atomic::nan_min(v),
        AtomicOp::NanMax => Atomic::nan_max(v),
        AtomicOp::Exch => Atomic::exch(v),
        AtomicOp::Cas => Atomic::cas(c, v),
        AtomicOp::Load => Atomic::load(),
        _ => return None,
    })
}

/// The controls of the integer types.
fn integer<T: coopgraph::ir::AtomicInt>(op: AtomicOp, v: Expr<T>, c: Expr<T>) -> Option<Atomic<T>> {
    match op {
        AtomicOp::And => Some(Atomic::and(v)),
        AtomicOp::Or => Some(Atomic::or(v)),
        AtomicOp::Xor => Some(Atomic::xor(v)),
        _ => common(op, v, c),
    }
}

/// The controls of the unsigned types.
fn unsigned<T: coopgraph::ir::AtomicUnsigned>(
    op: AtomicOp,
    v: Expr<T>,
    c: Expr<T>,
) -> Option<Atomic<T>> {
    match op {
        AtomicOp::Inc => Some(Atomic::inc(v)),
        AtomicOp::Dec => Some(Atomic::dec(v)),
        _ => integer(op, v, c),
    }
}

fz_atomics! {
    i32 => [Add, Sub, Min, Max, NanMin, NanMax, And, Or, Xor, Exch, Cas, Load], integer::<i32>;
    i64 => [Add, Sub, Min, Max, NanMin, NanMax, And, Or, Xor, Exch, Cas, Load], integer::<i64>;
    u32 => [Add, Sub, Min, Max, NanMin, NanMax, And, Or, Xor, Exch, Cas, Inc, Dec, Load],
        unsigned::<u32>;
    u64 => [Add, Sub, Min, Max, NanMin, NanMax, And, Or, Xor, Exch, Cas, Inc, Dec, Load],
        unsigned::<u64>;
    f32 => [Add, Sub, Min, Max, NanMin, NanMax, Exch, Cas, Load], common::<f32>;
    f64 => [Add, Sub, Min, Max, NanMin, NanMax, Exch, Cas, Load], common::<f64>;
}
