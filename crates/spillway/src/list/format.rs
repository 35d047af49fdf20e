//! The byte layout of a list file, in one place.
//!
//! ```text
//! header   magic "SPWYLIST" | format version u32 | crc32c(magic ‖ version) u32  (16 bytes)
//! pages    page*  — whole records sorted by position (route, key), then the page trailer
//!            (see `page`): from format 10, checksums of the page's segments
//! filter   k u8 | bits                                    (absent when filters are off)
//!          or, hashed lists of format 6: their fingerprints (see `fingerprints`)
//! index    key order u8 | per page: route u64 | page offset u64 | separators
//!          (see `index`; formats 1 and 2: routes and offsets only, hashed lists)
//! sketch   the list's K-minimum-values sample (see `sketch`; format 5)
//! expiry   when its values expire (see `expiry`; format 8)
//! trailer  page_count u64 | record_count u64 | filter_offset u64 | filter_len u64 |
//!          meta_crc u32 (filter + index + sketch + expiry; format 9: fingerprints left out) |
//!          trailer_crc u32 | magic "SPWYLIST"  (48 bytes)
//! ```
//!
//! The header's checksum covers every field that decides how the file is read (a future
//! version keeps it where it is). Version 1 had a reserved zero word there, which a later
//! header never has (but for one checksum in 2^32), so a version damaged into 1 is seen as
//! damage; version 1 and 2 files are read as before (the layout is the same but for the
//! index). Version 3 added the key order and the page separators of ordered stores. Version 4
//! encodes records with merge operands (see `record`), and keeps a key's operands together with
//! what they fold into, on one page; earlier versions' records are read as
//! [`Encoding::Legacy`](crate::record::Encoding). Version 5 aligns pages to [`BLOCK`]s and adds
//! the sketch. Version 6 gives hashed lists fingerprints in place of a Bloom filter, from
//! which their nodes' selectors are built. Version 7 rounds page routes: a page's route in the
//! index is the roundest route above the previous page's last record, no longer its first
//! record's (see `index`), so that the index takes half the memory. Version 8 may hold
//! extended records (values that expire, stamped operands, changes of expiry: see `record`),
//! and adds the expiry summary after the sketch. Version 9 leaves a hashed list's fingerprints
//! out of `meta_crc` — they carry a checksum of their own, checked whenever they are read — so
//! that an open, which takes node selectors from their saved copies (see
//! `tree::selector_file`), reads the index, sketch and expiry summary but not the
//! fingerprints (about 1.7 bytes a record); a Bloom filter stays under it. Version 10 cuts
//! pages into segments with a checksum each (see `page`), so that a point read checks and
//! scans an eighth of a page.
//!
//! Pages have no header: the index gives each page's offset, and the page ends where the next
//! begins (the last ends at `filter_offset`). Every page, and the filter + index, carries a
//! checksum verified on every read.
//!
//! **Aligned pages** (format 5). A page never straddles a 4 KiB block of the file when it can
//! fit in one: where the next page's first record would cross into the next block, the page
//! before it is padded to the block's end (its padding is inside its checksum, and `pad_len`
//! says where its records end). A point read of a cold page then costs the device one 4 KiB
//! read, where an unaligned page costs two half the time. Pages larger than a block (a
//! `page_size` above 4 KiB, or one record larger than a block) start where they fall: they
//! span several blocks anyway, and padding them would waste up to a block each.
pub const MAGIC: &[u8; 8] = b"SPWYLIST";
/// The version this build writes.
pub const VERSION: u32 = 10;
pub const HEADER_LEN: u64 = 16;
pub const TRAILER_LEN: u64 = 48;
pub const CRC_LEN: usize = 4;
/// The device block pages are aligned to (format 5).
pub const BLOCK: u64 = 4096;

/// Padding to put after a page ending at `end`, before a page whose first record and trailer
/// take `first` bytes: up to the next block where the new page would cross into it but fits
/// in one block.
pub fn padding(end: u64, first: usize, page_size: usize) -> usize {
    let room = (BLOCK - end % BLOCK) as usize;
    let fits_here = first <= room || room == BLOCK as usize;
    if page_size as u64 > BLOCK || fits_here || first as u64 > BLOCK {
        0
    } else {
        room
    }
}

/// The most bytes (records and trailer) a page starting at `start` may take, unless its first
/// record alone is larger: the rest of the block, for pages no larger than a block.
pub fn page_limit(start: u64, page_size: usize) -> usize {
    if page_size as u64 > BLOCK {
        page_size
    } else {
        page_size.min((BLOCK - start % BLOCK) as usize)
    }
}

pub fn header() -> [u8; HEADER_LEN as usize] {
    let mut h = [0u8; HEADER_LEN as usize];
    h[..8].copy_from_slice(MAGIC);
    h[8..12].copy_from_slice(&VERSION.to_le_bytes());
    let crc = crc_fast::crc32_iscsi(&h[..12]);
    h[12..16].copy_from_slice(&crc.to_le_bytes());
    h
}

/// What a list file's header says that is not a version this build reads.
#[derive(Debug, PartialEq, Eq)]
pub enum BadHeader {
    /// A sound header of a newer version.
    Newer(u32),
    /// A bad magic number, checksum or reserved word.
    Damaged,
}

