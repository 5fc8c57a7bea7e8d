//! The scan driver: bytes in, hit windows, id lines and tallies out, in any chunking.
//!
//! The same algorithm as the Python reference, harmony_doctor/scan/core.py (`Core`), tested
//! equal to it. Offsets are in the "cut stream" (every line cut to max_line bytes).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;

use crate::anchors::{find_markup, Prefilter, Shape};
use crate::lines::{count_nl, find_nl, line_start, CutStream, Taken};
use crate::stamps::{own_pid, stamp_vec, KnownStamps, MetaLines, Stamp, HEAD};
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
    ) -> Result<Core, String> {
        if max_line < 1 || max_window < 1 {
            return Err("before/after must be >= 0, max_line/max_window >= 1".into());
        }
        Ok(Core {
            prefilter: Arc::new(Prefilter::new(anchors, markup_line, shapes)?),
            ids,
            split: Some(SPLIT),
            stream: CutStream::new(max_line),
            known: KnownStamps::new(),
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

/// What the scan of a run of lines reads: the buffer and the rules.
struct Lines<'a> {
    prefilter: &'a Arc<Prefilter>,
    ids: bool,
    stream: &'a CutStream,
    meta: &'a Arc<MetaLines>,
    with_meta: bool,
    /// where the lines just taken start in the buffer, and the number of the first one
    base: usize,
    line0: u64,
    /// where the cut ones of them start, relative to base (sorted)
    cuts: &'a [usize],
}

/// What a run of lines (all the lines just taken, or a part of them) held.
struct Found {
    id_lines: Vec<IdLine>,
    /// the indices in id_lines of the lines whose stamp is the one carried into the part (see
    /// `KnownStamps::carried_from`), not known yet: their stamp is None until then
    carried_ids: Vec<usize>,
    /// the hit lines: (line number, start, end)
    hits: Vec<(u64, usize, usize)>,
    access_lines: u64,
    received_lines: u64,
    first_access_line: Option<Vec<u8>>,
    /// the last line numbered: where it starts in the buffer, and its number
    at: usize,
    at_line: u64,
}

/// What a part scanned on its own gives: its finds, its stamps (see
/// `KnownStamps::carried_from`) and its tallies.
type Part = (Found, KnownStamps, Tallies);

/// The second part of a feed's lines (a copy), for the helper thread to scan, or for the feeding
/// thread when the helper has not taken it by the time the first part is scanned.
struct Job {
    prefilter: Arc<Prefilter>,
    ids: bool,
    meta: Arc<MetaLines>,
    /// the part's lines (their offsets are the stream's)
    stream: CutStream,
    /// where its cut lines start (relative to it, sorted)
    cuts: Vec<usize>,
    /// the number of its first line (1 without meta: the numbers are settled after)
    line0: u64,
    /// taken by the helper or by the feeding thread: whichever comes first scans it
    taken: AtomicBool,
    by_helper: AtomicBool,
    /// the helper's scan of it, once done
    done: Mutex<Option<std::thread::Result<Part>>>,
    ready: Condvar,
}

impl Job {
    /// Whether the caller is the first to take the job (and so scans it).
    fn take(&self) -> bool {
        !self.taken.swap(true, Ordering::AcqRel)
    }

    fn scan(&self) -> Part {
        let lines = Lines::new(
            &self.prefilter,
            self.ids,
            &self.stream,
            &self.meta,
            (0, self.line0),
            &self.cuts,
        );
        let mut known = KnownStamps::carried_from(self.stream.off);
        let mut tallies = Tallies::new();
        let end = self.stream.buf.len();
        let found = lines.scan(0, end, (0, self.line0), &mut known, &mut tallies);
        (found, known, tallies)
    }

    /// The helper's scan, once it is done (the helper took the job).
    fn wait(&self) -> Part {
        let mut done = self.done.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            match done.take() {
                Some(Ok(part)) => return part,
                Some(Err(panic)) => std::panic::resume_unwind(panic),
                None => {
                    done = self
                        .ready
                        .wait(done)
                        .unwrap_or_else(PoisonError::into_inner)
                }
            }
        }
    }
}

/// A core's helper thread: it scans the jobs sent to it that the feeding thread has not taken
/// first. It ends when the core is dropped.
struct Helper {
    jobs: Option<Sender<Arc<Job>>>,
    thread: Option<JoinHandle<()>>,
}

impl Helper {
    /// None when no thread can be started.
    fn start() -> Option<Helper> {
        let (jobs, todo) = channel::<Arc<Job>>();
        let work = move || {
            for job in todo {
                if job.take() {
                    job.by_helper.store(true, Ordering::Release);
                    let part =
                        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job.scan()));
                    *job.done.lock().unwrap_or_else(PoisonError::into_inner) = Some(part);
                    job.ready.notify_one();
                }
            }
        };
        let thread = std::thread::Builder::new()
            .name("harmony-doctor-core-2".into())
            .spawn(work)
            .ok()?;
        Some(Helper {
            jobs: Some(jobs),
            thread: Some(thread),
        })
    }

    /// A helper that takes no job (tests: the feeding thread scans both parts).
    #[cfg(test)]
    fn gone() -> Helper {
        Helper {
            jobs: None,
            thread: None,
        }
    }

    /// Hand `job` to the helper; false when it is gone.
    fn send(&self, job: &Arc<Job>) -> bool {
        self.jobs
            .as_ref()
            .is_some_and(|jobs| jobs.send(Arc::clone(job)).is_ok())
    }
}

