//! The scan driver: bytes in, hit windows, id lines and tallies out, in any chunking.
//!
//! The same algorithm as the Python reference, harmony_doctor/scan/core.py (`Core`), tested
//! equal to it. Offsets are in the "cut stream" (every line cut to max_line bytes).

use std::collections::HashMap;

use crate::anchors::{find_markup, Prefilter};
use crate::lines::{count_nl, find_nl, line_start, CutStream, Taken};
use crate::stamps::{own_pid, stamp_vec, KnownStamps, HEAD};
use crate::tallies::{Tallies, TallyKey};
pub use crate::windows::Window;
use crate::windows::Windows;

/// A line holding output token ids (`output_token_ids` then `:` or `=`; vLLM's prompt ids
/// are not completions), with its effective stamp and pid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdLine {
    pub line: u64,
    pub text: Vec<u8>,
    pub stamp: Option<Vec<u8>>,
    pub pid: Option<i64>,
    /// Whether the line was cut to max_line bytes.
    pub cut: bool,
}

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

/// What one feed() or finish() call settled.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Batch {
    pub windows: Vec<Window>,
    pub id_lines: Vec<IdLine>,
}

/// A wrapper's facts about one line: (line number, stamp, pid).
pub type MetaEntry = (u64, Option<Vec<u8>>, Option<i64>);

/// One stream's scan state; feed() it bytes in any chunking, then finish().
pub struct Core {
    prefilter: Prefilter,
    ids: bool,
    stream: CutStream,
    known: KnownStamps,
    windows: Windows,
    tallies: Tallies,
    /// the counts (its tallies are `tallies`, filled in by stats())
    stats: Stats,
    done: bool,
}

impl Core {
    /// A core finding the lines that hold one of the error `anchors` (failure text: the
    /// caller's, see `Prefilter::new` for the ones it refuses).
    pub fn new<A: AsRef<[u8]>>(
        anchors: &[A],
        markup_line: &str,
        before: usize,
        after: usize,
        max_line: usize,
        max_window: usize,
        ids: bool,
    ) -> Result<Core, String> {
        if max_line < 1 || max_window < 1 {
            return Err("before/after must be >= 0, max_line/max_window >= 1".into());
        }
        Ok(Core {
            prefilter: Prefilter::new(anchors, markup_line)?,
            ids,
            stream: CutStream::new(max_line),
            known: KnownStamps::new(),
            windows: Windows::new(before, after, max_window),
            tallies: Tallies::new(),
            stats: Stats::default(),
            done: false,
        })
    }

    /// The error anchors, as given.
    pub fn anchors(&self) -> &[Vec<u8>] {
        self.prefilter.anchors()
    }

    /// The markup-line rule, as given.
    pub fn markup_line(&self) -> &str {
        self.prefilter.markup_line()
    }

    pub fn stats(&self) -> Stats {
        let mut s = self.stats.clone();
        s.tallies = self.tallies.to_map();
        s
    }

    pub fn feed(&mut self, data: &[u8], meta: &[MetaEntry]) -> Result<Batch, String> {
        self.feed_counted(data, meta, None)
    }

