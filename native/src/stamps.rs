//! Stamps and pids: a line's own stamp and pid, and hour keys (every line's effective stamp:
//! crate::known_stamps).

use std::sync::Arc;

#[cfg(not(target_arch = "x86_64"))]
use memchr::memchr_iter;
use memchr::memmem;

use crate::lines::{is_ws, skip_ws};

/// Stamps and pids are looked for in a line's first HEAD bytes.
pub const HEAD: usize = 200;

/// A canonical stamp: own stamps inline (no allocation per line), wrapper stamps from meta
/// (any length) shared.
#[derive(Debug, Clone)]
pub enum St {
    Own(OwnSt),
    Meta(Arc<[u8]>),
}

/// An own stamp's canonical bytes (19 or 14 of them). Word-aligned so that moving one is a
/// few aligned word copies: the odd-sized (u8, [u8; 19]) it replaces was copied in unaligned
/// pieces and read back whole, a store-forwarding stall per copy (~10% of the scan in perf).
#[derive(Debug, Clone, Copy)]
#[repr(C, align(8))]
pub struct OwnSt {
    b: [u8; 19],
    n: u8,
}

impl St {
    pub(crate) fn bytes(&self) -> &[u8] {
        match self {
            St::Own(o) => &o.b[..o.n as usize],
            St::Meta(b) => b,
        }
    }
}

/// A line's effective stamp, if any.
pub(crate) type Stamp = Option<St>;

pub(crate) fn stamp_vec(s: &Stamp) -> Option<Vec<u8>> {
    s.as_ref().map(|s| s.bytes().to_vec())
}

/// The words of a line's stamp and pid (harmony_doctor/inputs/log_words.py `LEVELS`,
/// `PID_KEY`), handed over when a core or a reader is made.
#[derive(Debug, Clone)]
pub struct StampWords {
    /// the level words a vLLM stamp may follow (`INFO 11-27 10:00:01`)
    levels: Vec<Vec<u8>>,
    /// the word a pid follows (`pid=42`), searched (boxed: a `Finder` holds SIMD state that
    /// must stay aligned, and a Python object's storage is not aligned for it)
    pid: Box<memmem::Finder<'static>>,
}

impl StampWords {
    /// Err on an empty word (it would match everywhere).
    pub fn new<W: AsRef<str>>(levels: &[W], pid_key: &str) -> Result<StampWords, String> {
        if pid_key.is_empty() || levels.iter().any(|l| l.as_ref().is_empty()) {
            return Err("a stamp's level word or pid key is empty".into());
        }
        Ok(StampWords {
            levels: levels
                .iter()
                .map(|l| l.as_ref().as_bytes().to_vec())
                .collect(),
            pid: Box::new(memmem::Finder::new(pid_key.as_bytes()).into_owned()),
        })
    }
}

fn two(b: &[u8]) -> u32 {
    (b[0] - b'0') as u32 * 10 + (b[1] - b'0') as u32
}

fn valid(mo: &[u8], d: &[u8], h: &[u8], mi: &[u8], s: &[u8]) -> bool {
    (1..=12).contains(&two(mo))
        && (1..=31).contains(&two(d))
        && two(h) <= 23
        && two(mi) <= 59
        && two(s) <= 59
}

fn dig(b: u8) -> bool {
    b.is_ascii_digit()
}

fn within(b: u8, lo: u8, hi: u8) -> bool {
    (lo..=hi).contains(&b)
}

/// `((?:19|20)\d\d)` `sep` `([01]\d)` `sep` `([0-3]\d)` at the start of `g` (10 bytes).
fn date_at(g: &[u8], sep: u8) -> bool {
    ((g[0] == b'1' && g[1] == b'9') || (g[0] == b'2' && g[1] == b'0'))
        && dig(g[2])
        && dig(g[3])
        && g[4] == sep
        && within(g[5], b'0', b'1')
        && dig(g[6])
        && g[7] == sep
        && within(g[8], b'0', b'3')
        && dig(g[9])
}

/// The full date (with its year) whose `-` at `k` shows it, after no digit: ISO's first `-`
/// (`2025-08-20 09:38:05`, or `T`: 19 bytes) or Go gin's one (`2025/08/20 - 09:38:05`: 21
/// bytes); the offsets of its date (`YYYY?MM?DD`) and of its `HH:MM:SS`. No `-` shows both;
/// in the order of their `-`, full dates come in the order of their starts (neither form's
/// first 11 bytes hold a start of the other).
fn full_date_at(h: &[u8], k: usize) -> Option<(usize, usize)> {
    // an ISO stamp's month and day are 3 bytes apart, gin's date and time ` - ` apart: most
    // `-` fail both at once
    let (p, t) = if k >= 4 && k + 15 <= h.len() && h[k + 3] == b'-' {
        let p = k - 4;
        let iso = date_at(&h[p..], b'-') && matches!(h[p + 10], b' ' | b'T');
        iso.then_some((p, p + 11))?
    } else if k >= 11 && k + 10 <= h.len() && h[k - 1] == b' ' && h[k - 4] == b'/' {
        let p = k - 11;
        let gin = date_at(&h[p..], b'/') && h[k + 1] == b' ';
        gin.then_some((p, k + 2))?
    } else {
        return None;
    };
    ((p == 0 || !dig(h[p - 1])) && hms_at(&h[t..])).then_some((p, t))
}

