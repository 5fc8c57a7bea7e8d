//! Test fixtures shared by the modules' unit tests: a core run over chunks, fragment soup, an
//! anatomy's patterns.

use crate::anatomy::{ShapeNames, Spec as AnatomySpec};
use crate::core::{Core, IdLine};
use crate::windows::Window;

/// Feed `chunks` to `core`, then finish it: every window and id line, in order.
pub(crate) fn run(core: &mut Core, chunks: &[&[u8]]) -> (Vec<Window>, Vec<IdLine>) {
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

/// The group names of prefix shape `i` (`shape_i`, and `key_i`, `ts_i`, `pid_i` where it has
/// them).
pub(crate) fn shape_names(i: usize, key: bool, ts: bool, pid: bool) -> ShapeNames {
    ShapeNames {
        shape: format!("shape_{i}"),
        key: key.then(|| format!("key_{i}")),
        ts: ts.then(|| format!("ts_{i}")),
        pid: pid.then(|| format!("pid_{i}")),
    }
}

/// An anatomy's patterns of the kind lines.py has (the tests' own, not the crate's): vLLM's
/// process and record prefixes, a `time=` prefix before `msg=`, two servers, an exception
/// group's gutter. A test changes what it needs.
pub(crate) fn anatomy_spec() -> AnatomySpec {
    AnatomySpec {
        prefixes: concat!(
            r"(?P<shape_0>^\((?P<key_0>[^()]*?\bpid=(?P<pid_0>\d+)[^()]*)\)\s?)",
            r"|(?P<shape_1>^(?P<level_1>INFO|ERROR)\s+(?P<ts_1>\d\d-\d\d \d\d:\d\d:\d\d)\s+",
            r"\[(?P<src_1>[\w.-]+\.py:\d+)\]\s?)",
            r"|(?P<shape_2>^time=(?P<ts_2>\S+)\s+(?=msg=))",
        )
        .to_string(),
        shapes: vec![
            shape_names(0, true, false, true),
            shape_names(1, false, true, false),
            shape_names(2, false, true, false),
        ],
        never: " \t|".to_string(),
        month_day: r"^(?:INFO|ERROR)\s+\d\d-\d\d".to_string(),
        key_pid: r"pid=(\d+)|\[(\d+)\]".to_string(),
        entity: r"&(?:quot|amp);".to_string(),
        frame: r#"^File\s*"(?P<path>[^"]*)""#.to_string(),
        frame_path: "path".to_string(),
        frame_start: "File ".to_string(),
        servers: r"(?P<s0>(?:\bvllm\b))|(?P<s1>(?i:\bsglang\b))".to_string(),
        server_groups: vec!["s0".to_string(), "s1".to_string()],
        gutter: [
            r"^\s*\+-",
            r"^\s*\+ (?=Exception)",
            r"^\s*\|(?:\s+\|)*(?=\s|$)",
        ]
        .map(String::from)
        .to_vec(),
    }
}

/// The catalogue the Python package hands the core (native/src/fixture.rs, written out from
/// it and checked fresh by tests/test_native_fixture.py).
pub(crate) use crate::fixture::{ANCHORS, MARKUP_LINE, SHAPES, SHAPE_REGEXES};

/// Anchors of engine forms, as the catalogue had them before its generic forms: a list of
/// fewer, longer anchors, for the cases written for them.
pub(crate) const ENGINE_ANCHORS: &[&[u8]] = &[
    b"HarmonyError",
    b"expecting start token",
    b"tokens remaining",
    b"nknown role",
    b"channel marker",
    b"Unexpected EOS",
    b"contain a role",
    b"decode header",
    b"vocab file",
    b"conversation JSON",
    b"tool call",
    b"parse input at pos",
    b"tags in the content",
    b"non-terminal state",
    b"recovered raw output",
];

/// A core with the fixture's anchors and these window and line bounds (max_window 1 MiB, id
/// lines on).
pub(crate) fn core(before: usize, after: usize, max_line: usize) -> Core {
    bounded(before, after, max_line, 1 << 20)
}

/// A core with the fixture's anchors and these bounds (id lines on).
pub(crate) fn bounded(before: usize, after: usize, max_line: usize, max_window: usize) -> Core {
    Core::new(
        ANCHORS,
        MARKUP_LINE,
        &SHAPES,
        before,
        after,
        max_line,
        max_window,
        true,
        crate::stamps::StampWords::new(crate::fixture::LEVELS, crate::fixture::PID_KEY).unwrap(),
    )
    .unwrap()
}

/// Pieces of every rule the hand-written matchers replace a regex for.
const FRAGMENTS: &[&[u8]] = &[
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
    b"/",
    b" - ",
    b"2024/12/11",
    b"2024/12/11 - 09:58:58",
    b"[GIN] 2024/13/11 - 10:00:01 |",
    b"output_token_ids",
    b"prompt_token_ids",
    b"output_token_i",
    b"=",
    b"(APIServer pid=",
    b"(APIServer ",
];

/// `n` lines of up to 11 of the fragments above glued at random.
pub(crate) fn soup(n: usize) -> impl Iterator<Item = Vec<u8>> {
    glue(FRAGMENTS.iter().map(|f| f.to_vec()).collect(), n)
}

/// `n` lines of up to 11 of `frags` glued at random (a fixed xorshift seed: the same lines at
/// every call).
pub(crate) fn glue(frags: Vec<Vec<u8>>, n: usize) -> impl Iterator<Item = Vec<u8>> {
    let mut state = 0x2545F4914F6CDD1Du64;
    let mut next = move |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    };
    (0..n).map(move |_| {
        let k = next(12);
        (0..k)
            .flat_map(|_| frags[next(frags.len())].clone())
            .collect()
    })
}

