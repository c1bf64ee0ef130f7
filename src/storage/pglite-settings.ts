// Kept apart from sql.ts so that reading the settings (the CLI does) loads no database driver.

/**
 * The embedded database's buffer pool. PGlite starts Postgres with its default of 128 MB, and the pages
 * it fills stay in the WASM heap, which never shrinks: measured on a gateway restarted on its data
 * directory, 128 MB gave 346 MB resident, 32 MB 216 MB, 16 MB 184 MB (docs/operations.md, "Memory").
 * Pages past the pool are read through the operating system's file cache, which the kernel can
 * reclaim. 32 MB holds the hot rows of a demo or a small team's ledger.
 */
export const DEFAULT_PGLITE_SHARED_BUFFERS_MB = 32;
