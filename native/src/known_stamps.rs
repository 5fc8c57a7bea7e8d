//! Every line's effective stamp: its own stamp (crate::stamps), else its wrapper's, else the
//! effective stamp of the line before it.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::lines::{line_start, CutStream};
use crate::stamps::{own_st, St, Stamp, StampWords, HEAD};

/// The wrapper's facts per line: line -> (wrapper stamp, wrapper pid).
#[derive(Default, Clone)]
pub(crate) struct MetaLines(BTreeMap<u64, (Stamp, Option<i64>)>);

impl MetaLines {
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub(crate) fn add(&mut self, line: u64, stamp: Option<&[u8]>, pid: Option<i64>) {
        self.0
            .insert(line, (stamp.map(|s| St::Meta(Arc::from(s))), pid));
    }

    /// The wrapper's pid for `line`, if any.
    pub(crate) fn pid(&self, line: u64) -> Option<i64> {
        self.0.get(&line).and_then(|m| m.1)
    }

    /// The wrapper's stamp for `line`, if any.
    fn stamp(&self, line: u64) -> Stamp {
        self.0.get(&line).and_then(|m| m.0.clone())
    }

    /// Forget the meta of the lines before `keep_line`.
    pub(crate) fn forget_before(&mut self, keep_line: u64) {
        if !self.0.is_empty() {
            self.0 = self.0.split_off(&keep_line);
        }
    }
}

/// A line's own stamp, else its wrapper's from meta.
fn line_stamp(meta: &MetaLines, line: u64, text: &[u8], words: &StampWords) -> Stamp {
    match own_st(&text[..text.len().min(HEAD)], words) {
        Some(st) => Some(st),
        None if meta.is_empty() => None,
        None => meta.stamp(line),
    }
}

/// The effective stamps known so far: a line's own stamp, else its wrapper's from meta, else
/// the effective stamp of the line before it.
pub(crate) struct KnownStamps {
    /// (stream offset just past a line, effective stamp of that line) points known, sorted;
    /// the first is the line before the buffer (offset `off`; 0: the empty start of the stream)
    /// or, for a part of a chunk scanned on its own, the line before the part.
    points: Vec<(usize, Stamp)>,
    /// How many of the first points have the effective stamp of the line before the first
    /// point, not known here: a part's points up to its first stamped line (see `carried_from`;
    /// 0 for a stream's own points). They always come first: the stamp of a point is that of
    /// the last stamped line at or before it.
    carried: usize,
    /// the words a line's own stamp is read with
    words: Arc<StampWords>,
}

impl KnownStamps {
    pub(crate) fn new(words: Arc<StampWords>) -> KnownStamps {
        KnownStamps {
            points: vec![(0, None)],
            carried: 0,
            words,
        }
    }

    /// The words a line's stamp and pid are read with.
    pub(crate) fn words(&self) -> &Arc<StampWords> {
        &self.words
    }

    /// The points of a part of the stream whose lines start at stream offset `key`: the
    /// effective stamp of the line before it is carried in later (see `append`).
    pub(crate) fn carried_from(key: usize, words: Arc<StampWords>) -> KnownStamps {
        KnownStamps {
            points: vec![(key, None)],
            carried: 1,
            words,
        }
    }

    /// The stamp of the point `k` (as `eff` returns it; None when `is_carried(k)`).
    pub(crate) fn stamp(&self, k: usize) -> &Stamp {
        &self.points[k].1
    }

    /// Whether the point `k` has the stamp carried into a part (see `carried_from`).
    pub(crate) fn is_carried(&self, k: usize) -> bool {
        k < self.carried
    }

    /// Whether a point other than the first has the carried stamp.
    pub(crate) fn carries(&self) -> bool {
        self.carried > 1
    }

