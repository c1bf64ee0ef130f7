import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_SONG_SECONDS, lyricsFor, startSimulator, transcriptOf, type Simulator } from '../../src/simulator';
import { finalTask, KEY, pollTask, post, submitTask, TASKS } from './support';

let sim: Simulator;
beforeAll(async () => {
  sim = await startSimulator();
});
afterAll(() => sim.close());
beforeEach(() => sim.reset());

const video = { model: 'seedance-1-0-pro', content: [{ type: 'text', text: 'a dog' }] };

describe('family inference on the shared tasks endpoint', () => {
  it('records each submit and each poll under the family its body (or its task) names', async () => {
    const bodies = {
      videos: video,
      transcripts: { model: 'whisper-task', url: 'https://cdn.example/a.mp3', prompt: 'ignored: url wins' },
      avatars: { model: 'avatar-1', source_url: 'https://cdn.example/me.mp4' },
      music: { model: 'suno-v4', action: 'lyrics', prompt: 'a sea shanty' },
    } as const;
    for (const [protocol, body] of Object.entries(bodies)) {
      const id = await submitTask(sim, body);
      await pollTask(sim, id);
      expect(sim.requests.slice(-2).map((r) => [r.method, r.protocol])).toEqual([
        ['POST', protocol],
        ['GET', protocol],
      ]);
    }
    await submitTask(sim, { model: 'suno-v4', lyrics: 'la la' });
    expect(sim.requests.at(-1)!.protocol).toBe('music');
  });

  it('a body with no family field is a video submit, refused for its missing content', async () => {
    const res = await post(`${sim.url}${TASKS}`, { model: 'x' });
    expect(res.status).toBe(400);
    expect(JSON.parse(res.text)).toMatchObject({ error: { code: 'InvalidParameter', message: expect.stringContaining('content') } });
    expect(sim.requests[0]!.protocol).toBe('videos');
  });
});

describe('music', () => {
  it('succeeds with exactly two served songs; the task duration is their sum', async () => {
    const id = await submitTask(sim, { model: 'suno-v4', prompt: 'an upbeat song about rain today', style: 'pop' });
    const done = await finalTask(sim, id);
    expect(done).toMatchObject({ id, model: 'suno-v4', status: 'succeeded', duration: 2 * DEFAULT_SONG_SECONDS });
    expect(done.usage).toBeUndefined();
    const songs = (done.content as { songs: Array<Record<string, unknown>> }).songs;
    expect(songs).toEqual([0, 1].map((i) => ({
      id: `${id}-${i}`,
      audio_url: `${sim.url}/files/${id}-${i}.mp3`,
      image_url: `${sim.url}/files/${id}-${i}.png`,
      title: 'an upbeat song about',
      duration: DEFAULT_SONG_SECONDS,
    })));
    const audio = await fetch(songs[0]!.audio_url as string);
    expect(audio.headers.get('content-type')).toBe('audio/mpeg');
    expect([...new Uint8Array(await audio.arrayBuffer()).subarray(0, 2)]).toEqual([0xff, 0xf3]);
    expect((await fetch(songs[1]!.image_url as string)).headers.get('content-type')).toBe('image/png');
  });

  it('takes the title from `title` (markers removed) and accepts lyrics alone; neither prompt nor lyrics is a 400', async () => {
    const id = await submitTask(sim, { model: 'm', lyrics: 'verse one', title: 'Rain [[sim:ok]]' });
    const songs = ((await finalTask(sim, id)).content as { songs: Array<{ title: string }> }).songs;
    expect(songs.map((s) => s.title)).toEqual(['Rain', 'Rain']);
    const bad = await post(`${sim.url}${TASKS}`, { model: 'm', prompt: '' });
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.text)).toMatchObject({ error: { code: 'InvalidParameter', message: expect.stringContaining('prompt') } });
  });

  it('follow-ups: lyrics, stems, wav, video, extend — on a song by audio_id, task_id or audio_url', async () => {
    const song = await submitTask(sim, { model: 'suno-v4', prompt: 'rain' });
    await finalTask(sim, song);

    const lyrics = await finalTask(sim, await submitTask(sim, { model: 'suno-v4', action: 'lyrics', prompt: 'rain on the roof' }));
    expect(lyrics).toMatchObject({ status: 'succeeded', action: 'lyrics', content: { title: 'rain on the roof', lyrics: lyricsFor('rain on the roof', 'rain on the roof') } });
    expect(lyrics.duration).toBeUndefined();

    const stemsId = await submitTask(sim, { model: 'suno-v4', action: 'stems', audio_id: `${song}-1` });
    expect(await finalTask(sim, stemsId)).toMatchObject({
      action: 'stems',
      content: {
        files: [
          { name: 'vocals', url: `${sim.url}/files/${stemsId}-vocals.mp3`, format: 'mp3' },
          { name: 'instrumental', url: `${sim.url}/files/${stemsId}-instrumental.mp3`, format: 'mp3' },
        ],
      },
    });
    const wavId = await submitTask(sim, { model: 'suno-v4', action: 'wav', task_id: song });
    const wav = (await finalTask(sim, wavId)).content as { files: Array<{ url: string }> };
    expect(wav).toEqual({ files: [{ name: 'audio', url: `${sim.url}/files/${wavId}.wav`, format: 'wav' }] });
    expect((await fetch(wav.files[0]!.url)).headers.get('content-type')).toBe('audio/wav');
    const videoId = await submitTask(sim, { model: 'suno-v4', action: 'video', audio_url: 'https://elsewhere.example/s.mp3' });
    expect((await finalTask(sim, videoId)).content).toEqual({ files: [{ name: 'video', url: `${sim.url}/files/${videoId}.mp4`, format: 'mp4' }] });

    const extended = await finalTask(sim, await submitTask(sim, { model: 'suno-v4', action: 'extend', audio_id: `${song}-0` }));
    expect(extended).toMatchObject({ action: 'extend', duration: 2 * DEFAULT_SONG_SECONDS });
    expect((extended.content as { songs: Array<{ title: string }> }).songs.map((s) => s.title)).toEqual(['rain', 'rain']);
  });

  it('refuses a follow-up with an unknown action, no source, an unknown song or an unfinished task', async () => {
    const pending = await submitTask(sim, { model: 'm', prompt: 'x' });
    const cases: Array<[unknown, number, string]> = [
      [{ model: 'm', action: 'remaster', task_id: pending }, 400, 'action'],
      [{ model: 'm', action: 'stems' }, 400, 'audio_id'],
      [{ model: 'm', action: 'stems', task_id: 'cgt-nope' }, 404, 'not found'],
      [{ model: 'm', action: 'stems', audio_id: `${pending}-7` }, 404, 'not found'],
      [{ model: 'm', action: 'wav', task_id: pending }, 400, 'has not succeeded'],
      [{ model: 'm', action: 'lyrics' }, 400, 'prompt'],
    ];
    for (const [body, status, text] of cases) {
      const res = await post(`${sim.url}${TASKS}`, body);
      expect([res.status, res.text]).toEqual([status, expect.stringContaining(text)]);
    }
  });
});

