//! `errno_name(ret)` and `signal_name(sig)`: Linux's names for error and
//! signal numbers, given in user space when a value is printed.
//!
//! The value stays an integer in the kernel: a group key is the number
//! (`GROUP BY errno_name(ret)` groups by `ret`), a filter compares the number
//! (`WHERE errno_name(ret) = 'ENOENT'` binds to `ret = -2`), and the name is
//! looked up per group, as `syscall_name` and `dev_str` are
//! ([`super::PostExpr::LinuxName`]).

use crate::parse::Expr;
use sqlparser::ast::FunctionArgExpr;

/// Which of Linux's number-to-name tables a function reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinuxName {
    /// `errno_name`: a negative return such as `-2` → `ENOENT`.
    Errno,
    /// `signal_name`: a signal number such as `9` → `SIGKILL`.
    Signal,
}

/// Linux's errno names by number, 1 to 133, from the UAPI headers
/// `asm-generic/errno-base.h` and `asm-generic/errno.h` (as on x86, arm64 and
/// riscv; alpha, mips, parisc and sparc number some differently). Aliases
/// (`EWOULDBLOCK` = `EAGAIN`, `EDEADLOCK` = `EDEADLK`) leave 41 and 58 empty.
#[rustfmt::skip]
const ERRNO: [&str; 134] = [
    "", "EPERM", "ENOENT", "ESRCH", "EINTR", "EIO", "ENXIO", "E2BIG", "ENOEXEC", "EBADF", "ECHILD", "EAGAIN",
    "ENOMEM", "EACCES", "EFAULT", "ENOTBLK", "EBUSY", "EEXIST", "EXDEV", "ENODEV", "ENOTDIR", "EISDIR",
    "EINVAL", "ENFILE", "EMFILE", "ENOTTY", "ETXTBSY", "EFBIG", "ENOSPC", "ESPIPE", "EROFS", "EMLINK",
    "EPIPE", "EDOM", "ERANGE", "EDEADLK", "ENAMETOOLONG", "ENOLCK", "ENOSYS", "ENOTEMPTY", "ELOOP", "",
    "ENOMSG", "EIDRM", "ECHRNG", "EL2NSYNC", "EL3HLT", "EL3RST", "ELNRNG", "EUNATCH", "ENOCSI", "EL2HLT",
    "EBADE", "EBADR", "EXFULL", "ENOANO", "EBADRQC", "EBADSLT", "", "EBFONT", "ENOSTR", "ENODATA", "ETIME",
    "ENOSR", "ENONET", "ENOPKG", "EREMOTE", "ENOLINK", "EADV", "ESRMNT", "ECOMM", "EPROTO", "EMULTIHOP",
    "EDOTDOT", "EBADMSG", "EOVERFLOW", "ENOTUNIQ", "EBADFD", "EREMCHG", "ELIBACC", "ELIBBAD", "ELIBSCN",
    "ELIBMAX", "ELIBEXEC", "EILSEQ", "ERESTART", "ESTRPIPE", "EUSERS", "ENOTSOCK", "EDESTADDRREQ", "EMSGSIZE",
    "EPROTOTYPE", "ENOPROTOOPT", "EPROTONOSUPPORT", "ESOCKTNOSUPPORT", "EOPNOTSUPP", "EPFNOSUPPORT",
    "EAFNOSUPPORT", "EADDRINUSE", "EADDRNOTAVAIL", "ENETDOWN", "ENETUNREACH", "ENETRESET", "ECONNABORTED",
    "ECONNRESET", "ENOBUFS", "EISCONN", "ENOTCONN", "ESHUTDOWN", "ETOOMANYREFS", "ETIMEDOUT", "ECONNREFUSED",
    "EHOSTDOWN", "EHOSTUNREACH", "EALREADY", "EINPROGRESS", "ESTALE", "EUCLEAN", "ENOTNAM", "ENAVAIL",
    "EISNAM", "EREMOTEIO", "EDQUOT", "ENOMEDIUM", "EMEDIUMTYPE", "ECANCELED", "ENOKEY", "EKEYEXPIRED",
    "EKEYREVOKED", "EKEYREJECTED", "EOWNERDEAD", "ENOTRECOVERABLE", "ERFKILL", "EHWPOISON",
];

/// The kernel's own errnos, 512 to 531, from `include/linux/errno.h`: never
/// returned to a program, but seen at `raw_syscalls.sys_exit` before a
/// signal restarts the call (`ERESTARTSYS`).
#[rustfmt::skip]
const KERNEL_ERRNO: [&str; 20] = [
    "ERESTARTSYS", "ERESTARTNOINTR", "ERESTARTNOHAND", "ENOIOCTLCMD", "ERESTART_RESTARTBLOCK",
    "EPROBE_DEFER", "EOPENSTALE", "ENOPARAM", "", "EBADHANDLE", "ENOTSYNC", "EBADCOOKIE", "ENOTSUPP",
    "ETOOSMALL", "ESERVERFAULT", "EBADTYPE", "EJUKEBOX", "EIOCBQUEUED", "ERECALLCONFLICT", "ENOGRACE",
];

/// Linux's signal names by number, 1 to 31, from the UAPI header
/// `asm-generic/signal.h` (as on x86, arm64 and riscv).
#[rustfmt::skip]
const SIGNAL: [&str; 32] = [
    "", "SIGHUP", "SIGINT", "SIGQUIT", "SIGILL", "SIGTRAP", "SIGABRT", "SIGBUS", "SIGFPE", "SIGKILL",
    "SIGUSR1", "SIGSEGV", "SIGUSR2", "SIGPIPE", "SIGALRM", "SIGTERM", "SIGSTKFLT", "SIGCHLD", "SIGCONT",
    "SIGSTOP", "SIGTSTP", "SIGTTIN", "SIGTTOU", "SIGURG", "SIGXCPU", "SIGXFSZ", "SIGVTALRM", "SIGPROF",
    "SIGWINCH", "SIGIO", "SIGPWR", "SIGSYS",
];

