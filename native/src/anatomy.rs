//! A log line taken apart as harmony_doctor/logs/lines.py `anatomize` takes it (its process
//! tags, record prefixes, time, pid, and the text after them), on the lines Rust reads exactly
//! as Python does; every other line is declined (None) and Python reads it.
//!
//! The shapes are Python's own patterns, handed over when the reader is made and translated
//! (crate::pyre); a pattern without an exact translation fails the reader's making. A line is
//! read here only when it is ASCII without control characters but tabs, and `_clean` would
//! leave it as it is: no backtick, no `>` in its first three characters, no run of eight
//! spaces after its first non-blank, no `&` entity (supersets of what `_clean` changes). Where
//! the text after the prefixes holds `|` or `+` (an exception group's gutter may), lines.py's
//! gutter shapes take the gutter off (crate::gutter; `Read::gutter_asked`).

use std::sync::{Arc, OnceLock};

pub use crate::evidence::Evidence;
use crate::evidence::Servers;
use crate::lines::is_blank;
use crate::patterns;
use crate::prefixes::Prefixes;
pub use crate::prefixes::{ShapeGroups, ShapeNames};
use crate::pyre::{self, Deferred, Translated};
use crate::stamps::dated;

/// The Python patterns a reader is made of (harmony_doctor/logs/lines.py, servers.py).
pub struct Spec {
    /// `_ANY_PREFIX_READ`: every prefix shape, each a group of its own, tried in order.
    pub prefixes: String,
    pub shapes: Vec<ShapeNames>,
    /// `_NEVER_PREFIX`: the characters no prefix starts with.
    pub never: String,
    /// `_MONTH_DAY_RECORD`: a prefix in vLLM's own format.
    pub month_day: String,
    /// `_KEY_PID`: the pid in a process tag (its first group that matched).
    pub key_pid: String,
    /// `_HTML_ENTITY`: an entity `_clean` unescapes.
    pub entity: String,
    /// `FRAME`, and the name of its path group.
    pub frame: String,
    pub frame_path: String,
    /// `FRAME_START`: what a traceback frame line starts with (`File `; then `"` and a path).
    pub frame_start: String,
    /// servers.py `_ANY_SERVER`, and the names of its groups, one per server shape.
    pub servers: String,
    pub server_groups: Vec<String>,
    /// `_GUTTER_SEPARATOR`, `_GUTTER_GROUP_HEAD`, `_GUTTER` (crate::gutter).
    pub gutter: Vec<String>,
}

impl Spec {
    /// The spec of the keyword arguments the Python classes built on it take (`Anatomy`,
    /// `FirstPass`): the server groups' names without the objects they stand for.
    #[allow(clippy::too_many_arguments)]
    pub fn from_python<T>(
        prefixes: String,
        shapes: Vec<ShapeGroups>,
        never: String,
        month_day: String,
        key_pid: String,
        entity: String,
        frame: String,
        frame_path: String,
        frame_start: String,
        servers: String,
        server_groups: &[(String, T)],
        gutter: Vec<String>,
    ) -> Self {
        Spec {
            prefixes,
            shapes: shapes
                .into_iter()
                .map(|(shape, key, ts, pid)| ShapeNames {
                    shape,
                    key,
                    ts,
                    pid,
                })
                .collect(),
            never,
            month_day,
            key_pid,
            entity,
            frame,
            frame_path,
            frame_start,
            servers,
            server_groups: server_groups.iter().map(|(g, _)| g.clone()).collect(),
            gutter,
        }
    }
}

/// One line taken apart; offsets are into `line`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Read<'a> {
    /// The raw line without its trailing `\r` and `\n`.
    pub line: &'a str,
    pub keys: Vec<&'a str>,
    /// `line[..prefix]` is the prefix, `line[prefix..]` the rest.
    pub prefix: usize,
    /// `line[text.0..text.1]` is the text.
    pub text: (usize, usize),
    /// The rest holds `|` or `+`: an exception group's gutter may have been taken off.
    pub gutter_asked: bool,
    /// A gutter was taken off the text.
    pub gutter: bool,
    pub timestamp: Option<&'a str>,
    pub pid: Option<u64>,
    pub evidence: Evidence,
    /// Whether a prefix read was in vLLM's own format (evidence when the line has none).
    pub month_day: bool,
}

/// The reader: its patterns are translated when it is made (an error for one without an
/// exact translation) and compiled when it first reads a line (a scan without failures reads
/// none).
pub struct Anatomy {
    spec: Spec,
    never: [bool; 128],
    compiled: OnceLock<Option<Arc<Compiled>>>,
}

