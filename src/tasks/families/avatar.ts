import type { DeliveryOf } from '../delivery';

/**
 * A succeeded avatar task: the upstream's content is `{}`; the task's upstream id (on its stream) is the
 * avatar's reference in later `dh-avatar` calls. One creation is billed (`per_call`), nothing is hosted.
 */
export const avatarDelivery: DeliveryOf = () => ({ result: {}, units: 1, unitCount: 1, resultUrls: [], resultExpiresAt: null });
