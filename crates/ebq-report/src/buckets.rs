//! Darshan's access-size buckets (`DARSHAN_BUCKET_INC`, darshan-common.h),
//! defined once: `posix` counts with them, `fold_c` generates the kernel
//! fold's C from them, and ebq-e2e's workload and report tests include this
//! file by path (so it imports nothing). posix's tests pin the edges to
//! Darshan's values.
#![allow(dead_code)]

/// The buckets' counter suffixes (`POSIX_SIZE_READ_<suffix>`), in order.
pub const BUCKETS: [&str; 10] =
    ["0_100", "100_1K", "1K_10K", "10K_100K", "100K_1M", "1M_4M", "4M_10M", "10M_100M", "100M_1G", "1G_PLUS"];

/// The inclusive upper edge of every bucket but the last, which is unbounded.
pub const EDGES: [i64; 9] = [100, 1 << 10, 10 << 10, 100 << 10, 1 << 20, 4 << 20, 10 << 20, 100 << 20, 1 << 30];

/// The bucket of an access of `bytes` (an index into [`BUCKETS`]).
pub fn bucket(bytes: i64) -> usize {
    EDGES.iter().position(|e| bytes <= *e).unwrap_or(EDGES.len())
}