    /// Effective stamp of `line`, which ends at buffer index `end` and starts at `start`
    /// (usize::MAX: not known), as its point index (see `stamp`; `line` matters only for meta
    /// lookups: it may be anything when there is no meta).
    pub(crate) fn eff(
        &mut self,
        s: &CutStream,
        meta: &MetaLines,
        line: u64,
        end: usize,
        start: usize,
    ) -> usize {
        let key = s.off + end.wrapping_add(1);
        let last = self.points.len() - 1;
        let k = if self.points[last].0 <= key {
            last
        } else {
            self.points.partition_point(|(o, _)| *o <= key) - 1
        };
        let known = self.points[k].0;
        if known == key {
            return k;
        }
        let mut found = None;
        let (mut cur, mut cur_key, mut end, mut st) = (line, key, end, start);
        while cur_key > known {
            if st == usize::MAX {
                st = line_start(&s.buf, 0, end);
            }
            found = line_stamp(meta, cur, &s.buf[st..end], &self.words);
            if found.is_some() {
                break;
            }
            cur = cur.wrapping_sub(1);
            cur_key = s.off + st;
            end = st.wrapping_sub(1);
            st = usize::MAX;
        }
        let stamp = match found {
            Some(st) => Some(st),
            None => {
                if k < self.carried {
                    self.carried += 1;
                }
                self.points[k].1.clone()
            }
        };
        debug_assert!(stamp.is_none() || k + 1 >= self.carried);
        self.points.insert(k + 1, (key, stamp));
        k + 1
    }

    /// Add the points of the part that follows this stream's points (see `carried_from`),
    /// whose carried stamp is `carried`.
    pub(crate) fn append(&mut self, part: KnownStamps, carried: &Stamp) {
        let points = part.points.into_iter().enumerate().skip(1);
        self.points.extend(points.map(|(i, (key, st))| {
            (
                key,
                if i < part.carried {
                    carried.clone()
                } else {
                    st
                },
            )
        }));
        debug_assert!(self.points.windows(2).all(|w| w[0].0 < w[1].0));
    }

    /// Forget the points before stream offset `keep` (the point of the line before `keep` must
    /// be known: `eff` of it first).
    pub(crate) fn forget_before(&mut self, keep: usize) {
        let k = self.points.partition_point(|(o, _)| *o < keep);
        self.points.drain(..k);
        self.carried = self.carried.saturating_sub(k);
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.points.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stamps::stamp_vec;

    /// A part of the stream scanned on its own knows its stamps from its first stamped line on;
    /// appended with the stamp carried in, its points give the stream's effective stamps.
    #[test]
    fn a_part_carries_the_stamp_before_it() {
        let mut s = CutStream::new(1000);
        let data = b"INFO 11-27 10:00:01 a\nb\nc\nINFO 11-27 11:00:00 d\ne\n";
        s.take(data).unwrap();
        let meta = MetaLines::default();
        let bytes = |k: &KnownStamps, i: usize| stamp_vec(k.stamp(i));
        // the part: lines 3.. ("c" starts at 24)
        let mut part = KnownStamps::carried_from(24, crate::fixture::STAMPS.clone());
        let c = part.eff(&s, &meta, 3, 25, 24);
        assert!(part.is_carried(c) && part.carries());
        let e = part.eff(&s, &meta, 5, 49, usize::MAX);
        assert!(!part.is_carried(e));
        assert_eq!(bytes(&part, e), Some(b"11-27 11:00:00".to_vec()));
        let mut known = KnownStamps::new(crate::fixture::STAMPS.clone());
        let b = known.eff(&s, &meta, 2, 23, usize::MAX);
        let carried = known.stamp(b).clone();
        known.append(part, &carried);
        let mut whole = KnownStamps::new(crate::fixture::STAMPS.clone());
        for (line, end) in [(3, 25), (4, 47), (5, 49)] {
            let (k, w) = (
                known.eff(&s, &meta, line, end, usize::MAX),
                whole.eff(&s, &meta, line, end, usize::MAX),
            );
            assert_eq!(bytes(&known, k), bytes(&whole, w), "line {line}");
        }
        assert_eq!(bytes(&known, 2), Some(b"11-27 10:00:01".to_vec())); // "c"
    }
}