/// A full date's canonical stamp (`YYYY-MM-DD HH:MM:SS`), if a valid one.
fn full_stamp(date: &[u8], hms: &[u8]) -> Option<St> {
    if !valid(
        &date[5..7],
        &date[8..10],
        &hms[0..2],
        &hms[3..5],
        &hms[6..8],
    ) {
        return None;
    }
    let mut out = [0u8; 19];
    out[..10].copy_from_slice(&date[..10]);
    (out[4], out[7], out[10]) = (b'-', b'-', b' ');
    out[11..].copy_from_slice(&hms[..8]);
    Some(St::Own(OwnSt { b: out, n: 19 }))
}

/// Whether a time read from a line's prefix (crate::anatomy) is a full date, with its year, as
/// `own_st` reads one: such a time beats one without a year (harmony_doctor/inputs/
/// timestamps.py `dated`).
pub(crate) fn dated(text: &[u8]) -> bool {
    let head = &text[..text.len().min(HEAD)];
    memchr::memchr_iter(b'-', head)
        .find_map(|k| full_date_at(head, k))
        .is_some_and(|(p, t)| full_stamp(&head[p..], &head[t..]).is_some())
}

/// `([0-2]\d):([0-5]\d):([0-6]\d)` at the start of `t`.
fn hms_at(t: &[u8]) -> bool {
    t.len() >= 8
        && within(t[0], b'0', b'2')
        && dig(t[1])
        && t[2] == b':'
        && within(t[3], b'0', b'5')
        && dig(t[4])
        && t[5] == b':'
        && within(t[6], b'0', b'6')
        && dig(t[7])
}

/// `([01]\d)-([0-3]\d)\s+HH:MM:SS` at `q`: the offsets of MM-DD and of HH:MM:SS.
fn vllm_core(h: &[u8], q: usize) -> Option<(usize, usize)> {
    let g = h.get(q..q + 5)?;
    if !(within(g[0], b'0', b'1')
        && dig(g[1])
        && g[2] == b'-'
        && within(g[3], b'0', b'3')
        && dig(g[4]))
    {
        return None;
    }
    let i = skip_ws(h, q + 5);
    (i > q + 5 && hms_at(&h[i..])).then_some((q, i))
}

/// Whether a vLLM core `MM-DD\s+HH:MM:SS` at `q` is a match of
/// `(?:(?:LEVELS)\s+|^\s*)MM-DD...`: only blanks before it, or a level word then blanks.
fn vllm_prefix(h: &[u8], q: usize, levels: &[Vec<u8>]) -> bool {
    let mut j = q;
    while j > 0 && is_ws(h[j - 1]) {
        j -= 1;
    }
    j == 0 || (j < q && levels.iter().any(|w| h[..j].ends_with(w)))
}

/// The canonical stamp a line carries in `head` (its first HEAD bytes), if a valid one.
pub fn own_stamp(head: &[u8], words: &StampWords) -> Option<Vec<u8>> {
    own_st(head, words).map(|s| s.bytes().to_vec())
}

/// One pass over the `-` of `head`: the leftmost full date (ISO, gin) decides, even when out
/// of range; else the leftmost vLLM match. (The vLLM match whose MM-DD comes first starts
/// first: a level word and its blanks hold no digit, so they cannot reach back over an earlier
/// MM-DD.)
pub(crate) fn own_st(head: &[u8], words: &StampWords) -> Option<St> {
    // SSE2's memchr directly: a head is short, and the generic memchr_iter dispatches each
    // call through AVX2 detection (three calls per `-`, ~60% of the stamp search)
    #[cfg(target_arch = "x86_64")]
    let dash = memchr::arch::x86_64::sse2::memchr::One::new(b'-').expect("SSE2 is in x86_64");
    #[cfg(target_arch = "x86_64")]
    let dashes = dash.iter(head);
    #[cfg(not(target_arch = "x86_64"))]
    let dashes = memchr_iter(b'-', head);
    let mut vllm: Option<(usize, usize)> = None;
    for k in dashes {
        if let Some((p, t)) = full_date_at(head, k) {
            return full_stamp(&head[p..], &head[t..]);
        }
        if vllm.is_none() && k >= 2 {
            vllm = vllm_core(head, k - 2).filter(|&(q, _)| vllm_prefix(head, q, &words.levels));
        }
    }
    let (md, t) = vllm?;
    let (md, hms) = (&head[md..md + 5], &head[t..t + 8]);
    if !valid(&md[0..2], &md[3..5], &hms[0..2], &hms[3..5], &hms[6..8]) {
        return None;
    }
    let mut out = [0u8; 19];
    out[..5].copy_from_slice(md);
    out[5] = b' ';
    out[6..14].copy_from_slice(hms);
    Some(St::Own(OwnSt { b: out, n: 14 }))
}

