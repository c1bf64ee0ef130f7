// Kept apart from upload-budget.ts so that reading the settings (the CLI does) loads no HTTP code.

/** The default of UPLOAD_SPOOL_LIMIT_MB. */
export const DEFAULT_UPLOAD_SPOOL_LIMIT_MB = 1024;
