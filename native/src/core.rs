//! The scan driver: bytes in, hit windows, id lines and tallies out, in any chunking.
//!
//! The same algorithm as the Python reference, harmony_doctor/scan/reference_core.py (`Core`), tested
//! equal to it. Offsets are in the "cut stream" (every line cut to max_line bytes).

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use crate::anchors::{Prefilter, Shape};
use crate::known_stamps::{KnownStamps, MetaLines};
use crate::lines::{count_nl, find_nl, CutStream, Taken};
pub use crate::runs::IdLine;
use crate::runs::{Helper, Lines};
use crate::stamps::StampWords;
use crate::tallies::{Tallies, TallyKey};
pub use crate::windows::Window;
use crate::windows::Windows;

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

/// The lines a feed() adds are scanned in two parts, on two threads, from this many bytes on
/// (see `Core::set_split`).
pub const SPLIT: usize = 256 * 1024;

/// One stream's scan state; feed() it bytes in any chunking, then finish().
pub struct Core {
    prefilter: Arc<Prefilter>,
    ids: bool,
    /// the lines a feed() adds are split in two parts from this many bytes on (None: never)
    split: Option<usize>,
    stream: CutStream,
    known: KnownStamps,
    meta: Arc<MetaLines>,
    /// the thread that scans second parts (started at the first one)
    helper: Option<Helper>,
    windows: Windows,
    tallies: Tallies,
    /// the counts (its tallies are `tallies`, filled in by stats())
    stats: Stats,
    done: bool,
    /// (feeds split in two parts, those whose second part carried a stamp in, those whose
    /// second part the helper scanned): what the tests check they exercised
    #[cfg(test)]
    splits: (usize, usize, usize),
    /// tests: 0 as in use, 1 no helper thread (the feeding thread scans both parts), 2 the
    /// feeding thread always waits for the helper's scan
    #[cfg(test)]
    helper_mode: u8,
}

/// The prefilters made in this process, by what each was made of: a scan of many small files
/// makes a core per file, and building the search each time cost about 0.45 ms a file (a
/// quarter of a small file's scan). A few are kept: a process uses one or two.
type Made = Vec<(String, Arc<Prefilter>)>;
static PREFILTERS: LazyLock<Mutex<Made>> = LazyLock::new(Mutex::default);

fn prefilter<A: AsRef<[u8]>>(
    anchors: &[A],
    markup_line: &str,
    shapes: &[Shape],
) -> Result<Arc<Prefilter>, String> {
    let given: Vec<&[u8]> = anchors.iter().map(AsRef::as_ref).collect();
    let key = format!("{given:?}\n{markup_line}\n{shapes:?}");
    let mut made = PREFILTERS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some((_, found)) = made.iter().find(|(k, _)| *k == key) {
        return Ok(Arc::clone(found));
    }
    let new = Arc::new(Prefilter::new(anchors, markup_line, shapes)?);
    if made.len() < 8 {
        made.push((key, Arc::clone(&new)));
    }
    Ok(new)
}

