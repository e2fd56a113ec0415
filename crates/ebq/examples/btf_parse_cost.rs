//! What reading the running kernel's BTF costs: time to parse `/sys/kernel/btf/vmlinux`
//! (fastest of 20), to build the name index, and the heap it keeps, counted by a
//! global allocator.
//!
//! ```text
//! cargo run --release -p ebq --example btf_parse_cost
//! ```

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use ebq::btf::{Btf, KindTag};

/// The system allocator, counting bytes currently allocated and the peak.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(live, Ordering::Relaxed);
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: ptr came from alloc with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn fastest(runs: usize, mut f: impl FnMut()) -> Duration {
    (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .min()
        .unwrap_or_default()
}

fn main() {
    let file = "/sys/kernel/btf/vmlinux";
    let read_start = Instant::now();
    let bytes = std::fs::read(file).expect("read /sys/kernel/btf/vmlinux");
    let read = read_start.elapsed();
    let parse = fastest(20, || drop(Btf::parse(&bytes).unwrap()));
    let parse_and_index = fastest(20, || {
        let btf = Btf::parse(&bytes).unwrap();
        btf.find("request", KindTag::Struct).unwrap();
    });
    let index = parse_and_index.saturating_sub(parse);

    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let btf = Btf::parse(&bytes).unwrap();
    let parsed = LIVE.load(Ordering::Relaxed) - before;
    let parse_peak = PEAK.load(Ordering::Relaxed) - before;
    let start = Instant::now();
    let args = btf.tracepoint_args("block_rq_complete").unwrap();
    let first_lookup = start.elapsed();
    let indexed = LIVE.load(Ordering::Relaxed) - before;
    let start = Instant::now();
    let path = btf.resolve_path(args[0].ty, &["q", "disk", "disk_name"]).unwrap();
    let resolve = start.elapsed();

    println!("{file}: {} bytes, {} types", bytes.len(), btf.type_count());
    println!("read the file:             {read:?}");
    println!("parse (fastest of 20):     {parse:?}");
    println!("name index (parse+find minus parse): {index:?}");
    println!("first tracepoint_args (builds the index): {first_lookup:?}");
    println!("resolve rq.q.disk.disk_name: {resolve:?} -> {:?}", path.leaf);
    println!("heap kept after parse:     {:.1} MiB (peak while parsing {:.1} MiB)", mib(parsed), mib(parse_peak));
    println!("heap kept with the index:  {:.1} MiB", mib(indexed));
}

fn mib(bytes: usize) -> f64 {
    bytes as f64 / (1 << 20) as f64
}
