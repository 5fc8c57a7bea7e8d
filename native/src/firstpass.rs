//! A failure window's first pass: the lines that change nothing but their process's counters
//! (harmony_doctor/logs/extract.py `_Extractor.feed` with no message open), read in Rust and
//! summed per process, so that Python handles only the lines that may begin, continue or end
//! something (harmony_doctor/logs/firstpass.py).
//!
//! A line is ordinary when `crate::anatomy` reads it (else Python would), with no gutter to
//! ask Python about, no frame path for its server, a prefix (or no text: a line without a
//! prefix may finish a message a terminal wrap broke), text that does not start indented (a
//! traceback's source line), that no traceback shape matches (logs/process.py
//! `_ANY_TRACEBACK_SHAPE`, on ASCII: `crate::patterns::for_ascii_subjects`), that holds no
//! catalogue form (`crate::hits`, the one catalogue's patterns), no `<|` (a leak) and does not
//! start with `model output:` (LM Studio). Such a line, fed to the extractor, only counts in its
//! process's `ProcessState.observe`: its time, pid, server, a request's start, a record line.
//! Those are what `Absorbed` sums, in the order the processes were last seen.

use crate::anatomy::{Anatomy, Evidence, Spec as AnatomySpec};
use crate::anchors::MARKUP;
use crate::hits::{Found, Hits};
use std::sync::Arc;

use crate::patterns;
use crate::pyre::Translated;

/// The patterns a first pass is made of.
pub struct Spec {
    pub anatomy: AnatomySpec,
    /// The catalogue's forms (case-insensitive), as `crate::hits` takes them.
    pub forms: Vec<String>,
    /// process.py `_ANY_TRACEBACK_SHAPE` (matched at the text's start).
    pub traceback: String,
    /// process.py `_REQUEST_START` (searched).
    pub request: String,
    /// extract.py `_MODEL_OUTPUT`: LM Studio's line of what the model wrote starts so (in any
    /// case).
    pub model_output: String,
    /// What a traceback frame names its source file by (`.py:`, with `frame_start`).
    pub frame_source: String,
}

/// The server a line is evidence of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Server {
    /// A server shape of the anatomy's (an index into its `server_groups`).
    Shape(usize),
    /// A prefix in vLLM's own format.
    MonthDay,
}

/// What an ordinary line tells its process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ordinary<'a> {
    pub key: String,
    pub timestamp: Option<&'a str>,
    pub pid: Option<u64>,
    pub server: Option<Server>,
    /// A request's record begins on it.
    pub request: bool,
    /// It has text (neither blank nor part of a traceback: a record line).
    pub record: bool,
}

/// What a line is to the first pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Class<'a> {
    /// Ordinary: what it tells its process.
    Ordinary(Ordinary<'a>),
    /// Read here, and no message (nor a leak, LM Studio's output, the rest of a wrapped line)
    /// begins on it: the extractor need not look for one (extract.py `_detect` finds none).
    Quiet,
    /// Python reads it whole.
    Python,
}

/// What `FirstPass::absorb` did with a line (its value is what Python is handed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fed {
    Python = 0,
    Absorbed = 1,
    Quiet = 2,
}

/// How many processes the lines summed until the next `take` may be of: any of `counted`
/// (processes that may be new to Python already counted against its room), and `left` more.
#[derive(Debug, Clone, Copy)]
pub struct Room<'r> {
    pub left: usize,
    pub counted: &'r [String],
}

/// The ordinary lines of one process since the last `take`: what `ProcessState.observe`
/// keeps of them, line numbers included.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Absorbed {
    pub key: String,
    pub lines: u64,
    pub timestamp: Option<(String, u64)>,
    pub pid: Option<u64>,
    pub server: Option<(Server, u64)>,
    pub request_line: Option<u64>,
    /// The last record line, and the one before it when both are here.
    pub record_line: Option<u64>,
    pub earlier_record_line: Option<u64>,
}

