//! Printing from a kernel: `print` and its format (`{}` placeholders as Rust writes them).

use super::KernelBuilder;
use crate::ir::dtype::{DType, Element};
use crate::ir::entities::Loc;
use crate::ir::expr::{Expr, Node, VType};
use crate::ir::format::{PrintPiece, PrintProblem, PrintSpec, parse_format};
use crate::ir::handles::{Scalar, Var};
use crate::ir::ops::*;
use smallvec::SmallVec;
use std::sync::Arc;

/// One value [`KernelBuilder::print`] writes: an expression, variable or scalar parameter of
/// any element type, or a literal.
pub trait PrintArg {
    /// The expression's node.
    fn print_node(self) -> Arc<Node>;
}

impl<T: Element> PrintArg for Expr<T> {
    fn print_node(self) -> Arc<Node> {
        self.node().clone()
    }
}
impl<T: Element> PrintArg for &Expr<T> {
    fn print_node(self) -> Arc<Node> {
        self.node().clone()
    }
}
impl<T: Element> PrintArg for Var<T> {
    fn print_node(self) -> Arc<Node> {
        self.get().node().clone()
    }
}
impl<T: Element> PrintArg for &Var<T> {
    fn print_node(self) -> Arc<Node> {
        self.get().node().clone()
    }
}
impl<T: Element> PrintArg for Scalar<T> {
    fn print_node(self) -> Arc<Node> {
        self.expr().node().clone()
    }
}
impl<T: Element> PrintArg for &Scalar<T> {
    fn print_node(self) -> Arc<Node> {
        self.expr().node().clone()
    }
}

macro_rules! literal_args {
    ($($t:ty),*) => {$(
        impl PrintArg for $t {
            fn print_node(self) -> Arc<Node> {
                Expr::lit(self).node().clone()
            }
        }
    )*};
}
literal_args!(i8, i16, i32, i64, u8, u16, u32, u64, f32, f64);

/// One value of any element type, for prints whose values are chosen at run time (a
/// `Vec<PrintValue>` is a [`PrintArgs`]).
///
/// ```
/// use coopgraph::ir::{PrintValue, index};
/// use coopgraph::KernelBuilder;
///
/// let mut k = KernelBuilder::new("some").block(32);
/// let mut values = vec![PrintValue::new(index::thread_rank())];
/// values.push(PrintValue::new(2.5f64));
/// k.print("{} {}", values);
/// assert!(k.build().is_ok());
/// ```
#[derive(Debug, Clone)]
pub struct PrintValue(Arc<Node>);

impl PrintValue {
    /// The value of `arg`.
    pub fn new(arg: impl PrintArg) -> Self {
        PrintValue(arg.print_node())
    }
}

impl PrintArgs for Vec<PrintValue> {
    fn print_nodes(self) -> SmallVec<[Arc<Node>; 4]> {
        self.into_iter().map(|v| v.0).collect()
    }
}

/// The values of one [`KernelBuilder::print`]: a tuple of [`PrintArg`]s (`()` for none,
/// `(x,)` for one; up to 12), or a `Vec` of [`PrintValue`]s.
pub trait PrintArgs {
    /// Their nodes, in order.
    fn print_nodes(self) -> SmallVec<[Arc<Node>; 4]>;
}

