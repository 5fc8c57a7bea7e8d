//! The first pass's Python class (`harmony_doctor._native.FirstPass`): `absorb_runs` reads a
//! failure window in one call and hands back the runs Python applies (logs/extract.py
//! `feed_window`). Included by firstpass.rs as its `python` module.
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString, PyTuple};

use std::sync::Arc;

use super::Server;
use crate::anatomy::{ShapeGroups, Spec as AnatomySpec};
use crate::python::Anatomy;

/// A failure window's first pass (harmony_doctor/logs/firstpass.py): `absorb` sums the
/// ordinary lines, `take` hands the sums to Python.
#[pyclass(module = "harmony_doctor._native")]
pub struct FirstPass {
    inner: super::FirstPass,
    server_names: Vec<PyObject>,
    month_day_server: PyObject,
    /// the reader of the lines Python reads (its `Line`s), where the caller gave one
    anatomy: Option<Py<Anatomy>>,
}

#[pymethods]
impl FirstPass {
    /// ValueError when a pattern has no exact translation (then Python reads every line).
    #[new]
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (*, prefixes, shapes, never, month_day, month_day_server, key_pid, entity, frame, frame_path, frame_start, servers, server_groups, gutter, forms, traceback, request, model_output, frame_source, anatomy=None))]
    fn new(
        prefixes: String,
        shapes: Vec<ShapeGroups>,
        never: String,
        month_day: String,
        month_day_server: PyObject,
        key_pid: String,
        entity: String,
        frame: String,
        frame_path: String,
        frame_start: String,
        servers: String,
        server_groups: Vec<(String, PyObject)>,
        gutter: Vec<String>,
        forms: Vec<String>,
        traceback: String,
        request: String,
        model_output: String,
        frame_source: String,
        anatomy: Option<Py<Anatomy>>,
    ) -> PyResult<Self> {
        let spec_anatomy = AnatomySpec::from_python(
            prefixes,
            shapes,
            never,
            month_day,
            key_pid,
            entity,
            frame,
            frame_path,
            frame_start,
            servers,
            &server_groups,
            gutter,
        );
        let spec = super::Spec {
            anatomy: spec_anatomy,
            forms,
            traceback,
            request,
            model_output,
            frame_source,
        };
        let reader = super::Reader::new(spec).map_err(PyValueError::new_err)?;
        Ok(FirstPass {
            inner: super::FirstPass::new(Arc::new(reader)),
            server_names: server_groups.into_iter().map(|(_, s)| s).collect(),
            month_day_server,
            anatomy,
        })
    }

    /// A first pass of its own (nothing summed) sharing this one's compiled patterns.
    fn fresh(&self, py: Python<'_>) -> FirstPass {
        FirstPass {
            inner: super::FirstPass::new(Arc::clone(&self.inner.reader)),
            server_names: self.server_names.iter().map(|s| s.clone_ref(py)).collect(),
            month_day_server: self.month_day_server.clone_ref(py),
            anatomy: self.anatomy.as_ref().map(|a| a.clone_ref(py)),
        }
    }

    /// Sum an ordinary line of a process among at most `room` (1); else Python reads it:
    /// 2, no message begins on it, 0, it may.
    fn absorb(&mut self, number: u64, raw: &Bound<'_, PyString>, room: usize) -> u8 {
        match raw.to_str() {
            Ok(text) => self.inner.absorb(number, text, room) as u8,
            Err(_) => super::Fed::Python as u8,
        }
    }

    /// `absorb` over `lines[start:]` (line `number` first) in runs, to the end, in one
    /// call: a run ends at a line not summed, handed back as (how many were summed, what
    /// `absorb` said of the line, its `Line` read by the anatomy given, and the sums Python
    /// takes before reading it); when no line is left, (how many, 1, None, None). Python
    /// applies them one by one (logs/extract.py `feed_window`).
    ///
    /// The line after one Python may find a message on (0) is handed back too, read and
    /// never summed, as a run of none: (0, 2 or 0, its `Line`, None). A message that opens
    /// on the first is decided on it (it goes on there or ends). The runs after it are
    /// summed as though none were open by then: Python applies them only if so, and else
    /// drops them (and `take`s what they left here) and reads on as the reference does.
    ///
    /// The processes summed in a run before and those of the lines handed back are counted
    /// against `room` (each once, as new to Python): a run sums lines of those for free, and
    /// of `room` less their count more; past the room (Python may push a state out), of no
    /// process. A line of a process that does not fit comes back QUIET, which Python reads
    /// as the reference does.
    fn absorb_runs<'py>(
        &mut self,
        py: Python<'py>,
        number: u64,
        lines: &Bound<'py, PyList>,
        start: usize,
        room: usize,
    ) -> PyResult<Bound<'py, PyList>> {
        let runs = PyList::empty_bound(py);
        let mut at = start;
        let number_of = |at: usize| number + (at - start) as u64;
        // the processes that may be new to Python: summed, or of a line handed back
        let mut counted: Vec<String> = Vec::new();
        while at < lines.len() {
            // past the room, Python may push a state out: none is summed for free then
            let room = match counted.len() <= room {
                true => super::Room {
                    left: room - counted.len(),
                    counted: &counted,
                },
                false => super::Room {
                    left: 0,
                    counted: &[],
                },
            };
            let (run, keys) = self.run(py, number_of(at), lines, at, room)?;
            let (count, mut fed) = (run.0, run.1);
            runs.append(run)?;
            at += count + 1;
            count_in(&mut counted, keys);
            // the line after one a message may open on: read, decided by Python
            while fed == super::Fed::Python as u8 && at < lines.len() {
                let (next, key) = self.hand_back(py, number_of(at), lines, at)?;
                fed = next.1;
                runs.append(next)?;
                at += 1;
                count_in(&mut counted, key);
            }
        }
        Ok(runs)
    }

    /// Per process, in the order last seen: (key, lines, timestamp, its line, pid, server,
    /// its line, request line, record line, the record line before it).
    fn take<'py>(&mut self, py: Python<'py>) -> Bound<'py, PyList> {
        if !self.inner.holds() {
            return PyList::empty_bound(py);
        }
        let rows = self.inner.take().into_iter().map(|a| {
            let (timestamp, timestamp_line) = a.timestamp.unzip();
            let (server, server_line) = a.server.unzip();
            let server = server.map(|s| match s {
                Server::Shape(i) => self.server_names[i].clone_ref(py),
                Server::MonthDay => self.month_day_server.clone_ref(py),
            });
            let fields: [PyObject; 10] = [
                a.key.into_py(py),
                a.lines.into_py(py),
                timestamp.into_py(py),
                timestamp_line.into_py(py),
                a.pid.into_py(py),
                server.into_py(py),
                server_line.into_py(py),
                a.request_line.into_py(py),
                a.record_line.into_py(py),
                a.earlier_record_line.into_py(py),
            ];
            PyTuple::new_bound(py, fields)
        });
        PyList::new_bound(py, rows)
    }
}

