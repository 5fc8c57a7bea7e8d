//! The scan core: the same algorithm as harmony_doctor/scan/core.py (the reference).
//! Offsets are in the "cut stream" (every line cut to max_line bytes).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Arc, LazyLock};

use aho_corasick::packed::{Config, MatchKind, Searcher};
use aho_corasick::Span;
use memchr::{memchr, memchr_iter, memmem, memrchr};
use regex::bytes::Regex;

pub const HEAD: usize = 200;

const MARKUP: usize = 15;
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

const WS: &str = r"[ \t\n\r\x0C\x0B]";

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
    fn bytes(&self) -> &[u8] {
        match self {
            St::Own(o) => &o.b[..o.n as usize],
            St::Meta(b) => b,
        }
    }
}

type Stamp = Option<St>;

fn stamp_vec(s: &Stamp) -> Option<Vec<u8>> {
    s.as_ref().map(|s| s.bytes().to_vec())
}

static PID_FINDER: LazyLock<memmem::Finder<'static>> = LazyLock::new(|| memmem::Finder::new("pid"));
static MARKUP_FINDER: LazyLock<memmem::Finder<'static>> =
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

/// FxHash (rustc's): the tally keys are small integers, SipHash's DoS guard is not needed.
#[derive(Default)]
struct Fx(u64);

