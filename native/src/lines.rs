//! The cut stream: input bytes taken as lines cut to max_line bytes, newline search, blanks.

use memchr::{memchr, memchr_iter, memrchr};

/// Python's `\s` on bytes, as a regex class (the reference's `_WS`).
/// A blank as Python's `isspace`/`strip` see it on the lines read here (no other control
/// character gets this far).
pub(crate) fn is_blank(c: u8) -> bool {
    c == b' ' || c == b'\t'
}

#[cfg(test)]
pub(crate) const WS: &str = r"[ \t\n\r\x0C\x0B]";

/// Whether `b` is in `WS`.
pub(crate) fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0B | 0x0C)
}

/// The first index at or after `i` that is not a blank (`h.len()` when none).
pub(crate) fn skip_ws(h: &[u8], mut i: usize) -> usize {
    while i < h.len() && is_ws(h[i]) {
        i += 1;
    }
    i
}

/// Whether `a` and `b` are equal, compared byte by byte inline: the slices compared per line
/// (a literal's bytes before its piece, a shape's word) are a few bytes long, and `==` calls
/// libc's memcmp for each (its call and dispatch were ~5% of a sparse scan in perf).
#[inline]
pub(crate) fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

/// Whether `h` starts with `prefix` (see `same`).
#[inline]
pub(crate) fn starts(h: &[u8], prefix: &[u8]) -> bool {
    h.len() >= prefix.len() && same(&h[..prefix.len()], prefix)
}

/// The first `\n` of `h`, which is mostly a line's length away: SSE2's memchr directly
/// spares the generic one's per-call dispatch (x86_64).
pub(crate) fn find_nl(h: &[u8]) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    return nl().find(h);
    #[cfg(not(target_arch = "x86_64"))]
    return memchr(b'\n', h);
}

/// The last `\n` of `h` (see find_nl).
pub(crate) fn rfind_nl(h: &[u8]) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    return nl().rfind(h);
    #[cfg(not(target_arch = "x86_64"))]
    return memrchr(b'\n', h);
}

#[cfg(target_arch = "x86_64")]
fn nl() -> memchr::arch::x86_64::sse2::memchr::One {
    memchr::arch::x86_64::sse2::memchr::One::new(b'\n').expect("SSE2 is in x86_64")
}

/// The start of the line holding `buf[at]`, not before `lo`.
pub(crate) fn line_start(buf: &[u8], lo: usize, at: usize) -> usize {
    match rfind_nl(&buf[lo..at]) {
        Some(j) => lo + j + 1,
        None => lo,
    }
}

/// The number of `\n` in `buf`.
pub(crate) fn count_nl(buf: &[u8]) -> u64 {
    memchr_iter(b'\n', buf).count() as u64
}

/// A buffer's spare room past which it is shrunk (a few chunks' worth is kept for reuse).
const SPARE: usize = 8 << 20;

/// The "cut stream" (every line cut to max_line bytes; offsets are in it): the lines still
/// needed, `buf`, from stream offset `off` (a line start) to `pos` (just past the last line
/// taken), and the incomplete last line.
pub(crate) struct CutStream {
    max_line: usize,
    pub(crate) buf: Vec<u8>,
    pub(crate) off: usize,
    pub(crate) pos: usize,
    part: Vec<u8>,
    part_cut: bool,
}

/// Lines just added to the buffer: they start at `buf[base]`; `cuts` are where the cut ones
/// start, relative to base (sorted).
pub(crate) struct Taken {
    pub(crate) base: usize,
    pub(crate) cuts: Vec<usize>,
}

impl CutStream {
    pub(crate) fn new(max_line: usize) -> CutStream {
        CutStream {
            max_line,
            buf: Vec::new(),
            off: 0,
            pos: 0,
            part: Vec::new(),
            part_cut: false,
        }
    }

    /// A copy of whole lines of a stream, `buf`, that start at stream offset `off`.
    pub(crate) fn part(buf: Vec<u8>, off: usize) -> CutStream {
        CutStream {
            max_line: buf.len().max(1),
            pos: off + buf.len(),
            buf,
            off,
            part: Vec::new(),
            part_cut: false,
        }
    }

