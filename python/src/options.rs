//! `spillway.open(path, **options)`: the keyword options, checked by name and type.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use spillway::{KeyOrder, Options};

/// `Options` from keyword arguments; an unknown name is a `TypeError`, as for any Python
/// function, and a value out of range the store's `InvalidOptionError` when it opens.
pub fn from_kwargs(kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Options> {
    let mut o = Options::default();
    let Some(kwargs) = kwargs else { return Ok(o) };
    for (name, value) in kwargs.iter() {
        let name: String = name.extract()?;
        match name.as_str() {
            "ordered" => {
                // Absent: the store's own order (a new store hashed).
                o.key_order = Some(match value.extract::<bool>()? {
                    true => KeyOrder::Ordered,
                    false => KeyOrder::Hashed,
                })
            }
            "merge_operator" => {
                let op: String = value.extract()?;
                o.merge_operator = Some(operator(&op)?);
            }
            "memory_budget" => o.memory_budget = value.extract()?,
            "root_buffer_size" => o.root_buffer_size = value.extract()?,
            "sync_by_default" => o.sync_by_default = value.extract()?,
            "create_if_missing" => o.create_if_missing = value.extract()?,
            "background_spills" => o.background_spills = value.extract()?,
            "filter_bits_per_key" => o.filter_bits_per_key = value.extract()?,
            "max_open_files" => o.max_open_files = value.extract()?,
            "mmap_reads" => o.mmap_reads = value.extract()?,
            "log_prefill" => o.log_prefill = value.extract()?,
            "mmap_log" => o.mmap_log = value.extract()?,
            "page_size" => o.page_size = value.extract()?,
            _ => {
                return Err(PyTypeError::new_err(format!(
                    "open() got an unexpected keyword argument '{name}'"
                )))
            }
        }
    }
    Ok(o)
}

/// A merge operator by its short name (`add`, `append`, `max`, `min`) or recorded name.
fn operator(name: &str) -> PyResult<std::sync::Arc<dyn spillway::MergeOperator>> {
    spillway::operators::by_short_name(name).ok_or_else(|| {
        let shorts: Vec<&str> = spillway::operators::SHORT_NAMES
            .iter()
            .map(|(s, _)| *s)
            .collect();
        PyValueError::new_err(format!(
            "unknown merge operator '{name}': one of {}",
            shorts.join(", ")
        ))
    })
}