impl Drop for Helper {
    fn drop(&mut self) {
        self.jobs.take(); // the helper's loop ends
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Found {
    /// Move the lines found by `by` bytes (of a part scanned from a copy).
    fn shift(&mut self, by: usize) {
        for hit in &mut self.hits {
            hit.1 += by;
            hit.2 += by;
        }
        self.at += by;
    }

    /// Add `by` to the line numbers (of a part numbered from 1).
    fn renumber(&mut self, by: u64) {
        for id_line in &mut self.id_lines {
            id_line.line += by;
        }
        for hit in &mut self.hits {
            hit.0 += by;
        }
        self.at_line += by;
    }
}

impl<'a> Lines<'a> {
    /// The lines of `stream` from `start` (where the first starts in the buffer, and its
    /// number), `cuts` those of them cut at the line cap.
    fn new(
        prefilter: &'a Arc<Prefilter>,
        ids: bool,
        stream: &'a CutStream,
        meta: &'a Arc<MetaLines>,
        (base, line0): (usize, u64),
        cuts: &'a [usize],
    ) -> Self {
        Lines {
            prefilter,
            ids,
            stream,
            meta,
            with_meta: !meta.is_empty(),
            base,
            line0,
            cuts,
        }
    }

    /// `scan` the lines of `buf[self.base..end]` in two parts, `..s` on this thread and a copy
    /// of `s..` on the helper thread (`s` a line start), or on this one too when the helper
    /// has not begun it by then: this thread never waits for the helper to get a CPU. The
    /// second part's stamps and line numbers are settled once the first part is scanned.
    /// `wait`: wait for the helper even when it has not begun (tests). Also says whether the
    /// second part carried a stamp in, and whether the helper scanned it.
    fn scan_two(
        &self,
        s: usize,
        end: usize,
        known: &mut KnownStamps,
        tallies: &mut Tallies,
        helper: &mut Option<Helper>,
        wait: bool,
    ) -> (Found, Found, (bool, bool)) {
        // without meta, the second part numbers its lines from 1 (the first part's lines are
        // not counted twice); with meta, by their numbers (meta is looked up by number)
        let line0 = if self.with_meta {
            self.line0 + count_nl(&self.stream.buf[self.base..s])
        } else {
            1
        };
        let skip = s - self.base;
        let job = Arc::new(Job {
            prefilter: Arc::clone(self.prefilter),
            ids: self.ids,
            meta: Arc::clone(self.meta),
            stream: CutStream::part(self.stream.buf[s..end].to_vec(), self.stream.off + s),
            cuts: self
                .cuts
                .iter()
                .filter(|&&c| c >= skip)
                .map(|c| c - skip)
                .collect(),
            line0,
            taken: AtomicBool::new(false),
            by_helper: AtomicBool::new(false),
            done: Mutex::new(None),
            ready: Condvar::new(),
        });
        if helper.is_none() {
            *helper = Helper::start(); // None where no thread can be started: this one scans
        }
        if let Some(h) = helper.as_ref() {
            if h.jobs.is_some() && !h.send(&job) {
                *helper = None;
            }
        }
        let first = self.scan(self.base, s, (self.base, self.line0), known, tallies);
        let sent = helper.as_ref().is_some_and(|h| h.jobs.is_some());
        let (mut second, part_known, part_tallies) = if !(wait && sent) && job.take() {
            job.scan()
        } else {
            job.wait()
        };
        second.shift(s);
        if !self.with_meta {
            if second.id_lines.is_empty() && second.hits.is_empty() {
                // it numbered no line: the last line numbered is the first part's
                (second.at, second.at_line) = (first.at, first.at_line);
            } else {
                let line_s = first.at_line + count_nl(&self.stream.buf[first.at..s]);
                second.renumber(line_s - 1);
            }
        }
        // the stamp carried into the second part: the effective stamp of the first part's last
        // line (whose number matters only for meta)
        let carries = part_known.carries();
        let carried: Stamp = if carries {
            let k = known.eff(self.stream, self.meta, line0 - 1, s - 1, usize::MAX);
            known.stamp(k).clone()
        } else {
            None
        };
        let carried_bytes = carried.as_ref().map(|c| c.bytes());
        tallies.merge(part_tallies, carried_bytes);
        known.append(part_known, &carried);
        for &i in &second.carried_ids {
            second.id_lines[i].stamp = carried_bytes.map(<[u8]>::to_vec);
        }
        (
            first,
            second,
            (carries, job.by_helper.load(Ordering::Acquire)),
        )
    }

    /// Scan the lines of `buf[from..to]` (line starts, `to` a line end or the buffer's end):
    /// the stamps into `known`, the request lines into `tallies`, the rest found.
    /// `numbered`: a line start at or before `from` and its number, to count line numbers on
    /// from.
    fn scan(
        &self,
        from: usize,
        to: usize,
        numbered: (usize, u64),
        known: &mut KnownStamps,
        tallies: &mut Tallies,
    ) -> Found {
        let buf = &self.stream.buf;
        let (base, end) = (self.base, to);
        let mut found = Found {
            id_lines: Vec::new(),
            carried_ids: Vec::new(),
            hits: Vec::new(),
            access_lines: 0,
            received_lines: 0,
            first_access_line: None,
            at: numbered.0,
            at_line: numbered.1,
        };
        let markup_from = |from: usize| find_markup(&buf[from..end]).map_or(end, |j| from + j);
        let prefilter: &Prefilter = self.prefilter;
        let mut piece = prefilter.next_piece(buf, from, end);
        let mut mk = markup_from(from);
        loop {
            let cand = piece.map_or(end, |p| p.0).min(mk);
            if cand >= end {
                break;
            }
            let ls = line_start(buf, from, cand);
            let le = find_nl(&buf[cand..end]).map_or(end, |j| cand + j);
            let (first_at, first_pat) = match piece {
                Some((s, p)) if s < le => (s, p),
                _ => (0, usize::MAX),
            };
            let (mut k, beyond) =
                prefilter.classify_line(buf, ls, le, first_at, first_pat, mk < le, end);
            let next = (le + 1).min(end);
            if first_pat != usize::MAX {
                piece = beyond;
            }
            if mk < next {
                mk = markup_from(next);
            }
            k.ids = k.ids && self.ids;
            if !(k.hit || k.access || k.received || k.ids) {
                continue;
            }
            // line numbers only where needed: counting "\n" per line costs more than the rest
            let line = if k.hit || k.ids || self.with_meta {
                found.at_line += count_nl(&buf[found.at..ls]);
                found.at = ls;
                found.at_line
            } else {
                0 // unused: no meta to look up, no record
            };
            if k.access || k.received || k.ids {
                let si = known.eff(self.stream, self.meta, line, le, ls);
                let carried = known.is_carried(si);
                let text = &buf[ls..le];
                let pid = own_pid(&text[..text.len().min(HEAD)])
                    .or_else(|| self.with_meta.then(|| self.meta.pid(line))?);
                if k.access || k.received {
                    if carried {
                        tallies.add_carried(!k.access, pid);
                    } else {
                        let stamp = known.stamp(si).as_ref().map(|s| s.bytes());
                        tallies.add(!k.access, pid, stamp);
                    }
                    if k.access {
                        found.access_lines += 1;
                        if found.first_access_line.is_none() {
                            found.first_access_line = Some(text.to_vec());
                        }
                    } else {
                        found.received_lines += 1;
                    }
                }
                if k.ids {
                    if carried {
                        found.carried_ids.push(found.id_lines.len());
                    }
                    found.id_lines.push(IdLine {
                        line,
                        text: text.to_vec(),
                        stamp: stamp_vec(known.stamp(si)),
                        pid,
                        cut: self.cuts.binary_search(&(ls - base)).is_ok(),
                    });
                }
            }
            if k.hit {
                found.hits.push((line, ls, le));
            }
        }
        found
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
