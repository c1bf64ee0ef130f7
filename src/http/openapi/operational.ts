import type { RouteDoc } from './route-doc';

/** `GET /openapi.json`: this description. */
export const OPENAPI_DOC: RouteDoc = {
  operationId: 'getOpenApiDocument',
  summary: 'This API description (OpenAPI 3.1)',
  description: 'Public: no key, not rate limited. Request and answer schemas are generated from zod schemas (the routes’ own, src/http/openapi/answers/).',
  tags: ['operations'],
  responses: { 200: { description: 'The OpenAPI 3.1 document.' } },
};

/**
 * Descriptions of the operational endpoints, by `METHOD url`: their routes live with the runtime and
 * the metrics (and answer outside the API's conventions), so they are described here rather than in
 * each route's config. An entry whose route is not registered is not in the document.
 */
export const OPERATIONAL_DOCS: Readonly<Record<string, RouteDoc>> = {
  'GET /healthz': {
    operationId: 'getHealth',
    summary: 'Liveness: the process answers',
    tags: ['operations'],
    responses: { 200: { description: '`{"status": "ok"}`.' } },
  },
  'GET /readyz': {
    operationId: 'getReadiness',
    summary: 'Readiness: the event store, the projection database and Redis answer, and projections are within their lag',
    tags: ['operations'],
    responses: {
      200: { description: 'Ready to take traffic.' },
      503: { description: 'Not ready (a part failing, or shutting down): the failing part is named.' },
    },
  },
  'GET /metrics': {
    operationId: 'getMetrics',
    summary: 'Prometheus metrics (text exposition format)',
    description:
      'Needs `Authorization: Bearer <METRICS_TOKEN>` when the operator set `METRICS_TOKEN`. Without it the metrics are served only by a gateway listening on loopback (`HOST` 127.0.0.1, ::1 or localhost); one listening beyond (the image\'s 0.0.0.0) refuses them.',
    tags: ['operations'],
    security: [{}, { metricsToken: [] }],
    errorSchema: 'AdminError',
    responses: { 200: { description: 'The metrics.', mediaTypes: ['text/plain'] } },
    errors: {
      401: '`METRICS_TOKEN` is set and the request did not send it: `unauthorized`.',
      403: '`METRICS_TOKEN` is unset and the gateway listens beyond loopback: `metrics_token_required`.',
    },
  },
};
