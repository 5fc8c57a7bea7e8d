//! The words of the wrappers' shapes (Docker's json-file, CRI, journald, a shipper's JSON) as
//! harmony_doctor/inputs/log_words.py writes them, handed over when a reader is made
//! (`unwrap`'s `Wrappers`): the reader holds none of its own.

use crate::chunk::Months;
use crate::stamps::StampWords;

/// The words of the wrappers' shapes, as harmony_doctor/inputs/log_words.py writes them.
#[derive(Debug, Clone)]
pub struct Words {
    pub months: Months,
    /// how a line names its own pid (a wrapper's pid is kept only for lines that do not)
    pub stamps: StampWords,
    /// ` stdout `, ` stderr `: a CRI stream's name between its spaces
    pub(crate) cri_streams: Vec<Vec<u8>>,
    /// the tag of a whole CRI line (`F`)
    pub(crate) cri_whole: Vec<u8>,
    /// Docker's keys (log, stream, time) and the one that may stand for time (attrs)
    pub(crate) docker: [String; 3],
    pub(crate) docker_attrs: String,
    /// `{"log":"`, `,"stream":"`, `,"time":"`: Docker's own writing of a record
    pub(crate) docker_shape: [Vec<u8>; 3],
    /// journald's message key and the keys of which one marks its records
    pub(crate) journal_message: String,
    pub(crate) journal_marks: Vec<String>,
    pub(crate) journal_pid: String,
    /// the keys a shipper's record keeps its line under, its meta keys, its pid keys
    pub(crate) json_fields: Vec<String>,
    pub(crate) meta_keys: Vec<String>,
    pub(crate) pid_keys: Vec<String>,
}

/// What `Words::new` is made of (the keyword arguments of the Python `Wrappers`).
pub struct WordList<'a> {
    pub months: &'a [String],
    pub cri_streams: &'a [String],
    pub cri_whole: &'a str,
    pub docker: &'a [String],
    pub docker_attrs: &'a str,
    pub journal_message: &'a str,
    pub journal_marks: &'a [String],
    pub journal_pid: &'a str,
    pub json_fields: &'a [String],
    pub meta_keys: &'a [String],
    pub pid_keys: &'a [String],
    pub levels: &'a [String],
    pub pid_key: &'a str,
}

impl Words {
    /// Err when a word cannot be read as this reader reads it (a month not three letters,
    /// Docker's keys not three, a key that JSON would escape).
    pub fn new(w: &WordList) -> Result<Words, String> {
        let [log, stream, time] = w.docker else {
            return Err("Docker's keys are three: log, stream, time".into());
        };
        let plain = |k: &String| {
            if k.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20) {
                Err(format!("a wrapper key JSON would escape: {k:?}"))
            } else {
                Ok(())
            }
        };
        for key in [log, stream, time] {
            plain(key)?;
        }
        let owned = |v: &[String]| v.to_vec();
        Ok(Words {
            months: Months::new(w.months)?,
            stamps: StampWords::new(w.levels, w.pid_key)?,
            cri_streams: w
                .cri_streams
                .iter()
                .map(|n| format!(" {n} ").into_bytes())
                .collect(),
            cri_whole: w.cri_whole.as_bytes().to_vec(),
            docker_shape: [
                format!("{{\"{log}\":\"").into_bytes(),
                format!(",\"{stream}\":\"").into_bytes(),
                format!(",\"{time}\":\"").into_bytes(),
            ],
            docker: [log.clone(), stream.clone(), time.clone()],
            docker_attrs: w.docker_attrs.to_string(),
            journal_message: w.journal_message.to_string(),
            journal_marks: owned(w.journal_marks),
            journal_pid: w.journal_pid.to_string(),
            json_fields: owned(w.json_fields),
            meta_keys: owned(w.meta_keys),
            pid_keys: owned(w.pid_keys),
        })
    }
}