    /// feed(), given the number of `\n` in `data` when the caller has counted them already:
    /// the lines are then not counted again (a wrong count is refused in debug builds).
    pub fn feed_counted(
        &mut self,
        data: &[u8],
        meta: &[MetaEntry],
        newlines: Option<u64>,
    ) -> Result<Batch, String> {
        debug_assert!(newlines.is_none_or(|n| n == count_nl(data)));
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
            self.known.add_meta(*line, stamp.as_deref(), *pid);
        }
        self.stats.bytes += data.len() as u64;
        let Some(taken) = self.stream.take(data) else {
            return Ok(Batch::default());
        };
        let id_lines = self.process(&taken, false, newlines);
        let windows = self.windows.settle(&self.stream, &mut self.known, false);
        self.trim();
        Ok(Batch { windows, id_lines })
    }

    pub fn finish(&mut self) -> Result<Batch, String> {
        if self.done {
            return Err("finish() called twice".into());
        }
        self.done = true;
        let id_lines = match self.stream.take_rest() {
            Some(taken) => self.process(&taken, true, None),
            None => Vec::new(),
        };
        let windows = self.windows.settle(&self.stream, &mut self.known, true);
        Ok(Batch { windows, id_lines })
    }

    /// The lines just taken (complete ones, plus the last one when `fin`); `newlines`: the
    /// number of `\n` in them (the same as in the data they came from), when known.
    fn process(&mut self, taken: &Taken, fin: bool, newlines: Option<u64>) -> Vec<IdLine> {
        let (base, cuts) = (taken.base, &taken.cuts);
        let end = self.stream.buf.len();
        self.stats.cut_lines += cuts.len() as u64;
        let line0 = self.stats.lines + 1;
        let mut out = Vec::new();
        let (mut at, mut at_line) = (base, line0);
        let markup_from =
            |buf: &[u8], from: usize| find_markup(&buf[from..end]).map_or(end, |j| from + j);
        let with_meta = self.known.has_meta();
        let prefilter = &self.prefilter;
        let mut piece = prefilter.next_piece(&self.stream.buf, base, end);
        let mut mk = markup_from(&self.stream.buf, base);
        loop {
            let buf = &self.stream.buf;
            let cand = piece.map_or(end, |p| p.0).min(mk);
            if cand >= end {
                break;
            }
            let ls = line_start(buf, base, cand);
            let le = find_nl(&buf[cand..end]).map_or(end, |j| cand + j);
            let (first_at, first_pat) = match piece {
                Some((s, p)) if s < le => (s, p),
                _ => (0, usize::MAX),
            };
            let (mut k, beyond) =
                prefilter.classify_line(buf, ls, le, first_at, first_pat, mk < le, end);
            let from = (le + 1).min(end);
            if first_pat != usize::MAX {
                piece = beyond;
            }
            if mk < from {
                mk = markup_from(buf, from);
            }
            k.ids = k.ids && self.ids;
            if !(k.hit || k.access || k.received || k.ids) {
                continue;
            }
            // line numbers only where needed: counting "\n" per line costs more than the rest
            let line = if k.hit || k.ids || with_meta {
                at_line += count_nl(&buf[at..ls]);
                at = ls;
                at_line
            } else {
                0 // unused: no meta to look up, no record
            };
            if k.access || k.received || k.ids {
                let si = self.known.eff(&self.stream, line, le, ls);
                let text = &self.stream.buf[ls..le];
                let pid = own_pid(&text[..text.len().min(HEAD)])
                    .or_else(|| with_meta.then(|| self.known.meta_pid(line))?);
                if k.access || k.received {
                    let stamp = self.known.stamp(si).as_ref().map(|s| s.bytes());
                    self.tallies.add(!k.access, pid, stamp);
                    if k.access {
                        self.stats.access_lines += 1;
                        if self.stats.first_access_line.is_none() {
                            self.stats.first_access_line = Some(text.to_vec());
                        }
                    } else {
                        self.stats.received_lines += 1;
                    }
                }
                if k.ids {
                    out.push(IdLine {
                        line,
                        text: text.to_vec(),
                        stamp: stamp_vec(self.known.stamp(si)),
                        pid,
                        cut: cuts.binary_search(&(ls - base)).is_ok(),
                    });
                }
            }
            if k.hit {
                self.windows.add_hit(&self.stream, line, ls, le);
            }
        }
        self.stats.lines = match newlines {
            Some(n) => line0 - 1 + n,
            None => at_line - 1 + count_nl(&self.stream.buf[at..end]),
        } + u64::from(fin);
        out
    }

    /// Forget the buffered lines that no window or stamp look-up to come can reach.
    fn trim(&mut self) {
        let keep = self.windows.reach(&self.stream);
        let off = self.stream.off;
        if keep <= off {
            return;
        }
        let idx = keep - off;
        // buf ends with the last processed line's "\n": count back from there (short)
        let keep_line = self.stats.lines + 1 - count_nl(&self.stream.buf[idx..]);
        self.known
            .eff(&self.stream, keep_line - 1, idx - 1, usize::MAX);
        self.stream.forget_before(keep);
        self.known.forget_before(keep, keep_line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{core, run, ANCHORS, MARKUP_LINE};

    const LOG: &[u8] = b"(APIServer pid=7) INFO 11-27 10:00:01 [a.py:1] 127.0.0.1:5 - \"POST /v1/chat/completions HTTP/1.1\" 200 OK\n\
Traceback (most recent call last):\n  File \"x.py\", line 1\n\
openai_harmony.HarmonyError: unexpected tokens remaining in message header: Some(\"x\")\n\
[2026-11-27 10:00:05] Received request r1 pid=3\n\
Generated response r1: output: 'x', output_token_ids: [1, 2], finish_reason: stop\n\
tail";

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
            // the caller's count of newlines spares the core its own, with the same results
            let mut counted = core(20, 60, 1 << 20);
            let (mut w, mut i) = (Vec::new(), Vec::new());
            for chunk in &chunks {
                let b = counted
                    .feed_counted(chunk, &[], Some(count_nl(chunk)))
                    .unwrap();
                w.extend(b.windows);
                i.extend(b.id_lines);
            }
            let b = counted.finish().unwrap();
            w.extend(b.windows);
            i.extend(b.id_lines);
            assert_eq!((w, i), whole, "counted chunks of {n}");
            assert_eq!(counted.stats(), s, "counted chunks of {n}");
        }
    }

    #[test]
    fn lines_cut_and_counted() {
        let mut c = core(100, 100, 8);
        let (w, i) = run(
            &mut c,
            &[
                b"0123456789HarmonyError\noutput_token_ids: [1]\nab\r\nHarmony",
                b"Error",
            ],
        );
        assert_eq!(c.stats().cut_lines, 3);
        assert_eq!(c.stats().lines, 4);
        assert!(i.is_empty()); // "output_token_ids" is past max_line
        assert_eq!(w.len(), 0); // neither anchor is within max_line bytes
        let mut c = core(100, 100, 20);
        let (w, i) = run(
            &mut c,
            &[b"output_token_ids: [1, 2, 3, 4, 5]\r\nHarmonyError"],
        );
        assert_eq!(i[0].text, b"output_token_ids: [1".to_vec());
        assert!(i[0].cut);
        assert_eq!(w[0].text, b"output_token_ids: [1\nHarmonyError".to_vec());
        let mut c = core(0, 0, 8);
        run(&mut c, &[b""]);
        assert_eq!(c.stats().lines, 0);
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
        let mut c = Core::new(ANCHORS, MARKUP_LINE, 64, 64, 128, 256, true).unwrap();
        let chunk = [
            b"INFO 11-27 10:00:01 HarmonyError\n".repeat(3),
            b"INFO 11-27 10:00:01 filler\n".repeat(200),
            vec![b'z'; 1000],
        ]
        .concat();
        for _ in 0..500 {
            c.feed(&chunk, &[]).unwrap();
            assert!(c.stream.buf.len() <= 256 + 64 + 128 + chunk.len() + 128);
            assert!(c.known.len() < 64);
        }
    }
}
