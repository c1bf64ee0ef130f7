/**
 * OpenAI Audio Speech on the upstream side (DESIGN.md, "Media, digital humans and agents: the fixed
 * parts"): `POST {base}/v1/audio/speech` `{model, input, voice, response_format?, speed?, …}` answered
 * with the audio bytes, and voice clones `POST {base}/v1/audio/voices` `{name, audio_url}` → `{id, name}`.
 * Bearer authentication, as OpenAI's.
 */
import { channelDispatcher, shapedHeaders, withChannelQuery } from '../shaping';
import type { Dispatcher } from 'undici';
import type { ChannelConfig } from '../../config/schema';
import { BodyTooLargeError, bytesWithin, SPEECH_ANSWER_BYTES, textWithin } from '../bounded-body';
import { postHop, type HopResult } from '../hop';
import { tryJson } from '../json';
import { scrubberOf } from '../scrub';
import { unreadable, upstreamTarget, type CallSignal } from '../upstream-call';
import { openAiErrorMessage } from './chat-completions';

export const SPEECH_PATH = '/v1/audio/speech';
export const VOICES_PATH = '/v1/audio/voices';

/** A clone's answer is an id and a name. */
const VOICE_ANSWER_BYTES = 1024 * 1024;

/** A voice as OpenAI's API takes it: a name (a preset, or a custom voice id), or `{id}` for a custom voice. */
export type SpeechVoice = string | { readonly id: string };

/** What a speech call sends: the client's fields as they came (unknown ones included), the voice the
 * upstream knows (a cloned voice's upstream id), the channel's model id. */
export function speechUpstreamBody(fields: Readonly<Record<string, unknown>>, voice: SpeechVoice, upstreamModel: string): string {
  return JSON.stringify({ ...fields, model: upstreamModel, voice });
}

export interface SpeechAudio {
  readonly bytes: Buffer;
  /** The upstream's own word for what it sent (`audio/mpeg`, …), kept for the client and the hosted copy. */
  readonly contentType: string;
}

export interface HopOptions {
  readonly call: CallSignal;
  readonly timeoutMs: number;
  readonly dispatcher?: Dispatcher | undefined;
  /** Trace context and the like, added to the request's headers. */
  readonly headers?: Record<string, string>;
  readonly onStatus?: ((status: number) => void) | undefined;
}

const header = (headers: Dispatcher.ResponseData['headers'], name: string): string | null => {
  const value = headers[name];
  return typeof value === 'string' ? value : Array.isArray(value) ? (value[0] ?? null) : null;
};

function hopOf(channel: ChannelConfig, path: string, body: string, options: HopOptions) {
  return {
    // Shaped by the channel's config (src/upstream/shaping.ts): query, auth header, extra headers, proxy.
    target: upstreamTarget(channel.base_url, withChannelQuery(channel, path)),
    headers: { 'content-type': 'application/json', ...shapedHeaders(channel, { authorization: `Bearer ${channel.api_key}` }), ...options.headers },
    body,
    timeoutMs: options.timeoutMs,
    call: options.call,
    dispatcher: channelDispatcher(channel) ?? options.dispatcher,
    onStatus: options.onStatus,
    scrub: scrubberOf(channel),
  };
}

/**
 * One speech request to one channel; the audio read whole, never past SPEECH_ANSWER_BYTES (an answer that
 * says it is larger is refused before a byte of it is read). A body cut short after its 2xx is `unreadable` (not resent: postHop).
 */
export function requestSpeech(channel: ChannelConfig, body: string, options: HopOptions): Promise<HopResult<SpeechAudio>> {
  return postHop(hopOf(channel, SPEECH_PATH, body, options), async (response) => {
    const declared = Number(header(response.headers, 'content-length'));
    if (Number.isFinite(declared) && declared > SPEECH_ANSWER_BYTES) {
      response.body.destroy();
      throw new BodyTooLargeError(SPEECH_ANSWER_BYTES);
    }
    const bytes = await bytesWithin(response.body, SPEECH_ANSWER_BYTES);
    return {
      bytes,
      contentType: header(response.headers, 'content-type') ?? 'application/octet-stream',
    };
  });
}

export interface ClonedVoice {
  readonly id: string;
  readonly name: string | null;
}

/** A clone request: the name and the recording's link (and whatever else the client sent, as sent). */
export function voiceCloneBody(fields: Readonly<Record<string, unknown>>): string {
  return JSON.stringify(fields);
}

/** One clone request to one channel. A 2xx without a voice id is no clone the client can use: a bad
 * gateway, nothing billed, and not sent to another channel (the upstream may have made, and charged, it). */
export async function requestVoiceClone(channel: ChannelConfig, body: string, options: HopOptions): Promise<HopResult<ClonedVoice>> {
  const result = await postHop(hopOf(channel, VOICES_PATH, body, options), async (response) => {
    const answer = tryJson(await textWithin(response.body, VOICE_ANSWER_BYTES)) as { id?: unknown; name?: unknown } | null;
    return typeof answer?.id === 'string' && answer.id !== '' ? { id: answer.id, name: typeof answer.name === 'string' ? answer.name : null } : null;
  });
  if (!result.ok) return result;
  if (result.value === null) return { ok: false, failure: unreadable('a 2xx to the clone without a voice id') };
  return { ok: true, value: result.value };
}

export const speechErrorMessage = openAiErrorMessage;
