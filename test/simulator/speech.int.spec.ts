import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import OpenAI, { type APIError } from 'openai';
import {
  AAC_FRAME_BYTES,
  AAC_FRAME_SAMPLES,
  AUDIO_CONTENT_TYPES,
  AUDIO_FORMATS,
  FILE_AUDIO_SAMPLES,
  MP3_FRAME_BYTES,
  MP3_FRAME_SAMPLES,
  speechCharacters,
  speechSamples,
  startSimulator,
  type Simulator,
} from '../../src/simulator';
import { openai, post } from './support';

let sim: Simulator;
let client: OpenAI;
beforeAll(async () => {
  sim = await startSimulator();
  client = openai(sim);
});
afterAll(() => sim.close());
beforeEach(() => sim.reset());

const bytesOf = async (res: Response): Promise<Buffer> => Buffer.from(await res.arrayBuffer());

/** The fields of a canonical 44-byte WAV header. */
function wavHeader(b: Buffer) {
  return {
    riff: b.toString('ascii', 0, 4),
    riffSize: b.readUInt32LE(4),
    wave: b.toString('ascii', 8, 12),
    fmt: b.toString('ascii', 12, 16),
    audioFormat: b.readUInt16LE(20),
    channels: b.readUInt16LE(22),
    sampleRate: b.readUInt32LE(24),
    byteRate: b.readUInt32LE(28),
    bitsPerSample: b.readUInt16LE(34),
    data: b.toString('ascii', 36, 40),
    dataSize: b.readUInt32LE(40),
  };
}

describe('speech (openai SDK)', () => {
  it('wav: a valid 16-bit mono 24 kHz RIFF file lasting 60 ms per character', async () => {
    const input = 'Hello there, simulator.';
    const res = await client.audio.speech.create({ model: 'tts-1', input, voice: 'alloy', response_format: 'wav' });
    expect(res.headers.get('content-type')).toBe('audio/wav');
    const wav = await bytesOf(res);
    const samples = speechSamples(input.length);
    expect(samples).toBe(input.length * 1440);
    expect(wavHeader(wav)).toEqual({
      riff: 'RIFF',
      riffSize: wav.length - 8,
      wave: 'WAVE',
      fmt: 'fmt ',
      audioFormat: 1,
      channels: 1,
      sampleRate: 24_000,
      byteRate: 48_000,
      bitsPerSample: 16,
      data: 'data',
      dataSize: samples * 2,
    });
    expect(wav.length).toBe(44 + 2 * samples);
    expect(wav.readUInt32LE(40) / 2 / 24_000).toBeCloseTo(input.length * 0.06, 9);
    expect(wav.subarray(44).some((b) => b !== 0)).toBe(true); // a tone, not silence
    const again = await bytesOf(await client.audio.speech.create({ model: 'tts-1', input, voice: 'alloy', response_format: 'wav' }));
    expect(again.equals(wav)).toBe(true);
  });

  it('mp3 by default: MPEG-2 Layer III frames of 96 bytes per 24 ms', async () => {
    const input = 'One two three four five.';
    const mp3 = await bytesOf(await client.audio.speech.create({ model: 'gpt-4o-mini-tts', input, voice: 'coral' }));
    expect(sim.requests[0]!.headers['content-type']).toContain('application/json');
    const frames = Math.ceil(speechSamples(input.length) / MP3_FRAME_SAMPLES);
    expect(mp3.length).toBe(frames * MP3_FRAME_BYTES);
    for (let at = 0; at < mp3.length; at += MP3_FRAME_BYTES) expect([...mp3.subarray(at, at + 4)]).toEqual([0xff, 0xf3, 0x44, 0xc0]);
  });

  it('answers each response_format with its content-type and magic bytes; speed shortens the audio', async () => {
    const input = 'abcdefghij';
    const magic: Record<string, (b: Buffer) => boolean> = {
      mp3: (b) => b[0] === 0xff && b[1] === 0xf3,
      opus: (b) => b.toString('ascii', 0, 4) === 'OggS' && b.toString('ascii', 28, 36) === 'OpusHead',
      aac: (b) => b[0] === 0xff && b[1] === 0xf1 && b.length === AAC_FRAME_BYTES * Math.ceil(speechSamples(10) / AAC_FRAME_SAMPLES),
      flac: (b) => b.toString('ascii', 0, 4) === 'fLaC',
      wav: (b) => b.toString('ascii', 0, 4) === 'RIFF',
      pcm: (b) => b.length === 2 * speechSamples(10),
    };
    for (const format of AUDIO_FORMATS) {
      const res = await client.audio.speech.create({ model: 'tts-1', input, voice: 'alloy', response_format: format });
      expect([format, res.headers.get('content-type')]).toEqual([format, AUDIO_CONTENT_TYPES[format]]);
      expect([format, magic[format]!(await bytesOf(res))]).toEqual([format, true]);
    }
    expect(AUDIO_CONTENT_TYPES).toEqual({ mp3: 'audio/mpeg', opus: 'audio/opus', aac: 'audio/aac', flac: 'audio/flac', wav: 'audio/wav', pcm: 'audio/pcm' });
    const fast = await bytesOf(await client.audio.speech.create({ model: 'tts-1', input, voice: 'alloy', response_format: 'pcm', speed: 2 }));
    expect(fast.length).toBe(2 * speechSamples(10, 2));
    expect(fast.length).toBe(10 * 1440);
  });

  it('refuses what OpenAI refuses, with its error shape', async () => {
    const cases: Array<[Record<string, unknown>, string, string]> = [
      [{ input: 'x', voice: 'alloy' }, 'model', 'missing_required_parameter'],
      [{ model: 'tts-1', voice: 'alloy' }, 'input', 'missing_required_parameter'],
      [{ model: 'tts-1', input: 'x' }, 'voice', 'missing_required_parameter'],
      [{ model: 'tts-1', input: 'x'.repeat(4097), voice: 'alloy' }, 'input', 'string_above_max_length'],
      [{ model: 'tts-1', input: 'x', voice: 'alloy', response_format: 'ogg' }, 'response_format', 'invalid_value'],
      [{ model: 'tts-1', input: 'x', voice: 'alloy', speed: 5 }, 'speed', 'decimal_above_max_value'],
    ];
    for (const [body, param, code] of cases) {
      const err = await client.audio.speech.create(body as never).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(OpenAI.BadRequestError);
      expect((err as APIError).error).toMatchObject({ type: 'invalid_request_error', param, code, message: expect.any(String) });
    }
    // 4096 characters are allowed even when they take more bytes (aac keeps the answer small)
    const longest = await client.audio.speech.create({ model: 'tts-1', input: 'é'.repeat(4096), voice: 'alloy', response_format: 'aac' });
    expect((await bytesOf(longest)).length).toBe(AAC_FRAME_BYTES * Math.ceil(speechSamples(4096) / AAC_FRAME_SAMPLES));
  });

  it('reads markers in input (not counted as characters) and takes queued speech scenarios', async () => {
    expect(speechCharacters('hello [[sim:ok]]')).toBe(5);
    const pcm = await bytesOf(await client.audio.speech.create({ model: 'tts-1', input: 'hello [[sim:ok]]', voice: 'alloy', response_format: 'pcm' }));
    expect(pcm.length).toBe(2 * speechSamples(5));
    const limited = await client.audio.speech.create({ model: 'tts-1', input: 'x [[sim:http_429]]', voice: 'alloy' }).catch((e: unknown) => e);
    expect(limited).toBeInstanceOf(OpenAI.RateLimitError);

    sim.enqueueFor({ protocol: 'speech' }, 'cut_stream_after:0');
    const chat = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
    expect(chat.choices[0]!.message.content).toBe('Echo: hi'); // the speech entry waits for a speech request
    const cut = await post(`${sim.url}/v1/audio/speech`, { model: 'tts-1', input: 'abcd', voice: 'alloy', response_format: 'pcm' });
    expect(cut.status).toBe(200);
    expect(cut.error).toBeDefined();
    expect(sim.requests.map((r) => r.protocol)).toEqual(['speech', 'speech', 'chat-completions', 'speech']);
  });
});

