import type { FastifyInstance } from 'fastify';
import Stripe from 'stripe';
import type { PaymentMetrics } from '../../metrics/payments';
import type { Payments } from '../../payments/service';
import { noticeOf } from '../../payments/stripe-webhook';
import { GatewayError } from '../errors';
import type { RouteDoc } from '../openapi/route-doc';

/** Stripe's events are a few kilobytes; a megabyte leaves room for a session with many line items. */
const WEBHOOK_BYTES = 1024 * 1024;

const DOC: RouteDoc = {
  operationId: 'stripeWebhook',
  summary: "Stripe's webhook: checkout sessions paid, refunds, lost disputes",
  description:
    "Signed by Stripe (`Stripe-Signature`, verified with STRIPE_WEBHOOK_SECRET over the raw body; a signature older than 5 minutes is refused): 400 and nothing changed otherwise. A paid session credits its top-up once, whatever the number of deliveries; a session the gateway never opened is recorded for the operator and not credited (200). Mounted only when Stripe is configured.",
  tags: ['operations'],
  body: { raw: "Stripe's event, JSON, as Stripe signed it." },
  responses: { 200: { description: '`{received: true, outcome}`.' } },
};

export interface StripeWebhookDeps {
  readonly payments: Payments;
  readonly stripe: Stripe;
  readonly webhookSecret: string;
  readonly metrics: PaymentMetrics;
}

/** `POST /webhooks/stripe`: its own scope, where a JSON body stays the raw bytes the signature covers. */
export function stripeWebhookRoutes(deps: StripeWebhookDeps) {
  return async (app: FastifyInstance) => {
    app.removeContentTypeParser('application/json');
    app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
    app.post('/webhooks/stripe', { bodyLimit: WEBHOOK_BYTES, config: { auth: 'none', openapi: DOC } }, async (request) => {
      const signature = request.headers['stripe-signature'];
      let event: Stripe.Event;
      try {
        if (!Buffer.isBuffer(request.body) || typeof signature !== 'string') throw new Error('a JSON body and a Stripe-Signature header are required');
        event = deps.stripe.webhooks.constructEvent(request.body, signature, deps.webhookSecret);
      } catch (error) {
        deps.metrics.delivered('bad_signature');
        throw new GatewayError('invalid_request', `webhook refused: ${error instanceof Error ? error.message : String(error)}`);
      }
      try {
        const outcome = await deps.payments.apply(noticeOf(event));
        deps.metrics.delivered(outcome);
        if (outcome === 'unmatched' || outcome === 'failed') request.log.warn({ stripe_event: event.id, type: event.type, outcome }, 'stripe webhook set aside');
        return { received: true, outcome };
      } catch (error) {
        // Answered 500: Stripe delivers it again later.
        deps.metrics.delivered('error');
        throw error;
      }
    });
  };
}
