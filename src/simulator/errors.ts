/** Each vendor's own error body for a status code. */
import type { Protocol } from './types';

export interface ErrorResponse {
  readonly status: number;
  readonly body: unknown;
  readonly headers: Record<string, string>;
}

const OPENAI: Record<number, { type: string; code: string | null; message: string }> = {
  400: { type: 'invalid_request_error', code: null, message: 'Invalid request (simulated).' },
  401: {
    type: 'invalid_request_error',
    code: 'invalid_api_key',
    message: 'Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys.',
  },
  403: { type: 'invalid_request_error', code: 'model_not_found', message: 'Project does not have access to this model.' },
  404: { type: 'invalid_request_error', code: 'model_not_found', message: 'The model does not exist or you do not have access to it.' },
  422: { type: 'invalid_request_error', code: null, message: 'Unprocessable request (simulated).' },
  429: { type: 'requests', code: 'rate_limit_exceeded', message: 'Rate limit reached for requests. Please try again in 1s.' },
  500: { type: 'server_error', code: null, message: 'The server had an error while processing your request. Sorry about that!' },
  502: { type: 'server_error', code: null, message: 'Bad gateway.' },
  503: { type: 'server_error', code: null, message: 'The engine is currently overloaded, please try again later.' },
  504: { type: 'server_error', code: null, message: 'Gateway timeout.' },
};

const ANTHROPIC: Record<number, { type: string; message: string }> = {
  400: { type: 'invalid_request_error', message: 'Invalid request (simulated).' },
  401: { type: 'authentication_error', message: 'invalid x-api-key' },
  403: { type: 'permission_error', message: 'Your API key does not have permission to use the specified resource.' },
  404: { type: 'not_found_error', message: 'The requested resource could not be found.' },
  413: { type: 'request_too_large', message: 'Request exceeds the maximum allowed number of bytes.' },
  422: { type: 'invalid_request_error', message: 'Unprocessable request (simulated).' },
  429: { type: 'rate_limit_error', message: 'Number of request tokens has exceeded your per-minute rate limit.' },
  500: { type: 'api_error', message: 'Internal server error' },
  502: { type: 'api_error', message: 'Bad gateway' },
  503: { type: 'overloaded_error', message: 'Overloaded' },
  504: { type: 'api_error', message: 'Gateway timeout' },
  529: { type: 'overloaded_error', message: 'Overloaded' },
};

const GOOGLE_STATUS: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  409: 'ABORTED',
  422: 'INVALID_ARGUMENT',
  429: 'RESOURCE_EXHAUSTED',
  499: 'CANCELLED',
  500: 'INTERNAL',
  501: 'UNIMPLEMENTED',
  502: 'UNAVAILABLE',
  503: 'UNAVAILABLE',
  504: 'DEADLINE_EXCEEDED',
};

const GOOGLE_MESSAGE: Record<string, string> = {
  INVALID_ARGUMENT: 'Request contains an invalid argument.',
  UNAUTHENTICATED: 'API key not valid. Please pass a valid API key.',
  PERMISSION_DENIED: 'The caller does not have permission',
  NOT_FOUND: 'Requested entity was not found.',
  RESOURCE_EXHAUSTED: 'Resource has been exhausted (e.g. check quota).',
  INTERNAL: 'An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting',
  UNAVAILABLE: 'The model is overloaded. Please try again later.',
  DEADLINE_EXCEEDED: 'Deadline expired before operation could complete.',
};

