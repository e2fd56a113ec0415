//! `reload_on_change`: reload when the configuration file's content changed.
//!
//! A Kubernetes ConfigMap mounted as a volume is updated in place by the
//! kubelet (an atomic symlink swap, within about a minute of `kubectl apply`)
//! and nothing signals the process. A sidecar sending SIGHUP would need
//! `shareProcessNamespace`, which Kubernetes refuses beside the `hostPID`
//! ebq needs; so the daemon looks itself: every interval it reads the file
//! (a few kilobytes) and compares it with what it read last. A change
//! reloads exactly as SIGHUP does: unchanged queries keep running with their
//! totals.

use std::time::{Duration, Instant};

/// Watches one file's content.
#[derive(Debug)]
pub struct ConfigWatch {
    path: String,
    every: Duration,
    next: Instant,
    /// The content last read (`None`: unreadable then).
    seen: Option<Vec<u8>>,
}

impl ConfigWatch {
    /// Starts watching `path`, whose content now is the baseline.
    pub fn new(path: &str, every: Duration) -> ConfigWatch {
        ConfigWatch { path: path.into(), every, next: Instant::now() + every, seen: std::fs::read(path).ok() }
    }

    /// Whether the content differs from the last read, checked at most once
    /// per interval. An unreadable file (mid-update) is no change.
    pub fn changed(&mut self) -> bool {
        if Instant::now() < self.next {
            return false;
        }
        self.next = Instant::now() + self.every;
        self.refresh()
    }

    /// Reads the file now (after a SIGHUP reload, so the same change does not
    /// reload twice); whether it differed.
    pub fn refresh(&mut self) -> bool {
        match std::fs::read(&self.path) {
            Ok(now) if self.seen.as_ref() != Some(&now) => {
                self.seen = Some(now);
                true
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_is_seen_once_and_an_unreadable_file_is_no_change() {
        let path = std::env::temp_dir().join(format!("ebq-watch-{}.toml", std::process::id()));
        let p = path.to_str().unwrap();
        std::fs::write(&path, "a").unwrap();
        let mut w = ConfigWatch::new(p, Duration::from_secs(3600));
        assert!(!w.refresh(), "same content");
        std::fs::write(&path, "b").unwrap();
        assert!(w.refresh());
        assert!(!w.refresh(), "seen already");
        std::fs::remove_file(&path).unwrap();
        assert!(!w.refresh(), "unreadable");
        std::fs::write(&path, "b").unwrap();
        assert!(!w.refresh(), "back as it was");
        std::fs::write(&path, "c").unwrap();
        let mut hourly = ConfigWatch::new(p, Duration::from_secs(3600));
        std::fs::write(&path, "d").unwrap();
        assert!(!hourly.changed(), "not looked at before its interval");
        assert!(hourly.refresh());
        std::fs::remove_file(&path).unwrap();
    }
}
