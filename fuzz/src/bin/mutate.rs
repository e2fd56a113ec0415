//! A stable-toolchain fuzzer for machines without nightly/libFuzzer: random
//! mutations (byte edits, dictionary insertions, splices, truncations) of the
//! seed corpus, each run through the same check as the libFuzzer target.
//! Crashing inputs are written to `artifacts/parse_bind/` and printed.
//!
//! `cargo run --release --no-default-features --bin mutate -- [SECONDS] [SEED]`

use std::collections::BTreeSet;
use std::panic;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const DICT: &[&str] = &[
    "SELECT",
    "FROM",
    "WHERE",
    "GROUP BY",
    "WINDOW",
    "HAVING",
    "ORDER BY",
    "LIMIT",
    "JOIN",
    "ON",
    "AS",
    "AND",
    "OR",
    "NOT",
    "IN",
    "BETWEEN",
    "LIKE",
    "TRUE",
    "FALSE",
    "NULL",
    "COUNT(*)",
    "SUM(",
    "MIN(",
    "MAX(",
    "AVG(",
    "starts_with(",
    "(time, 10)",
    "(count, 5, 5)",
    "tracepoint:",
    "syscalls.sys_enter_pread64",
    "sched/sched_switch",
    "raw_syscalls.sys_enter",
    "block.block_rq_issue",
    "irq.irq_handler_entry",
    "args[",
    "]",
    "fd",
    "comm",
    "prev_comm",
    "next_comm",
    "time",
    "pid",
    "cpu",
    "'",
    "''",
    "\"",
    "(",
    ")",
    ",",
    ";",
    "*",
    "+",
    "-",
    "/",
    "%",
    "&",
    "|",
    "^",
    "<<",
    ">>",
    "=",
    "==",
    "!=",
    "<>",
    "<",
    "<=",
    ">",
    ">=",
    "--",
    "/*",
    "*/",
    "\n",
    "\t",
    " ",
    "0",
    "1",
    "-1",
    "18446744073709551615",
    "18446744073709551616",
    "9223372036854775808",
    "'a%'",
    "'%'",
    "e.",
    "DESC",
    "ASC",
    "DISTINCT",
    "é",
    "\u{0}",
];

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn mutate(rng: &mut Rng, input: &mut Vec<u8>, corpus: &[Vec<u8>]) {
    let len = input.len();
    match rng.below(8) {
        0 if len > 0 => {
            let i = rng.below(len);
            input[i] = rng.next() as u8;
        }
        1 if len > 0 => {
            let i = rng.below(len);
            let n = 1 + rng.below(8.min(len - i));
            input.drain(i..i + n);
        }
        2 | 3 => {
            let i = rng.below(len + 1);
            let word = DICT[rng.below(DICT.len())].as_bytes();
            let pad = rng.below(3) == 0;
            let mut w = vec![];
            if pad {
                w.push(b' ');
            }
            w.extend_from_slice(word);
            if pad {
                w.push(b' ');
            }
            input.splice(i..i, w);
        }
        4 if len > 0 => {
            let i = rng.below(len);
            let n = 1 + rng.below(16.min(len - i));
            let chunk = input[i..i + n].to_vec();
            let at = rng.below(len + 1);
            input.splice(at..at, chunk);
        }
        5 if !corpus.is_empty() => {
            let other = &corpus[rng.below(corpus.len())];
            let cut = rng.below(len + 1);
            let from = rng.below(other.len() + 1);
            input.truncate(cut);
            input.extend_from_slice(&other[from..]);
        }
        6 if len > 0 => input.truncate(rng.below(len)),
        _ => {
            let i = rng.below(len + 1);
            let c = b"(),'\".:/[]-*"[rng.below(12)];
            let long = rng.below(8) == 0;
            let n = 1 + rng.below(if long { 300 } else { 3 });
            input.splice(i..i, std::iter::repeat_n(c, n));
        }
    }
    input.truncate(64 * 1024);
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let seconds: u64 = args.first().and_then(|a| a.parse().ok()).unwrap_or(60);
    let seed: u64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(1)
    });
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/corpus/parse_bind");
    let corpus: Vec<Vec<u8>> = std::fs::read_dir(dir)
        .expect("read the seed corpus")
        .flatten()
        .filter_map(|e| std::fs::read(e.path()).ok())
        .collect();
    assert!(!corpus.is_empty(), "no seeds in {dir}");
    let last_panic: Arc<Mutex<String>> = Arc::default();
    let sink = last_panic.clone();
    panic::set_hook(Box::new(move |info| {
        let loc = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
        let msg = info
            .payload()
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| info.payload().downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        *sink.lock().unwrap() = format!("{msg}{loc}");
    }));
    let artifacts = concat!(env!("CARGO_MANIFEST_DIR"), "/artifacts/parse_bind");
    let mut rng = Rng(seed);
    let t0 = Instant::now();
    let mut execs = 0u64;
    let mut crashes: BTreeSet<String> = BTreeSet::new();
    println!("mutate: {} seeds, {seconds} s, seed {seed}", corpus.len());
    while t0.elapsed() < Duration::from_secs(seconds) {
        let mut input = corpus[rng.below(corpus.len())].clone();
        for _ in 0..1 + rng.below(6) {
            mutate(&mut rng, &mut input, &corpus);
        }
        execs += 1;
        if panic::catch_unwind(|| ebq_fuzz::check(&input)).is_err() {
            let msg = last_panic.lock().unwrap().clone();
            // One report per distinct panic location.
            let key = msg.rsplit(" at ").next().unwrap_or(&msg).to_string();
            if crashes.insert(key) {
                std::fs::create_dir_all(artifacts).expect("create artifacts dir");
                let name = format!("{artifacts}/crash-mutate-{execs}");
                std::fs::write(&name, &input).expect("write the crash input");
                println!(
                    "CRASH after {execs} execs: {msg}\n  input ({} bytes) in {name}: {:?}",
                    input.len(),
                    String::from_utf8_lossy(&input).chars().take(300).collect::<String>()
                );
            }
        }
    }
    println!(
        "mutate: {execs} execs in {:.0} s ({:.0}/s), {} distinct crashes",
        t0.elapsed().as_secs_f64(),
        execs as f64 / t0.elapsed().as_secs_f64(),
        crashes.len()
    );
}