describe('voice clones', () => {
  const clone = (body: unknown) => post(`${sim.url}/v1/audio/voices`, body);

  it('numbers clones voice_sim000001, 000002, … (again from 1 after reset); the SDK speaks with one', async () => {
    const first = await clone({ name: 'Ada', audio_url: 'https://a.example/ada.wav' });
    expect([first.status, JSON.parse(first.text)]).toEqual([200, { id: 'voice_sim000001', name: 'Ada' }]);
    expect(JSON.parse((await clone({ name: 'Bo [[sim:ok]]', audio_url: 'https://a.example/bo.wav' })).text)).toEqual({ id: 'voice_sim000002', name: 'Bo' });
    const res = await client.audio.speech.create({ model: 'tts-1', input: 'hi', voice: { id: 'voice_sim000002' } });
    expect(res.headers.get('content-type')).toBe('audio/mpeg');
    sim.reset();
    expect(JSON.parse((await clone({ name: 'Cy', audio_url: 'https://a.example/cy.wav' })).text).id).toBe('voice_sim000001');
  });

  it('refuses a missing name or audio_url, and honours markers', async () => {
    const noName = await clone({ audio_url: 'https://a.example/x.wav' });
    expect([noName.status, JSON.parse(noName.text).error]).toEqual([400, expect.objectContaining({ param: 'name', type: 'invalid_request_error' })]);
    const noUrl = await clone({ name: 'x' });
    expect([noUrl.status, JSON.parse(noUrl.text).error.param]).toEqual([400, 'audio_url']);
    const failing = await clone({ name: 'x', audio_url: 'https://a.example/x.wav [[sim:http_500]]' });
    expect(failing.status).toBe(500);
    expect(JSON.parse(failing.text)).toMatchObject({ error: { type: 'server_error' } });
    const noKey = await post(`${sim.url}/v1/audio/voices`, { name: 'x', audio_url: 'u' }, {});
    expect(noKey.status).toBe(401);
  });
});

describe('audio files', () => {
  it('serves one-second clips by extension, mp3 and wav included', async () => {
    const wav = await fetch(`${sim.url}/files/anything.wav`);
    expect(wav.headers.get('content-type')).toBe('audio/wav');
    expect(wavHeader(await bytesOf(wav)).dataSize).toBe(2 * FILE_AUDIO_SAMPLES);
    const mp3 = await bytesOf(await fetch(`${sim.url}/files/song.mp3`));
    expect(mp3.length).toBe(MP3_FRAME_BYTES * Math.ceil(24_000 / MP3_FRAME_SAMPLES));
  });
});
