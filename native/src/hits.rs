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
//! (`patterns::without_lookaround`), which matches wherever the form does. Where a loose form
//! matches first, the line is declined: the form may or may not match there, and only where
//! it matches before the forms after it, or at the same place, can it be first.
//!
//! A line is read here when it is ASCII without \x1c-\x1f (Python's `\s` matches those, Rust's
//! does not).

use std::sync::{Arc, OnceLock};

use crate::patterns;
use crate::pyre::{self, Translated};

/// The name of the group holding form N (no Python group name of the catalogue starts so).
const FORM: &str = "hit_form_";
/// Ranks (faults/form.py `rank`): a generic form gives way to any of rank 0 matching the text;
/// the fallback, to any other.
const GENERIC: u8 = 1;
const FALLBACK: u8 = 2;

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

/// A form found and settled: what messages.py `_read_hit` reads of the form's own match, so
/// that Python need not run the form's regex again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settled {
    /// the form's index in the patterns given
    pub form: usize,
    /// where its match starts and ends (Python's `match.start()`, `match.end()`)
    pub start: usize,
    pub end: usize,
    /// the form's named groups (Python's `match.groupdict()`): name, and its span if it took part
    pub groups: Vec<(String, Option<(usize, usize)>)>,
}

/// What `Hits::settle` makes of a text from a position on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Settling {
    /// Python must search it.
    Declined,
    /// No form matches.
    Nothing,
    /// The form Python's `_hit` would read: the first found, or where that one has a rank
    /// (generic, the fallback), the first of the forms of a lower rank found anywhere after
    /// `position`.
    Form(Settled),
}

/// The forms' search: translated when made (an error for a pattern without even a loose
/// translation), compiled at the first line read.
pub struct Hits {
    pattern: String,
    /// per form: whether it is in the alternation exactly (not loosely)
    exact: Vec<bool>,
    /// per form: its rank (faults/form.py): 0 a writer's own words, 1 generic, FALLBACK;
    /// a form is read only where none of a lower rank matches
    ranks: Vec<u8>,
    /// the search of the forms of rank 0, and their indices among all, when some form has a
    /// rank (a generic form settles there; the fallback searches on in this one first)
    lower: Option<(Box<Hits>, Vec<usize>)>,
    compiled: OnceLock<Option<Arc<Compiled>>>,
}

struct Compiled {
    forms: Translated,
    /// (group index in `forms`, form index)
    groups: Vec<(usize, usize)>,
    /// per form: its named groups (index, name) and its lookaheads made into groups
    named: Vec<FormGroups>,
}

#[derive(Default)]
struct FormGroups {
    names: Vec<(usize, String)>,
    ahead: Vec<usize>,
}

impl Hits {
    /// `patterns`: the forms' Python patterns (compiled with `re.I`), in the order tried;
    /// `ranks`: per pattern, its form's rank (0 when missing).
    pub fn new(patterns: &[String], ranks: &[u8]) -> Result<Hits, String> {
        let ranks: Vec<u8> = (0..patterns.len())
            .map(|i| ranks.get(i).copied().unwrap_or(0))
            .collect();
        let lower = if ranks.iter().any(|&r| r > 0) {
            let kept: Vec<usize> = (0..patterns.len()).filter(|&i| ranks[i] == 0).collect();
            let chosen: Vec<String> = kept.iter().map(|&i| patterns[i].clone()).collect();
            Some((Box::new(Hits::new(&chosen, &[])?), kept))
        } else {
            None
        };
        let mut branches = Vec::new();
        let mut exact = Vec::new();
        for (index, pattern) in patterns.iter().enumerate() {
            let is_exact = pyre::translate(pattern).is_ok();
            let pattern = if is_exact {
                pattern.clone()
            } else {
                patterns::without_lookaround(pattern)?
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
            ranks,
            lower,
            compiled: OnceLock::new(),
        })
    }

