//! Test fixtures shared by the modules' unit tests: a core run over chunks, fragment soup.

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

/// A core with these window and line bounds (max_window 1 MiB, id lines on).
pub(crate) fn core(before: usize, after: usize, max_line: usize) -> Core {
    Core::new(before, after, max_line, 1 << 20, true).unwrap()
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
    b"_token_ids",
    b"_token_i",
    b"=",
    b"(APIServer pid=",
    b"(APIServer ",
];

/// `n` lines of up to 11 fragments glued at random (a fixed xorshift seed: the same lines at
/// every call).
pub(crate) fn soup(n: usize) -> impl Iterator<Item = Vec<u8>> {
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
            .flat_map(|_| FRAGMENTS[next(FRAGMENTS.len())].to_vec())
            .collect()
    })
}
