import { InProcessJobQueue } from './in-process';
import type { JobQueue, JobQueueOptions } from './port';
import type { BullMqJobQueueOptions } from './bullmq';

export type { JobContext, JobHandler, JobOutcome, JobQueue, JobQueueOptions, RunOutcome } from './port';
export { JobQueueClosedError, JobQueueUnavailableError } from './port';
export type { BullMqJobQueueOptions } from './bullmq';
export { InProcessJobQueue } from './in-process';

export type CreateJobQueueOptions = JobQueueOptions &
  Partial<Omit<BullMqJobQueueOptions, 'redisUrl'>> & {
    /** BullMQ on this Redis (jobs shared by every instance, kept across restarts); unset: this process only. */
    readonly redisUrl?: string | undefined;
  };

/** BullMQ when a Redis URL is given, else in-process timers. bullmq and ioredis are loaded only in the first case. */
export async function createJobQueue(options: CreateJobQueueOptions = {}): Promise<JobQueue> {
  const { redisUrl, ...rest } = options;
  if (redisUrl) {
    const { BullMqJobQueue } = await import('./bullmq');
    return new BullMqJobQueue({ ...rest, redisUrl });
  }
  return new InProcessJobQueue(rest);
}
