//! The device `printf` (`vprintf`) the simulator implements: C's format over an argument
//! buffer in which each value lies at the next multiple of its size (4-byte `int`s, 8-byte
//! `long long`s and `double`s), as CUDA lays it out.
//!
//! The conversions are the ones the code generator writes: `%d %u %x` (32-bit), `%lld %llu
//! %llx` (64-bit), `%f %e` with an optional precision (`%.3f`), and `%%`. Anything else is an
//! error the launch reports. Floats print as C prints them: the exact binary value rounded to
//! the precision, `inf`, `-inf`, `nan` and `-nan`, exponents of at least two digits.

/// Why a format could not be applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PrintfError {
    /// A conversion the simulator does not implement, at this byte of the format.
    Unsupported(usize),
}

/// Formats `format` (without its NUL) with the values `read(offset, bytes)` returns from the
/// argument buffer; `read` fails as the memory access would.
pub(crate) fn format<E>(
    format: &[u8],
    mut read: impl FnMut(u32, u32) -> Result<u64, E>,
) -> Result<Result<String, PrintfError>, E> {
    let mut out = String::new();
    let mut offset = 0u32;
    let mut i = 0usize;
    let mut text = Vec::new();
    while i < format.len() {
        let c = format[i];
        if c != b'%' {
            text.push(c);
            i += 1;
            continue;
        }
        let start = i;
        i += 1;
        if format.get(i) == Some(&b'%') {
            text.push(b'%');
            i += 1;
            continue;
        }
        let mut precision = None;
        if format.get(i) == Some(&b'.') {
            i += 1;
            let digits = format[i..]
                .iter()
                .take_while(|b| b.is_ascii_digit())
                .count();
            let n = std::str::from_utf8(&format[i..i + digits])
                .ok()
                .and_then(|s| s.parse::<usize>().ok());
            let Some(n) = n else {
                return Ok(Err(PrintfError::Unsupported(start)));
            };
            precision = Some(n);
            i += digits;
        }
        let long = format[i..].starts_with(b"ll");
        if long {
            i += 2;
        }
        let Some(&conv) = format.get(i) else {
            return Ok(Err(PrintfError::Unsupported(start)));
        };
        i += 1;
        let size = if long || matches!(conv, b'f' | b'e') {
            8
        } else {
            4
        };
        if precision.is_some() && !matches!(conv, b'f' | b'e')
            || long && matches!(conv, b'f' | b'e')
        {
            return Ok(Err(PrintfError::Unsupported(start)));
        }
        offset = offset.next_multiple_of(size);
        let bits = read(offset, size)?;
        offset += size;
        out.push_str(&String::from_utf8_lossy(&std::mem::take(&mut text)));
        let value = match (conv, long) {
            (b'd', false) => (bits as u32 as i32).to_string(),
            (b'd', true) => (bits as i64).to_string(),
            (b'u', false) => (bits as u32).to_string(),
            (b'u', true) => bits.to_string(),
            (b'x', false) => format!("{:x}", bits as u32),
            (b'x', true) => format!("{bits:x}"),
            (b'f', _) => fixed(f64::from_bits(bits), precision.unwrap_or(6)),
            (b'e', _) => scientific(f64::from_bits(bits), precision.unwrap_or(6)),
            _ => return Ok(Err(PrintfError::Unsupported(start))),
        };
        out.push_str(&value);
    }
    out.push_str(&String::from_utf8_lossy(&text));
    Ok(Ok(out))
}

/// `inf`, `-inf`, `nan` or `-nan` for a value that is not finite.
fn not_finite(v: f64) -> Option<String> {
    let sign = if v.is_sign_negative() { "-" } else { "" };
    if v.is_nan() {
        Some(format!("{sign}nan"))
    } else if v.is_infinite() {
        Some(format!("{sign}inf"))
    } else {
        None
    }
}

/// C's `%.Nf`.
fn fixed(v: f64, decimals: usize) -> String {
    not_finite(v).unwrap_or_else(|| format!("{v:.decimals$}"))
}

/// C's `%.Ne`: one digit, the decimals, `e`, the exponent's sign and at least two digits.
fn scientific(v: f64, decimals: usize) -> String {
    if let Some(s) = not_finite(v) {
        return s;
    }
    let rust = format!("{v:.decimals$e}");
    let (mantissa, exp) = rust.split_once('e').unwrap_or((&rust, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exp.unsigned_abs())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Formats with the values laid out as vprintf's buffer lays them out.
    fn run(fmt: &str, values: &[(u64, u32)]) -> String {
        let mut buf = Vec::new();
        for &(v, size) in values {
            while buf.len() % size as usize != 0 {
                buf.push(0u8);
            }
            buf.extend_from_slice(&v.to_le_bytes()[..size as usize]);
        }
        let read = |off: u32, size: u32| -> Result<u64, ()> {
            let b = buf.get(off as usize..(off + size) as usize).ok_or(())?;
            let mut w = [0u8; 8];
            w[..b.len()].copy_from_slice(b);
            Ok(u64::from_le_bytes(w))
        };
        format(fmt.as_bytes(), read).unwrap().unwrap()
    }

    #[test]
    fn conversions_print_as_c_prints_them() {
        let d = |v: f64| (v.to_bits(), 8);
        assert_eq!(
            run(
                "%d %u %x|%lld %llu %llx",
                &[
                    ((-5i32) as u32 as u64, 4),
                    (7, 4),
                    (255, 4),
                    ((-9i64) as u64, 8),
                    (u64::MAX, 8),
                    (0xabc, 8)
                ]
            ),
            "-5 7 ff|-9 18446744073709551615 abc"
        );
        assert_eq!(
            run(
                "%f %.2f %.0f %e %.3e %e",
                &[d(0.1), d(-2.345), d(2.5), d(12345.678), d(1e-10), d(0.0)]
            ),
            "0.100000 -2.35 2 1.234568e+04 1.000e-10 0.000000e+00"
        );
        assert_eq!(
            run(
                "%f %f %f %e 100%%",
                &[
                    d(f64::INFINITY),
                    d(f64::NEG_INFINITY),
                    d(f64::NAN),
                    d(-f64::NAN)
                ]
            ),
            "inf -inf nan -nan 100%"
        );
        assert_eq!(run("%e", &[d(1e300)]), "1.000000e+300");
    }

    #[test]
    fn unknown_conversions_are_errors() {
        let read = |_: u32, _: u32| -> Result<u64, ()> { Ok(0) };
        assert_eq!(
            format(b"ab %s", read).unwrap(),
            Err(PrintfError::Unsupported(3))
        );
        assert_eq!(
            format(b"%.2d", read).unwrap(),
            Err(PrintfError::Unsupported(0))
        );
    }
}
