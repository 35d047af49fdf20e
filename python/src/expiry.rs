//! Expiry from Python: the times and durations the package takes and gives, and
//! `spillway.ManualClock`, a test clock a store can be opened with (`open(path, clock=...)`).
//!
//! The rules, in one place:
//! - A *ttl* (`put(..., ttl=)`, `expire(key, ttl)`, `ManualClock.advance`) is seconds, an `int`
//!   or a `float`, or a `datetime.timedelta`; a ttl of a write must be more than zero (0 means
//!   "never" in some stores and "now" in others: neither is guessed).
//! - A *time* (`put_expiring(..., at)`, `expire_at(key, when)`, `ManualClock(start)`) is an
//!   aware `datetime.datetime` (any time zone), or a Unix timestamp in seconds (`int` or
//!   `float`, as `time.time()` gives). A naive `datetime` is refused: Python reads one as local
//!   time in some places and as UTC in others. A time in the past is allowed: the key is then
//!   gone at once.
//! - Times given back (`expiry()`, `get_with_expiry()`, `ManualClock.now()`) are aware UTC
//!   `datetime`s, to the millisecond (the store's resolution); remaining times (`ttl()`) are
//!   `float` seconds.
//! - A ttl counts from the call, by the clock of the store the write is for.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyType};

use spillway::{Clock, Expiry};

/// The latest time the package writes or gives: the last microsecond of 9999-12-31, UTC (what
/// a `datetime` holds), in microseconds since the epoch.
const MAX_MICROS: i64 = 253_402_300_799_999_999;

static DATETIME: GILOnceCell<Py<PyType>> = GILOnceCell::new();
static TIMEDELTA: GILOnceCell<Py<PyType>> = GILOnceCell::new();
static UTC: GILOnceCell<Py<PyAny>> = GILOnceCell::new();
static EPOCH: GILOnceCell<Py<PyAny>> = GILOnceCell::new();

/// 1970-01-01T00:00:00+00:00, as an aware `datetime`.
fn epoch(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    EPOCH
        .get_or_try_init(py, || {
            let utc = UTC.import(py, "datetime", "timezone")?.getattr("utc")?;
            let kwargs = PyDict::new(py);
            kwargs.set_item("tzinfo", utc)?;
            let dt = DATETIME.import(py, "datetime", "datetime")?;
            Ok(dt.call((1970, 1, 1), Some(&kwargs))?.unbind())
        })
        .map(|e| e.bind(py))
}

/// Whole microseconds of a `timedelta`, exactly (past what an `i64` holds: its end, which
/// every caller refuses as out of range).
fn micros_of_delta(delta: &Bound<'_, PyAny>) -> PyResult<i64> {
    let part = |name| -> PyResult<i128> { Ok(delta.getattr(name)?.extract::<i64>()?.into()) };
    let total = (part("days")? * 86_400 + part("seconds")?) * 1_000_000 + part("microseconds")?;
    Ok(total.clamp(i64::MIN.into(), i64::MAX.into()) as i64)
}

/// Seconds, an `int` or a `float` (not a `bool`), in whole microseconds (rounded).
fn micros_of_seconds(what: &str, obj: &Bound<'_, PyAny>) -> PyResult<Option<i64>> {
    if obj.is_instance_of::<PyBool>()
        || !(obj.is_instance_of::<PyInt>() || obj.is_instance_of::<PyFloat>())
    {
        return Ok(None);
    }
    let seconds: f64 = obj.extract()?;
    let micros = (seconds * 1e6).round();
    if !micros.is_finite() {
        return Err(PyValueError::new_err(format!(
            "{what} must be a finite number of seconds, not {seconds}"
        )));
    }
    // A float's cast saturates: past either end, the end of an `i64`, which every caller
    // refuses as out of range.
    Ok(Some(micros as i64))
}

