//! The common shape of a vLLM `Generated response` request-log line (`--enable-log-outputs`),
//! parsed from its bytes. The reference is `parse_vllm_line` in harmony_doctor/inputs/tokens.py,
//! applied to the line decoded as UTF-8 with replacement: whatever this parser cannot prove it
//! answers the same way (Unicode whitespace or word characters, a cut or unusual id list, an id
//! Python range-checks against openai-harmony) yields `None`, and the caller takes Python's path.
//! The line's words are `Words`, made of harmony_doctor/inputs/log_words.py's.

use memchr::memmem;

/// The words of a `Generated response` line (harmony_doctor/inputs/log_words.py `VLLM_*`).
#[derive(Debug, Clone)]
pub struct Words {
    /// (bytes, not a `memmem::Finder`: a pyclass holding one crashed, its AVX2 state unaligned)
    generated: Vec<u8>,
    output_key: Vec<u8>,
    finish_key: Vec<u8>,
    delta: Vec<u8>,
    complete: Vec<u8>,
    /// what the line logs for no ids (Python's `None`), and the finish reasons that are none
    no_ids: Vec<u8>,
    no_reasons: Vec<Vec<u8>>,
}

impl Words {
    /// `modes`: the delta's mark, then the complete stream's. Err on an empty word (it would
    /// match everywhere).
    pub fn new(
        generated: &str,
        output_key: &str,
        finish_key: &str,
        modes: &[String],
        no_ids: &str,
        no_reasons: &[String],
    ) -> Result<Words, String> {
        let [delta, complete] = modes else {
            return Err("the streaming modes are two: delta, complete".into());
        };
        if [generated, output_key, finish_key, delta, complete, no_ids]
            .iter()
            .any(|w| w.is_empty())
        {
            return Err("a completion line's word is empty".into());
        }
        Ok(Words {
            generated: generated.as_bytes().to_vec(),
            output_key: output_key.as_bytes().to_vec(),
            finish_key: finish_key.as_bytes().to_vec(),
            delta: delta.as_bytes().to_vec(),
            complete: complete.as_bytes().to_vec(),
            no_ids: no_ids.as_bytes().to_vec(),
            no_reasons: no_reasons.iter().map(|r| r.as_bytes().to_vec()).collect(),
        })
    }
}
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
fn generated<'a>(line: &'a [u8], words: &Words) -> Option<(&'a [u8], Mode)> {
    let start = memmem::find(line, &words.generated)? + words.generated.len();
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
    let mode = if after.starts_with(&words.delta) {
        Mode::Delta
    } else if after.starts_with(&words.complete) {
        Mode::Complete
    } else {
        Mode::Whole
    };
    Some((&rest[..end], mode))
}

/// A `Generated response` line's mode: a streamed response's part, all of it, or neither.
#[derive(PartialEq, Eq)]
enum Mode {
    Delta,
    Complete,
    Whole,
}

