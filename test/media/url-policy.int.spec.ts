import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { GatewayConfig } from '../../src/config/schema';
import type { Simulator } from '../../src/simulator';
import type { SimulatedGateway } from '../support/gateway';
import { api, logRows, mediaChannel, mediaModel, startTaskHarness } from './task-support';

// Issue 31, item 6: one URL policy for every client URL the gateway passes on. A URL naming a loopback,
// private, link-local (metadata), CGNAT address, an IPv4 address embedded in IPv6 or `localhost.` is a
// 400 invalid_request before any money moves and before anything goes upstream, on every route that
// takes one; the config's media_probe (the default: private addresses refused) decides.

const config = (sim: Simulator): GatewayConfig =>
  ({
    models: [
      mediaModel({ id: 'tr', kind: 'transcript', price: { per_call: '0.02' } }),
      mediaModel({ id: 'tts', kind: 'speech', price: { per_1k_characters: '0.015', per_voice: '1.00' } }),
      mediaModel({ id: 'img', kind: 'image', endpoint_type: 'images_generations', price: { per_image: '0.04' } }),
      mediaModel({ id: 'vid', kind: 'video', price: { per_second: '0.10' } }),
    ],
    channels: [mediaChannel(sim, 'tr', 'transcripts', ['tr']), mediaChannel(sim, 'tts', 'speech', ['tts']), mediaChannel(sim, 'img', 'images', ['img']), mediaChannel(sim, 'vid', 'videos', ['vid'])],
  }) as GatewayConfig;

const INSIDE = [
  'http://169.254.169.254/latest/meta-data/iam/',
  'http://127.0.0.1:9/a.wav',
  'http://10.0.0.7/a.wav',
  'http://100.64.0.1/a.wav',
  'http://[::ffff:0:127.0.0.1]/a.wav',
  'http://[::ffff:7f00:1]/a.wav',
  'http://localhost.:8080/a.wav',
];

let h: SimulatedGateway;
let http: ReturnType<typeof api>;
beforeAll(async () => {
  h = await startTaskHarness(config);
  http = api(h);
});
afterAll(() => h.close());
beforeEach(() => h.sim.reset());

const routes: [string, string, (url: string) => Record<string, unknown>, RegExp][] = [
  ['transcripts url', '/v1/transcripts/extract', (url) => ({ model: 'tr', url }), /^url: /],
  ['voice clone audio_url', '/v1/audio/voices', (url) => ({ name: 'mine', audio_url: url }), /^audio_url: /],
  ['image reference image', '/v1/images/generations', (url) => ({ model: 'img', prompt: 'a lighthouse', image: url }), /^image: /],
  ['image reference image_urls', '/v1/images/edits', (url) => ({ model: 'img', prompt: 'a lighthouse', image_urls: ['data:image/png;base64,iVBORw0KGgo=', url] }), /^image: /],
  ['video content image_url', '/v1/videos/generations', (url) => ({ model: 'vid', content: [{ type: 'text', text: 'waves' }, { type: 'image_url', image_url: { url } }] }), /^content\[1\]\.image_url: /],
  ['video content video_url', '/v1/videos/generations', (url) => ({ model: 'vid', content: [{ type: 'text', text: 'waves' }, { type: 'video_url', video_url: { url }, role: 'reference_video' }] }), /^content\[1\]\.video_url: /],
  ['video content audio_url', '/v1/videos/generations', (url) => ({ model: 'vid', content: [{ type: 'text', text: 'waves' }, { type: 'audio_url', audio_url: { url }, role: 'reference_audio' }] }), /^content\[1\]\.audio_url: /],
];

describe('the URL policy on every route that passes a client URL on', () => {
  it.each(routes)('%s: an internal address is a 400 invalid_request; nothing held, nothing sent upstream', async (_name, path, body, field) => {
    const { accountId, key } = await h.t.accountWithKey();
    for (const url of INSIDE) {
      const response = await http.post(path, key, body(url));
      const answer = (await response.json()) as { error?: { code?: string; message?: string } };
      expect([url, response.status, answer.error?.code]).toEqual([url, 400, 'invalid_request']);
      expect(answer.error?.message).toMatch(field);
      expect(answer.error?.message).toMatch(/public addresses/);
    }
    expect(h.sim.requests).toEqual([]);
    const rows = await logRows(h, accountId);
    expect(rows.map((r) => [r.status, r.cost_usd])).toEqual(INSIDE.map(() => ['rejected', '0.00']));
    expect((await h.t.gateway.ledger.wallet(accountId)).held).toBe(0n);
  });

  it('a public link still goes upstream', async () => {
    const { key } = await h.t.accountWithKey();
    const response = await http.post('/v1/audio/voices', key, { name: 'mine', audio_url: 'https://recordings.example.com/me.wav' });
    expect(response.status).toBe(200);
    expect(h.sim.requests.length).toBeGreaterThan(0);
  });
});