struct Compiled {
    /// the prefix shapes' branches searched together (refuses a text in one pass of its lazy
    /// DFA, and says which shape matched), each alone, and the reads remembered
    reads: Prefixes,
    month_day: Translated,
    /// compiled at their first use, as the gutter's: most logs' lines need neither (a pid read
    /// by a prefix shape, no `&`)
    key_pid: Deferred,
    entity: Deferred,
    /// `frame_start`: what a frame line starts with
    frame_start: Vec<u8>,
    servers: Servers,
    gutter: crate::gutter::Gutter,
}

const PADDING: &[u8] = b"        ";
/// PADDING's searcher, built once: `memmem::find` builds one per call, on every line read.
static PADDING_FINDER: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(PADDING));

impl Compiled {
    fn new(spec: &Spec) -> Result<Compiled, String> {
        Ok(Compiled {
            reads: Prefixes::new(&spec.prefixes, &spec.shapes)?,
            month_day: Translated::new(&spec.month_day, true)?,
            key_pid: Deferred::new(&spec.key_pid, false)?,
            entity: Deferred::new(&spec.entity, false)?,
            frame_start: spec.frame_start.as_bytes().to_vec(),
            servers: Servers::new(
                (&spec.frame, &spec.frame_path, &spec.frame_start),
                &spec.servers,
                &spec.server_groups,
            )?,
            gutter: crate::gutter::Gutter::new(&spec.gutter)?,
        })
    }
}

impl Anatomy {
    /// An error names a pattern without an exact translation.
    pub fn new(spec: Spec) -> Result<Anatomy, String> {
        let patterns = [&spec.prefixes, &spec.month_day, &spec.key_pid, &spec.entity];
        let others = [&spec.frame, &spec.servers].into_iter().chain(&spec.gutter);
        for pattern in patterns.into_iter().chain(others) {
            pyre::translate(pattern)?;
        }
        let mut never = [false; 128];
        for c in spec.never.bytes() {
            if !c.is_ascii() {
                return Err(format!("{:?}: not ASCII", spec.never));
            }
            never[usize::from(c)] = true;
        }
        Ok(Anatomy {
            spec,
            never,
            compiled: OnceLock::new(),
        })
    }

    /// The compiled patterns (compiled at the first call); an error names what failed, and
    /// then every line is declined.
    pub fn ready(&self) -> Result<(), String> {
        match self.compiled() {
            Some(_) => Ok(()),
            None => Compiled::new(&self.spec).map(|_| ()),
        }
    }

    fn compiled(&self) -> Option<&Compiled> {
        let compiled = self.compiled.get_or_init(|| {
            let s = &self.spec;
            let mut key = vec![&s.prefixes, &s.never, &s.month_day, &s.key_pid, &s.entity];
            key.extend([&s.frame, &s.frame_path, &s.frame_start, &s.servers]);
            key.extend(&s.server_groups);
            key.extend(&s.gutter);
            for shape in &s.shapes {
                key.push(&shape.shape);
                key.extend([&shape.key, &shape.ts, &shape.pid].into_iter().flatten());
            }
            let key = key
                .iter()
                .map(|k| format!("{}:{k}", k.len()))
                .collect::<String>();
            patterns::shared(&key, || Compiled::new(s).ok())
        });
        compiled.as_deref()
    }

