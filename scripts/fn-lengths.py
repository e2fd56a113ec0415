#!/usr/bin/env python3
"""List every fn longer than N lines (default 80) in crates/*/src, test code left out.

Issue 36 item 5 asks for functions of at most ~80 lines; this is the table that
says which ones are over. A fn's length is from its `fn` line to its closing
brace. Test code does not count: files named tests.rs or under a tests/ folder,
and `#[cfg(test)] mod … { … }` blocks. Comments, strings and char literals are
blanked before braces are counted, so a `{` in a format string does not shift
the match. Usage: scripts/fn-lengths.py [--min N] [paths…]
"""
import glob
import os
import re
import sys

FN = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?(?:extern\s+\"[^\"]*\"\s+)?fn\s+(\w+)")


def blank(text):
    """The source with comments, strings and char literals replaced by spaces (newlines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif re.match(r'b?r(#*)"', text[i:i + 40]):
            m = re.match(r'b?r(#*)"', text[i:])
            close = '"' + m.group(1)
            j = text.find(close, i + m.end())
            j = n if j < 0 else j + len(close)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "'":
            # A char literal ('x', '\n', '\u{..}') or a lifetime ('a).
            m = re.match(r"'(?:\\u\{[0-9a-fA-F]+\}|\\.|[^\\'])'", text[i:])
            if m:
                out.append(" " * m.end())
                i += m.end()
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def test_ranges(lines):
    """Line ranges of `#[cfg(test)]` items (a mod block or a single fn)."""
    ranges = []
    for i, line in enumerate(lines):
        if line.strip().startswith("#[cfg(test)]"):
            end = block_end(lines, i)
            if end is not None:
                ranges.append((i, end))
    return ranges


def block_end(lines, start):
    """The line of the brace that closes the first `{` at or after `start`; None for `mod x;`."""
    depth, opened = 0, False
    for j in range(start, len(lines)):
        for ch in lines[j]:
            if ch == "{":
                depth, opened = depth + 1, True
            elif ch == "}":
                depth -= 1
                if opened and depth == 0:
                    return j
            elif ch == ";" and not opened and j > start:
                return None
    return None


def functions(path):
    with open(path, encoding="utf-8") as f:
        lines = blank(f.read()).split("\n")
    skip = test_ranges(lines)
    for i, line in enumerate(lines):
        m = FN.match(line)
        if not m or any(a <= i <= b for a, b in skip):
            continue
        end = block_end(lines, i)
        if end is not None:
            yield m.group(1), i + 1, end - i + 1


def main(argv):
    limit, paths = 80, []
    it = iter(argv)
    for arg in it:
        if arg == "--min":
            limit = int(next(it))
        else:
            paths.append(arg)
    if not paths:
        paths = sorted(glob.glob("crates/*/src/**/*.rs", recursive=True))
    rows = []
    for path in paths:
        parts = path.split(os.sep)
        if os.path.basename(path) == "tests.rs" or "tests" in parts[3:-1]:
            continue
        for name, line, length in functions(path):
            if length > limit:
                rows.append((length, f"{path}:{line}", name))
    rows.sort(key=lambda r: (-r[0], r[1]))
    for length, place, name in rows:
        print(f"{length:5d}  {place}  {name}")
    print(f"{len(rows)} fns over {limit} lines", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
