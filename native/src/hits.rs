//! Which failure form a line holds first, and where: harmony_doctor/logs/messages.py
//! `find_hit`'s search, on the lines Rust reads exactly as Python does; every other line is
//! declined and Python searches it.
//!
//! The forms are the one catalogue's patterns (faults/catalogue.py, case-insensitive), handed
//! over in the order they are tried and translated (crate::pyre). All of them in one
//! alternation, each a group of its own: the leftmost match, and on a tie the first form, is
//! what trying them one by one and keeping the earliest start gives. A form whose pattern has
//! no exact translation (a lookbehind, a negative lookahead) takes its place in the
//! alternation loosely: its pattern with the lookarounds taken out
//! (`pyre::without_lookaround`), which matches wherever the form does. Where a loose form
//! matches first, the line is declined: the form may or may not match there, and only where
//! it matches before the forms after it, or at the same place, can it be first.
//!
//! A line is read here when it is ASCII without \x1c-\x1f (Python's `\s` matches those, Rust's
//! does not).

use std::sync::{Arc, OnceLock};

use crate::pyre::{self, Translated};

/// The name of the group holding form N (no Python group name of the catalogue starts so).
const FORM: &str = "hit_form_";

/// What a line holds from a position on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// Python must search it.
    Declined,
    /// No form matches.
    Nothing,
    /// The first form that matches (its index in the patterns given) and where its match starts.
    Form { form: usize, start: usize },
}

/// The forms' search: translated when made (an error for a pattern without even a loose
/// translation), compiled at the first line read.
pub struct Hits {
    pattern: String,
    /// per form: whether it is in the alternation exactly (not loosely)
    exact: Vec<bool>,
    compiled: OnceLock<Option<Arc<Compiled>>>,
}

struct Compiled {
    forms: Translated,
    /// (group index in `forms`, form index)
    groups: Vec<(usize, usize)>,
}

impl Hits {
    /// `patterns`: the forms' Python patterns (compiled with `re.I`), in the order tried.
    pub fn new(patterns: &[String]) -> Result<Hits, String> {
        let mut branches = Vec::new();
        let mut exact = Vec::new();
        for (index, pattern) in patterns.iter().enumerate() {
            let is_exact = pyre::translate(pattern).is_ok();
            let pattern = if is_exact {
                pattern.clone()
            } else {
                pyre::without_lookaround(pattern)?
            };
            branches.push(format!("(?P<{FORM}{index}>{pattern})"));
            exact.push(is_exact);
        }
        if !exact.contains(&true) {
            return Err("no form has an exact translation".to_string());
        }
        let pattern = format!("(?i:{})", branches.join("|"));
        pyre::translate(&pattern)?;
        Ok(Hits {
            pattern,
            exact,
            compiled: OnceLock::new(),
        })
    }

    /// The compiled patterns (compiled at the first call); an error names what failed, and
    /// then every line is declined.
    pub fn ready(&self) -> Result<(), String> {
        match self.compiled() {
            Some(_) => Ok(()),
            None => self.compile().map(|_| ()),
        }
    }

    fn compile(&self) -> Result<Compiled, String> {
        let forms = Translated::new(&self.pattern, false)?;
        let groups = forms
            .regex
            .capture_names()
            .enumerate()
            .filter_map(|(group, name)| {
                let form = name?.strip_prefix(FORM)?.parse::<usize>().ok()?;
                Some((group, form))
            })
            .collect();
        Ok(Compiled { forms, groups })
    }

    fn compiled(&self) -> Option<&Compiled> {
        let compiled =
            (self.compiled).get_or_init(|| pyre::shared(&self.pattern, || self.compile().ok()));
        compiled.as_deref()
    }

