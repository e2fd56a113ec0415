//! "Did you mean" suggestions for misspelt names: events, columns, kernel
//! and binary functions. Shared by every stage that reports a name it does
//! not know (host for ELF symbols, btf for struct members, catalog, bind).

/// At most this many suggestions are offered.
const MAX_SUGGESTIONS: usize = 3;

/// How close `candidate` is to what the user typed, in `0.0..=1.0`, or `None` when
/// it is too far off to be worth suggesting.
///
/// Close means: normalised Damerau-Levenshtein similarity of at least 0.7, or a
/// single edit (short names such as `fd`/`id`), or the query (3+ characters)
/// appearing inside the candidate (`pread64` → `sys_enter_pread64`). Containment
/// scores below real near-misses so typos rank first. Case is ignored.
pub fn closeness(query: &str, candidate: &str) -> Option<f64> {
    let q = query.to_ascii_lowercase();
    let c = candidate.to_ascii_lowercase();
    let score = strsim::normalized_damerau_levenshtein(&q, &c);
    if score >= 0.7 || strsim::damerau_levenshtein(&q, &c) <= 1 {
        return Some(score);
    }
    if q.chars().count() >= 3 && c.contains(&q) {
        return Some(0.5 + 0.2 * q.len() as f64 / c.len() as f64);
    }
    None
}

/// Keeps the best [`MAX_SUGGESTIONS`] of `(suggestion, score)` pairs, best first,
/// ties broken alphabetically so output is stable.
pub fn best(mut scored: Vec<(String, f64)>) -> Vec<String> {
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let mut out: Vec<String> = Vec::new();
    for (s, _) in scored {
        if !out.contains(&s) && out.len() < MAX_SUGGESTIONS {
            out.push(s);
        }
    }
    out
}

/// Up to three of `candidates` closest to `query`, best first (functions of a
/// binary, of the kernel).
pub fn closest<'a>(query: &str, candidates: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    best(candidates.into_iter().filter_map(|n| closeness(query, n).map(|c| (n.to_string(), c))).collect())
}

/// Up to three names from `candidates` closest to `name`, best first, for errors
/// like "unknown column `cout`, did you mean `count`?". Empty when nothing is close.
pub fn suggest_column(name: &str, candidates: &[&str]) -> Vec<String> {
    closest(name, candidates.iter().copied().filter(|c| *c != name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns() {
        let cols = ["count", "fd", "buf", "pos", "__syscall_nr"];
        assert_eq!(suggest_column("cout", &cols), ["count"]);
        assert_eq!(suggest_column("COUNT", &cols), ["count"]);
        assert_eq!(suggest_column("cuont", &cols), ["count"]);
        assert_eq!(suggest_column("syscall_nr", &cols), ["__syscall_nr"]);
        assert_eq!(suggest_column("id", &cols), ["fd"]);
        assert!(suggest_column("zzzzzz", &cols).is_empty());
        assert!(suggest_column("x", &[]).is_empty());
    }

    #[test]
    fn at_most_three_best_first() {
        let cols = ["pid1", "pid2", "pid3", "pid4", "pid"];
        assert_eq!(suggest_column("pidd", &cols), ["pid", "pid1", "pid2"]);
    }
}
