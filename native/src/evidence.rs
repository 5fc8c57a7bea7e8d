//! The server a log line is evidence of (harmony_doctor/logs/servers.py `_server_evidence`):
//! the path of the traceback frame it shows (Python names that path's server), else the
//! server shape its words match first.

use crate::lines::is_blank;
use crate::patterns;
use crate::pyre::{Deferred, Translated};

/// The server evidence of a line's words or frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Evidence {
    None,
    /// The path of the traceback frame the line shows (Python's `path_server` names it).
    Frame(String),
    /// The server shape (an index into `Spec::server_groups`) its words match first.
    Server(usize),
}

/// The patterns evidence is read by.
pub(crate) struct Servers {
    frame: Translated,
    frame_path: usize,
    /// `frame_start` with the `"` before a frame's path, found with a searcher built once
    /// (`memmem::find` builds one per call)
    frame_quoted: memchr::memmem::Finder<'static>,
    servers: Translated,
    /// per branch of `servers`, in order: the branch alone, compiled when a line's match
    /// first needs it (most logs name one or two servers), and its server shape (an index
    /// into `Spec::server_groups`)
    server_branches: Vec<(Deferred, usize)>,
}

impl Servers {
    /// From the anatomy's Spec: `frame` is (`FRAME`, its path group's name, `FRAME_START`),
    /// `servers` `_ANY_SERVER` and `groups` the names of its groups, one per server shape.
    pub(crate) fn new(
        frame: (&str, &str, &str),
        servers: &str,
        groups: &[String],
    ) -> Result<Servers, String> {
        let (frame, frame_path, frame_start) = frame;
        let frame_regex = Translated::new(frame, false)?;
        let frame_path = frame_regex.group(frame_path)?;
        let servers_regex = Translated::new(servers, false)?;
        // each branch of the alternation is one server shape's group (servers.py `_ANY_SERVER`)
        let server_branches = patterns::branches(servers)?
            .iter()
            .map(|branch| {
                let regex = Deferred::new(branch, false)?;
                let index = (groups.iter())
                    .position(|n| regex.has_group(n))
                    .ok_or_else(|| format!("{branch:?}: no server shape's group"))?;
                Ok((regex, index))
            })
            .collect::<Result<Vec<_>, String>>()?;
        Ok(Servers {
            frame: frame_regex,
            frame_path,
            frame_quoted: memchr::memmem::Finder::new(&[frame_start.as_bytes(), b"\""].concat())
                .into_owned(),
            servers: servers_regex,
            server_branches,
        })
    }

    /// `_server_evidence`: the path of a frame the line shows, else the server its words name;
    /// None (declined: Python reads the line) where a branch does not compile (never: the whole
    /// alternation did).
    pub(crate) fn evidence(&self, b: &[u8]) -> Option<Evidence> {
        if self.frame_quoted.find(b).is_some() {
            let spaced: Vec<u8> = b
                .iter()
                .map(|&c| if c == b'|' { b' ' } else { c })
                .collect();
            let start = spaced
                .iter()
                .position(|&c| !is_blank(c))
                .unwrap_or(spaced.len());
            let end = spaced
                .iter()
                .rposition(|&c| !is_blank(c))
                .map_or(start, |i| i + 1);
            let stripped = &spaced[start..end.max(start)];
            let mut locs = self.frame.regex.capture_locations();
            if self
                .frame
                .regex
                .captures_read(&mut locs, stripped)
                .is_some()
            {
                let (s, e) = locs.get(self.frame_path).unwrap_or((0, 0));
                // ASCII: any cut is a character boundary
                return Some(Evidence::Frame(
                    String::from_utf8_lossy(&stripped[s..e]).into_owned(),
                ));
            }
        }
        // the lazy DFA first: most lines name no server, and need no capture engine
        let Some(found) = self.servers.regex.find(b) else {
            return Some(Evidence::None);
        };
        // the leftmost match's shape: the first branch that matches where it starts (a
        // branch's leftmost match from there starts there if it can)
        let at = found.start();
        for (regex, index) in &self.server_branches {
            if (regex.get()?.regex.find_at(b, at)).is_some_and(|m| m.start() == at) {
                return Some(Evidence::Server(*index));
            }
        }
        Some(Evidence::None)
    }
}
