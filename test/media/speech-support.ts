import type { GatewayConfig } from '../../src/config/schema';
import type { Simulator } from '../../src/simulator';
import type { SimulatedGateway } from '../support/gateway';
import { mediaChannel, mediaModel } from './task-support';

export const SPEECH_MODELS = ['tts-a', 'tts-odd', 'tts-dear'];
/** 0.015 USD per 1,000 characters: 15,000 nano-dollars a character. */
export const TTS_PRICE = '0.015';
/** 1,000,001 nano-dollars per 1,000 characters: a charge that needs its rounding up. */
export const ODD_PRICE = '0.001000001';
export const VOICE_PRICE = '0.50';

/**
 * Speech models on three `speech` channels in priority order (sp-a, sp-b, sp-c); `tts-b` only on sp-c
 * (a model the first channels do not serve); `tts-dear` priced above a fresh account's balance for a
 * few characters; `tts-none` with no channel; a chat model. Presets: two voices.
 */
export function speechConfig(sim: Simulator): GatewayConfig {
  return {
    models: [
      mediaModel({ id: 'tts-a', kind: 'speech', price: { per_1k_characters: TTS_PRICE, per_voice: VOICE_PRICE } }),
      mediaModel({ id: 'tts-odd', kind: 'speech', price: { per_1k_characters: ODD_PRICE, per_voice: '0.25' } }),
      mediaModel({ id: 'tts-dear', kind: 'speech', price: { per_1k_characters: '20000', per_voice: '100' } }),
      mediaModel({ id: 'tts-b', kind: 'speech', price: { per_1k_characters: TTS_PRICE } }),
      mediaModel({ id: 'tts-none', kind: 'speech', price: { per_1k_characters: TTS_PRICE } }),
      mediaModel({ id: 'chat-x', kind: 'text', price: { input: '1.00', output: '2.00' } }),
    ],
    channels: [
      mediaChannel(sim, 'sp-a', 'speech', SPEECH_MODELS, 0),
      mediaChannel(sim, 'sp-b', 'speech', SPEECH_MODELS, 1),
      mediaChannel(sim, 'sp-c', 'speech', [...SPEECH_MODELS, 'tts-b'], 2),
    ],
    presets: {
      voices: [
        { id: 'alloy', name: 'Alloy' },
        { id: 'nova', name: 'Nova' },
      ],
      avatars: [],
    },
  };
}

/** Hops of 1.5 s (a hanging channel is left quickly), a ladder of 6 s. */
export const FAST_SPEECH = { hopMs: 1_500, ladderMs: 6_000 };

/** ceil(characters × price / 1000) nano-dollars. */
export const speechCharge = (characters: number, perThousand: bigint) => (BigInt(characters) * perThousand + 999n) / 1000n;

/** The simulator's speech and clone requests, by channel (the first path segment). */
export const speechCalls = (h: SimulatedGateway) => h.sim.requests.filter((r) => r.path.endsWith('/v1/audio/speech'));
export const cloneCalls = (h: SimulatedGateway) => h.sim.requests.filter((r) => r.path.endsWith('/v1/audio/voices'));
export const channelOf = (path: string) => path.split('/')[1];