    /// The compiled patterns (compiled at the first call); an error names what failed, and
    /// then every line is declined.
    pub fn ready(&self) -> Result<(), String> {
        if let Some((lower, _)) = &self.lower {
            lower.ready()?;
        }
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
            .collect::<Vec<_>>();
        let mut named: Vec<FormGroups> = Vec::new();
        named.resize_with(self.exact.len(), FormGroups::default);
        let mut current: Option<usize> = None;
        for (group, name) in forms.regex.capture_names().enumerate() {
            if let Some(&(_, form)) = groups.iter().find(|(g, _)| *g == group) {
                current = Some(form);
                continue;
            }
            let (Some(form), Some(name)) = (current, name) else {
                continue;
            };
            if name.starts_with(pyre::AHEAD) {
                named[form].ahead.push(group);
            } else {
                named[form].names.push((group, name.to_string()));
            }
        }
        Ok(Compiled {
            forms,
            groups,
            named,
        })
    }

    fn compiled(&self) -> Option<&Compiled> {
        let compiled =
            (self.compiled).get_or_init(|| patterns::shared(&self.pattern, || self.compile().ok()));
        compiled.as_deref()
    }

    /// The first form `text` holds from `position` on (Python's `str` index: a byte offset on
    /// the lines read here).
    pub fn first(&self, text: &str, position: usize) -> Found {
        match self.locate(text, position) {
            Located::Declined => Found::Declined,
            Located::Nothing => Found::Nothing,
            Located::Form { form, start, .. } => Found::Form { form, start },
        }
    }

    /// The form messages.py `_hit` reads in `text` from `position` on, with its match's end
    /// and named groups: Python's `find_hit` up to reading the message out of its quoting.
    pub fn settle(&self, text: &str, position: usize) -> Settling {
        let (mut form, mut start, mut locs) = match self.locate(text, position) {
            Located::Declined => return Settling::Declined,
            Located::Nothing => return Settling::Nothing,
            Located::Form { form, start, locs } => (form, start, locs),
        };
        if self.ranks[form] == FALLBACK {
            // The fallback is tried last (faults/catalogue.py), so no other form matches at or
            // before its start: the first other form after it reads the text, if one does (one
            // search more in the same alternation, not a search of its own).
            let mut from = start;
            loop {
                match self.locate(text, from + 1) {
                    Located::Declined => return Settling::Declined,
                    Located::Nothing => break,
                    Located::Form {
                        form: f, start: s, ..
                    } if self.ranks[f] == FALLBACK => from = s,
                    Located::Form {
                        form: f,
                        start: s,
                        locs: l,
                    } => {
                        (form, start, locs) = (f, s, l);
                        break;
                    }
                }
            }
        }
        if self.ranks[form] == GENERIC {
            if let Some((lower, kept)) = &self.lower {
                match lower.settle(text, position) {
                    Settling::Declined => return Settling::Declined,
                    Settling::Form(mut found) => {
                        found.form = kept[found.form];
                        return Settling::Form(found);
                    }
                    Settling::Nothing => {}
                }
            }
        }
        let Some(c) = self.compiled() else {
            return Settling::Declined;
        };
        let group = c.groups.iter().find(|(_, f)| *f == form).map(|&(g, _)| g);
        let Some(whole) = group.and_then(|g| locs.get(g)) else {
            return Settling::Declined; // never: the form's group took part
        };
        let named = &c.named[form];
        // Python's match ends where a lookahead made into a group starts, if one took part
        let end = named
            .ahead
            .iter()
            .find_map(|&g| locs.get(g).map(|(s, _)| s))
            .unwrap_or(whole.1);
        let groups = named
            .names
            .iter()
            .map(|(g, name)| (name.clone(), locs.get(*g)))
            .collect();
        Settling::Form(Settled {
            form,
            start,
            end,
            groups,
        })
    }