/// `_ids_after(line, "output_token_ids", n)` when the list is whole and plain: `Some(None)` for
/// `None`, `Some(Some(ids))` for `[...]`, `None` for anything Python's loop or errors decide.
fn output_ids(line: &[u8], vocab_size: u32, words: &Words) -> Option<Option<Vec<u32>>> {
    let at = memmem::rfind(line, &words.output_key)? + words.output_key.len();
    let mut rest = &line[at..];
    while let [b' ' | b':' | b'=', tail @ ..] = rest {
        rest = tail;
    }
    if rest.starts_with(&words.no_ids) {
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
fn finish_reason<'a>(line: &'a [u8], words: &Words) -> Option<Option<&'a [u8]>> {
    let Some(at) = memmem::rfind(line, &words.finish_key) else {
        return Some(None); // Python searches the last character alone: no match
    };
    let rest = &line[at + words.finish_key.len()..];
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
pub fn output_line(line: &[u8], vocab_size: u32, words: &Words) -> Option<OutputLine> {
    let (id, mode) = generated(line, words)?;
    let ids = output_ids(line, vocab_size, words)?;
    let reason = finish_reason(line, words)?
        .filter(|r| !words.no_reasons.iter().any(|none| none == r))
        .map(|r| String::from_utf8_lossy(r).into_owned());
    Some(OutputLine {
        // ASCII only (checked above), so the conversion never replaces anything.
        request_id: String::from_utf8_lossy(id).into_owned(),
        complete: mode == Mode::Complete,
        delta: mode == Mode::Delta,
        ids,
        finish_reason: reason,
    })
}

#[cfg(feature = "python")]
// PyO3 0.22's #[pymethods] expansion converts PyErr into PyErr (a false positive, fixed in 0.23)
#[allow(clippy::useless_conversion)]
pub mod python {
    use pyo3::exceptions::PyValueError;
    use pyo3::prelude::*;
    use pyo3::types::PyTuple;

    use super::Words;

    /// Lines at least this long are parsed with the GIL released.
    const LONG_LINE: usize = 64 * 1024;

    /// A vLLM `Generated response` line in its common shape (see `Completions.output_line`).
    #[pyclass(frozen, get_all, module = "harmony_doctor._native")]
    pub struct OutputLine {
        request_id: PyObject,
        complete: PyObject,
        delta: PyObject,
        ids: PyObject,
        finish_reason: PyObject,
    }

    /// What settles a `Generated response` line (see `Completions.output_key`).
    #[pyclass(frozen, get_all, module = "harmony_doctor._native")]
    pub struct OutputKey {
        request_id: PyObject,
        complete: PyObject,
        finish_reason: PyObject,
        key: PyObject,
    }

    /// vLLM's `Generated response` lines read, made of their words
    /// (harmony_doctor/inputs/log_words.py).
    #[pyclass(frozen, module = "harmony_doctor._native")]
    pub struct Completions {
        words: Words,
    }

    #[pymethods]
    impl Completions {
        /// ValueError when a word cannot be read as given (see `Words::new`).
        #[new]
        #[pyo3(signature = (*, generated, output_key, finish_key, modes, no_ids, no_reasons))]
        fn new(
            generated: String,
            output_key: String,
            finish_key: String,
            modes: Vec<String>,
            no_ids: String,
            no_reasons: Vec<String>,
        ) -> PyResult<Self> {
            let words = Words::new(
                &generated,
                &output_key,
                &finish_key,
                &modes,
                &no_ids,
                &no_reasons,
            )
            .map_err(PyValueError::new_err)?;
            Ok(Completions { words })
        }

        /// A vLLM `Generated response` line in its common shape, or None: then Python's
        /// `parse_vllm_line` decides (harmony_doctor/inputs/tokens.py).
        fn output_line(&self, py: Python<'_>, line: &[u8], vocab_size: u32) -> Option<OutputLine> {
            // Most lines take a microsecond: releasing the GIL would cost more than it frees (and
            // may hand it to a waiting thread). Long lines (huge id lists) release it.
            let parse = || super::output_line(line, vocab_size, &self.words);
            let parsed = if line.len() >= LONG_LINE {
                py.allow_threads(parse)
            } else {
                parse()
            };
            // The ids as a tuple: what the record holds (a list would be copied into one).
            parsed.map(|p| OutputLine {
                request_id: p.request_id.into_py(py),
                complete: p.complete.into_py(py),
                delta: p.delta.into_py(py),
                ids: p
                    .ids
                    .map(|ids| PyTuple::new_bound(py, ids).into_any().unbind())
                    .into_py(py),
                finish_reason: p.finish_reason.into_py(py),
            })
        }

        /// What the scan needs to settle a `Generated response` line without building its
        /// tokens: the ids' `clean_key` (None when the line logs `None`) instead of the ids; None
        /// where `vllm_output_line` would be None (harmony_doctor/scan/source.py).
        fn output_key(
            &self,
            py: Python<'_>,
            line: &[u8],
            vocab_size: u32,
            first_special: i64,
            message: i64,
        ) -> Option<OutputKey> {
            let parsed = super::output_line(line, vocab_size, &self.words)?;
            let key = parsed.ids.as_ref().map(|ids| {
                let wide: Vec<i64> = ids.iter().map(|&t| i64::from(t)).collect();
                let key = crate::harmony::clean_key(&wide, first_special, message);
                PyTuple::new_bound(py, key).into_any().unbind()
            });
            Some(OutputKey {
                request_id: parsed.request_id.into_py(py),
                complete: parsed.complete.into_py(py),
                finish_reason: parsed.finish_reason.into_py(py),
                key: key.into_py(py),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const VOCAB: u32 = 201_088;

    fn output_line(line: &[u8], vocab_size: u32) -> Option<OutputLine> {
        super::output_line(line, vocab_size, &crate::fixture::COMPLETIONS)
    }
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
