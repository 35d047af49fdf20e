//! Reading one log file: the run of valid records from its start, what ends that run if it
//! is not the end of the file, and what the records past that point say.

use std::path::Path;

use super::format::{self, Bad, Frame, Header, HEADER_LEN, VERSION};
use crate::error::{Error, Result};

/// What one log file holds.
pub struct LogScan {
    pub data: Vec<u8>,
    /// The format version in its header; `None` if the file has no whole header (created,
    /// but the header never reached the disk).
    pub version: Option<u32>,
    /// The valid records from the start of the file, in order.
    pub records: Vec<Frame>,
    /// Where they end: appending could go on from here (0 without a header).
    pub valid_len: usize,
    /// What stops the run of valid records before the end of the file.
    pub damage: Option<Damage>,
    /// The greatest [`Frame::durable_through`] of any valid record in the file, before the
    /// damage or after it.
    pub durable_through: usize,
}

/// Where, and how, the run of valid records of a log breaks off.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Damage {
    pub at: usize,
    pub bad: Bad,
    /// Valid records found past it (each one write group).
    pub records_after: u64,
}

impl LogScan {
    /// Read log `number`, at `path`.
    pub fn read(path: &Path, number: u64) -> Result<LogScan> {
        let data = crate::io::read_file(path)?;
        let version = match format::read_header(&data) {
            // Created, and what was written to it lost (or never written): its records, if
            // any reached the disk, are read as this version's.
            Header::Missing => None,
            Header::Version(v) => Some(v),
            Header::Newer(found) => {
                return Err(Error::UnsupportedVersion {
                    path: path.to_owned(),
                    found,
                    supported: VERSION,
                })
            }
            Header::Damaged => {
                return Err(Error::corruption(
                    path,
                    "the log's header is damaged (its magic number, version or checksum)",
                ))
            }
        };
        Ok(Self::scan(data, version, number))
    }

    /// The log its last record links to, if it ends in a link.
    pub fn link(&self) -> Option<u64> {
        self.records.last()?.link_target(&self.data)
    }

    fn scan(data: Vec<u8>, version: Option<u32>, number: u64) -> LogScan {
        let mut records = Vec::new();
        let mut durable_through = 0;
        let mut pos = if version.is_some() { HEADER_LEN } else { 0 };
        let frames = version.unwrap_or(VERSION);
        // A log without a header lost what was written to it, if anything was.
        let mut bad = if version.is_some() {
            None
        } else {
            Some(Bad::Header)
        };
        while bad.is_none() && pos < data.len() {
            match format::decode(&data, pos, frames, number) {
                Ok(f) => {
                    durable_through = durable_through.max(f.durable_through);
                    records.push(f);
                    pos = f.end;
                }
                Err(b) => bad = Some(b),
            }
        }
        let valid_len = if version.is_some() { pos } else { 0 };
        let damage = bad.map(|bad| {
            let rest = &data[valid_len.min(data.len())..];
            if version.is_some() && !rest.is_empty() && rest.iter().all(|&b| b == 0) {
                return Damage {
                    at: valid_len,
                    bad: Bad::Unwritten,
                    records_after: 0,
                };
            }
            // Look for valid records past the damage: byte by byte, as nothing says where
            // the next one starts. A damaged log pays for this, and so does one that ends
            // before the records of the log its file was before (see `format`): megabytes of
            // them, most offsets ruled out by a look at their fields.
            let mut records_after = 0;
            let mut p = valid_len + 1;
            while p < data.len() {
                // No frame is all zeros (the checksum of its zero fields is not zero), so no
                // frame starts more than a frame's length before the end of a run of zeros.
                if data[p] == 0 {
                    let Some(next) = data[p..].iter().position(|&b| b != 0) else {
                        break;
                    };
                    let skip_to = (p + next).saturating_sub(format::FRAME_LEN - 1);
                    if skip_to > p {
                        p = skip_to;
                        continue;
                    }
                }
                if !format::plausible(&data, p, frames) {
                    p += 1;
                    continue;
                }
                match format::decode(&data, p, frames, number) {
                    Ok(f) => {
                        records_after += 1;
                        durable_through = durable_through.max(f.durable_through);
                        p = f.end;
                    }
                    Err(Bad::ShortFrame) => break,
                    Err(_) => p += 1,
                }
            }
            Damage {
                at: valid_len,
                bad,
                records_after,
            }
        });
        LogScan {
            data,
            version,
            records,
            valid_len,
            damage,
            durable_through,
        }
    }
}
