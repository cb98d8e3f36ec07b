cd "$(dirname "$0")"
nvcc -O2 -o /tmp/pb bench.cu -lcuda && /tmp/pb unc.ptx chk.ptx abs.ptx absnw.ptx unc.ptx chk.ptx
