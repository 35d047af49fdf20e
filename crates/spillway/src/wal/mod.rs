//! The write-ahead log (WB-tree §3.6): every write is appended here before it is acknowledged,
//! one record per write group, in a new log after each freeze of the root buffer. Recovery
//! replays the logs the tree does not yet hold, up to the first damage a crash or power loss
//! explains (see `recovery`); the bytes are described in `format`.

mod format;
mod free_logs;
mod prefill;
mod recovery;
mod scan;
mod syncer;
mod writer;

pub use format::{Bad, HEADER_LEN, VERSION};
pub use free_logs::FreeLogs;
pub use recovery::{recover, Expect, Recovery};
pub use syncer::Syncer;
pub use writer::LogWriter;

#[cfg(test)]
mod tests {
    use crate::files::log_name;
    use std::path::Path;
    use std::sync::Arc;

    use super::format::{Bad, FRAME_LEN, HEADER_LEN};
    use super::*;
    use crate::error::{Error, Result};

    /// Log `number` of `dir` with `payloads`, synced after those marked `true`; its bytes up
    /// to the end of its records. Past them the file holds the zeros of the space its map
    /// set aside (and of the prefill): the tests below damage the records, and keep them as
    /// the file's end.
    fn write_log(dir: &Path, number: u64, payloads: &[(&[u8], bool)]) -> Vec<u8> {
        let mut w = LogWriter::create(dir, number, Arc::default()).unwrap();
        for &(p, sync) in payloads {
            w.add_record(p).unwrap();
            if sync {
                w.sync().unwrap();
            }
        }
        let path = dir.join(log_name(number));
        let mut bytes = std::fs::read(&path).unwrap();
        assert!(bytes[w.end() as usize..].iter().all(|&b| b == 0));
        bytes.truncate(w.end() as usize);
        drop(w);
        std::fs::write(&path, &bytes).unwrap();
        bytes
    }

    fn replay(dir: &Path, numbers: &[u64]) -> Result<(Vec<Vec<u8>>, Recovery)> {
        replay_expecting(dir, numbers, &Expect::default())
    }

    fn replay_expecting(
        dir: &Path,
        numbers: &[u64],
        expect: &Expect,
    ) -> Result<(Vec<Vec<u8>>, Recovery)> {
        let mut got = Vec::new();
        let r = recover(dir, numbers, expect, |_, _, p: &[u8]| {
            got.push(p.to_vec());
            Ok(())
        })?;
        Ok((got, r))
    }

    fn set(dir: &Path, number: u64, bytes: &[u8]) {
        std::fs::write(dir.join(log_name(number)), bytes).unwrap();
    }

    #[test]
    fn every_truncation_is_a_torn_tail_keeping_whole_records() {
        let dir = tempfile::tempdir().unwrap();
        let recs: [(&[u8], bool); 3] =
            [(b"first", false), (b"second record", false), (b"3", false)];
        let full = write_log(dir.path(), 1, &recs);
        let mut ends = vec![HEADER_LEN];
        for (p, _) in recs {
            ends.push(ends.last().unwrap() + FRAME_LEN + p.len());
        }
        assert_eq!(*ends.last().unwrap(), full.len());
        for cut in 0..=full.len() {
            set(dir.path(), 1, &full[..cut]);
            let (got, r) = replay(dir.path(), &[1]).unwrap();
            let whole = ends.iter().filter(|&&e| e <= cut).count().saturating_sub(1);
            assert_eq!(got.len(), whole, "cut at {cut}");
            let torn = r.cut.as_ref().filter(|c| c.is_torn_tail());
            assert_eq!(
                torn.is_some(),
                !ends[1..].contains(&cut) && cut != HEADER_LEN,
                "cut at {cut}"
            );
            assert_eq!(
                r.kept[0].valid_len as usize,
                if cut < HEADER_LEN { 0 } else { ends[whole] }
            );
        }
    }

