//! Hit windows: the bytes around each hit line, merged while they overlap, and their state.

use std::collections::VecDeque;

use memchr::{memchr, memrchr};

use crate::known_stamps::{KnownStamps, MetaLines};
use crate::lines::{count_nl, line_start, CutStream};
use crate::stamps::{stamp_vec, Stamp};

/// The text around one or more hit lines: from a line start up to `before` bytes before the
/// first hit to the last line end within `after` bytes past the last one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    /// The number of the window's first line.
    pub first_line: u64,
    pub text: Vec<u8>,
    /// The numbers of the hit lines in it.
    pub hit_lines: Vec<u64>,
    /// The effective stamp of the line before the window.
    pub stamp_before: Option<Vec<u8>>,
}

/// A hit line waiting for its `after` bytes (offsets are in the cut stream).
struct Hit {
    line: u64,
    /// the end of the line ("\n" or end of stream)
    e: usize,
    /// the window's start (a line start) and its line number
    ws: usize,
    ws_line: u64,
}

/// The window being grown: later hits whose window overlaps it join it.
struct Pending {
    start: usize,
    first_line: u64,
    end: usize,
    stamp_before: Stamp,
    hits: Vec<u64>,
}

/// The hits not settled yet and the window they grow.
pub(crate) struct Windows {
    before: usize,
    after: usize,
    max_window: usize,
    hits: VecDeque<Hit>,
    pending: Option<Pending>,
}

impl Windows {
    pub(crate) fn new(before: usize, after: usize, max_window: usize) -> Windows {
        Windows {
            before,
            after,
            max_window,
            hits: VecDeque::new(),
            pending: None,
        }
    }

    /// A hit on line number `line`, `s.buf[ls..le]`.
    pub(crate) fn add_hit(&mut self, s: &CutStream, line: u64, ls: usize, le: usize) {
        let wi = (s.off + ls).saturating_sub(self.before) - s.off;
        let mut ws = line_start(&s.buf, 0, wi);
        if ls - ws > self.max_window {
            // the line `before` reaches into is longer than a window: it is left out (a window
            // of two 4 MiB lines was held, and read, whole)
            ws = wi + memchr(b'\n', &s.buf[wi..ls]).map_or(ls - wi, |j| j + 1);
        }
        let ws_line = line - count_nl(&s.buf[ws..ls]);
        self.hits.push_back(Hit {
            line,
            e: s.off + le,
            ws: s.off + ws,
            ws_line,
        });
    }

    /// The windows complete once the stream reached `s.pos` (every one at the end of it:
    /// `eof`), in order.
    pub(crate) fn settle(
        &mut self,
        s: &CutStream,
        known: &mut KnownStamps,
        meta: &MetaLines,
        eof: bool,
    ) -> Vec<Window> {
        let mut out = Vec::new();
        let (off, pos, after) = (s.off, s.pos, self.after);
        while let Some(h) = self.hits.front() {
            if !eof && h.e + after > pos {
                break;
            }
            let h = self.hits.pop_front().unwrap();
            let hi = (h.e + after).min(pos);
            let end = match memrchr(b'\n', &s.buf[h.e - off..hi - off]) {
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
                out.push(window(s, p));
            }
            let si = known.eff(
                s,
                meta,
                h.ws_line - 1,
                (h.ws - off).wrapping_sub(1),
                usize::MAX,
            );
            let stamp_before = known.stamp(si).clone();
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
            out.push(window(s, p));
        }
        out
    }

    /// The first stream offset (a line start) that a window still to come may hold.
    pub(crate) fn reach(&self, s: &CutStream) -> usize {
        let wi = s.pos.saturating_sub(self.before).saturating_sub(s.off);
        let mut keep = s.off + line_start(&s.buf, 0, wi);
        if let Some(p) = &self.pending {
            keep = keep.min(p.start);
        }
        if let Some(h) = self.hits.front() {
            keep = keep.min(h.ws);
        }
        keep
    }
}

fn window(s: &CutStream, p: Pending) -> Window {
    Window {
        first_line: p.first_line,
        text: s.buf[p.start - s.off..p.end - s.off].to_vec(),
        hit_lines: p.hits,
        stamp_before: stamp_vec(&p.stamp_before),
    }
}

#[cfg(test)]
mod tests {
    use crate::testing::{bounded, core, run};

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
        let mut c = bounded(0, 100, 100, 40);
        let (w, _) = run(&mut c, &[&many]);
        assert!(w.len() > 1);
        let hits: Vec<u64> = w.iter().flat_map(|w| w.hit_lines.clone()).collect();
        assert_eq!(hits, (1..=10).collect::<Vec<u64>>());
    }

    #[test]
    fn a_context_line_longer_than_a_window_is_left_out() {
        let long = format!("{}\nctx\nHarmonyError\n", "x".repeat(200));
        // `before` reaches into the long line: kept while the window stays within max_window
        let (w, _) = run(&mut bounded(8, 0, 1000, 300), &[long.as_bytes()]);
        assert_eq!(
            (w[0].first_line, w[0].text.len()),
            (1, 200 + 1 + 3 + 1 + 12)
        );
        // past it, the window starts at the next line
        let (w, _) = run(&mut bounded(8, 0, 1000, 100), &[long.as_bytes()]);
        assert_eq!(
            (w[0].first_line, &w[0].text[..]),
            (2, &b"ctx\nHarmonyError"[..])
        );
    }
}
