//! The end-to-end suite: one test binary, one module per area. Every test
//! loads real BPF programs against real workloads and compares with ground
//! truth nobody here wrote (the workload's own tally, /sys/block, fio's JSON,
//! libbpf-tools, the kernel's miss counters).
//!
//! One binary links ebq once (57 did before), and `--no-fail-fast` is no
//! longer needed to see every area's result: a red module does not hide the
//! others. Run one area with its module path, e.g.
//! `cargo test --release -p ebq-e2e --test e2e btf_args:: -- --test-threads=1`.

mod common;

mod aot_and_analyze;
mod approx_distinct;
mod bench;
mod block_flags;
mod book;
mod bounds;
mod btf_args;
mod burst_formats;
mod cgroups;
mod cleanup;
mod cli;
mod cpu_rings;
mod darshan_log;
mod darshan_merge;
mod deploy;
mod empty_results;
mod env_errors;
mod errors_and_options;
mod exact_counts;
mod fidelity;
mod file_columns;
mod file_types;
mod files;
mod first_hour;
mod histograms;
mod invalid_queries;
mod io_engines;
mod io_ops;
mod joins;
mod kafka;
mod kernel_probes;
mod malformed;
mod mapped_files;
mod missed;
mod mixed_stacks;
mod newcomer;
mod nodes;
mod offcpu;
mod one_liners;
mod otlp;
mod otlp_logs;
mod overload;
mod page_cache;
mod pair_age;
mod pins;
mod plots;
mod postgres;
mod profile;
mod props;
mod raw_syscalls;
mod report;
mod row_fold;
mod sched_latency;
mod serve;
mod serve_tls;
mod shipped;
mod single_slot;
mod stacks;
mod startup_cache;
mod stream_join;
mod strict_clients;
mod terminal_rows;
mod top_k;
mod union_all;
mod union_start;
mod uprobes;
mod usdt;
mod user_ops;
mod user_strings;
mod valid_queries;
