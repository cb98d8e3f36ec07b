//! Error chains: every error prints each cause once. A reporter that prints an error and then
//! each `source()` in turn shows no line twice, and the top-level `Error` adds no line of its
//! own to the stage error it wraps.

use coopgraph::ir::index;
use coopgraph::runtime::{Device, ImageParts, KernelImage, ParamKind, ParamSig, RuntimeError};
use coopgraph::{Error, KernelBuilder};

/// The error's text, then each source's.
fn chain(e: &dyn std::error::Error) -> Vec<String> {
    let mut out = vec![e.to_string()];
    let mut next = e.source();
    while let Some(cause) = next {
        out.push(cause.to_string());
        next = cause.source();
    }
    out
}

/// No link of the chain repeats a later one's text.
fn each_cause_once(e: &dyn std::error::Error) {
    let links = chain(e);
    for (i, outer) in links.iter().enumerate() {
        for inner in &links[i + 1..] {
            assert!(
                !outer.contains(inner.as_str()),
                "`{outer}` repeats its cause `{inner}`"
            );
        }
    }
}

#[test]
fn verify_plan_and_runtime_errors_print_each_cause_once() {
    // A verifier error.
    let verify = KernelBuilder::new("k")
        .block(0)
        .build()
        .expect_err("empty block");
    let Error::Verify(inner) = &verify else {
        panic!("expected a verifier error, got {verify}");
    };
    assert_eq!(verify.to_string(), inner.to_string());
    each_cause_once(&verify);

    // A planning error: more shared memory than any block has.
    let mut k = KernelBuilder::new("too_big").block(128);
    let a = k.shared_array::<f32>(40_000);
    let b = k.shared_array::<f32>(40_000);
    k.shared_write(&a, index::thread_rank(), 1.0f32);
    k.shared_write(&b, index::thread_rank(), 1.0f32);
    let compile = Device::sim()
        .compile(&k.build().expect("builds"))
        .expect_err("too much shared memory");
    let RuntimeError::Plan(inner) = &compile else {
        panic!("expected a planning error, got {compile}");
    };
    assert_eq!(compile.to_string(), inner.to_string());
    each_cause_once(&compile);
    // Into the top-level error (as `?` does), it is a planning error like one from the build.
    let plan = Error::from(compile);
    let Error::Plan(inner) = &plan else {
        panic!("expected a planning error, got {plan}");
    };
    assert_eq!(plan.to_string(), inner.to_string());
    each_cause_once(&plan);

    // A runtime error wrapping the simulator's: PTX that does not parse.
    // Unchecked bounds: it is never launched (its PTX does not parse).
    let image = KernelImage::unchecked_bounds(ImageParts {
        entry: "broken".into(),
        ptx: ".version 7.8\n.target sm_90\n.address_size 64\n.visible .entry broken() { bogus; }"
            .into(),
        arch: coopgraph::ptx::Arch::Sm90,
        params: vec![ParamSig::new(
            "x",
            ParamKind::Input,
            coopgraph::ir::DType::U32,
        )],
        hidden: vec![],
        block: [32, 1, 1],
        tile_elems: 32,
        static_smem: 0,
        dynamic_smem: 0,
        needs_cooperative: false,
        tile_offsets: false,
        grid_dims: 1,
        dynamic_array: None,
    });
    let runtime = Error::from(Device::sim().compile(&image).expect_err("does not parse"));
    let Error::Runtime(inner @ RuntimeError::Sim(sim)) = &runtime else {
        panic!("expected a simulator error, got {runtime}");
    };
    assert_eq!(runtime.to_string(), inner.to_string());
    assert!(inner.to_string().contains(&sim.to_string()));
    each_cause_once(&runtime);
    each_cause_once(inner);
}
