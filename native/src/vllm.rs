//! The common shape of a vLLM `Generated response` request-log line (`--enable-log-outputs`),
//! parsed from its bytes. The reference is `parse_vllm_line` in harmony_doctor/inputs/tokens.py,
//! applied to the line decoded as UTF-8 with replacement: whatever this parser cannot prove it
//! answers the same way (Unicode whitespace or word characters, a cut or unusual id list, an id
//! Python range-checks against openai-harmony) yields `None`, and the caller takes Python's path.

use memchr::memmem;

const GENERATED: &[u8] = b"Generated response ";
const OUTPUT_KEY: &[u8] = b"output_token_ids";
const FINISH_KEY: &[u8] = b"finish_reason";
const DELTA: &[u8] = b" (streaming delta)";
const COMPLETE: &[u8] = b" (streaming complete)";
/// Python's fast path takes numbers of at most 9 digits (zero padding counts); longer ones
/// take its error path.
const MAX_DIGITS: usize = 9;

/// One parsed line, as `VllmRecord` holds it (the list's `]` is always there: `cut` is false).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputLine {
    pub request_id: String,
    /// `(streaming complete)`: the line holds the whole stream, not a part of it.
    pub complete: bool,
    /// `(streaming delta)`: one part of a streamed response.
    pub delta: bool,
    /// `None` when the line logs `output_token_ids: None`.
    pub ids: Option<Vec<u32>>,
    /// `None` also for `None` and `streaming_complete`.
    pub finish_reason: Option<String>,
}

/// ASCII bytes Python's `\s` matches in a str pattern (`str.isspace`): note \x1c..\x1f.
fn is_space(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | 0x1c..=0x1f | b' ')
}

/// ASCII bytes Python's `\w` matches in a str pattern.
fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// `_GENERATED_RE.search`: (request id, mode) after the first `Generated response `, or None
/// when Python could match elsewhere or read a non-ASCII character differently.
fn generated(line: &[u8]) -> Option<(&[u8], &[u8])> {
    let start = memmem::find(line, GENERATED)? + GENERATED.len();
    let rest = &line[start..];
    // `[^\s:]+`: a byte >= 0x80 may decode to Unicode whitespace (U+00A0, U+2028, ...).
    let end = rest
        .iter()
        .position(|&b| b >= 0x80 || b == b':' || is_space(b))
        .unwrap_or(rest.len());
    if end == 0 || rest.get(end).is_some_and(|&b| b >= 0x80) {
        return None; // no id here (Python searches on) or a doubtful end
    }
    let after = &rest[end..];
    let mode = [DELTA, COMPLETE]
        .into_iter()
        .find(|m| after.starts_with(m))
        .unwrap_or(b"");
    Some((&rest[..end], mode))
}

/// `_ids_after(line, "output_token_ids", n)` when the list is whole and plain: `Some(None)` for
/// `None`, `Some(Some(ids))` for `[...]`, `None` for anything Python's loop or errors decide.
fn output_ids(line: &[u8], vocab_size: u32) -> Option<Option<Vec<u32>>> {
    let at = memmem::rfind(line, OUTPUT_KEY)? + OUTPUT_KEY.len();
    let mut rest = &line[at..];
    while let [b' ' | b':' | b'=', tail @ ..] = rest {
        rest = tail;
    }
    if rest.starts_with(b"None") {
        return Some(None);
    }
    let inner = rest.strip_prefix(b"[")?;
    let close = memchr::memchr(b']', inner)?; // a cut list: Python notes it
    let mut ids = Vec::with_capacity(close / 4 + 1);
    let mut digits = 0usize;
    let mut value = 0u32;
    for &b in &inner[..close] {
        match b {
            b'0'..=b'9' => {
                digits += 1;
                if digits > MAX_DIGITS {
                    return None;
                }
                value = value * 10 + u32::from(b - b'0');
            }
            b',' | b' ' => {
                if digits > 0 {
                    if value >= vocab_size {
                        return None; // openai-harmony's own table decides
                    }
                    ids.push(value);
                }
                digits = 0;
                value = 0;
            }
            _ => return None, // signs, tabs, stray text: Python's loop names them
        }
    }
    if digits > 0 {
        if value >= vocab_size {
            return None;
        }
        ids.push(value);
    }
    Some(Some(ids))
}

