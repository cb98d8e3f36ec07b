//! What the runtime reports through the `log` facade: kernel cache misses with the emit time,
//! hits, loads, launches and graph captures, each naming the kernel.

use super::common::{device, logged, logged_with};
use coopgraph::{KernelBuilder, Load, Store};

#[test]
fn compiles_loads_launches_and_captures_are_logged() {
    logged();
    let dev = device();
    // A name no other test uses: the logger sees every test's lines.
    let name = "logging_probe_kernel";
    let mut k = KernelBuilder::new(name).block(64).items_per_thread(2);
    let x = k.input::<u32>("x");
    let y = k.output::<u32>("y");
    let b = k.this_block();
    let t = k.load_from(b, &x, Load::direct());
    let t = k.map(&t, |v| v + 0x1093u32);
    k.store_to(b, &y, &t, Store::direct());
    let kernel = k.build().expect("builds");
    let quoted = format!("`{name}`");

    let f = dev.compile(&kernel).expect("compiles");
    let lines = logged_with(&quoted);
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("DEBUG kernel cache miss") && l.contains(" ms ")),
        "{lines:#?}"
    );
    let loaded = if dev.is_cuda() {
        "JIT of"
    } else {
        "parsed for the simulator"
    };
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("DEBUG") && (l.contains(loaded) || l.contains("disk cache"))),
        "{lines:#?}"
    );
    assert!(!lines.iter().any(|l| l.contains("kernel cache hit")));
    dev.compile(&kernel).expect("a hit");
    assert!(
        logged_with(&quoted)
            .iter()
            .any(|l| l.starts_with("TRACE kernel cache hit"))
    );

    let xs: Vec<u32> = (0..300).collect();
    let x = dev.upload(&xs).expect("upload");
    let mut y = dev.alloc_zeroed::<u32>(300).expect("alloc");
    f.launch_over(300, (&x, &mut y)).expect("launch");
    let want: Vec<u32> = xs.iter().map(|v| v + 0x1093).collect();
    assert_eq!(y.to_vec().expect("download"), want);
    let launches = |captured: bool| {
        logged_with(&format!("launch {quoted}"))
            .iter()
            .filter(|l| l.starts_with("TRACE") && l.contains("captured") == captured)
            .count()
    };
    assert_eq!(launches(false), 1, "{:#?}", logged_with(&quoted));

    let stream = dev.new_stream().expect("stream");
    let graph = stream
        .capture(|s| {
            f.launch(f.config_over(300)?.on_stream(s), (&x, &mut y))?;
            f.launch(f.config_over(300)?.on_stream(s), (&x, &mut y))
        })
        .expect("captures");
    assert_eq!(launches(true), 2);
    assert_eq!(graph.kernels(), 2);
    assert!(!logged_with("captured a graph of 2 kernel launches").is_empty());
}
