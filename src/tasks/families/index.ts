import type { TaskFamily } from '../../events/catalog';
import type { DeliveryOf } from '../delivery';
import { avatarDelivery } from './avatar';
import { musicDelivery } from './music';
import { transcriptDelivery } from './transcript';
import { videoDelivery } from './video';

/** How each family that polls an upstream task reads its result. */
export const DELIVERIES: Partial<Record<TaskFamily, DeliveryOf>> = {
  video: videoDelivery,
  music: musicDelivery,
  transcript: transcriptDelivery,
  avatar: avatarDelivery,
};
