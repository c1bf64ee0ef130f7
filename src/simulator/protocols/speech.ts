/**
 * OpenAI Audio Speech: `POST /v1/audio/speech` → audio bytes, and voice clones
 * `POST /v1/audio/voices` `{name, audio_url}` → `{id, name}`. Validation answers as OpenAI does
 * (400 with `param` and `code`), so a client's error handling meets the real shapes.
 */
import { asRecord } from '../conversation';
import { vendorError } from '../errors';
import { pad, sendBytes, sendJson, type Ctx } from '../http';
import { AUDIO_CONTENT_TYPES, AUDIO_FORMATS, encodeAudio, isAudioFormat, speechSamples } from '../audio';
import { stripMarkers } from '../scenarios';

export const MAX_SPEECH_CHARACTERS = 4096;

function bad(ctx: Ctx, message: string, param: string, code: string): void {
  const e = vendorError('speech', 400, message);
  const body = e.body as { error: Record<string, unknown> };
  body.error.param = param;
  body.error.code = code;
  sendJson(ctx, e.status, body, e.headers);
}

function missing(ctx: Ctx, param: string): void {
  bad(ctx, `Missing required parameter: '${param}'.`, param, 'missing_required_parameter');
}

/** Characters spoken: Unicode code points of the input once its markers are removed. */
export function speechCharacters(input: string): number {
  return [...stripMarkers(input)].length;
}

function validVoice(v: unknown): boolean {
  if (typeof v === 'string') return v !== '';
  const id = asRecord(v).id;
  return typeof id === 'string' && id !== '';
}

/** The first problem with `speed`, as OpenAI words it, or undefined. */
function speedProblem(speed: unknown): [string, string] | undefined {
  if (speed === undefined) return undefined;
  if (typeof speed !== 'number' || !Number.isFinite(speed)) {
    return [`Invalid type for 'speed': expected a decimal, but got ${typeof speed} instead.`, 'invalid_type'];
  }
  if (speed < 0.25) return [`Invalid 'speed': decimal below minimum value. Expected a value >= 0.25, but got ${speed} instead.`, 'decimal_below_min_value'];
  if (speed > 4) return [`Invalid 'speed': decimal above maximum value. Expected a value <= 4, but got ${speed} instead.`, 'decimal_above_max_value'];
  return undefined;
}

export function handleSpeech(ctx: Ctx): void {
  const b = asRecord(ctx.body);
  if (typeof b.model !== 'string' || b.model === '') return missing(ctx, 'model');
  if (typeof b.input !== 'string' || b.input === '') return missing(ctx, 'input');
  if (!validVoice(b.voice)) return missing(ctx, 'voice');
  const length = [...b.input].length;
  if (length > MAX_SPEECH_CHARACTERS) {
    return bad(
      ctx,
      `Invalid 'input': string too long. Expected a string with maximum length ${MAX_SPEECH_CHARACTERS}, but got a string with length ${length} instead.`,
      'input',
      'string_above_max_length',
    );
  }
  const format = b.response_format ?? 'mp3';
  if (!isAudioFormat(format)) {
    const list = AUDIO_FORMATS.map((f) => `'${f}'`);
    return bad(ctx, `Invalid value: '${String(format)}'. Supported values are: ${list.slice(0, -1).join(', ')}, and ${list.at(-1)}.`, 'response_format', 'invalid_value');
  }
  const problem = speedProblem(b.speed);
  if (problem) return bad(ctx, problem[0], 'speed', problem[1]);
  const samples = speechSamples(speechCharacters(b.input), (b.speed as number | undefined) ?? 1);
  sendBytes(ctx, AUDIO_CONTENT_TYPES[format], encodeAudio(format, samples));
}

/** Ids count clones from 1 (`voice_sim000001`); reset() starts again. */
export function handleVoiceCreate(ctx: Ctx): void {
  const b = asRecord(ctx.body);
  const name = typeof b.name === 'string' ? stripMarkers(b.name) : '';
  if (name === '') return missing(ctx, 'name');
  if (typeof b.audio_url !== 'string' || b.audio_url === '') return missing(ctx, 'audio_url');
  const id = `voice_sim${pad(ctx.sim.voices.size + 1)}`;
  ctx.sim.voices.set(id, { id, name, audioUrl: b.audio_url });
  sendJson(ctx, 200, { id, name });
}