/** BytePlus / Volcengine ModelArk (the content-generation tasks API). */
const ARK: Record<number, { code: string; type: string; message: string }> = {
  400: { code: 'InvalidParameter', type: 'BadRequest', message: 'A parameter specified in the request is not valid.' },
  401: { code: 'AuthenticationError', type: 'Unauthorized', message: 'The API key in the request is missing or invalid.' },
  403: { code: 'AccessDenied', type: 'Forbidden', message: 'You do not have access to this resource.' },
  404: { code: 'ResourceNotFound', type: 'NotFound', message: 'The specified resource is not found.' },
  429: { code: 'RateLimitExceeded', type: 'TooManyRequests', message: 'The request rate limit has been exceeded.' },
  500: { code: 'InternalServiceError', type: 'InternalServerError', message: 'The service encountered an unexpected internal error.' },
  503: { code: 'ServiceUnavailable', type: 'ServiceUnavailable', message: 'The service is temporarily unavailable.' },
};

export function googleStatus(status: number): string {
  return GOOGLE_STATUS[status] ?? (status >= 500 ? 'INTERNAL' : 'FAILED_PRECONDITION');
}

function anthropicType(status: number): string {
  return ANTHROPIC[status]?.type ?? (status >= 500 ? 'api_error' : 'invalid_request_error');
}

/**
 * The error response a vendor gives for `status`. `message` overrides the default text.
 * `requestId` goes where the vendor puts one (Anthropic's body `request_id`).
 */
export function vendorError(protocol: Protocol, status: number, message?: string, requestId = 'req_sim'): ErrorResponse {
  const headers: Record<string, string> = status === 429 ? { 'retry-after': '1' } : {};
  switch (protocol) {
    case 'chat-completions':
    case 'responses':
    case 'images':
    case 'speech': {
      const d = OPENAI[status] ?? {
        type: status >= 500 ? 'server_error' : 'invalid_request_error',
        code: null,
        message: `HTTP ${status} (simulated).`,
      };
      return {
        status,
        headers,
        body: { error: { message: message ?? d.message, type: d.type, param: null, code: d.code } },
      };
    }
    case 'messages': {
      const d = ANTHROPIC[status];
      return {
        status,
        headers,
        body: {
          type: 'error',
          error: { type: anthropicType(status), message: message ?? d?.message ?? `HTTP ${status} (simulated).` },
          request_id: requestId,
        },
      };
    }
    case 'generate-content': {
      const s = googleStatus(status);
      return {
        status,
        headers,
        body: { error: { code: status, message: message ?? GOOGLE_MESSAGE[s] ?? `HTTP ${status} (simulated).`, status: s } },
      };
    }
    case 'videos':
    case 'music':
    case 'transcripts':
    case 'avatars': {
      const d = ARK[status] ?? {
        code: status >= 500 ? 'InternalServiceError' : 'InvalidParameter',
        type: status >= 500 ? 'InternalServerError' : 'BadRequest',
        message: `HTTP ${status} (simulated).`,
      };
      return { status, headers, body: { error: { code: d.code, message: message ?? d.message, param: '', type: d.type } } };
    }
  }
}

/**
 * Gemini's answer to an API key it does not accept (a wrong or revoked one): not a 401 but a 400
 * INVALID_ARGUMENT, told apart from other 400s by its `google.rpc.ErrorInfo` reason `API_KEY_INVALID`.
 */
export function googleKeyInvalid(): ErrorResponse {
  const message = 'API key not valid. Please pass a valid API key.';
  return {
    status: 400,
    headers: {},
    body: {
      error: {
        code: 400,
        message,
        status: 'INVALID_ARGUMENT',
        details: [
          { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'API_KEY_INVALID', domain: 'googleapis.com', metadata: { service: 'generativelanguage.googleapis.com' } },
          { '@type': 'type.googleapis.com/google.rpc.LocalizedMessage', locale: 'en-US', message },
        ],
      },
    },
  };
}

/** The in-stream error frame payloads (what `error_frame_after:<n>` sends). */
export const STREAM_ERRORS = {
  openai: { message: 'The server had an error while processing your request. Sorry about that!', type: 'server_error', param: null, code: null },
  anthropic: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } },
  google: { error: { code: 503, message: 'The model is overloaded. Please try again later.', status: 'UNAVAILABLE' } },
} as const;
