//! Prints: a line per thread of up to three values of any dtype, each in a format that fits
//! it, between text with braces and a percent sign.

use super::Gen;
use super::expr::Leaves;
use crate::fuzz::types::with_dtype;
use coopgraph::KernelBuilder;
use coopgraph::ir::PrintValue;

impl Gen {
    /// A print of values of the thread.
    pub fn op_print(&mut self, k: &mut KernelBuilder) -> bool {
        let mut format = String::from("{{%}}");
        let mut values = Vec::new();
        for i in 0..self.rng.below(4) {
            let dt = self.dtype();
            with_dtype!(dt, T => {
                let e = self.expr::<T>(&Leaves::varying(), 2);
                values.push(PrintValue::new(e));
            });
            let spec = if dt.is_float() {
                self.rng.pick(&["{}", "{:e}", "{:.3}", "{:.0}"])
            } else {
                self.rng.pick(&["{}", "{:x}"])
            };
            format += &format!(" v{i}={spec}");
        }
        k.print(&format, values);
        true
    }
}