impl Hasher for Fx {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_u8(&mut self, v: u8) {
        self.write_u64(u64::from(v));
    }
    fn write_u32(&mut self, v: u32) {
        self.write_u64(u64::from(v));
    }
    fn write_i64(&mut self, v: i64) {
        self.write_u64(v as u64);
    }
    fn write_usize(&mut self, v: usize) {
        self.write_u64(v as u64);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

fn re(pattern: &str) -> Regex {
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

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0B | 0x0C)
}

fn dig(b: u8) -> bool {
    b.is_ascii_digit()
}

fn within(b: u8, lo: u8, hi: u8) -> bool {
    (lo..=hi).contains(&b)
}

fn skip_ws(h: &[u8], mut i: usize) -> usize {
    while i < h.len() && is_ws(h[i]) {
        i += 1;
    }
    i
}

/// `((?:19|20)\d\d)-([01]\d)-([0-3]\d)[ T]([0-2]\d):([0-5]\d):([0-6]\d)` at `p` (19 bytes).
fn iso_at(h: &[u8], p: usize) -> bool {
    let g = &h[p..p + 19];
    ((g[0] == b'1' && g[1] == b'9') || (g[0] == b'2' && g[1] == b'0'))
        && dig(g[2])
        && dig(g[3])
        && g[4] == b'-'
        && within(g[5], b'0', b'1')
        && dig(g[6])
        && g[7] == b'-'
        && within(g[8], b'0', b'3')
        && dig(g[9])
        && (g[10] == b' ' || g[10] == b'T')
        && hms_at(&g[11..])
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

const LEVELS: [&[u8]; 6] = [
    b"INFO",
    b"ERROR",
    b"WARNING",
    b"DEBUG",
    b"CRITICAL",
    b"WARN",
];

/// Whether a vLLM core `MM-DD\s+HH:MM:SS` at `q` is a match of
/// `(?:(?:LEVELS)\s+|^\s*)MM-DD...`: only blanks before it, or a level word then blanks.
fn vllm_prefix(h: &[u8], q: usize) -> bool {
    let mut j = q;
    while j > 0 && is_ws(h[j - 1]) {
        j -= 1;
    }
    j == 0 || (j < q && LEVELS.iter().any(|w| h[..j].ends_with(w)))
}

/// The canonical stamp a line carries in `head` (its first HEAD bytes), if a valid one.
pub fn own_stamp(head: &[u8]) -> Option<Vec<u8>> {
    own_st(head).map(|s| s.bytes().to_vec())
}

/// One pass over the `-` of `head`: the leftmost ISO match decides; else the leftmost vLLM
/// match. (The vLLM match whose MM-DD comes first starts first: a level word and its blanks
/// hold no digit, so they cannot reach back over an earlier MM-DD.)
fn own_st(head: &[u8]) -> Option<St> {
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
        // an ISO stamp's month and day are 3 bytes apart: most `-` fail that at once
        if k >= 4 && k + 15 <= head.len() && head[k + 3] == b'-' {
            let p = k - 4;
            if (p == 0 || !dig(head[p - 1])) && iso_at(head, p) {
                let g = &head[p..p + 19];
                if !valid(&g[5..7], &g[8..10], &g[11..13], &g[14..16], &g[17..19]) {
                    return None;
                }
                let mut out = [0u8; 19];
                out.copy_from_slice(g);
                out[10] = b' ';
                return Some(St::Own(OwnSt { b: out, n: 19 }));
            }
        }
        if vllm.is_none() && k >= 2 {
            vllm = vllm_core(head, k - 2).filter(|&(q, _)| vllm_prefix(head, q));
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

/// `\bpid[=:]\s*(\d+)`, first match; None past 18 digits.
pub fn own_pid(head: &[u8]) -> Option<i64> {
    // vLLM's prefix: "(APIServer " holds no "pid", so this one is the first candidate
    const VLLM: &[u8] = b"(APIServer pid=";
    if head.starts_with(VLLM) {
        if let Ok(pid) = pid_digits(&head[VLLM.len()..]) {
            return pid;
        }
    }
    for i in PID_FINDER.find_iter(head) {
        if i > 0 && (head[i - 1].is_ascii_alphanumeric() || head[i - 1] == b'_') {
            continue;
        }
        if !matches!(head.get(i + 3), Some(b'=' | b':')) {
            continue;
        }
        if let Ok(pid) = pid_digits(&head[skip_ws(head, i + 4)..]) {
            return pid;
        }
    }
    None
}

pub fn hour_key(stamp: &[u8]) -> Vec<u8> {
    stamp[..stamp.len().saturating_sub(6)].to_vec()
}

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
fn next_piece(hay: &[u8], from: usize, end: usize) -> Option<(usize, usize)> {
    AC.find_in(&hay[..end], Span::from(from..end))
        .map(|m| (m.start(), m.pattern().as_usize()))
}

/// The rules for the line `hay[ls..le]`, whose first piece is piece `pat` at `at` (none
/// before it in the line; `pat == usize::MAX`: no piece) and which holds `<|` iff `markup`.
/// Also returns the first piece after the line in `hay[..end]` when it searched past it (one
/// search call per line fewer).
fn classify_line(
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

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    pub first_line: u64,
    pub text: Vec<u8>,
    pub hit_lines: Vec<u64>,
    pub stamp_before: Option<Vec<u8>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdLine {
    pub line: u64,
    pub text: Vec<u8>,
    pub stamp: Option<Vec<u8>>,
    pub pid: Option<i64>,
    pub cut: bool,
}

pub type TallyKey = (&'static str, Option<i64>, Option<Vec<u8>>);

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Stats {
    pub lines: u64,
    pub cut_lines: u64,
    pub bytes: u64,
    pub access_lines: u64,
    pub received_lines: u64,
    pub tallies: HashMap<TallyKey, u64>,
    pub first_access_line: Option<Vec<u8>>,
}

#[derive(Debug, Default, PartialEq, Eq)]
pub struct Batch {
    pub windows: Vec<Window>,
    pub id_lines: Vec<IdLine>,
}

pub type MetaEntry = (u64, Option<Vec<u8>>, Option<i64>);

struct Hit {
    line: u64,
    e: usize,
    ws: usize,
    ws_line: u64,
}

struct Pending {
    start: usize,
    first_line: u64,
    end: usize,
    stamp_before: Stamp,
    hits: Vec<u64>,
}

pub struct Core {
    before: usize,
    after: usize,
    max_line: usize,
    max_window: usize,
    ids: bool,
    buf: Vec<u8>,
    off: usize,
    pos: usize,
    part: Vec<u8>,
    part_cut: bool,
    /// (stream offset just past a line, effective stamp of that line) points known, sorted;
    /// the first is the line before buf (offset `off`; 0: the empty start of the stream).
    known: Vec<(usize, Stamp)>,
    meta: BTreeMap<u64, (Stamp, Option<i64>)>,
    hits: VecDeque<Hit>,
    pending: Option<Pending>,
    done: bool,
    stats: Stats,
    /// (kind, pid, hour id) -> n; hour ids index `hours` (u32::MAX: no stamp)
    tallies: HashMap<(u8, Option<i64>, u32), u64, BuildHasherDefault<Fx>>,
    hour_ids: HashMap<Vec<u8>, u32>,
    hours: Vec<Vec<u8>>,
    last_hour: (Vec<u8>, u32),
}

const KINDS: [&str; 2] = ["access", "received"];

/// The first `\n` of `h`, which is mostly a line's length away: SSE2's memchr directly
/// spares the generic one's per-call dispatch (x86_64).
fn find_nl(h: &[u8]) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    return nl().find(h);
    #[cfg(not(target_arch = "x86_64"))]
    return memchr(b'\n', h);
}

/// The last `\n` of `h` (see find_nl).
fn rfind_nl(h: &[u8]) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    return nl().rfind(h);
    #[cfg(not(target_arch = "x86_64"))]
    return memrchr(b'\n', h);
}

#[cfg(target_arch = "x86_64")]
fn nl() -> memchr::arch::x86_64::sse2::memchr::One {
    memchr::arch::x86_64::sse2::memchr::One::new(b'\n').expect("SSE2 is in x86_64")
}

fn line_start(buf: &[u8], lo: usize, at: usize) -> usize {
    match rfind_nl(&buf[lo..at]) {
        Some(j) => lo + j + 1,
        None => lo,
    }
}

fn count_nl(buf: &[u8]) -> u64 {
    memchr_iter(b'\n', buf).count() as u64
}

impl Core {
    pub fn new(
        before: usize,
        after: usize,
        max_line: usize,
        max_window: usize,
        ids: bool,
    ) -> Result<Core, String> {
        if max_line < 1 || max_window < 1 {
            return Err("before/after must be >= 0, max_line/max_window >= 1".into());
        }
        let known = vec![(0, None)];
        Ok(Core {
            before,
            after,
            max_line,
            max_window,
            ids,
            buf: Vec::new(),
            off: 0,
            pos: 0,
            part: Vec::new(),
            part_cut: false,
            known,
            meta: BTreeMap::new(),
            hits: VecDeque::new(),
            pending: None,
            done: false,
            stats: Stats::default(),
            tallies: HashMap::default(),
            hour_ids: HashMap::new(),
            hours: Vec::new(),
            last_hour: (Vec::new(), u32::MAX),
        })
    }

    pub fn stats(&self) -> Stats {
        let mut s = self.stats.clone();
        s.tallies = self
            .tallies
            .iter()
            .map(|(&(kind, pid, hour), &n)| {
                let hour = (hour != u32::MAX).then(|| self.hours[hour as usize].clone());
                ((KINDS[kind as usize], pid, hour), n)
            })
            .collect();
        s
    }

    /// The hour id of the stamp `known[si]`.
    fn hour_id(&mut self, si: usize) -> u32 {
        let Some(stamp) = &self.known[si].1 else {
            return u32::MAX;
        };
        let stamp = stamp.bytes();
        let key = &stamp[..stamp.len().saturating_sub(6)];
        if self.last_hour.1 != u32::MAX && self.last_hour.0 == key {
            return self.last_hour.1;
        }
        let id = match self.hour_ids.get(key) {
            Some(&id) => id,
            None => {
                let id = self.hours.len() as u32;
                self.hours.push(key.to_vec());
                self.hour_ids.insert(key.to_vec(), id);
                id
            }
        };
        self.last_hour.0.clear();
        self.last_hour.0.extend_from_slice(key);
        self.last_hour.1 = id;
        id
    }

    pub fn feed(&mut self, data: &[u8], meta: &[MetaEntry]) -> Result<Batch, String> {
        if self.done {
            return Err("feed() after finish()".into());
        }
        let mut prev = self.stats.lines;
        for (line, _, _) in meta {
            if *line <= prev {
                return Err(format!(
                    "meta line {line}: line numbers must increase and follow line {}",
                    self.stats.lines
                ));
            }
            prev = *line;
        }
        for (line, stamp, pid) in meta {
            self.meta.insert(
                *line,
                (stamp.as_deref().map(|s| St::Meta(Arc::from(s))), *pid),
            );
        }
        self.stats.bytes += data.len() as u64;
        let Some(last) = memrchr(b'\n', data) else {
            let room = self.max_line - self.part.len();
            if data.len() > room {
                self.part.extend_from_slice(&data[..room]);
                self.part_cut = true;
            } else {
                self.part.extend_from_slice(data);
            }
            return Ok(Batch::default());
        };
        let first = memchr(b'\n', data).unwrap();
        let ml = self.max_line;
        // the complete lines go straight into buf (one copy), cut there when too long
        let base = self.buf.len();
        let mut cuts = Vec::new();
        self.buf.extend_from_slice(&self.part);
        if self.part_cut || self.part.len() + first > ml {
            let room = ml - self.part.len();
            self.buf.extend_from_slice(&data[..first.min(room)]);
            self.buf.extend_from_slice(&data[first..=last]);
            cuts.push(0);
        } else {
            self.buf.extend_from_slice(&data[..=last]);
        }
        let tail = &data[last + 1..];
        self.part.clear();
        self.part.extend_from_slice(&tail[..tail.len().min(ml)]);
        self.part_cut = tail.len() > ml;
        self.cut_long(base, &mut cuts);
        let id_lines = self.process(base, &cuts, false);
        let windows = self.settle(false);
        Ok(Batch { windows, id_lines })
    }

    pub fn finish(&mut self) -> Result<Batch, String> {
        if self.done {
            return Err("finish() called twice".into());
        }
        self.done = true;
        let mut id_lines = Vec::new();
        if !self.part.is_empty() {
            let base = self.buf.len();
            self.buf.extend_from_slice(&self.part);
            self.part.clear();
            let cuts = if self.part_cut { vec![0] } else { vec![] };
            id_lines = self.process(base, &cuts, true);
        }
        let windows = self.settle(true);
        Ok(Batch { windows, id_lines })
    }

    /// Cut every line of `buf[base..]` to max_line bytes in place, recording where cut lines
    /// start (relative to base).
    fn cut_long(&mut self, base: usize, cuts: &mut Vec<usize>) {
        let ml = self.max_line;
        let n = self.buf.len();
        let (mut pos, mut copy_from, mut w) = (base, base, base);
        while n - pos > ml {
            if let Some(q) = memrchr(b'\n', &self.buf[pos..pos + ml + 1]) {
                pos += q + 1;
                continue;
            }
            let nl = memchr(b'\n', &self.buf[pos + ml..]).map_or(n, |j| pos + ml + j);
            // the writes stay below pos + ml: what is still to read is never overwritten
            self.buf.copy_within(copy_from..pos + ml, w);
            w += pos + ml - copy_from;
            cuts.push(w - ml - base);
            copy_from = nl;
            pos = (nl + 1).min(n);
        }
        if copy_from != w {
            self.buf.copy_within(copy_from..n, w);
            self.buf.truncate(w + n - copy_from);
        }
    }

    /// The lines of `buf[base..]` (complete ones, plus the last one when `fin`).
    fn process(&mut self, base: usize, cuts: &[usize], fin: bool) -> Vec<IdLine> {
        let end = self.buf.len();
        self.stats.cut_lines += cuts.len() as u64;
        let line0 = self.stats.lines + 1;
        self.pos += end - base;
        let mut out = Vec::new();
        let (mut at, mut at_line) = (base, line0);
        let markup_from = |buf: &[u8], from: usize| {
            MARKUP_FINDER
                .find(&buf[from..end])
                .map_or(end, |j| from + j)
        };
        let with_meta = !self.meta.is_empty();
        let mut piece = next_piece(&self.buf, base, end);
        let mut mk = markup_from(&self.buf, base);
        loop {
            let cand = piece.map_or(end, |p| p.0).min(mk);
            if cand >= end {
                break;
            }
            let ls = line_start(&self.buf, base, cand);
            let le = find_nl(&self.buf[cand..end]).map_or(end, |j| cand + j);
            let (first_at, first_pat) = match piece {
                Some((s, p)) if s < le => (s, p),
                _ => (0, usize::MAX),
            };
            let (mut k, beyond) =
                classify_line(&self.buf, ls, le, first_at, first_pat, mk < le, end);
            let from = (le + 1).min(end);
            if first_pat != usize::MAX {
                piece = beyond;
            }
            if mk < from {
                mk = markup_from(&self.buf, from);
            }
            k.ids = k.ids && self.ids;
            if !(k.hit || k.access || k.received || k.ids) {
                continue;
            }
            // line numbers only where needed: counting "\n" per line costs more than the rest
            let line = if k.hit || k.ids || with_meta {
                at_line += count_nl(&self.buf[at..ls]);
                at = ls;
                at_line
            } else {
                0 // unused: no meta to look up, no record
            };
            if k.access || k.received || k.ids {
                let si = self.eff(line, le, ls);
                let text = &self.buf[ls..le];
                let head = &text[..text.len().min(HEAD)];
                let pid = own_pid(head)
                    .or_else(|| with_meta.then(|| self.meta.get(&line).and_then(|m| m.1))?);
                if k.access || k.received {
                    let hour = self.hour_id(si);
                    *self
                        .tallies
                        .entry((u8::from(!k.access), pid, hour))
                        .or_insert(0) += 1;
                    if k.access {
                        self.stats.access_lines += 1;
                        if self.stats.first_access_line.is_none() {
                            self.stats.first_access_line = Some(self.buf[ls..le].to_vec());
                        }
                    } else {
                        self.stats.received_lines += 1;
                    }
                }
                if k.ids {
                    out.push(IdLine {
                        line,
                        text: self.buf[ls..le].to_vec(),
                        stamp: stamp_vec(&self.known[si].1),
                        pid,
                        cut: cuts.binary_search(&(ls - base)).is_ok(),
                    });
                }
            }
            if k.hit {
                let s = self.off + ls;
                let wi = s.saturating_sub(self.before) - self.off;
                let ws = line_start(&self.buf, 0, wi);
                let ws_line = line - count_nl(&self.buf[ws..ls]);
                self.hits.push_back(Hit {
                    line,
                    e: self.off + le,
                    ws: self.off + ws,
                    ws_line,
                });
            }
        }
        self.stats.lines = at_line - 1 + count_nl(&self.buf[at..end]) + u64::from(fin);
        out
    }

    fn line_stamp(&self, line: u64, text: &[u8]) -> Stamp {
        match own_st(&text[..text.len().min(HEAD)]) {
            Some(st) => Some(st),
            None if self.meta.is_empty() => None,
            None => self.meta.get(&line).and_then(|m| m.0.clone()),
        }
    }

    /// Effective stamp of `line`, which ends at buffer index `end` and starts at `start`
    /// (usize::MAX: not known), as its index in `known` (`line` matters only for meta
    /// lookups: it may be anything when there is no meta).
    fn eff(&mut self, line: u64, end: usize, start: usize) -> usize {
        let key = self.off + end.wrapping_add(1);
        let last = self.known.len() - 1;
        let k = if self.known[last].0 <= key {
            last
        } else {
            self.known.partition_point(|(o, _)| *o <= key) - 1
        };
        let known = self.known[k].0;
        if known == key {
            return k;
        }
        let mut found = None;
        let (mut cur, mut cur_key, mut end, mut s) = (line, key, end, start);
        while cur_key > known {
            if s == usize::MAX {
                s = line_start(&self.buf, 0, end);
            }
            found = self.line_stamp(cur, &self.buf[s..end]);
            if found.is_some() {
                break;
            }
            cur = cur.wrapping_sub(1);
            cur_key = self.off + s;
            end = s.wrapping_sub(1);
            s = usize::MAX;
        }
        let stamp = match found {
            Some(st) => Some(st),
            None => self.known[k].1.clone(),
        };
        self.known.insert(k + 1, (key, stamp));
        k + 1
    }

    fn settle(&mut self, eof: bool) -> Vec<Window> {
        let mut out = Vec::new();
        let (off, pos, after) = (self.off, self.pos, self.after);
        while let Some(h) = self.hits.front() {
            if !eof && h.e + after > pos {
                break;
            }
            let h = self.hits.pop_front().unwrap();
            let hi = (h.e + after).min(pos);
            let end = match memrchr(b'\n', &self.buf[h.e - off..hi - off]) {
                Some(j) => h.e + j,
                None => hi,
            };
            if let Some(p) = self.pending.as_mut() {
                if h.ws <= p.end && p.end.max(end) - p.start <= self.max_window {
                    p.end = p.end.max(end);
                    p.hits.push(h.line);
                    continue;
                }
            }
            if let Some(p) = self.pending.take() {
                out.push(self.window(p));
            }
            let si = self.eff(h.ws_line - 1, (h.ws - off).wrapping_sub(1), usize::MAX);
            let stamp_before = self.known[si].1.clone();
            self.pending = Some(Pending {
                start: h.ws,
                first_line: h.ws_line,
                end,
                stamp_before,
                hits: vec![h.line],
            });
        }
        let ready = match &self.pending {
            Some(p) => self.hits.is_empty() && (eof || pos.saturating_sub(self.before) > p.end),
            None => false,
        };
        if ready {
            let p = self.pending.take().unwrap();
            out.push(self.window(p));
        }
        if !eof {
            self.trim();
        }
        out
    }

    fn window(&self, p: Pending) -> Window {
        Window {
            first_line: p.first_line,
            text: self.buf[p.start - self.off..p.end - self.off].to_vec(),
            hit_lines: p.hits,
            stamp_before: stamp_vec(&p.stamp_before),
        }
    }

    fn trim(&mut self) {
        let off = self.off;
        let wi = self.pos.saturating_sub(self.before).saturating_sub(off);
        let mut keep = off + line_start(&self.buf, 0, wi);
        if let Some(p) = &self.pending {
            keep = keep.min(p.start);
        }
        if let Some(h) = self.hits.front() {
            keep = keep.min(h.ws);
        }
        if keep <= off {
            return;
        }
        let idx = keep - off;
        // buf ends with the last processed line's "\n": count back from there (short)
        let keep_line = self.stats.lines + 1 - count_nl(&self.buf[idx..]);
        self.eff(keep_line - 1, idx - 1, usize::MAX);
        self.buf.drain(..idx);
        self.off = keep;
        let k = self.known.partition_point(|(o, _)| *o < keep);
        self.known.drain(..k);
        if !self.meta.is_empty() {
            self.meta = self.meta.split_off(&keep_line);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(core: &mut Core, chunks: &[&[u8]]) -> (Vec<Window>, Vec<IdLine>) {
        let (mut w, mut i) = (Vec::new(), Vec::new());
        for c in chunks {
            let b = core.feed(c, &[]).unwrap();
            w.extend(b.windows);
            i.extend(b.id_lines);
        }
        let b = core.finish().unwrap();
        w.extend(b.windows);
        i.extend(b.id_lines);
        (w, i)
    }

    fn core(before: usize, after: usize, max_line: usize) -> Core {
        Core::new(before, after, max_line, 1 << 20, true).unwrap()
    }

    const LOG: &[u8] = b"(APIServer pid=7) INFO 11-27 10:00:01 [a.py:1] 127.0.0.1:5 - \"POST /v1/chat/completions HTTP/1.1\" 200 OK\n\
Traceback (most recent call last):\n  File \"x.py\", line 1\n\
openai_harmony.HarmonyError: unexpected tokens remaining in message header: Some(\"x\")\n\
[2026-11-27 10:00:05] Received request r1 pid=3\n\
Generated response r1: output: 'x', output_token_ids: [1, 2], finish_reason: stop\n\
tail";

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
    }

    #[test]
    fn pids_and_hour_keys() {
        assert_eq!(own_pid(b"(APIServer pid=123)"), Some(123));
        assert_eq!(own_pid(b"xpid=1 pid: 2"), Some(2));
        assert_eq!(own_pid(b"pid=1234567890123456789"), None);
        assert_eq!(own_pid(b"(APIServer pid=42) x"), Some(42));
        assert_eq!(own_pid(b"(APIServer pid=x) pid=5"), Some(5));
        assert_eq!(own_pid(b"(APIServer pid=1234567890123456789) pid=5"), None);
        assert_eq!(hour_key(b"2026-11-27 10:00:01"), b"2026-11-27 10".to_vec());
        assert_eq!(hour_key(b"11-27 10:00:01"), b"11-27 10".to_vec());
    }

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

    #[test]
    fn scan_a_log_in_any_chunking() {
        let mut c = core(20, 60, 1 << 20);
        let whole = run(&mut c, &[LOG]);
        let (w, i) = &whole;
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].hit_lines, vec![4]);
        assert_eq!(w[0].first_line, 3);
        assert_eq!(w[0].stamp_before, Some(b"11-27 10:00:01".to_vec()));
        assert!(w[0].text.starts_with(b"  File"));
        assert!(w[0].text.ends_with(b"pid=3"));
        assert_eq!(i.len(), 1);
        assert_eq!((i[0].line, i[0].pid), (6, None));
        assert_eq!(i[0].stamp, Some(b"2026-11-27 10:00:05".to_vec()));
        let s = c.stats();
        assert_eq!(
            (s.lines, s.bytes, s.access_lines, s.received_lines),
            (7, LOG.len() as u64, 1, 1)
        );
        assert_eq!(
            s.tallies[&("access", Some(7), Some(b"11-27 10".to_vec()))],
            1
        );
        assert_eq!(
            s.tallies[&("received", Some(3), Some(b"2026-11-27 10".to_vec()))],
            1
        );
        for n in [1, 2, 7, 50] {
            let chunks: Vec<&[u8]> = LOG.chunks(n).collect();
            assert_eq!(
                run(&mut core(20, 60, 1 << 20), &chunks),
                whole,
                "chunks of {n}"
            );
        }
    }

    #[test]
    fn lines_cut_and_counted() {
        let mut c = core(100, 100, 8);
        let (w, i) = run(
            &mut c,
            &[
                b"0123456789HarmonyError\nx_token_ids: [1]\nab\r\nHarmony",
                b"Error",
            ],
        );
        assert_eq!(c.stats().cut_lines, 3);
        assert_eq!(c.stats().lines, 4);
        assert!(i.is_empty()); // "_token_ids" is past max_line
        assert_eq!(w.len(), 0); // neither anchor is within max_line bytes
        let mut c = core(100, 100, 20);
        let (w, i) = run(&mut c, &[b"x_token_ids: [1, 2, 3, 4, 5]\r\nHarmonyError"]);
        assert_eq!(i[0].text, b"x_token_ids: [1, 2, 3".to_vec()[..20].to_vec());
        assert!(i[0].cut);
        assert_eq!(w[0].text, b"x_token_ids: [1, 2, \nHarmonyError".to_vec());
        let mut c = core(0, 0, 8);
        run(&mut c, &[b""]);
        assert_eq!(c.stats().lines, 0);
    }

    #[test]
    fn windows_merge_split_and_respect_max_window() {
        let data = b"HarmonyError\nHarmonyError\n";
        let (w, _) = run(&mut core(0, 0, 100), &[data]);
        assert_eq!(
            w.iter().map(|w| w.hit_lines.clone()).collect::<Vec<_>>(),
            vec![vec![1], vec![2]]
        );
        let (w, _) = run(&mut core(1, 0, 100), &[data]);
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].text, b"HarmonyError\nHarmonyError".to_vec());
        let many: Vec<u8> = (0..10)
            .flat_map(|i| format!("HarmonyError {i:02}\n").into_bytes())
            .collect();
        let mut c = Core::new(0, 100, 100, 40, true).unwrap();
        let (w, _) = run(&mut c, &[&many]);
        assert!(w.len() > 1);
        let hits: Vec<u64> = w.iter().flat_map(|w| w.hit_lines.clone()).collect();
        assert_eq!(hits, (1..=10).collect::<Vec<u64>>());
    }

    #[test]
    fn meta_rules() {
        let mut c = core(0, 0, 100);
        let meta = vec![(2u64, Some(b"2026-01-01 00:00:00".to_vec()), Some(9i64))];
        c.feed(
            b"Received request a\nReceived request b\nReceived request c pid=1\n",
            &meta,
        )
        .unwrap();
        let s = c.stats();
        assert_eq!(s.tallies[&("received", None, None)], 1);
        assert_eq!(
            s.tallies[&("received", Some(9), Some(b"2026-01-01 00".to_vec()))],
            1
        );
        assert_eq!(
            s.tallies[&("received", Some(1), Some(b"2026-01-01 00".to_vec()))],
            1
        );
        assert!(c.feed(b"x\n", &[(3, None, None)]).is_err());
        c.finish().unwrap();
        assert!(c.feed(b"x", &[]).is_err());
        assert!(c.finish().is_err());
    }

    #[test]
    fn memory_is_bounded() {
        let mut c = Core::new(64, 64, 128, 256, true).unwrap();
        let chunk = [
            b"INFO 11-27 10:00:01 HarmonyError\n".repeat(3),
            b"INFO 11-27 10:00:01 filler\n".repeat(200),
            vec![b'z'; 1000],
        ]
        .concat();
        for _ in 0..500 {
            c.feed(&chunk, &[]).unwrap();
            assert!(c.buf.len() <= 256 + 64 + 128 + chunk.len() + 128);
            assert!(c.known.len() < 64);
        }
    }

    /// The hand-written matchers agree with the spec's regexes on fragment soup.
    #[test]
    fn matchers_agree_with_the_regexes() {
        let iso = re(
            r"((?:19|20)[0-9][0-9])-([01][0-9])-([0-3][0-9])[ T]([0-2][0-9]):([0-5][0-9]):([0-6][0-9])",
        );
        let vllm = re(&format!(
            "(?:(?:INFO|ERROR|WARNING|DEBUG|CRITICAL|WARN){WS}+|^{WS}*)([01][0-9])-([0-3][0-9]){WS}+([0-2][0-9]):([0-5][0-9]):([0-6][0-9])"
        ));
        let pid = re(&format!(r"\bpid[=:]{WS}*([0-9]+)"));
        let ids = re(&format!("_token_ids{WS}*[:=]"));
        let access = re(r#""(?:POST|GET) /v1/(?:chat/completions|responses|completions)[ ?"]"#);
        let stamp_ref = |h: &[u8]| -> Option<Vec<u8>> {
            let mut at = 0;
            while let Some(c) = iso.captures_at(h, at) {
                let st = c.get(0).unwrap().start();
                if st > 0 && h[st - 1].is_ascii_digit() {
                    at = st + 1;
                    continue;
                }
                let g: Vec<&[u8]> = (1..=6).map(|i| c.get(i).unwrap().as_bytes()).collect();
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
        let frags: &[&[u8]] = &[
            b"INFO",
            b"WARN",
            b"WARNING",
            b"ERROR",
            b"CRITICAL",
            b" ",
            b"\t",
            b"\x0b",
            b"\r",
            b"11-27",
            b"13-01",
            b"00-12",
            b"01-32",
            b"10:00:01",
            b"24:00:00",
            b"23:59:60",
            b"2026-11-27",
            b"T",
            b"-",
            b":",
            b"1",
            b"20",
            b"1999",
            b"pid",
            b"pid=",
            b"pid:",
            b"_",
            b"x",
            b"7",
            b"1234567890",
            b"\"POST /v1/",
            b"\"GET /v1/",
            b"chat/completions",
            b"responses",
            b"completions",
            b"\"",
            b"?",
            b"2026-11-27T10:00:01",
            b"INFO 11-27 10:00:01",
            b" 11-27\t10:00:01",
            b"12-31 23:59:59",
            b"1999-12-32 00:00:00",
            b"_token_ids",
            b"_token_i",
            b"=",
            b"(APIServer pid=",
            b"(APIServer ",
        ];
        let mut state = 0x2545F4914F6CDD1Du64;
        let mut next = |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        let mut agreed = [0usize; 4];
        for _ in 0..200_000 {
            let k = next(12);
            let line: Vec<u8> = (0..k)
                .flat_map(|_| frags[next(frags.len())].to_vec())
                .collect();
            let want = stamp_ref(&line);
            assert_eq!(
                own_stamp(&line),
                want,
                "{:?}",
                String::from_utf8_lossy(&line)
            );
            agreed[0] += usize::from(want.is_some());
            let want = pid_ref(&line);
            assert_eq!(own_pid(&line), want, "{:?}", String::from_utf8_lossy(&line));
            agreed[1] += usize::from(want.is_some());
            let want = access.is_match(&line);
            assert_eq!(
                classify(&line).access,
                want,
                "{:?}",
                String::from_utf8_lossy(&line)
            );
            agreed[2] += usize::from(want);
            let want = ids.is_match(&line);
            assert_eq!(
                classify(&line).ids,
                want,
                "{:?}",
                String::from_utf8_lossy(&line)
            );
            agreed[3] += usize::from(want);
        }
        // the soup does exercise the positive cases
        assert!(agreed.iter().all(|&n| n > 100), "{agreed:?}");
    }
}
