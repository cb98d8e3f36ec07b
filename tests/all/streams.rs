//! Streams, events, pinned downloads, views and the raw function handle, on the default device
//! (the simulator here; the GPU with `COOPGRAPH_DEVICE=cuda`). Every kernel built here is
//! assembled by ptxas for each supported arch and checked against a CPU reference.

use super::common::{Rng, assemble_all, device};
use coopgraph::runtime::{Device, Foreign, LaunchConfig, RuntimeError};
use coopgraph::{Kernel, KernelBuilder, Load, Store};

/// `y[i] = x[i] * 3 + 1` for `i < n`, in tiles of 128 x 4, every access checked against the
/// lengths of the buffers (or views) passed; past the end of `x`, `x[i]` reads as 0.
fn affine_kernel() -> Kernel {
    let mut k = KernelBuilder::new("stream_affine")
        .block(128)
        .items_per_thread(4);
    let x = k.input::<u32>("x");
    let y = k.output::<u32>("y");
    let n = k.scalar::<u32>("n");
    let b = k.this_block();
    k.tiles(n, |k, _tile| {
        let t = k.load_from(b, &x, Load::striped().oob_default(0));
        let t = k.map(&t, |v| v * 3u32 + 1u32);
        k.store_to(b, &y, &t, Store::striped());
    });
    let kernel = k.build().expect("builds");
    assemble_all(&kernel);
    kernel
}

fn affine(v: u32) -> u32 {
    v.wrapping_mul(3).wrapping_add(1)
}

/// Upload, launch and download on three streams: cudarc's tracking orders the launch after the
/// upload and the download after the launch; events order a fourth stream and time the launch.
#[test]
fn work_on_several_streams_is_ordered_by_its_buffers() {
    let dev = device();
    let f = dev.compile(&affine_kernel()).expect("compiles");
    let n = 5000usize;
    let xs: Vec<u32> = Rng::new(1).vec(n);
    let (up, work, down) = (
        dev.new_stream().expect("stream"),
        dev.new_stream().expect("stream"),
        dev.new_stream().expect("stream"),
    );
    let x = up.upload(&xs).expect("upload");
    let mut y = up.alloc_filled(n, 0xdead_beefu32).expect("alloc");
    let start = work.record_event().expect("event");
    f.launch(
        f.config_over(n).expect("config").on_stream(&work),
        (&x, &mut y, n as u32),
    )
    .expect("launch");
    let end = work.record_event().expect("event");
    let want: Vec<u32> = xs.iter().map(|&v| affine(v)).collect();
    assert_eq!(down.download(&y).expect("download"), want);
    end.synchronize().expect("sync");
    assert!(end.is_complete().expect("query"));
    let elapsed = end.elapsed_since(&start).expect("time");
    assert!(elapsed.as_secs() < 60, "{elapsed:?}");

    // A launch on a fourth stream that waits for `end` reads `y` after the first launch.
    let later = dev.new_stream().expect("stream");
    later.wait(&end).expect("wait");
    let mut z = later.alloc_zeroed::<u32>(n).expect("alloc");
    f.launch(
        f.config_over(n).expect("config").on_stream(&later),
        (&y, &mut z, n as u32),
    )
    .expect("launch");
    let mut host = dev.alloc_pinned::<u32>(n).expect("pinned");
    later.download_into(&z, &mut host).expect("queued");
    let twice: Vec<u32> = want.iter().map(|&v| affine(v)).collect();
    assert_eq!(host.as_slice().expect("read"), &twice[..]);
    work.synchronize().expect("sync");
}

/// Streams, events and buffers of another device are refused; a stream is not a device's
/// twin unless it shares its context (or simulator).
#[test]
fn streams_and_events_of_another_device_are_refused() {
    let dev = Device::sim();
    let other = Device::sim();
    let f = dev.compile(&affine_kernel()).expect("compiles");
    let x = dev.upload(&[1u32; 512]).expect("upload");
    let mut y = dev.alloc_zeroed::<u32>(512).expect("alloc");
    let foreign = other.new_stream().expect("stream");
    assert!(matches!(
        f.launch(
            LaunchConfig::blocks(1).on_stream(&foreign),
            (&x, &mut y, 512u32)
        ),
        Err(RuntimeError::WrongDevice {
            what: Foreign::Stream
        })
    ));
    let event = foreign.record_event().expect("event");
    let mine = dev.new_stream().expect("stream");
    assert!(matches!(
        mine.wait(&event),
        Err(RuntimeError::WrongDevice {
            what: Foreign::Event
        })
    ));
    assert!(matches!(
        foreign.download(&x),
        Err(RuntimeError::WrongDevice {
            what: Foreign::Buffer
        })
    ));
    let mut host = other.alloc_pinned::<u32>(512).expect("pinned");
    assert!(matches!(
        mine.download_into(&y, &mut host),
        Err(RuntimeError::WrongDevice {
            what: Foreign::HostBuffer
        })
    ));
    assert!(mine.is_on(&dev) && mine.is_on(&dev.clone()) && !mine.is_on(&other));
}

