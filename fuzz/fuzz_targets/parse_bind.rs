//! Fuzz target: arbitrary bytes → parse → bind (→ plan → codegen) against
//! the fixture catalog.
//!
//! With the default `libfuzzer` feature (nightly, `cargo fuzz run parse_bind`)
//! this is a libFuzzer target. Built without it (`cargo run --release
//! --no-default-features --bin parse_bind -- DIR_OR_FILE…`) it replays a
//! corpus on a stable toolchain, e.g. `corpus/parse_bind` and `artifacts/`.
#![cfg_attr(feature = "libfuzzer", no_main)]

#[cfg(feature = "libfuzzer")]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    ebq_fuzz::check(data);
});

#[cfg(not(feature = "libfuzzer"))]
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let dirs = if args.is_empty() {
        vec![concat!(env!("CARGO_MANIFEST_DIR"), "/corpus/parse_bind").to_string()]
    } else {
        args
    };
    let mut files = vec![];
    for d in &dirs {
        let p = std::path::Path::new(d);
        if p.is_dir() {
            let mut entries: Vec<_> = std::fs::read_dir(p).expect("read corpus").flatten().map(|e| e.path()).collect();
            entries.sort();
            files.extend(entries);
        } else {
            files.push(p.to_path_buf());
        }
    }
    let mut failed = 0;
    for f in &files {
        let data = std::fs::read(f).expect("read input");
        if std::panic::catch_unwind(|| ebq_fuzz::check(&data)).is_err() {
            eprintln!("FAILED: {}", f.display());
            failed += 1;
        }
    }
    println!("replayed {} inputs, {failed} failed", files.len());
    if failed > 0 {
        std::process::exit(1);
    }
}