/// The digits at the start of `d` as a pid: None when none or past 18 (`Err`: no digit).
fn pid_digits(d: &[u8]) -> Result<Option<i64>, ()> {
    // one pass: count the digits, and add up the first 18 (enough when there are no more)
    let (mut n, mut v) = (0, 0i64);
    for &b in d {
        if !dig(b) {
            break;
        }
        if n < 18 {
            v = v * 10 + (b - b'0') as i64;
        }
        n += 1;
    }
    match n {
        0 => Err(()),
        19.. => Ok(None),
        _ => Ok(Some(v)),
    }
}

/// `\bpid[=:]\s*(\d+)` (the pid key `words` hold), first match; None past 18 digits.
pub fn own_pid(head: &[u8], words: &StampWords) -> Option<i64> {
    let key = words.pid.needle().len();
    for i in words.pid.find_iter(head) {
        if i > 0 && (head[i - 1].is_ascii_alphanumeric() || head[i - 1] == b'_') {
            continue;
        }
        if !matches!(head.get(i + key), Some(b'=' | b':')) {
            continue;
        }
        if let Ok(pid) = pid_digits(&head[skip_ws(head, i + key + 1)..]) {
            return pid;
        }
    }
    None
}

/// `YYYY-MM-DD HH` / `MM-DD HH`: the stamp without its last 6 bytes (`:MM:SS`).
pub fn hour_key(stamp: &[u8]) -> &[u8] {
    &stamp[..stamp.len().saturating_sub(6)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::anchors::re;
    use crate::lines::WS;
    use crate::testing::soup;

    fn own_stamp(head: &[u8]) -> Option<Vec<u8>> {
        super::own_stamp(head, &crate::fixture::STAMPS)
    }

    fn own_pid(head: &[u8]) -> Option<i64> {
        super::own_pid(head, &crate::fixture::STAMPS)
    }

    #[test]
    fn stamps() {
        assert_eq!(
            own_stamp(b"2026-11-27T10:00:01 x"),
            Some(b"2026-11-27 10:00:01".to_vec())
        );
        assert_eq!(
            own_stamp(b"INFO 11-27 10:00:01"),
            Some(b"11-27 10:00:01".to_vec())
        );
        assert_eq!(
            own_stamp(b" \t11-27 10:00:01"),
            Some(b"11-27 10:00:01".to_vec())
        );
        assert_eq!(own_stamp(b"x 11-27 10:00:01"), None);
        assert_eq!(own_stamp(b"12026-11-27 10:00:01"), None);
        assert_eq!(
            own_stamp(b"12026-11-27 10:00:01 2025-01-01 01:01:01"),
            Some(b"2025-01-01 01:01:01".to_vec())
        );
        // the leftmost ISO match decides, even when out of range
        assert_eq!(own_stamp(b"2026-13-01 10:00:01 INFO 11-27 10:00:01"), None);
        assert_eq!(own_stamp(b"2026-11-27 10:00:60"), None);
        assert_eq!(own_stamp(b"INFO 11-27 24:00:00"), None);
        // Go gin's full date (Ollama's request lines), behind journald's prefix
        assert_eq!(
            own_stamp(b"Dec 11 09:58:58 h ollama[8]: [GIN] 2024/12/11 - 09:58:58 | 200 |"),
            Some(b"2024-12-11 09:58:58".to_vec())
        );
        assert_eq!(own_stamp(b"2024/12/11 09:58:58"), None);
        assert_eq!(own_stamp(b"2024/12/11  - 09:58:58"), None);
        assert_eq!(own_stamp(b"12024/12/11 - 09:58:58"), None);
        // a full date beats a vLLM stamp before it; the leftmost full date decides
        assert_eq!(
            own_stamp(b"INFO 11-27 10:00:01 [GIN] 2024/12/11 - 09:58:58"),
            Some(b"2024-12-11 09:58:58".to_vec())
        );
        assert_eq!(
            own_stamp(b"[GIN] 2024/12/11 - 09:58:58 | 2025-01-01 01:01:01"),
            Some(b"2024-12-11 09:58:58".to_vec())
        );
        assert_eq!(
            own_stamp(b"2025-01-01 01:01:01 | 2024/12/11 - 09:58:58"),
            Some(b"2025-01-01 01:01:01".to_vec())
        );
        assert_eq!(
            own_stamp(b"2024/13/11 - 09:58:58 2025-01-01 01:01:01"),
            None
        );
    }

    #[test]
    fn dated_times() {
        assert!(dated(b"2024-12-11T09:59:30.186Z"));
        assert!(dated(b"2024/12/11 - 09:59:30"));
        assert!(!dated(b"Dec 11 09:59:30"));
        assert!(!dated(b"12-11 09:59:30"));
        assert!(!dated(b"2024-13-11T09:59:30"));
    }

    #[test]
    fn pids_and_hour_keys() {
        assert_eq!(own_pid(b"(APIServer pid=123)"), Some(123));
        assert_eq!(own_pid(b"xpid=1 pid: 2"), Some(2));
        assert_eq!(own_pid(b"pid=1234567890123456789"), None);
        assert_eq!(own_pid(b"(APIServer pid=42) x"), Some(42));
        assert_eq!(own_pid(b"(APIServer pid=x) pid=5"), Some(5));
        assert_eq!(own_pid(b"(APIServer pid=1234567890123456789) pid=5"), None);
        assert_eq!(hour_key(b"2026-11-27 10:00:01"), b"2026-11-27 10");
        assert_eq!(hour_key(b"11-27 10:00:01"), b"11-27 10");
    }

    /// The hand-written stamp and pid matchers agree with the reference's regexes
    /// (harmony_doctor/inputs/timestamps.py `_FULL_STAMP`, `_VLLM_STAMP`, scan/core.py `_PID`)
    /// on fragment soup.
    #[test]
    fn matchers_agree_with_the_regexes() {
        let iso = re(concat!(
            r"((?:19|20)[0-9][0-9])(?:-([01][0-9])-([0-3][0-9])[ T]|/([01][0-9])/([0-3][0-9]) - )",
            r"([0-2][0-9]):([0-5][0-9]):([0-6][0-9])"
        ));
        let vllm = re(&format!(
            "(?:(?:INFO|ERROR|WARNING|DEBUG|CRITICAL|WARN){WS}+|^{WS}*)([01][0-9])-([0-3][0-9]){WS}+([0-2][0-9]):([0-5][0-9]):([0-6][0-9])"
        ));
        let pid = re(&format!(r"\bpid[=:]{WS}*([0-9]+)"));
        let stamp_ref = |h: &[u8]| -> Option<Vec<u8>> {
            let mut at = 0;
            while let Some(c) = iso.captures_at(h, at) {
                let st = c.get(0).unwrap().start();
                if st > 0 && h[st - 1].is_ascii_digit() {
                    at = st + 1;
                    continue;
                }
                let g: Vec<&[u8]> = [1, 2, 3, 6, 7, 8]
                    .iter()
                    .map(|&i| c.get(i).or(c.get(i + 2)).unwrap().as_bytes())
                    .collect();
                return valid(g[1], g[2], g[3], g[4], g[5]).then(|| {
                    [
                        g[0], b"-", g[1], b"-", g[2], b" ", g[3], b":", g[4], b":", g[5],
                    ]
                    .concat()
                });
            }
            let c = vllm.captures(h)?;
            let g: Vec<&[u8]> = (1..=5).map(|i| c.get(i).unwrap().as_bytes()).collect();
            valid(g[0], g[1], g[2], g[3], g[4])
                .then(|| [g[0], b"-", g[1], b" ", g[2], b":", g[3], b":", g[4]].concat())
        };
        let pid_ref = |h: &[u8]| -> Option<i64> {
            let d = pid.captures(h)?.get(1).unwrap().as_bytes();
            (d.len() <= 18).then(|| std::str::from_utf8(d).unwrap().parse().unwrap())
        };
        let mut agreed = [0usize; 3];
        for line in soup(200_000) {
            let want = stamp_ref(&line);
            assert_eq!(
                own_stamp(&line),
                want,
                "{:?}",
                String::from_utf8_lossy(&line)
            );
            let full = want.as_ref().is_some_and(|w| w.len() == 19);
            if line.len() <= HEAD {
                assert_eq!(dated(&line), full, "{:?}", String::from_utf8_lossy(&line));
            }
            agreed[0] += usize::from(want.is_some());
            let gin = iso.captures(&line).is_some_and(|c| c.get(4).is_some());
            agreed[2] += usize::from(full && gin);
            let want = pid_ref(&line);
            assert_eq!(own_pid(&line), want, "{:?}", String::from_utf8_lossy(&line));
            agreed[1] += usize::from(want.is_some());
        }
        // the soup does exercise the positive cases
        assert!(agreed.iter().all(|&n| n > 100), "{agreed:?}");
    }
}
