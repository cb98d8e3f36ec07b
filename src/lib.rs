//! coopgraph: build cooperative CUDA kernels at run time.
//!
//! A kernel is a typed graph of tile operations over groups of threads. The builder records
//! it ([`KernelBuilder`]), the verifier checks it (every error at once, each naming your
//! source line), the planner decides how threads own items and where shared memory and
//! barriers go, code generation writes PTX text, and a [`runtime::Device`] runs it: a GPU
//! through cudarc, or the CPU simulator ([`sim`]) that executes the same PTX with race,
//! participation, bounds and initialization checks.
//!
//! ```
//! use coopgraph::runtime::Device;
//! use coopgraph::{KernelBuilder, Load, Store};
//!
//! # fn main() -> Result<(), coopgraph::Error> {
//! let mut k = KernelBuilder::new("saxpy").block(128).items_per_thread(4);
//! let x = k.input::<f32>("x");
//! let y = k.input::<f32>("y");
//! let out = k.output::<f32>("out");
//! let a = k.scalar::<f32>("a");
//! let n = k.scalar::<u32>("n");
//! let block = k.this_block();
//! k.tiles(n, |k, _tile| {
//!     // Coalesced reads, transposed to blocked order through planned shared memory.
//!     let tx = k.load_from(block, &x, Load::transpose());
//!     let ty = k.load_from(block, &y, Load::transpose());
//!     let r = k.map2(&tx, &ty, |x, y| x.fma(a, y));
//!     k.store_to(block, &out, &r, Store::transpose());
//! });
//! let kernel = k.build()?;
//!
//! let device = Device::sim(); // `Device::default_device()` picks the GPU when there is one
//! let n = 1000;
//! let xs: Vec<f32> = (0..n).map(|i| i as f32).collect();
//! let ys = vec![1.0f32; n];
//! let (xb, yb) = (device.upload(&xs)?, device.upload(&ys)?);
//! let mut ob = device.alloc_zeroed::<f32>(n)?;
//! device
//!     .compile(&kernel)?
//!     .launch_over(n, (&xb, &yb, &mut ob, 2.0f32, n as u32))?;
//! let got = ob.to_vec()?;
//! assert!(got.iter().zip(&xs).all(|(o, x)| *o == x.mul_add(2.0, 1.0)));
//! # Ok(())
//! # }
//! ```
//!
//! Where to look: [`ir`] (builder, expressions, verifier), [`planner`] (the plan),
//! [`codegen`] (lowering to PTX), [`ptx`] (the PTX model, its writer, the target archs),
//! [`runtime`] (devices, cache, launch), [`sim`] (the simulator), [`layout`] (the layout
//! algebra), [`random`] (random numbers in kernels: Philox4x32-10, and xoroshiro128+ as
//! Numba's).
#![deny(missing_docs)]

pub mod algorithms;
mod cache_key;
pub mod codegen;
mod error;
pub mod ir;
mod kernel;
pub mod layout;
pub mod multi;
pub mod planner;
pub mod ptx;
pub mod random;
pub mod runtime;
pub mod sim;

pub use error::Error;

/// The README's example, run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
pub use ir::{KernelBuilder, Load, Store};
pub use kernel::Kernel;
