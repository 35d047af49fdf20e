//! The bytes of a log file: its header and the frame around each record.
//!
//! ```text
//! file    magic "SPWYLOG\0" | format version u32 | crc32c(magic ‖ version) u32 | record*
//! record  crc32c(payload) u32 | len_kind u32 | unsynced u32
//!         | crc32c(log number u64 ‖ len_kind ‖ unsynced) u32 | payload
//! ```
//!
//! `len_kind` holds the payload's length (low 28 bits: batches are limited to 256 MiB) and the
//! record's [`Kind`] (high 4 bits): a write group, the seal a clean close ends a log with, or
//! the link a log ends with when writes move on to the next log (its payload: that log's
//! number). Links are what let recovery tell a log deleted from the folder from one never
//! written.
//!
//! `unsynced` is how many bytes of the log before this record were not yet known to be
//! durable (synced) when it was written, saturating at `u32::MAX`: the record vouches that
//! its log's first `offset - unsynced` bytes were on the device ([`Frame::durable_through`]).
//! Recovery takes that as proof: damage to bytes a later record vouches for is not the work
//! of a power loss (see `recovery`). Zero means everything before the record was synced.
//!
//! Every field that changes how the file is read is checked: the header's checksum covers
//! the version (a future version keeps the checksum where it is). Versions 1 and 2 had a
//! reserved zero word there, which a version-3 header never has (but for one checksum in
//! 2^32): a version field damaged into 1 or 2 is seen as damage, not read under old rules.
//!
//! Version 4 frames records as version 3 does; its payloads encode records with merge operands
//! (see `record`), which version 3 payloads never hold ([`encoding`]). Version 5 payloads may
//! also hold extended records (values that expire, changes of expiry: see `record`) and
//! start with a time mark (see `batch`), which version 4 payloads never do.
//!
//! Version 6 seeds each frame's checksum with the log's number (the number in its file name):
//! `crc32c(number u64 ‖ len_kind ‖ unsynced)`. Log files are recycled (see `free_logs`): a
//! new log overwrites the blocks of one retired before it, so past its last record lie
//! records of the log the file was before, whole and checksummed — but under another number,
//! so to this log they are bytes that were never its records.
//!
//! Older versions are still read. Version 2: the same frame without kinds (an empty record is
//! a seal). Version 1: 12-byte frames without `unsynced` (crc, len, crc(len)), each counted as
//! proving everything before it durable, which is the rule version 1 recovery applied. Logs
//! of older versions are never appended to.

pub const MAGIC: &[u8; 8] = b"SPWYLOG\0";
/// The version this build writes.
pub const VERSION: u32 = 6;
pub const HEADER_LEN: usize = 16;
pub const FRAME_LEN: usize = 16;
const V1_FRAME_LEN: usize = 12;
/// Payload lengths fit in the low bits of `len_kind`; the kind takes the rest.
const LEN_BITS: u32 = 28;
const LEN_MASK: u32 = (1 << LEN_BITS) - 1;

/// What a record is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A write group: an encoded batch.
    Writes = 0,
    /// The empty record a clean close ends the newest log with: it vouches for every byte
    /// before it.
    Seal = 1,
    /// The last record of a log writes moved on from: the number of the next log (u64).
    Link = 2,
}

impl Kind {
    fn from_bits(bits: u32) -> Option<Kind> {
        [Kind::Writes, Kind::Seal, Kind::Link]
            .into_iter()
            .find(|k| *k as u32 == bits)
    }
}

pub fn header() -> [u8; HEADER_LEN] {
    let mut header = [0u8; HEADER_LEN];
    header[..8].copy_from_slice(MAGIC);
    header[8..12].copy_from_slice(&VERSION.to_le_bytes());
    let crc = crc_fast::crc32_iscsi(&header[..12]);
    header[12..16].copy_from_slice(&crc.to_le_bytes());
    header
}

/// What a log's first [`HEADER_LEN`] bytes say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Header {
    /// A sound header of a version this build reads.
    Version(u32),
    /// Missing, partial or zeros: created, and what was written to it lost (or never written).
    Missing,
    /// A sound header of a newer version.
    Newer(u32),
    /// Neither zeros nor a sound header: a bad magic number, checksum or reserved field.
    /// No crash or power loss leaves that (a header is written once, and fits in a sector).
    Damaged,
}