/// A view passes its own length to the kernel's bounds checks: with `n` past the end of the
/// views, the kernel reads and writes only inside them, and the rest of each buffer is left as
/// it was.
#[test]
fn views_bound_the_kernel_by_their_lengths() {
    let dev = device();
    let f = dev.compile(&affine_kernel()).expect("compiles");
    let n = 3000usize;
    let xs: Vec<u32> = Rng::new(2).vec(n);
    let x = dev.upload(&xs).expect("upload");
    let poison = 0x5a5a_5a5au32;
    let mut y = dev.alloc_filled(n, poison).expect("alloc");
    // Input elements 700..1900 into output elements 100..1000: the output view is the shorter,
    // so 900 elements are written, though `n` says 3000.
    {
        let src = x.view(700..1900).expect("in range");
        let mut dst = y.view_mut(100..1000).expect("in range");
        f.launch_over(n, (&src, &mut dst, n as u32))
            .expect("launch");
        let got = dst.to_vec().expect("download");
        let want: Vec<u32> = xs[700..1600].iter().map(|&v| affine(v)).collect();
        assert_eq!(got, want);
    }
    let all = y.to_vec().expect("download");
    assert!(all[..100].iter().chain(&all[1000..]).all(|&v| v == poison));
    // An input view shorter than the output: positions past it are not read, and take the
    // load's default.
    let mut z = dev.alloc_filled(n, poison).expect("alloc");
    f.launch_over(n, (&x.view(..10).expect("in range"), &mut z, n as u32))
        .expect("launch");
    let got = z.to_vec().expect("download");
    let want: Vec<u32> = xs[..10].iter().map(|&v| affine(v)).collect();
    assert_eq!(&got[..10], &want[..]);
    assert!(got[10..].iter().all(|&v| v == affine(0)));
    // Ranges outside the buffer are errors, not panics.
    assert!(matches!(
        x.view(10..n + 1),
        Err(RuntimeError::ViewOutOfRange { start: 10, .. })
    ));
    #[allow(clippy::reversed_empty_ranges)]
    let backwards = x.view(20..10);
    assert!(matches!(
        backwards,
        Err(RuntimeError::ViewOutOfRange { .. })
    ));
    assert!(x.view(n..).expect("empty view").is_empty());
}

/// cudarc's own views launch like coopgraph's, their lengths feeding the bounds checks; the raw
/// function handle launches through the driver with the hidden lengths after the parameters.
/// GPU only (the simulator has no cudarc memory).
#[test]
fn cudarc_views_and_the_raw_handle() {
    let dev = device();
    let f = dev.compile(&affine_kernel()).expect("compiles");
    let Some(stream) = dev.cuda_stream().cloned() else {
        assert!(f.cu_function().is_none());
        eprintln!("cudarc_views_and_the_raw_handle: the default device is the simulator");
        return;
    };
    let n = 2048usize;
    let xs: Vec<u32> = Rng::new(3).vec(n);
    let x = stream.clone_htod(&xs).expect("htod");
    let mut y = stream.clone_htod(&vec![7u32; n]).expect("htod");
    {
        let src = x.slice(0..1000);
        let mut dst = y.slice_mut(48..1048);
        f.launch_over(n, (&src, &mut dst, n as u32))
            .expect("launch with cudarc views");
    }
    let got = stream.clone_dtoh(&y).expect("dtoh");
    let want: Vec<u32> = xs[..1000].iter().map(|&v| affine(v)).collect();
    assert_eq!(&got[48..1048], &want[..]);
    assert!(got[..48].iter().chain(&got[1048..]).all(|&v| v == 7));

    // A raw launch: the user's parameters, then one u32 length per hidden parameter.
    use cudarc::driver::{DevicePtr, DevicePtrMut, sys};
    let mut z = stream.alloc_zeros::<u32>(n).expect("alloc");
    let lengths = [n as u64, 512u64]; // z is passed as only 512 elements long
    {
        let (px, _rx) = x.device_ptr(&stream);
        let (pz, _rz) = z.device_ptr_mut(&stream);
        let mut cells: Vec<u64> = vec![px, pz, n as u64];
        for h in &f.image().hidden {
            cells.push(lengths[h.buffer().expect("a length")]);
        }
        let mut params: Vec<*mut std::ffi::c_void> = cells
            .iter_mut()
            .map(|c| c as *mut u64 as *mut std::ffi::c_void)
            .collect();
        let blocks = f.config_over(n).expect("config").grid[0];
        let [bx, by, bz] = f.image().block;
        dev.cuda_context()
            .expect("CUDA")
            .bind_to_thread()
            .expect("bind");
        // SAFETY: the function lives in the device's context; the cells hold the two buffers'
        // addresses, `n`, then lengths no larger than the buffers, matching the parameter
        // layout the image declares.
        unsafe {
            sys::cuLaunchKernel(
                f.cu_function().expect("a CUDA function"),
                blocks,
                1,
                1,
                bx,
                by,
                bz,
                f.image().dynamic_smem,
                stream.cu_stream(),
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        }
        .result()
        .expect("raw launch");
    }
    let got = stream.clone_dtoh(&z).expect("dtoh");
    let want: Vec<u32> = xs[..512].iter().map(|&v| affine(v)).collect();
    assert_eq!(&got[..512], &want[..]);
    assert!(got[512..].iter().all(|&v| v == 0));
}
