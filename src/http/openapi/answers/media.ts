import { z } from 'zod';
import { ClipTemplate as ClipTemplateAnswer, ClipTemplateList } from '../../../upstream/protocols/clip-templates';
import { FAMILIES } from '../../../commands/task/families';
import { ERROR_SCHEMAS } from '../error-shapes';

/**
 * The media endpoints' answers: submissions, the task objects of polls and lists (their statuses are the
 * families' own, src/commands/task/families.ts), images, voices, avatars, clip templates, transcripts.
 * Binary answers (speech audio, hosted files) are described by their media types, not here.
 */

const Unix = z.number().int().describe('Unix seconds.');
const statusOf = (family: keyof typeof FAMILIES) => z.enum(FAMILIES[family].statuses as [string, ...string[]]);
const TaskError = z.object({ code: z.string(), message: z.string() }).describe('Why the task did not succeed (failed, expired, cancelled).');

/** What a submission answers at once: the task to poll. */
const submitted = (family: keyof typeof FAMILIES) => z.object({ id: z.string(), status: statusOf(family), model: z.string(), created_at: Unix });

export const ImagesAnswer = z.looseObject({
  created: z.number().int(),
  expires_at: Unix.optional().describe('When the hosted `url`s expire.'),
  data: z.array(z.looseObject({ url: z.string().optional(), b64_json: z.string().optional(), revised_prompt: z.string().optional() })),
  usage: z.looseObject({}).optional(),
});

export const Images = z
  .union([ImagesAnswer, submitted('image').describe('`async: true`: the task to poll.'), ERROR_SCHEMAS.ChatError.describe('A failure after the 90 s commitment to a 200.')])
  .meta({ description: 'The images (synchronous), the task (`async: true`), or a failure that came after the gateway committed to a 200.' });

export const ImageTaskPending = submitted('image').meta({ description: 'An image task still queued or running: poll again.' });

const ImageTaskItem = z.object({
  id: z.string(),
  status: statusOf('image'),
  model: z.string(),
  endpoint: z.enum(['generations', 'edits']),
  created_at: Unix,
  started_at: Unix.nullable(),
  completed_at: Unix.nullable(),
  unit_count: z.number().int().nullable().describe('Images billed; null while in flight.'),
  cost: z.string().nullable().describe('USD; null while in flight.'),
  error_code: z.string().nullable(),
  request_id: z.string(),
  result: z.object({ urls: z.array(z.string()), expires_at: Unix.nullable() }).optional(),
});
export const ImageTaskList = z.object({ data: z.array(ImageTaskItem), next_cursor: z.string().nullable() }).meta({ description: "The account's async image tasks." });

/** Fields every poll shows; the family's own follow (each only when it applies). */
const taskHead = (family: keyof typeof FAMILIES) => ({ id: z.string(), status: statusOf(family), model: z.string(), created_at: Unix, updated_at: Unix });

export const VideoTask = z
  .looseObject({
    ...taskHead('video'),
    progress: z.number().optional(),
    video_url: z.string().optional(),
    expires_at: Unix.optional(),
    duration: z.number().optional(),
    usage: z.looseObject({}).optional(),
    error: TaskError.optional(),
  })
  .meta({ description: 'A video task: the submitted fields echoed; `progress` in flight; `video_url`, `expires_at` and the delivered `duration` / `usage` once succeeded; `error` otherwise.' });
export const VideoTaskList = z.object({ data: z.array(VideoTask) }).meta({ description: "The account's video tasks." });
export const VideoSubmitted = submitted('video').meta({ description: 'The video task, queued.' });

export const MusicTask = z
  .looseObject({
    ...taskHead('music'),
    action: z.string().optional().describe('A follow-up: what it does.'),
    progress: z.number().optional(),
    songs: z.array(z.looseObject({})).optional(),
    files: z.array(z.looseObject({ name: z.string().optional(), url: z.string().optional(), format: z.string().optional() })).optional(),
    lyrics: z.looseObject({ title: z.string().optional(), text: z.string().optional() }).optional(),
    expires_at: Unix.nullable().optional(),
    error: TaskError.optional(),
  })
  .meta({ description: 'A music task (a generation or a follow-up).' });
export const MusicTaskList = z.object({ data: z.array(MusicTask) }).meta({ description: "The account's music tasks." });
export const MusicSubmitted = submitted('music').meta({ description: 'The music task, processing.' });
export const MusicAssetSubmitted = submitted('music').extend({ action: z.string() }).meta({ description: 'The follow-up task, processing.' });

export const SpeechTask = z
  .object({
    ...taskHead('speech'),
    audio_url: z.string().optional(),
    expires_at: Unix.optional(),
    response_format: z.string().optional(),
    content_type: z.string().optional(),
    characters: z.number().int().optional(),
    error: TaskError.optional(),
  })
  .meta({ description: 'An asynchronous speech task; succeeded: the hosted audio.' });
export const SpeechTaskList = z.object({ data: z.array(SpeechTask) }).meta({ description: "The account's asynchronous speech tasks." });
export const SpeechSubmitted = submitted('speech').meta({ description: 'With `async: true`: the speech task, pending.' });

const Voice = z.object({ id: z.string(), name: z.string().nullable(), status: statusOf('voice'), created_at: Unix, model: z.string(), error: TaskError.optional() });
export const VoiceCreated = Voice.meta({ description: 'The cloned voice, ready.' });
export const VoiceList = z
  .object({ voices: z.array(Voice), presets: z.array(z.object({ id: z.string(), name: z.string() })) })
  .meta({ description: "The account's own voices, newest first, and the platform's presets." });

export const Avatar = z
  .object({
    id: z.string(),
    name: z.string().nullable(),
    source_kind: z.string(),
    status: statusOf('avatar'),
    error: z.string().nullable(),
    created_at: z.string().describe('RFC 3339.'),
  })
  .meta({ description: 'An avatar and its creation status.' });
export const AvatarList = z.object({ avatars: z.array(Avatar) }).meta({ description: "The account's avatars, newest first." });
export const AvatarDeleted = z.object({ id: z.string(), deleted: z.literal(true) }).meta({ description: 'The avatar was deleted.' });
export const AvatarPresets = z.object({ avatars: z.array(z.object({ id: z.string(), name: z.string() })) }).meta({ description: "The platform's preset avatars." });

export const ClipTemplates = ClipTemplateList.meta({ description: "The clip templates of a scene, as the clip models' upstream lists them." });
export const ClipTemplate = ClipTemplateAnswer.meta({ description: 'A clip template with its canvas and layers.' });

export const Transcript = z
  .object({ id: z.string(), model: z.string(), text: z.string(), language: z.string().nullable(), segments: z.array(z.unknown()).optional() })
  .meta({ description: 'The transcript.' });
