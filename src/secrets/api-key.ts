import { createCipheriv, createDecipheriv, hash, randomBytes } from 'node:crypto';

/** `sk-` + 8 alphanumerics + `-` (the 12-character prefix) + 64 hex characters = 76. */
export const API_KEY_LENGTH = 76;
const API_KEY_SHAPE = /^sk-[A-Za-z0-9]{8}-[0-9a-f]{64}$/;
const ALPHANUMERIC = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

export interface GeneratedKey {
  readonly raw: string;
  readonly prefix: string;
  readonly hash: string;
}

export function generateApiKey(): GeneratedKey {
  const bytes = randomBytes(8);
  let middle = '';
  // 8 * 256 % 62 bias is irrelevant here: the prefix is an identifier, the secret is the hex tail.
  for (const byte of bytes) middle += ALPHANUMERIC[byte % ALPHANUMERIC.length];
  const raw = `sk-${middle}-${randomBytes(32).toString('hex')}`;
  return { raw, prefix: raw.slice(0, 12), hash: hashApiKey(raw) };
}

export const isWellFormedApiKey = (value: string): boolean => value.length === API_KEY_LENGTH && API_KEY_SHAPE.test(value);

export const hashApiKey = (raw: string): string => hash('sha256', raw, 'hex');

/** AES-256-GCM under KEY_ENCRYPTION_SECRET; the key id is bound as associated data so a
 * ciphertext cannot be moved onto another key's row. */
export class KeyCipher {
  private readonly secret: Buffer;

  constructor(secretHex: string) {
    if (!/^[0-9a-fA-F]{64}$/.test(secretHex)) throw new Error('KEY_ENCRYPTION_SECRET must be 64 hex characters (32 bytes)');
    this.secret = Buffer.from(secretHex, 'hex');
  }

  encrypt(keyId: string, raw: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.secret, iv);
    cipher.setAAD(Buffer.from(keyId));
    const body = Buffer.concat([cipher.update(raw, 'utf8'), cipher.final()]);
    return ['v1', iv.toString('base64'), cipher.getAuthTag().toString('base64'), body.toString('base64')].join('.');
  }

  decrypt(keyId: string, sealed: string): string {
    const [version, iv, tag, body] = sealed.split('.');
    if (version !== 'v1' || !iv || !tag || !body) throw new Error('unrecognised key ciphertext');
    const decipher = createDecipheriv('aes-256-gcm', this.secret, Buffer.from(iv, 'base64'));
    decipher.setAAD(Buffer.from(keyId));
    decipher.setAuthTag(Buffer.from(tag, 'base64'));
    return Buffer.concat([decipher.update(Buffer.from(body, 'base64')), decipher.final()]).toString('utf8');
  }
}
