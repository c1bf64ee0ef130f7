import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';

/** Debian's chromium (apt `chromium`); CHROMIUM_PATH names another build. The browser tests do not
 * skip when it is missing: CI installs it (.ci/run), and a missing browser is a failure, said plainly. */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export async function launchBrowser(): Promise<Browser> {
  if (!existsSync(CHROMIUM_PATH)) throw new Error(`no browser at ${CHROMIUM_PATH}: install Debian's chromium (apt-get install -y chromium) or set CHROMIUM_PATH`);
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    // Without the background-networking flags chromium keeps calling Google's services (no network here).
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

/** CONSOLE_SCREENSHOTS=docs/console: the test saves each page there (README shows them). */
const SHOTS = process.env.CONSOLE_SCREENSHOTS;

export async function screenshot(page: Page, name: string): Promise<void> {
  if (!SHOTS) return;
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}
