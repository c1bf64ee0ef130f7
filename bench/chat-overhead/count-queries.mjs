// Preloaded into a gateway (`node --import ./bench/chat-overhead/count-queries.mjs bin/gateway.mjs serve`)
// for the benchmark's query-count pass only, never for the timed runs: counts every statement
// the `pg` driver sends, by who sent it (the request path, the projection runner, the hold sweeper;
// told apart by the caller's async stack) and normalised SQL text. SIGUSR2 writes the counts to
// $COUNT_QUERIES_FILE as {"<origin> | <sql>": count}.
import { createRequire } from 'node:module';
import { writeFileSync } from 'node:fs';

const require = createRequire(new URL('../../package.json', import.meta.url));
const pg = require('pg');
const counts = new Map();
const original = pg.Client.prototype.query;
Error.stackTraceLimit = 40;

function origin(stack) {
  if (stack.includes('/src/projections/')) return 'projections';
  if (stack.includes('hold-sweeper')) return 'hold sweeper';
  if (stack.includes('/src/http/') || stack.includes('/src/commands/')) return 'request';
  return 'other';
}

function count(config, stack) {
  const text = typeof config === 'string' ? config : (config && config.text) || '';
  const key = `${origin(stack)} | ${text.replace(/\s+/g, ' ').trim().slice(0, 400)}`;
  counts.set(key, (counts.get(key) ?? 0) + 1);
}

// pool.query() hands its statement to a client later (after acquiring one), when the caller's
// stack is gone: count it at the pool, and at the client only what does not come from the pool.
const originalPoolQuery = pg.Pool.prototype.query;
pg.Pool.prototype.query = function query(config, ...rest) {
  count(config, new Error().stack ?? '');
  return originalPoolQuery.call(this, config, ...rest);
};
pg.Client.prototype.query = function query(config, ...rest) {
  const stack = new Error().stack ?? '';
  if (!stack.includes('/pg-pool/')) count(config, stack);
  return original.call(this, config, ...rest);
};
process.on('SIGUSR2', () => {
  const file = process.env.COUNT_QUERIES_FILE;
  if (file) writeFileSync(file, JSON.stringify(Object.fromEntries(counts)));
});
