//! The host side of the seam reads this machine: checks that need the real
//! /proc/kallsyms (hidden from the pure unit tests by `scripts/test-pure.sh`).

#[test]
fn kallsyms_has_the_read_path() {
    let syms = ebq::host::kallsyms::text_symbols();
    assert!(syms.iter().any(|(_, n)| n == "ksys_read" || n == "vfs_read"), "kallsyms: {} symbols", syms.len());
    assert!(syms.windows(2).all(|w| w[0].0 <= w[1].0), "sorted by address");
}
