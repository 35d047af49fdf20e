//! The progress bar `load` and `read` draw on stderr (indicatif hides it when stderr is not a
//! terminal, so piped output stays clean).

use indicatif::{ProgressBar, ProgressStyle};

/// A bar over `len` items of `unit` (e.g. "records"), showing the rate per second.
pub fn bar(len: u64, unit: &'static str) -> ProgressBar {
    let style = ProgressStyle::with_template(
        "{elapsed_precise} [{wide_bar}] {human_pos}/{human_len} {msg} ({per_sec:0}, eta {eta})",
    )
    .expect("the template is valid")
    .progress_chars("=> ");
    ProgressBar::new(len).with_style(style).with_message(unit)
}
