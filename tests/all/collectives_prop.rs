//! Property test of the collectives: random block sizes, items, groups and operators; one
//! kernel reduces (broadcast), scans (inclusive) and flags heads, checked against the CPU.

use super::common::device;
use coopgraph::ir::{Flags, Reduce, Scan};
use coopgraph::{KernelBuilder, Load, Store};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, .. ProptestConfig::default() })]

    #[test]
    fn reduce_scan_and_flags_agree_with_the_cpu(
        warps in 1u32..9,
        items in 1u32..6,
        width_pick in 0usize..7,
        op in 0u8..3,
        seed in any::<u64>(),
    ) {
        let block = warps * 32;
        let width = [block, 32, 16, 8, 4, 2, 1][width_pick];
        let mut k = KernelBuilder::new("collectives").block(block).items_per_thread(items);
        let x = k.input::<i32>("x");
        let ys = [k.output::<i32>("r"), k.output::<i32>("s"), k.output::<i32>("h")];
        let b = k.this_block();
        let g = if width == block { b } else { k.this_warp().group_by(width) };
        let t = k.load_from(b, &x, Load::direct());
        let (red, scan): (Reduce<i32>, Reduce<i32>) = match op {
            0 => (Reduce::sum(), Reduce::sum()),
            1 => (Reduce::min(), Reduce::min()),
            _ => (Reduce::max(), Reduce::max()),
        };
        let r = k.reduce(g, &t, red.broadcast());
        let s = k.scan(g, &t, Scan::inclusive(scan));
        let h = k.flag_heads(g, &t, Flags::inequality());
        let h = k.map(&h, |v| v.cast::<i32>());
        k.store_to(b, &ys[0], &r, Store::direct().offset(0u32));
        k.store_to(b, &ys[1], &s, Store::direct());
        k.store_to(b, &ys[2], &h, Store::direct());
        let kernel = k.build().expect("builds");
        let dev = device();
        let f = dev.compile(&kernel).expect("compile");
        let len = (block * items) as usize;
        let mut state = seed | 1;
        let xs: Vec<i32> = (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state % 5) as i32 - 2
            })
            .collect();
        let xb = dev.upload(&xs).expect("upload");
        let mut rb = dev.alloc_zeroed::<i32>(block as usize).expect("alloc");
        let mut sb = dev.alloc_zeroed::<i32>(len).expect("alloc");
        let mut hb = dev.alloc_zeroed::<i32>(len).expect("alloc");
        f.launch_grid(1, (&xb, &mut rb, &mut sb, &mut hb)).expect("launch");
        let fold = |a: i32, b: i32| match op {
            0 => a.wrapping_add(b),
            1 => a.min(b),
            _ => a.max(b),
        };
        let w = (width * items) as usize;
        let (got_r, got_s, got_h) = (rb.to_vec().expect("r"), sb.to_vec().expect("s"), hb.to_vec().expect("h"));
        for (gi, tile) in xs.chunks(w).enumerate() {
            let total = tile.iter().copied().reduce(fold).expect("items");
            for rank in 0..width as usize {
                prop_assert_eq!(got_r[gi * width as usize + rank], total);
            }
            let mut acc = None;
            for (p, &v) in tile.iter().enumerate() {
                let next = acc.map_or(v, |a| fold(a, v));
                prop_assert_eq!(got_s[gi * w + p], next);
                acc = Some(next);
                let head = p == 0 || tile[p - 1] != v;
                prop_assert_eq!(got_h[gi * w + p], head as i32);
            }
        }
    }
}
