/**
 * Smart clip: the templates endpoints of the clip channels' upstream (`GET …/api/v3/clip-templates?scene=…`,
 * `GET …/api/v3/clip-templates/{id}`) and the clip family of the content-generation tasks API (a submit
 * with `style_id`).
 */
import { asRecord } from '../conversation';
import { vendorError } from '../errors';
import { sendJson, type Ctx } from '../http';
import type { Rejection, SubmitContext, TaskResult } from './tasks';

export const CLIP_FPS = 25;
/** A clip's delivered length without `task_duration_ms` or a (news) `duration`. */
export const DEFAULT_CLIP_SECONDS = 60;

export interface SimClipTemplate {
  readonly id: string;
  readonly title: string;
  readonly has_title: boolean;
  readonly has_persona: boolean;
}

/** The templates of each scene: one of each kind of flags somewhere, so tests can exercise both. */
export const CLIP_TEMPLATES: Readonly<Record<string, readonly SimClipTemplate[]>> = {
  virtualman: [
    { id: 'vm-anchor', title: 'Virtual anchor', has_title: true, has_persona: true },
    { id: 'vm-plain', title: 'Virtual presenter, plain', has_title: false, has_persona: false },
  ],
  realMan: [
    { id: 'rm-talk', title: 'Talking head with captions', has_title: true, has_persona: true },
    { id: 'rm-bare', title: 'Talking head, no title', has_title: false, has_persona: true },
    { id: 'rm-vlog', title: 'Vlog cut', has_title: true, has_persona: false },
  ],
  oralMixCutting: [
    { id: 'mix-promo', title: 'Voice-over promo', has_title: true, has_persona: true },
    { id: 'mix-clean', title: 'Voice-over, no overlays', has_title: false, has_persona: false },
  ],
  newsMixCutting: [
    { id: 'news-daily', title: 'Daily news', has_title: true, has_persona: true },
    { id: 'news-flash', title: 'News flash', has_title: true, has_persona: false },
  ],
};

function findTemplate(id: string): { scene: string; template: SimClipTemplate } | undefined {
  for (const [scene, templates] of Object.entries(CLIP_TEMPLATES)) {
    const template = templates.find((t) => t.id === id);
    if (template) return { scene, template };
  }
  return undefined;
}

const coverOf = (baseUrl: string, id: string) => `${baseUrl}/files/${id}-cover.png`;

/** A template as the list gives it. */
const summary = (baseUrl: string, t: SimClipTemplate) => ({ id: t.id, title: t.title, cover_url: coverOf(baseUrl, t.id), has_title: t.has_title, has_persona: t.has_persona });

/** The canvas and its layers: a background, the footage, subtitles, and the title and persona layers the flags say. */
function detail(baseUrl: string, scene: string, t: SimClipTemplate) {
  const layers: Array<Record<string, unknown>> = [
    { id: 'background', type: 'image', z: 0, box: { x: 0, y: 0, width: 1080, height: 1920 } },
    { id: 'footage', type: 'video', z: 1, box: { x: 0, y: 240, width: 1080, height: 1440 } },
    { id: 'subtitles', type: 'subtitle', z: 3, box: { x: 60, y: 1560, width: 960, height: 160 } },
  ];
  if (t.has_title) layers.push({ id: 'title', type: 'text', z: 4, box: { x: 60, y: 80, width: 960, height: 140 } });
  if (t.has_persona) layers.push({ id: 'persona', type: 'card', z: 4, box: { x: 60, y: 1380, width: 600, height: 160 } });
  return { ...summary(baseUrl, t), scene, canvas: { width: 1080, height: 1920, ratio: '9:16', fps: CLIP_FPS }, layers };
}

function fail(ctx: Ctx, status: number, message: string): void {
  const e = vendorError('videos', status, message);
  sendJson(ctx, e.status, e.body, e.headers);
}

/** GET …/clip-templates?scene= (an unknown or missing scene: 400) and GET …/clip-templates/{id} (unknown: 404). */
export function handleClipTemplates(ctx: Ctx, id: string | undefined): void {
  const base = ctx.sim.baseUrl;
  if (id !== undefined) {
    const found = findTemplate(id);
    if (!found) return fail(ctx, 404, `The specified template ${id} is not found.`);
    return sendJson(ctx, 200, detail(base, found.scene, found.template));
  }
  const scene = ctx.url.searchParams.get('scene') ?? '';
  const templates = CLIP_TEMPLATES[scene];
  if (!templates) return fail(ctx, 400, 'The parameter `scene` specified in the request is not valid.');
  sendJson(ctx, 200, { templates: templates.map((t) => summary(base, t)) });
}

/** A clip submit: `style_id` must name a template; the video lasts `task_duration_ms`, else a sent `duration`, else 60 s. */
export function clipSubmission(b: Record<string, unknown>, s: SubmitContext): TaskResult | Rejection {
  const styleId = asRecord(b).style_id;
  if (typeof styleId !== 'string' || !findTemplate(styleId)) return { status: 400, message: 'The parameter `style_id` specified in the request is not valid.' };
  const asked = Number(b.duration);
  const duration = s.scenario.taskDurationMs !== undefined ? s.scenario.taskDurationMs / 1000 : Number.isFinite(asked) && asked > 0 ? asked : DEFAULT_CLIP_SECONDS;
  return { content: { video_url: `${s.baseUrl}/files/${s.id}.mp4` }, duration, framespersecond: CLIP_FPS };
}
