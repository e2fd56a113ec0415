//! Event names in their accepted spellings.
//!
//! ```text
//! tracepoint:syscalls:sys_enter_read   syscalls.sys_enter_read   tracepoint/syscalls/sys_enter_read
//! tp:syscalls:sys_enter_read           syscalls:sys_enter_read (as `ebq events` lists them)
//! uprobe:/usr/lib/libc.so.6:read       uretprobe:/bin/x:main
//! kprobe:vfs_read   kretprobe:vfs_read   fentry:vfs_read   fexit:vfs_read
//! usdt:/usr/lib/postgresql/15/bin/postgres:postgresql:smgr__md__read__start
//! usdt:BINARY:NAME (any provider)
//! profile:hz:99 (every CPU)   interval:ms:100 (one CPU)
//! ```

use std::fmt;

/// Which kind of probe an event is.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum EventName {
    /// A tracefs tracepoint.
    Tracepoint {
        /// Category directory (`syscalls`).
        category: String,
        /// Event name (`sys_enter_read`).
        name: String,
    },
    /// A user-space function entry (`ret == false`) or return.
    Uprobe {
        /// Path of the executable or shared object.
        path: String,
        /// Symbol name, or a list of them in braces (`{open,close}`): one event
        /// over several functions of the binary, each call with its position in
        /// the list as the `func` column ([`uprobe_symbols`]).
        symbol: String,
        /// True for uretprobe.
        ret: bool,
    },
    /// A USDT (`<sys/sdt.h>`) probe of a binary: every site of that name.
    Usdt {
        /// Path or library name of the binary.
        path: String,
        /// Provider; `None` matches any (`usdt:BINARY:NAME`).
        provider: Option<String>,
        /// Probe name (may hold `*` in `ebq events`).
        name: String,
    },
    /// A timer: `profile:hz:N` samples every CPU N times a second,
    /// `interval:ms:N` fires on one CPU every N ms (perf's software cpu-clock).
    Timer {
        /// True for `profile` (every CPU), false for `interval` (one CPU).
        profile: bool,
        /// `hz` or `ms`.
        unit: TimerUnit,
        /// How many per second (`hz`) or how many ms apart (`ms`).
        n: u64,
    },
    /// A kernel function entry or return through kprobes.
    Kprobe {
        /// Kernel function.
        function: String,
        /// True for kretprobe.
        ret: bool,
    },
    /// A kernel function entry or exit through BPF trampolines.
    Fentry {
        /// Kernel function.
        function: String,
        /// True for fexit.
        exit: bool,
    },
}

/// ebq's own events (`catalog::expand`), `(category, name)`: no tracepoint
/// has their names, so they are written and printed `aio.submit`, never
/// `tracepoint:aio:submit`.
pub const EXPANDING_EVENTS: [(&str, &str); 2] = [("aio", "submit"), ("aio", "complete")];

/// The unit of a timer's number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TimerUnit {
    /// Times per second.
    Hz,
    /// Milliseconds between firings.
    Ms,
}

impl fmt::Display for EventName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // ebq's own events (no tracepoint of that name exists) as they are written.
            EventName::Tracepoint { category, name }
                if EXPANDING_EVENTS.contains(&(category.as_str(), name.as_str())) =>
            {
                write!(f, "{category}.{name}")
            }
            EventName::Tracepoint { category, name } => write!(f, "tracepoint:{category}:{name}"),
            EventName::Uprobe { path, symbol, ret } => {
                write!(f, "{}:{path}:{symbol}", if *ret { "uretprobe" } else { "uprobe" })
            }
            EventName::Kprobe { function, ret } => {
                write!(f, "{}:{function}", if *ret { "kretprobe" } else { "kprobe" })
            }
            EventName::Usdt { path, provider: Some(p), name } => write!(f, "usdt:{path}:{p}:{name}"),
            EventName::Usdt { path, provider: None, name } => write!(f, "usdt:{path}:{name}"),
            EventName::Timer { profile, unit, n } => write!(
                f,
                "{}:{}:{n}",
                if *profile { "profile" } else { "interval" },
                if *unit == TimerUnit::Hz { "hz" } else { "ms" }
            ),
            EventName::Fentry { function, exit } => {
                write!(f, "{}:{function}", if *exit { "fexit" } else { "fentry" })
            }
        }
    }
}

