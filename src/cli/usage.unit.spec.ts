import { describe, expect, it } from 'vitest';
import { allProjections } from '../projections';
import { PROJECTION_NAMES, USAGE, usageOf } from './usage';

describe('the usage text', () => {
  it('names every projection (kept as text so that --help imports none of them)', () => {
    expect(PROJECTION_NAMES).toEqual(allProjections.map((p) => p.name));
  });

  it("gives a command's own lines, with the lines indented under it", () => {
    expect(usageOf(['accounts', 'limits'])).toBe('Usage: gateway accounts limits ID [--rpm N|none] [--concurrency N|none]   (a limit not given keeps its value)');
    const update = usageOf(['keys', 'update'])!.split('\n');
    expect(update).toHaveLength(2);
    expect(update[1]).toContain('[--group GROUP|none]');
    expect(usageOf(['ledger', 'verify'])!.split('\n')).toHaveLength(2);
  });

  it("gives a group's commands for the group alone or an unknown action, nothing for an unknown group", () => {
    const channels = usageOf(['channels'])!.split('\n');
    expect(channels.map((line) => line.replace(/^Usage:/, '').trim().split(/\s+/).slice(1, 3).join(' '))).toEqual(['channels list', 'channels disable', 'channels enable', 'channels probe']);
    expect(usageOf(['channels', 'zap'])).toBe(usageOf(['channels']));
    expect(usageOf(['nope'])).toBeNull();
  });

  it('lists every command once in the whole page', () => {
    expect(USAGE).toContain('  config reload ');
    expect(USAGE.split('\n').length).toBeLessThan(80);
  });
});