    /// Add the complete lines of `data` (and of the incomplete line before it) to the buffer;
    /// None when `data` holds no newline (it only extends the incomplete line).
    pub(crate) fn take(&mut self, data: &[u8]) -> Option<Taken> {
        let ml = self.max_line;
        let Some(last) = memrchr(b'\n', data) else {
            let room = ml - self.part.len();
            if data.len() > room {
                self.part.extend_from_slice(&data[..room]);
                self.part_cut = true;
            } else {
                self.part.extend_from_slice(data);
            }
            return None;
        };
        let first = memchr(b'\n', data).unwrap();
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
        self.pos += self.buf.len() - base;
        Some(Taken { base, cuts })
    }

    /// At the end of the stream: add the incomplete last line, if any, to the buffer.
    pub(crate) fn take_rest(&mut self) -> Option<Taken> {
        if self.part.is_empty() {
            return None;
        }
        let base = self.buf.len();
        self.buf.extend_from_slice(&self.part);
        self.part.clear();
        self.pos += self.buf.len() - base;
        let cuts = if self.part_cut { vec![0] } else { vec![] };
        Some(Taken { base, cuts })
    }

    /// Forget the buffered stream before offset `keep` (a line start past `off`).
    pub(crate) fn forget_before(&mut self, keep: usize) {
        self.buf.drain(..keep - self.off);
        self.off = keep;
        // room a long line left behind is given back: a file of 4 MiB lines kept 16 MiB
        // (and 4 MiB for its incomplete line) to the end of the file
        for held in [&mut self.buf, &mut self.part] {
            if held.capacity() > SPARE && held.capacity() > 4 * held.len() {
                held.shrink_to(2 * held.len());
            }
        }
    }

    /// Every byte held given back (nothing is read after the stream's end).
    pub(crate) fn release(&mut self) {
        self.buf = Vec::new();
        self.part = Vec::new();
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
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taken(s: &mut CutStream, data: &[u8]) -> Option<(Vec<u8>, Vec<usize>)> {
        let t = s.take(data)?;
        Some((s.buf[t.base..].to_vec(), t.cuts))
    }

    #[test]
    fn lines_are_cut_to_max_line_across_chunks() {
        let mut s = CutStream::new(4);
        assert_eq!(taken(&mut s, b"abcdefg"), None);
        assert_eq!(
            taken(&mut s, b"h\nab\nabcdef\nxy"),
            Some((b"abcd\nab\nabcd\n".to_vec(), vec![0, 8]))
        );
        assert_eq!(s.pos, 13);
        let t = s.take_rest().unwrap();
        assert_eq!((&s.buf[t.base..], t.cuts), (&b"xy"[..], vec![]));
        assert!(s.take_rest().is_none());
        s.forget_before(5);
        assert_eq!((s.off, s.pos, &s.buf[..]), (5, 15, &b"ab\nabcd\nxy"[..]));
    }

    #[test]
    fn newline_search() {
        let h = b"ab\ncd\nef";
        assert_eq!(
            (find_nl(h), rfind_nl(h), count_nl(h)),
            (Some(2), Some(5), 2)
        );
        assert_eq!(
            (
                line_start(h, 0, 7),
                line_start(h, 0, 1),
                line_start(h, 4, 5)
            ),
            (6, 0, 4)
        );
        assert_eq!(skip_ws(b" \t\x0b\x0cx", 0), 4);
    }

    #[test]
    fn same_and_starts_agree_with_slice_equality() {
        // every pair of slices up to 3 bytes long over two letters, and long ones differing
        // at each end: `same` is `==` and `starts` is `starts_with`
        let mut slices: Vec<Vec<u8>> = vec![Vec::new()];
        for n in 1..=3u32 {
            for bits in 0..(1u32 << n) {
                slices.push((0..n).map(|i| b"ab"[((bits >> i) & 1) as usize]).collect());
            }
        }
        let long = b"output_token_ids: [".to_vec();
        for at in [0, long.len() / 2, long.len() - 1] {
            let mut other = long.clone();
            other[at] ^= 1;
            slices.push(other);
        }
        slices.push(long);
        for a in &slices {
            for b in &slices {
                assert_eq!(same(a, b), a == b, "{a:?} {b:?}");
                assert_eq!(starts(a, b), a.starts_with(b), "{a:?} {b:?}");
            }
        }
    }
}
