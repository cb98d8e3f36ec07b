//! Differential test: the same kernels on the GPU and on the simulator, random inputs, outputs
//! compared bit for bit. Without a GPU it compares the simulator with all checkers on against
//! the simulator with them off (the checkers must not change results).

use super::common::{Rng, device};
use coopgraph::ir::{Algorithm, Element, Expr, index};
use coopgraph::runtime::{Device, DeviceElement, SimOptions};
use coopgraph::{Kernel, KernelBuilder, Load, Store};

fn other_device() -> Device {
    if device().is_cuda() {
        Device::sim()
    } else {
        Device::sim_with(SimOptions {
            check_races: false,
            check_uninit: false,
            ..SimOptions::default()
        })
    }
}

/// A kernel mixing arithmetic, comparisons, casts, branches and an exchange.
fn soup<T: Element>(alg: Algorithm, f: fn(Expr<T>, Expr<T>) -> Expr<T>) -> Kernel {
    let mut k = KernelBuilder::new(format!("soup_{}_{alg:?}", T::DTYPE))
        .block(128)
        .items_per_thread(4);
    let x = k.input::<T>("x");
    let y = k.input::<T>("y");
    let z = k.output::<T>("z");
    let n = k.scalar::<u32>("n");
    let b = k.this_block();
    k.tiles(n, |k, _tile| {
        let tx = k.load_from(
            b,
            &x,
            Load::direct()
                .algorithm(alg)
                .oob_default(T::cast_from_i64(1)),
        );
        let ty = k.load_from(b, &y, Load::striped().oob_default(T::cast_from_i64(2)));
        let r = k.map2(&tx, &ty, f);
        let out = k.thread_data::<T>();
        k.if_else(
            (index::thread_rank() / 32u32).eq(1u32),
            |k| {
                let s = k.map(&r, |v| v.max(T::cast_from_i64(3)));
                k.assign(&out, &s);
            },
            |k| k.assign(&out, &r),
        );
        k.store_to(b, &z, &out, Store::default().algorithm(alg));
    });
    k.build().expect("builds")
}

fn compare<T: DeviceElement>(kernel: &Kernel, seed: u64) {
    let n = 3000usize;
    let mut rng = Rng::new(seed);
    let xs: Vec<T> = rng.vec(n);
    let ys: Vec<T> = rng.vec(n);
    let mut results = Vec::new();
    for dev in [device().clone(), other_device()] {
        let f = dev.compile(kernel).expect("compile");
        let xb = dev.upload(&xs).expect("upload");
        let yb = dev.upload(&ys).expect("upload");
        let mut zb = dev.alloc_zeroed::<T>(n).expect("alloc");
        f.launch_grid(4, (&xb, &yb, &mut zb, n as u32))
            .expect("launch");
        results.push(zb.to_vec().expect("download"));
    }
    let (a, b) = (&results[0], &results[1]);
    if let Some(i) = (0..n).find(|&i| a[i].to_bits() != b[i].to_bits()) {
        panic!(
            "{}: element {i} is {:?} on {:?} and {:?} on the other backend",
            kernel.name(),
            a[i],
            device().backend(),
            b[i]
        );
    }
}

#[test]
fn backends_agree_bit_for_bit() {
    for alg in Algorithm::ALL {
        compare::<f32>(
            &soup::<f32>(alg, |a, b| (a.clone() * b.clone() + 0.5).min(a - b)),
            1,
        );
        compare::<f64>(&soup::<f64>(alg, |a, b| a.fma(b.clone(), b).sqrt()), 2);
        compare::<i32>(
            &soup::<i32>(alg, |a, b| (a.clone() * b.clone()) ^ (a >> 3u32) ^ b),
            3,
        );
        compare::<u8>(&soup::<u8>(alg, |a, b| a.clone() / (b | 1u8) + a), 4);
        compare::<i64>(
            &soup::<i64>(alg, |a, b| a.lt(b.clone()).select(a.clone(), b) - 7i64),
            5,
        );
        compare::<u16>(
            &soup::<u16>(alg, |a, b| a.cast::<f32>().cast::<u16>().reverse_bits() ^ b),
            6,
        );
    }
}