impl Core {
    /// A core finding the lines that hold one of the error `anchors` (failure text: the
    /// caller's, see `Prefilter::new` for the ones it refuses).
    #[allow(clippy::too_many_arguments)]
    pub fn new<A: AsRef<[u8]>>(
        anchors: &[A],
        markup_line: &str,
        shapes: &[Shape],
        before: usize,
        after: usize,
        max_line: usize,
        max_window: usize,
        ids: bool,
        stamps: StampWords,
    ) -> Result<Core, String> {
        if max_line < 1 || max_window < 1 {
            return Err("before/after must be >= 0, max_line/max_window >= 1".into());
        }
        Ok(Core {
            prefilter: prefilter(anchors, markup_line, shapes)?,
            ids,
            split: Some(SPLIT),
            stream: CutStream::new(max_line),
            known: KnownStamps::new(Arc::new(stamps)),
            meta: Arc::default(),
            helper: None,
            windows: Windows::new(before, after, max_window),
            tallies: Tallies::new(),
            stats: Stats::default(),
            done: false,
            #[cfg(test)]
            splits: (0, 0, 0),
            #[cfg(test)]
            helper_mode: 0,
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

    /// The error anchors searched: those given but the ones holding another.
    pub fn searched_anchors(&self) -> Vec<&[u8]> {
        self.prefilter.searched()
    }

    /// Scan the lines one feed() adds in two parts when they hold at least `min_bytes` (None:
    /// always on one thread): the second on the core's helper thread, unless the feeding thread
    /// is done with the first before the helper begins. The batches and counts are the same
    /// either way: the second part's stamps, line numbers and windows are settled once the
    /// first part is scanned.
    pub fn set_split(&mut self, min_bytes: Option<usize>) {
        self.split = min_bytes;
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
        if !meta.is_empty() {
            // a copy only while a job handed to the helper still holds it (see `Job`)
            let known = Arc::make_mut(&mut self.meta);
            for (line, stamp, pid) in meta {
                known.add(*line, stamp.as_deref(), *pid);
            }
        }
        self.stats.bytes += data.len() as u64;
        let Some(taken) = self.stream.take(data) else {
            return Ok(Batch::default());
        };
        let id_lines = self.process(&taken, false, newlines);
        let windows = self
            .windows
            .settle(&self.stream, &mut self.known, &self.meta, false);
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
        let windows = self
            .windows
            .settle(&self.stream, &mut self.known, &self.meta, true);
        self.stream.release();
        Ok(Batch { windows, id_lines })
    }

    /// The lines just taken (complete ones, plus the last one when `fin`); `newlines`: the
    /// number of `\n` in them (the same as in the data they came from), when known.
    fn process(&mut self, taken: &Taken, fin: bool, newlines: Option<u64>) -> Vec<IdLine> {
        let base = taken.base;
        let end = self.stream.buf.len();
        self.stats.cut_lines += taken.cuts.len() as u64;
        let line0 = self.stats.lines + 1;
        let lines = Lines::new(
            &self.prefilter,
            self.ids,
            &self.stream,
            &self.meta,
            (base, line0),
            &taken.cuts,
        );
        let (known, tallies) = (&mut self.known, &mut self.tallies);
        let split = match self.split {
            Some(min) if !fin && end - base >= min.max(1) => {
                // the first line start at or past the middle, if it leaves a line after it
                let mid = base + (end - base) / 2;
                find_nl(&lines.stream.buf[mid..end])
                    .map(|j| mid + j + 1)
                    .filter(|&s| s < end)
            }
            _ => None,
        };
        let mut parts = match split {
            None => vec![lines.scan(base, end, (base, line0), known, tallies)],
            Some(s) => {
                #[cfg(test)]
                if self.helper_mode == 1 {
                    self.helper = Some(Helper::gone());
                }
                #[cfg(test)]
                let wait = self.helper_mode == 2;
                #[cfg(not(test))]
                let wait = false;
                let (first, second, _how) =
                    lines.scan_two(s, end, known, tallies, &mut self.helper, wait);
                #[cfg(test)]
                {
                    self.splits.0 += 1;
                    self.splits.1 += usize::from(_how.0);
                    self.splits.2 += usize::from(_how.1);
                }
                vec![first, second]
            }
        };
        // the line count: the caller's, or counted on from the last line numbered
        let (at, at_line) = parts.iter().map(|f| (f.at, f.at_line)).max().unwrap();
        self.stats.lines = match newlines {
            Some(n) => line0 - 1 + n,
            None => at_line - 1 + count_nl(&self.stream.buf[at..end]),
        } + u64::from(fin);
        let mut out = Vec::new();
        for found in &mut parts {
            self.stats.access_lines += found.access_lines;
            self.stats.received_lines += found.received_lines;
            if self.stats.first_access_line.is_none() {
                self.stats.first_access_line = found.first_access_line.take();
            }
            for &(line, ls, le) in &found.hits {
                self.windows.add_hit(&self.stream, line, ls, le);
            }
            out.append(&mut found.id_lines);
        }
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
            .eff(&self.stream, &self.meta, keep_line - 1, idx - 1, usize::MAX);
        self.stream.forget_before(keep);
        self.known.forget_before(keep);
        if !self.meta.is_empty() {
            Arc::make_mut(&mut self.meta).forget_before(keep_line);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{bounded, core, log, run, Rng};

    const LOG: &[u8] = b"(APIServer pid=7) INFO 11-27 10:00:01 [a.py:1] 127.0.0.1:5 - \"POST /v1/chat/completions HTTP/1.1\" 200 OK\n\
Traceback (most recent call last):\n  File \"x.py\", line 1\n\
openai_harmony.HarmonyError: unexpected tokens remaining in message header: Some(\"x\")\n\
[2026-11-27 10:00:05] Received request r1 pid=3\n\
Generated response r1: output: 'x', output_token_ids: [1, 2], finish_reason: stop\n\
tail";

    #[test]
    fn cores_of_the_same_catalogue_share_one_prefilter() {
        // a scan of many small files makes a core per file: the search is built once
        let (a, b) = (core(20, 60, 1 << 20), core(3072, 1024, 1 << 22));
        assert!(Arc::ptr_eq(&a.prefilter, &b.prefilter));
        let stamps = StampWords::new(crate::fixture::LEVELS, crate::fixture::PID_KEY).unwrap();
        let other = Core::new(&[b"zebrafish"], "x", &[], 1, 1, 1, 1, true, stamps).unwrap();
        assert!(!Arc::ptr_eq(&a.prefilter, &other.prefilter));
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
        let mut c = bounded(64, 64, 128, 256);
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

    /// The lines of a feed() scanned in two parts on two threads give the same batches and
    /// counts, feed by feed, as on one: random logs, chunkings (so random split points),
    /// thresholds, window bounds and wrapper meta.
    #[test]
    fn two_threads_scan_as_one() {
        let (mut split, mut carried, mut by_helper) = (0, 0, 0);
        for seed in 0..400 {
            let mut rng = Rng::new(seed);
            let n = rng.below(120);
            let data = log(&mut rng, n);
            let nlines = count_nl(&data) as usize + 1;
            let (before, after) = (rng.below(300), rng.below(300));
            let (max_line, max_window) = (rng.below(200) + 1, rng.below(800) + 1);
            let new = || bounded(before, after, max_line, max_window);
            let (mut one, mut two) = (new(), new());
            one.set_split(None);
            two.set_split(Some(rng.below(400) + 1));
            two.helper_mode = (seed % 3) as u8;
            let mut meta: Vec<MetaEntry> = Vec::new();
            if rng.below(3) == 0 {
                for line in 1..=nlines as u64 {
                    if rng.below(4) == 0 {
                        let stamp = (rng.below(2) == 0).then(|| b"2026-01-02 03:04:05".to_vec());
                        meta.push((line, stamp, [None, Some(8)][rng.below(2)]));
                    }
                }
            }
            let mut at = 0;
            let mut first = true;
            while at < data.len() {
                let next = (at + rng.below(data.len() / 2 + 2)).min(data.len());
                let m = if first { &meta[..] } else { &[] };
                first = false;
                let newlines = [None, Some(count_nl(&data[at..next]))][rng.below(2)];
                let want = one.feed_counted(&data[at..next], m, newlines).unwrap();
                let got = two.feed_counted(&data[at..next], m, newlines).unwrap();
                assert_eq!(got, want, "seed {seed}, bytes {at}..{next}");
                assert_eq!(two.stats(), one.stats(), "seed {seed}, bytes {at}..{next}");
                at = next;
            }
            assert_eq!(two.finish(), one.finish(), "seed {seed}");
            assert_eq!(two.stats(), one.stats(), "seed {seed}");
            split += two.splits.0;
            carried += two.splits.1;
            by_helper += two.splits.2;
            match two.helper_mode {
                1 => assert_eq!(two.splits.2, 0),
                2 => assert_eq!(two.splits.2, two.splits.0),
                _ => {}
            }
        }
        // the runs did split, did carry a stamp into a second part, and the second parts were
        // scanned by the helper and by the feeding thread (every one where there is no helper)
        assert!(split > 300 && carried > 100, "{split} {carried}");
        assert!(
            by_helper > 100 && split - by_helper > 100,
            "{split} {by_helper}"
        );
    }
}
