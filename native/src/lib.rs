//! harmony-doctor's native scan core. The modules are plain Rust (tested with `cargo test`);
//! the `python` feature adds the PyO3 module `harmony_doctor._native` binding them, here.

pub mod anatomy;
pub mod anchors;
pub mod chunk;
pub mod core;
pub mod evidence;
pub mod firstpass;
pub mod gutter;
#[cfg(test)]
#[rustfmt::skip]
mod fixture;
pub mod harmony;
pub mod hits;
mod json_line;
mod known_stamps;
mod lines;
mod patterns;
mod pieces;
pub mod prefixes;
pub mod pyre;
pub mod rules;
mod runs;
pub mod stamps;
mod tallies;
#[cfg(test)]
mod testing;
pub mod unwrap;
pub mod vllm;
pub mod windows;
pub mod wrapper_words;

#[cfg(feature = "python")]
// PyO3 0.22's #[pymethods] expansion converts PyErr into PyErr (a false positive, fixed in 0.23)
#[allow(clippy::useless_conversion)]
mod python {
    use pyo3::exceptions::PyValueError;
    use pyo3::prelude::*;
    use pyo3::pybacked::PyBackedBytes;
    use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};

    use crate::core::MetaEntry;

    // The records below are frozen classes whose fields are Python objects: Python reads such
    // a field as a struct member, as fast as a tuple item, where other fields take a getter
    // call. Their types are in harmony_doctor/_native.pyi.

    /// A hit window: harmony_doctor/scan/core.py `Window`.
    #[pyclass(frozen, get_all, module = "harmony_doctor._native")]
    struct Window {
        first_line: PyObject,
        text: PyObject,
        hit_lines: PyObject,
        stamp_before: PyObject,
    }

    /// A line holding token ids: harmony_doctor/scan/core.py `IdLine`.
    #[pyclass(frozen, get_all, module = "harmony_doctor._native")]
    struct IdLine {
        line: PyObject,
        text: PyObject,
        stamp: PyObject,
        pid: PyObject,
        cut: PyObject,
    }

    /// The windows and id lines one feed() or finish() settled: harmony_doctor/scan/core.py
    /// `Batch`.
    #[pyclass(frozen, get_all, module = "harmony_doctor._native")]
    struct Batch {
        windows: PyObject,
        id_lines: PyObject,
    }

    /// The counts so far: harmony_doctor/scan/core.py `Stats`.
    #[pyclass(frozen, get_all, module = "harmony_doctor._native")]
    struct Stats {
        lines: PyObject,
        cut_lines: PyObject,
        bytes: PyObject,
        access_lines: PyObject,
        received_lines: PyObject,
        tallies: PyObject,
        first_access_line: PyObject,
    }

    fn bytes(py: Python<'_>, b: &[u8]) -> PyObject {
        PyBytes::new_bound(py, b).into_any().unbind()
    }

    fn opt_bytes(py: Python<'_>, b: &Option<Vec<u8>>) -> PyObject {
        match b {
            Some(b) => bytes(py, b),
            None => py.None(),
        }
    }

    fn batch(py: Python<'_>, b: crate::core::Batch) -> PyResult<Batch> {
        let mut windows = Vec::with_capacity(b.windows.len());
        for w in &b.windows {
            let window = Window {
                first_line: w.first_line.into_py(py),
                text: bytes(py, &w.text),
                hit_lines: PyTuple::new_bound(py, &w.hit_lines).into_any().unbind(),
                stamp_before: opt_bytes(py, &w.stamp_before),
            };
            windows.push(Py::new(py, window)?);
        }
        let mut id_lines = Vec::with_capacity(b.id_lines.len());
        for i in &b.id_lines {
            let id_line = IdLine {
                line: i.line.into_py(py),
                text: bytes(py, &i.text),
                stamp: opt_bytes(py, &i.stamp),
                pid: i.pid.into_py(py),
                cut: i.cut.into_py(py),
            };
            id_lines.push(Py::new(py, id_line)?);
        }
        Ok(Batch {
            windows: PyList::new_bound(py, windows).into_any().unbind(),
            id_lines: PyList::new_bound(py, id_lines).into_any().unbind(),
        })
    }

    /// A line shape as Python hands it: harmony_doctor/faults/shapes.py `LineShape`, read by
    /// its attributes.
    #[derive(FromPyObject)]
    struct LineShape {
        counts: String,
        literals: Vec<PyBackedBytes>,
        words: Vec<PyBackedBytes>,
        blanks: bool,
        then: PyBackedBytes,
        line: Option<PyBackedBytes>,
    }

    impl LineShape {
        fn shape(&self) -> PyResult<crate::anchors::Shape> {
            let owned = |v: &[PyBackedBytes]| v.iter().map(|b| b.to_vec()).collect();
            let line = match &self.line {
                Some(l) => Some(
                    std::str::from_utf8(l)
                        .map_err(|_| PyValueError::new_err("a line shape's regex: not UTF-8"))?
                        .to_string(),
                ),
                None => None,
            };
            Ok(crate::anchors::Shape {
                counts: crate::anchors::Counts::named(&self.counts)
                    .map_err(PyValueError::new_err)?,
                literals: owned(&self.literals),
                words: owned(&self.words),
                blanks: self.blanks,
                then: self.then.to_vec(),
                line,
            })
        }
    }

    /// The scan core: feed(data, meta=None) -> Batch, finish() -> Batch, stats() -> Stats.
    #[pyclass(name = "Core", module = "harmony_doctor._native")]
    struct Core {
        inner: crate::core::Core,
    }

    #[pymethods]
    impl Core {
        /// `anchors`: the error anchors (bytes; ValueError for ones the core cannot search);
        /// `markup_line`: the rule (a regex) a line holding `<|` must also match to be a hit;
        /// `shapes`: the lines counted besides (harmony_doctor/faults/shapes.py `LineShape`s).
        #[new]
        // max_line 4 MiB, max_window 1 MiB (literals: Python's signature of the class shows them)
        /// `levels`, `pid_key`: the words of a line's stamp and pid (inputs/log_words.py).
        #[pyo3(signature = (anchors, markup_line, shapes, before=3072, after=1024, max_line=4194304, max_window=1048576, ids=true, *, levels, pid_key))]
        #[allow(clippy::too_many_arguments)]
        fn new(
            anchors: Vec<PyBackedBytes>,
            markup_line: &str,
            shapes: Vec<LineShape>,
            before: i64,
            after: i64,
            max_line: i64,
            max_window: i64,
            ids: bool,
            levels: Vec<String>,
            pid_key: &str,
        ) -> PyResult<Self> {
            let stamps =
                crate::stamps::StampWords::new(&levels, pid_key).map_err(PyValueError::new_err)?;
            let bad =
                || PyValueError::new_err("before/after must be >= 0, max_line/max_window >= 1");
            let u = |v: i64| usize::try_from(v).map_err(|_| bad());
            let (before, after, max_line, max_window) =
                (u(before)?, u(after)?, u(max_line)?, u(max_window)?);
            let shapes = shapes
                .iter()
                .map(LineShape::shape)
                .collect::<PyResult<Vec<_>>>()?;
            let inner = crate::core::Core::new(
                &anchors,
                markup_line,
                &shapes,
                before,
                after,
                max_line,
                max_window,
                ids,
                stamps,
            )
            .map_err(PyValueError::new_err)?;
            Ok(Core { inner })
        }

        /// The error anchors, as given.
        #[getter]
        fn anchors<'py>(&self, py: Python<'py>) -> Vec<Bound<'py, PyBytes>> {
            let anchors = self.inner.anchors().iter();
            anchors.map(|a| PyBytes::new_bound(py, a)).collect()
        }

        /// The error anchors searched: those given but the ones holding another (a line
        /// holding one holds the other) and the later copies of a twin.
        #[getter]
        fn searched_anchors<'py>(&self, py: Python<'py>) -> Vec<Bound<'py, PyBytes>> {
            let anchors = self.inner.searched_anchors().into_iter();
            anchors.map(|a| PyBytes::new_bound(py, a)).collect()
        }

        /// The markup-line rule, as given.
        #[getter]
        fn markup_line(&self) -> &str {
            self.inner.markup_line()
        }

        /// Scan one chunk (the GIL is released meanwhile); `newlines`: the number of newlines
        /// in `data` when the caller has counted them (they are not counted again).
        #[pyo3(signature = (data, meta=None, newlines=None))]
        fn feed(
            &mut self,
            py: Python<'_>,
            data: &[u8],
            meta: Option<Vec<MetaEntry>>,
            newlines: Option<u64>,
        ) -> PyResult<Batch> {
            let meta = meta.unwrap_or_default();
            let inner = &mut self.inner;
            let b = py
                .allow_threads(|| inner.feed_counted(data, &meta, newlines))
                .map_err(PyValueError::new_err)?;
            batch(py, b)
        }

        /// Scan the lines a feed() adds in two parts on two threads when they hold at least
        /// `min_bytes` (None: on one thread); the results are the same either way.
        #[pyo3(signature = (min_bytes))]
        fn set_split(&mut self, min_bytes: Option<usize>) {
            self.inner.set_split(min_bytes);
        }

        /// End of stream: flush the last line and every pending window.
        fn finish(&mut self, py: Python<'_>) -> PyResult<Batch> {
            let inner = &mut self.inner;
            let b = py
                .allow_threads(|| inner.finish())
                .map_err(PyValueError::new_err)?;
            batch(py, b)
        }

        /// The counts so far; tallies: {(kind, pid, hour key): count}.
        fn stats(&self, py: Python<'_>) -> PyResult<Stats> {
            let s = self.inner.stats();
            let tallies = PyDict::new_bound(py);
            for ((kind, pid, hour), n) in &s.tallies {
                let key = PyTuple::new_bound(
                    py,
                    [kind.into_py(py), pid.into_py(py), opt_bytes(py, hour)],
                );
                tallies.set_item(key, n)?;
            }
            Ok(Stats {
                lines: s.lines.into_py(py),
                cut_lines: s.cut_lines.into_py(py),
                bytes: s.bytes.into_py(py),
                access_lines: s.access_lines.into_py(py),
                received_lines: s.received_lines.into_py(py),
                tallies: tallies.into_any().unbind(),
                first_access_line: opt_bytes(py, &s.first_access_line),
            })
        }
    }

    /// A log line taken apart (harmony_doctor/logs/lines.py `anatomize`): made of lines.py's
    /// own patterns; `read` gives the line's `Line`, by `fallback` (Python) where Rust declines.
    #[pyclass(frozen, module = "harmony_doctor._native")]
    pub(crate) struct Anatomy {
        inner: crate::anatomy::Anatomy,
        /// per server shape: the server's name
        server_names: Vec<PyObject>,
        /// the server a prefix in vLLM's own format is evidence of
        month_day_server: PyObject,
        /// servers.py `path_server`, for the path of a frame, and its answers so far (a
        /// traceback's frames name a few paths, each asked once)
        path_server: PyObject,
        frame_servers: std::sync::Mutex<std::collections::HashMap<String, PyObject>>,
        /// Python's reader, for the lines declined
        fallback: PyObject,
        /// `tuple.__new__` and the `Line` class: a `Line` from its fields
        tuple_new: PyObject,
        line: PyObject,
        empty: PyObject,
        read: std::sync::atomic::AtomicU64,
        declined: std::sync::atomic::AtomicU64,
    }

    use crate::anatomy::ShapeGroups;

    #[pymethods]
    impl Anatomy {
        /// ValueError when a pattern has no exact translation (then Python reads every line).
        #[new]
        #[allow(clippy::too_many_arguments)]
        #[pyo3(signature = (*, prefixes, shapes, never, month_day, month_day_server, key_pid, entity, frame, frame_path, frame_start, servers, server_groups, gutter, path_server, fallback, line))]
        fn new(
            py: Python<'_>,
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
            path_server: PyObject,
            fallback: PyObject,
            line: PyObject,
        ) -> PyResult<Self> {
            let spec = crate::anatomy::Spec::from_python(
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
            let inner = crate::anatomy::Anatomy::new(spec).map_err(PyValueError::new_err)?;
            let tuple_new = py.get_type_bound::<PyTuple>().getattr("__new__")?.unbind();
            Ok(Anatomy {
                inner,
                server_names: server_groups.into_iter().map(|(_, s)| s).collect(),
                month_day_server,
                path_server,
                frame_servers: std::sync::Mutex::new(std::collections::HashMap::new()),
                fallback,
                tuple_new,
                line,
                empty: PyString::new_bound(py, "").into_any().unbind(),
                read: 0.into(),
                declined: 0.into(),
            })
        }

        /// The line's `Line`: read here, or by the fallback where Rust declines.
        pub(crate) fn read(
            &self,
            py: Python<'_>,
            number: PyObject,
            raw: &Bound<'_, PyString>,
        ) -> PyResult<PyObject> {
            use std::sync::atomic::Ordering::Relaxed;
            let Some(r) = raw.to_str().ok().and_then(|text| self.inner.read(text)) else {
                self.declined.fetch_add(1, Relaxed);
                return self.fallback.call1(py, (number, raw));
            };
            self.read.fetch_add(1, Relaxed);
            let evidence = match &r.evidence {
                crate::anatomy::Evidence::Frame(path) => self.frame_server(py, path)?,
                crate::anatomy::Evidence::Server(i) => self.server_names[*i].clone_ref(py),
                crate::anatomy::Evidence::None => py.None(),
            };
            let evidence = if evidence.is_none(py) && r.month_day {
                self.month_day_server.clone_ref(py)
            } else {
                evidence
            };
            let text_of = |s: &str| PyString::new_bound(py, s).into_any().unbind();
            let whole = if r.line.len() == raw.len()? {
                raw.clone().into_any().unbind()
            } else {
                text_of(r.line)
            };
            let key = match r.keys.as_slice() {
                [] => self.empty.clone_ref(py),
                [key] => text_of(key),
                keys => text_of(&keys.join(" ")),
            };
            let (prefix, rest) = if r.prefix == 0 {
                (self.empty.clone_ref(py), whole.clone_ref(py))
            } else {
                (text_of(&r.line[..r.prefix]), text_of(&r.line[r.prefix..]))
            };
            let text = if r.text == (r.prefix, r.line.len()) {
                rest.clone_ref(py)
            } else {
                text_of(&r.line[r.text.0..r.text.1])
            };
            let fields = PyTuple::new_bound(
                py,
                [
                    number,
                    whole,
                    key,
                    prefix,
                    rest,
                    text,
                    r.timestamp.map_or_else(|| py.None(), text_of),
                    r.pid.into_py(py),
                    r.gutter.into_py(py),
                    evidence,
                ],
            );
            self.tuple_new.call1(py, (&self.line, fields))
        }

        /// (lines read here, lines declined) so far.
        fn counts(&self) -> (u64, u64) {
            use std::sync::atomic::Ordering::Relaxed;
            (self.read.load(Relaxed), self.declined.load(Relaxed))
        }
    }

    /// Paths whose server `Anatomy` keeps (past them, it asks Python each time).
    const FRAME_PATHS_KEPT: usize = 4096;

    impl Anatomy {
        /// servers.py `path_server(path)`, asked once per path.
        fn frame_server(&self, py: Python<'_>, path: &str) -> PyResult<PyObject> {
            let mut kept = self
                .frame_servers
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Some(server) = kept.get(path) {
                return Ok(server.clone_ref(py));
            }
            let server = self.path_server.call1(py, (path,))?;
            if kept.len() < FRAME_PATHS_KEPT {
                kept.insert(path.to_string(), server.clone_ref(py));
            }
            Ok(server)
        }
    }

    /// harmony_doctor/streams/diagnose.py `clean_key`: the stream with each run of content tokens cut
    /// to one 0.
    #[pyfunction]
    fn clean_key<'py>(
        py: Python<'py>,
        tokens: Vec<i64>,
        first_special: i64,
        message: i64,
    ) -> Bound<'py, PyTuple> {
        PyTuple::new_bound(
            py,
            crate::harmony::clean_key(&tokens, first_special, message),
        )
    }

    /// glibc's `mallopt(param, value)` (harmony_doctor/native.py `reuse_large_buffers` says which
    /// and why): whether it took; false where the C library is not glibc.
    #[pyfunction]
    fn mallopt(param: i32, value: i32) -> bool {
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        {
            extern "C" {
                #[link_name = "mallopt"]
                fn glibc_mallopt(
                    param: std::os::raw::c_int,
                    value: std::os::raw::c_int,
                ) -> std::os::raw::c_int;
            }
            // SAFETY: mallopt only sets allocator parameters; any int pair is accepted (an
            // unknown parameter returns 0).
            unsafe { glibc_mallopt(param, value) != 0 }
        }
        #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
        {
            let _ = (param, value);
            false
        }
    }

    #[pymodule]
    fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
        m.add_function(wrap_pyfunction!(clean_key, m)?)?;
        m.add_function(wrap_pyfunction!(mallopt, m)?)?;
        m.add_class::<Core>()?;
        m.add_class::<Anatomy>()?;
        m.add_class::<crate::hits::python::Hits>()?;
        m.add_class::<crate::hits::python::FormFound>()?;
        m.add_class::<crate::firstpass::python::FirstPass>()?;
        m.add_class::<crate::unwrap::python::Wrappers>()?;
        m.add_class::<Window>()?;
        m.add_class::<IdLine>()?;
        m.add_class::<Batch>()?;
        m.add_class::<Stats>()?;
        m.add_class::<crate::vllm::python::OutputLine>()?;
        m.add_class::<crate::vllm::python::OutputKey>()?;
        m.add_class::<crate::vllm::python::Completions>()?;
        Ok(())
    }
}