    #[test]
    fn damage_that_a_later_record_says_was_synced_is_corruption() {
        let dir = tempfile::tempdir().unwrap();
        // Synced after the second record: the third says the first two were durable.
        let full = write_log(
            dir.path(),
            1,
            &[(b"first", false), (b"second", true), (b"third", false)],
        );
        let second = HEADER_LEN + FRAME_LEN + 5;
        for at in [
            HEADER_LEN + 2,
            HEADER_LEN + FRAME_LEN + 1,
            second + 5,
            second + FRAME_LEN + 1,
        ] {
            let mut bad = full.clone();
            bad[at] ^= 1;
            set(dir.path(), 1, &bad);
            assert!(
                matches!(replay(dir.path(), &[1]), Err(Error::Corruption { .. })),
                "flip at {at}"
            );
        }
        // The third record was never synced: damage to it is a torn tail.
        let mut bad = full.clone();
        let n = bad.len();
        bad[n - 1] ^= 1;
        set(dir.path(), 1, &bad);
        let (got, r) = replay(dir.path(), &[1]).unwrap();
        assert_eq!(got, [b"first".to_vec(), b"second".to_vec()]);
        assert!(r.cut.unwrap().is_torn_tail());
    }

    #[test]
    fn a_seal_vouches_for_every_record_before_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = LogWriter::create(dir.path(), 1, Arc::default()).unwrap();
        for p in [&b"first"[..], b"second", b"third"] {
            w.add_record(p).unwrap();
        }
        w.seal().unwrap();
        w.seal().unwrap(); // nothing new to vouch for: nothing added
        let full = std::fs::read(dir.path().join(log_name(1))).unwrap();
        assert_eq!(full.len(), HEADER_LEN + 3 * FRAME_LEN + 16 + FRAME_LEN);
        let (got, r) = replay(dir.path(), &[1]).unwrap();
        assert_eq!((got.len(), r.kept[0].sealed, r.records), (3, true, 3));
        // Damage to the last real record: the seal says it was synced.
        let mut bad = full.clone();
        bad[full.len() - FRAME_LEN - 1] ^= 1;
        set(dir.path(), 1, &bad);
        assert!(matches!(
            replay(dir.path(), &[1]),
            Err(Error::Corruption { .. })
        ));
    }

    #[test]
    fn a_hole_before_records_never_synced_is_a_power_loss_and_is_cut() {
        let dir = tempfile::tempdir().unwrap();
        let full = write_log(
            dir.path(),
            1,
            &[(b"first", true), (b"second", false), (b"third", false)],
        );
        let second = HEADER_LEN + FRAME_LEN + 5;
        // The OS wrote the third record's page, not the second's.
        let mut holed = full.clone();
        holed[second..second + FRAME_LEN + 6].fill(0);
        set(dir.path(), 1, &holed);
        let (got, r) = replay(dir.path(), &[1]).unwrap();
        assert_eq!(got, [b"first".to_vec()]);
        let cut = r.cut.unwrap();
        assert_eq!((cut.at as usize, cut.records_dropped), (second, 1));
        assert_eq!(r.kept[0].valid_len as usize, second);
        // Zeros after the last record (space allocated, never written) are a torn tail.
        let mut zeros = full.clone();
        zeros.extend_from_slice(&[0; 100]);
        set(dir.path(), 1, &zeros);
        let (got, r) = replay(dir.path(), &[1]).unwrap();
        assert_eq!(got.len(), 3);
        assert!(r.cut.unwrap().is_torn_tail());
    }

    #[test]
    fn a_damaged_older_log_drops_later_logs_unless_one_was_synced() {
        let dir = tempfile::tempdir().unwrap();
        let older = write_log(dir.path(), 1, &[(b"a", true), (b"b", false)]);
        write_log(dir.path(), 2, &[(b"c", false), (b"d", false)]);
        // The older log's unsynced tail was lost; the later log's pages survived.
        set(dir.path(), 1, &older[..older.len() - 3]);
        let (got, r) = replay(dir.path(), &[1, 2]).unwrap();
        assert_eq!(got, [b"a".to_vec()]);
        assert_eq!(r.dropped_logs, [2]);
        assert_eq!(r.cut.unwrap().records_dropped, 2);
        // A synced record in the later log means the older one was durable whole.
        std::fs::remove_file(dir.path().join(log_name(2))).unwrap();
        write_log(dir.path(), 2, &[(b"c", true), (b"d", false)]);
        assert!(matches!(
            replay(dir.path(), &[1, 2]),
            Err(Error::Corruption { .. })
        ));
        // An older log whose header never reached the disk lost whatever it held.
        set(dir.path(), 1, &[]);
        std::fs::remove_file(dir.path().join(log_name(2))).unwrap();
        write_log(dir.path(), 2, &[(b"c", false)]);
        let (got, r) = replay(dir.path(), &[1, 2]).unwrap();
        assert!(got.is_empty());
        assert_eq!(
            (r.kept[0].version, r.dropped_logs.as_slice()),
            (None, &[2][..])
        );
    }

    #[test]
    fn version_1_logs_are_read_with_version_1_rules() {
        let dir = tempfile::tempdir().unwrap();
        let mut v1 = b"SPWYLOG\0".to_vec();
        v1.extend_from_slice(&1u32.to_le_bytes());
        v1.extend_from_slice(&[0; 4]);
        for p in [&b"old"[..], b"older"] {
            let len = (p.len() as u32).to_le_bytes();
            v1.extend_from_slice(&crc_fast::crc32_iscsi(p).to_le_bytes());
            v1.extend_from_slice(&len);
            v1.extend_from_slice(&crc_fast::crc32_iscsi(&len).to_le_bytes());
            v1.extend_from_slice(p);
        }
        set(dir.path(), 1, &v1);
        let (got, r) = replay(dir.path(), &[1]).unwrap();
        assert_eq!(got, [b"old".to_vec(), b"older".to_vec()]);
        assert_eq!(r.kept[0].version, Some(1));
        // Version 1 made no claims: any valid record after damage counts as proof.
        v1[HEADER_LEN + 12] ^= 1;
        set(dir.path(), 1, &v1);
        assert!(matches!(
            replay(dir.path(), &[1]),
            Err(Error::Corruption { .. })
        ));
    }

    #[test]
    fn damaged_headers_are_corruption_and_newer_ones_refused() {
        let dir = tempfile::tempdir().unwrap();
        let corrupt = |bytes: &[u8], what: &str| {
            set(dir.path(), 1, bytes);
            assert!(
                matches!(replay(dir.path(), &[1]), Err(Error::Corruption { .. })),
                "{what}"
            );
        };
        corrupt(b"this is not a log file at all", "foreign bytes");
        std::fs::remove_file(dir.path().join(log_name(1))).unwrap();
        let full = write_log(dir.path(), 1, &[(b"first", true), (b"second", false)]);
        // Every bit of the header counts: magic, version, checksum.
        for bit in 0..HEADER_LEN * 8 {
            let mut bad = full.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            corrupt(&bad, &format!("header bit {bit} flipped"));
        }
        // A version-3 header whose version reads 1 or 2 is not read under their rules.
        for old in [1u32, 2] {
            let mut bad = full.clone();
            bad[8..12].copy_from_slice(&old.to_le_bytes());
            corrupt(&bad, &format!("version {old} written over version 3"));
        }
        // Old headers' reserved word is zero; anything else is damage.
        let mut v2 = full.clone();
        v2[8..16].copy_from_slice(&[2, 0, 0, 0, 0, 0, 1, 0]);
        corrupt(&v2, "reserved bytes of a version-2 header");

        let mut newer = format::header();
        newer[8..12].copy_from_slice(&(format::VERSION + 1).to_le_bytes());
        let crc = crc_fast::crc32_iscsi(&newer[..12]);
        newer[12..16].copy_from_slice(&crc.to_le_bytes());
        set(dir.path(), 1, &newer);
        assert!(matches!(
            replay(dir.path(), &[1]),
            Err(Error::UnsupportedVersion { .. })
        ));
    }

    /// Logs 1 and 2, the first linked to the second as a freeze leaves them.
    fn linked_logs(dir: &Path) -> (Vec<u8>, Vec<u8>) {
        let mut w = LogWriter::create(dir, 1, Arc::default()).unwrap();
        w.add_record(b"in one").unwrap();
        let mut next = LogWriter::create(dir, 2, Arc::default()).unwrap();
        w.link(2).unwrap();
        w.sync().unwrap();
        next.add_record(b"in two").unwrap();
        let read = |n| std::fs::read(dir.join(log_name(n))).unwrap();
        (read(1), read(2))
    }

    #[test]
    fn a_log_deleted_from_the_folder_is_corruption_not_an_empty_log() {
        let dir = tempfile::tempdir().unwrap();
        let (_, two) = linked_logs(dir.path());
        let expect = Expect {
            first: Some(1),
            sealed: None,
        };
        let (got, r) = replay_expecting(dir.path(), &[1, 2], &expect).unwrap();
        assert_eq!(got, [b"in one".to_vec(), b"in two".to_vec()]);
        assert_eq!(r.records, 2);
        // The log a link names.
        std::fs::remove_file(dir.path().join(log_name(2))).unwrap();
        let e = replay_expecting(dir.path(), &[1], &expect).unwrap_err();
        assert!(e.to_string().contains("0000000002.log"), "{e}");
        // The log the manifest says recovery starts in.
        set(dir.path(), 2, &two);
        std::fs::remove_file(dir.path().join(log_name(1))).unwrap();
        assert!(matches!(
            replay_expecting(dir.path(), &[2], &expect),
            Err(Error::Corruption { .. })
        ));
        // A manifest of an older version promised nothing.
        assert!(replay(dir.path(), &[2]).is_ok());
    }

    #[test]
    fn past_a_link_old_bytes_end_the_log_but_a_record_of_its_own_drops_the_link() {
        let dir = tempfile::tempdir().unwrap();
        let (linked, _) = linked_logs(dir.path());
        // Bytes that are no record of this log: what a recycled file holds past its records.
        let mut one = linked.clone();
        one.extend_from_slice(b"garbage past the link");
        set(dir.path(), 1, &one);
        let (got, r) = replay(dir.path(), &[1, 2]).unwrap();
        assert_eq!(got, [b"in one".to_vec(), b"in two".to_vec()]);
        assert!(r.dropped_logs.is_empty() && r.cut.is_none());
        // A record of this log past damage past its link, which no writer puts there.
        let mut one = linked.clone();
        one.extend_from_slice(b"garbage");
        // (Written unsynced: it vouches for none of the log.)
        let at = one.len() as u64;
        one.extend_from_slice(&format::frame(1, format::Kind::Writes, b"after", at));
        one.extend_from_slice(b"after");
        set(dir.path(), 1, &one);
        let (got, r) = replay(dir.path(), &[1, 2]).unwrap();
        assert_eq!(got, [b"in one".to_vec()]);
        assert_eq!(r.dropped_logs, [2]);
        let link_start = linked.len() - FRAME_LEN - 8;
        assert_eq!(r.kept[0].valid_len as usize, link_start);
    }

    #[test]
    fn a_log_that_writes_moved_on_from_without_its_link_lost_its_tail() {
        let dir = tempfile::tempdir().unwrap();
        let (one, two) = linked_logs(dir.path());
        // Cut back to its records before the link, as a power loss cuts a file back to the
        // length it was synced at: whole, but not where the writes ended.
        let link_start = one.len() - FRAME_LEN - 8;
        set(dir.path(), 1, &one[..link_start]);
        let (got, r) = replay(dir.path(), &[1, 2]).unwrap();
        assert_eq!(got, [b"in one".to_vec()]);
        assert_eq!(r.dropped_logs, [2]);
        let cut = r.cut.unwrap();
        assert_eq!((cut.bad, cut.at as usize), (Bad::Unlinked, link_start));
        assert_eq!(cut.records_dropped, 1);
        // The newest log needs no link.
        let (got, r) = replay(dir.path(), &[1]).unwrap();
        assert_eq!((got.len(), r.cut.is_none()), (1, true));
        // A later log that was synced says the link was durable: corruption.
        let mut w =
            LogWriter::reopen(dir.path(), 2, two.len() as u64, false, Arc::default()).unwrap();
        w.add_record(b"synced").unwrap();
        w.sync().unwrap();
        w.add_record(b"vouching").unwrap();
        drop(w);
        assert!(matches!(
            replay(dir.path(), &[1, 2]),
            Err(Error::Corruption { .. })
        ));
    }

    /// Log `old` with `records` records, synced and retired to the free file `free`.
    fn retired_log(dir: &Path, old: u64, records: usize) -> std::path::PathBuf {
        let mut w = LogWriter::create(dir, old, Arc::default()).unwrap();
        for i in 0..records {
            w.add_record(format!("old record {i:04} of log {old}").as_bytes())
                .unwrap();
        }
        w.sync().unwrap();
        drop(w);
        let free = dir.join(crate::files::free_log_name(old));
        std::fs::rename(dir.join(log_name(old)), &free).unwrap();
        free
    }

    #[test]
    fn a_log_written_over_a_retired_one_ends_where_its_own_records_do() {
        let dir = tempfile::tempdir().unwrap();
        let free = retired_log(dir.path(), 1, 300);
        let old_len = std::fs::metadata(&free).unwrap().len();
        let mut w = LogWriter::recycle(dir.path(), &free, 7, Arc::default()).unwrap();
        assert!(!free.exists());
        for p in [&b"new one"[..], b"new two"] {
            w.add_record(p).unwrap();
        }
        w.sync().unwrap();
        let end = w.end();
        drop(w);
        // The old records are still there past the new ones, whole.
        let bytes = std::fs::read(dir.path().join(log_name(7))).unwrap();
        assert!(bytes.len() as u64 >= old_len && old_len > end + 1000);
        let (got, r) = replay(dir.path(), &[7]).unwrap();
        assert_eq!(got, [b"new one".to_vec(), b"new two".to_vec()]);
        let cut = r.cut.unwrap();
        assert_eq!(cut.at, end);
        assert!(
            cut.is_torn_tail(),
            "{cut:?}: the old records are not this log's"
        );
        assert_eq!(r.kept[0].valid_len, end);

        // Linked on, the same log loses nothing after it.
        let free = retired_log(dir.path(), 2, 300);
        let mut w = LogWriter::recycle(dir.path(), &free, 8, Arc::default()).unwrap();
        w.add_record(b"in eight").unwrap();
        let mut next = LogWriter::create(dir.path(), 9, Arc::default()).unwrap();
        w.link(9).unwrap();
        w.sync().unwrap();
        let end8 = w.end() as usize;
        next.add_record(b"in nine").unwrap();
        next.sync().unwrap();
        // The link cut the old records off; as if that cut had not reached the disk: its
        // records, then the old ones. (Not the file as read, then the old ones past it: zeros
        // a prefill thread wrote ahead may make it longer than the old log was.)
        let mut eight = std::fs::read(dir.path().join(log_name(8))).unwrap();
        let was = std::fs::read(retired_log(dir.path(), 3, 300)).unwrap();
        assert!(end8 < was.len());
        eight.truncate(end8);
        eight.extend_from_slice(&was[end8..]);
        set(dir.path(), 8, &eight);
        let (got, r) = replay(dir.path(), &[8, 9]).unwrap();
        assert_eq!(got, [b"in eight".to_vec(), b"in nine".to_vec()]);
        assert!(r.dropped_logs.is_empty());
    }

    #[test]
    fn damage_in_a_recycled_log_that_a_later_record_vouches_for_is_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let free = retired_log(dir.path(), 1, 300);
        let was = std::fs::read(&free).unwrap();
        let mut w = LogWriter::recycle(dir.path(), &free, 5, Arc::default()).unwrap();
        w.add_record(b"first").unwrap();
        w.add_record(b"second").unwrap();
        w.sync().unwrap();
        w.add_record(b"third").unwrap();
        let end = w.end() as usize;
        drop(w);
        let path = dir.path().join(log_name(5));
        let full = std::fs::read(&path).unwrap();
        // The first record damaged: the third says it was synced.
        let mut bad = full.clone();
        bad[HEADER_LEN + FRAME_LEN + 1] ^= 1;
        set(dir.path(), 5, &bad);
        assert!(matches!(
            replay(dir.path(), &[5]),
            Err(Error::Corruption { .. })
        ));
        // The third never synced, lost as a power loss loses it: the old bytes show through.
        let third = end - FRAME_LEN - 5;
        let mut lost = full.clone();
        lost[third..end].copy_from_slice(&was[third..end]);
        set(dir.path(), 5, &lost);
        let (got, r) = replay(dir.path(), &[5]).unwrap();
        assert_eq!(got, [b"first".to_vec(), b"second".to_vec()]);
        assert!(r.cut.unwrap().is_torn_tail());
    }

    #[test]
    fn a_log_a_clean_close_sealed_is_whole_up_to_its_seal() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = LogWriter::create(dir.path(), 1, Arc::default()).unwrap();
        w.add_record(b"first").unwrap();
        w.add_record(b"second").unwrap();
        w.seal().unwrap();
        let sealed_len = w.end();
        let full = std::fs::read(dir.path().join(log_name(1))).unwrap();
        let expect = Expect {
            first: Some(1),
            sealed: Some((1, sealed_len)),
        };
        assert_eq!(
            replay_expecting(dir.path(), &[1], &expect).unwrap().0.len(),
            2
        );
        // Every bit of every record, the seal's included: corruption, never a torn tail.
        for bit in HEADER_LEN * 8..full.len() * 8 {
            let mut bad = full.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            set(dir.path(), 1, &bad);
            assert!(
                matches!(
                    replay_expecting(dir.path(), &[1], &expect),
                    Err(Error::Corruption { .. })
                ),
                "bit {bit}"
            );
        }
        // Cut short, or missing.
        set(dir.path(), 1, &full[..full.len() - 1]);
        assert!(replay_expecting(dir.path(), &[1], &expect).is_err());
        std::fs::remove_file(dir.path().join(log_name(1))).unwrap();
        assert!(replay_expecting(dir.path(), &[], &expect).is_err());
        // Records after the seal (a later session's) follow the usual rules.
        let mut more = full.clone();
        more.extend_from_slice(&format::frame(1, format::Kind::Writes, b"later", 0));
        more.extend_from_slice(b"lat");
        set(dir.path(), 1, &more);
        let (got, r) = replay_expecting(dir.path(), &[1], &expect).unwrap();
        assert_eq!(got.len(), 2);
        assert!(r.cut.unwrap().is_torn_tail());
    }

    #[test]
    fn a_synced_log_keeps_zeros_ahead_that_recovery_reads_as_its_end() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(log_name(1));
        let mut w = LogWriter::create(dir.path(), 1, Arc::default()).unwrap();
        w.add_record(b"unsynced: no zeros yet").unwrap();
        // Space set aside by the map, but no zeros written and synced.
        assert!(!w.would_overwrite(100));
        w.sync().unwrap();
        // Past the gap left at the first sync, appends overwrite synced zeros.
        let big = vec![7u8; 100 << 10];
        w.add_record(&big).unwrap();
        assert!(w.would_overwrite(1000));
        let on_disk = std::fs::read(&path).unwrap();
        let end = w.end() as usize;
        assert!(on_disk.len() >= end + prefill::AHEAD as usize);
        assert!(on_disk[end..].iter().all(|&b| b == 0));
        // Recovery: every record, then zeros to the end (a crash leaves the log so).
        let (got, r) = replay(dir.path(), &[1]).unwrap();
        assert_eq!(got.len(), 2);
        let cut = r.cut.unwrap();
        assert_eq!((cut.bad, cut.at as usize), (Bad::Unwritten, end));
        assert!(cut.is_torn_tail());
        assert_eq!(r.kept[0].valid_len as usize, end);
        // A record torn mid-append, zeros after it: torn, not unwritten.
        w.add_record(b"the last").unwrap();
        let mut torn = std::fs::read(&path).unwrap();
        torn[end + 5] ^= 1; // its length
        set(dir.path(), 1, &torn);
        let (got, r) = replay(dir.path(), &[1]).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(r.cut.unwrap().bad, Bad::FrameChecksum);
        set(dir.path(), 1, &on_disk);
        drop(w);
    }

    #[test]
    fn a_recycled_log_writes_zeros_only_past_the_blocks_of_the_old_one() {
        let dir = tempfile::tempdir().unwrap();
        // An old log longer than the zeros a new one keeps ahead.
        let mut w = LogWriter::create(dir.path(), 1, Arc::default()).unwrap();
        for _ in 0..100 {
            w.add_record(&[1u8; 64 << 10]).unwrap();
        }
        w.sync().unwrap();
        drop(w);
        let free = dir.path().join(crate::files::free_log_name(1));
        std::fs::rename(dir.path().join(log_name(1)), &free).unwrap();
        let old_len = std::fs::metadata(&free).unwrap().len();
        assert!(old_len > prefill::AHEAD + (1 << 20));
        let counters = Arc::new(crate::stats::Counters::default());
        let mut w = LogWriter::recycle(dir.path(), &free, 2, counters.clone()).unwrap();
        w.add_record(b"first").unwrap();
        w.sync().unwrap();
        // Synced often, well inside the old log: its blocks serve as zeros do.
        for _ in 0..10 {
            w.add_record(&[9u8; 1000]).unwrap();
            w.sync().unwrap();
            assert!(w.would_overwrite(1000));
        }
        assert_eq!(
            counters
                .log_zero_bytes
                .load(std::sync::atomic::Ordering::Relaxed),
            0
        );
        // Past them, zeros go ahead as for a new log.
        let big = vec![7u8; old_len as usize];
        w.add_record(&big).unwrap();
        w.sync().unwrap();
        assert!(w.would_overwrite(1000));
        assert!(
            counters
                .log_zero_bytes
                .load(std::sync::atomic::Ordering::Relaxed)
                > 0
        );
        let (got, r) = replay(dir.path(), &[2]).unwrap();
        assert_eq!(got.len(), 12);
        assert!(r.cut.unwrap().is_torn_tail());
        drop(w);
    }

    #[test]
    fn a_log_synced_rarely_keeps_no_zeros_until_syncs_come_often() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = LogWriter::create(dir.path(), 1, Arc::default()).unwrap();
        let big = vec![5u8; prefill::SYNCED_OFTEN as usize];
        // A sync after a megabyte or more: no zeros (an `everysec` server's log).
        let past_the_gap = vec![4u8; 100 << 10];
        w.add_record(&big).unwrap();
        w.sync().unwrap();
        w.add_record(&big).unwrap();
        w.sync().unwrap();
        w.add_record(&past_the_gap).unwrap();
        assert!(!w.would_overwrite(10));
        // The same through a sync point, as `Db::sync` syncs (off the writer's lock).
        w.add_record(&big).unwrap();
        let point = w.sync_point().unwrap();
        point.sync().unwrap();
        w.synced(&point);
        w.add_record(&past_the_gap).unwrap();
        assert!(!w.would_overwrite(10));
        // Then a sync soon after: the zeros start.
        w.add_record(b"small").unwrap();
        let point = w.sync_point().unwrap();
        point.sync().unwrap();
        w.synced(&point);
        w.add_record(&vec![6u8; 100 << 10]).unwrap();
        assert!(w.would_overwrite(10));
        let (got, _) = replay(dir.path(), &[1]).unwrap();
        assert_eq!(got.len(), 7);
    }

    #[test]
    fn a_log_that_moved_on_keeps_its_zeros_for_the_next_and_a_sealed_one_none() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = LogWriter::create(dir.path(), 1, Arc::default()).unwrap();
        w.add_record(b"first").unwrap();
        w.sync().unwrap();
        w.add_record(&vec![1u8; 100 << 10]).unwrap();
        assert!(w.would_overwrite(10));
        let mut next = LogWriter::create(dir.path(), 2, Arc::default()).unwrap();
        w.link(2).unwrap();
        // The zeros written stay, for a log written over this file; the map's space goes.
        let one = dir.path().join(log_name(1));
        let bytes = std::fs::read(&one).unwrap();
        let end = w.end() as usize;
        assert!(
            bytes.len() >= end + prefill::AHEAD as usize / 2,
            "{}",
            bytes.len()
        );
        assert!(bytes.len() < end + prefill::AHEAD as usize + 2 * prefill::CHUNK as usize);
        assert!(bytes[end..].iter().all(|&b| b == 0));
        next.add_record(b"in two").unwrap();
        next.sync().unwrap();
        next.add_record(&vec![2u8; 100 << 10]).unwrap();
        assert!(next.would_overwrite(10));
        // Zeros past a link are no damage.
        let (got, r) = replay(dir.path(), &[1, 2]).unwrap();
        assert_eq!(got.len(), 4);
        assert!(r.dropped_logs.is_empty());
        assert_eq!(r.cut.unwrap().bad, Bad::Unwritten); // log 2's zeros ahead
                                                        // A seal ends the zeros too.
        next.seal().unwrap();
        let two = dir.path().join(log_name(2));
        assert_eq!(std::fs::metadata(&two).unwrap().len(), next.end());
        let (got, r) = replay(dir.path(), &[1, 2]).unwrap();
        assert_eq!((got.len(), r.kept[1].sealed), (4, true));
        assert!(r.cut.is_none());
    }

    #[test]
    fn records_after_damage_are_found_past_runs_of_zeros() {
        let dir = tempfile::tempdir().unwrap();
        // The third record says the first two were synced.
        let full = write_log(
            dir.path(),
            1,
            &[(b"first", false), (b"second", true), (b"third", false)],
        );
        let third = HEADER_LEN + 2 * FRAME_LEN + 5 + 6;
        for zeros in [1, 2, 14, 15, 16, 17, 31, 4096, 100_000] {
            let mut bad = full[..third].to_vec();
            bad.extend(std::iter::repeat_n(0, zeros));
            bad.extend_from_slice(&full[third..]);
            bad[HEADER_LEN + FRAME_LEN + 1] ^= 1; // damage the first record
            set(dir.path(), 1, &bad);
            assert!(
                matches!(replay(dir.path(), &[1]), Err(Error::Corruption { .. })),
                "{zeros} zeros before the record that vouches"
            );
        }
    }

    /// Bytes this thread has dirtied for the device, where the kernel counts them.
    fn thread_write_bytes() -> Option<u64> {
        let text = std::fs::read_to_string("/proc/thread-self/io").ok()?;
        let line = text.lines().find_map(|l| l.strip_prefix("write_bytes:"))?;
        line.trim().parse().ok()
    }

    #[test]
    fn a_small_synced_append_over_zeros_dirties_a_page_not_a_chunk() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = LogWriter::create(dir.path(), 1, Arc::default()).unwrap();
        w.add_record(b"first").unwrap();
        w.sync().unwrap();
        w.add_record(&vec![3u8; 100 << 10]).unwrap();
        w.sync().unwrap();
        assert!(w.would_overwrite(200 * 200));
        let Some(before) = thread_write_bytes() else {
            return; // no per-task I/O accounting in this kernel
        };
        let appends = 200;
        for _ in 0..appends {
            w.add_record(&[9u8; 150]).unwrap();
            w.sync().unwrap();
        }
        let per_append = (thread_write_bytes().unwrap() - before) / appends;
        assert!(per_append <= 2 * 4096, "{per_append} bytes per append");
    }
}
