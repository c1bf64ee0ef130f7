/** A body that may not be JSON (an upstream's error page, an SSE `[DONE]`): its value, or null. */
export const tryJson = (text: string): unknown => {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
};