macro_rules! tuple_args {
    ($($name:ident),*) => {
        impl<$($name: PrintArg),*> PrintArgs for ($($name,)*) {
            #[allow(non_snake_case)]
            fn print_nodes(self) -> SmallVec<[Arc<Node>; 4]> {
                let ($($name,)*) = self;
                SmallVec::from_iter([$($name.print_node()),*])
            }
        }
    };
}
impl PrintArgs for () {
    fn print_nodes(self) -> SmallVec<[Arc<Node>; 4]> {
        SmallVec::new()
    }
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

/// Whether `spec` writes a value of `dtype`.
fn spec_fits(spec: PrintSpec, dtype: DType) -> bool {
    match spec {
        PrintSpec::Plain => true,
        PrintSpec::Hex => !dtype.is_float(),
        PrintSpec::Exp | PrintSpec::Fixed(_) => dtype.is_float(),
    }
}

impl KernelBuilder {
    /// Prints a line from every thread that runs it: `format` with each `{}` replaced by the
    /// next value of `args` (a tuple: `(x, i)`, `(x,)` for one, `()` for none), then a
    /// newline. Integers print in decimal (`{:x}`: hexadecimal, of the value's own width),
    /// floats with six decimals (`{:.N}`: N decimals, at most 20; `{:e}`: scientific, as C's
    /// `%e`); `{{` and `}}` print braces.
    ///
    /// On a GPU this is CUDA's device `printf` (`vprintf`): lines appear on the process's
    /// standard output at the next synchronization, in no fixed order between threads. The
    /// simulator formats the same text and keeps it in thread order (block by block, then by
    /// thread rank, then in each thread's order) in the launch's report
    /// ([`LaunchReport::printed`](crate::sim::LaunchReport::printed)), and writes it to its
    /// standard output too unless [`SimOptions::capture_prints`](crate::sim::SimOptions)
    /// is set.
    ///
    /// A format whose placeholders do not match the values (their count, or a `{:x}` given a
    /// float, `{:e}` an integer, an unclosed brace) is an error naming this line when the
    /// kernel is built.
    ///
    /// ```
    /// use coopgraph::ir::index;
    /// use coopgraph::runtime::{Device, LaunchConfig, SimOptions};
    /// use coopgraph::KernelBuilder;
    ///
    /// let mut k = KernelBuilder::new("hello").block(4);
    /// let x = k.input::<f32>("x");
    /// let t = index::thread_rank();
    /// k.print("thread {} of block {}: x = {:.2} ({:x})", (&t, index::block_index(), x.at(&t), t.clone() * 255u32));
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim_with(SimOptions { capture_prints: true, ..SimOptions::default() });
    /// let xb = dev.upload(&[0.5f32, 1.25, -3.0, 100.0])?;
    /// let f = dev.compile(&kernel)?;
    /// let report = f.launch_with_report(LaunchConfig::blocks(1), (&xb,))?.unwrap();
    /// assert_eq!(
    ///     report.printed,
    ///     "thread 0 of block 0: x = 0.50 (0)\n\
    ///      thread 1 of block 0: x = 1.25 (ff)\n\
    ///      thread 2 of block 0: x = -3.00 (1fe)\n\
    ///      thread 3 of block 0: x = 100.00 (2fd)\n"
    /// );
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    ///
    /// A placeholder without a value is an error:
    ///
    /// ```
    /// use coopgraph::ir::{PrintProblem, VerifyErrorKind};
    /// use coopgraph::{Error, KernelBuilder};
    ///
    /// let mut k = KernelBuilder::new("short").block(32);
    /// k.print("{} and {}", (1u32,));
    /// let Err(Error::Verify(e)) = k.build() else { panic!("built") };
    /// assert!(matches!(
    ///     e.errors[0].kind,
    ///     VerifyErrorKind::PrintFormat(PrintProblem::Count { placeholders: 2, values: 1 })
    /// ));
    /// assert_eq!(e.errors[0].loc.line, line!() - 6);
    /// ```
    #[track_caller]
    pub fn print(&mut self, format: &str, args: impl PrintArgs) {
        let loc = Loc::caller();
        let nodes = args.print_nodes();
        let (pieces, parsed) = match parse_format(format) {
            Ok(pieces) => (pieces, true),
            Err(problem) => {
                self.ir
                    .issues
                    .push(BuilderIssue::PrintFormat { problem, loc });
                (Vec::new(), false)
            }
        };
        let specs: Vec<PrintSpec> = (pieces.iter())
            .filter_map(|p| match p {
                PrintPiece::Arg(s) => Some(*s),
                PrintPiece::Text(_) => None,
            })
            .collect();
        if parsed && specs.len() != nodes.len() {
            let problem = PrintProblem::Count {
                placeholders: specs.len() as u32,
                values: nodes.len() as u32,
            };
            self.ir
                .issues
                .push(BuilderIssue::PrintFormat { problem, loc });
        }
        for (i, (spec, node)) in specs.iter().zip(&nodes).enumerate() {
            if let VType::D(dtype) = node.ty
                && !spec_fits(*spec, dtype)
            {
                let problem = PrintProblem::SpecType {
                    value: i as u32,
                    spec: *spec,
                    dtype,
                };
                self.ir
                    .issues
                    .push(BuilderIssue::PrintFormat { problem, loc });
            }
        }
        let args = (nodes.into_iter())
            .map(|n| self.expr(&Expr::<u32>::wrap(n)))
            .collect();
        self.push(OpKind::Print { pieces, args }, loc);
    }
}
