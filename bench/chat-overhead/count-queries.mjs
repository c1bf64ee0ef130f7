// Preloaded into a gateway (`node --import ./bench/chat-overhead/count-queries.mjs bin/gateway.mjs serve`)
// for the benchmark's query-count pass only, never for the timed runs: counts every statement
// the `pg` driver sends, by normalised SQL text. SIGUSR2 writes the counts to $COUNT_QUERIES_FILE.
import { createRequire } from 'node:module';
import { writeFileSync } from 'node:fs';

const require = createRequire(new URL('../../package.json', import.meta.url));
const pg = require('pg');
const counts = new Map();
const original = pg.Client.prototype.query;
pg.Client.prototype.query = function query(config, ...rest) {
  const text = typeof config === 'string' ? config : (config && config.text) || '';
  const key = text.replace(/\s+/g, ' ').trim().slice(0, 110);
  counts.set(key, (counts.get(key) ?? 0) + 1);
  return original.call(this, config, ...rest);
};
process.on('SIGUSR2', () => {
  const file = process.env.COUNT_QUERIES_FILE;
  if (file) writeFileSync(file, JSON.stringify(Object.fromEntries(counts)));
});
