import type { z } from 'zod';
import type { DomainError } from '../../commands/decision';
import { zodMessage } from '../../config/zod-message';

/** The admin API's errors: `{error: {code, message}}` with an HTTP status. */
export class AdminError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export const STATUS_OF: Record<string, number> = {
  account_not_found: 404,
  key_not_found: 404,
  account_exists: 409,
  key_exists: 409,
  key_revoked: 409,
  key_not_revealable: 409,
  account_inactive: 409,
  topup_reference_conflict: 409,
  kb_not_found: 404,
  page_not_found: 404,
  kb_exists: 409,
  enterprise_not_found: 404,
  member_not_found: 404,
  agent_not_found: 404,
  key_request_not_found: 404,
  escrow_not_found: 404,
  not_a_member: 403,
  not_enterprise_admin: 403,
  key_request_decided: 409,
  // The enterprise cannot fund an escrow (DESIGN.md, "Enterprise agents").
  insufficient_funds: 402,
};

export const fromDomain = (error: DomainError) => new AdminError(STATUS_OF[error.code] ?? 400, error.code, error.message);

export function parse<T>(schema: z.ZodType<T>, body: unknown): T {
  const result = schema.safeParse(body);
  if (result.success) return result.data;
  throw new AdminError(400, 'invalid_request', zodMessage(result.error));
}
