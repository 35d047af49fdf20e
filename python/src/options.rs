//! `spillway.open(path, **options)`: every keyword is an option of the engine's one table
//! (`spillway::OPTIONS`), set by name through `Options::set`, so that Python offers every
//! option the CLI and the server do, parsed the same way.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyInt, PyString};

use std::sync::Arc;

use spillway::{Clock, Options, SystemClock};

use crate::errors::to_py;
use crate::expiry::PyManualClock;

/// `Options` from keyword arguments. An unknown name, or a value of a type no option takes,
/// is a `TypeError`, as for any Python function; a value that does not parse, or is out of
/// range, is the store's `InvalidOptionError` (here, or when the store opens).
pub fn from_kwargs(kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Options> {
    let mut o = Options::default();
    let Some(kwargs) = kwargs else { return Ok(o) };
    if kwargs.contains("ordered")? && kwargs.contains("key_order")? {
        return Err(PyTypeError::new_err(
            "open() takes `ordered` or `key_order`, not both",
        ));
    }
    for (name, value) in kwargs.iter() {
        let name: String = name.extract()?;
        let (option, text) = match name.as_str() {
            // Not text: see `clock`.
            "clock" => continue,
            // The package's name for key_order since before the table: a bool.
            "ordered" => (
                "key_order",
                match value.extract::<Option<bool>>()? {
                    Some(true) => "ordered",
                    Some(false) => "hashed",
                    None => "none",
                }
                .to_owned(),
            ),
            _ => (name.as_str(), text_of(&name, &value)?),
        };
        o.set(option, &text).map_err(|e| match e {
            spillway::Error::UnknownOption { .. } => PyTypeError::new_err(format!(
                "open() got an unexpected keyword argument '{name}' (options: ordered, clock, {})",
                spillway::OPTIONS
                    .iter()
                    .map(|o| o.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
            e => to_py(e),
        })?;
    }
    Ok(o)
}

/// `open(clock=...)`: a `spillway.ManualClock`, or `None` (or no `clock=`) for the wall
/// clock. Any other object is a `TypeError`: the store reads its clock on every write and
/// read, with the GIL released, so it cannot call Python.
pub fn clock(kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Arc<dyn Clock>> {
    let Some(value) = kwargs.map(|k| k.get_item("clock")).transpose()?.flatten() else {
        return Ok(Arc::new(SystemClock));
    };
    if value.is_none() {
        return Ok(Arc::new(SystemClock));
    }
    match value.downcast::<PyManualClock>() {
        Ok(clock) => Ok(clock.get().engine()),
        Err(_) => Err(PyTypeError::new_err(format!(
            "clock takes a spillway.ManualClock or None, not {}",
            value.get_type().name()?
        ))),
    }
}

/// `Db.keyspace(name, merge_operator=...)`'s operator, named as `open()` names one (through
/// the same entry of the engine's table): `"add"`, `"append"`, `"max"`, `"min"`, a name a
/// store records, or `None` (none given: an existing keyspace then folds with the one it
/// records). A name that is none of these is `InvalidOptionError`, as for `open()`.
pub fn merge_operator(
    value: Option<&Bound<'_, PyAny>>,
) -> PyResult<Option<Arc<dyn spillway::MergeOperator>>> {
    let Some(value) = value else { return Ok(None) };
    let mut o = Options::default();
    o.set("merge_operator", &text_of("merge_operator", value)?)
        .map_err(to_py)?;
    Ok(o.merge_operator)
}

/// A keyword's value in the text `Options::set` parses: a bool as `true`/`false`, an int in
/// decimal, `None` as `none`, a str as it is (`"64M"`, `"ordered"`, `"add"`).
fn text_of(name: &str, value: &Bound<'_, PyAny>) -> PyResult<String> {
    // Before the int case: a Python bool is an int too.
    if let Ok(b) = value.downcast::<PyBool>() {
        return Ok(if b.is_true() { "true" } else { "false" }.to_owned());
    }
    if value.is_instance_of::<PyInt>() {
        // Through __index__: the str of an int subclass (an IntEnum) may be its name.
        return Ok(value
            .call_method0("__index__")?
            .str()?
            .to_cow()?
            .into_owned());
    }
    if value.is_none() {
        return Ok("none".to_owned());
    }
    if let Ok(s) = value.downcast::<PyString>() {
        return Ok(s.to_cow()?.into_owned());
    }
    Err(PyTypeError::new_err(format!(
        "option '{name}' takes a bool, int, str or None, not {}",
        value.get_type().name()?
    )))
}

/// `spillway.OPTIONS`: the engine's table, each option's name to what its value is written
/// as and what it means.
pub fn table(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    for o in spillway::OPTIONS {
        d.set_item(o.name, (o.value, o.summary))?;
    }
    Ok(d)
}