/// A run `absorb_runs` hands back: how many lines were summed, what `absorb` said of the
/// line it ends at, that line's `Line`, the sums Python takes before reading it.
type Run = (usize, u8, PyObject, PyObject);

impl FirstPass {
    /// Line `at` of `lines`, handed back read and not summed: (0, what `look` says of it,
    /// its `Line`, None), and its process.
    fn hand_back<'py>(
        &self,
        py: Python<'py>,
        number: u64,
        lines: &Bound<'py, PyList>,
        at: usize,
    ) -> PyResult<(Run, Vec<String>)> {
        let item = lines.get_item(at)?;
        let raw = item.downcast::<PyString>().ok();
        let previous = match at {
            0 => None,
            _ => lines.get_item(at - 1).ok(),
        };
        let fed = match raw.map(|s| s.to_str()) {
            Some(Ok(text)) => self.inner.look(text, text_of(previous.as_ref())),
            _ => super::Fed::Python,
        };
        let line = self.read(py, number, raw)?;
        let key = key_of(py, &line, number)?;
        Ok(((0, fed as u8, line, py.None()), vec![key]))
    }

    /// One run of `absorb_runs`, and the processes of the lines it summed and of the line
    /// it ends at (none when it ends at the end).
    fn run<'py>(
        &mut self,
        py: Python<'py>,
        number: u64,
        lines: &Bound<'py, PyList>,
        start: usize,
        room: super::Room<'_>,
    ) -> PyResult<(Run, Vec<String>)> {
        let mut count = 0;
        // the line fed before each: the list's previous one (the first's is not known)
        let mut previous = match start {
            0 => None,
            _ => lines.get_item(start - 1).ok(),
        };
        for (offset, item) in lines.iter().skip(start).enumerate() {
            let number = number + offset as u64;
            let raw = item.downcast::<PyString>().ok();
            let before = text_of(previous.as_ref());
            let fed = match raw.map(|s| s.to_str()) {
                Some(Ok(text)) => self.inner.absorb_after(number, text, before, room),
                _ => super::Fed::Python,
            };
            previous = Some(item.clone());
            if fed == super::Fed::Absorbed {
                count += 1;
                continue;
            }
            let line = self.read(py, number, raw)?;
            let mut keys: Vec<String> = self.inner.keys().map(str::to_owned).collect();
            let sums = match self.inner.holds() {
                true => self.take(py).into_any().unbind(),
                false => py.None(),
            };
            keys.push(key_of(py, &line, number)?);
            return Ok(((count, fed as u8, line, sums), keys));
        }
        let end = (count, super::Fed::Absorbed as u8, py.None(), py.None());
        Ok((end, Vec::new()))
    }

    /// Line `number`, `raw`, as a `Line` read by the anatomy given (None without one, or
    /// for an item that is not text).
    fn read(
        &self,
        py: Python<'_>,
        number: u64,
        raw: Option<&Bound<'_, PyString>>,
    ) -> PyResult<PyObject> {
        match (&self.anatomy, raw) {
            (Some(anatomy), Some(raw)) => anatomy.get().read(py, number.into_py(py), raw),
            _ => Ok(py.None()),
        }
    }
}

/// The text of a list item that is a string (the line fed before another), else None.
fn text_of<'a>(item: Option<&'a Bound<'_, PyAny>>) -> Option<&'a str> {
    item.and_then(|p| p.downcast::<PyString>().ok())
        .and_then(|p| p.to_str().ok())
}

/// The process of a `Line` handed back (its `key`); of a line not read (None), a key no
/// process has, so that it counts as new.
fn key_of(py: Python<'_>, line: &PyObject, number: u64) -> PyResult<String> {
    match line.is_none(py) {
        true => Ok(format!("\0{number}")),
        false => line.getattr(py, "key")?.extract(py),
    }
}

/// Add `keys` to `counted`, each once.
fn count_in(counted: &mut Vec<String>, keys: Vec<String>) {
    for key in keys {
        if !counted.contains(&key) {
            counted.push(key);
        }
    }
}
