//! Durations as people type them: `1.5` (seconds), `500ms`, `1s`, `2m`, `1h`.
//! One reader for `--duration`, `--interval` and `ebq serve`'s config file.

/// Units a duration may end in, with their length in seconds; `ms` before `s`
/// and `m` so the longest suffix wins.
const UNITS: [(&str, f64); 4] = [("ms", 1e-3), ("s", 1.0), ("m", 60.0), ("h", 3600.0)];

/// Parses a duration into seconds; `Err` says what is accepted.
pub fn parse(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let (number, scale) =
        UNITS.iter().find_map(|(u, scale)| t.strip_suffix(u).map(|n| (n, *scale))).unwrap_or((t, 1.0));
    match number.trim().parse::<f64>() {
        Ok(n) if n.is_finite() => Ok(n * scale),
        _ => Err(format!("`{t}` is not a duration: give seconds (1.5) or a number with a unit (500ms, 1s, 2m, 1h)")),
    }
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn numbers_and_units() {
        assert_eq!(parse("1.5"), Ok(1.5));
        assert_eq!(parse("1s"), Ok(1.0));
        assert_eq!(parse("500ms"), Ok(0.5));
        assert_eq!(parse("2m"), Ok(120.0));
        assert_eq!(parse(" 1h "), Ok(3600.0));
        assert_eq!(
            parse("5 minutes"),
            Err("`5 minutes` is not a duration: give seconds (1.5) or a number with a unit (500ms, 1s, 2m, 1h)".into())
        );
        assert!(parse("ms").is_err() && parse("nan").is_err() && parse("inf").is_err());
    }
}