    fn locate(&self, text: &str, position: usize) -> Located {
        let b = text.as_bytes();
        let Some(c) = self.compiled() else {
            return Located::Declined;
        };
        if position > b.len() || !readable(b) {
            return Located::Declined;
        }
        // the lazy DFA first: most lines hold no form, and need no capture engine
        let regex = &c.forms.regex;
        if !regex.is_match_at(b, position) {
            return Located::Nothing;
        }
        let mut locs = regex.capture_locations();
        let Some(found) = regex.captures_read_at(&mut locs, b, position) else {
            return Located::Declined; // never: the search above matched
        };
        let form = c.groups.iter().find(|(g, _)| locs.get(*g).is_some());
        match form {
            Some(&(_, form)) if self.exact[form] => Located::Form {
                form,
                start: found.start(),
                locs,
            },
            _ => Located::Declined, // a loose form first: it may match there or not
        }
    }
}

/// `Found`, with the match's groups.
enum Located {
    Declined,
    Nothing,
    Form {
        form: usize,
        start: usize,
        locs: regex::bytes::CaptureLocations,
    },
}

/// Whether Rust's regexes read `b` as Python's do: ASCII without \x1c-\x1f.
fn readable(b: &[u8]) -> bool {
    b.iter().all(|&c| c < 0x1c || (0x20..0x80).contains(&c))
}

#[cfg(feature = "python")]
// PyO3 0.22's #[pymethods] expansion converts PyErr into PyErr (a false positive, fixed in 0.23)
#[allow(clippy::useless_conversion)]
pub mod python {
    use pyo3::exceptions::PyValueError;
    use pyo3::prelude::*;
    use pyo3::types::{PyDict, PyString};

    /// The form a text holds, settled in Rust (harmony_doctor/logs/messages.py `FormFound`):
    /// the form's index, where its match starts and ends, and its named groups.
    #[pyclass(frozen, get_all, module = "harmony_doctor._native")]
    pub struct FormFound {
        form: Option<usize>,
        start: usize,
        end: usize,
        groups: PyObject,
    }

    /// Which catalogue form a text holds first, and where (harmony_doctor/logs/messages.py
    /// `find_hit`): made of the forms' own patterns; `find` settles the form Python's `_hit`
    /// reads, with its match's end and groups, and calls nothing back.
    #[pyclass(frozen, module = "harmony_doctor._native")]
    pub struct Hits {
        inner: crate::hits::Hits,
        /// what `find` gives for a text where no form matches
        nothing: Py<FormFound>,
        read: std::sync::atomic::AtomicU64,
        declined: std::sync::atomic::AtomicU64,
    }

    #[pymethods]
    impl Hits {
        /// ValueError when a pattern has no translation, exact or loose (then Python searches).
        #[new]
        #[pyo3(signature = (*, patterns, ranks))]
        fn new(py: Python<'_>, patterns: Vec<String>, ranks: Vec<u8>) -> PyResult<Self> {
            let inner = crate::hits::Hits::new(&patterns, &ranks).map_err(PyValueError::new_err)?;
            let nothing = FormFound {
                form: None,
                start: 0,
                end: 0,
                groups: PyDict::new_bound(py).into_any().unbind(),
            };
            Ok(Hits {
                inner,
                nothing: Py::new(py, nothing)?,
                read: 0.into(),
                declined: 0.into(),
            })
        }

