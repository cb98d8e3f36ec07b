//! The math library's functions on expressions, and the bit-level helpers its functions are
//! built from.
//!
//! Each function is one node of the expression (a [`UnaryOp`] or [`BinaryOp`] that
//! [`UnaryOp::is_library`] names); code generation builds it from primitive operations (see
//! [`crate::ir::math`]), or from the approximate instructions of PTX in a kernel built with
//! [`fastmath`](crate::KernelBuilder::fastmath).

use super::{BinaryOp, Expr, ExprKind, IntElement, UnaryOp};

/// A method of the math library, with a doc example that runs it on the simulator over a few
/// arguments and compares with Rust's own function in f64 (`$std`, a path or a closure).
macro_rules! unary_fn {
    ($(#[$doc:meta])* $name:ident => $op:ident, $std:expr, [$($arg:expr),*]) => {
        $(#[$doc])*
        ///
        /// ```
        /// use coopgraph::runtime::Device;
        /// use coopgraph::{KernelBuilder, Load, Store};
        ///
        /// let mut k = KernelBuilder::new("f").block(32);
        /// let (x, y) = (k.input::<f32>("x"), k.output::<f32>("y"));
        /// let b = k.this_block();
        /// let t = k.load_from(b, &x, Load::direct());
        #[doc = concat!("let r = k.map(&t, |v| v.", stringify!($name), "());")]
        /// k.store_to(b, &y, &r, Store::direct());
        /// let kernel = k.build()?;
        ///
        /// let dev = Device::sim();
        #[doc = concat!("let xs: Vec<f32> = vec![", stringify!($($arg),*), "];")]
        /// let xb = dev.upload(&xs)?;
        /// let mut yb = dev.alloc_zeroed::<f32>(xs.len())?;
        /// dev.compile(&kernel)?.launch_over(xs.len(), (&xb, &mut yb))?;
        /// for (x, got) in xs.iter().zip(yb.to_vec()?) {
        #[doc = concat!("    let want = (", stringify!($std), ")(*x as f64);")]
        ///     assert!((got as f64 - want).abs() <= 1.2e-7 * want.abs(), "{x}: {got} {want}");
        /// }
        /// # Ok::<(), coopgraph::Error>(())
        /// ```
        pub fn $name(&self) -> Self {
            Expr::un(UnaryOp::$op, self)
        }
    };
}

/// An `f64` method of the math library, with a doc example that runs it on the simulator
/// over a few arguments and compares with Rust's own function (`$std`, a path or a closure)
/// within 2 ulp.
macro_rules! unary_fn64 {
    ($(#[$doc:meta])* $name:ident => $op:ident, $std:expr, [$($arg:expr),*]) => {
        $(#[$doc])*
        ///
        /// ```
        /// use coopgraph::runtime::Device;
        /// use coopgraph::{KernelBuilder, Load, Store};
        ///
        /// let mut k = KernelBuilder::new("f").block(32);
        /// let (x, y) = (k.input::<f64>("x"), k.output::<f64>("y"));
        /// let b = k.this_block();
        /// let t = k.load_from(b, &x, Load::direct());
        #[doc = concat!("let r = k.map(&t, |v| v.", stringify!($name), "());")]
        /// k.store_to(b, &y, &r, Store::direct());
        /// let kernel = k.build()?;
        ///
        /// let dev = Device::sim();
        #[doc = concat!("let xs: Vec<f64> = vec![", stringify!($($arg),*), "];")]
        /// let xb = dev.upload(&xs)?;
        /// let mut yb = dev.alloc_zeroed::<f64>(xs.len())?;
        /// dev.compile(&kernel)?.launch_over(xs.len(), (&xb, &mut yb))?;
        /// for (x, got) in xs.iter().zip(yb.to_vec()?) {
        #[doc = concat!("    let want = (", stringify!($std), ")(*x);")]
        ///     assert!((got - want).abs() <= 4.5e-16 * want.abs(), "{x}: {got} {want}");
        /// }
        /// # Ok::<(), coopgraph::Error>(())
        /// ```
        pub fn $name(&self) -> Self {
            Expr::un(UnaryOp::$op, self)
        }
    };
}

impl Expr<f32> {
    unary_fn!(
        /// `1 / sqrt(x)`, within 1 ulp.
        rsqrt => Rsqrt, |x: f64| 1.0 / x.sqrt(), [0.25, 2.0, 3.0e-30, 7.5e12]
    );
    unary_fn!(
        /// `e^x`.
        exp => Exp, f64::exp, [0.5, -3.25, 80.0, -80.0]
    );
    unary_fn!(
        /// `2^x`.
        exp2 => Exp2, f64::exp2, [0.5, -3.25, 100.5, -120.0]
    );
    unary_fn!(
        /// `10^x`.
        exp10 => Exp10, |x: f64| 10f64.powf(x), [0.5, -3.25, 30.0, -37.0]
    );
    unary_fn!(
        /// `e^x - 1`, accurate near 0.
        exp_m1 => Expm1, f64::exp_m1, [1e-5, -3.25, 30.0, -1e-9]
    );
    unary_fn!(
        /// The natural logarithm.
        ln => Ln, f64::ln, [0.5, 3.25, 1e30, 1e-40]
    );
    unary_fn!(
        /// The base-2 logarithm.
        log2 => Log2, f64::log2, [0.5, 3.25, 1e30, 1e-40]
    );
    unary_fn!(
        /// The base-10 logarithm.
        log10 => Log10, f64::log10, [0.5, 3.25, 1e30, 1e-40]
    );
    unary_fn!(
        /// `ln(1 + x)`, accurate near 0.
        ln_1p => Log1p, f64::ln_1p, [1e-6, -0.5, 3.25, 1e30]
    );
    unary_fn!(
        /// Sine, with the argument reduced exactly (Payne–Hanek) however large it is.
        sin => Sin, f64::sin, [0.5, -3.0, 1e5, 1e30]
    );
    unary_fn!(
        /// Cosine, with the argument reduced exactly however large it is.
        cos => Cos, f64::cos, [0.5, -3.0, 1e5, 1e30]
    );
    unary_fn!(
        /// Tangent, with the argument reduced exactly however large it is.
        tan => Tan, f64::tan, [0.5, -3.0, 1e5, 1e30]
    );
    unary_fn!(
        /// Arcsine (NaN outside `[-1, 1]`).
        asin => Asin, f64::asin, [0.5, -0.99, 1e-20, 1.0]
    );
    unary_fn!(
        /// Arccosine (NaN outside `[-1, 1]`).
        acos => Acos, f64::acos, [0.5, -0.99, 1e-20, -1.0]
    );
    unary_fn!(
        /// Arctangent.
        atan => Atan, f64::atan, [0.5, -3.0, 1e-20, 1e30]
    );
    unary_fn!(
        /// Hyperbolic sine.
        sinh => Sinh, f64::sinh, [0.5, -3.0, 1e-20, 80.0]
    );
    unary_fn!(
        /// Hyperbolic cosine.
        cosh => Cosh, f64::cosh, [0.5, -3.0, 1e-20, 80.0]
    );
    unary_fn!(
        /// Hyperbolic tangent.
        tanh => Tanh, f64::tanh, [0.5, -3.0, 1e-20, 8.0]
    );
    unary_fn!(
        /// The cube root.
        cbrt => Cbrt, f64::cbrt, [0.5, -27.0, 1e-40, 1e30]
    );

    /// The error function `erf(x)`.
    ///
    /// ```
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// let mut k = KernelBuilder::new("erf").block(32);
    /// let (x, y) = (k.input::<f32>("x"), k.output::<f32>("y"));
    /// let b = k.this_block();
    /// let t = k.load_from(b, &x, Load::direct());
    /// let r = k.map(&t, |v| v.erf() + v.erfc());
    /// k.store_to(b, &y, &r, Store::direct());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xs: Vec<f32> = vec![-2.0, -0.25, 0.0, 0.5, 1.5, 3.0];
    /// let xb = dev.upload(&xs)?;
    /// let mut yb = dev.alloc_zeroed::<f32>(xs.len())?;
    /// dev.compile(&kernel)?.launch_over(xs.len(), (&xb, &mut yb))?;
    /// // erf + erfc = 1, within the rounding of the sum.
    /// assert!(yb.to_vec()?.iter().all(|s| (s - 1.0).abs() <= 2.5e-7));
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    pub fn erf(&self) -> Self {
        Expr::un(UnaryOp::Erf, self)
    }

    /// The complementary error function `1 - erf(x)`, accurate where it is small (up to
    /// `x` = 10, where it underflows). See [`Expr::erf`] for an example.
    pub fn erfc(&self) -> Self {
        Expr::un(UnaryOp::Erfc, self)
    }

    /// `atan(self / x)` in the quadrant of the point `(x, self)`: the angle of that point,
    /// in `[-π, π]`.
    ///
    /// ```
    /// use coopgraph::ir::Expr;
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// let mut k = KernelBuilder::new("angles").block(32);
    /// let (x, y) = (k.input::<f32>("x"), k.output::<f32>("y"));
    /// let b = k.this_block();
    /// let t = k.load_from(b, &x, Load::direct());
    /// // The angle of (-1, x), and the length of (x, 2) and 2^x and x^3.
    /// let r = k.map(&t, |v| {
    ///     v.atan2(-1.0f32) + v.hypot(2.0f32) + Expr::lit(2.0f32).pow(&v) + v.powi(3)
    /// });
    /// k.store_to(b, &y, &r, Store::direct());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xs: Vec<f32> = vec![-2.0, 0.5, 3.0];
    /// let xb = dev.upload(&xs)?;
    /// let mut yb = dev.alloc_zeroed::<f32>(xs.len())?;
    /// dev.compile(&kernel)?.launch_over(xs.len(), (&xb, &mut yb))?;
    /// for (x, got) in xs.iter().zip(yb.to_vec()?) {
    ///     let want = x.atan2(-1.0) + x.hypot(2.0) + 2f32.powf(*x) + x.powi(3);
    ///     assert!((got - want).abs() <= 1e-5 * want.abs());
    /// }
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    pub fn atan2(&self, x: impl Into<Expr<f32>>) -> Self {
        Expr::bin(BinaryOp::Atan2, self, &x.into())
    }

    /// `self^y` (IEEE `pow`: `pow(x, 0)` is 1 for every `x`, a negative base takes integer
    /// exponents only). See [`Expr::atan2`] for an example.
    pub fn pow(&self, y: impl Into<Expr<f32>>) -> Self {
        Expr::bin(BinaryOp::Pow, self, &y.into())
    }

    /// `sqrt(self^2 + y^2)`, without overflow or underflow on the way. See [`Expr::atan2`]
    /// for an example.
    pub fn hypot(&self, y: impl Into<Expr<f32>>) -> Self {
        Expr::bin(BinaryOp::Hypot, self, &y.into())
    }

    /// `self^n` for an integer `n`. See [`Expr::atan2`] for an example.
    pub fn powi(&self, n: impl Into<Expr<i32>>) -> Self {
        let n = n.into();
        Expr::new(ExprKind::Binary(BinaryOp::Powi, self.node.clone(), n.node))
    }

    /// The value's IEEE bits.
    ///
    /// ```
    /// use coopgraph::ir::Expr;
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// let mut k = KernelBuilder::new("bits").block(32);
    /// let (x, y) = (k.input::<f32>("x"), k.output::<f32>("y"));
    /// let b = k.this_block();
    /// let t = k.load_from(b, &x, Load::direct());
    /// // Clear the sign bit: |x|.
    /// let r = k.map(&t, |v| Expr::<f32>::from_bits(v.to_bits() & 0x7fff_ffffu32));
    /// k.store_to(b, &y, &r, Store::direct());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xb = dev.upload(&[-2.5f32, 0.0, -0.0, 7.0])?;
    /// let mut yb = dev.alloc_zeroed::<f32>(4)?;
    /// dev.compile(&kernel)?.launch_over(4, (&xb, &mut yb))?;
    /// assert_eq!(yb.to_vec()?, [2.5, 0.0, 0.0, 7.0]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    pub fn to_bits(&self) -> Expr<u32> {
        Expr::new(ExprKind::Unary(UnaryOp::Bitcast, self.node.clone()))
    }

    /// The `f32` with these IEEE bits. See [`Expr::to_bits`] for an example.
    pub fn from_bits(bits: impl Into<Expr<u32>>) -> Self {
        Expr::new(ExprKind::Unary(UnaryOp::Bitcast, bits.into().node))
    }
}

impl Expr<f64> {
    unary_fn64!(
        /// `e^x`, within 1 ulp.
        exp => Exp, f64::exp, [0.5, -3.25, 700.0, -740.0]
    );
    unary_fn64!(
        /// `2^x`, within 1 ulp.
        exp2 => Exp2, f64::exp2, [0.5, -3.25, 1000.5, -1070.0]
    );
    unary_fn64!(
        /// `10^x`, within 1 ulp.
        exp10 => Exp10, |x: f64| 10f64.powf(x), [0.5, -3.25, 300.0, -320.0]
    );
    unary_fn64!(
        /// The natural logarithm, within 1 ulp.
        ln => Ln, f64::ln, [0.5, 3.25, 1e300, 1e-310]
    );
    unary_fn64!(
        /// The base-2 logarithm, within 1 ulp.
        log2 => Log2, f64::log2, [0.5, 3.25, 1e300, 1e-310]
    );
    unary_fn64!(
        /// The base-10 logarithm, within 1 ulp.
        log10 => Log10, f64::log10, [0.5, 3.25, 1e300, 1e-310]
    );
    unary_fn64!(
        /// Sine, within 1 ulp, with the argument reduced exactly (Payne–Hanek past 2^30)
        /// however large it is.
        sin => Sin, f64::sin, [0.5, -3.0, 1e9, 1e300]
    );
    unary_fn64!(
        /// Cosine, within 1 ulp, with the argument reduced exactly however large it is.
        cos => Cos, f64::cos, [0.5, -3.0, 1e9, 1e300]
    );
    unary_fn64!(
        /// Tangent, within 1 ulp, with the argument reduced exactly however large it is.
        tan => Tan, f64::tan, [0.5, -3.0, 1e9, 1e300]
    );
    unary_fn64!(
        /// Arcsine (NaN outside `[-1, 1]`), within 1 ulp.
        asin => Asin, f64::asin, [0.5, -0.99, 1e-200, 1.0]
    );
    unary_fn64!(
        /// Arccosine (NaN outside `[-1, 1]`), within 1 ulp.
        acos => Acos, f64::acos, [0.5, -0.99, 1e-200, -1.0]
    );
    unary_fn64!(
        /// Arctangent, within 1 ulp.
        atan => Atan, f64::atan, [0.5, -3.0, 1e-200, 1e300]
    );
    unary_fn64!(
        /// Hyperbolic sine, within 1 ulp.
        sinh => Sinh, f64::sinh, [0.5, -3.0, 1e-200, 700.0]
    );
    unary_fn64!(
        /// Hyperbolic cosine, within 1 ulp.
        cosh => Cosh, f64::cosh, [0.5, -3.0, 1e-200, 700.0]
    );
    unary_fn64!(
        /// Hyperbolic tangent, within 1 ulp.
        tanh => Tanh, f64::tanh, [0.5, -3.0, 1e-200, 15.0]
    );
    unary_fn64!(
        /// `e^x - 1`, accurate near 0, within 1 ulp.
        exp_m1 => Expm1, f64::exp_m1, [1e-10, -3.25, 300.0, -1e-300]
    );
    unary_fn64!(
        /// `ln(1 + x)`, accurate near 0, within 1 ulp.
        ln_1p => Log1p, f64::ln_1p, [1e-10, -0.5, 3.25, 1e300]
    );
    unary_fn64!(
        /// The cube root, within 1 ulp.
        cbrt => Cbrt, f64::cbrt, [0.5, -27.0, 1e-310, 1e300]
    );

    /// The error function `erf(x)`, within 1 ulp.
    ///
    /// ```
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// let mut k = KernelBuilder::new("erf").block(32);
    /// let (x, y) = (k.input::<f64>("x"), k.output::<f64>("y"));
    /// let b = k.this_block();
    /// let t = k.load_from(b, &x, Load::direct());
    /// let r = k.map(&t, |v| v.erf() + v.erfc());
    /// k.store_to(b, &y, &r, Store::direct());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xs: Vec<f64> = vec![-2.0, -0.25, 0.0, 0.5, 1.5, 3.0];
    /// let xb = dev.upload(&xs)?;
    /// let mut yb = dev.alloc_zeroed::<f64>(xs.len())?;
    /// dev.compile(&kernel)?.launch_over(xs.len(), (&xb, &mut yb))?;
    /// // erf + erfc = 1, within the rounding of the sum.
    /// assert!(yb.to_vec()?.iter().all(|s| (s - 1.0).abs() <= 5e-16));
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    pub fn erf(&self) -> Self {
        Expr::un(UnaryOp::Erf, self)
    }

    /// The complementary error function `1 - erf(x)`, accurate where it is small (up to
    /// `x` = 27.3, where it underflows), within 1 ulp. See `erf` for an example.
    pub fn erfc(&self) -> Self {
        Expr::un(UnaryOp::Erfc, self)
    }

    /// `sqrt(self^2 + y^2)` without overflow or underflow on the way, within 1 ulp. See
    /// `atan2` for an example of a function of two operands.
    pub fn hypot(&self, y: impl Into<Expr<f64>>) -> Self {
        Expr::bin(BinaryOp::Hypot, self, &y.into())
    }

    /// `atan(self / x)` in the quadrant of the point `(x, self)`: the angle of that point,
    /// in `[-π, π]`, within 1 ulp.
    ///
    /// ```
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// let mut k = KernelBuilder::new("angles").block(32);
    /// let (x, y) = (k.input::<f64>("x"), k.output::<f64>("y"));
    /// let b = k.this_block();
    /// let t = k.load_from(b, &x, Load::direct());
    /// let r = k.map(&t, |v| v.atan2(-1.0f64));
    /// k.store_to(b, &y, &r, Store::direct());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xs: Vec<f64> = vec![-2.0, 0.5, 3.0];
    /// let xb = dev.upload(&xs)?;
    /// let mut yb = dev.alloc_zeroed::<f64>(xs.len())?;
    /// dev.compile(&kernel)?.launch_over(xs.len(), (&xb, &mut yb))?;
    /// for (x, got) in xs.iter().zip(yb.to_vec()?) {
    ///     let want = x.atan2(-1.0);
    ///     assert!((got - want).abs() <= 4.5e-16 * want.abs(), "{x}: {got} {want}");
    /// }
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    pub fn atan2(&self, x: impl Into<Expr<f64>>) -> Self {
        Expr::bin(BinaryOp::Atan2, self, &x.into())
    }

    /// `self^y` (IEEE `pow`: `pow(x, 0)` is 1 for every `x`, a negative base takes integer
    /// exponents only), within 1 ulp: the logarithm is carried in double-double.
    ///
    /// ```
    /// use coopgraph::ir::Expr;
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// let mut k = KernelBuilder::new("powers").block(32);
    /// let (x, y) = (k.input::<f64>("x"), k.output::<f64>("y"));
    /// let b = k.this_block();
    /// let t = k.load_from(b, &x, Load::direct());
    /// // x^2.5 + (-2)^x (x an integer here) + x^-3.
    /// let r = k.map(&t, |v| v.pow(2.5f64) + Expr::lit(-2.0f64).pow(&v) + v.powi(-3));
    /// k.store_to(b, &y, &r, Store::direct());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xs: Vec<f64> = vec![3.0, 2.0, 7.0];
    /// let xb = dev.upload(&xs)?;
    /// let mut yb = dev.alloc_zeroed::<f64>(xs.len())?;
    /// dev.compile(&kernel)?.launch_over(xs.len(), (&xb, &mut yb))?;
    /// for (x, got) in xs.iter().zip(yb.to_vec()?) {
    ///     let want = x.powf(2.5) + (-2f64).powf(*x) + x.powi(-3);
    ///     assert!((got - want).abs() <= 1e-15 * want.abs(), "{x}: {got} {want}");
    /// }
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    pub fn pow(&self, y: impl Into<Expr<f64>>) -> Self {
        Expr::bin(BinaryOp::Pow, self, &y.into())
    }

    /// `self^n` for an integer `n`, within 1 ulp. See `pow` for an example.
    pub fn powi(&self, n: impl Into<Expr<i32>>) -> Self {
        let n = n.into();
        Expr::new(ExprKind::Binary(BinaryOp::Powi, self.node.clone(), n.node))
    }

    /// `1 / sqrt(x)`, within 0.5 ulp (a Newton step after the correctly rounded square root
    /// and reciprocal).
    ///
    /// ```
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// let mut k = KernelBuilder::new("rsqrt").block(32);
    /// let (x, y) = (k.input::<f64>("x"), k.output::<f64>("y"));
    /// let b = k.this_block();
    /// let t = k.load_from(b, &x, Load::direct());
    /// let r = k.map(&t, |v| v.rsqrt());
    /// k.store_to(b, &y, &r, Store::direct());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xb = dev.upload(&[4.0f64, 0.0, 2.0])?;
    /// let mut yb = dev.alloc_zeroed::<f64>(3)?;
    /// dev.compile(&kernel)?.launch_over(3, (&xb, &mut yb))?;
    /// assert_eq!(yb.to_vec()?, [0.5, f64::INFINITY, std::f64::consts::FRAC_1_SQRT_2]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    pub fn rsqrt(&self) -> Self {
        Expr::un(UnaryOp::Rsqrt, self)
    }

    /// The value's IEEE bits.
    ///
    /// ```
    /// use coopgraph::ir::Expr;
    ///
    /// let x = Expr::lit(-1.5f64);
    /// let abs = Expr::<f64>::from_bits(x.to_bits() & 0x7fff_ffff_ffff_ffffu64);
    /// assert_eq!(abs.node().ty, coopgraph::ir::expr::VType::D(coopgraph::ir::DType::F64));
    /// ```
    pub fn to_bits(&self) -> Expr<u64> {
        Expr::new(ExprKind::Unary(UnaryOp::Bitcast, self.node.clone()))
    }

    /// The `f64` with these IEEE bits. See `to_bits` for an example.
    pub fn from_bits(bits: impl Into<Expr<u64>>) -> Self {
        Expr::new(ExprKind::Unary(UnaryOp::Bitcast, bits.into().node))
    }
}

impl<T: IntElement> Expr<T> {
    /// The high half of the double-width product `self * rhs` (signed for signed types).
    ///
    /// ```
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// let mut k = KernelBuilder::new("hi").block(32);
    /// let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
    /// let b = k.this_block();
    /// let t = k.load_from(b, &x, Load::direct());
    /// let r = k.map(&t, |v| v.mul_hi(0x8000_0001u32));
    /// k.store_to(b, &y, &r, Store::direct());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xb = dev.upload(&[6u32, 0xffff_ffff])?;
    /// let mut yb = dev.alloc_zeroed::<u32>(2)?;
    /// dev.compile(&kernel)?.launch_over(2, (&xb, &mut yb))?;
    /// assert_eq!(yb.to_vec()?, [3, 0x8000_0000]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    pub fn mul_hi(&self, rhs: impl Into<Expr<T>>) -> Self {
        Expr::bin(BinaryOp::MulHi, self, &rhs.into())
    }
}
