//! `--sink SPEC`: where one of a query's outputs goes.
//!
//! - `-`: the terminal (stdout), in `--format` table, json or csv;
//! - a file path: the format from its extension (`.json`/`.jsonl`, `.csv`,
//!   `.parquet`, `.arrow`);
//! - `otlp+http://HOST:PORT` and `kafka://HOST:PORT/TOPIC`: planned (issue
//!   38 items 2–3), refused for now with a message that says so.
//!
//! Pure: a spec is parsed before anything is created or loaded.

use ebq::sink::FileFormat;
use std::path::PathBuf;

/// One parsed `--sink`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SinkSpec {
    /// stdout, in `--format`.
    Terminal,
    /// A file in the format its extension names.
    File { path: PathBuf, format: FileFormat },
}

impl SinkSpec {
    /// Parses `spec`; the error says what is wrong with it (the caller names
    /// the spec and where it was given: `--sink`, or a query's `sinks`).
    pub fn parse(spec: &str) -> Result<SinkSpec, String> {
        if spec == "-" {
            return Ok(SinkSpec::Terminal);
        }
        if spec.trim().is_empty() {
            return Err("empty; give `-` for the terminal or a file path such as rows.parquet".into());
        }
        if let Some((scheme, _)) = spec.split_once("://") {
            return Err(match scheme {
                "otlp+http" | "otlp" | "kafka" => format!(
                    "{scheme} sinks are not supported yet; write a file (rows.jsonl, rows.parquet) and ship it, \
                     or use `ebq serve` with [otlp] for aggregates"
                ),
                _ => format!("unknown scheme `{scheme}://`; a sink is `-`, a file path, otlp+http:// or kafka://"),
            });
        }
        let path = PathBuf::from(spec);
        let ext = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
        let format = match ext.as_deref() {
            Some("json" | "jsonl" | "ndjson") => FileFormat::Json,
            Some("csv") => FileFormat::Csv,
            Some("parquet") => FileFormat::Parquet,
            Some("arrow" | "arrows" | "ipc") => FileFormat::Arrow,
            Some(other) => {
                return Err(format!(
                    "cannot tell the format from `.{other}`; name the file .jsonl, .json, .csv, .parquet or .arrow"
                ))
            }
            None => {
                return Err(
                    "a file sink needs an extension that names its format: .jsonl, .json, .csv, .parquet or .arrow"
                        .into(),
                )
            }
        };
        Ok(SinkSpec::File { path, format })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_bad_ones_say_what_is_wrong() {
        assert_eq!(SinkSpec::parse("-"), Ok(SinkSpec::Terminal));
        let file = |p: &str, format| Ok(SinkSpec::File { path: p.into(), format });
        assert_eq!(SinkSpec::parse("out/rows.JSONL"), file("out/rows.JSONL", FileFormat::Json));
        assert_eq!(SinkSpec::parse("r.json"), file("r.json", FileFormat::Json));
        assert_eq!(SinkSpec::parse("r.csv"), file("r.csv", FileFormat::Csv));
        assert_eq!(SinkSpec::parse("/tmp/r.parquet"), file("/tmp/r.parquet", FileFormat::Parquet));
        assert_eq!(SinkSpec::parse("r.arrow"), file("r.arrow", FileFormat::Arrow));
        assert_eq!(
            SinkSpec::parse("rows.txt").unwrap_err(),
            "cannot tell the format from `.txt`; name the file .jsonl, .json, .csv, .parquet or .arrow"
        );
        assert!(SinkSpec::parse("rows").unwrap_err().starts_with("a file sink needs an extension"));
        assert!(SinkSpec::parse("").unwrap_err().starts_with("empty"));
        let kafka = SinkSpec::parse("kafka://127.0.0.1:9092/rows").unwrap_err();
        assert!(kafka.starts_with("kafka sinks are not supported yet"), "{kafka}");
        let otlp = SinkSpec::parse("otlp+http://127.0.0.1:4318").unwrap_err();
        assert!(otlp.contains("otlp+http sinks are not supported yet"), "{otlp}");
        assert!(SinkSpec::parse("s3://b/k.parquet").unwrap_err().contains("unknown scheme `s3://`"));
    }
}
