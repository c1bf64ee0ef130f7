/** The gateway's version (package.json's; `gateway --version`, the tracer's resource, the console). */
export const VERSION = '0.1.0';
