//! Pieces: the part of each literal the search looks for, chosen rare, and the search for them.

use std::cmp::Reverse;

use aho_corasick::packed::{self, Config};
use aho_corasick::{AhoCorasick, Input, MatchKind, Span};

/// The part of a literal the search looks for, `literal[offset..]`, and what the literal is
/// (`kind`, the caller's). A found piece is checked against the literal's bytes before it.
pub(crate) struct Piece<K> {
    pub(crate) literal: Box<[u8]>,
    pub(crate) offset: usize,
    pub(crate) kind: K,
}

impl<K> Piece<K> {
    pub(crate) fn piece(&self) -> &[u8] {
        &self.literal[self.offset..]
    }
}

/// Aho-corasick's packed searcher (Teddy) tells candidates by the first bytes of each pattern:
/// 4 of them, or the length of the shortest pattern when less.
const FINGERPRINT: usize = 4;

/// How rare a byte is in LLM server logs, 1 (common) to 4 (rare): a small hand-made rank,
/// not measured frequencies. Digits, `:`, `.` and the letters of the words such logs repeat
/// on every line (`token`, `prompt`, `request`) are common; capitals, brackets, quotes and
/// `_` rare, and the space with them (see `rarity`); `|`, `<`, `{`, other punctuation, tabs,
/// control and non-ASCII bytes rarer still.
fn byte_rank(b: u8) -> u32 {
    match b {
        b'e' | b't' | b'a' | b'o' | b'i' | b'n' | b's' | b'r' | b'p' | b'k' => 1,
        b'0'..=b'9' | b':' | b'.' => 1,
        b'l' | b'c' | b'd' | b'h' | b'u' | b'm' | b'g' | b'v' | b'y' | b'f' | b'w' | b'b' => 2,
        b',' | b'/' | b'=' | b'-' => 2,
        b'x' | b'q' | b'j' | b'z' | b'A'..=b'Z' | b' ' => 3,
        b'_' | b'(' | b')' | b'[' | b']' | b'"' | b'\'' => 3,
        _ => 4,
    }
}

/// How rare a fingerprint is: the sum of its bytes' ranks, its spaces counted once. A word
/// boundary makes a fingerprint rare (the bytes around one vary far more than those inside a
/// word: `toke` is on every throughput line, `s re` seldom); a second one does not (the short
/// words between two spaces, ` in `, ` a `, are the commonest of all).
fn rarity(window: &[u8]) -> u32 {
    let words: u32 = window
        .iter()
        .filter(|&&b| b != b' ')
        .map(|&b| byte_rank(b))
        .sum();
    words
        + if window.contains(&b' ') {
            byte_rank(b' ')
        } else {
            0
        }
}

/// The pieces of `literals` (each with its kind), in order, by this rule: a literal's piece
/// runs from its rarest window of FINGERPRINT bytes (the leftmost of equals; the whole
/// literal when shorter) to its end, unless that piece would start a piece chosen before or
/// start with one; then from the next rarest window. No piece is thus a prefix of another,
/// which the search relies on (two such pieces match at one place, and it reports one of them
/// only). The shortest literals choose first (they have the fewest windows; then in order).
/// Err (naming the literal) when no window of a literal is free.
pub(crate) fn choose<K: Copy>(literals: &[(&[u8], K)]) -> Result<Vec<Piece<K>>, Vec<u8>> {
    let mut order: Vec<usize> = (0..literals.len()).collect();
    order.sort_by_key(|&i| (literals[i].0.len(), i));
    let mut chosen: Vec<Option<Piece<K>>> = literals.iter().map(|_| None).collect();
    for i in order {
        let (literal, kind) = literals[i];
        let width = FINGERPRINT.min(literal.len());
        let mut offsets: Vec<usize> = (0..=literal.len() - width).collect();
        offsets.sort_by_key(|&o| (Reverse(rarity(&literal[o..o + width])), o));
        let free = |o: usize| {
            let piece = &literal[o..];
            chosen
                .iter()
                .flatten()
                .all(|p| !p.piece().starts_with(piece) && !piece.starts_with(p.piece()))
        };
        let offset = offsets
            .into_iter()
            .find(|&o| free(o))
            .ok_or_else(|| literal.to_vec())?;
        chosen[i] = Some(Piece {
            literal: literal.into(),
            offset,
            kind,
        });
    }
    Ok(chosen.into_iter().flatten().collect())
}

/// A leftmost-first search over pieces of which none is a prefix of another: searching again
/// from a match's start + 1 finds every occurrence of every piece.
pub(crate) enum Search {
    /// The packed searcher (Teddy) directly, not an AhoCorasick automaton with Teddy as its
    /// prefilter: every search call is one candidate line, and the automaton's layers around
    /// the same Teddy cost ~5%.
    Teddy(packed::Searcher),
    /// Where Teddy is not available: a CPU without SSSE3 (or NEON), over 64 pieces, or
    /// 1-byte ones among many.
    Automaton(AhoCorasick),
}

