import { createHash } from 'node:crypto';

/**
 * What a request is, for the question "is this the same request again?": SHA-256 over the
 * method, the path and a canonical form of the body. The query string is left out on
 * purpose: it may carry the API key (`?key=`), and the key's scope is the account, so two
 * keys of one account sending the same body are the same submission.
 */

/** JSON with object keys sorted (recursively) and no insignificant whitespace, so the
 * same value serialises to the same text however the client ordered its keys. Follows
 * JSON.stringify for everything else (toJSON, undefined members dropped, NaN -> null). */
export function canonicalJson(value: unknown): string {
  const text = canonical(value, true);
  return text ?? 'null';
}

function canonical(value: unknown, inArray: boolean): string | undefined {
  if (value !== null && typeof value === 'object' && typeof (value as { toJSON?: unknown }).toJSON === 'function')
    value = (value as { toJSON(): unknown }).toJSON();
  switch (typeof value) {
    case 'string':
    case 'number':
    case 'boolean':
      return JSON.stringify(value);
    case 'bigint':
      throw new TypeError('canonicalJson: a bigint has no JSON form');
    case 'undefined':
    case 'function':
    case 'symbol':
      return inArray ? 'null' : undefined;
  }
  if (value === null) return 'null';
  if (ArrayBuffer.isView(value)) throw new TypeError('canonicalJson: binary data has no JSON form; fingerprint it as a file part');
  if (Array.isArray(value)) return `[${value.map((item) => canonical(item, true)).join(',')}]`;
  const members: string[] = [];
  for (const name of Object.keys(value as object).sort()) {
    const member = canonical((value as Record<string, unknown>)[name], false);
    if (member !== undefined) members.push(`${JSON.stringify(name)}:${member}`);
  }
  return `{${members.join(',')}}`;
}

function digest(method: string, path: string, kind: string, content: string | Uint8Array): string {
  // Each component on its own line: a method or path cannot contain a newline, so no two
  // (method, path, body) triples hash the same text.
  return createHash('sha256').update(`${method.toUpperCase()}\n${path}\n${kind}\n`).update(content).digest('hex');
}

/** A parsed body as fastify hands it to a route: JSON values canonically, text and bytes as they are. */
export function fingerprintBody(method: string, path: string, body: unknown): string {
  if (body === undefined || body === null) return digest(method, path, 'empty', '');
  if (typeof body === 'string') return digest(method, path, 'text', body);
  if (body instanceof Uint8Array) return digest(method, path, 'bytes', body);
  return digest(method, path, 'json', canonicalJson(body));
}

/** One uploaded file of a multipart body: its contents, or their SHA-256 (hex) taken as they arrived
 * (a route that keeps uploads on disk never has them whole); both fingerprint alike. */
export type FilePart = {
  /** The form field (`image`, `image[]`). */
  readonly name: string;
  readonly filename?: string | undefined;
  readonly contentType?: string | undefined;
} & ({ readonly data: Uint8Array } | { readonly sha256: string });

/** A multipart body taken apart by the route: its text fields (as the JSON values the
 * route made of them) and its files, in the order received. */
export interface BodyParts {
  readonly fields: unknown;
  readonly files: readonly FilePart[];
}

/**
 * A multipart body's fingerprint. The raw bytes cannot serve: the boundary is random per
 * send, so a retry of the same form is different bytes. The fields count canonically (their
 * order does not matter), the files in order (for multi-image fusion it does), each by name,
 * file name, content type and a digest of its contents.
 */
export function fingerprintParts(method: string, path: string, parts: BodyParts): string {
  const files = parts.files.map((file) => ({
    name: file.name,
    filename: file.filename ?? null,
    content_type: file.contentType ?? null,
    sha256: 'sha256' in file ? file.sha256 : createHash('sha256').update(file.data).digest('hex'),
  }));
  return digest(method, path, 'parts', canonicalJson({ fields: parts.fields ?? null, files }));
}
