//! Request tallies: access and received lines counted per (kind, pid, hour), with Fx hashing.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use crate::stamps::hour_key;

/// (kind: "access" or "received", pid, hour key of the effective stamp)
pub type TallyKey = (&'static str, Option<i64>, Option<Vec<u8>>);

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

/// The kinds of request line tallied, by their index in a count key.
const KINDS: [&str; 2] = ["access", "received"];

/// No stamp, as an hour id.
const NO_HOUR: u32 = u32::MAX;

/// The stamp carried into a part of a chunk scanned on its own, not known yet, as an hour id
/// (see `add_carried`).
const CARRIED: u32 = u32::MAX - 1;

/// The counts, keyed by (kind index, pid, hour id); hour ids index `hours`, the hour keys
/// in order of first sight.
pub(crate) struct Tallies {
    counts: HashMap<(u8, Option<i64>, u32), u64, BuildHasherDefault<Fx>>,
    hour_ids: HashMap<Vec<u8>, u32>,
    hours: Vec<Vec<u8>>,
    /// the last hour key looked up and its id (consecutive lines mostly share an hour)
    last_hour: (Vec<u8>, u32),
}

impl Tallies {
    pub(crate) fn new() -> Tallies {
        Tallies {
            counts: HashMap::default(),
            hour_ids: HashMap::new(),
            hours: Vec::new(),
            last_hour: (Vec::new(), NO_HOUR),
        }
    }

    /// Count one access line (`received`: a received-request line) of `pid`, whose effective
    /// stamp is `stamp`.
    pub(crate) fn add(&mut self, received: bool, pid: Option<i64>, stamp: Option<&[u8]>) {
        let hour = self.hour_id(stamp.map(hour_key));
        self.add_n(received, pid, hour, 1);
    }

    /// Count one request line (as `add`) whose effective stamp is the one carried into the
    /// part of a chunk these tallies count, not known yet (see `merge`).
    pub(crate) fn add_carried(&mut self, received: bool, pid: Option<i64>) {
        self.add_n(received, pid, CARRIED, 1);
    }

    fn add_n(&mut self, received: bool, pid: Option<i64>, hour: u32, n: u64) {
        *self
            .counts
            .entry((u8::from(received), pid, hour))
            .or_insert(0) += n;
    }

    /// Add the counts of `part` (a part of a chunk counted on its own), whose carried stamp is
    /// `carried`.
    pub(crate) fn merge(&mut self, part: Tallies, carried: Option<&[u8]>) {
        for ((kind, pid, hour), n) in part.counts {
            let key = match hour {
                NO_HOUR => None,
                CARRIED => carried.map(hour_key),
                _ => Some(&part.hours[hour as usize][..]),
            };
            let hour = self.hour_id(key);
            self.add_n(kind == 1, pid, hour, n);
        }
    }

    /// The id of an hour key (NO_HOUR for none).
    fn hour_id(&mut self, key: Option<&[u8]>) -> u32 {
        let Some(key) = key else {
            return NO_HOUR;
        };
        if self.last_hour.1 != NO_HOUR && self.last_hour.0 == key {
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

    /// The counts by their full keys.
    pub(crate) fn to_map(&self) -> HashMap<TallyKey, u64> {
        debug_assert!(self.counts.keys().all(|k| k.2 != CARRIED));
        self.counts
            .iter()
            .map(|(&(kind, pid, hour), &n)| {
                let hour = (hour != NO_HOUR).then(|| self.hours[hour as usize].clone());
                ((KINDS[kind as usize], pid, hour), n)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_by_kind_pid_and_hour() {
        let mut t = Tallies::new();
        t.add(false, Some(1), Some(b"11-27 10:00:01"));
        t.add(false, Some(1), Some(b"11-27 10:59:59"));
        t.add(true, Some(1), Some(b"11-27 10:00:01"));
        t.add(false, None, Some(b"2026-11-27 11:00:00"));
        t.add(false, Some(1), Some(b"11-27 10:00:02"));
        t.add(true, None, None);
        let want: HashMap<TallyKey, u64> = [
            (("access", Some(1), Some(b"11-27 10".to_vec())), 3),
            (("received", Some(1), Some(b"11-27 10".to_vec())), 1),
            (("access", None, Some(b"2026-11-27 11".to_vec())), 1),
            (("received", None, None), 1),
        ]
        .into_iter()
        .collect();
        assert_eq!(t.to_map(), want);
    }

    #[test]
    fn a_part_counted_apart_merges_with_its_carried_stamp() {
        let mut whole = Tallies::new();
        let mut first = Tallies::new();
        let mut part = Tallies::new();
        for t in [&mut whole, &mut first] {
            t.add(false, Some(1), Some(b"11-27 10:00:01"));
        }
        // the part's first lines carry the stamp of the first part's last line
        for received in [false, true] {
            whole.add(received, Some(2), Some(b"11-27 10:00:01"));
            part.add_carried(received, Some(2));
        }
        for t in [&mut whole, &mut part] {
            t.add(false, Some(2), Some(b"2026-11-27 11:00:00"));
            t.add(false, Some(1), Some(b"11-27 10:59:00"));
            t.add(true, None, None);
        }
        first.merge(part, Some(b"11-27 10:00:01"));
        assert_eq!(first.to_map(), whole.to_map());
        let mut part = Tallies::new();
        part.add_carried(true, None);
        let mut none = Tallies::new();
        none.merge(part, None);
        assert_eq!(
            none.to_map(),
            [(("received", None, None), 1)].into_iter().collect()
        );
    }
}
