//! The prefilter: the literals a line must hold to matter, searched as rare pieces; line rules.
//!
//! Two kinds of literal, both the caller's: the error anchors are failure text (the Python
//! package's `ERROR_ANCHORS`, harmony_doctor/faults/catalogue.py), the line shapes' literals
//! the requests and completions a log records (its `LINE_SHAPES`, harmony_doctor/faults/
//! shapes.py). This crate holds no log's wording; only Harmony's own markup, `<|`.

use std::sync::LazyLock;

use memchr::{memchr, memmem};
use regex::bytes::Regex;

use crate::lines::same;
use crate::pieces::{self, Piece, Search};
use crate::rules::Rule;
pub use crate::rules::{Counts, Kinds, Shape};

/// What a literal is: an error anchor (any one makes a hit) or a shape's literal (by index).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Of {
    Anchor,
    Shape(usize),
}

/// A bytes regex (`(?-u)`: `\s`, `[a-z]` and case folding on ASCII bytes, as Python's).
#[cfg(test)]
pub(crate) fn re(pattern: &str) -> Regex {
    Regex::new(&format!("(?-u){pattern}")).unwrap()
}

/// Harmony's markup, which the format's special tokens start with (no log's wording).
pub(crate) const MARKUP: &[u8] = b"<|";

static MARKUP_FINDER: LazyLock<memmem::Finder<'static>> =
    LazyLock::new(|| memmem::Finder::new(MARKUP));

/// The first markup literal in `hay`.
pub(crate) fn find_markup(hay: &[u8]) -> Option<usize> {
    MARKUP_FINDER.find(hay)
}

/// The searcher of the error anchors and the line shapes it was given.
pub struct Prefilter {
    anchors: Vec<Vec<u8>>,
    /// what else a line holding `<|` must show to be a hit (the caller's rule, as given)
    markup_source: String,
    markup_line: Regex,
    rules: Vec<Rule>,
    /// by pattern index in `search`
    pieces: Vec<Piece<Of>>,
    search: Search,
}

impl Prefilter {
    /// Err for anchors that cannot be searched as the Python reference does: an empty one
    /// (every line would be a hit), one holding a newline (the rules are per line), one with
    /// no piece of its own (see `pieces::choose`); for a shape with no literal, an empty
    /// literal or one holding a newline, no word, or a line regex that does not compile.
    /// `markup_line`: the caller's rule (a regex, ASCII bytes semantics) for lines with `<|`.
    pub fn new<A: AsRef<[u8]>>(
        anchors: &[A],
        markup_line: &str,
        shapes: &[Shape],
    ) -> Result<Prefilter, String> {
        let markup = Regex::new(&format!("(?-u){markup_line}"))
            .map_err(|e| format!("markup-line rule: {e}"))?;
        if shapes.len() > 64 {
            return Err("over 64 line shapes".into());
        }
        let mut literals: Vec<(&[u8], Of)> = Vec::new();
        let mut rules = Vec::new();
        for (index, shape) in shapes.iter().enumerate() {
            if shape.literals.is_empty() || shape.words.is_empty() {
                return Err(format!("line shape {index}: no literal, or no word"));
            }
            for l in &shape.literals {
                if l.is_empty() || memchr(b'\n', l).is_some() {
                    return Err(format!("line shape {index}: an empty literal or a newline"));
                }
                literals.push((l, Of::Shape(index)));
            }
            let line = match &shape.line {
                Some(p) => Some(
                    Regex::new(&format!("(?-u){p}"))
                        .map_err(|e| format!("line shape {index}: {e}"))?,
                ),
                None => None,
            };
            rules.push(Rule {
                counts: shape.counts,
                words: shape.words.clone(),
                blanks: shape.blanks,
                then: shape.then.clone(),
                line,
            });
        }
        for a in anchors {
            let a = a.as_ref();
            if a.is_empty() {
                return Err("an error anchor is empty: every line would be a hit".into());
            }
            if memchr(b'\n', a).is_some() {
                return Err(format!(
                    "error anchor b\"{}\" holds a newline: no line does",
                    a.escape_ascii()
                ));
            }
        }
        let searched = searched_anchors(anchors);
        literals.extend(searched.iter().map(|&i| (anchors[i].as_ref(), Of::Anchor)));
        let pieces = pieces::choose(&literals).map_err(|literal| {
            format!(
                "error anchors: every piece of b\"{}\" would start, or start with, another \
                 literal's piece (a literal listed twice?)",
                literal.escape_ascii()
            )
        })?;
        let search = Search::new(&pieces)?;
        Ok(Prefilter {
            anchors: anchors.iter().map(|a| a.as_ref().to_vec()).collect(),
            markup_source: markup_line.to_string(),
            markup_line: markup,
            rules,
            pieces,
            search,
        })
    }