/// How the writes in a log of format `version` are encoded.
pub fn encoding(version: u32) -> crate::record::Encoding {
    if version >= 4 {
        crate::record::Encoding::Current
    } else {
        crate::record::Encoding::Legacy
    }
}

pub fn read_header(data: &[u8]) -> Header {
    let Some(h) = data.get(..HEADER_LEN) else {
        return Header::Missing;
    };
    if h.iter().all(|&b| b == 0) {
        return Header::Missing;
    }
    let version = u32::from_le_bytes(h[8..12].try_into().unwrap());
    let word = u32::from_le_bytes(h[12..16].try_into().unwrap());
    let magic_ok = &h[..8] == MAGIC;
    if magic_ok && word == crc_fast::crc32_iscsi(&h[..12]) && version != 0 {
        if version > VERSION {
            Header::Newer(version)
        } else if version >= 3 {
            Header::Version(version)
        } else {
            Header::Damaged // an old version never had a checksum here
        }
    } else if magic_ok && (version == 1 || version == 2) && word == 0 {
        Header::Version(version)
    } else {
        Header::Damaged
    }
}

/// The frame of a record of `payload` in log `number` at a point where `unsynced` bytes
/// before it are not known to be durable.
pub fn frame(number: u64, kind: Kind, payload: &[u8], unsynced: u64) -> [u8; FRAME_LEN] {
    let len = u32::try_from(payload.len())
        .ok()
        .filter(|&l| l <= LEN_MASK)
        .expect("batches are limited well below 256 MiB");
    let len_kind = len | (kind as u32) << LEN_BITS;
    let unsynced = u32::try_from(unsynced).unwrap_or(u32::MAX);
    let mut f = [0u8; FRAME_LEN];
    f[0..4].copy_from_slice(&crc_fast::crc32_iscsi(payload).to_le_bytes());
    f[4..8].copy_from_slice(&len_kind.to_le_bytes());
    f[8..12].copy_from_slice(&unsynced.to_le_bytes());
    let frame_crc = frame_checksum(VERSION, number, &f[4..12]);
    f[12..16].copy_from_slice(&frame_crc.to_le_bytes());
    f
}

/// The checksum of a frame's `len_kind ‖ unsynced` in log `number` of format `version`:
/// seeded with the number from version 6 on.
fn frame_checksum(version: u32, number: u64, fields: &[u8]) -> u32 {
    if version < 6 {
        return crc_fast::crc32_iscsi(fields);
    }
    let mut seeded = [0u8; 16];
    seeded[..8].copy_from_slice(&number.to_le_bytes());
    seeded[8..].copy_from_slice(fields);
    crc_fast::crc32_iscsi(&seeded)
}

/// A whole, valid record found in a log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame {
    /// Offset of the record (its frame) in the file.
    pub start: usize,
    /// Offset just past its payload.
    pub end: usize,
    payload_start: usize,
    pub kind: Kind,
    /// Bytes of the log before `start` that were durable when this record was written.
    pub durable_through: usize,
}

impl Frame {
    pub fn payload<'a>(&self, data: &'a [u8]) -> &'a [u8] {
        &data[self.payload_start..self.end]
    }

    /// The log a link record names.
    pub fn link_target(&self, data: &[u8]) -> Option<u64> {
        if self.kind != Kind::Link {
            return None;
        }
        self.payload(data).try_into().ok().map(u64::from_le_bytes)
    }
}

/// Why no valid record starts at some offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bad {
    /// The file's header is missing, partial or zeros (so no record follows it).
    Header,
    /// Fewer bytes than a frame are left.
    ShortFrame,
    /// The frame fails its checksum (or the rest of the file is zeros).
    FrameChecksum,
    /// The frame is sound but its payload runs past the end of the file.
    PastEnd,
    /// The payload fails its checksum.
    PayloadChecksum,
    /// A sound frame of a kind this version does not write, or a link that names no log.
    Malformed,
    /// Zeros from here to the end of the file: space set aside for records (see `prefill`),
    /// or blocks a power loss left unwritten, and nothing after them.
    Unwritten,
    /// The end of a log that writes moved on from, without the link to the next log that it
    /// then ended in: a power loss took its tail (see `recovery`).
    Unlinked,
}

