//! A line's record prefixes (harmony_doctor/logs/lines.py `_ANY_PREFIX_READ`): each shape's
//! branch of the prefixes' alternation on its own, and the reads remembered by the bytes that
//! decide them (crate::anatomy finds the alternation's match, then asks here what it read).

use std::collections::HashMap;
use std::sync::Mutex;

use crate::patterns;
use crate::pyre::Translated;

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
/// cost a fraction of the whole alternation's), and its groups there.
struct Shape {
    regex: Translated,
    key: Option<usize>,
    ts: Option<usize>,
    pid: Option<usize>,
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
                let regex = Translated::new(branch, true)?;
                let names = names
                    .iter()
                    .find(|s| regex.group(&s.shape).is_ok())
                    .ok_or_else(|| format!("{branch:?}: no shape's group"))?;
                let group = |name: &Option<String>| -> Result<Option<usize>, String> {
                    name.as_deref().map(|n| regex.group(n)).transpose()
                };
                let (key, ts, pid) = (group(&names.key)?, group(&names.ts)?, group(&names.pid)?);
                Ok(Shape {
                    regex,
                    key,
                    ts,
                    pid,
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
        let shape = self.shapes.iter().find(|s| s.regex.regex.is_match(rest))?;
        let mut locs = shape.regex.regex.capture_locations();
        shape.regex.regex.captures_read(&mut locs, rest)?;
        let span = |g: Option<usize>| g.and_then(|g| locs.get(g));
        let read = PrefixRead {
            key: span(shape.key),
            ts: span(shape.ts),
            pid: span(shape.pid),
            end: shape.regex.end(&locs)?,
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