    /// The error anchors, as given.
    pub fn anchors(&self) -> &[Vec<u8>] {
        &self.anchors
    }

    /// The error anchors searched (see `searched_anchors`), in the order given.
    pub fn searched(&self) -> Vec<&[u8]> {
        let anchors = self.pieces.iter().filter(|p| p.kind == Of::Anchor);
        anchors.map(|p| &p.literal[..]).collect()
    }

    /// The markup-line rule, as given.
    pub fn markup_line(&self) -> &str {
        &self.markup_source
    }

    /// The rules `text`, one line, matches.
    pub fn classify(&self, text: &[u8]) -> Kinds {
        let markup = find_markup(text).is_some();
        let (at, pat) = self
            .next_piece(text, 0, text.len())
            .unwrap_or((0, usize::MAX));
        self.classify_line(text, 0, text.len(), at, pat, markup, text.len())
            .0
    }

    /// The first piece at or after `from` in `hay[..end]`: (start, piece index).
    #[inline]
    pub(crate) fn next_piece(&self, hay: &[u8], from: usize, end: usize) -> Option<(usize, usize)> {
        self.search.find(hay, from, end)
    }

    /// The rules for the line `hay[ls..le]`, whose first piece is piece `pat` at `at` (none
    /// before it in the line; `pat == usize::MAX`: no piece) and which holds `<|` iff
    /// `markup`. Also returns the first piece after the line in `hay[..end]` when it searched
    /// past it (one search call per line fewer).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn classify_line(
        &self,
        hay: &[u8],
        ls: usize,
        le: usize,
        at: usize,
        pat: usize,
        markup: bool,
        end: usize,
    ) -> (Kinds, Option<(usize, usize)>) {
        let (mut anchor, mut access, mut ids, mut received) = (false, false, false, false);
        // the shapes with a line regex whose literal the line holds
        let mut whole: u64 = 0;
        let mut next = (pat != usize::MAX).then_some((at, pat));
        let mut beyond = None;
        while let Some((at, pat)) = next {
            if at >= le {
                beyond = Some((at, pat));
                break;
            }
            let p = &self.pieces[pat];
            // the searcher matched the piece itself: compare only the literal's bytes before it
            let before = &p.literal[..p.offset];
            let after = at + p.literal.len() - p.offset;
            if at >= ls + p.offset
                && after <= le
                && (before.is_empty() || same(&hay[at - p.offset..at], before))
            {
                match p.kind {
                    Of::Anchor => anchor = true,
                    Of::Shape(s) => {
                        let rule = &self.rules[s];
                        let seen = match rule.counts {
                            Counts::Access => &mut access,
                            Counts::Received => &mut received,
                            Counts::Ids => &mut ids,
                        };
                        if rule.line.is_some() {
                            whole |= 1 << s;
                        } else if !*seen && rule.follows(&hay[after..le]) {
                            *seen = true;
                        }
                    }
                }
            }
            next = self.next_piece(hay, at + 1, end);
        }
        let text = &hay[ls..le];
        while whole != 0 {
            let rule = &self.rules[whole.trailing_zeros() as usize];
            whole &= whole - 1;
            let seen = match rule.counts {
                Counts::Access => &mut access,
                Counts::Received => &mut received,
                Counts::Ids => &mut ids,
            };
            *seen = *seen || rule.line.as_ref().is_some_and(|l| l.is_match(text));
        }
        let hit = anchor || (markup && self.markup_line.is_match(text));
        let kinds = Kinds {
            hit,
            access,
            received: !access && received,
            ids,
        };
        (kinds, beyond)
    }
}

