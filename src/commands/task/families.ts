import type { TaskFamily } from '../../events/catalog';

/** Where a task is in its life, the same for every family; each family names these its own way. */
export type Phase = 'none' | 'created' | 'queued' | 'running' | 'succeeded' | 'failed' | 'expired' | 'cancelled' | 'refused';
export type Outcome = 'failed' | 'expired' | 'cancelled';

export const IN_FLIGHT: ReadonlySet<Phase> = new Set(['created', 'queued', 'running']);
export const isInFlight = (phase: Phase) => IN_FLIGHT.has(phase);
export const isFinished = (phase: Phase) => phase !== 'none' && !IN_FLIGHT.has(phase);

/**
 * A family's states as the spec names them: the status each phase shows, the statuses its list
 * filters accept, and the groups a filter may name. The transitions are the same for every family
 * (created → queued → running → one ending); a family whose spec has fewer states shows several
 * phases under one name (an expired image task is `failed`, every speech task in flight `pending`).
 */
export interface FamilyRules {
  readonly family: TaskFamily;
  readonly statuses: readonly string[];
  /** Filter words that stand for several statuses (`all`, images' `in_flight`). */
  readonly groups: Readonly<Record<string, readonly string[]>>;
  statusOf(phase: Phase): string;
  /** Who does the work: an upstream task the gateway polls, or a call the gateway runs itself in
   * the process that accepted the task (which a restart cannot resume: such a task is failed, refunded). */
  readonly runs: 'upstream' | 'gateway';
  /** The upstream wire format its work goes out in: the tasks API (`src/upstream/protocols/tasks.ts`),
   * images or speech. */
  readonly protocol: 'tasks' | 'images' | 'speech';
  /** Where its tasks are read: `GET {base}/{id}` (when `poll`) and `GET {base}` (`src/http/media/tasks/task-family-routes.ts`);
   * null: none (a transcript is answered to the request that waits for it). */
  readonly routes: { readonly base: string; readonly poll: boolean } | null;
  /** What its price is counted in, as the call log shows it (`unit_type`). */
  readonly unit: 'second' | 'image' | 'call' | 'character' | 'voice';
}

/** What a family declares besides its states. */
type Declared = Pick<FamilyRules, 'runs' | 'protocol' | 'routes' | 'unit'>;

function rules(
  family: TaskFamily,
  declared: Declared,
  names: Partial<Record<Phase, string>>,
  statuses: readonly string[],
  groups: Record<string, readonly string[]> = {},
): FamilyRules {
  return {
    family,
    ...declared,
    statuses,
    groups: { all: statuses, ...groups },
    // A phase the family names as it is keeps its name; one it lacks shows as its first state in
    // flight, or as `failed` once ended.
    statusOf: (phase) => names[phase] ?? (statuses.includes(phase) ? phase : isInFlight(phase) ? statuses[0]! : 'failed'),
  };
}

/** Video task: queued → running → succeeded | failed | expired | cancelled (spec, "States and transitions"). */
export const VIDEO = rules('video', { runs: 'upstream', protocol: 'tasks', routes: { base: '/v1/videos/generations', poll: true }, unit: 'second' }, { created: 'queued' }, ['queued', 'running', 'succeeded', 'failed', 'expired', 'cancelled']);

/** Image task (async): queued → running → succeeded | failed; a task past its 280 s, or interrupted by a
 * deployment, is `failed` (the spec gives images no other ending). */
export const IMAGE = rules('image', { runs: 'gateway', protocol: 'images', routes: { base: '/v1/images/generations', poll: true }, unit: 'image' }, { created: 'queued', expired: 'failed', cancelled: 'failed' }, ['queued', 'running', 'succeeded', 'failed'], {
  in_flight: ['queued', 'running'],
});

/** Music task: processing → succeeded | failed | expired | cancelled. */
export const MUSIC = rules('music', { runs: 'upstream', protocol: 'tasks', routes: { base: '/v1/music/generations', poll: true }, unit: 'call' }, { created: 'processing', queued: 'processing', running: 'processing' }, ['processing', 'succeeded', 'failed', 'expired', 'cancelled']);

/** Speech task (async): pending → succeeded | failed. */
export const SPEECH = rules('speech', { runs: 'gateway', protocol: 'speech', routes: { base: '/v1/audio/speech', poll: true }, unit: 'character' }, { created: 'pending', queued: 'pending', running: 'pending', expired: 'failed', cancelled: 'failed' }, ['pending', 'succeeded', 'failed']);

/** Transcript extraction: a short task the client waits for; named like a video task. The request that
 * submitted it polls it to its end itself (nobody else would receive the text), so it counts as a run of
 * the gateway's own: a restart or another instance never follows and settles it; its deadline expires it. */
export const TRANSCRIPT = rules('transcript', { runs: 'gateway', protocol: 'tasks', routes: null, unit: 'call' }, { created: 'queued' }, ['queued', 'running', 'succeeded', 'failed', 'expired', 'cancelled']);

/** Voice clone: a short task; its voice is `ready` once cloned. */
export const VOICE = rules('voice', { runs: 'gateway', protocol: 'speech', routes: { base: '/v1/audio/voices', poll: false }, unit: 'voice' }, { created: 'pending', queued: 'pending', running: 'pending', succeeded: 'ready', expired: 'failed', cancelled: 'failed' }, [
  'pending',
  'ready',
  'failed',
]);

/** Avatar: an upstream task; pending → ready | failed (the spec's avatar states). An avatar the upstream
 * expired or cancelled is `failed` too: the spec gives avatars no other ending. */
export const AVATAR = rules('avatar', { runs: 'upstream', protocol: 'tasks', routes: { base: '/v1/videos/avatars', poll: true }, unit: 'call' }, { created: 'pending', queued: 'pending', running: 'pending', succeeded: 'ready', expired: 'failed', cancelled: 'failed' }, [
  'pending',
  'ready',
  'failed',
]);

export const FAMILIES: Readonly<Record<TaskFamily, FamilyRules>> = {
  video: VIDEO,
  image: IMAGE,
  music: MUSIC,
  speech: SPEECH,
  transcript: TRANSCRIPT,
  voice: VOICE,
  avatar: AVATAR,
};

/**
 * A list's `status` query as a set of statuses: comma-separated statuses or groups of the family;
 * absent or empty = every status. Null when a word is none of them (the caller's 400).
 */
export function statusFilter(family: FamilyRules, query: string | undefined): readonly string[] | null {
  if (query === undefined || query.trim() === '') return family.statuses;
  const out = new Set<string>();
  for (const raw of query.split(',')) {
    const word = raw.trim();
    const group = family.groups[word];
    if (group) group.forEach((s) => out.add(s));
    else if (family.statuses.includes(word)) out.add(word);
    else return null;
  }
  return [...out];
}
