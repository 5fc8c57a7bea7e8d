//! The whole-chunk question the Python side asks of every chunk it reads: how many lines end
//! in it, and whether any line in it starts like a wrapped one (Docker/CRI JSON, journald,
//! logcli). Answered in one memchr pass: the chunk's newlines are searched once.

use memchr::memchr_iter;

/// The month names a syslog stamp starts with, three bytes each (`MONTHS` in
/// harmony_doctor/inputs/log_words.py, handed over when the reader is made).
#[derive(Debug, Clone)]
pub struct Months {
    names: Vec<[u8; 3]>,
    initials: [bool; 256],
}

impl Months {
    /// Months of three ASCII letters each; Err names the first that is not.
    pub fn new<N: AsRef<[u8]>>(names: &[N]) -> Result<Months, String> {
        let mut made = Months {
            names: Vec::with_capacity(names.len()),
            initials: [false; 256],
        };
        for name in names {
            let name = name.as_ref();
            let three: [u8; 3] = name
                .try_into()
                .ok()
                .filter(|n: &[u8; 3]| n.iter().all(u8::is_ascii_alphabetic))
                .ok_or_else(|| format!("a month is three ASCII letters: {name:?}"))?;
            made.initials[usize::from(three[0])] = true;
            made.names.push(three);
        }
        Ok(made)
    }

    /// Whether `s` starts with a month's name.
    pub fn starts(&self, s: &[u8]) -> bool {
        s.len() >= 3
            && self.initials[usize::from(s[0])]
            && self.names.iter().any(|m| s[..3] == m[..])
    }
}

/// Whether the line starting at `s` begins like a wrapped one: `{`, an ISO date with `T`,
/// a syslog `Mon DD HH:` stamp, or `-- ` (the reference: `_CANDIDATE_START` in
/// harmony_doctor/native.py).
fn candidate(s: &[u8], months: &Months) -> bool {
    let digit = |i: usize| s.get(i).is_some_and(u8::is_ascii_digit);
    let byte = |i: usize, b: u8| s.get(i) == Some(&b);
    match s.first() {
        Some(b'{') => true,
        Some(b'-') => byte(1, b'-') && byte(2, b' '),
        Some(b'0'..=b'9') => {
            (0..4).all(digit)
                && byte(4, b'-')
                && digit(5)
                && digit(6)
                && byte(7, b'-')
                && digit(8)
                && digit(9)
                && byte(10, b'T')
        }
        // a syslog month's first letter: most lines start otherwise, and are ruled out here
        Some(&first) if months.initials[usize::from(first)] => {
            s.len() >= 10
                && months.starts(s)
                && s[3] == b' '
                && (s[4] == b' ' || s[4].is_ascii_digit())
                && s[5].is_ascii_digit()
                && s[6] == b' '
                && s[7].is_ascii_digit()
                && s[8].is_ascii_digit()
                && s[9] == b':'
        }
        _ => false,
    }
}

/// The number of `\n` in `data`, and whether a line that starts after one of them and ends at
/// a later one starts like a wrapped one (the reference: `chunk_lines_reference` in
/// harmony_doctor/native.py). The first line (begun in the chunk before, maybe) and the one
/// after the last `\n` (maybe cut by the chunk's end) are not looked at. Once a line is found
/// the rest of the chunk is only counted.
pub fn chunk_lines(data: &[u8], months: &Months) -> (usize, bool) {
    let mut count = 0;
    let mut start = None;
    // SSE2's memchr directly: a line is short, and the generic iterator's per-call dispatch
    // cost as much as the search (x86_64)
    #[cfg(target_arch = "x86_64")]
    let nl = memchr::arch::x86_64::sse2::memchr::One::new(b'\n').expect("SSE2 is in x86_64");
    #[cfg(target_arch = "x86_64")]
    let newlines = nl.iter(data);
    #[cfg(not(target_arch = "x86_64"))]
    let newlines = memchr_iter(b'\n', data);
    for at in newlines {
        count += 1;
        if start.is_some_and(|s| candidate(&data[s..], months)) {
            return (count + memchr_iter(b'\n', &data[at + 1..]).count(), true);
        }
        start = Some(at + 1);
    }
    (count, false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture::MONTHS;

    fn chunk_lines(data: &[u8]) -> (usize, bool) {
        super::chunk_lines(data, &Months::new(MONTHS).unwrap())
    }

    #[test]
    fn months_are_three_letters() {
        assert!(Months::new(&[b"Janu"]).is_err());
        assert!(Months::new(&[b"J1n"]).is_err());
        assert!(Months::new(&[b"Jan"]).unwrap().starts(b"Jan 1"));
        assert!(!Months::new(&[b"Jan"]).unwrap().starts(b"Feb 1"));
    }

    #[test]
    fn counts_newlines() {
        assert_eq!(chunk_lines(b""), (0, false));
        assert_eq!(chunk_lines(b"a\nb\n\nc"), (3, false));
        assert_eq!(chunk_lines(b"a\n{\n{\n{\nc\n"), (5, true));
    }

    #[test]
    fn finds_each_wrapper_start_at_a_whole_line_start_only() {
        for wrapped in [
            &b"x\n{\"log\":\"x\"}\n"[..],
            b"plain\n2026-11-28T10:41:19.5Z stdout F x\n",
            b"plain\nNov 12 10:41:19 host vllm[1]: x\n",
            b"plain\nNov  2 10:41:19 host vllm[1]: x\n",
            b"\n-- Boot 1 --\n",
        ] {
            assert!(
                chunk_lines(wrapped).1,
                "{:?}",
                String::from_utf8_lossy(wrapped)
            );
        }
        for plain in [
            &b"INFO 11-01 00:00:00 x {\n"[..],
            b"x\n2026-11-28 10:41:19 not iso T\n",
            b"x\nNov 12 1041 no colon\n",
            b"x\n-x\n",
            b"x\nNov 12 10:41:19 host vllm[1]: not ended",
            b"{\"log\":\"the first line\"}\nx\n",
            b"",
        ] {
            assert!(
                !chunk_lines(plain).1,
                "{:?}",
                String::from_utf8_lossy(plain)
            );
        }
    }
}
