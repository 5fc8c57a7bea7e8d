//! harmony-doctor's native scan core. The modules are plain Rust (tested with `cargo test`);
//! the `python` feature adds the PyO3 module `harmony_doctor._native` binding them, here.

pub mod anchors;
pub mod chunk;
pub mod core;
pub mod harmony;
mod lines;
mod pieces;
pub mod stamps;
mod tallies;
#[cfg(test)]
mod testing;
pub mod vllm;
pub mod windows;

#[cfg(feature = "python")]
// PyO3 0.22's #[pymethods] expansion converts PyErr into PyErr (a false positive, fixed in 0.23)
#[allow(clippy::useless_conversion)]
mod python {
    use pyo3::exceptions::PyValueError;
    use pyo3::prelude::*;
    use pyo3::pybacked::PyBackedBytes;
    use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};

    use crate::core::{Batch, MetaEntry};

    fn opt_bytes(py: Python<'_>, b: &Option<Vec<u8>>) -> PyObject {
        match b {
            Some(b) => PyBytes::new_bound(py, b).into_any().unbind(),
            None => py.None(),
        }
    }

    fn batch(py: Python<'_>, b: Batch) -> PyObject {
        let windows = PyList::empty_bound(py);
        for w in &b.windows {
            let t = PyTuple::new_bound(
                py,
                [
                    w.first_line.into_py(py),
                    PyBytes::new_bound(py, &w.text).into_any().unbind(),
                    PyTuple::new_bound(py, &w.hit_lines).into_any().unbind(),
                    opt_bytes(py, &w.stamp_before),
                ],
            );
            windows.append(t).unwrap();
        }
        let ids = PyList::empty_bound(py);
        for i in &b.id_lines {
            let t = PyTuple::new_bound(
                py,
                [
                    i.line.into_py(py),
                    PyBytes::new_bound(py, &i.text).into_any().unbind(),
                    opt_bytes(py, &i.stamp),
                    i.pid.into_py(py),
                    i.cut.into_py(py),
                ],
            );
            ids.append(t).unwrap();
        }
        PyTuple::new_bound(py, [windows.into_any(), ids.into_any()])
            .into_any()
            .unbind()
    }

    /// The scan core: feed(data, meta=None) -> (windows, id_lines), finish(), stats().
    #[pyclass(name = "Core", module = "harmony_doctor._native")]
    struct Core {
        inner: crate::core::Core,
    }

    #[pymethods]
    impl Core {
        /// `anchors`: the error anchors (bytes; ValueError for ones the core cannot search).
        #[new]
        #[pyo3(signature = (anchors, before=3072, after=1024, max_line=4*1024*1024, max_window=1024*1024, ids=true))]
        fn new(
            anchors: Vec<PyBackedBytes>,
            before: i64,
            after: i64,
            max_line: i64,
            max_window: i64,
            ids: bool,
        ) -> PyResult<Self> {
            let bad =
                || PyValueError::new_err("before/after must be >= 0, max_line/max_window >= 1");
            let u = |v: i64| usize::try_from(v).map_err(|_| bad());
            let (before, after, max_line, max_window) =
                (u(before)?, u(after)?, u(max_line)?, u(max_window)?);
            let inner = crate::core::Core::new(&anchors, before, after, max_line, max_window, ids)
                .map_err(PyValueError::new_err)?;
            Ok(Core { inner })
        }

        /// The error anchors, as given.
        #[getter]
        fn anchors<'py>(&self, py: Python<'py>) -> Vec<Bound<'py, PyBytes>> {
            let anchors = self.inner.anchors().iter();
            anchors.map(|a| PyBytes::new_bound(py, a)).collect()
        }

        /// Scan one chunk (the GIL is released meanwhile); returns (windows, id_lines).
        #[pyo3(signature = (data, meta=None))]
        fn feed(
            &mut self,
            py: Python<'_>,
            data: &[u8],
            meta: Option<Vec<MetaEntry>>,
        ) -> PyResult<PyObject> {
            let meta = meta.unwrap_or_default();
            let inner = &mut self.inner;
            let b = py
                .allow_threads(|| inner.feed(data, &meta))
                .map_err(PyValueError::new_err)?;
            Ok(batch(py, b))
        }

        /// End of stream: flush the last line and every pending window.
        fn finish(&mut self, py: Python<'_>) -> PyResult<PyObject> {
            let inner = &mut self.inner;
            let b = py
                .allow_threads(|| inner.finish())
                .map_err(PyValueError::new_err)?;
            Ok(batch(py, b))
        }

        /// (lines, cut_lines, bytes, access_lines, received_lines, tallies, first_access_line)
        fn stats(&self, py: Python<'_>) -> PyResult<PyObject> {
            let s = self.inner.stats();
            let tallies = PyDict::new_bound(py);
            for ((kind, pid, hour), n) in &s.tallies {
                let key = PyTuple::new_bound(
                    py,
                    [kind.into_py(py), pid.into_py(py), opt_bytes(py, hour)],
                );
                tallies.set_item(key, n)?;
            }
            let t = PyTuple::new_bound(
                py,
                [
                    s.lines.into_py(py),
                    s.cut_lines.into_py(py),
                    s.bytes.into_py(py),
                    s.access_lines.into_py(py),
                    s.received_lines.into_py(py),
                    tallies.into_any().unbind(),
                    opt_bytes(py, &s.first_access_line),
                ],
            );
            Ok(t.into_any().unbind())
        }
    }

    /// The number of newlines in `data`. The GIL stays held: a 1 MiB chunk takes about
    /// 0.1 ms, and a thread that lets the GIL go waits up to the switch interval (5 ms) to get
    /// it back while the others run Python (measured: 6x the call's own time in a scan).
    #[pyfunction]
    fn count_lines(data: &[u8]) -> usize {
        crate::chunk::count_lines(data)
    }

    /// Whether any line of `data` starts like a wrapped one (inputs/accel.py's reference);
    /// the GIL stays held, as in count_lines.
    #[pyfunction]
    fn may_be_wrapped(data: &[u8]) -> bool {
        crate::chunk::may_be_wrapped(data)
    }

    /// (request id, complete, delta, ids, finish_reason) of a vLLM `Generated response` line
    /// in its common shape, or None: then Python's `parse_vllm_line` decides (inputs/tokens.py).
    #[pyfunction]
    #[allow(clippy::type_complexity)]
    fn vllm_output_line<'py>(
        py: Python<'py>,
        line: &[u8],
        vocab_size: u32,
    ) -> Option<(
        String,
        bool,
        bool,
        Option<Bound<'py, PyTuple>>,
        Option<String>,
    )> {
        // Most lines take a microsecond: releasing the GIL would cost more than it frees (and
        // may hand it to a waiting thread). Long lines (huge id lists) release it.
        let parse = || crate::vllm::output_line(line, vocab_size);
        let parsed = if line.len() >= LONG_LINE {
            py.allow_threads(parse)
        } else {
            parse()
        };
        // The ids as a tuple: what the record holds (a list would be copied into one).
        parsed.map(|p| {
            let ids = p.ids.map(|ids| PyTuple::new_bound(py, ids));
            (p.request_id, p.complete, p.delta, ids, p.finish_reason)
        })
    }

    /// What the scan needs to settle a `Generated response` line without building its
    /// tokens: (request id, complete, finish reason, the ids' `clean_key` or None when the
    /// line logs `None`), or None where `vllm_output_line` would be None (scan/source.py).
    #[pyfunction]
    #[allow(clippy::type_complexity)]
    fn vllm_output_key<'py>(
        py: Python<'py>,
        line: &[u8],
        vocab_size: u32,
        first_special: i64,
        message: i64,
    ) -> Option<(String, bool, Option<String>, Option<Bound<'py, PyTuple>>)> {
        let parsed = crate::vllm::output_line(line, vocab_size)?;
        let key = parsed.ids.as_ref().map(|ids| {
            let wide: Vec<i64> = ids.iter().map(|&t| i64::from(t)).collect();
            PyTuple::new_bound(py, crate::harmony::clean_key(&wide, first_special, message))
        });
        Some((
            parsed.request_id,
            parsed.complete,
            parsed.finish_reason,
            key,
        ))
    }

    /// Lines at least this long are parsed with the GIL released.
    const LONG_LINE: usize = 64 * 1024;

    /// diagnose.py `clean_key`: the stream with each run of content tokens cut to one 0.
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

    #[pymodule]
    fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
        m.add_function(wrap_pyfunction!(clean_key, m)?)?;
        m.add_function(wrap_pyfunction!(vllm_output_key, m)?)?;
        m.add_class::<Core>()?;
        m.add_function(wrap_pyfunction!(count_lines, m)?)?;
        m.add_function(wrap_pyfunction!(may_be_wrapped, m)?)?;
        m.add_function(wrap_pyfunction!(vllm_output_line, m)?)?;
        Ok(())
    }
}
