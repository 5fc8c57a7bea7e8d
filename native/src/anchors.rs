//! The prefilter: the literals a line must hold to matter, searched as rare pieces; line rules.
//!
//! Two kinds of literal. The error anchors are failure text: the caller hands them over (the
//! Python package's `ERROR_ANCHORS`, harmony_doctor/scan/core.py) and this crate holds none.
//! The structural literals of the other rules (markup, id lines, access and request lines)
//! are named by `Structural`.

use std::sync::LazyLock;

use memchr::{memchr, memmem};
use regex::bytes::Regex;

use crate::lines::{skip_ws, WS};
use crate::pieces::{self, Piece, Search};

/// The literals of the rules that are not failure text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Structural {
    /// Harmony markup: a hit when the line also matches the caller's markup-line rule (a
    /// logged content field, a header remainder quoted on its own). Searched apart.
    Markup,
    /// An id line, when `\s*[:=]` follows.
    Ids,
    /// An OpenAI-style access line, when a chat/completions/responses endpoint follows.
    Post,
    Get,
    /// A gin access line (ollama), when the whole line matches `GIN`.
    GinPost,
    GinGet,
    /// A received-request line (unless the line is an access line too).
    Received,
    /// A server's own request line (llama.cpp; LM Studio's says `to`), when a generation
    /// endpoint follows.
    Request,
    RequestTo,
}

impl Structural {
    /// The literals searched as pieces (markup is searched apart, with memmem).
    const SEARCHED: [Structural; 8] = [
        Structural::Ids,
        Structural::Post,
        Structural::Get,
        Structural::GinPost,
        Structural::GinGet,
        Structural::Received,
        Structural::Request,
        Structural::RequestTo,
    ];

    pub fn literal(self) -> &'static [u8] {
        match self {
            Structural::Markup => b"<|",
            Structural::Ids => b"output_token_ids",
            Structural::Post => b"\"POST /v1/",
            Structural::Get => b"\"GET /v1/",
            Structural::GinPost => b"| POST",
            Structural::GinGet => b"| GET",
            Structural::Received => b"Received request ",
            Structural::Request => b"request: POST /",
            Structural::RequestTo => b"request: POST to /",
        }
    }
}

/// What a literal is: an error anchor (any one makes a hit) or a structural literal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Of {
    Anchor,
    Rule(Structural),
}

/// A bytes regex (`(?-u)`: `\s`, `[a-z]` and case folding on ASCII bytes, as Python's).
pub(crate) fn re(pattern: &str) -> Regex {
    Regex::new(&format!("(?-u){pattern}")).unwrap()
}

static MARKUP: LazyLock<memmem::Finder<'static>> =
    LazyLock::new(|| memmem::Finder::new(Structural::Markup.literal()));
static GIN: LazyLock<Regex> = LazyLock::new(|| {
    re(&format!(
        r#"\| (?:POST|GET){WS}+"/(?:api/chat|api/generate|v1/[a-z/]+)""#
    ))
});

/// The first markup literal in `hay`.
pub(crate) fn find_markup(hay: &[u8]) -> Option<usize> {
    MARKUP.find(hay)
}

/// Which rules a line (already cut to max_line) matches.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Kinds {
    pub hit: bool,
    pub access: bool,
    pub received: bool,
    pub ids: bool,
}

/// The searcher of the error anchors it was given and of the structural literals.
pub struct Prefilter {
    anchors: Vec<Vec<u8>>,
    /// what else a line holding `<|` must show to be a hit (the caller's rule, as given)
    markup_source: String,
    markup_line: Regex,
    /// by pattern index in `search`
    pieces: Vec<Piece<Of>>,
    search: Search,
}

