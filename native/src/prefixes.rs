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
    shapes: Vec<Shape>,
    /// prefix reads by the bytes that decide them (see `read`), with their match's end
    remembered: Mutex<HashMap<Vec<u8>, (usize, PrefixRead)>>,
}

impl Prefixes {
    /// The shapes of the alternation `prefixes`, each found by its group in `names`.
    pub(crate) fn new(prefixes: &str, names: &[ShapeNames]) -> Result<Prefixes, String> {
        // each branch of the alternation is one shape's group (lines.py `_ANY_PREFIX_READ`)
        let shapes = patterns::branches(prefixes)?
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
            shapes,
            remembered: Mutex::new(HashMap::new()),
        })
    }

    /// The prefix read at the start of `rest`, whose alternation's match ends at `matched`.
    ///
    /// The first shape that matches is the alternation's match, and its captures are that
    /// shape's alone (a small pattern). They are a function of the match's bytes and the byte
    /// after it (a `\b` or `$` at its end looks there; nothing else beyond it decides between
    /// ways to match that end there), so they are remembered by those bytes: the key tag, the
    /// record prefix whose time changes once a second, repeat on most lines of a window.
    pub(crate) fn read(&self, rest: &[u8], matched: usize) -> Option<PrefixRead> {
        let seen = &rest[..(matched + 1).min(rest.len())];
        if let Ok(remembered) = self.remembered.lock() {
            if let Some(&(end, read)) = remembered.get(seen) {
                if end == matched {
                    return Some(read);
                }
            }
        }
        let mut first = None;
        for shape in &self.shapes {
            // a shape that does not compile: declined (Python reads the line)
            let (regex, groups) = shape.compiled()?;
            if regex.regex.is_match(rest) {
                first = Some((regex, groups));
                break;
            }
        }
        let (regex, groups) = first?;
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
        let read = p.read(b"bb: x", 3).unwrap();
        assert_eq!((read.key, read.end), (Some((0, 2)), 3));
        // the shapes up to the one that matched, tried in order; not the ones after it
        assert_eq!(compiled(&p), vec![true, true, false]);
        assert!(Prefixes::new(prefixes, &[names(0), names(1)]).is_err()); // shape_2 unnamed
        let mut missing = names(1);
        missing.pid = Some("pid_1".to_string());
        assert!(Prefixes::new(prefixes, &[names(0), missing, names(2)]).is_err());
    }
}