    /// `raw` taken apart, or None where Python must read it.
    pub fn read<'a>(&self, raw: &'a str) -> Option<Read<'a>> {
        let c = self.compiled()?;
        let line = raw.trim_end_matches(['\r', '\n']);
        let b = line.as_bytes();
        if !plain(b) || (b.contains(&b'&') && c.entity.get()?.regex.is_match(b)) {
            return None;
        }
        let evidence = c.servers.evidence(b)?;
        let mut pos = 0;
        if b.first().copied().is_some_and(is_blank) {
            // an indented paste: the prefix may follow the indentation
            let indent = b.iter().position(|&c| !is_blank(c)).unwrap_or(b.len());
            let frame = b[indent..].starts_with(&c.frame_start);
            if c.reads.is_match(&b[indent..]) && !frame {
                pos = indent;
            }
        }
        let mut keys = Vec::new();
        let (mut timestamp, mut pid, mut month_day) = (None, None, false);
        for _ in 0..4 {
            let rest = &b[pos..];
            if rest.first().is_none_or(|&c| self.never[usize::from(c)]) {
                break;
            }
            // the alternation's lazy DFA refuses most texts, and finds the match's span
            let Some((matched, shape)) = c.reads.find(rest) else {
                break;
            };
            let got = c.reads.read(rest, matched, shape)?;
            month_day = month_day || c.month_day.regex.is_match(rest);
            let found = |span: Option<(usize, usize)>| {
                span.filter(|(s, e)| e > s)
                    .map(|(s, e)| &line[pos + s..pos + e])
            };
            if let Some(key) = found(got.key) {
                keys.push(key);
            }
            if let Some(ts) = found(got.ts) {
                // the first time read, unless it has no year and this one is a full date
                // (lines.py `_replaces`)
                if timestamp
                    .is_none_or(|kept: &str| !dated(kept.as_bytes()) && dated(ts.as_bytes()))
                {
                    timestamp = Some(ts);
                }
            }
            if pid.is_none() {
                if let Some(digits) = found(got.pid) {
                    pid = Some(digits.parse::<u64>().ok()?);
                }
            }
            pos += got.end;
        }
        let whole_rest = &b[pos..];
        let gutter_asked = whole_rest.contains(&b'|') || whole_rest.contains(&b'+');
        let (taken, gutter) = if gutter_asked {
            c.gutter.strip(whole_rest)?
        } else {
            (0, false)
        };
        let pos_text = pos + taken;
        let rest = &b[pos_text..];
        let start = pos_text
            + rest
                .iter()
                .position(|&c| !is_blank(c))
                .unwrap_or(rest.len());
        let end = start.max(
            pos_text
                + rest
                    .iter()
                    .rposition(|&c| !is_blank(c))
                    .map_or(0, |i| i + 1),
        );
        if pid.is_none() && !keys.is_empty() {
            pid = c.key_pid(keys[0])?;
        }
        Some(Read {
            line,
            keys,
            prefix: pos,
            text: (start, end),
            gutter_asked,
            gutter,
            timestamp,
            pid,
            evidence,
            month_day,
        })
    }
}

impl Compiled {
    /// The pid a process tag names: `_KEY_PID`'s first group that matched; Some(None) when
    /// it names none, None (decline) for a pid past u64.
    fn key_pid(&self, key: &str) -> Option<Option<u64>> {
        let key_pid = self.key_pid.get()?;
        let mut locs = key_pid.regex.capture_locations();
        if key_pid
            .regex
            .captures_read(&mut locs, key.as_bytes())
            .is_none()
        {
            return Some(None);
        }
        let digits = (1..locs.len())
            .filter_map(|g| locs.get(g))
            .find(|(s, e)| e > s)
            .map(|(s, e)| &key[s..e])?;
        digits.parse::<u64>().ok().map(Some)
    }
}

