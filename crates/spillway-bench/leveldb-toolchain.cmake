# LevelDB 1.22 (bundled by the leveldb-sys crate) probes for clang's -Wthread-safety in a way
# that GCC passes by mistake (cc-rs adds -w), then fails to compile with the flag. Give the probe
# its true answer for GCC; the flag only enables a static analysis, so code and speed are the same.
set(HAVE_CLANG_THREAD_SAFETY OFF CACHE BOOL "GCC has no -Wthread-safety" FORCE)