/// The patterns, compiled: tells an ordinary line from the others.
pub struct Reader {
    model_output: Vec<u8>,
    frame_start: Vec<u8>,
    /// searchers built once (memmem::find builds one per call, on every line classified)
    frame_source: memchr::memmem::Finder<'static>,
    markup: memchr::memmem::Finder<'static>,
    anatomy: Anatomy,
    hits: Hits,
    traceback: Translated,
    request: Translated,
}

/// One extractor's first pass: the reader (shared) and the lines summed since the last `take`.
pub struct FirstPass {
    reader: Arc<Reader>,
    /// In the order their processes were last seen.
    absorbed: Vec<Absorbed>,
}

impl Reader {
    /// An error names a pattern without an exact translation.
    pub fn new(spec: Spec) -> Result<Reader, String> {
        let frame_start = spec.anatomy.frame_start.as_bytes().to_vec();
        let anatomy = Anatomy::new(spec.anatomy)?;
        anatomy.ready()?;
        let hits = Hits::new(&spec.forms, &[])?;
        hits.ready()?;
        let traceback = Translated::new(&patterns::for_ascii_subjects(&spec.traceback)?, true)?;
        let request = Translated::new(&patterns::for_ascii_subjects(&spec.request)?, false)?;
        Ok(Reader {
            model_output: spec.model_output.into_bytes(),
            frame_start,
            frame_source: memchr::memmem::Finder::new(spec.frame_source.as_bytes()).into_owned(),
            markup: memchr::memmem::Finder::new(MARKUP).into_owned(),
            anatomy,
            hits,
            traceback,
            request,
        })
    }

    /// What `raw` tells its process, if it is an ordinary line (see the module's notes).
    pub fn ordinary<'a>(&self, raw: &'a str) -> Option<Ordinary<'a>> {
        match self.classify(raw, None) {
            Class::Ordinary(o) => Some(o),
            _ => None,
        }
    }

    /// Whether `raw` is an ordinary line (and what it tells its process), a quiet one, or one
    /// Python must read whole.
    /// `previous`: the line fed just before it, when known (a line without a prefix is QUIET,
    /// never ordinary, when neither it nor the previous line's text with it holds a form: no
    /// message a terminal wrap broke ends on it, extract.py `_wrapped`).
    pub fn classify<'a>(&self, raw: &'a str, previous: Option<&str>) -> Class<'a> {
        let Some(r) = self.anatomy.read(raw) else {
            return Class::Python;
        };
        let text = &r.line[r.text.0..r.text.1];
        let b = text.as_bytes();
        let head = &b[..b.len().min(self.model_output.len())];
        let unprefixed = r.prefix == 0 && !text.is_empty();
        if r.gutter_asked
            || (unprefixed && !self.no_wrap_ends(&r.line[r.prefix..], previous))
            || self.markup.find(b).is_some()
            || head.eq_ignore_ascii_case(&self.model_output)
            || (!text.is_empty() && self.hits.first(text, 0) != Found::Nothing)
        {
            return Class::Python;
        }
        let rest = &r.line[r.prefix..];
        if unprefixed
            || matches!(r.evidence, Evidence::Frame(_))
            || rest.starts_with([' ', '\t'])
            || self.traceback.regex.is_match(b)
            || (self.frame_source.find(b).is_some() && b.starts_with(&self.frame_start))
        {
            return Class::Quiet;
        }
        let server = match r.evidence {
            Evidence::Server(i) => Some(Server::Shape(i)),
            _ if r.month_day => Some(Server::MonthDay),
            _ => None,
        };
        Class::Ordinary(Ordinary {
            key: r.keys.join(" "),
            timestamp: r.timestamp,
            pid: r.pid,
            server,
            request: self.request.regex.is_match(b),
            record: !text.is_empty(),
        })
    }

    /// Whether no form ends on a line without a prefix whose rest is `rest`: none starts in
    /// the text of the `previous` line and goes on into it (a known previous line, both read
    /// here, plain text: an escape code may read otherwise in Python).
    fn no_wrap_ends(&self, rest: &str, previous: Option<&str>) -> bool {
        let Some(previous) = previous else {
            return false;
        };
        let Some(p) = self.anatomy.read(previous) else {
            return false;
        };
        let before = &p.line[p.text.0..p.text.1];
        if rest.contains('\x1b') || before.contains('\x1b') {
            return false;
        }
        before.is_empty() || self.hits.first(&format!("{before}{rest}"), 0) == Found::Nothing
    }
}

