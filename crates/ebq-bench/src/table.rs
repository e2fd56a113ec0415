//! Plain tables for the terminal and Markdown.

/// An aligned text table (first column left, the rest right-aligned).
pub fn text(header: &[&str], rows: &[Vec<String>]) -> String {
    let n = header.len();
    let mut w: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate().take(n) {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let line = |cells: Vec<&str>| -> String {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            let pad = w[i].saturating_sub(c.chars().count());
            if i == 0 {
                s += &format!("{c}{}", " ".repeat(pad));
            } else {
                s += &format!("  {}{c}", " ".repeat(pad));
            }
        }
        s.trim_end().to_string() + "\n"
    };
    let mut s = line(header.to_vec());
    s += &line(w.iter().map(|&x| "-".repeat(x)).collect::<Vec<_>>().iter().map(|s| s.as_str()).collect());
    for r in rows {
        s += &line(r.iter().map(|c| c.as_str()).collect());
    }
    s
}

/// A Markdown table (first column left, the rest right-aligned).
pub fn markdown(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut s = format!("| {} |\n|", header.join(" | "));
    for i in 0..header.len() {
        s += if i == 0 { "---|" } else { "---:|" };
    }
    s.push('\n');
    for r in rows {
        s += &format!("| {} |\n", r.iter().map(|c| c.replace('|', "\\|")).collect::<Vec<_>>().join(" | "));
    }
    s
}

/// A number with `digits` decimals, or "—" when absent.
pub fn num(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "—".to_string(), |x| format!("{x:.digits$}"))
}