/// Capacity of a name (for widths): the longest, `ERESTART_RESTARTBLOCK`, and room for a number.
pub const LINUX_NAME_CAP: u16 = 24;

impl LinuxName {
    /// The SQL function's name.
    pub fn function(self) -> &'static str {
        match self {
            LinuxName::Errno => "errno_name",
            LinuxName::Signal => "signal_name",
        }
    }

    /// What the argument is, for errors.
    pub fn argument(self) -> &'static str {
        match self {
            LinuxName::Errno => "a negative errno, such as a failed system call's `ret`",
            LinuxName::Signal => "a signal number",
        }
    }

    /// The function `name` is, if it is one of these.
    pub fn of_function(name: &str) -> Option<LinuxName> {
        [LinuxName::Errno, LinuxName::Signal].into_iter().find(|l| l.function().eq_ignore_ascii_case(name))
    }

    /// The name of `value`: `-2` → `ENOENT`, `9` → `SIGKILL`. A value with no
    /// name (`0`, a positive return, an unknown number) is the number as text,
    /// so groups stay apart and nothing is hidden.
    pub fn name(self, value: i64) -> String {
        let named = match self {
            LinuxName::Errno => value.checked_neg().and_then(errno),
            LinuxName::Signal => usize::try_from(value).ok().and_then(|n| SIGNAL.get(n)).copied(),
        };
        match named {
            Some(n) if !n.is_empty() => n.to_string(),
            _ => value.to_string(),
        }
    }

    /// The number named `name` (`ENOENT` → `-2`; `SIGKILL` or `KILL` → `9`), case-insensitively.
    pub fn value(self, name: &str) -> Option<i64> {
        let name = name.to_ascii_uppercase();
        match self {
            LinuxName::Errno => {
                let at = |table: &[&str]| table.iter().position(|n| !n.is_empty() && **n == name);
                at(&ERRNO).map(|i| -(i as i64)).or_else(|| at(&KERNEL_ERRNO).map(|i| -(512 + i as i64)))
            }
            LinuxName::Signal => {
                let full = if name.starts_with("SIG") { name } else { format!("SIG{name}") };
                SIGNAL.iter().position(|n| !n.is_empty() && *n == full).map(|i| i as i64)
            }
        }
    }

    /// Every name, for "did you mean".
    pub fn names(self) -> Vec<&'static str> {
        let all: Vec<&str> = match self {
            LinuxName::Errno => ERRNO.iter().chain(&KERNEL_ERRNO).copied().collect(),
            LinuxName::Signal => SIGNAL.to_vec(),
        };
        all.into_iter().filter(|n| !n.is_empty()).collect()
    }
}

fn errno(n: i64) -> Option<&'static str> {
    let n = usize::try_from(n).ok()?;
    ERRNO.get(n).or_else(|| KERNEL_ERRNO.get(n.checked_sub(512)?)).copied()
}

/// `errno_name(x)` or `signal_name(x)`: which, and `x`.
pub(super) fn named_arg(e: &Expr) -> Option<(LinuxName, &Expr)> {
    let Expr::Function(f) = e else { return None };
    let which = LinuxName::of_function(&f.name.to_string())?;
    match super::expr::function_args(f).as_slice() {
        [FunctionArgExpr::Expr(arg)] => Some((which, arg)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errno_names_are_linuxs() {
        assert_eq!(LinuxName::Errno.name(-2), "ENOENT");
        assert_eq!(LinuxName::Errno.name(-11), "EAGAIN");
        assert_eq!(LinuxName::Errno.name(-133), "EHWPOISON");
        assert_eq!(LinuxName::Errno.name(-512), "ERESTARTSYS");
        assert_eq!(LinuxName::Errno.name(-516), "ERESTART_RESTARTBLOCK");
        // Not an errno: the number, so groups stay apart.
        for v in [0, 5, -41, -134, -520, i64::MIN] {
            assert_eq!(LinuxName::Errno.name(v), v.to_string());
        }
        assert_eq!(LinuxName::Errno.value("ENOENT"), Some(-2));
        assert_eq!(LinuxName::Errno.value("enoent"), Some(-2));
        assert_eq!(LinuxName::Errno.value("ERESTARTSYS"), Some(-512));
        assert_eq!(LinuxName::Errno.value("ENOPE"), None);
        for n in LinuxName::Errno.names() {
            assert_eq!(LinuxName::Errno.name(LinuxName::Errno.value(n).unwrap()), n);
            assert!(n.len() <= LINUX_NAME_CAP as usize);
        }
    }

    #[test]
    fn signal_names_are_linuxs() {
        assert_eq!(LinuxName::Signal.name(9), "SIGKILL");
        assert_eq!(LinuxName::Signal.name(17), "SIGCHLD");
        assert_eq!(LinuxName::Signal.name(31), "SIGSYS");
        assert_eq!(LinuxName::Signal.name(0), "0");
        assert_eq!(LinuxName::Signal.name(34), "34");
        assert_eq!(LinuxName::Signal.value("SIGTERM"), Some(15));
        assert_eq!(LinuxName::Signal.value("term"), Some(15));
        assert_eq!(LinuxName::Signal.names().len(), 31);
    }
}
