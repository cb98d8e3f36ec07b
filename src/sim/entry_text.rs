//! Hand-written kernels for the simulator: a PTX body wrapped into a module with one entry.

/// Wraps `body` (PTX instructions and labels, one per line; indentation is ignored) into a
/// module with one `.visible .entry name`, in the layout the code generator writes: ISA 7.0,
/// `sm_80`, 64-bit addresses, and generous register declarations (`%p<16>`, `%r<64>`,
/// `%rd<32>`, `%f<32>`, `%fd<16>`). `params` are declarations without `.param`
/// (`"u64 x"`); `shared` are whole `.shared` declarations.
///
/// ```
/// use coopgraph::sim::{SimOptions, Simulator, entry_text};
///
/// let ptx = entry_text(
///     "store_tid",
///     &["u64 out"],
///     &[],
///     "ld.param.u64 %rd0, [out];
///      cvta.to.global.u64 %rd1, %rd0;
///      mov.u32 %r0, %tid.x;
///      mul.wide.u32 %rd2, %r0, 4;
///      add.u64 %rd3, %rd1, %rd2;
///      st.global.u32 [%rd3], %r0;
///      ret;",
/// );
/// let mut sim = Simulator::new(SimOptions::default());
/// let module = sim.load_module(&ptx).unwrap();
/// let out = sim.alloc_zeroed(32 * 4).unwrap();
/// sim.launch(&module, "store_tid", [1, 1, 1], [32, 1, 1], 0, &[out]).unwrap();
/// let mut bytes = [0u8; 32 * 4];
/// sim.read(out, &mut bytes).unwrap();
/// assert_eq!(u32::from_le_bytes(bytes[4 * 7..4 * 8].try_into().unwrap()), 7);
/// ```
pub fn entry_text(name: &str, params: &[&str], shared: &[&str], body: &str) -> String {
    let mut s = String::from(".version 7.0\n.target sm_80\n.address_size 64\n\n");
    s += &format!(".visible .entry {name}(\n");
    for (k, prm) in params.iter().enumerate() {
        let sep = if k + 1 == params.len() { "" } else { "," };
        s += &format!("\t.param .{prm}{sep}\n");
    }
    s += ")\n{\n";
    s += "\t.reg .pred %p<16>;\n\t.reg .b32 %r<64>;\n\t.reg .b64 %rd<32>;\n";
    s += "\t.reg .f32 %f<32>;\n\t.reg .f64 %fd<16>;\n";
    for sh in shared {
        s += &format!("\t{sh}\n");
    }
    s += "\n";
    for line in body.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if !line.ends_with(':') {
            s.push('\t');
        }
        s += line;
        s.push('\n');
    }
    s += "}\n";
    s
}