impl std::fmt::Display for Bad {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Bad::Header => "a missing, partial or zeroed header",
            Bad::ShortFrame => "a partial record header",
            Bad::FrameChecksum => "a record header that fails its checksum",
            Bad::PastEnd => "a record that runs past the end of the file",
            Bad::PayloadChecksum => "a record that fails its checksum",
            Bad::Malformed => "a record of an unknown kind",
            Bad::Unwritten => "zeros to the end of the file (space never written)",
            Bad::Unlinked => "the end of a log without the link to the next log (its tail lost)",
        })
    }
}

/// Whether a record of log `number` of format `version` could start at `pos`: the fields a
/// checksum covers hold values a frame there can have. A fast look, for scans that try every
/// byte of a stretch of damage or of a recycled file's old records: only about one offset in
/// a thousand of random bytes passes it, and [`decode`] says the rest.
pub fn plausible(data: &[u8], pos: usize, version: u32) -> bool {
    let Some(rest) = data.get(pos..).filter(|r| r.len() >= FRAME_LEN) else {
        return version == 1 && data.len().saturating_sub(pos) >= V1_FRAME_LEN;
    };
    if version < 3 {
        return true;
    }
    let u32_at = |i: usize| u32::from_le_bytes(rest[i..i + 4].try_into().unwrap());
    let (len, kind) = (u32_at(4) & LEN_MASK, u32_at(4) >> LEN_BITS);
    // Bytes not yet synced when a record was written all lie before it.
    kind <= Kind::Link as u32 && len as usize <= rest.len() - FRAME_LEN && u32_at(8) as usize <= pos
}

/// Decode the record at `pos` of log `number`, of format `version`.
pub fn decode(data: &[u8], pos: usize, version: u32, number: u64) -> Result<Frame, Bad> {
    let frame_len = if version == 1 {
        V1_FRAME_LEN
    } else {
        FRAME_LEN
    };
    let rest = &data[pos.min(data.len())..];
    if rest.len() < frame_len {
        return Err(Bad::ShortFrame);
    }
    let u32_at = |i: usize| u32::from_le_bytes(rest[i..i + 4].try_into().unwrap());
    let len = if version >= 3 {
        u32_at(4) & LEN_MASK
    } else {
        u32_at(4)
    } as usize;
    let (sound, unsynced) = if version == 1 {
        (crc_fast::crc32_iscsi(&rest[4..8]) == u32_at(8), 0)
    } else {
        (
            frame_checksum(version, number, &rest[4..12]) == u32_at(12),
            u32_at(8) as usize,
        )
    };
    if !sound {
        return Err(Bad::FrameChecksum);
    }
    if len > rest.len() - frame_len {
        return Err(Bad::PastEnd);
    }
    let payload = &rest[frame_len..frame_len + len];
    if crc_fast::crc32_iscsi(payload) != u32_at(0) {
        return Err(Bad::PayloadChecksum);
    }
    let kind = match version {
        // Before version 3 the only record besides write groups was the empty seal.
        1 | 2 if len == 0 => Kind::Seal,
        1 | 2 => Kind::Writes,
        _ => match Kind::from_bits(u32_at(4) >> LEN_BITS) {
            Some(Kind::Link) if len != 8 => return Err(Bad::Malformed),
            Some(Kind::Seal) if len != 0 => return Err(Bad::Malformed),
            Some(kind) => kind,
            None => return Err(Bad::Malformed),
        },
    };
    Ok(Frame {
        start: pos,
        end: pos + frame_len + len,
        payload_start: pos + frame_len,
        kind,
        // Version 1 wrote no such field: each record vouches for everything before it, as
        // version 1 recovery assumed.
        durable_through: if version == 1 {
            pos
        } else {
            pos.saturating_sub(unsynced)
        },
    })
}
