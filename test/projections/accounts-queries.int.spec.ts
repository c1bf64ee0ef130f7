import { describe, expect, it } from 'vitest';
import { accountsProjection } from '../../src/projections/accounts/projection';
import { accountIdPage } from '../../src/projections/accounts/queries';
import { projectionSpec, wallet } from './support';

const spec = projectionSpec([accountsProjection]);

describe('accounts/queries.ts', () => {
  it('accountIdPage: account ids in id order (not opening order), after a cursor, with whether more follow', async () => {
    await spec.given([wallet.opened('acct_c', 1000), wallet.opened('acct_a', 1001), wallet.opened('acct_d', 1002), wallet.opened('acct_b', 1003)]);
    expect(await accountIdPage(spec.sql, '', 3)).toEqual({ ids: ['acct_a', 'acct_b', 'acct_c'], more: true });
    expect(await accountIdPage(spec.sql, 'acct_c', 3)).toEqual({ ids: ['acct_d'], more: false });
    expect(await accountIdPage(spec.sql, '', 4)).toEqual({ ids: ['acct_a', 'acct_b', 'acct_c', 'acct_d'], more: false });
    expect(await accountIdPage(spec.sql, 'acct_d', 3)).toEqual({ ids: [], more: false });
    await spec.replayGivesSameRows();
  });
});