/// The functions of a uprobe's `symbol`: itself, or the names of a `{a,b}` list.
pub fn uprobe_symbols(symbol: &str) -> Vec<&str> {
    match symbol.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
        Some(list) => list.split(',').map(str::trim).collect(),
        None => vec![symbol],
    }
}

/// A `{a,b,…}` list of distinct function names.
fn is_symbol_list(s: &str) -> bool {
    let names = uprobe_symbols(s);
    s.starts_with('{')
        && names.iter().all(|n| is_ident(n))
        && names.iter().enumerate().all(|(i, n)| !names[..i].contains(n))
}

fn is_ident(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '-')
}

/// Parses an event name; `Err` carries a message saying which forms are accepted.
pub fn parse_event_name(text: &str) -> Result<EventName, String> {
    let bad = |why: &str| {
        Err(format!(
            "{why} in event `{text}`; expected tracepoint:CATEGORY:NAME, CATEGORY:NAME, CATEGORY.NAME, \
             tracepoint/CATEGORY/NAME, uprobe:PATH:SYMBOL, uretprobe:PATH:SYMBOL, uprobe:PATH:{{SYM1,SYM2,…}}, usdt:PATH:PROVIDER:NAME, usdt:PATH:NAME, profile:hz:N, interval:ms:N, kprobe:FUNC or fentry:FUNC"
        ))
    };
    if let Some((kind, rest)) = text.split_once(':') {
        return match kind {
            "tracepoint" | "tp" | "t" => match rest.split_once(':') {
                Some((c, n)) if is_ident(c) && is_ident(n) => {
                    Ok(EventName::Tracepoint { category: c.into(), name: n.into() })
                }
                _ => bad("malformed tracepoint"),
            },
            "uprobe" | "uretprobe" | "u" | "ur" => match rest.rsplit_once(':') {
                Some((path, sym)) if !path.is_empty() && (is_ident(sym) || is_symbol_list(sym)) => {
                    Ok(EventName::Uprobe { path: path.into(), symbol: sym.into(), ret: kind.starts_with("ur") })
                }
                _ => bad("malformed uprobe"),
            },
            "profile" | "interval" => {
                let unit = match rest.split_once(':') {
                    Some(("hz", n)) => n.parse().ok().map(|n| (TimerUnit::Hz, n)),
                    Some(("ms", n)) => n.parse().ok().map(|n| (TimerUnit::Ms, n)),
                    _ => None,
                };
                match unit {
                    Some((unit, n)) if n > 0 => Ok(EventName::Timer { profile: kind == "profile", unit, n }),
                    _ => bad(&format!("malformed {kind} event (`{kind}:hz:N` or `{kind}:ms:N`, N > 0)")),
                }
            }
            "usdt" | "U" => {
                // PATH:PROVIDER:NAME or PATH:NAME (bpftrace's forms); the path is what precedes them.
                let parts: Vec<&str> = rest.rsplitn(3, ':').collect();
                let probe =
                    |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "_.-*".contains(c));
                match parts[..] {
                    [name, provider, path] if !path.is_empty() && probe(name) && is_ident(provider) => {
                        Ok(EventName::Usdt { path: path.into(), provider: Some(provider.into()), name: name.into() })
                    }
                    [name, path] if !path.is_empty() && probe(name) => {
                        Ok(EventName::Usdt { path: path.into(), provider: None, name: name.into() })
                    }
                    _ => bad("malformed usdt probe"),
                }
            }
            "kprobe" | "kretprobe" | "k" | "kr" if is_ident(rest) => {
                Ok(EventName::Kprobe { function: rest.into(), ret: kind.starts_with("kr") })
            }
            "fentry" | "fexit" | "f" | "fr" if is_ident(rest) => {
                Ok(EventName::Fentry { function: rest.into(), exit: kind == "fexit" || kind == "fr" })
            }
            // CATEGORY:NAME, the spelling of `ebq events` and of bpftrace's
            // tracepoints without their `tracepoint:` prefix.
            _ if is_ident(kind) && is_ident(rest) => {
                Ok(EventName::Tracepoint { category: kind.into(), name: rest.into() })
            }
            _ => bad(&format!("unknown probe type `{kind}`")),
        };
    }
    let parts: Vec<&str> = if text.contains('/') { text.split('/').collect() } else { text.split('.').collect() };
    match parts.as_slice() {
        ["tracepoint" | "tp", c, n] | [c, n] if is_ident(c) && is_ident(n) => {
            Ok(EventName::Tracepoint { category: (*c).into(), name: (*n).into() })
        }
        _ => bad("malformed event name"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(c: &str, n: &str) -> EventName {
        EventName::Tracepoint { category: c.into(), name: n.into() }
    }

    #[test]
    fn all_tracepoint_spellings_agree() {
        for s in [
            "tracepoint:syscalls:sys_enter_read",
            "tp:syscalls:sys_enter_read",
            "syscalls.sys_enter_read",
            "tracepoint/syscalls/sys_enter_read",
            "syscalls/sys_enter_read",
            "syscalls:sys_enter_read",
        ] {
            assert_eq!(parse_event_name(s).unwrap(), tp("syscalls", "sys_enter_read"), "{s}");
        }
    }

    #[test]
    fn a_uprobe_names_a_list_of_functions_in_braces() {
        let e = parse_event_name("uprobe:/usr/lib/libmpich.so.12:{MPI_File_open,MPI_File_close}").unwrap();
        let EventName::Uprobe { symbol, .. } = &e else { panic!("{e:?}") };
        assert_eq!(uprobe_symbols(symbol), ["MPI_File_open", "MPI_File_close"]);
        assert_eq!(e.to_string(), "uprobe:/usr/lib/libmpich.so.12:{MPI_File_open,MPI_File_close}");
        for bad in ["uprobe:libc:{read,,write}", "uprobe:libc:{read,read}", "uprobe:libc:{}", "uprobe:libc:{read"] {
            assert!(parse_event_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn probes() {
        assert_eq!(
            parse_event_name("uretprobe:/usr/lib/x86_64-linux-gnu/libc.so.6:pread64").unwrap(),
            EventName::Uprobe {
                path: "/usr/lib/x86_64-linux-gnu/libc.so.6".into(),
                symbol: "pread64".into(),
                ret: true
            }
        );
        assert_eq!(
            parse_event_name("kprobe:vfs_read").unwrap(),
            EventName::Kprobe { function: "vfs_read".into(), ret: false }
        );
        assert_eq!(
            parse_event_name("fexit:vfs_read").unwrap(),
            EventName::Fentry { function: "vfs_read".into(), exit: true }
        );
        assert_eq!(
            parse_event_name("usdt:/usr/bin/postgres:postgresql:smgr__md__read__start").unwrap(),
            EventName::Usdt {
                path: "/usr/bin/postgres".into(),
                provider: Some("postgresql".into()),
                name: "smgr__md__read__start".into()
            }
        );
        assert_eq!(
            parse_event_name("usdt:./t:fire").unwrap(),
            EventName::Usdt { path: "./t".into(), provider: None, name: "fire".into() }
        );
        for s in ["usdt:/bin/x:p:fire", "usdt:./t:fire"] {
            assert_eq!(parse_event_name(s).unwrap().to_string(), s);
        }
        assert_eq!(
            parse_event_name("profile:hz:99").unwrap(),
            EventName::Timer { profile: true, unit: TimerUnit::Hz, n: 99 }
        );
        assert_eq!(parse_event_name("interval:ms:100").unwrap().to_string(), "interval:ms:100");
        for bad in ["profile:hz:0", "profile:hz", "interval:s:1", "profile:hz:x"] {
            assert!(parse_event_name(bad).is_err(), "{bad}");
        }
        assert!(parse_event_name("usdt::x").is_err() && parse_event_name("usdt:/bin/x:").is_err());
    }

    #[test]
    fn malformed_names_are_errors() {
        for s in ["tracepoint:syscalls", "bogus:/x:y", "a.b.c", "uprobe:/bin/ls:", "kprobe:", "x", "a:b:c"] {
            assert!(parse_event_name(s).is_err(), "{s}");
        }
    }
}