    /// The first form `text` holds from `position` on (Python's `str` index: a byte offset on
    /// the lines read here).
    pub fn first(&self, text: &str, position: usize) -> Found {
        let b = text.as_bytes();
        let Some(c) = self.compiled() else {
            return Found::Declined;
        };
        if position > b.len() || !readable(b) {
            return Found::Declined;
        }
        // the lazy DFA first: most lines hold no form, and need no capture engine
        let regex = &c.forms.regex;
        if !regex.is_match_at(b, position) {
            return Found::Nothing;
        }
        let mut locs = regex.capture_locations();
        let Some(found) = regex.captures_read_at(&mut locs, b, position) else {
            return Found::Declined; // never: the search above matched
        };
        let form = c.groups.iter().find(|(g, _)| locs.get(*g).is_some());
        match form {
            Some(&(_, form)) if self.exact[form] => Found::Form {
                form,
                start: found.start(),
            },
            _ => Found::Declined, // a loose form first: it may match there or not
        }
    }
}

/// Whether Rust's regexes read `b` as Python's do: ASCII without \x1c-\x1f.
fn readable(b: &[u8]) -> bool {
    b.iter().all(|&c| c < 0x1c || (0x20..0x80).contains(&c))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hits() -> Hits {
        let patterns = [
            r"unexpected\s*token\s*(?P<token>\d+|N)\b",
            r"unknown\s*role:",
            r"failed\s*to\s*parse\s*tool\s*call(?!\s*arguments\b)",
            r"failed\s*to\s*parse\s*tool\s*call\s*arguments",
            r"unknown\s*recipient:(?=\s*(?:None\b|<\|))",
            r"(?<![;,.:]\s)(?<![;,.:])returning\s*the\s*raw",
        ];
        let h = Hits::new(&patterns.map(String::from)).unwrap();
        h.ready().unwrap();
        h
    }

    #[test]
    fn the_earliest_form_wins_and_the_first_on_a_tie() {
        let h = hits();
        assert_eq!(
            h.first("x Unknown role: y, unexpected token 5 ", 0),
            Found::Form { form: 1, start: 2 }
        );
        assert_eq!(
            h.first("x Unknown role: y, unexpected token 5 ", 3),
            Found::Form { form: 0, start: 19 }
        );
        assert_eq!(
            h.first("UNEXPECTED TOKEN N", 0),
            Found::Form { form: 0, start: 0 }
        );
        assert_eq!(h.first("unexpected token 5x", 0), Found::Nothing);
        assert_eq!(h.first("", 0), Found::Nothing);
    }

    #[test]
    fn a_trailing_lookahead_is_exact() {
        let h = hits();
        assert_eq!(h.first("Unknown recipient: bob", 0), Found::Nothing);
        assert_eq!(
            h.first("Unknown recipient:  None", 0),
            Found::Form { form: 4, start: 0 }
        );
    }

    #[test]
    fn a_form_left_out_declines_where_it_may_match_first() {
        let h = hits();
        // the negative lookahead's form may match: declined, whichever it is
        assert_eq!(h.first("failed to parse tool call: x", 0), Found::Declined);
        assert_eq!(
            h.first("failed to parse tool call arguments", 0),
            Found::Declined
        );
        // it can only match after a form found earlier: that one is first
        assert_eq!(
            h.first("Unknown role: x; failed to parse tool call", 0),
            Found::Form { form: 1, start: 0 }
        );
        assert_eq!(h.first("ok; returning the raw", 0), Found::Declined);
    }

    #[test]
    fn declines_what_python_may_read_otherwise() {
        let h = hits();
        for text in ["Unknown role: caf\u{e9}", "unknown\x1crole:", "x"] {
            let position = if text == "x" { 2 } else { 0 };
            assert_eq!(h.first(text, position), Found::Declined, "{text:?}");
        }
    }

    #[test]
    fn a_pattern_without_even_a_loose_translation_makes_none() {
        assert!(Hits::new(&[r"(a)\1".to_string()]).is_err());
        assert!(Hits::new(&[r"(?<!a)b".to_string()]).is_err()); // nothing exact
    }
}