impl FirstPass {
    pub fn new(reader: Arc<Reader>) -> FirstPass {
        FirstPass {
            reader,
            absorbed: Vec::new(),
        }
    }

    /// Sum line `number`, `raw`, into its process's `Absorbed`, if it is ordinary and its
    /// process is one of at most `room` seen since the last `take` (`Fed::Absorbed`); else
    /// Python reads it, after taking what was summed (`Fed::Quiet`: no message begins on it).
    pub fn absorb(&mut self, number: u64, raw: &str, room: usize) -> Fed {
        let room = Room {
            left: room,
            counted: &[],
        };
        self.absorb_after(number, raw, None, room)
    }

    /// `absorb`, the line fed just before it being `previous` (when known).
    pub fn absorb_after(
        &mut self,
        number: u64,
        raw: &str,
        previous: Option<&str>,
        room: Room<'_>,
    ) -> Fed {
        let o = match self.reader.classify(raw, previous) {
            Class::Ordinary(o) => o,
            Class::Quiet => return Fed::Quiet,
            Class::Python => return Fed::Python,
        };
        let found = self.absorbed.iter().position(|a| a.key == o.key);
        let mut a = match found {
            Some(i) => self.absorbed.remove(i),
            None if room.counted.contains(&o.key) || self.new_to(room) < room.left => Absorbed {
                key: o.key,
                lines: 0,
                timestamp: None,
                pid: None,
                server: None,
                request_line: None,
                record_line: None,
                earlier_record_line: None,
            },
            None => return Fed::Quiet,
        };
        a.lines += 1;
        if let Some(ts) = o.timestamp {
            a.timestamp = Some((ts.to_string(), number));
        }
        if o.pid.is_some() {
            a.pid = o.pid;
        }
        if let Some(server) = o.server {
            a.server = Some((server, number));
        }
        if o.request {
            a.request_line = Some(number);
        }
        if o.record {
            a.earlier_record_line = a.record_line;
            a.record_line = Some(number);
        }
        self.absorbed.push(a);
        Fed::Absorbed
    }

    /// What `absorb_after` would say of a line without summing it: `Fed::Quiet` for an
    /// ordinary line too (no message begins on it either), `Fed::Python` for one Python must
    /// read whole.
    pub fn look(&self, raw: &str, previous: Option<&str>) -> Fed {
        match self.reader.classify(raw, previous) {
            Class::Python => Fed::Python,
            Class::Ordinary(_) | Class::Quiet => Fed::Quiet,
        }
    }

    /// How many of the processes summed since the last `take` are not among `room.counted`.
    fn new_to(&self, room: Room<'_>) -> usize {
        let counted = |a: &&Absorbed| room.counted.contains(&a.key);
        self.absorbed.iter().filter(|a| !counted(a)).count()
    }

    /// The processes summed since the last `take`, in the order last seen.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.absorbed.iter().map(|a| a.key.as_str())
    }

    /// What was summed since the last call, in the order the processes were last seen.
    pub fn take(&mut self) -> Vec<Absorbed> {
        std::mem::take(&mut self.absorbed)
    }

    /// Whether anything was summed since the last `take`.
    pub fn holds(&self) -> bool {
        !self.absorbed.is_empty()
    }

    /// How many processes the lines summed since the last `take` are of.
    pub fn held(&self) -> usize {
        self.absorbed.len()
    }
}

#[cfg(feature = "python")]
// PyO3 0.22's #[pymethods] expansion converts PyErr into PyErr (a false positive, fixed in 0.23)
#[allow(clippy::useless_conversion)]
#[path = "firstpass_python.rs"]
pub mod python;

#[cfg(test)]
#[path = "firstpass_tests.rs"]
mod tests;
