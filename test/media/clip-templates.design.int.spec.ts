import { writeSkuConfigAs } from './task-support';

// The clip-template specs again, with the config written exactly as DESIGN.md says: the spec's SKU ids
// (clip-realman, clip-mixcut, clip-news) with `kind: video` and no `video.kind`, read through the config
// file's schema (issue 33).
writeSkuConfigAs('design');
await import('./clip-templates.int.spec');
