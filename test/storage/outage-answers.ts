import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { expect } from 'vitest';

// What every storage outage answers, as each protocol's official SDK reads it: 503 with Retry-After 5 in
// the protocol's own error shape (docs/operations.md, "Database and Redis outages").

const refusal = (call: () => Promise<unknown>) => call().then(() => null, (error: unknown) => error);

export async function expectOutageAnswers(calls: { chat: () => Promise<unknown>; message: () => Promise<unknown>; generate: () => Promise<unknown> }): Promise<void> {
  const cc = await refusal(calls.chat);
  expect(cc).toBeInstanceOf(OpenAI.APIError);
  const ccError = cc as InstanceType<typeof OpenAI.APIError>;
  expect(ccError.status).toBe(503);
  expect(ccError.headers?.get('retry-after')).toBe('5');
  expect(ccError.error).toMatchObject({ type: 'server_error', code: 'service_unavailable' });

  const msg = await refusal(calls.message);
  expect(msg).toBeInstanceOf(Anthropic.APIError);
  const msgError = msg as InstanceType<typeof Anthropic.APIError>;
  expect(msgError.status).toBe(503);
  expect(msgError.headers?.get('retry-after')).toBe('5');
  expect(msgError.error).toMatchObject({ type: 'error', error: { type: 'overloaded_error' } });

  const gen = (await refusal(calls.generate)) as { status?: number; message?: string };
  expect(gen.status).toBe(503);
  expect(JSON.parse(gen.message!)).toMatchObject({ error: { code: 503, status: 'UNAVAILABLE' } });
}
