#!/usr/bin/env python3
"""Writes variants of a vectorized f32 copy's PTX (examples/bench copy, `vectorize`, bounds
checked, as main emitted it before vector runs moved in pairs of lanes) in which lanes 2k and
2k+1 swap half their 16-byte vectors by shuffles, so that each vector access of the pair covers
a whole 32-byte sector: NAME_B (stores paired), NAME_C (loads and stores), NAME_D (loads),
from NAME_A.ptx with V vectors a thread. The shuffles use the full mask: the variants are for
timing whole tiles with tools/ptx-time/ptx_time.cu, not for partial tiles.

Usage: pair_vectors.py NAME V   (reads NAME_A.ptx in the current directory)
"""
import sys
# Pair-exchanged vector accesses: lanes 2k, 2k+1 together write (read) whole 32-byte sectors.
def model(V):
    # check the scheme: each thread t holds v_t[0..V); simulate stores
    mem = {}
    for k in range(2):
        own = {p: [(2*k+p, i) for i in range(V)] for p in (0, 1)}
        send = {p: [own[p][2*s+1-p] for s in range(V//2)] for p in (0, 1)}
        recv = {p: send[1-p] for p in (0, 1)}
        for j in range(V):
            for p in (0, 1):
                if p == 0:
                    val = own[0][2*j] if j < V//2 else recv[0][j-V//2]
                else:
                    val = recv[1][j] if j < V//2 else own[1][2*(j-V//2)+1]
                addr = (2*k+p)*V*16 + p*(16-16*V) + 32*j
                mem[addr] = val
    for (t, i) in [(t, i) for t in range(4) for i in range(V)]:
        assert mem[t*V*16 + i*16] == (t, i), (t, i, mem)
for V in (2, 4, 8): model(V)

def gen(src, V, store, load, tid='%r10', st_addr='%rd6', ld_addr='%rd4'):
    decl_i = src.index("\t.reg .f32 %f<")
    extra = f"\t.reg .f32 %x<{16*V}>;\n\t.reg .pred %q<4>;\n\t.reg .b32 %y<4>;\n\t.reg .s64 %ya<8>;\n"
    out = src[:decl_i] + extra + src[decl_i:]
    F = lambda i, c: f"%f{4*i+c}"
    def st_old():
        return "".join(f"\tst.global.v4.f32 [{st_addr}{'+%d' % (16*j) if j else ''}], {{{', '.join(F(j,c) for c in range(4))}}};\n" for j in range(V))
    def ld_old():
        return "".join(f"\tld.global.nc.v4.f32 {{{', '.join(F(j,c) for c in range(4))}}}, [{ld_addr}{'+%d' % (16*j) if j else ''}];\n" for j in range(V))
    def parity(q, y):
        return f"\tand.b32 {y}, {tid}, 1;\n\tsetp.ne.u32 {q}, {y}, 0;\n"
    def addr(y, base, ya, yb):
        # base + parity * (16 - 16 V)
        return f"\tcvt.u64.u32 {ya}, {y};\n\tmul.lo.s64 {ya}, {ya}, {16-16*V};\n\tadd.s64 {yb}, {base}, {ya};\n"
    x = [0]
    def fresh():
        x[0] += 1; return f"%x{x[0]-1}"
    if store:
        s = parity('%q0', '%y0')
        sends = []
        for sl in range(V//2):
            vec = [fresh() for _ in range(4)]
            for c in range(4):
                # odd sends v[2s], even v[2s+1]
                s += f"\tselp.f32 {vec[c]}, {F(2*sl,c)}, {F(2*sl+1,c)}, %q0;\n"
            sends.append(vec)
        recv = []
        for vec in sends:
            r = [fresh() for _ in range(4)]
            for c in range(4):
                s += f"\tshfl.sync.bfly.b32 {r[c]}, {vec[c]}, 1, 31, -1;\n"
            recv.append(r)
        s += addr('%y0', st_addr, '%ya0', '%ya1')
        for j in range(V):
            regs = []
            for c in range(4):
                if j < V//2:
                    ev, od = F(2*j, c), recv[j][c]
                else:
                    ev, od = recv[j-V//2][c], F(2*(j-V//2)+1, c)
                t = fresh(); s += f"\tselp.f32 {t}, {od}, {ev}, %q0;\n"; regs.append(t)
            s += f"\tst.global.v4.f32 [%ya1+{32*j}], {{{', '.join(regs)}}};\n"
        old = st_old(); assert old in out; out = out.replace(old, s)
    if load:
        s = parity('%q1', '%y1') + addr('%y1', ld_addr, '%ya2', '%ya3')
        L = []
        for j in range(V):
            regs = [fresh() for _ in range(4)]
            s += f"\tld.global.nc.v4.f32 {{{', '.join(regs)}}}, [%ya3+{32*j}];\n"
            L.append(regs)
        # even holds: j<V/2 own v[2j]; j>=V/2 partner v[2(j-V/2)]
        # odd holds:  j<V/2 partner v[2j+1]; j>=V/2 own v[2(j-V/2)+1]
        # even needs own v[2s+1] = odd's L[s]; odd needs own v[2s] = even's L[s+V/2]
        # so odd sends L[s], even sends L[s+V/2]
        recv = []
        for sl in range(V//2):
            snd = [fresh() for _ in range(4)]
            for c in range(4):
                s += f"\tselp.f32 {snd[c]}, {L[sl][c]}, {L[sl+V//2][c]}, %q1;\n"
            r = [fresh() for _ in range(4)]
            for c in range(4):
                s += f"\tshfl.sync.bfly.b32 {r[c]}, {snd[c]}, 1, 31, -1;\n"
            recv.append(r)
        for sl in range(V//2):
            for c in range(4):
                # v[2s]: even L[s], odd recv[s]; v[2s+1]: even recv[s], odd L[s+V/2]
                s += f"\tselp.f32 {F(2*sl,c)}, {recv[sl][c]}, {L[sl][c]}, %q1;\n"
                s += f"\tselp.f32 {F(2*sl+1,c)}, {L[sl+V//2][c]}, {recv[sl][c]}, %q1;\n"
        old = ld_old(); assert old in out; out = out.replace(old, s)
    assert x[0] <= 16*V
    return out

name, V = sys.argv[1], int(sys.argv[2])
src = open(f"{name}_A.ptx").read()
for tag, st, ld in (("B", True, False), ("C", True, True), ("D", False, True)):
    open(f"{name}_{tag}.ptx", "w").write(gen(src, V, st, ld))
