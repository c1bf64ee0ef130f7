import type { RouteOptions } from 'fastify';

type HookName = 'onRequest' | 'preValidation' | 'preHandler' | 'onSend' | 'onResponse';

/**
 * Adds a hook to one route (from an `onRoute` hook), after the route's own hooks of that kind.
 * A plugin whose hooks concern only some routes attaches them there, so that every other
 * request does not pay for a hook that returns at once.
 */
export function addRouteHook(route: RouteOptions, name: HookName, hook: unknown): void {
  const existing = route[name] as unknown;
  const hooks = existing === undefined ? [] : Array.isArray(existing) ? existing : [existing];
  (route as unknown as Record<HookName, unknown[]>)[name] = [...hooks, hook];
}
