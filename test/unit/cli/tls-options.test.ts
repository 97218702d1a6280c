// The https options of mount and login (src/cli/tls-options.ts): absolute paths,
// a saved account's files completing those given, and the line of a refusal.
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../../src/client/errors.js';
import { certificateError, tlsFilesOf, withSaved } from '../../../src/cli/tls-options.js';
import { UnreachableError } from '../../../src/cli/mount/retry-login.js';
import { UserError } from '../../../src/cli/user-error.js';

const refusal = (code: string) =>
  Object.assign(
    new ApiError({ kind: 'certificate', status: 0, operation: 'login', serverMessage: `the line of ${code}` }),
    { code },
  );

describe('https options', () => {
  it('makes the files given absolute (a --daemon child reads them from /), and nothing when none is', () => {
    expect(tlsFilesOf({ caFile: 'ca.pem' })).toEqual({ caFile: path.resolve('ca.pem') });
    expect(tlsFilesOf({ clientCert: '/a.crt', clientKey: '/a.key' })).toEqual({
      clientCert: '/a.crt',
      clientKey: '/a.key',
    });
    expect(tlsFilesOf({})).toBeUndefined();
  });

  it("completes the files given from a saved account's: the CA alone, the client pair only as a pair", () => {
    const saved = { caFile: '/s/ca.pem', clientCert: '/s/c.crt', clientKey: '/s/c.key' };
    expect(withSaved(undefined, saved)).toEqual(saved);
    expect(withSaved({ caFile: '/g/ca.pem' }, saved)).toEqual({ ...saved, caFile: '/g/ca.pem' });
    expect(withSaved({ clientCert: '/g/c.crt', clientKey: '/g/c.key' }, saved)).toEqual({
      caFile: '/s/ca.pem',
      clientCert: '/g/c.crt',
      clientKey: '/g/c.key',
    });
    // a half pair given is left half: the check names what is missing, never a mix of two pairs
    expect(withSaved({ clientCert: '/g/c.crt' }, saved)).toEqual({ caFile: '/s/ca.pem', clientCert: '/g/c.crt' });
    expect(withSaved(undefined, undefined)).toBeUndefined();
  });

  it('a refused certificate fails at once; one not valid yet (a clock not set at boot) is waited for under --retry-for', () => {
    const now = certificateError(refusal('UNABLE_TO_VERIFY_LEAF_SIGNATURE'));
    expect(now).toBeInstanceOf(UserError);
    expect(now).not.toBeInstanceOf(UnreachableError);
    expect(now.message).toBe('the line of UNABLE_TO_VERIFY_LEAF_SIGNATURE');
    for (const code of ['CERT_HAS_EXPIRED', 'ERR_TLS_CERT_ALTNAME_INVALID'])
      expect(certificateError(refusal(code))).not.toBeInstanceOf(UnreachableError);
    const clock = certificateError(refusal('CERT_NOT_YET_VALID'));
    expect(clock).toBeInstanceOf(UnreachableError);
    // the server answered: no start from what an earlier mount kept
    expect((clock as UnreachableError).answered).toBe(true);
  });
});
