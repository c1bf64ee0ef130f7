import type { DeliveryOf } from '../delivery';

const record = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * A succeeded transcript: billed one call (`unit_type` call). `text` must be a string (an empty one is a
 * transcript of silence, still delivered); `language` and `segments` are kept when the upstream gives them
 * (segments as objects, as sent). No links: nothing expires.
 */
export const transcriptDelivery: DeliveryOf = (task) => {
  const content = task.content ?? {};
  if (typeof content.text !== 'string') return { invalid: 'the upstream reported success without a transcript text' };
  const language = typeof content.language === 'string' && content.language !== '' ? content.language : undefined;
  const segments = Array.isArray(content.segments) ? content.segments.filter(record) : undefined;
  return {
    result: { text: content.text, ...(language ? { language } : {}), ...(segments ? { segments } : {}) },
    units: 1,
    unitCount: 1,
    resultUrls: [],
    resultExpiresAt: null,
  };
};
