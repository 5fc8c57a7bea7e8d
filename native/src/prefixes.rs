//! A line's record prefixes (harmony_doctor/logs/lines.py `_ANY_PREFIX_READ`): each shape's
//! branch of the prefixes' alternation on its own, and the reads remembered by the bytes that
//! decide them (crate::anatomy finds the alternation's match, then asks here what it read).

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use crate::patterns;
use crate::pyre::{Deferred, Translated};

/// The names of one prefix shape's groups in the prefixes' pattern (Python's `shape_3`,
/// `key_3`, ...): the shape's own group, and its key, time and pid groups where it has them.
pub struct ShapeNames {
    pub shape: String,
    pub key: Option<String>,
    pub ts: Option<String>,
    pub pid: Option<String>,
}

/// One prefix shape's group names as Python hands them: its own, its key's, time's and pid's.
pub type ShapeGroups = (String, Option<String>, Option<String>, Option<String>);

/// One prefix shape: its branch of the prefixes' pattern alone (a small pattern whose captures
/// cost a fraction of the whole alternation's), compiled when a line first needs it (the
/// shapes after the first that matches a log's lines are never tried), and its groups' names.
struct Shape {
    regex: Deferred,
    key: Option<String>,
    ts: Option<String>,
    pid: Option<String>,
    compiled: OnceLock<Option<Groups>>,
}

/// A shape's groups in its branch compiled.
struct Groups {
    key: Option<usize>,
    ts: Option<usize>,
    pid: Option<usize>,
}

impl Shape {
    /// The branch compiled (at the first call) and its groups, or None where it does not
    /// compile (never: the whole alternation compiled, and each group is in the translation).
    fn compiled(&self) -> Option<(&Translated, &Groups)> {
        let regex = self.regex.get()?;
        let groups = self.compiled.get_or_init(|| {
            let group = |name: &Option<String>| -> Option<Option<usize>> {
                match name {
                    None => Some(None),
                    Some(n) => regex.group(n).ok().map(Some),
                }
            };
            let (key, ts, pid) = (group(&self.key)?, group(&self.ts)?, group(&self.pid)?);
            Some(Groups { key, ts, pid })
        });
        Some((regex, groups.as_ref()?))
    }
}

/// What one prefix read gives: its key's, time's and pid's spans, and where Python's match
/// ends (before a lookahead), all relative to the text it was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PrefixRead {
    pub(crate) key: Option<(usize, usize)>,
    pub(crate) ts: Option<(usize, usize)>,
    pub(crate) pid: Option<(usize, usize)>,
    pub(crate) end: usize,
}

/// How many prefix reads a reader remembers (then it forgets them all).
const REMEMBERED: usize = 4096;

/// The prefix shapes, each its branch alone, in the alternation's order (the first that
/// matches is the alternation's match), and the reads remembered.
pub(crate) struct Prefixes {
    /// the branches searched together, anchored, in order: the first that matches is the
    /// alternation's match, and its pattern says which shape it is (so that only the shapes a
    /// log's lines read are compiled alone, not every one before them)
    search: regex_automata::meta::Regex,
    shapes: Vec<Shape>,
    /// prefix reads by the bytes that decide them (see `read`), with their match's end
    remembered: Mutex<HashMap<Vec<u8>, (usize, PrefixRead)>>,
}

