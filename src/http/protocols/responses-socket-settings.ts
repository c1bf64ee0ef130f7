// The Responses WebSocket's settings (docs/responses-websocket.md), apart from the socket itself: the
// settings are read by every command, and the CLI's client commands must not load the socket's
// dependencies (@fastify/websocket, undici) to read them.

export interface ResponsesSocketSettings {
  /** RESPONSES_WEBSOCKET (default on): off answers an upgrade 426, and the client falls back to HTTP. */
  readonly enabled: boolean;
  /** RESPONSES_WEBSOCKET_IDLE_S (default 300): a socket with no response for this long is closed (1000). */
  readonly idleMs: number;
}

export const RESPONSES_SOCKET_DEFAULTS: ResponsesSocketSettings = { enabled: true, idleMs: 300_000 };

/** The settings from the environment; a malformed value is refused at start. */
export function responsesSocketSettingsOf(env: NodeJS.ProcessEnv): ResponsesSocketSettings {
  const flag = env.RESPONSES_WEBSOCKET?.trim().toLowerCase();
  if (flag !== undefined && flag !== '' && !['on', 'off', 'true', 'false', '1', '0'].includes(flag)) throw new Error('RESPONSES_WEBSOCKET must be on or off');
  const idle = env.RESPONSES_WEBSOCKET_IDLE_S?.trim();
  const idleS = idle === undefined || idle === '' ? RESPONSES_SOCKET_DEFAULTS.idleMs / 1000 : Number(idle);
  if (!Number.isInteger(idleS) || idleS < 1 || idleS > 86_400) throw new Error('RESPONSES_WEBSOCKET_IDLE_S must be a whole number of seconds from 1 to 86400');
  return { enabled: !(flag === 'off' || flag === 'false' || flag === '0'), idleMs: idleS * 1000 };
}