describe('transcripts', () => {
  it('derives the text from the URL file name, with timed segments and the asked language', async () => {
    const url = 'https://cdn.example/calls/team-meeting_2024.mp3?sig=abc';
    const id = await submitTask(sim, { model: 'transcribe-1', url, language: 'de' });
    const done = await finalTask(sim, id);
    const text = 'This is a simulated transcript of team meeting 2024. Nothing in it was heard.';
    expect(done).toMatchObject({ status: 'succeeded', content: { text, language: 'de' } });
    expect(done.content).toEqual(transcriptOf(url, 'de'));
    const first = 'This is a simulated transcript of team meeting 2024.';
    expect((done.content as { segments: unknown[] }).segments).toEqual([
      { start: 0, end: (first.length * 60) / 1000, text: first },
      { start: (first.length * 60) / 1000, end: ((first.length + 24) * 60) / 1000, text: 'Nothing in it was heard.' },
    ]);
    expect(done.duration).toBeUndefined();
    expect(transcriptOf('https://x.example/').text).toContain('transcript of audio.');
  });

  it('refuses an empty url', async () => {
    const res = await post(`${sim.url}${TASKS}`, { model: 't', url: '' });
    expect(res.status).toBe(400);
    expect(res.text).toContain('url');
  });
});

describe('avatars', () => {
  it('succeeds with empty content; a source_url that is no string is a 400', async () => {
    const id = await submitTask(sim, { model: 'avatar-1', source_url: 'https://cdn.example/me.mp4', name: 'me' });
    const done = await finalTask(sim, id);
    expect(done).toMatchObject({ id, status: 'succeeded', content: {} });
    expect(Object.keys(done.content as object)).toEqual([]);
    const bad = await post(`${sim.url}${TASKS}`, { model: 'avatar-1', source_url: 5 });
    expect(bad.status).toBe(400);
  });
});