        /// The form Python's `_hit` reads in `text` from `position` on (`form` None: no form
        /// matches), or None where Rust declines and Python must search.
        #[pyo3(signature = (text, position=0))]
        fn find(
            &self,
            py: Python<'_>,
            text: &Bound<'_, PyString>,
            position: usize,
        ) -> PyResult<Option<Py<FormFound>>> {
            use crate::hits::Settling;
            use std::sync::atomic::Ordering::Relaxed;
            let Ok(s) = text.to_str() else {
                self.declined.fetch_add(1, Relaxed);
                return Ok(None);
            };
            let settled = match self.inner.settle(s, position) {
                Settling::Declined => {
                    self.declined.fetch_add(1, Relaxed);
                    return Ok(None);
                }
                Settling::Nothing => {
                    self.read.fetch_add(1, Relaxed);
                    return Ok(Some(self.nothing.clone_ref(py)));
                }
                Settling::Form(settled) => settled,
            };
            self.read.fetch_add(1, Relaxed);
            let groups = PyDict::new_bound(py);
            for (name, span) in &settled.groups {
                let value = span.map(|(a, b)| &s[a..b]);
                groups.set_item(name, value)?;
            }
            let found = FormFound {
                form: Some(settled.form),
                start: settled.start,
                end: settled.end,
                groups: groups.into_any().unbind(),
            };
            Ok(Some(Py::new(py, found)?))
        }

        /// (texts searched here, texts handed to Python) so far.
        fn counts(&self) -> (u64, u64) {
            use std::sync::atomic::Ordering::Relaxed;
            (self.read.load(Relaxed), self.declined.load(Relaxed))
        }
    }
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
        let h = Hits::new(&patterns.map(String::from), &[]).unwrap();
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
    fn settling_gives_the_span_python_matches_and_the_form_s_groups() {
        let h = hits();
        let Settling::Form(s) = h.settle("x unexpected token 5 y", 0) else {
            panic!("no form settled");
        };
        assert_eq!((s.form, s.start, s.end), (0, 2, 20));
        assert_eq!(s.groups, vec![("token".to_string(), Some((19, 20)))]);
        // a lookahead made into a group: Python's match ends where it starts
        let Settling::Form(s) = h.settle("Unknown recipient:  None", 0) else {
            panic!("no form settled");
        };
        assert_eq!((s.form, s.start, s.end), (4, 0, 18));
        assert_eq!(h.settle("nothing here", 0), Settling::Nothing);
        assert_eq!(
            h.settle("failed to parse tool call: x", 0),
            Settling::Declined
        );
    }

    #[test]
    fn a_generic_form_gives_way_to_a_specific_one_found_later() {
        let patterns = [r"bad\s*role", r"unknown\s*role:"].map(String::from);
        let h = Hits::new(&patterns, &[1, 0]).unwrap();
        h.ready().unwrap();
        let Settling::Form(s) = h.settle("bad role; Unknown role: x", 0) else {
            panic!("no form settled");
        };
        assert_eq!((s.form, s.start), (1, 10));
        let Settling::Form(s) = h.settle("bad role", 0) else {
            panic!("no form settled");
        };
        assert_eq!((s.form, s.start, s.end), (0, 0, 8));
    }

    #[test]
    fn the_fallback_gives_way_to_a_generic_form_and_that_to_a_specific_one() {
        let patterns = [r"HarmonyError:\s*\S", r"bad\s*role", r"unknown\s*role:"].map(String::from);
        let h = Hits::new(&patterns, &[2, 1, 0]).unwrap();
        h.ready().unwrap();
        let form = |text: &str| match h.settle(text, 0) {
            Settling::Form(s) => Some((s.form, s.start)),
            _ => None,
        };
        assert_eq!(form("HarmonyError: new words"), Some((0, 0)));
        assert_eq!(form("HarmonyError: bad role x"), Some((1, 14)));
        assert_eq!(
            form("HarmonyError: bad role; Unknown role: x"),
            Some((2, 24))
        );
        assert_eq!(form("HarmonyError: Unknown role: x"), Some((2, 14)));
        assert_eq!(form("no error"), None);
    }

    #[test]
    fn a_pattern_without_even_a_loose_translation_makes_none() {
        assert!(Hits::new(&[r"(a)\1".to_string()], &[]).is_err());
        assert!(Hits::new(&[r"(?<!a)b".to_string()], &[]).is_err()); // nothing exact
    }
}
