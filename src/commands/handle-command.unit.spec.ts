import { v5 as uuidv5 } from 'uuid';
import { describe, expect, it } from 'vitest';
import { eventIdFor } from './handle-command';

describe('eventIdFor', () => {
  // Ids already in the log must stay what they were: a retried command is recognised by them.
  it('is the UUID v5 of "<command id>#<index>" in the event-id namespace, non-ASCII names included', () => {
    for (const commandId of ['reserve:req_0123456789abcdef', 'settle:req_x', 'topup:café-€-😀'])
      for (const index of [0, 1, 12]) expect(eventIdFor(commandId, index)).toBe(uuidv5(`${commandId}#${index}`, '6f1d3c1e-2b7a-4c55-9d0e-3f6a8b9c0d21'));
  });
});
