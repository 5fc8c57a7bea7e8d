//! The prefilter: the literals a line must hold to matter, searched as pieces; line rules.

use std::sync::LazyLock;

use aho_corasick::packed::{Config, MatchKind, Searcher};
use aho_corasick::Span;
use memchr::memmem;
use regex::bytes::Regex;

use crate::lines::{skip_ws, WS};

pub(crate) const MARKUP: usize = 15;
const IDS: usize = 16;
const RECEIVED: usize = 21;
/// Every literal the stream pass looks for: the error anchors (the spec's list), then markup,
/// id lines and request lines, at the fixed indexes below.
const PREFILTER: [&str; 22] = [
    "HarmonyError",
    "expecting start token",
    "tokens remaining",
    "nknown role",
    "channel marker",
    "Unexpected EOS",
    "contain a role",
    "decode header",
    "vocab file",
    "conversation JSON",
    "tool call",
    "parse input at pos",
    "tags in the content",
    "non-terminal state",
    "recovered raw output",
    "<|",
    "_token_ids",
    "\"POST /v1/",
    "\"GET /v1/",
    "| POST",
    "| GET",
    "Received request ",
];
/// The error anchors: the first literals of PREFILTER, up to the markup anchor.
pub const ERROR_ANCHORS: &[&str] = PREFILTER.split_at(MARKUP).0;

pub(crate) static MARKUP_FINDER: LazyLock<memmem::Finder<'static>> =
    LazyLock::new(|| memmem::Finder::new("<|"));

/// What the stream pass searches for: for every prefilter literal but `<|` (searched apart with
/// memmem), a rarer piece of it at a known offset. Teddy then works on 3-byte fingerprints
/// that ordinary log text seldom has (5x fewer false candidates than the literals' own
/// 2-byte prefixes such as "to", "co", "re"). A found piece is checked against its whole
/// literal, so the rules see exactly the prefilter literals of the spec.
/// (piece, index of its literal in PREFILTER, offset of the piece in the literal)
const PIECES: [(&str, usize, usize); 21] = [
    ("HarmonyE", 0, 0),
    ("g start tok", 1, 8),
    ("s remaini", 2, 5),
    ("nknown r", 3, 0),
    ("l marker", 4, 6),
    ("d EOS", 5, 9),
    ("n a role", 6, 6),
    ("e header", 7, 5),
    ("vocab f", 8, 0),
    ("n JSON", 9, 11),
    ("tool call", 10, 0),
    ("input at p", 11, 6),
    ("tags in th", 12, 0),
    ("-terminal s", 13, 3),
    ("d raw out", 14, 8),
    ("_token_i", IDS, 0),
    ("\"POST /v1/", POST, 0),
    ("\"GET /v1/", GET, 0),
    ("| POST", GIN_POST, 0),
    ("| GET", GIN_GET, 0),
    ("Received r", RECEIVED, 0),
];
const POST: usize = 17;
const GET: usize = 18;
const GIN_POST: usize = 19;
const GIN_GET: usize = 20;

/// Leftmost-first search over the pieces; no piece is a prefix of another, so searching again
/// from a match's start + 1 finds every occurrence of every piece. The packed searcher
/// (Teddy) directly, not an AhoCorasick automaton with Teddy as its prefilter: every search
/// call is one candidate line, and the automaton's layers around the same Teddy cost ~5%.
static AC: LazyLock<Searcher> = LazyLock::new(|| {
    Config::new()
        .match_kind(MatchKind::LeftmostFirst)
        .builder()
        .extend(PIECES.iter().map(|p| p.0))
        .build()
        .unwrap()
});

/// A bytes regex (`(?-u)`: `\s`, `[a-z]` and case folding on ASCII bytes, as Python's).
pub(crate) fn re(pattern: &str) -> Regex {
    Regex::new(&format!("(?-u){pattern}")).unwrap()
}

static GIN: LazyLock<Regex> = LazyLock::new(|| {
    re(&format!(
        r#"\| (?:POST|GET){WS}+"/(?:api/chat|api/generate|v1/[a-z/]+)""#
    ))
});
static CONTENT: LazyLock<Regex> = LazyLock::new(|| {
    re(&format!(
        r#"(?i)(?:content|reasoning|text|output_text|name)["']?{WS}*[:=]{WS}*["']"#
    ))
});