/// `_FINISH_RE.search(line[line.rfind("finish_reason"):])`: `Some(None)` when it does not
/// match, `None` when a non-ASCII byte could change Python's answer.
fn finish_reason(line: &[u8]) -> Option<Option<&[u8]>> {
    let Some(at) = memmem::rfind(line, FINISH_KEY) else {
        return Some(None); // Python searches the last character alone: no match
    };
    let rest = &line[at + FINISH_KEY.len()..];
    let Some((b':' | b'=', rest)) = rest.split_first() else {
        return Some(None);
    };
    let spaces = rest.iter().take_while(|&&b| is_space(b)).count();
    let rest = &rest[spaces..];
    let rest = rest.strip_prefix(b"'").unwrap_or(rest);
    // \s and \w are disjoint, so backtracking never finds another reading: the reason is the
    // word run right after the spaces and the optional quote.
    let word = rest.iter().take_while(|&&b| is_word(b)).count();
    if rest.get(word).is_some_and(|&b| b >= 0x80) {
        return None; // a Unicode space, quote-less word or letter may continue the match
    }
    if word == 0 {
        return Some(None);
    }
    Some(Some(&rest[..word]))
}

/// The line as `parse_vllm_line(line.decode("utf-8", "replace"), n)` reads it, when that is
/// certain without Python; `None` means "ask Python" (also for lines of any other kind).
pub fn output_line(line: &[u8], vocab_size: u32) -> Option<OutputLine> {
    let (id, mode) = generated(line)?;
    let ids = output_ids(line, vocab_size)?;
    let reason = finish_reason(line)?
        .filter(|r| !matches!(*r, b"None" | b"streaming_complete"))
        .map(|r| String::from_utf8_lossy(r).into_owned());
    Some(OutputLine {
        // ASCII only (checked above), so the conversion never replaces anything.
        request_id: String::from_utf8_lossy(id).into_owned(),
        complete: mode == COMPLETE,
        delta: mode == DELTA,
        ids,
        finish_reason: reason,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const VOCAB: u32 = 201_088;
    const LINE: &[u8] = b"(APIServer pid=1000) INFO 11-01 00:00:00 [logger.py:71] Generated \
        response chatcmpl-00000000: output: 'analysis...', output_token_ids: [200005, 35644, \
        200008, 1844, 200002], finish_reason: stop";

    fn parsed(line: &[u8]) -> Option<OutputLine> {
        output_line(line, VOCAB)
    }

    fn line(id: &str, ids: Option<Vec<u32>>, reason: Option<&str>) -> OutputLine {
        OutputLine {
            request_id: id.into(),
            complete: false,
            delta: false,
            ids,
            finish_reason: reason.map(Into::into),
        }
    }

    #[test]
    fn reads_the_common_line() {
        let want = line(
            "chatcmpl-00000000",
            Some(vec![200005, 35644, 200008, 1844, 200002]),
            Some("stop"),
        );
        assert_eq!(parsed(LINE), Some(want));
    }

    #[test]
    fn reads_streaming_modes_and_none() {
        let delta = b"Generated response r1 (streaming delta): output: 'x', \
            output_token_ids: [1,2], finish_reason: None";
        let got = parsed(delta).unwrap();
        assert!(got.delta && !got.complete);
        assert_eq!((got.ids, got.finish_reason), (Some(vec![1, 2]), None));
        let complete = b"Generated response r1 (streaming complete): output: 'x', \
            output_token_ids: None, finish_reason: streaming_complete";
        let got = parsed(complete).unwrap();
        assert!(got.complete && !got.delta);
        assert_eq!((got.ids, got.finish_reason), (None, None));
        // An unknown mode is not part of the match: the id ends at the space.
        let other = b"Generated response r1 (streaming other): output_token_ids: []";
        let got = parsed(other).unwrap();
        assert!(!got.complete && !got.delta);
        assert_eq!((got.request_id.as_str(), got.ids), ("r1", Some(vec![])));
    }

    #[test]
    fn finish_reason_variants() {
        let with = |tail: &str| {
            let text = format!("Generated response r: output_token_ids: [1] {tail}");
            output_line(text.as_bytes(), VOCAB).map(|l| l.finish_reason)
        };
        assert_eq!(with("finish_reason=length"), Some(Some("length".into())));
        assert_eq!(with("finish_reason: 'stop'"), Some(Some("stop".into())));
        assert_eq!(with("finish_reason:\t\x1c stop"), Some(Some("stop".into())));
        assert_eq!(with("finish_reason: None"), Some(None));
        assert_eq!(with("finish_reason - stop"), Some(None));
        assert_eq!(with("finish_reason: ''"), Some(None));
        assert_eq!(with(""), Some(None));
        // The last occurrence decides, even one that does not match.
        assert_eq!(with("finish_reason: stop finish_reason"), Some(None));
        // Non-ASCII next to the reason: Python's Unicode \s and \w decide.
        assert_eq!(with("finish_reason: st\u{f6}p"), None);
        assert_eq!(with("finish_reason:\u{a0}stop"), None);
        assert_eq!(with("finish_reason: stop\u{e9}"), None);
        assert_eq!(
            with("finish_reason: stop \u{e9}"),
            Some(Some("stop".into()))
        );
    }

    #[test]
    fn doubtful_lines_take_python() {
        for text in [
            &b"Received request r: prompt_token_ids: [1]"[..],
            b"Generated response : output_token_ids: [1]", // Python searches further
            b"Generated response  r: output_token_ids: [1]",
            b"Generated response r\xc2\xa0x: output_token_ids: [1]", // U+00A0 is \s
            b"Generated response r\xc3\xa9: output_token_ids: [1]",
            b"Generated response r: output_token_ids: [1, 2", // cut
            b"Generated response r: output_token_ids: [1,\t2]",
            b"Generated response r: output_token_ids: [-1]",
            b"Generated response r: output_token_ids: [0000000001]",
            b"Generated response r: output_token_ids: [201088]",
            b"Generated response r: output_token_ids: [\xd9\xa1]", // Arabic-Indic one
            b"Generated response r: output_token_ids: 1, 2",
            b"Generated response r: output: 'no ids'",
        ] {
            assert_eq!(parsed(text), None, "{:?}", String::from_utf8_lossy(text));
        }
    }

    #[test]
    fn the_last_key_and_the_first_bracket_count() {
        let text = b"Generated response r: output: 'output_token_ids: [9]', \
            output_token_ids: [1, 2]x], finish_reason: stop";
        assert_eq!(parsed(text).unwrap().ids, Some(vec![1, 2]));
        let spaced = b"Generated response r: output_token_ids :=  [ 7 ,, 8 , ]";
        assert_eq!(parsed(spaced).unwrap().ids, Some(vec![7, 8]));
        let nine = b"Generated response r: output_token_ids: [000000001, 201087]";
        assert_eq!(parsed(nine).unwrap().ids, Some(vec![1, 201087]));
    }

    #[test]
    fn the_first_occurrence_names_the_request() {
        let text = b"Generated response a:b (streaming delta) Generated response c: \
            output_token_ids: [5]";
        let got = parsed(text).unwrap();
        assert_eq!(got.request_id, "a");
        assert!(!got.delta, "the mode must follow the id directly");
    }
}
