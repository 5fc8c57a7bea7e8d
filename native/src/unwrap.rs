//! Docker JSON, CRI and journald records unwrapped a whole chunk at a time, for a scan in its
//! steady state: the log keeps its own clock, so the wrapper's time says nothing a line does
//! not (a line's own stamp comes first, and a line without one takes the last one before it).
//! A wrapper's pid is kept only for lines that carry no pid of their own.
//!
//! The reference is `Unwrapper._lines_into` (harmony_doctor/inputs/wrappers.py). This answers
//! only for chunks whose every line is a complete record in the exact shape its writer uses:
//!   docker   `{"log":"<text>\n","stream":"<name>","time":"<time>"}`
//!   cri      `<RFC 3339 time> stdout|stderr F <text>`
//!   journal  `journalctl -o short` / `-o short-iso`: `<time> <host> <ident>[<pid>]: <text>`,
//!            the host left out or not (`--no-hostname`)
//! and declines (None) anything else (a plain line, a split record, an indented continuation,
//! JSON written some other way, escapes it does not decode exactly as Python's json does),
//! which Python then reads line by line. The wrappers' words (their keys, stream names, month
//! names) are `Words`, made of harmony_doctor/inputs/log_words.py's: none is written here.

use crate::chunk::Months;
use crate::json_line::{fields, get, json_string, Value};
use crate::stamps::{own_pid, HEAD};
pub use crate::wrapper_words::{WordList, Words};