impl Prefixes {
    /// The shapes of the alternation `prefixes`, each found by its group in `names`.
    pub(crate) fn new(prefixes: &str, names: &[ShapeNames]) -> Result<Prefixes, String> {
        // each branch of the alternation is one shape's group (lines.py `_ANY_PREFIX_READ`)
        let branches = patterns::branches(prefixes)?;
        let shapes = branches
            .iter()
            .map(|branch| {
                let regex = Deferred::new(branch, true)?;
                let names = names
                    .iter()
                    .find(|s| regex.has_group(&s.shape))
                    .ok_or_else(|| format!("{branch:?}: no shape's group"))?;
                let group = |name: &Option<String>| -> Result<Option<String>, String> {
                    match name {
                        Some(n) if !regex.has_group(n) => Err(format!("no group named {n:?}")),
                        _ => Ok(name.clone()),
                    }
                };
                let (key, ts, pid) = (group(&names.key)?, group(&names.ts)?, group(&names.pid)?);
                Ok(Shape {
                    regex,
                    key,
                    ts,
                    pid,
                    compiled: OnceLock::new(),
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        Ok(Prefixes {
            search: search(prefixes, &branches)?,
            shapes,
            remembered: Mutex::new(HashMap::new()),
        })
    }

    /// Where the alternation's match at the start of `rest` ends, and which shape it is.
    pub(crate) fn find(&self, rest: &[u8]) -> Option<(usize, usize)> {
        let m = self.search.find(rest)?;
        Some((m.end(), m.pattern().as_usize()))
    }

    /// Whether the alternation matches at the start of `rest`.
    pub(crate) fn is_match(&self, rest: &[u8]) -> bool {
        self.search.is_match(rest)
    }

    /// The prefix read at the start of `rest`, whose alternation's match ends at `matched`
    /// and is shape `shape`'s (`find`).
    ///
    /// The first shape that matches is the alternation's match, and its captures are that
    /// shape's alone (a small pattern). They are a function of the match's bytes and the byte
    /// after it (a `\b` or `$` at its end looks there; nothing else beyond it decides between
    /// ways to match that end there), so they are remembered by those bytes: the key tag, the
    /// record prefix whose time changes once a second, repeat on most lines of a window.
    pub(crate) fn read(&self, rest: &[u8], matched: usize, shape: usize) -> Option<PrefixRead> {
        let seen = &rest[..(matched + 1).min(rest.len())];
        if let Ok(remembered) = self.remembered.lock() {
            if let Some(&(end, read)) = remembered.get(seen) {
                if end == matched {
                    return Some(read);
                }
            }
        }
        // a shape that does not compile: declined (Python reads the line)
        let (regex, groups) = self.shapes.get(shape)?.compiled()?;
        let mut locs = regex.regex.capture_locations();
        regex.regex.captures_read(&mut locs, rest)?;
        let span = |g: Option<usize>| g.and_then(|g| locs.get(g));
        let read = PrefixRead {
            key: span(groups.key),
            ts: span(groups.ts),
            pid: span(groups.pid),
            end: regex.end(&locs)?,
        };
        if let Ok(mut remembered) = self.remembered.lock() {
            if remembered.len() >= REMEMBERED {
                remembered.clear();
            }
            remembered.insert(seen.to_vec(), (matched, read));
        }
        Some(read)
    }
}

/// The branches of `prefixes` as one multi-pattern search, anchored, leftmost-first: as
/// `Translated::new(prefixes, true)` matches (an alternation's first branch that matches is
/// its match, as a search's first pattern that matches is), and which branch matched. Built
/// as `regex::bytes::Regex` builds its own (regex 1.13.2 `builders.rs`), without groups.
fn search(prefixes: &str, branches: &[String]) -> Result<regex_automata::meta::Regex, String> {
    use regex_automata::{meta, nfa::thompson::WhichCaptures, util::syntax, MatchKind};
    let full = (branches.iter())
        .map(|b| crate::pyre::regex_syntax(b, true))
        .collect::<Result<Vec<_>, String>>()?;
    let config = meta::Config::new()
        .nfa_size_limit(Some(10 * (1 << 20)))
        .hybrid_cache_capacity(2 * (1 << 20))
        .match_kind(MatchKind::LeftmostFirst)
        .utf8_empty(false)
        .which_captures(WhichCaptures::Implicit);
    meta::Builder::new()
        .configure(config)
        .syntax(syntax::Config::new().utf8(false))
        .build_many(&full)
        .map_err(|e| format!("{prefixes:?}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(i: usize) -> ShapeNames {
        ShapeNames {
            shape: format!("shape_{i}"),
            key: Some(format!("key_{i}")),
            ts: None,
            pid: None,
        }
    }

    #[test]
    fn a_shape_compiles_when_a_line_first_needs_it() {
        let prefixes = r"(?P<shape_0>^(?P<key_0>a+):)|(?P<shape_1>^(?P<key_1>b+):)|(?P<shape_2>^(?P<key_2>c+):)";
        let p = Prefixes::new(prefixes, &[names(0), names(1), names(2)]).unwrap();
        let compiled = |p: &Prefixes| -> Vec<bool> {
            p.shapes
                .iter()
                .map(|s| s.compiled.get().is_some())
                .collect()
        };
        assert_eq!(compiled(&p), vec![false, false, false]);
        assert_eq!(p.find(b"bb: x"), Some((3, 1)));
        assert!(p.is_match(b"c:") && !p.is_match(b"d:") && !p.is_match(b" a:"));
        let read = p.read(b"bb: x", 3, 1).unwrap();
        assert_eq!((read.key, read.end), (Some((0, 2)), 3));
        // the shape that matched alone
        assert_eq!(compiled(&p), vec![false, true, false]);
        assert!(Prefixes::new(prefixes, &[names(0), names(1)]).is_err()); // shape_2 unnamed
        let mut missing = names(1);
        missing.pid = Some("pid_1".to_string());
        assert!(Prefixes::new(prefixes, &[names(0), missing, names(2)]).is_err());
    }

    #[test]
    fn the_search_finds_what_the_alternation_finds_and_the_first_shape_that_matches() {
        // overlapping shapes: a word boundary, a lookahead, a lazy repeat, an empty-able tail
        let prefixes = concat!(
            r"(?P<shape_0>^(?P<key_0>ab)\b\s?)|(?P<shape_1>^(?P<key_1>a)b(?=c))",
            r"|(?P<shape_2>^(?P<key_2>a+?)b*)|(?P<shape_3>^(?P<key_3>[^x]*)x?)",
        );
        let names: Vec<_> = (0..4).map(names).collect();
        let p = Prefixes::new(prefixes, &names).unwrap();
        let whole = Translated::new(prefixes, true).unwrap();
        let branches = patterns::branches(prefixes).unwrap();
        let alone: Vec<_> = (branches.iter())
            .map(|b| Translated::new(b, true).unwrap())
            .collect();
        for text in [
            "ab x", "abc", "abd", "aab", "a", "b", "", "x", "ab", "aabbx", "ba b",
        ] {
            let t = text.as_bytes();
            let first = alone.iter().position(|r| r.regex.is_match(t));
            let want = whole.regex.find(t).map(|m| (m.end(), first.unwrap()));
            assert_eq!(p.find(t), want, "{text:?}");
            assert_eq!(p.is_match(t), want.is_some(), "{text:?}");
        }
    }
}
