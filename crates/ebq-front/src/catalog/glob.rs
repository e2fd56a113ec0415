//! A tiny glob matcher for `ebq list` patterns such as `syscalls:sys_enter_*`.

/// True when `text` matches `pattern`, where `*` matches any run of characters
/// (including none) and `?` exactly one; everything else matches itself.
///
/// Greedy with single-point backtracking to the last `*`, so it runs in
/// O(len(pattern) * len(text)) at worst and never recurses.
pub(crate) fn glob_match(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    // Position of the last `*` seen and the text position it is currently matched up to.
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        match p.get(pi) {
            Some('*') => {
                star = Some((pi, ti));
                pi += 1;
            }
            Some(&c) if c == '?' || c == t[ti] => {
                pi += 1;
                ti += 1;
            }
            _ => match star {
                // Let the last `*` swallow one more character and retry.
                Some((sp, st)) => {
                    pi = sp + 1;
                    ti = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    #[test]
    fn matches() {
        assert!(glob_match("*", ""));
        assert!(glob_match("*", "anything"));
        assert!(glob_match("sys_enter_*", "sys_enter_read"));
        assert!(glob_match("syscalls:*read*", "syscalls:sys_exit_pread64"));
        assert!(glob_match("sched:sched_?witch", "sched:sched_switch"));
        assert!(glob_match("a*b*c", "aXbYbZc"));
        assert!(glob_match("exact", "exact"));
        assert!(!glob_match("exact", "exactly"));
        assert!(!glob_match("sys_enter_*", "sys_exit_read"));
        assert!(!glob_match("?", ""));
        assert!(!glob_match("a*b", "acbx"));
        assert!(glob_match("***", "x"));
    }
}