/// The unwrapped text of a chunk's records (each inner line ending with `\n`), and how many
/// records of each wrapper it held.
#[derive(Debug, PartialEq, Eq)]
pub struct Records {
    pub text: Vec<u8>,
    pub docker: usize,
    pub cri: usize,
    pub journal: usize,
    pub json: usize,
    /// (line of the chunk, from 0; the wrapper's pid; its name) where the line names no pid
    pub pids: Vec<(usize, i64, &'static str)>,
}

/// `body`: whole lines, each ending with `\n`.
pub fn unwrap_records(body: &[u8], words: &Words) -> Option<Records> {
    let (last, lines) = body.split_last()?;
    if *last != b'\n' {
        return None;
    }
    let mut out = Records {
        text: Vec::with_capacity(body.len()),
        docker: 0,
        cri: 0,
        journal: 0,
        json: 0,
        pids: Vec::new(),
    };
    for (index, raw) in lines.split(|&b| b == b'\n').enumerate() {
        let line = raw.strip_suffix(b"\r").unwrap_or(raw);
        if line.first() == Some(&b'{') {
            let start = out.text.len();
            if docker_text(line, words, &mut out.text).is_some() {
                out.docker += 1;
            } else {
                out.text.truncate(start);
                let (text, pid, wrapper) = json_record(line, words)?;
                let name = match wrapper {
                    Wrapper::Docker => {
                        out.docker += 1;
                        "docker"
                    }
                    Wrapper::Journal => {
                        out.journal += 1;
                        "journal"
                    }
                    Wrapper::Json => {
                        out.json += 1;
                        "json"
                    }
                };
                keep_pid(&text, pid, (index, name), words, &mut out.pids);
                out.text.extend_from_slice(&text);
            }
        } else if let Some(text) = cri_text(line, words) {
            out.text.extend_from_slice(text);
            out.cri += 1;
        } else {
            let (text, pid) = journal_short(line, &words.months)?;
            keep_pid(text, pid, (index, "journal"), words, &mut out.pids);
            out.text.extend_from_slice(text);
            out.journal += 1;
        }
        out.text.push(b'\n');
    }
    Some(out)
}

/// A wrapper's pid, kept for a line that names no pid of its own.
fn keep_pid(
    text: &[u8],
    pid: Option<i64>,
    (index, wrapper): (usize, &'static str),
    words: &Words,
    pids: &mut Vec<(usize, i64, &'static str)>,
) {
    if let Some(pid) = pid {
        if own_pid(&text[..text.len().min(HEAD)], &words.stamps).is_none() {
            pids.push((index, pid, wrapper));
        }
    }
}

enum Wrapper {
    Docker,
    Journal,
    Json,
}

/// A JSON record's one inner line and pid, as `json_record` (inputs/json_records.py) reads
/// it; None where it reads none (the line is plain), several lines, or a piece of one.
fn json_record(line: &[u8], words: &Words) -> Option<(Vec<u8>, Option<i64>, Wrapper)> {
    let record = fields(line)?;
    let has = |key: &str| get(&record, key).is_some();
    let text = |value: Option<&Value>| match value {
        Some(Value::Text(text)) => Some(text.clone()),
        _ => None,
    };
    let message = words.journal_message.as_str();
    if has(message) && words.journal_marks.iter().any(|k| has(k)) {
        let message = match get(&record, message)? {
            Value::Text(text) => text.clone(),
            Value::Bytes(Some(bytes)) => bytes.clone(),
            _ => return None,
        };
        let given = get(&record, &words.journal_pid);
        return one_line(message, pid(given)?, Wrapper::Journal);
    }
    let [log, stream, time] = &words.docker;
    if let Some(log) = text(get(&record, log)) {
        if has(stream) && (has(time) || has(&words.docker_attrs)) {
            if log.last() != Some(&b'\n') {
                return None; // a piece of a split line: Python joins the pieces
            }
            return one_line(log, None, Wrapper::Docker);
        }
    }
    for field in &words.json_fields {
        let Some(value) = text(get(&record, field)) else {
            continue;
        };
        if words.meta_keys.iter().any(|k| k != field && has(k)) {
            // `record.get("pid", record.get("_PID"))`: the first key present
            let given = words.pid_keys.iter().find_map(|k| get(&record, k));
            return one_line(value, pid(given)?, Wrapper::Json);
        }
    }
    None
}

/// The text without one final newline, when it is one line.
fn one_line(
    mut text: Vec<u8>,
    pid: Option<i64>,
    wrapper: Wrapper,
) -> Option<(Vec<u8>, Option<i64>, Wrapper)> {
    if text.last() == Some(&b'\n') {
        text.pop();
    }
    (!text.contains(&b'\n')).then_some((text, pid, wrapper))
}

/// `pid_of` (inputs/json_records.py): an integer 0 <= pid < 10**18, or a string of at most 18
/// ASCII digits; Some(None) for no pid; None where Python's `str.isdigit` would read digits
/// this does not (left to Python).
fn pid(value: Option<&Value>) -> Option<Option<i64>> {
    match value {
        Some(Value::Int(pid)) => Some(*pid),
        Some(Value::Text(text)) if !text.is_ascii() => None,
        Some(Value::Text(text)) if !text.is_empty() && text.iter().all(u8::is_ascii_digit) => {
            Some(if text.len() <= 18 {
                std::str::from_utf8(text).ok()?.parse().ok()
            } else {
                None
            })
        }
        _ => Some(None),
    }
}

/// Python's `\s` on bytes: space, \t, \n, \r, \f, \v.
fn space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// A `journalctl -o short`/`short-iso` line's text and pid, as `_SHORT` in wrappers.py reads
/// it: `^(?:(Mon) ([ \d]\d) (\d\d:\d\d:\d\d)(?:\.\d+)?|(ISO)) (?:([^\s:\[]+) )?([^\s:\[]+)`
/// `(?:\[(\d+)\])?: ?`; None for a line Python reads as something else first (a logcli line)
/// or not at all.
fn journal_short<'a>(line: &'a [u8], months: &Months) -> Option<(&'a [u8], Option<i64>)> {
    let rest = if line.first().is_some_and(u8::is_ascii_digit) {
        let rest = rfc3339(line)?;
        if rest.starts_with(b" {") {
            return None; // logcli's `<time> {labels} ` is tried first: left to Python
        }
        rest
    } else {
        syslog_stamp(line, months)?
    };
    let rest = rest.strip_prefix(b" ")?;
    // the host, a word as the identifier is, then a blank; without it (`--no-hostname`), the
    // identifier comes first
    let host = word(rest);
    if host > 0 && rest.get(host) == Some(&b' ') {
        if let Some(found) = ident_and_pid(&rest[host + 1..]) {
            return Some(found);
        }
    }
    ident_and_pid(rest)
}

/// `[^\s:\[]*`: the length of the word at the start of `s`.
fn word(s: &[u8]) -> usize {
    s.iter()
        .position(|&b| space(b) || b == b':' || b == b'[')
        .unwrap_or(s.len())
}

/// `([^\s:\[]+)(?:\[(\d+)\])?: ?` at the start of `s`: the text after it, and the pid.
fn ident_and_pid(s: &[u8]) -> Option<(&[u8], Option<i64>)> {
    let ident = word(s);
    if ident == 0 {
        return None;
    }
    let mut rest = &s[ident..];
    let mut pid = None;
    if let Some(open) = rest.strip_prefix(b"[") {
        let digits = open.iter().take_while(|b| b.is_ascii_digit()).count();
        if digits == 0 || open.get(digits) != Some(&b']') {
            return None;
        }
        if digits <= 18 {
            pid = std::str::from_utf8(&open[..digits]).ok()?.parse().ok();
        }
        rest = &open[digits + 1..];
    }
    let rest = rest.strip_prefix(b":")?;
    Some((rest.strip_prefix(b" ").unwrap_or(rest), pid))
}

/// The rest of `s` after a syslog time, `Mon DD HH:MM:SS` (`DD` may start with a space), and
/// any fraction of a second.
fn syslog_stamp<'a>(s: &'a [u8], months: &Months) -> Option<&'a [u8]> {
    const SHAPE: &[u8] = b"Mmm dd dd:dd:dd";
    let head = s.get(..SHAPE.len())?;
    if !months.starts(head) {
        return None;
    }
    let fits = SHAPE
        .iter()
        .zip(head)
        .enumerate()
        .skip(3)
        .all(|(i, (&want, &b))| match want {
            b'd' if i == 4 => b == b' ' || b.is_ascii_digit(),
            b'd' => b.is_ascii_digit(),
            _ => b == want,
        });
    if !fits {
        return None;
    }
    let rest = &s[SHAPE.len()..];
    match rest.strip_prefix(b".") {
        Some(fraction) => {
            let digits = fraction.iter().take_while(|b| b.is_ascii_digit()).count();
            (digits > 0).then(|| &fraction[digits..])
        }
        None => Some(rest),
    }
}

