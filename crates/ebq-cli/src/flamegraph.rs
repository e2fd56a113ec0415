//! `--format flamegraph -o FILE.svg`: the folded stacks of the run
//! ([`FoldedSink`]) drawn as an interactive SVG by the inferno crate (the
//! Rust port of flamegraph.pl), written when the query finishes.

use ebq::sink::{FoldedSink, Sink};
use ebq::Output;
use std::io;
use std::path::PathBuf;

/// Collects folded stacks, then renders them to `path`.
pub struct FlamegraphSink {
    folded: FoldedSink<io::Sink>,
    path: PathBuf,
    title: String,
}

impl FlamegraphSink {
    /// A sink that will write the SVG to `path` (created now, so a bad path fails before the query runs).
    pub fn create(path: PathBuf, title: &str) -> io::Result<FlamegraphSink> {
        std::fs::File::create(&path)?;
        Ok(FlamegraphSink { folded: FoldedSink::new(io::sink()), path, title: title.to_string() })
    }
}

impl Sink for FlamegraphSink {
    fn write(&mut self, out: &Output) -> io::Result<()> {
        self.folded.write(out)
    }

    fn finish(&mut self) -> io::Result<()> {
        let lines: Vec<String> = self.folded.stacks().iter().map(|(s, n)| format!("{s} {n}")).collect();
        let file = io::BufWriter::new(std::fs::File::create(&self.path)?);
        let mut options = inferno::flamegraph::Options::default();
        options.title = self.title.clone();
        options.count_name = "samples".into();
        if lines.is_empty() {
            // inferno refuses an empty profile; an empty graph still says so.
            options.title = format!("{} (no samples)", self.title);
            return inferno::flamegraph::from_lines(&mut options, ["(none) 0"].iter().copied(), file)
                .map_err(io::Error::other);
        }
        inferno::flamegraph::from_lines(&mut options, lines.iter().map(String::as_str), file).map_err(io::Error::other)
    }
}