/// The indices of the anchors the prefilter searches: each but those holding another anchor
/// (a line holding `nexpected role` holds `xpected`: searching the longer finds no other hit)
/// and the later copies of one listed twice. The catalogue's generic forms add short anchors
/// that most longer ones hold; without them in the search, the pieces stay within the 64 of
/// aho-corasick's packed searcher (Teddy), and a GiB of log is searched in a third of the time
/// of its automaton (benchmarks/README.md, the first pass).
fn searched_anchors<A: AsRef<[u8]>>(anchors: &[A]) -> Vec<usize> {
    let holds = |a: &[u8], b: &[u8]| a.len() > b.len() && memmem::find(a, b).is_some();
    (0..anchors.len())
        .filter(|&i| {
            let a = anchors[i].as_ref();
            anchors.iter().enumerate().all(|(j, b)| {
                let b = b.as_ref();
                !(holds(a, b) || (j < i && a == b))
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{
        core, literal_soup, run, soup, ANCHORS, ENGINE_ANCHORS, MARKUP_LINE, SHAPES,
    };

    fn prefilter() -> Prefilter {
        Prefilter::new(ANCHORS, MARKUP_LINE, &SHAPES).unwrap()
    }

    /// The rule's cases below are written for the engine forms' anchors.
    fn classify(text: &[u8]) -> Kinds {
        Prefilter::new(ENGINE_ANCHORS, MARKUP_LINE, &SHAPES)
            .unwrap()
            .classify(text)
    }

    /// What the rule makes of a list of anchors (a change of rank shows here).
    #[test]
    fn pieces_follow_the_rule() {
        let pf = Prefilter::new(ENGINE_ANCHORS, MARKUP_LINE, &SHAPES).unwrap();
        let pieces: Vec<String> = pf
            .pieces
            .iter()
            .map(|p| String::from_utf8_lossy(p.piece()).into_owned())
            .collect();
        let want = [
            "put_token_ids",
            "\"POST /",
            "\"GET /v1/",
            "| POST",
            "| GET",
            "ved request ",
            " POST /",
            " POST to /",
            "HarmonyError",
            "xpecting start token",
            " remaining",
            "own role",
            "el marker",
            " EOS",
            " role",
            "de header",
            "cab file",
            " JSON",
            "ol call",
            "put at pos",
            "he content",
            "nal state",
            "w output",
        ];
        assert_eq!(pieces, want);
        assert!(matches!(pf.search, Search::Teddy(_)));
        let anchors: Vec<&[u8]> = pf.anchors().iter().map(|a| &a[..]).collect();
        assert_eq!(anchors, ENGINE_ANCHORS);
    }

    /// The catalogue's anchors, the generic forms' short ones among them, are searched by
    /// Teddy: an anchor holding another is left out of the search (over 64 pieces, the
    /// automaton took three times as long over a GiB of log).
    #[test]
    fn the_catalogue_is_searched_by_teddy() {
        let pf = prefilter();
        assert!(
            matches!(pf.search, Search::Teddy(_)),
            "{} pieces",
            pf.pieces.len()
        );
        let searched = pf.searched();
        assert!(searched.len() < ANCHORS.len());
        for a in ANCHORS {
            let held = searched.iter().any(|s| memmem::find(a, s).is_some());
            assert!(
                held,
                "{:?} holds no searched anchor",
                a.escape_ascii().to_string()
            );
        }
    }

    #[test]
    fn anchors_that_cannot_be_searched_are_refused() {
        let err = |a: &[&[u8]]| Prefilter::new(a, MARKUP_LINE, &SHAPES).err().unwrap();
        assert!(err(&[b"tool call", b""]).contains("empty"));
        assert!(err(&[b"a\nb"]).contains("newline"));
        // twins, anchors in anchors, structural literals in anchors: searched once, or not
        let anchors: [&[u8]; 6] = [
            b"tool call",
            b"tool call",
            b"tool",
            b"| GET x",
            b"| GET",
            b"| GET",
        ];
        let pf = Prefilter::new(&anchors, MARKUP_LINE, &SHAPES).unwrap();
        assert_eq!(pf.searched(), [&b"tool"[..], b"| GET"]);
        assert_eq!(pf.anchors().len(), 6);
        for line in [
            &b"a tool"[..],
            b"| GET x",
            b"| GET",
            b"tool call",
            b"| GE",
            b"tOol",
        ] {
            assert_eq!(pf.classify(line).hit, reference_hit(&anchors, line));
        }
    }

    /// Over 64 pieces leave Teddy for the automaton, which finds the same.
    #[test]
    fn the_automaton_finds_what_teddy_finds() {
        let teddy = prefilter();
        let mut automaton = prefilter();
        automaton.search = Search::automaton(&automaton.pieces).unwrap();
        assert!(matches!(teddy.search, Search::Teddy(_)));
        let mut many: Vec<Vec<u8>> = ANCHORS.iter().map(|a| a.to_vec()).collect();
        many.extend((0..60).map(|i| format!("anchor {i:02}").into_bytes()));
        let many = Prefilter::new(&many, MARKUP_LINE, &SHAPES).unwrap();
        assert!(matches!(many.search, Search::Automaton(_)));
        assert!(many.classify(b"x anchor 42 y").hit);
        for line in soup(20_000).chain(literals(20_000)) {
            let want = teddy.classify(&line);
            assert_eq!(automaton.classify(&line), want);
            assert_eq!(many.classify(&line), want);
        }
    }

    /// Anchors shorter than a fingerprint shorten every fingerprint, and are found all the same.
    #[test]
    fn short_anchors_are_searched_too() {
        let anchors: [&[u8]; 2] = [b"EOS", b"\""];
        let pf = Prefilter::new(&anchors, MARKUP_LINE, &SHAPES).unwrap();
        assert!(matches!(pf.search, Search::Teddy(_)));
        for line in soup(20_000).chain(literals(20_000)) {
            assert_eq!(pf.classify(&line).hit, reference_hit(&anchors, &line));
        }
    }

    /// The reference's hit rule: an error anchor in the line, or markup and content.
    fn reference_hit(anchors: &[&[u8]], line: &[u8]) -> bool {
        anchors.iter().any(|a| contains(line, a))
            || find_markup(line).is_some() && re(MARKUP_LINE).is_match(line)
    }

    fn contains(hay: &[u8], literal: &[u8]) -> bool {
        memmem::find(hay, literal).is_some()
    }

    /// Lines glued from the starts and ends of the anchors and the structural literals.
    fn literals(n: usize) -> impl Iterator<Item = Vec<u8>> {
        let structural = SHAPES
            .iter()
            .flat_map(|s| s.literals.iter().map(|l| &l[..]));
        let all: Vec<&[u8]> = ANCHORS.iter().copied().chain(structural).collect();
        literal_soup(&all, n)
    }

    /// The literals of the shapes that count received lines (none has words or a regex).
    fn received_literals() -> impl Iterator<Item = &'static [u8]> {
        let shapes = SHAPES.iter().filter(|s| s.counts == Counts::Received);
        shapes.flat_map(|s| s.literals.iter().map(|l| &l[..]))
    }

    /// A line is a hit iff it holds an error anchor (or markup and content), whatever the
    /// pieces; a received line iff it holds the literal (and is no access line).
    #[test]
    fn classify_sees_exactly_the_literals() {
        let pf = prefilter();
        let mut hits = 0;
        for line in literals(100_000) {
            let k = pf.classify(&line);
            let want = reference_hit(ANCHORS, &line);
            assert_eq!(k.hit, want, "{:?}", String::from_utf8_lossy(&line));
            hits += usize::from(want);
            let received = received_literals().any(|l| contains(&line, l));
            assert_eq!(k.received, received && !k.access);
        }
        assert!(hits > 1000 && hits < 90_000, "{hits}");
    }

    /// Every literal of a line counts, also when a piece shows up without its literal, when
    /// literals overlap ("<| POST") or repeat.
    #[test]
    fn classify_sees_every_literal_occurrence() {
        assert!(classify(b"<| POST \"/api/chat\"").access);
        assert!(classify(b"\"POST /v1/models \"POST /v1/responses?").access);
        assert!(classify(b"output_token_ids [1] output_token_ids=[2]").ids);
        assert!(!classify(b"prompt_token_ids: [1] input_token_ids=[2]").ids);
        assert!(!classify(b"HarmonyE rror tool cal Received req").hit);
        assert!(!classify(b"x EOS Unexpected EO").hit);
        assert!(classify(b"Unexpected EOS").hit);
        assert!(classify(b"Received request x").received);
        assert!(!classify(b"Received requests").received);
        assert!(classify(b"a \"content\": \"x<|").hit);
    }

    /// A found piece is checked against the bytes of its literal before it, inside its own
    /// line.
    #[test]
    fn pieces_check_the_rest_of_their_literal_within_the_line() {
        let pf = Prefilter::new(ENGINE_ANCHORS, MARKUP_LINE, &SHAPES).unwrap();
        // the literal would start before the line
        for p in pf.pieces.iter().filter(|p| p.offset > 0) {
            let k = pf.classify(p.piece());
            assert_eq!(k, Kinds::default(), "{:?}", p.piece());
        }
        assert!(!classify(b"x Received req").received); // it would end past the line
        assert!(classify(b"x Received request ").received);
        assert!(classify(b"tags in the contents").hit);
        assert!(!classify(b"tags in the conten").hit);
        let mut c = core(0, 0, 100);
        let (w, _) = run(&mut c, &[b"tool\n call\nRecei\nved request x\n"]);
        assert!(w.is_empty());
        assert_eq!(c.stats().received_lines, 0);
    }
}