/// A Docker json-file record's `log` text, without its final newline, appended to `out`; None
/// unless the record is whole (its text ends with a newline, and holds no other) and written
/// exactly as Docker writes it.
fn docker_text(line: &[u8], words: &Words, out: &mut Vec<u8>) -> Option<()> {
    std::str::from_utf8(line).ok()?; // Python's json reads the line as UTF-8, or not at all
    let [head, stream, time] = &words.docker_shape;
    let rest = line.strip_prefix(&head[..])?;
    let start = out.len();
    let rest = json_string(rest, out)?;
    let text = &out[start..];
    if text.last() != Some(&b'\n') || text[..text.len() - 1].contains(&b'\n') {
        out.truncate(start);
        return None;
    }
    out.pop();
    let rest = rest.strip_prefix(&stream[..])?;
    let rest = plain_string(rest)?;
    let rest = rest.strip_prefix(&time[..])?;
    let rest = plain_string(rest)?;
    (rest == b"}").then_some(())
}

/// A JSON string without escapes or control characters (its text is not needed); the rest
/// after its closing quote.
fn plain_string(s: &[u8]) -> Option<&[u8]> {
    let end = s
        .iter()
        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)?;
    (s[end] == b'"').then(|| &s[end + 1..])
}

/// The text of a whole CRI line (`F`), as `_CRI` in wrappers.py reads it:
/// `^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)) (stdout|stderr) ([PF])(?: |$)`.
fn cri_text<'a>(line: &'a [u8], words: &Words) -> Option<&'a [u8]> {
    let rest = rfc3339(line)?;
    let rest = words
        .cri_streams
        .iter()
        .find_map(|name| rest.strip_prefix(&name[..]))?;
    let rest = rest.strip_prefix(&words.cri_whole[..])?;
    if rest.is_empty() {
        return Some(rest);
    }
    rest.strip_prefix(b" ")
}

/// The rest of `s` after an RFC 3339 time with a zone, as `_ISO` in wrappers.py matches it.
fn rfc3339(s: &[u8]) -> Option<&[u8]> {
    const SHAPE: &[u8] = b"dddd-dd-ddTdd:dd:dd";
    let head = s.get(..SHAPE.len())?;
    let fits = SHAPE.iter().zip(head).all(|(&want, &b)| {
        if want == b'd' {
            b.is_ascii_digit()
        } else {
            b == want
        }
    });
    if !fits {
        return None;
    }
    let mut rest = &s[SHAPE.len()..];
    if let Some(fraction) = rest.strip_prefix(b".") {
        let digits = fraction.iter().take_while(|b| b.is_ascii_digit()).count();
        if digits == 0 {
            return None;
        }
        rest = &fraction[digits..];
    }
    if let Some(after) = rest.strip_prefix(b"Z") {
        return Some(after);
    }
    let after = rest
        .strip_prefix(b"+")
        .or_else(|| rest.strip_prefix(b"-"))?;
    let two = |t: &[u8]| t.len() >= 2 && t[..2].iter().all(u8::is_ascii_digit);
    if !two(after) {
        return None;
    }
    let minutes = after[2..].strip_prefix(b":").unwrap_or(&after[2..]);
    two(minutes).then(|| &minutes[2..])
}

