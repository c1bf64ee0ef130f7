import { setTimeout as sleep } from 'node:timers/promises';
import type { ProtocolAdapter } from '../../upstream/contract';
import { chatProtocol } from '../../upstream/protocols/registry';
import { SHUTDOWN_MESSAGE } from '../../upstream/upstream-call';
import { errorBody, GatewayError } from '../errors';
import type { ClientStream } from './client-stream';

/** Pause before a bare error object so that it reaches the client as a read of its own. */
const BARE_GAP_MS = 50;

/**
 * The last words of a stream the gateway ends because it is shutting down and the stream
 * outlasted SHUTDOWN_GRACE_S: the error frame of the client's protocol, in the error shape of
 * its endpoint (code `gateway_shutting_down`), the way each vendor ends a stream that failed
 * (what the simulator's `error_frame_after` sends), so that SDKs raise an error rather than
 * take a cut stream for a finished one. Each protocol's frame is its registration's
 * `shutdownFrame` (src/upstream/protocols/registry.ts); as a JSON array (generate-content without
 * `alt=sse`) the frame is the error object as the array's last element, and the array closed.
 */
export async function writeShutdownFrame(client: ClientStream, adapter: ProtocolAdapter, framing: 'sse' | 'json-array', elements: number): Promise<void> {
  const error = new GatewayError('gateway_shutting_down', SHUTDOWN_MESSAGE);
  const body = errorBody(adapter.shape, error);
  if (framing === 'json-array') return client.write(`${elements === 0 ? '[' : ',\r\n'}${JSON.stringify(body)}]`);
  const frame = chatProtocol(adapter.protocol).shutdownFrame(body, error);
  if (frame.pauseFirst) await sleep(BARE_GAP_MS);
  return client.write(frame.text);
}
