// Flags as the admin API's bodies: allow-lists, whole numbers with their "none" words, key and agent
// bodies. A bad flag is a usage error here, never a body the API would read another way.
import { UsageError } from './usage';

const orNull = (v: string | undefined, nullWord: string) => (v === undefined ? undefined : v === nullWord ? null : v);

/** A flag's whole number, or null for its "none" word. Anything else is refused here: sent on, a
 * value that is not a number became null in the JSON body, which the API takes as "no limit". */
export function wholeNumber(value: string, flag: string, noneWord: string): number | null {
  if (value === noneWord) return null;
  if (!/^\d{1,15}$/.test(value)) throw new UsageError(`${flag} takes a whole number or "${noneWord}", not "${value}"`);
  return Number(value);
}

/** `--models a,b`; `all` for every model (null), `none` for no model (an empty allow-list). An empty
 * value is refused: `--models "$UNSET"` must not lock the key out of every model. */
function allowList(value: string): string[] | null {
  if (value === 'all') return null;
  if (value === 'none') return [];
  const ids = value.split(',').map((m) => m.trim()).filter(Boolean);
  if (ids.length === 0) throw new UsageError('--models takes model ids separated by commas, "all" or "none"');
  return ids;
}

export function keyBody(values: Record<string, string | boolean | undefined>) {
  const models = values.models as string | undefined;
  const expires = values['expires-at'] as string | undefined;
  const cap = orNull(values['spend-cap'] as string | undefined, 'none');
  const group = orNull(values.group as string | undefined, 'none');
  return {
    ...(values.name !== undefined ? { name: values.name } : {}),
    ...(models !== undefined ? { allowed_models: allowList(models) } : {}),
    ...(expires !== undefined ? { expires_at: wholeNumber(expires, '--expires-at', 'never') } : {}),
    ...(cap !== undefined ? { spend_cap_usd: cap } : {}),
    ...(group !== undefined ? { group } : {}),
    ...(values.disable || values.disabled ? { enabled: false } : values.enable ? { enabled: true } : {}),
  };
}

export const list = (text: string) => text.split(',').map((item) => item.trim()).filter(Boolean);

/** An agent's settings from the flags given (only those: an update changes nothing else). */
export function agentBody(values: Record<string, string | boolean | undefined>): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  if (typeof values.name === 'string') body.name = values.name;
  if (typeof values.prompt === 'string') body.system_prompt = values.prompt;
  if (typeof values.model === 'string') body.model = values.model === 'none' ? null : values.model;
  if (typeof values.kbs === 'string') body.kb_ids = list(values.kbs);
  if (typeof values.temperature === 'string') {
    const t = Number(values.temperature);
    if (values.temperature !== 'none' && !(t >= 0 && t <= 2)) throw new UsageError('--temperature must be between 0 and 2, or none');
    body.temperature = values.temperature === 'none' ? null : t;
  }
  if (values['web-search'] || values['no-web-search']) body.web_search = values['web-search'] === true;
  if (values.drawing || values['no-drawing']) body.drawing = values.drawing === true;
  if (values.publish || values.unpublished) body.published = values.publish === true;
  return body;
}

/** parseArgs' refusals (an unknown or misspelt flag, a flag without its value) are usage errors. */
export const isUsageError = (error: unknown) => error instanceof UsageError || String((error as { code?: unknown } | null)?.code).startsWith('ERR_PARSE_ARGS');
