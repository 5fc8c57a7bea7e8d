//! A run of lines the scan driver took (crate::core): scanned for hit lines, id lines, stamps
//! and tallies, in two parts, the second on a helper thread when one is free (`Lines::scan_two`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;

use crate::anchors::{find_markup, Prefilter};
use crate::known_stamps::{KnownStamps, MetaLines};
use crate::lines::{count_nl, find_nl, line_start, CutStream};
use crate::stamps::{own_pid, stamp_vec, Stamp, StampWords, HEAD};
use crate::tallies::Tallies;

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

/// What the scan of a run of lines reads: the buffer and the rules.
pub(crate) struct Lines<'a> {
    pub(crate) prefilter: &'a Arc<Prefilter>,
    pub(crate) ids: bool,
    pub(crate) stream: &'a CutStream,
    pub(crate) meta: &'a Arc<MetaLines>,
    pub(crate) with_meta: bool,
    /// where the lines just taken start in the buffer, and the number of the first one
    pub(crate) base: usize,
    pub(crate) line0: u64,
    /// where the cut ones of them start, relative to base (sorted)
    pub(crate) cuts: &'a [usize],
}

/// What a run of lines (all the lines just taken, or a part of them) held.
pub(crate) struct Found {
    pub(crate) id_lines: Vec<IdLine>,
    /// the indices in id_lines of the lines whose stamp is the one carried into the part (see
    /// `KnownStamps::carried_from`), not known yet: their stamp is None until then
    pub(crate) carried_ids: Vec<usize>,
    /// the hit lines: (line number, start, end)
    pub(crate) hits: Vec<(u64, usize, usize)>,
    pub(crate) access_lines: u64,
    pub(crate) received_lines: u64,
    pub(crate) first_access_line: Option<Vec<u8>>,
    /// the last line numbered: where it starts in the buffer, and its number
    pub(crate) at: usize,
    pub(crate) at_line: u64,
}

/// What a part scanned on its own gives: its finds, its stamps (see
/// `KnownStamps::carried_from`) and its tallies.
pub(crate) type Part = (Found, KnownStamps, Tallies);

/// The second part of a feed's lines (a copy), for the helper thread to scan, or for the feeding
/// thread when the helper has not taken it by the time the first part is scanned.
pub(crate) struct Job {
    prefilter: Arc<Prefilter>,
    /// the words a line's stamp and pid are read with
    stamps: Arc<StampWords>,
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
    pub(crate) fn take(&self) -> bool {
        !self.taken.swap(true, Ordering::AcqRel)
    }

    pub(crate) fn scan(&self) -> Part {
        let lines = Lines::new(
            &self.prefilter,
            self.ids,
            &self.stream,
            &self.meta,
            (0, self.line0),
            &self.cuts,
        );
        let mut known = KnownStamps::carried_from(self.stream.off, Arc::clone(&self.stamps));
        let mut tallies = Tallies::new();
        let end = self.stream.buf.len();
        let found = lines.scan(0, end, (0, self.line0), &mut known, &mut tallies);
        (found, known, tallies)
    }

    /// The helper's scan, once it is done (the helper took the job).
    pub(crate) fn wait(&self) -> Part {
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
pub(crate) struct Helper {
    jobs: Option<Sender<Arc<Job>>>,
    thread: Option<JoinHandle<()>>,
}

impl Helper {
    /// None when no thread can be started.
    pub(crate) fn start() -> Option<Helper> {
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
    pub(crate) fn gone() -> Helper {
        Helper {
            jobs: None,
            thread: None,
        }
    }

    /// Hand `job` to the helper; false when it is gone.
    pub(crate) fn send(&self, job: &Arc<Job>) -> bool {
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
    pub(crate) fn shift(&mut self, by: usize) {
        for hit in &mut self.hits {
            hit.1 += by;
            hit.2 += by;
        }
        self.at += by;
    }

    /// Add `by` to the line numbers (of a part numbered from 1).
    pub(crate) fn renumber(&mut self, by: u64) {
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
    pub(crate) fn new(
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
    pub(crate) fn scan_two(
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
            stamps: Arc::clone(known.words()),
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
    pub(crate) fn scan(
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
                let pid = own_pid(&text[..text.len().min(HEAD)], known.words())
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