/// Which rules a line (already cut to max_line) matches.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Kinds {
    pub hit: bool,
    pub access: bool,
    pub received: bool,
    pub ids: bool,
}

pub fn classify(text: &[u8]) -> Kinds {
    let markup = MARKUP_FINDER.find(text).is_some();
    let (at, pat) = AC
        .find(text)
        .map_or((0, usize::MAX), |m| (m.start(), m.pattern().as_usize()));
    classify_line(text, 0, text.len(), at, pat, markup, text.len()).0
}

/// The first piece at or after `from` in `hay[..end]`: (start, piece index).
pub(crate) fn next_piece(hay: &[u8], from: usize, end: usize) -> Option<(usize, usize)> {
    AC.find_in(&hay[..end], Span::from(from..end))
        .map(|m| (m.start(), m.pattern().as_usize()))
}

/// The rules for the line `hay[ls..le]`, whose first piece is piece `pat` at `at` (none
/// before it in the line; `pat == usize::MAX`: no piece) and which holds `<|` iff `markup`.
/// Also returns the first piece after the line in `hay[..end]` when it searched past it (one
/// search call per line fewer).
pub(crate) fn classify_line(
    hay: &[u8],
    ls: usize,
    le: usize,
    at: usize,
    pat: usize,
    markup: bool,
    end: usize,
) -> (Kinds, Option<(usize, usize)>) {
    let mut seen = [false; PREFILTER.len()];
    seen[MARKUP] = markup;
    let mut access = false;
    let mut ids = false;
    let mut next = (pat != usize::MAX).then_some((at, pat));
    let mut beyond = None;
    while let Some((at, pat)) = next {
        if at >= le {
            beyond = Some((at, pat));
            break;
        }
        let (piece, lit, offset) = PIECES[pat];
        let word = PREFILTER[lit].as_bytes();
        // the searcher matched the piece itself: compare only the literal's bytes around it
        // (none for the request literals, which are their own pieces)
        let (before, rest) = (&word[..offset], &word[offset + piece.len()..]);
        let after = at + piece.len() + rest.len();
        if at >= ls + offset
            && after <= le
            && (before.is_empty() || hay[at - offset..at] == *before)
            && (rest.is_empty() || hay[at + piece.len()..after] == *rest)
        {
            seen[lit] = true;
            match lit {
                POST | GET => access = access || endpoint_at(&hay[after..le]),
                IDS => ids = ids || ids_at(&hay[after..le]),
                _ => {}
            }
        }
        next = next_piece(hay, at + 1, end);
    }
    let text = &hay[ls..le];
    let hit =
        seen[..ERROR_ANCHORS.len()].iter().any(|&x| x) || (seen[MARKUP] && CONTENT.is_match(text));
    let access = access || (seen[GIN_POST] || seen[GIN_GET]) && GIN.is_match(text);
    let received = !access && seen[RECEIVED];
    let kinds = Kinds {
        hit,
        access,
        received,
        ids,
    };
    (kinds, beyond)
}

/// `(?:chat/completions|responses|completions)[ ?"]` at the start of `r`.
fn endpoint_at(r: &[u8]) -> bool {
    [&b"chat/completions"[..], b"responses", b"completions"]
        .iter()
        .any(|ep| r.starts_with(ep) && matches!(r.get(ep.len()), Some(b' ' | b'?' | b'"')))
}