/// The version a header of [`HEADER_LEN`] bytes declares, once every field checks out.
pub fn read_header(h: &[u8]) -> Result<u32, BadHeader> {
    let version = u32::from_le_bytes(h[8..12].try_into().unwrap());
    let word = u32::from_le_bytes(h[12..16].try_into().unwrap());
    if &h[..8] != MAGIC {
        return Err(BadHeader::Damaged);
    }
    match version {
        1 if word == 0 => Ok(1),
        0 | 1 => Err(BadHeader::Damaged),
        _ if word != crc_fast::crc32_iscsi(&h[..12]) => Err(BadHeader::Damaged),
        v if v > VERSION => Err(BadHeader::Newer(v)),
        v => Ok(v),
    }
}

/// How the records of a list of format `version` are encoded.
pub fn encoding(version: u32) -> crate::record::Encoding {
    if version >= 4 {
        crate::record::Encoding::Current
    } else {
        crate::record::Encoding::Legacy
    }
}

pub struct Trailer {
    pub page_count: u64,
    pub record_count: u64,
    pub filter_offset: u64,
    pub filter_len: u64,
    pub meta_crc: u32,
}

impl Trailer {
    pub fn encode(&self) -> [u8; TRAILER_LEN as usize] {
        let mut t = [0u8; TRAILER_LEN as usize];
        t[0..8].copy_from_slice(&self.page_count.to_le_bytes());
        t[8..16].copy_from_slice(&self.record_count.to_le_bytes());
        t[16..24].copy_from_slice(&self.filter_offset.to_le_bytes());
        t[24..32].copy_from_slice(&self.filter_len.to_le_bytes());
        t[32..36].copy_from_slice(&self.meta_crc.to_le_bytes());
        let crc = crc_fast::crc32_iscsi(&t[..36]);
        t[36..40].copy_from_slice(&crc.to_le_bytes());
        t[40..48].copy_from_slice(MAGIC);
        t
    }

    pub fn decode(t: &[u8]) -> Result<Trailer, String> {
        if t.len() != TRAILER_LEN as usize || &t[40..48] != MAGIC {
            return Err("no list trailer (truncated or not a list file)".into());
        }
        let u64_at = |i: usize| u64::from_le_bytes(t[i..i + 8].try_into().unwrap());
        let u32_at = |i: usize| u32::from_le_bytes(t[i..i + 4].try_into().unwrap());
        if crc_fast::crc32_iscsi(&t[..36]) != u32_at(36) {
            return Err("trailer checksum mismatch".into());
        }
        Ok(Trailer {
            page_count: u64_at(0),
            record_count: u64_at(8),
            filter_offset: u64_at(16),
            filter_len: u64_at(24),
            meta_crc: u32_at(32),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every checksum on disk is CRC-32C (Castagnoli): its check values, whichever crate
    /// computes it, so that files written by earlier builds still verify. Lengths around the
    /// sizes where a folding implementation changes method are compared with the bitwise
    /// definition.
    #[test]
    fn checksums_are_crc32c() {
        assert_eq!(crc_fast::crc32_iscsi(b""), 0);
        assert_eq!(crc_fast::crc32_iscsi(b"123456789"), 0xe306_9283);
        let bitwise = |data: &[u8]| {
            let mut crc = !0u32;
            for &b in data {
                crc ^= u32::from(b);
                for _ in 0..8 {
                    crc = (crc >> 1) ^ (0x82f6_3b78 & (crc & 1).wrapping_neg());
                }
            }
            !crc
        };
        let data: Vec<u8> = (0..5000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8)
            .collect();
        for len in (0..300).chain([511, 512, 513, 1023, 1024, 4095, 4096, 4097, 5000]) {
            for start in [0, 1, 7] {
                let d = &data[start..(start + len).min(data.len())];
                assert_eq!(
                    crc_fast::crc32_iscsi(d),
                    bitwise(d),
                    "{len} bytes at {start}"
                );
            }
        }
    }

    #[test]
    fn headers_check_every_field() {
        assert_eq!(read_header(&header()), Ok(VERSION));
        let mut v1 = [0u8; 16];
        v1[..8].copy_from_slice(MAGIC);
        v1[8] = 1;
        assert_eq!(read_header(&v1), Ok(1));
        for bit in 0..128 {
            let mut bad = header();
            bad[bit / 8] ^= 1 << (bit % 8);
            assert_eq!(read_header(&bad), Err(BadHeader::Damaged), "bit {bit}");
            let mut bad = v1;
            bad[bit / 8] ^= 1 << (bit % 8);
            assert_eq!(read_header(&bad), Err(BadHeader::Damaged), "v1 bit {bit}");
        }
        let mut newer = header();
        let next = VERSION as u8 + 1;
        newer[8] = next;
        let crc = crc_fast::crc32_iscsi(&newer[..12]);
        newer[12..16].copy_from_slice(&crc.to_le_bytes());
        assert_eq!(read_header(&newer), Err(BadHeader::Newer(u32::from(next))));
    }

    #[test]
    fn pages_stay_inside_blocks() {
        // A 4 KiB page after the header fills the rest of the first block.
        assert_eq!(page_limit(HEADER_LEN, 4096), 4080);
        assert_eq!(page_limit(4096, 4096), 4096);
        assert_eq!(page_limit(4000, 1024), 96);
        assert_eq!(page_limit(4000, 16384), 16384);
        // The next page fits before the block ends: no padding; it does not: pad to the end.
        assert_eq!(padding(4000, 96, 1024), 0);
        assert_eq!(padding(4000, 97, 1024), 96);
        assert_eq!(padding(8192, 4096, 4096), 0);
        // Records larger than a block, and pages larger than one, are not padded for.
        assert_eq!(padding(4000, 4097, 4096), 0);
        assert_eq!(padding(4000, 200, 8192), 0);
    }
}