/// A ttl: seconds (`int` or `float`) or a `timedelta`, in whole microseconds, which must be
/// more than zero.
pub(crate) fn ttl_arg(obj: &Bound<'_, PyAny>) -> PyResult<Duration> {
    duration_arg("ttl", obj, false)
}

/// A duration to move a clock by: as a ttl, but zero is allowed.
fn duration_arg(what: &str, obj: &Bound<'_, PyAny>, zero: bool) -> PyResult<Duration> {
    let py = obj.py();
    let micros = match micros_of_seconds(what, obj)? {
        Some(micros) => micros,
        None if obj.is_instance(TIMEDELTA.import(py, "datetime", "timedelta")?)? => {
            micros_of_delta(obj)?
        }
        None => {
            return Err(PyTypeError::new_err(format!(
                "{what} takes seconds (int or float) or a datetime.timedelta, not {}",
                obj.get_type().name()?
            )))
        }
    };
    if micros < 0 || (micros == 0 && !zero) {
        let (least, hint) = match zero {
            true => ("at least 0", " (set() moves a clock back)"),
            false => (
                "more than 0",
                " (ttl=None for no expiry; delete(), or expire_at() a time past, ends a key now)",
            ),
        };
        return Err(PyValueError::new_err(format!(
            "{what} must be {least} seconds{hint}, not {}",
            obj.repr()?
        )));
    }
    Ok(Duration::from_micros(micros as u64))
}

/// A time: an aware `datetime`, or a Unix timestamp in seconds (`int` or `float`).
pub(crate) fn time_arg(what: &str, obj: &Bound<'_, PyAny>) -> PyResult<SystemTime> {
    let py = obj.py();
    let micros = match micros_of_seconds(what, obj)? {
        Some(micros) => micros,
        None if obj.is_instance(DATETIME.import(py, "datetime", "datetime")?)? => {
            if obj.call_method0("utcoffset")?.is_none() {
                return Err(PyValueError::new_err(format!(
                    "{what}: a naive datetime is ambiguous (local time or UTC?): give it a \
                     tzinfo, e.g. datetime.now(timezone.utc), or pass a Unix timestamp"
                )));
            }
            micros_of_delta(&obj.sub(epoch(py)?)?)?
        }
        None => {
            return Err(PyTypeError::new_err(format!(
                "{what} takes an aware datetime.datetime or a Unix timestamp in seconds (int or \
                 float), not {}",
                obj.get_type().name()?
            )))
        }
    };
    if micros > MAX_MICROS {
        return Err(PyValueError::new_err(format!(
            "{what} is later than the year 9999"
        )));
    }
    // Before the epoch is as past as the epoch: the store counts from it.
    Ok(UNIX_EPOCH + Duration::from_micros(micros.max(0) as u64))
}

/// `ttl` from now by `clock`: when a write given `ttl` expires.
pub(crate) fn after(clock: &dyn Clock, ttl: Duration) -> PyResult<SystemTime> {
    let latest = UNIX_EPOCH + Duration::from_micros(MAX_MICROS as u64);
    match clock.now().checked_add(ttl) {
        Some(at) if at <= latest => Ok(at),
        _ => Err(PyValueError::new_err(format!(
            "ttl {} s reaches past the year 9999",
            ttl.as_secs_f64()
        ))),
    }
}

/// `t` as an aware UTC `datetime`, to the millisecond (past the year 9999: the last moment a
/// `datetime` holds, as a store written by Rust may hold such times).
pub(crate) fn datetime_of(py: Python<'_>, t: SystemTime) -> PyResult<PyObject> {
    let ms = millis(t).min(MAX_MICROS as u64 / 1000);
    let kwargs = PyDict::new(py);
    kwargs.set_item("milliseconds", ms)?;
    let delta = TIMEDELTA
        .import(py, "datetime", "timedelta")?
        .call((), Some(&kwargs))?;
    Ok(epoch(py)?.add(delta)?.unbind())
}

