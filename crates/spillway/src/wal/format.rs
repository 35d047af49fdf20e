//! The bytes of a log file: its header and the frame around each record.
//!
//! ```text
//! file    magic "SPWYLOG\0" | format version u32 | reserved u32 | record*
//! record  crc32c(payload) u32 | len u32 | unsynced u32 | crc32c(len ‖ unsynced) u32 | payload
//! ```
//!
//! `unsynced` is how many bytes of the log before this record were not yet known to be
//! durable (synced) when it was written, saturating at `u32::MAX`: the record vouches that
//! its log's first `offset - unsynced` bytes were on the device ([`Frame::durable_through`]).
//! Recovery takes that as proof: damage to bytes a later record vouches for is not the work
//! of a power loss (see `recovery`). Zero means everything before the record was synced.
//!
//! Version 1 frames had no `unsynced` field (12 bytes: crc, len, crc(len)); they are still
//! read, each counted as proving everything before it durable, which is the rule version 1
//! recovery applied.

pub const MAGIC: &[u8; 8] = b"SPWYLOG\0";
/// The version this build writes.
pub const VERSION: u32 = 2;
pub const HEADER_LEN: usize = 16;
pub const FRAME_LEN: usize = 16;
const V1_FRAME_LEN: usize = 12;

pub fn header() -> [u8; HEADER_LEN] {
    let mut header = [0u8; HEADER_LEN];
    header[..8].copy_from_slice(MAGIC);
    header[8..12].copy_from_slice(&VERSION.to_le_bytes());
    header
}

/// The frame of a record of `payload` at a point where `unsynced` bytes before it are not
/// known to be durable.
pub fn frame(payload: &[u8], unsynced: u64) -> [u8; FRAME_LEN] {
    let len = u32::try_from(payload.len()).expect("batches are limited well below 4 GiB");
    let unsynced = u32::try_from(unsynced).unwrap_or(u32::MAX);
    let mut f = [0u8; FRAME_LEN];
    f[0..4].copy_from_slice(&crc32c::crc32c(payload).to_le_bytes());
    f[4..8].copy_from_slice(&len.to_le_bytes());
    f[8..12].copy_from_slice(&unsynced.to_le_bytes());
    let frame_crc = crc32c::crc32c(&f[4..12]);
    f[12..16].copy_from_slice(&frame_crc.to_le_bytes());
    f
}

/// A whole, valid record found in a log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame {
    /// Offset of the record (its frame) in the file.
    pub start: usize,
    /// Offset just past its payload.
    pub end: usize,
    payload_start: usize,
    /// Bytes of the log before `start` that were durable when this record was written.
    pub durable_through: usize,
}

impl Frame {
    pub fn payload<'a>(&self, data: &'a [u8]) -> &'a [u8] {
        &data[self.payload_start..self.end]
    }

    /// An empty record: the seal a clean close ends a log with.
    pub fn is_seal(&self) -> bool {
        self.payload_start == self.end
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
}

impl std::fmt::Display for Bad {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Bad::Header => "a missing, partial or zeroed header",
            Bad::ShortFrame => "a partial record header",
            Bad::FrameChecksum => "a record header that fails its checksum",
            Bad::PastEnd => "a record that runs past the end of the file",
            Bad::PayloadChecksum => "a record that fails its checksum",
        })
    }
}

/// Decode the record at `pos` of a log of format `version`.
pub fn decode(data: &[u8], pos: usize, version: u32) -> Result<Frame, Bad> {
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
    let len = u32_at(4) as usize;
    let (sound, unsynced) = if version == 1 {
        (crc32c::crc32c(&rest[4..8]) == u32_at(8), 0)
    } else {
        (
            crc32c::crc32c(&rest[4..12]) == u32_at(12),
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
    if crc32c::crc32c(payload) != u32_at(0) {
        return Err(Bad::PayloadChecksum);
    }
    Ok(Frame {
        start: pos,
        end: pos + frame_len + len,
        payload_start: pos + frame_len,
        // Version 1 wrote no such field: each record vouches for everything before it, as
        // version 1 recovery assumed.
        durable_through: if version == 1 {
            pos
        } else {
            pos.saturating_sub(unsynced)
        },
    })
}
