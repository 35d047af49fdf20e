//! `spillway.Iter`: a scan as a Python iterator of `(key, value)` pairs (or keys), reading
//! the store as it was when the scan began (a transaction's scan: with its own writes on
//! top).

use std::sync::Mutex;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};

use crate::bytes_of;
use crate::errors::to_py;

type KeyBound = std::ops::Bound<Vec<u8>>;

/// What an `Iter` reads: the engine's `Iter` (a store, keyspace or snapshot) or `TxIter` (a
/// transaction).
pub trait Scan:
    DoubleEndedIterator<Item = spillway::Result<(Vec<u8>, Vec<u8>)>> + Send + 'static
{
}

impl<T> Scan for T where
    T: DoubleEndedIterator<Item = spillway::Result<(Vec<u8>, Vec<u8>)>> + Send + 'static
{
}

/// A slice's start and stop, `None` where left out.
type SliceBounds<'py> = (Option<Bound<'py, PyAny>>, Option<Bound<'py, PyAny>>);

/// `key`'s start and stop if it is a slice (`db[start:end]`), `None` for another key; a
/// slice with a step is a `ValueError`.
pub fn slice_bounds<'py>(key: &Bound<'py, PyAny>) -> PyResult<Option<SliceBounds<'py>>> {
    let Ok(slice) = key.downcast::<pyo3::types::PySlice>() else {
        return Ok(None);
    };
    let part = |name| -> PyResult<Option<Bound<'py, PyAny>>> {
        let v = slice.getattr(name)?;
        Ok((!v.is_none()).then_some(v))
    };
    if part("step")?.is_some() {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "a range of keys has no step: db[start:end]",
        ));
    }
    Ok(Some((part("start")?, part("stop")?)))
}

/// `range(start, end)`'s bounds: `[start, end)`, `None` unbounded.
pub fn key_range(
    start: Option<&Bound<'_, PyAny>>,
    end: Option<&Bound<'_, PyAny>>,
) -> PyResult<(KeyBound, KeyBound)> {
    let lo = start.map(bytes_of).transpose()?;
    let hi = end.map(bytes_of).transpose()?;
    Ok((
        lo.map_or(KeyBound::Unbounded, KeyBound::Included),
        hi.map_or(KeyBound::Unbounded, KeyBound::Excluded),
    ))
}

/// A scan of the store: `(key, value)` pairs of `bytes` (keys alone from iterating a `Db`,
/// `Keyspace` or `Snapshot`), read as the store was when the scan began; later writes are not
/// seen. A transaction's scan reads its snapshot with its own writes (those made before the
/// scan began) on top.
///
/// A key whose merge operands fail to fold raises `MergeFailedError` in its place: a `for`
/// loop ends there, but the same iterator goes on with the keys after it at the next
/// `next()`. Any other error (a damaged page: `CorruptionError`, `IoError`) is raised once
/// and ends the scan. `reversed(it)` takes over the keys not yet returned, from the other
/// end (`it` is then spent).
#[pyclass(name = "Iter", module = "spillway")]
pub struct PyIter {
    inner: Mutex<Option<Box<dyn Scan>>>,
    reverse: bool,
    keys_only: bool,
}

impl PyIter {
    pub fn new(it: impl Scan, reverse: bool) -> PyIter {
        PyIter {
            inner: Mutex::new(Some(Box::new(it))),
            reverse,
            keys_only: false,
        }
    }

    pub fn keys_only(mut self) -> PyIter {
        self.keys_only = true;
        self
    }
}

#[pymethods]
impl PyIter {
    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<PyObject>> {
        let mut guard = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let Some(it) = guard.as_mut() else {
            return Ok(None);
        };
        let reverse = self.reverse;
        let next = py.allow_threads(|| if reverse { it.next_back() } else { it.next() });
        match next {
            None => {
                *guard = None; // let go of the files it kept
                Ok(None)
            }
            // Kept, not dropped: the engine's iterator decides what follows an error. After a
            // key whose merge operands fail to fold it goes on with the next key; after a
            // failed read of the store it ends, and the next call here stops.
            Some(Err(e)) => Err(to_py(e)),
            Some(Ok((k, v))) => {
                let key = PyBytes::new(py, &k);
                if self.keys_only {
                    return Ok(Some(key.into_any().unbind()));
                }
                let pair = PyTuple::new(py, [key, PyBytes::new(py, &v)])?;
                Ok(Some(pair.into_any().unbind()))
            }
        }
    }

    /// The rest of the scan in the other direction (from where it has not been yet).
    fn __reversed__(&self) -> PyIter {
        let it = self.inner.lock().unwrap_or_else(|p| p.into_inner()).take();
        PyIter {
            inner: Mutex::new(it),
            reverse: !self.reverse,
            keys_only: self.keys_only,
        }
    }
}