/// Milliseconds since the epoch (0 before it), as the store counts time.
fn millis(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// `expiry()`'s answer for a present key: `None` if it does not expire, else when.
pub(crate) fn expiry_to_py(py: Python<'_>, expiry: Expiry) -> PyResult<Option<PyObject>> {
    match expiry {
        Expiry::Never => Ok(None),
        Expiry::At(t) => datetime_of(py, t).map(Some),
    }
}

/// `get_with_expiry()`'s answer: `(value, expiry)` if the key is there, else `default`.
pub(crate) fn value_and_expiry(
    py: Python<'_>,
    found: Option<(Vec<u8>, Expiry)>,
    default: Option<PyObject>,
) -> PyResult<Option<PyObject>> {
    let Some((value, expiry)) = found else {
        return Ok(default);
    };
    let pair = (crate::py_bytes(py, value), expiry_to_py(py, expiry)?);
    Ok(Some(pair.into_pyobject(py)?.into_any().unbind()))
}

/// `ttl()`'s answer for a present key: `None` if it does not expire, else the seconds left by
/// `clock` (never below 0: a wall clock may pass the time between the read and now).
pub(crate) fn remaining(clock: &dyn Clock, expiry: Expiry) -> Option<f64> {
    match expiry {
        Expiry::Never => None,
        Expiry::At(t) => {
            let left = millis(t).saturating_sub(millis(clock.now()));
            Some(left as f64 / 1000.0)
        }
    }
}

/// A clock that moves only when told, for tests of what expires when: open a store with
/// `spillway.open(path, clock=clock)` and its expiring keys are gone when `advance` or `set`
/// takes the clock to their time, with no sleep. `start` is a time (an aware `datetime`, or a
/// Unix timestamp in seconds); `None` (the default) is the wall clock's time now. Times count
/// to the millisecond. One clock may drive several stores; a store's clock is not recorded:
/// open it with the wall clock (no `clock=`) and it reads the wall clock's time.
#[pyclass(name = "ManualClock", module = "spillway", frozen)]
pub struct PyManualClock {
    clock: Arc<spillway::ManualClock>,
}

impl PyManualClock {
    pub(crate) fn engine(&self) -> Arc<spillway::ManualClock> {
        self.clock.clone()
    }
}

#[pymethods]
impl PyManualClock {
    #[new]
    #[pyo3(signature = (start=None))]
    fn new(start: Option<&Bound<'_, PyAny>>) -> PyResult<PyManualClock> {
        let start = match start {
            Some(t) => time_arg("start", t)?,
            None => SystemTime::now(),
        };
        Ok(PyManualClock {
            clock: Arc::new(spillway::ManualClock::new(start)),
        })
    }

    /// Move the clock forward by `seconds` (an `int` or `float` of seconds, or a
    /// `datetime.timedelta`; at least 0: `set` moves it back).
    fn advance(&self, seconds: &Bound<'_, PyAny>) -> PyResult<()> {
        self.clock.advance(duration_arg("seconds", seconds, true)?);
        Ok(())
    }

    /// Make the time `when` (an aware `datetime` or a Unix timestamp), earlier than now too.
    /// A key already dropped by a spill once its time had come stays gone if the clock goes
    /// back; one not yet dropped is seen again.
    fn set(&self, when: &Bound<'_, PyAny>) -> PyResult<()> {
        self.clock.set(time_arg("when", when)?);
        Ok(())
    }

    /// The clock's time, an aware UTC `datetime` (to the millisecond).
    fn now(&self, py: Python<'_>) -> PyResult<PyObject> {
        datetime_of(py, self.clock.now())
    }

    /// The clock's time as a Unix timestamp in seconds, as `time.time()` gives the wall
    /// clock's.
    fn time(&self) -> f64 {
        millis(self.clock.now()) as f64 / 1000.0
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let now = self.now(py)?;
        Ok(format!("<spillway.ManualClock {}>", now.bind(py).str()?))
    }
}
