//! Line shapes: what a request or completion line holds (the caller's `LINE_SHAPES`,
//! harmony_doctor/faults/shapes.py), what it counts as, and the rule that checks the rest of a
//! line after one of its literals (crate::anchors searches the literals).

use regex::bytes::Regex;

use crate::lines::{skip_ws, starts};

/// What a line of a shape counts as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counts {
    /// a request line (counted once, whichever shapes it has)
    Access,
    /// a received request (unless the line is an access line too)
    Received,
    /// a completion's id line
    Ids,
}

impl Counts {
    /// `access`, `received` or `ids` (harmony_doctor/faults/shapes.py `Counts`).
    pub fn named(name: &str) -> Result<Counts, String> {
        match name {
            "access" => Ok(Counts::Access),
            "received" => Ok(Counts::Received),
            "ids" => Ok(Counts::Ids),
            other => Err(format!(
                "a line shape counts {other:?}: not access, received, ids"
            )),
        }
    }
}

/// A line shape as the caller hands it (harmony_doctor/faults/shapes.py `LineShape`): a line
/// holding one of `literals`, then (blanks when `blanks`) one of `words`, then one of the
/// bytes of `then` (anything when empty); with `line`, the line matches that regex instead.
#[derive(Debug, Clone)]
pub struct Shape {
    pub counts: Counts,
    pub literals: Vec<Vec<u8>>,
    pub words: Vec<Vec<u8>>,
    pub blanks: bool,
    pub then: Vec<u8>,
    pub line: Option<String>,
}

/// A shape ready to check: its line regex compiled.
pub(crate) struct Rule {
    pub(crate) counts: Counts,
    pub(crate) words: Vec<Vec<u8>>,
    pub(crate) blanks: bool,
    pub(crate) then: Vec<u8>,
    pub(crate) line: Option<Regex>,
}

impl Rule {
    /// Whether `r`, the rest of the line after one of the shape's literals, goes on as the
    /// shape does (always true for a shape with a line regex: see `classify_line`).
    #[inline]
    pub(crate) fn follows(&self, r: &[u8]) -> bool {
        let r = if self.blanks { &r[skip_ws(r, 0)..] } else { r };
        self.words.iter().any(|w| {
            starts(r, w)
                && (self.then.is_empty() || r.get(w.len()).is_some_and(|b| self.then.contains(b)))
        })
    }
}

/// Which rules a line (already cut to max_line) matches.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Kinds {
    pub hit: bool,
    pub access: bool,
    pub received: bool,
    pub ids: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::anchors::{re, Prefilter};
    use crate::testing::{glue, soup, ENGINE_ANCHORS, MARKUP_LINE, SHAPES, SHAPE_REGEXES};

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

    fn prefilter() -> Prefilter {
        Prefilter::new(crate::testing::ANCHORS, MARKUP_LINE, &SHAPES).unwrap()
    }

    /// The rule's cases below are written for the engine forms' anchors.
    fn classify(text: &[u8]) -> Kinds {
        Prefilter::new(ENGINE_ANCHORS, MARKUP_LINE, &SHAPES)
            .unwrap()
            .classify(text)
    }

    /// One regex: the Python core's regexes of the shapes that count `counts`.
    fn regex_of(counts: Counts) -> Regex {
        let regexes = SHAPES.iter().zip(SHAPE_REGEXES);
        let of: Vec<&str> = regexes
            .filter(|(s, _)| s.counts == counts)
            .map(|(_, r)| *r)
            .collect();
        re(&of.join("|"))
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

    /// The access and id-line rules agree with the reference's regexes (harmony_doctor/scan/
    /// core.py, made of the same shapes) on fragment soup.
    #[test]
    fn rules_agree_with_the_regexes() {
        let pf = prefilter();
        let (access, ids) = (regex_of(Counts::Access), regex_of(Counts::Ids));
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

    /// A line is an access line iff one of the reference's access shapes matches it
    /// (harmony_doctor/scan/core.py, the catalogue's regexes), on request-line soup: counted
    /// once whichever shapes match.
    #[test]
    fn request_lines_agree_with_the_regexes() {
        let pf = prefilter();
        let shapes = SHAPES.iter().zip(SHAPE_REGEXES);
        let access: Vec<Regex> = shapes
            .filter(|(s, _)| s.counts == Counts::Access)
            .map(|(_, r)| re(r))
            .collect();
        assert!(access.len() >= 3);
        let frags = REQUEST_FRAGMENTS.iter().map(|f| f.to_vec()).collect();
        let mut by = vec![0usize; access.len()];
        let mut several = 0usize;
        for line in glue(frags, 200_000) {
            let k = pf.classify(&line);
            let matched: Vec<bool> = access.iter().map(|r| r.is_match(&line)).collect();
            let n = matched.iter().filter(|&&m| m).count();
            assert_eq!(k.access, n > 0, "{:?}", String::from_utf8_lossy(&line));
            for (count, m) in by.iter_mut().zip(matched) {
                *count += usize::from(m);
            }
            several += usize::from(n > 1);
        }
        assert!(
            by.iter().all(|&n| n > 20) && several > 20,
            "{by:?} {several}"
        );
    }
}