/// `n` lines glued from the starts and ends of `literals` (every piece of one, and every piece
/// without the bytes of its literal before it, is among them), blanks, markup and content.
pub(crate) fn literal_soup(literals: &[&[u8]], n: usize) -> impl Iterator<Item = Vec<u8>> {
    let mut frags: Vec<Vec<u8>> = Vec::new();
    for lit in literals {
        for i in 0..=lit.len() {
            frags.push(lit[..i].to_vec());
            frags.push(lit[i..].to_vec());
        }
    }
    frags.extend([
        b" ".to_vec(),
        b"x".to_vec(),
        b"<|".to_vec(),
        b"\"text\":'".to_vec(),
    ]);
    glue(frags, n)
}

/// A xorshift generator (fixed seeds: the same draws at every run).
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// A number below `n`.
    pub(crate) fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// `n` log lines of the shapes the core tells apart: request lines with and without their own
/// stamp and pid, id lines, failure lines, markup, runs of unstamped lines, long lines, blanks.
pub(crate) fn log(rng: &mut Rng, n: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for _ in 0..n {
        let (h, pid) = (rng.below(3) + 9, rng.below(3));
        let line = match rng.below(14) {
            0 => format!(
                "(APIServer pid={pid}) INFO 11-27 {h:02}:00:01 [a.py:1] 127.0.0.1:5 - \
                 \"POST /v1/chat/completions HTTP/1.1\" 200 OK"
            ),
            1 => format!("[2026-11-27 {h:02}:00:05] Received request r{pid} pid={pid}"),
            2 => format!("Received request r{pid}"),
            3 => format!("Generated response r{pid}: output: 'x', output_token_ids: [1, {h}]"),
            4 => "Traceback (most recent call last):".into(),
            5 => "openai_harmony.HarmonyError: unexpected tokens remaining".into(),
            6 => "{\"content\": \"<|start|>assistant\"}".into(),
            7 => format!("INFO 11-27 {h:02}:30:00 a stamp and nothing else"),
            8 => "x".repeat(rng.below(300)),
            9 => String::new(),
            10 => "\r".into(),
            11 => {
                format!("2026-13-27 {h:02}:00:00 no valid stamp; srv request: POST /completion 1")
            }
            _ => "  File \"x.py\", line 1, in parse".into(),
        };
        out.extend_from_slice(line.as_bytes());
        out.push(b'\n');
    }
    if rng.below(2) == 0 {
        out.pop();
    }
    out
}
