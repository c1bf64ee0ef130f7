import { describe, expect, it } from 'vitest';
import { callerGroup } from './groups';

const caller = (key: string | null | undefined, account: string | null, agentId: string | null = null) => ({
  key: { settings: key === undefined ? {} : { group: key }, agentId },
  wallet: { group: account },
});

describe('callerGroup', () => {
  it("is the key's group, else the account's, else none (every channel)", () => {
    expect(callerGroup(caller('premium', 'default'))).toBe('premium');
    expect(callerGroup(caller(null, 'default'))).toBe('default');
    expect(callerGroup(caller(undefined, 'default'))).toBe('default');
    expect(callerGroup(caller(null, null))).toBeNull();
    expect(callerGroup(null)).toBeNull();
  });

  it('an agent key routes as its enterprise account, whatever its own settings say', () => {
    expect(callerGroup(caller('premium', 'default', 'agent_1'))).toBe('default');
    expect(callerGroup(caller('premium', null, 'agent_1'))).toBeNull();
  });
});
