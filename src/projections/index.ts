import { accountsProjection } from './accounts/projection';
import { auditProjection } from './audit/projection';
import { channelsProjection } from './channels/projection';
import { callLogProjection } from './call-log/projection';
import { enterprisesProjection } from './enterprises/projection';
import { keysProjection } from './keys/projection';
import { knowledgeProjection } from './knowledge/projection';
import { ledgerProjection } from './ledger/projection';
import { paymentsProjection } from './payments/projection';
import type { Projection } from './projection';
import { tasksProjection } from './tasks/projection';

export const allProjections: readonly Projection[] = [accountsProjection, keysProjection, ledgerProjection, auditProjection, knowledgeProjection, callLogProjection, tasksProjection, enterprisesProjection, channelsProjection, paymentsProjection];