impl Prefilter {
    /// Err for anchors that cannot be searched as the Python reference does: an empty one
    /// (every line would be a hit), one holding a newline (the rules are per line), one with
    /// no piece of its own (see `pieces::choose`).
    /// `markup_line`: the caller's rule (a regex, ASCII bytes semantics) for lines with `<|`.
    pub fn new<A: AsRef<[u8]>>(anchors: &[A], markup_line: &str) -> Result<Prefilter, String> {
        let markup = Regex::new(&format!("(?-u){markup_line}"))
            .map_err(|e| format!("markup-line rule: {e}"))?;
        let mut literals: Vec<(&[u8], Of)> = Structural::SEARCHED
            .iter()
            .map(|&s| (s.literal(), Of::Rule(s)))
            .collect();
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
                 literal's piece (an anchor as long as a structural literal's piece?)",
                literal.escape_ascii()
            )
        })?;
        let search = Search::new(&pieces)?;
        Ok(Prefilter {
            anchors: anchors.iter().map(|a| a.as_ref().to_vec()).collect(),
            markup_source: markup_line.to_string(),
            markup_line: markup,
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
        let (mut anchor, mut access, mut ids, mut gin, mut received) =
            (false, false, false, false, false);
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
                && (before.is_empty() || hay[at - p.offset..at] == *before)
            {
                match p.kind {
                    Of::Anchor => anchor = true,
                    Of::Rule(Structural::Post | Structural::Get) => {
                        access = access || endpoint_at(&hay[after..le]);
                    }
                    Of::Rule(Structural::Ids) => ids = ids || ids_at(&hay[after..le]),
                    Of::Rule(Structural::GinPost | Structural::GinGet) => gin = true,
                    Of::Rule(Structural::Received) => received = true,
                    Of::Rule(Structural::Request | Structural::RequestTo) => {
                        access = access || request_at(&hay[after..le]);
                    }
                    Of::Rule(Structural::Markup) => {} // searched apart, never a piece
                }
            }
            next = self.next_piece(hay, at + 1, end);
        }
        let text = &hay[ls..le];
        let hit = anchor || (markup && self.markup_line.is_match(text));
        let access = access || gin && GIN.is_match(text);
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

/// `(?:chat/completions|responses|completions)[ ?"]` at the start of `r`.
fn endpoint_at(r: &[u8]) -> bool {
    [&b"chat/completions"[..], b"responses", b"completions"]
        .iter()
        .any(|ep| r.starts_with(ep) && matches!(r.get(ep.len()), Some(b' ' | b'?' | b'"')))
}

/// The generation endpoints of a server's own request line (harmony_doctor/scan/core.py
/// `REQUEST_ENDPOINTS`: llama.cpp's llama-server, LM Studio), without their leading `/`.
const REQUEST_ENDPOINTS: [&[u8]; 10] = [
    b"v1/chat/completions",
    b"chat/completions",
    b"v1/completions",
    b"completions",
    b"completion",
    b"v1/responses",
    b"responses",
    b"v1/messages",
    b"infill",
    b"api/chat",
];

/// `(?:<a request endpoint>) ` at the start of `r` (the rest of a request line).
fn request_at(r: &[u8]) -> bool {
    REQUEST_ENDPOINTS
        .iter()
        .any(|ep| r.starts_with(ep) && r.get(ep.len()) == Some(&b' '))
}

/// `\s*[:=]` at the start of `r` (the rest of `output_token_ids\s*[:=]`).
fn ids_at(r: &[u8]) -> bool {
    let i = skip_ws(r, 0);
    matches!(r.get(i), Some(b':' | b'='))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{
        core, glue, literal_soup, run, soup, ANCHORS, ENGINE_ANCHORS, MARKUP_LINE,
    };

    fn prefilter() -> Prefilter {
        Prefilter::new(ANCHORS, MARKUP_LINE).unwrap()
    }

    /// The rule's cases below are written for the engine forms' anchors.
    fn classify(text: &[u8]) -> Kinds {
        Prefilter::new(ENGINE_ANCHORS, MARKUP_LINE)
            .unwrap()
            .classify(text)
    }

    /// What the rule makes of a list of anchors (a change of rank shows here).
    #[test]
    fn pieces_follow_the_rule() {
        let pf = Prefilter::new(ENGINE_ANCHORS, MARKUP_LINE).unwrap();
        let pieces: Vec<String> = pf
            .pieces
            .iter()
            .map(|p| String::from_utf8_lossy(p.piece()).into_owned())
            .collect();
        let want = [
            "put_token_ids",
            "\"POST /v1/",
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
        let err = |a: &[&[u8]]| Prefilter::new(a, MARKUP_LINE).err().unwrap();
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
        let pf = Prefilter::new(&anchors, MARKUP_LINE).unwrap();
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
        let many = Prefilter::new(&many, MARKUP_LINE).unwrap();
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
        let pf = Prefilter::new(&anchors, MARKUP_LINE).unwrap();
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
        let structural = Structural::SEARCHED.iter().map(|s| s.literal());
        let all: Vec<&[u8]> = ANCHORS.iter().copied().chain(structural).collect();
        literal_soup(&all, n)
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
            let received = contains(&line, Structural::Received.literal());
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
        let pf = Prefilter::new(ENGINE_ANCHORS, MARKUP_LINE).unwrap();
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
        // llama-server's request lines, LM Studio's; never a non-generation endpoint, a
        // request body (verbose) or a response
        for line in [
            &b"srv  log_server_r: request: POST /v1/chat/completions 127.0.0.1 200"[..],
            b"srv  log_server_r: done request: POST /completion 172.20.0.22 500",
            b"[51973] srv  log_server_r: done request: POST /v1/messages ::1 200",
            b"[2026-07-26 22:24:10][DEBUG] Received request: POST to /v1/responses with body {",
        ] {
            assert!(classify(line).access, "{:?}", String::from_utf8_lossy(line));
        }
        for line in [
            &b"srv  log_server_r: request: GET /slots 127.0.0.1 200"[..],
            b"srv  log_server_r: request: POST /v1/messages/count_tokens 127.0.0.1 200",
            b"srv  log_server_r: request: POST /tokenize 127.0.0.1 200",
            b"srv  log_server_r: request: POST /v1/chat/completions",
            b"srv  log_server_r: request:  {\"messages\": []}",
            b"srv  log_server_r: response: {\"error\":{\"code\":500}}",
        ] {
            assert!(
                !classify(line).access,
                "{:?}",
                String::from_utf8_lossy(line)
            );
        }
        let k =
            classify(b"request: POST /v1/completions \"POST /v1/completions\" Received request x");
        assert!(k.access && !k.received);
    }

    /// The hand-written access and id-line rules agree with the reference's regexes
    /// (harmony_doctor/scan/core.py `_ACCESS`, `_IDS`) on fragment soup.
    #[test]
    fn rules_agree_with_the_regexes() {
        let pf = prefilter();
        let ids = re(&format!("output_token_ids{WS}*[:=]"));
        let access = re(r#""(?:POST|GET) /v1/(?:chat/completions|responses|completions)[ ?"]"#);
        let mut agreed = [0usize; 2];
        for line in soup(200_000) {
            let k = pf.classify(&line);
            let want = access.is_match(&line);
            assert_eq!(k.access, want, "{:?}", String::from_utf8_lossy(&line));
            agreed[0] += usize::from(want);
            let want = ids.is_match(&line);
            assert_eq!(k.ids, want, "{:?}", String::from_utf8_lossy(&line));
            agreed[1] += usize::from(want);
        }
        // the soup does exercise the positive cases
        assert!(agreed.iter().all(|&n| n > 100), "{agreed:?}");
    }

    /// Pieces of request lines (llama-server's, LM Studio's) and of the other access rules.
    const REQUEST_FRAGMENTS: &[&[u8]] = &[
        b"request: POST ",
        b"request: POST /",
        b"request: POST /v1/",
        b"request: POST to /",
        b"request: POST to /v1/",
        b"chat/completions ",
        b"completion ",
        b"messages ",
        b"request: POS",
        b"request:  ",
        b"request: GET /",
        b"done ",
        b"to ",
        b"to /",
        b"/",
        b"v1/",
        b"chat/completions",
        b"completions",
        b"completion",
        b"responses",
        b"messages",
        b"infill",
        b"api/chat",
        b"api/generate",
        b"health",
        b"/count_tokens",
        b" ",
        b"\t",
        b"127.0.0.1 200",
        b"\"",
        b"\"POST /v1/",
        b"?",
        b"| POST ",
        b"\"/",
        b"\"POST /v1/completions\"",
        b"| POST \"/api/chat\"",
        b"x",
        b"srv  log_server_r: ",
        b"Received request: POST to ",
    ];

    /// A line is an access line iff one of the reference's three rules matches it
    /// (harmony_doctor/scan/core.py `_ACCESS`, `_GIN`, `_REQUEST_LINE`), on request-line soup:
    /// counted once whichever rules match.
    #[test]
    fn request_lines_agree_with_the_regexes() {
        let pf = prefilter();
        let quoted = re(r#""(?:POST|GET) /v1/(?:chat/completions|responses|completions)[ ?"]"#);
        let gin = re(&format!(
            r#"\| (?:POST|GET){WS}+"/(?:api/chat|api/generate|v1/[a-z/]+)""#
        ));
        let request = re(concat!(
            r"request: POST (?:to )?/(?:v1/chat/completions|chat/completions|v1/completions",
            r"|completions|completion|v1/responses|responses|v1/messages|infill|api/chat) ",
        ));
        let frags = REQUEST_FRAGMENTS.iter().map(|f| f.to_vec()).collect();
        let (mut requests, mut both) = (0usize, 0usize);
        for line in glue(frags, 200_000) {
            let k = pf.classify(&line);
            let by_request = request.is_match(&line);
            let by_others = quoted.is_match(&line) || gin.is_match(&line);
            assert_eq!(
                k.access,
                by_request || by_others,
                "{:?}",
                String::from_utf8_lossy(&line)
            );
            requests += usize::from(by_request);
            both += usize::from(by_request && by_others);
        }
        assert!(requests > 1000 && both > 20, "{requests} {both}");
    }
}
