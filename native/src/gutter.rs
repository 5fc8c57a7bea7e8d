//! An exception group's `|` gutters and `+-` separators taken off a line's text, as
//! harmony_doctor/logs/lines.py `_strip_gutter_reference` does, with its own three patterns
//! (handed over when the reader is made, translated by crate::pyre).

use crate::pyre::{Deferred, Translated};

/// lines.py's gutter shapes, each matched at the text's start, compiled at their first use
/// (only a line holding `|` or `+` asks, and most logs have none).
pub struct Gutter {
    /// `_GUTTER_SEPARATOR`: a `+-` line, which holds no text.
    separator: Deferred,
    /// `_GUTTER_GROUP_HEAD`: the `+ ` before an exception group's own traceback.
    head: Deferred,
    /// `_GUTTER`: the bars before a sub-traceback's line.
    bars: Deferred,
}

impl Gutter {
    /// `patterns`: the separator's, the group head's and the bars' (an error names one
    /// without an exact translation, or a count other than three).
    pub fn new(patterns: &[String]) -> Result<Gutter, String> {
        let [separator, head, bars] = patterns else {
            return Err(format!("three gutter patterns, not {}", patterns.len()));
        };
        Ok(Gutter {
            separator: Deferred::new(separator, true)?,
            head: Deferred::new(head, true)?,
            bars: Deferred::new(bars, true)?,
        })
    }

    /// Where the text starts in `rest` (`rest.len()`: a separator, no text), and whether a
    /// gutter was taken off (lines.py `_strip_gutter_reference`); None (declined: Python reads
    /// the line) where a shape does not compile.
    pub fn strip(&self, rest: &[u8]) -> Option<(usize, bool)> {
        if self.separator.get()?.regex.is_match(rest) {
            return Some((rest.len(), true));
        }
        let mut at = 0;
        if let Some(end) = matched_end(self.head.get()?, rest) {
            at = end;
        }
        Some(match matched_end(self.bars.get()?, &rest[at..]) {
            Some(end) => (at + end, true),
            None => (at, false),
        })
    }
}

/// Where Python's match of `pattern` at the start of `text` ends, if it matches.
fn matched_end(pattern: &Translated, text: &[u8]) -> Option<usize> {
    let mut locs = pattern.regex.capture_locations();
    pattern.regex.captures_read(&mut locs, text)?;
    pattern.end(&locs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gutter() -> Gutter {
        let patterns = [
            r"^\s*\+-",
            r"^\s*\+ (?=Exception Group Traceback)",
            r"^\s*\|(?:\s+\|)*(?=\s|$)",
        ];
        Gutter::new(&patterns.map(String::from)).unwrap()
    }

    #[test]
    fn strips_what_lines_py_strips() {
        let g = gutter();
        let cases: [(&str, (usize, bool)); 7] = [
            ("+---------------- 1 ----------------", (36, true)),
            (
                "+ Exception Group Traceback (most recent call last):",
                (2, false),
            ),
            ("| Traceback (most recent call last):", (1, true)),
            ("  |   | ValueError: x", (7, true)),
            ("| |x", (1, true)),
            ("||| x", (0, false)),
            ("plain text", (0, false)),
        ];
        for (rest, want) in cases {
            assert_eq!(g.strip(rest.as_bytes()), Some(want), "{rest:?}");
        }
    }

    #[test]
    fn needs_three_patterns() {
        assert!(Gutter::new(&[r"^\+".to_string()]).is_err());
    }
}
