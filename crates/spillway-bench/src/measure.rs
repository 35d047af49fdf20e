//! What the operating system says a phase cost: bytes sent to the device, resident memory,
//! space on disk; and turning the page cache cold for honest disk reads.

use std::fs::File;
use std::os::unix::io::AsRawFd;
use std::path::Path;

/// `/proc/self/io` counters: bytes this process caused to be written to and read from the
/// storage layer, background threads of the engines included.
#[derive(Clone, Copy, Debug, Default)]
pub struct DeviceIo {
    pub read_bytes: u64,
    pub write_bytes: u64,
}

impl DeviceIo {
    pub fn now() -> DeviceIo {
        let text = std::fs::read_to_string("/proc/self/io").unwrap_or_default();
        let field = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0)
        };
        DeviceIo {
            read_bytes: field("read_bytes:"),
            write_bytes: field("write_bytes:"),
        }
    }

    pub fn since(self, earlier: DeviceIo) -> DeviceIo {
        DeviceIo {
            read_bytes: self.read_bytes.saturating_sub(earlier.read_bytes),
            write_bytes: self.write_bytes.saturating_sub(earlier.write_bytes),
        }
    }
}

/// CPU time this process has used, every thread included, in seconds.
pub fn cpu_seconds() -> f64 {
    // SAFETY: getrusage only writes the struct it is given.
    let usage = unsafe {
        let mut u = std::mem::zeroed::<libc::rusage>();
        libc::getrusage(libc::RUSAGE_SELF, &mut u);
        u
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

/// Resident set size of this process, in bytes.
pub fn rss_bytes() -> u64 {
    let text = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    text.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// Bytes of all files under `dir`.
pub fn dir_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_bytes(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

/// Drop every file under `dir` from the page cache (after writing back its dirty pages, which
/// `DONTNEED` would otherwise skip), so that the next reads go to the device.
pub fn evict(dir: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            evict(&entry.path())?;
            continue;
        }
        // An engine compacting in the background deletes files while we list them: a file
        // that is gone has nothing left to evict.
        let file = match File::open(entry.path()) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            r => r?,
        };
        file.sync_all()?;
        // SAFETY: a valid open descriptor; the call only advises the kernel.
        let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        if rc != 0 {
            return Err(std::io::Error::from_raw_os_error(rc));
        }
    }
    Ok(())
}

/// Latencies in nanoseconds, from 1 µs resolution up to an hour.
pub struct Latency(hdrhistogram::Histogram<u64>);

impl Default for Latency {
    fn default() -> Self {
        Latency(
            hdrhistogram::Histogram::new_with_bounds(1, 3_600_000_000_000, 3)
                .expect("valid bounds"),
        )
    }
}

impl Latency {
    pub fn record(&mut self, nanos: u64) {
        self.0.saturating_record(nanos.max(1));
    }
    pub fn merge(&mut self, other: &Latency) {
        self.0.add(&other.0).expect("same bounds");
    }
    pub fn quantile(&self, q: f64) -> u64 {
        self.0.value_at_quantile(q)
    }
    pub fn max(&self) -> u64 {
        self.0.max()
    }
    pub fn count(&self) -> u64 {
        self.0.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evict_skips_files_deleted_while_it_runs_and_counts_bytes() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a"), vec![1u8; 10_000]).unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/b"), vec![2u8; 5_000]).unwrap();
        assert_eq!(dir_bytes(dir.path()), 15_000);
        // A compaction deleting files as fast as we evict: the eviction must not fail.
        let stop = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                let mut i = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let p = dir.path().join(format!("t{}", i % 50));
                    let _ = std::fs::write(&p, b"x");
                    let _ = std::fs::remove_file(&p);
                    i += 1;
                }
            });
            for _ in 0..200 {
                evict(dir.path()).unwrap();
            }
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
        });
        assert!(
            evict(&dir.path().join("missing")).is_err(),
            "a missing folder is still an error"
        );
    }
}