describe('digital-human videos', () => {
  it('drive a ready avatar of this simulator (or a preset) for the body duration; a pending or unknown avatar is refused', async () => {
    const avatar = await submitTask(sim, { model: 'avatar-1', source_url: 'https://cdn.example/me.png', name: 'me' });
    const early = await post(`${sim.url}${TASKS}`, { model: 'dh-avatar', avatar, audio_url: 'https://cdn.example/a.mp3' });
    expect(early.status).toBe(400);
    await finalTask(sim, avatar);
    const id = await submitTask(sim, { model: 'dh-avatar', avatar, audio_url: 'https://cdn.example/a.mp3', duration: 7.5 });
    expect(sim.requests.at(-1)!.protocol).toBe('videos');
    const done = await finalTask(sim, id);
    expect(done).toMatchObject({ status: 'succeeded', content: { video_url: `${sim.url}/files/${id}.mp4` }, duration: 7.5, framespersecond: 24 });
    expect(done).not.toHaveProperty('usage');
    const preset = await finalTask(sim, await submitTask(sim, { model: 'dh-avatar', avatar: 'preset-anna', voice: 'nova', text: 'hi [[sim:task_duration_ms:3200]]' }));
    expect(preset).toMatchObject({ status: 'succeeded', duration: 3.2 });
    expect((await post(`${sim.url}${TASKS}`, { model: 'dh-avatar', avatar: 'cgt-sim999999', audio_url: 'https://cdn.example/a.mp3' })).status).toBe(404);
    expect((await post(`${sim.url}${TASKS}`, { model: 'dh-avatar', avatar: 'preset-anna' })).status).toBe(400);
  });

  it('take lip-sync and motion-transfer bodies (default 5 s); a source video alone is a 400', async () => {
    const lipsync = await finalTask(sim, await submitTask(sim, { model: 'dh-lipsync', source_video_url: 'https://cdn.example/v.mp4', audio_url: 'https://cdn.example/a.mp3' }));
    expect(lipsync).toMatchObject({ status: 'succeeded', duration: 5 });
    const motion = await submitTask(sim, { model: 'dh-motion', source_video_url: 'https://cdn.example/v.mp4', content: [{ type: 'image_url', image_url: { url: 'https://cdn.example/p.png' } }], duration: 4 });
    expect(sim.requests.at(-1)!.protocol).toBe('videos');
    expect(await finalTask(sim, motion)).toMatchObject({ status: 'succeeded', duration: 4 });
    expect((await post(`${sim.url}${TASKS}`, { model: 'dh-lipsync', source_video_url: 'https://cdn.example/v.mp4' })).status).toBe(400);
  });
});

describe('video output files', () => {
  it('lists subtitle files only for model ids containing "subtitle", one per asked language', async () => {
    const plain = await finalTask(sim, await submitTask(sim, video));
    expect(plain.content).toEqual({ video_url: `${sim.url}/files/${plain.id}.mp4` });

    const id = await submitTask(sim, { ...video, model: 'dh-subtitle-pro' });
    expect(((await finalTask(sim, id)).content as Record<string, unknown>).output_files).toEqual([{ language: 'en', url: `${sim.url}/files/${id}.en.srt` }]);
    const two = await submitTask(sim, { ...video, model: 'clip-Subtitle', subtitle_languages: ['en', 'zh'] });
    const files = ((await finalTask(sim, two)).content as { output_files: Array<{ language: string; url: string }> }).output_files;
    expect(files.map((f) => f.language)).toEqual(['en', 'zh']);
    const srt = await fetch(files[1]!.url);
    expect(srt.headers.get('content-type')).toBe('application/x-subrip');
    expect(await srt.text()).toContain('-->');
  });
});

describe('cancel', () => {
  it('DELETE cancels a task of any family in flight; a finished task cannot be; an unknown id is a 404', async () => {
    const id = await submitTask(sim, { model: 'suno-v4', prompt: 'x' });
    await pollTask(sim, id);
    const del = await fetch(`${sim.url}${TASKS}/${id}`, { method: 'DELETE', headers: { authorization: `Bearer ${KEY}` } });
    expect(del.status).toBe(200);
    expect(sim.requests.at(-1)!.protocol).toBe('music');
    const { body } = await pollTask(sim, id);
    expect(body).toMatchObject({ status: 'cancelled', error: { code: 'Cancelled' } });
    expect(body.content).toBeUndefined();
    const again = await fetch(`${sim.url}${TASKS}/${id}`, { method: 'DELETE', headers: { authorization: `Bearer ${KEY}` } });
    expect(again.status).toBe(400);
    const unknown = await fetch(`${sim.url}${TASKS}/nope`, { method: 'DELETE', headers: { authorization: `Bearer ${KEY}` } });
    expect(unknown.status).toBe(404);
  });
});