impl Search {
    pub(crate) fn new<K>(pieces: &[Piece<K>]) -> Result<Search, String> {
        let teddy = Config::new()
            .match_kind(packed::MatchKind::LeftmostFirst)
            .builder()
            .extend(pieces.iter().map(Piece::piece))
            .build();
        match teddy {
            Some(teddy) => Ok(Search::Teddy(teddy)),
            None => Search::automaton(pieces),
        }
    }

    pub(crate) fn automaton<K>(pieces: &[Piece<K>]) -> Result<Search, String> {
        AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostFirst)
            .build(pieces.iter().map(Piece::piece))
            .map(Search::Automaton)
            .map_err(|e| format!("error anchors: {e}"))
    }

    /// The first piece at or after `from` in `hay[..end]`: (start, piece index).
    #[inline]
    pub(crate) fn find(&self, hay: &[u8], from: usize, end: usize) -> Option<(usize, usize)> {
        let m = match self {
            Search::Teddy(s) => s.find_in(&hay[..end], Span::from(from..end)),
            Search::Automaton(ac) => ac.find(Input::new(&hay[..end]).span(from..end)),
        }?;
        Some((m.start(), m.pattern().as_usize()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{literal_soup, soup, ANCHORS, ENGINE_ANCHORS};

    #[test]
    fn rarity_ranks_word_boundaries_and_rare_bytes_first() {
        assert!(rarity(b"s re") > rarity(b"toke"));
        assert!(rarity(b"gs i") > rarity(b" in "));
        assert!(rarity(b"| PO") > rarity(b"POST"));
        assert_eq!(byte_rank(0xE2), 4);
    }

    #[test]
    fn pieces_end_their_literals_and_none_starts_another() {
        let literals: Vec<(&[u8], usize)> = ANCHORS.iter().map(|&a| (a, a.len())).collect();
        let pieces = choose(&literals).unwrap();
        for (p, (literal, len)) in pieces.iter().zip(&literals) {
            assert_eq!((&p.literal[..], p.kind), (*literal, *len));
            assert!(p.piece().len() >= FINGERPRINT, "{:?}", p.piece());
        }
        for (i, a) in pieces.iter().enumerate() {
            for (j, b) in pieces.iter().enumerate() {
                assert!(i == j || !a.piece().starts_with(b.piece()));
            }
        }
    }

    #[test]
    fn the_shortest_literals_choose_first_and_conflicts_are_refused() {
        let pieces = choose(&[(&b"\"GET /v1/"[..], ()), (b"\"", ())]).unwrap();
        assert_eq!(pieces[0].piece(), b"GET /v1/");
        assert_eq!(pieces[1].piece(), b"\"");
        assert_eq!(
            choose(&[(&b"abcd"[..], ()), (b"abcd", ())]).err(),
            Some(b"abcd".to_vec())
        );
        // a twin longer than a fingerprint gets a later window
        let pieces = choose(&[(&b"tool call"[..], ()), (b"tool call", ())]).unwrap();
        assert_ne!(pieces[0].piece(), pieces[1].piece());
    }

    /// Every occurrence of every piece, searching on from each match's start + 1.
    fn find_all(search: &Search, hay: &[u8]) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        let mut from = 0;
        while let Some((at, pat)) = search.find(hay, from, hay.len()) {
            out.push((at, pat));
            from = at + 1;
        }
        out
    }

    #[test]
    fn teddy_and_the_automaton_find_every_occurrence() {
        let literals: Vec<(&[u8], ())> = ENGINE_ANCHORS.iter().map(|&a| (a, ())).collect();
        let pieces = choose(&literals).unwrap();
        let teddy = Search::new(&pieces).unwrap();
        assert!(matches!(teddy, Search::Teddy(_)));
        let automaton = Search::automaton(&pieces).unwrap();
        let lines: Vec<Vec<u8>> = soup(5_000)
            .chain(literal_soup(ENGINE_ANCHORS, 5_000))
            .collect();
        let hay = lines.join(&b'\n');
        let found = find_all(&teddy, &hay);
        assert_eq!(find_all(&automaton, &hay), found);
        let mut want = Vec::new();
        for at in 0..hay.len() {
            for (i, p) in pieces.iter().enumerate() {
                if hay[at..].starts_with(p.piece()) {
                    want.push((at, i));
                }
            }
        }
        assert_eq!(found, want);
        assert!(found.len() > 5_000, "{}", found.len());
    }
}