/// `\s*[:=]` at the start of `r` (the rest of `_token_ids\s*[:=]`).
fn ids_at(r: &[u8]) -> bool {
    let i = skip_ws(r, 0);
    matches!(r.get(i), Some(b':' | b'='))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{core, run, soup};

    #[test]
    fn no_prefilter_literal_contains_another() {
        for (i, a) in PREFILTER.iter().enumerate() {
            for (j, b) in PREFILTER.iter().enumerate() {
                assert!(i == j || !a.contains(b), "{a:?} contains {b:?}");
            }
        }
    }

    #[test]
    fn pieces_are_in_their_literals_and_no_piece_starts_another() {
        for (piece, lit, offset) in PIECES {
            assert!(PREFILTER[lit][offset..].starts_with(piece), "{piece:?}");
            assert!(piece.len() >= 3, "Teddy's 3-byte fingerprints: {piece:?}");
        }
        let lits: Vec<usize> = PIECES.iter().map(|p| p.1).collect();
        assert_eq!(lits.len() + 1, PREFILTER.len());
        assert!((0..PREFILTER.len()).all(|i| i == MARKUP || lits.contains(&i)));
        for a in PIECES {
            for b in PIECES {
                assert!(a.0 == b.0 || !a.0.starts_with(b.0), "{a:?} {b:?}");
            }
        }
    }

    /// Every literal of a line counts, also when a piece shows up without its literal, when
    /// literals overlap ("<| POST") or repeat.
    #[test]
    fn classify_sees_every_literal_occurrence() {
        assert!(classify(b"<| POST \"/api/chat\"").access);
        assert!(classify(b"\"POST /v1/models \"POST /v1/responses?").access);
        assert!(classify(b"_token_ids [1] input_token_ids=[2]").ids);
        assert!(!classify(b"HarmonyE rror tool cal Received req").hit);
        assert!(!classify(b"xd EOS Unexpected EO").hit);
        assert!(classify(b"Unexpected EOS").hit);
        assert!(classify(b"Received request x").received);
        assert!(!classify(b"Received requests").received);
        assert!(classify(b"a \"content\": \"x<|").hit);
    }

    /// A found piece is checked against the bytes of its literal on both sides of it, inside
    /// its own line.
    #[test]
    fn pieces_check_the_rest_of_their_literal_within_the_line() {
        assert!(!classify(b"d EOS").hit); // the literal would start before the line
        assert!(!classify(b"x Received req").received); // it would end past the line
        assert!(classify(b"x Received request ").received);
        assert!(classify(b"tags in the contents").hit);
        assert!(!classify(b"tags in the conten").hit);
        assert!(classify(b"Unexpected EOS").hit);
        let mut c = core(0, 0, 100);
        let (w, _) = run(&mut c, &[b"Unexpecte\nd EOS\nReceived req\nuest x\n"]);
        assert!(w.is_empty());
        assert_eq!(c.stats().received_lines, 0);
    }

    #[test]
    fn classify_lines() {
        assert!(classify(b"openai_harmony.HarmonyError: x").hit);
        assert!(classify(b"{\"content\": \"<|start|>\"}").hit);
        assert!(!classify(b"<|start|>assistant").hit);
        assert!(classify(b"\"GET /v1/responses?x HTTP/1.1\"").access);
        assert!(!classify(b"\"GET /v1/models HTTP/1.1\"").access);
        assert!(classify(b"| 200 | ::1 | POST  \"/api/generate\"").access);
        let k = classify(b"\"POST /v1/completions\" Received request x");
        assert!(k.access && !k.received);
        assert!(classify(b"Received request x").received);
        assert!(classify(b"output_token_ids = [1]").ids);
        assert!(!classify(b"output_token_ids [1]").ids);
    }

    /// The hand-written access and id-line rules agree with the reference's regexes
    /// (harmony_doctor/scan/core.py `_ACCESS`, `_IDS`) on fragment soup.
    #[test]
    fn rules_agree_with_the_regexes() {
        let ids = re(&format!("_token_ids{WS}*[:=]"));
        let access = re(r#""(?:POST|GET) /v1/(?:chat/completions|responses|completions)[ ?"]"#);
        let mut agreed = [0usize; 2];
        for line in soup(200_000) {
            let want = access.is_match(&line);
            assert_eq!(
                classify(&line).access,
                want,
                "{:?}",
                String::from_utf8_lossy(&line)
            );
            agreed[0] += usize::from(want);
            let want = ids.is_match(&line);
            assert_eq!(
                classify(&line).ids,
                want,
                "{:?}",
                String::from_utf8_lossy(&line)
            );
            agreed[1] += usize::from(want);
        }
        // the soup does exercise the positive cases
        assert!(agreed.iter().all(|&n| n > 100), "{agreed:?}");
    }
}
