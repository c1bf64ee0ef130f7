import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import OpenAI from 'openai';
import type { Simulator } from '../../src/simulator';

export const KEY = 'sim-key';

export function openai(sim: Simulator, options: { timeout?: number; baseURL?: string } = {}): OpenAI {
  return new OpenAI({ apiKey: KEY, baseURL: options.baseURL ?? `${sim.url}/v1`, maxRetries: 0, timeout: options.timeout ?? 10_000 });
}

export function anthropic(sim: Simulator): Anthropic {
  return new Anthropic({ apiKey: KEY, baseURL: sim.url, maxRetries: 0, timeout: 10_000 });
}

export function genai(sim: Simulator): GoogleGenAI {
  return new GoogleGenAI({ apiKey: KEY, httpOptions: { baseUrl: sim.url } });
}

/** POSTs JSON and returns the status, headers and the whole body text (even when the stream is cut). */
export async function post(
  url: string,
  body: unknown,
  headers: Record<string, string> = { authorization: `Bearer ${KEY}` },
): Promise<{ status: number; headers: Headers; text: string; error?: unknown }> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  const decoder = new TextDecoder();
  let text = '';
  try {
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) text += decoder.decode(chunk, { stream: true });
    return { status: res.status, headers: res.headers, text };
  } catch (error) {
    return { status: res.status, headers: res.headers, text, error };
  }
}

/** `data:` payloads of an SSE text, in order. */
export function sseData(text: string): string[] {
  return text
    .split(/\r?\n\r?\n/)
    .flatMap((frame) => frame.split(/\r?\n/).filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)))
    .filter((d) => d !== '');
}

/** `event:` names of an SSE text, in order. */
export function sseEvents(text: string): string[] {
  return text
    .split(/\n/)
    .filter((l) => l.startsWith('event: '))
    .map((l) => l.slice(7));
}

/** The content-generation tasks endpoint every asynchronous family shares. */
export const TASKS = '/api/v3/contents/generations/tasks';

export type TaskView = Record<string, unknown> & { id: string; status: string };

/** Submits a task body; the id on success. */
export async function submitTask(sim: Simulator, body: unknown): Promise<string> {
  const res = await post(`${sim.url}${TASKS}`, body);
  if (res.status !== 200) throw new Error(`submit answered ${res.status}: ${res.text}`);
  return (JSON.parse(res.text) as { id: string }).id;
}

/** GET …/tasks/{id}: status and parsed body. */
export async function pollTask(sim: Simulator, id: string): Promise<{ status: number; body: TaskView }> {
  const res = await fetch(`${sim.url}${TASKS}/${id}`, { headers: { authorization: `Bearer ${KEY}` } });
  return { status: res.status, body: (await res.json()) as TaskView };
}

/** Polls until the task leaves queued/running (at most `limit` GETs); every view seen, in order. */
export async function pollUntilDone(sim: Simulator, id: string, limit = 10): Promise<TaskView[]> {
  const views: TaskView[] = [];
  for (let i = 0; i < limit; i++) {
    const { status, body } = await pollTask(sim, id);
    if (status !== 200) throw new Error(`poll answered ${status}: ${JSON.stringify(body)}`);
    views.push(body);
    if (body.status !== 'queued' && body.status !== 'running') return views;
  }
  throw new Error(`task ${id} still in flight after ${limit} polls`);
}

/** The last view of a task polled to its end. */
export async function finalTask(sim: Simulator, id: string): Promise<TaskView> {
  return (await pollUntilDone(sim, id)).at(-1)!;
}
