/** The upstream simulator: a real HTTP server speaking the vendors' wire formats, for tests and the demo. */
export { startSimulator } from './server';
export type {
  Protocol,
  RecordedRequest,
  Scenario,
  ScenarioFilter,
  ScenarioSet,
  Simulator,
  SimulatorOptions,
  UploadedFile,
} from './types';
export {
  CACHE_MARKER,
  cachedTokensFor,
  countTokens,
  outputTokens,
  promptDocument,
  promptTokens,
  reasoningTokensFor,
  truncateToTokens,
  utf8Bytes,
  type ReasoningEffort,
} from './tokens';
export { deepStrings, markersIn, stripMarkers, validateScenario, ScenarioError, MARKER_RE } from './scenarios';
export { googleKeyInvalid, STREAM_ERRORS, vendorError } from './errors';
export { GARBAGE_BODY } from './http';
export { imageTokens, isGrid4, PNG_BASE64 } from './protocols/images';
export { videoTokens, VIDEO_FPS } from './protocols/videos';
export { CLIP_FPS, CLIP_TEMPLATES, DEFAULT_CLIP_SECONDS, type SimClipTemplate } from './protocols/clip';
export { taskFamily, FAMILY_PROTOCOL, type TaskFamily, type TaskStatus } from './protocols/tasks';
export { DEFAULT_SONG_SECONDS, lyricsFor, MUSIC_ACTIONS, SONGS_PER_TASK } from './protocols/music';
export { transcriptOf, type Transcript } from './protocols/transcripts';
export { MAX_SPEECH_CHARACTERS, speechCharacters } from './protocols/speech';
export {
  AAC_FRAME_BYTES,
  AAC_FRAME_SAMPLES,
  AUDIO_CONTENT_TYPES,
  AUDIO_FORMATS,
  encodeAudio,
  FLAC_BLOCK,
  MP3_FRAME_BYTES,
  MP3_FRAME_SAMPLES,
  MS_PER_CHARACTER,
  SAMPLE_RATE,
  speechSamples,
  type AudioFormat,
} from './audio';
export { FILE_AUDIO_SAMPLES } from './files';

/** Closes a freshly bound port and returns its URL: connecting to it is refused (for "connection refused" tests). */
export async function refusedUrl(): Promise<string> {
  const { createServer } = await import('node:net');
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}