/// Whether `_clean` leaves `line` as it is and Rust's regexes read it as Python's: ASCII, no
/// control character but tabs, no backtick, no `>` quote mark in its first three characters,
/// no run of eight spaces after its first non-blank (the `&` entities are asked apart).
fn plain(b: &[u8]) -> bool {
    if b.iter()
        .any(|&c| c >= 0x7F || (c < 0x20 && c != b'\t') || c == b'`')
    {
        return false;
    }
    if b[..b.len().min(3)].contains(&b'>') {
        return false;
    }
    let first = b.iter().position(|&c| !is_blank(c)).unwrap_or(b.len());
    PADDING_FINDER.find(&b[first..]).is_none()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{anatomy_spec as spec, shape_names};

    /// A reader of the tests' shapes (crate::testing::anatomy_spec).
    fn anatomy() -> Anatomy {
        let a = Anatomy::new(spec()).unwrap();
        a.ready().unwrap();
        a
    }

    #[test]
    fn a_pattern_without_an_exact_translation_makes_no_reader() {
        let mut s = spec();
        s.month_day = r"(?<!x)y".to_string();
        assert!(Anatomy::new(s).is_err());
    }

    #[test]
    fn a_reader_that_does_not_compile_declines_every_line() {
        let mut s = spec();
        s.frame_path = "nowhere".to_string();
        let a = Anatomy::new(s).unwrap();
        assert!(a.ready().is_err());
        assert_eq!(a.read("x"), None);
    }

    #[test]
    fn reads_prefixes_in_turn() {
        let a = anatomy();
        let line = "(APIServer pid=12) ERROR 12-01 00:00:01 [serving_chat.py:1035]  Error x \r\n";
        let r = a.read(line).unwrap();
        assert_eq!(r.line, line.trim_end_matches(['\r', '\n']));
        assert_eq!(r.keys, vec!["APIServer pid=12"]);
        assert_eq!(&r.line[r.prefix..], " Error x ");
        assert_eq!(&r.line[r.text.0..r.text.1], "Error x");
        assert_eq!(r.timestamp, Some("12-01 00:00:01"));
        assert_eq!(r.pid, Some(12));
        assert!(r.month_day);
        assert_eq!(r.evidence, Evidence::None);
    }

    #[test]
    fn a_full_date_beats_an_earlier_time_without_a_year() {
        let a = anatomy();
        let time = |line: &'static str| a.read(line).unwrap().timestamp;
        let line = "ERROR 12-01 00:00:01 [a.py:1] time=2024-12-01T00:00:02Z msg=x";
        assert_eq!(time(line), Some("2024-12-01T00:00:02Z"));
        let line = "ERROR 12-01 00:00:01 [a.py:1] time=12-01T00:00:02Z msg=x";
        assert_eq!(time(line), Some("12-01 00:00:01"));
        let line = "ERROR 12-01 00:00:01 [a.py:1] time=2024-13-01T00:00:02Z msg=x";
        assert_eq!(time(line), Some("12-01 00:00:01"));
    }

    #[test]
    fn a_prefix_read_is_remembered_only_with_what_decides_it() {
        let mut s = spec();
        // `ab` then a word boundary is shape 0's; `ab` then a letter shape 1's; `a` alone 2's
        s.prefixes = concat!(
            r"(?P<shape_0>^(?P<key_0>ab)\b\s?)",
            r"|(?P<shape_1>^(?P<ts_1>a)b)",
            r"|(?P<shape_2>^(?P<ts_2>a))",
        )
        .to_string();
        s.shapes = vec![
            shape_names(0, true, false, false),
            shape_names(1, false, true, false),
            shape_names(2, false, true, false),
        ];
        s.never = String::new();
        s.month_day = "z".to_string();
        let a = Anatomy::new(s).unwrap();
        for _ in 0..2 {
            let r = a.read("ab x").unwrap();
            assert_eq!(
                (r.keys.clone(), r.timestamp, r.prefix),
                (vec!["ab"], None, 3)
            );
            let r = a.read("abx").unwrap();
            assert_eq!(
                (r.keys.clone(), r.timestamp, r.prefix),
                (vec![], Some("a"), 2)
            );
            let r = a.read("ab").unwrap();
            assert_eq!(
                (r.keys.clone(), r.timestamp, r.prefix),
                (vec!["ab"], None, 2)
            );
            let r = a.read("ac").unwrap();
            assert_eq!(
                (r.keys.clone(), r.timestamp, r.prefix),
                (vec![], Some("a"), 1)
            );
        }
    }

    #[test]
    fn the_patterns_few_lines_need_compile_at_their_first_use() {
        let mut s = spec();
        s.entity = r"&(?:quot|amp|lt);".to_string(); // this test's own: not shared
        let a = Anatomy::new(s).unwrap();
        let c = a.compiled().unwrap();
        let r = a
            .read("(APIServer pid=12) INFO 12-01 00:00:01 [a.py:1] up")
            .unwrap();
        assert_eq!(r.pid, Some(12)); // read by the prefix shape: `_KEY_PID` not asked
        assert!(c.entity.get_if_compiled().is_none() && c.key_pid.get_if_compiled().is_none());
        assert!(a.read("say &lt;hi").is_none());
        assert!(c.entity.get_if_compiled().is_some());
    }

    #[test]
    fn a_lookahead_is_not_consumed() {
        let r = anatomy().read("time=now msg=SGLang failed").unwrap();
        assert_eq!(&r.line[r.prefix..], "msg=SGLang failed");
        assert_eq!(r.evidence, Evidence::Server(1));
        assert!(!r.month_day);
    }

    #[test]
    fn frames_and_indentation() {
        let a = anatomy();
        let r = a.read(r#"  File "/x/vllm/a.py", line 3"#).unwrap();
        assert_eq!(r.evidence, Evidence::Frame("/x/vllm/a.py".to_string()));
        assert_eq!(r.prefix, 0);
        let r = a.read("  INFO 12-01 00:00:01 [a.py:1] vllm up").unwrap();
        assert_eq!(&r.line[r.prefix..], "vllm up");
        assert_eq!(r.evidence, Evidence::Server(0));
    }

    #[test]
    fn declines_what_python_may_read_otherwise() {
        let a = anatomy();
        for line in [
            "caf\u{e9}",
            "a\x1b[0mb",
            "a\x1cb",
            "a\rb",
            "`code`",
            "> quoted",
            "x        y",
            "say &quot;hi&quot;",
            "(APIServer pid=99999999999999999999999) x",
        ] {
            assert_eq!(a.read(line), None, "{line:?}");
        }
        for line in ["        indented", "a & b", "x\ty", "", "\r\n"] {
            assert!(a.read(line).is_some(), "{line:?}");
        }
        for (line, asked) in [
            ("  | gutter", true),
            ("a + b", true),
            ("(x pid=1) a|", true),
        ] {
            assert_eq!(
                a.read(line).map(|r| r.gutter_asked),
                Some(asked),
                "{line:?}"
            );
        }
        assert_eq!(a.read("(x|y pid=1) x").map(|r| r.gutter_asked), Some(false));
    }
}
