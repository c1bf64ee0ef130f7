/** A body that may not be JSON (an upstream's error page, an SSE `[DONE]`): its value, or null. */
export const tryJson = (text: string): unknown => {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
};

/** A JSON object (not an array, not null): what every chat protocol's answer is. */
export const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
