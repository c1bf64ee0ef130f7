import type { ProtocolAdapter } from '../contract';

/** Placeholder until the adapter is written: every call is refused as invalid. */
export const responses: ProtocolAdapter = {
  protocol: 'responses' as ProtocolAdapter['protocol'],
  shape: 'chat',
  forwardedHeaders: [],
  inspect: () => ({ invalid: 'not implemented yet' }),
  upstream: () => ({ path: '/', body: null }),
  authHeaders: () => ({}),
  usageOf: () => null,
  errorMessage: () => null,
  observe: () => ({ onEvent: () => true, usage: () => null, outputChars: () => 0, completed: () => false }),
};
