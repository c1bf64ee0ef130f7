import { describe, expect, it } from 'vitest';
import { hashPassword, passwordProblem, SCRYPT_PARAMS, verifyPassword } from './passwords';

describe('console passwords (scrypt)', () => {
  it('stores a salted scrypt hash with its parameters, never the password, and checks it', async () => {
    const hash = await hashPassword('correct horse battery');
    expect(hash).toMatch(new RegExp(`^scrypt\\$${SCRYPT_PARAMS.N}\\$${SCRYPT_PARAMS.r}\\$${SCRYPT_PARAMS.p}\\$[A-Za-z0-9_-]{22}\\$[A-Za-z0-9_-]{43}$`));
    expect(hash).not.toContain('correct horse');
    expect(await hashPassword('correct horse battery')).not.toBe(hash);
    expect(await verifyPassword('correct horse battery', hash)).toBe(true);
    expect(await verifyPassword('correct horse batterY', hash)).toBe(false);
    expect(await verifyPassword('correct horse battery', 'plain')).toBe(false);
  });

  it('asks for 10 to 200 characters', () => {
    expect(passwordProblem('short')).toMatch(/at least 10/);
    expect(passwordProblem('x'.repeat(201))).toMatch(/at most 200/);
    expect(passwordProblem('long enough pass')).toBeNull();
  });
});