#[cfg(feature = "python")]
// PyO3 0.22's #[pymethods] expansion converts PyErr into PyErr (a false positive, fixed in 0.23)
#[allow(clippy::useless_conversion)]
pub mod python {
    use pyo3::exceptions::PyValueError;
    use pyo3::prelude::*;
    use pyo3::types::PyBytes;

    use super::{WordList, Words};

    /// The wrapped-line questions asked of every chunk read (harmony_doctor/native.py), made
    /// of the wrappers' words (harmony_doctor/inputs/log_words.py). The GIL stays held: a 1
    /// MiB chunk takes about 0.1 ms, and a thread that lets the GIL go waits up to the switch
    /// interval (5 ms) to get it back while the others run Python (measured: 6x the call's
    /// own time in a scan).
    #[pyclass(frozen, module = "harmony_doctor._native")]
    pub struct Wrappers {
        words: Words,
    }

    #[pymethods]
    impl Wrappers {
        /// ValueError when a word cannot be read as given (see `Words::new`).
        #[new]
        #[pyo3(signature = (*, months, cri_streams, cri_whole, docker, docker_attrs,
            journal_message, journal_marks, journal_pid, json_fields, meta_keys, pid_keys, levels,
            pid_key))]
        #[allow(clippy::too_many_arguments)]
        fn new(
            months: Vec<String>,
            cri_streams: Vec<String>,
            cri_whole: String,
            docker: Vec<String>,
            docker_attrs: String,
            journal_message: String,
            journal_marks: Vec<String>,
            journal_pid: String,
            json_fields: Vec<String>,
            meta_keys: Vec<String>,
            pid_keys: Vec<String>,
            levels: Vec<String>,
            pid_key: String,
        ) -> PyResult<Self> {
            let words = Words::new(&WordList {
                months: &months,
                cri_streams: &cri_streams,
                cri_whole: &cri_whole,
                docker: &docker,
                docker_attrs: &docker_attrs,
                journal_message: &journal_message,
                journal_marks: &journal_marks,
                journal_pid: &journal_pid,
                json_fields: &json_fields,
                meta_keys: &meta_keys,
                pid_keys: &pid_keys,
                levels: &levels,
                pid_key: &pid_key,
            })
            .map_err(PyValueError::new_err)?;
            Ok(Wrappers { words })
        }

        /// The number of newlines in `data`, and whether a line between two of them starts
        /// like a wrapped one (the reference: harmony_doctor/native.py).
        fn chunk_lines(&self, data: &[u8]) -> (usize, bool) {
            crate::chunk::chunk_lines(data, &self.words.months)
        }

        /// A chunk of whole Docker, CRI, journald and JSON records unwrapped: (text, (docker,
        /// cri, journal, json), [(line of the chunk, pid)] where a line names no pid itself),
        /// or None for Python to read line by line (the reference: Unwrapper._lines_into in
        /// harmony_doctor/inputs/wrappers.py).
        #[allow(clippy::type_complexity)]
        fn unwrap_records<'py>(
            &self,
            py: Python<'py>,
            body: &[u8],
        ) -> Option<(
            Bound<'py, PyBytes>,
            (usize, usize, usize, usize),
            Vec<(usize, i64, &'static str)>,
        )> {
            let r = super::unwrap_records(body, &self.words)?;
            let counts = (r.docker, r.cri, r.journal, r.json);
            Some((PyBytes::new_bound(py, &r.text), counts, r.pids))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture::WRAPPERS;

    fn unwrap_records(body: &[u8]) -> Option<Records> {
        super::unwrap_records(body, &WRAPPERS)
    }

    fn text(body: &[u8]) -> Option<Vec<u8>> {
        unwrap_records(body).map(|r| r.text)
    }

    fn assert_declined(bodies: &[&[u8]]) {
        for body in bodies {
            assert_eq!(text(body), None, "{}", String::from_utf8_lossy(body));
        }
    }

    #[test]
    fn unwraps_docker_and_cri_records() {
        let body = b"{\"log\":\"INFO a \\\"q\\\" \\u00e9\\ud83d\\ude00\\n\",\"stream\":\"stdout\",\"time\":\"2026-11-01T00:00:00.1Z\"}\n\
2026-11-01T00:00:00.123456789+05:30 stderr F b c\n\
2026-11-01T00:00:00Z stdout F\n";
        let records = unwrap_records(body).unwrap();
        assert_eq!(
            records.text,
            "INFO a \"q\" \u{e9}\u{1F600}\nb c\n\n".as_bytes().to_vec()
        );
        assert_eq!((records.docker, records.cri), (1, 2));
    }

    #[test]
    fn unwraps_journal_lines_keeping_the_pid_a_line_does_not_name() {
        let body = b"Nov  2 10:41:19.5 gpu-1 vllm[1234]: INFO: 127.0.0.1 POST\n\
2026-11-27T10:00:01+0000 gpu-1 vllm[99]: (APIServer pid=7) INFO x\n\
Nov 12 10:41:19 gpu-1 kernel: y\n";
        let records = unwrap_records(body).unwrap();
        assert_eq!(
            records.text,
            b"INFO: 127.0.0.1 POST\n(APIServer pid=7) INFO x\ny\n".to_vec()
        );
        assert_eq!(records.journal, 3);
        assert_eq!(records.pids, vec![(0, 1234, "journal")]);
        assert_declined(&[
            &b"Nov 12 10:41:19 gpu-1 vllm[x]: y\n"[..],
            b"Nov 12 10:41:19 gpu-1 vllm y\n",
            b"Nov 12 10:41:19 gpu-1\tvllm: y\n",
            b"2026-11-27T10:00:01Z {job=\"v\"} y\n",
            b"   continued\n",
            b"-- Boot 1234 --\n",
            b"Now 12 10:41:19 gpu-1 vllm: y\n",
        ]);
    }

    #[test]
    fn unwraps_journal_lines_without_their_host() {
        // `journalctl --no-hostname`: the identifier and pid come first, never as the host
        let body = b"Aug 20 09:40:01 ollama[1914]: time=2025-08-20T09:40:01Z level=ERROR\n\
Aug 20 09:40:02 kernel: time=2025-08-20T09:40:02Z\n";
        let records = unwrap_records(body).unwrap();
        assert_eq!(
            records.text,
            b"time=2025-08-20T09:40:01Z level=ERROR\ntime=2025-08-20T09:40:02Z\n".to_vec()
        );
        assert_eq!(records.pids, vec![(0, 1914, "journal")]);
    }

    #[test]
    fn declines_what_python_reads_otherwise() {
        assert_declined(&[
            &b"plain\n"[..],
            b"\n",
            b"{\"log\":\"split\",\"stream\":\"stdout\",\"time\":\"t\"}\n",
            b"{\"log\":\"two\\nlines\\n\",\"stream\":\"stdout\",\"time\":\"t\"}\n",
            b"{\"log\":\"lone \\ud83d\\n\",\"stream\":\"stdout\",\"time\":\"t\"}\n",
            b"{\"log\":\"bad \\x\\n\",\"stream\":\"stdout\",\"time\":\"t\"}\n",
            b"{\"log\":\"tab \t\\n\",\"stream\":\"stdout\",\"time\":\"t\"}\n",
            b"{\"log\":\"\xff\\n\",\"stream\":\"stdout\",\"time\":\"t\"}\n",
            b"2026-11-01T00:00:00Z stdout P piece\n",
            b"2026-11-01T00:00:00Z stdout Fx\n",
            b"2026-11-01T00:00:00.Z stdout F x\n",
            b"2026-11-01T00:00:00+05:3 stdout F x\n",
            b"2026-11-01 00:00:00Z stdout F x\n",
            b"no newline",
        ]);
    }

    #[test]
    fn reads_json_records_as_python_does() {
        let body = b"{\"log\": \"a\\n\", \"stream\": \"stdout\", \"time\": \"t\", \"attrs\": {}}\n\
{\"__REALTIME_TIMESTAMP\":\"1\",\"_PID\":\"42\",\"MESSAGE\":[98]}\n\
{\"host\":\"h\",\"message\":\"c\\n\",\"pid\":7}\n\
{\"ts\":1,\"line\":\"(APIServer pid=3) d\",\"pid\":7}\n";
        let records = unwrap_records(body).unwrap();
        assert_eq!(records.text, b"a\nb\nc\n(APIServer pid=3) d\n".to_vec());
        assert_eq!((records.docker, records.journal, records.json), (1, 1, 2));
        assert_eq!(records.pids, vec![(1, 42, "journal"), (2, 7, "json")]);
        assert_declined(&[
            &b"{\"message\":\"no meta key\"}\n"[..],
            b"{\"MESSAGE\":null,\"_PID\":\"1\"}\n",
            b"{\"host\":\"h\",\"message\":\"two\\nlines\"}\n",
            b"{\"host\":\"h\",\"message\":\"x\",\"pid\":\"\\u0661\"}\n",
            b"{\"log\":\"piece\",\"stream\":\"stdout\",\"attrs\":{}}\n",
        ]);
    }

    #[test]
    fn a_carriage_return_before_the_newline_is_not_text() {
        assert_eq!(
            text(b"2026-11-01T00:00:00Z stdout F x\r\n"),
            Some(b"x\n".to_vec())
        );
    }
}
