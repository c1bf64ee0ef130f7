import { describe, expect, it } from 'vitest';
import { SessionPins, type PinOutcome } from './session-pins';
import { Router } from './routing';
import type { GatewayConfig } from '../config/schema';

describe('SessionPins: a conversation pinned to the channel that served it', () => {
  it('counts new, hit and moved, and re-pins to the channel that answered', () => {
    const told: PinOutcome[] = [];
    const pins = new SessionPins({ onOutcome: (o) => told.push(o) });
    expect(pins.pinned('acc', 'm', 's1')).toBeNull();
    expect(pins.served('acc', 'm', 's1', 'a')).toBe('new');
    expect(pins.pinned('acc', 'm', 's1')).toBe('a');
    expect(pins.served('acc', 'm', 's1', 'a')).toBe('hit');
    expect(pins.served('acc', 'm', 's1', 'b')).toBe('moved');
    expect(pins.pinned('acc', 'm', 's1')).toBe('b');
    expect(told).toEqual(['new', 'hit', 'moved']);
  });

  it('is scoped per account and per model: the same session id elsewhere is another pin', () => {
    const pins = new SessionPins();
    pins.served('tenant-a', 'm', 'shared-session', 'a');
    expect(pins.pinned('tenant-b', 'm', 'shared-session')).toBeNull();
    expect(pins.pinned('tenant-a', 'other-model', 'shared-session')).toBeNull();
    expect(pins.served('tenant-b', 'm', 'shared-session', 'b')).toBe('new');
    expect(pins.pinned('tenant-a', 'm', 'shared-session')).toBe('a');
  });

  it('forgets a pin idle for longer than its expiry; each use extends it', () => {
    let now = 0;
    const pins = new SessionPins({ idleMs: 1000, now: () => now });
    pins.served('acc', 'm', 's', 'a');
    now = 900;
    expect(pins.served('acc', 'm', 's', 'a')).toBe('hit');
    now = 1800;
    expect(pins.pinned('acc', 'm', 's')).toBe('a');
    now = 2000;
    expect(pins.pinned('acc', 'm', 's')).toBeNull();
    expect(pins.size).toBe(0);
    expect(pins.served('acc', 'm', 's', 'b')).toBe('new');
  });

  it('holds at most maxEntries pins, the least recently used going first', () => {
    const pins = new SessionPins({ maxEntries: 3 });
    for (const s of ['s1', 's2', 's3']) pins.served('acc', 'm', s, 'a');
    pins.served('acc', 'm', 's1', 'a');
    pins.served('acc', 'm', 's4', 'a');
    expect(pins.size).toBe(3);
    expect(pins.pinned('acc', 'm', 's2')).toBeNull();
    expect(['s1', 's3', 's4'].map((s) => pins.pinned('acc', 'm', s))).toEqual(['a', 'a', 'a']);
    for (let i = 0; i < 1000; i++) pins.served('acc', 'm', `flood-${i}`, 'a');
    expect(pins.size).toBe(3);
  });
});

describe('Router.routes with a preferred channel', () => {
  const channel = (id: string, priority: number, weight = 1) => ({ id, protocol: 'chat-completions', base_url: 'http://x', api_key: 'k', group: 'default', priority, weight, models: ['m'], tools: [] });
  const config = { models: [], channels: [channel('a', 0, 100), channel('b', 0, 1), channel('c', 0, 1), channel('d', 0, 1), channel('low', 1)] } as unknown as GatewayConfig;

  it('puts it first among its priority whatever the weights, even past the cut to three', () => {
    const router = new Router(config, () => 0);
    expect(router.routes('m', 'chat-completions')[0]!.channel.id).toBe('a');
    expect(router.routes('m', 'chat-completions', undefined, 'd').map((r) => r.channel.id)).toEqual(['d', 'a', 'b']);
  });

  it('never before a lower priority, nor when it is not usable', () => {
    const router = new Router(config, () => 0);
    expect(router.routes('m', 'chat-completions', undefined, 'low')[0]!.channel.id).toBe('a');
    router.board.operator('d', 'disable');
    expect(router.routes('m', 'chat-completions', undefined, 'd').map((r) => r.channel.id)).not.toContain('d');
  });
});
