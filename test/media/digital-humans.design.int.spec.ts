import { writeSkuConfigAs } from './task-support';

// The digital-human specs again, with the config written exactly as DESIGN.md says: the spec's SKU ids
// (dh-avatar, dh-lipsync, dh-lipsync-pro, dh-lipsync-max, dh-motion) with `kind: video` and no
// `video.kind`, read through the config file's schema (issue 33).
writeSkuConfigAs('design');
await import('./digital-humans.int.spec');
