//! The lines a print op writes, formatted here from the format's pieces as the documentation
//! of `KernelBuilder::print` says (and as C's `printf` writes them): no code shared with the
//! code generator or the simulator.

use super::value::{V, int, mask};
use coopgraph::ir::{DType, PrintPiece, PrintSpec};

/// The line (with its newline) and whether the interpreter knows it exactly.
pub fn line(pieces: &[PrintPiece], dtypes: &[DType], vals: &[V]) -> (String, bool) {
    let mut out = String::new();
    let mut sure = true;
    let mut next = dtypes.iter().zip(vals);
    for p in pieces {
        match p {
            PrintPiece::Text(t) => out.push_str(t),
            PrintPiece::Arg(spec) => {
                let Some((&d, v)) = next.next() else {
                    sure = false;
                    continue;
                };
                sure &= v.known();
                let f = match d {
                    DType::F32 => Some(f64::from(f32::from_bits(v.bits as u32))),
                    DType::F64 => Some(f64::from_bits(v.bits)),
                    _ => None,
                };
                match (f, spec) {
                    (Some(x), _) if x.is_nan() => {
                        // Which NaN an operation gives is not the interpreter's to say.
                        sure = false;
                        out.push_str("nan");
                    }
                    (Some(x), _) if x.is_infinite() => {
                        out.push_str(if x < 0.0 { "-inf" } else { "inf" })
                    }
                    (Some(x), PrintSpec::Exp) => out.push_str(&exp(x)),
                    (Some(x), PrintSpec::Fixed(n)) => out.push_str(&format!("{x:.*}", *n as usize)),
                    (Some(x), _) => out.push_str(&format!("{x:.6}")),
                    (None, PrintSpec::Hex) => out.push_str(&format!("{:x}", v.bits & mask(d))),
                    (None, _) => out.push_str(&int(d, v.bits).to_string()),
                }
            }
        }
    }
    out.push('\n');
    (out, sure)
}

/// `%e`: one digit, six decimals, the exponent signed with at least two digits.
fn exp(x: f64) -> String {
    let s = format!("{x:.6e}");
    let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
    let e: i32 = e.parse().unwrap_or(0);
    format!("{m}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_print_as_c_does() {
        let pieces = [
            PrintPiece::Arg(PrintSpec::Plain),
            PrintPiece::Text(" ".into()),
            PrintPiece::Arg(PrintSpec::Hex),
            PrintPiece::Text(" ".into()),
            PrintPiece::Arg(PrintSpec::Exp),
        ];
        let vals = [V::exact(0xFF), V::exact(0xFF), V::exact(1e-7f64.to_bits())];
        let (l, sure) = line(&pieces, &[DType::I8, DType::I8, DType::F64], &vals);
        assert_eq!(l, "-1 ff 1.000000e-07\n");
        assert!(sure);
    }
}
