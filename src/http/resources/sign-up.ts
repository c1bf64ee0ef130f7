import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { SignUps } from '../../accounts/sign-up';
import { zodMessage } from '../../config/zod-message';
import type { RouteDoc } from '../openapi/route-doc';
import { GatewayError } from '../errors';
import { baseUrlOf } from './wiki';

// A holder's own sign-up for programs (issue 34): the console's /console/sign-up as JSON, the same service.

const SignUpBody = z
  .object({
    email: z.string().max(254).describe('The address the verification link is mailed to.'),
    password: z.string().max(200).describe('10 to 200 characters; stored as a scrypt hash only.'),
    name: z.string().max(100).describe('The display name (1 to 100 characters).'),
  })
  .strict();

const SIGN_UP_DOC: RouteDoc = {
  operationId: 'signUp',
  summary: 'Open an account of your own (when the gateway takes sign-ups)',
  description:
    "The account is opened at once; the trial credit (`signup.grant_usd`, the spec's 40.44) is granted once the address is verified by the mailed link, unless the operator's config says `require_email_verification: false`. An address that already has an account gets the same answer (its owner is told by mail). No API key: sign in to the console to make one.",
  tags: ['account'],
  body: { json: SignUpBody },
  responses: { 200: { description: '`{status: accepted, message}`.' } },
  errors: {
    400: 'A field that cannot be used (`invalid_request`; the message names it).',
    404: 'Sign-up is switched off on this gateway (`not_found`).',
    429: 'Too many sign-ups from the client address or with the email address (`rate_limit_exceeded`, with `Retry-After`).',
  },
};

export function signUpRoutes(signUps: SignUps, publicBaseUrl: string | undefined) {
  return async (app: FastifyInstance) => {
    app.post('/v1/accounts/sign-up', { bodyLimit: 16 * 1024, config: { auth: 'none', openapi: SIGN_UP_DOC } }, async (request) => {
      const parsed = SignUpBody.safeParse(request.body);
      if (!parsed.success) throw new GatewayError('invalid_request', zodMessage(parsed.error, 'body'));
      const result = await signUps.signUp({ ...parsed.data, ip: request.ip, baseUrl: baseUrlOf(request, publicBaseUrl) });
      if (result.ok) return { status: 'accepted' as const, message: result.message };
      if (result.code === 'signup_disabled') throw new GatewayError('not_found', result.message);
      if (result.code === 'too_many_signups') throw new GatewayError('rate_limit_exceeded', result.message, { 'retry-after': String(result.retryAfter) });
      throw new GatewayError('invalid_request', `${result.field}: ${result.message}`);
    });
  };
}
