// Error bodies in every shape parse without crashing; statuses map to kinds by context.
// (The retry policy has its own file: client-retry.test.ts.)
import { describe, expect, it } from 'vitest';
import { errorMessageOf } from '../../../src/client/error-body.js';
import { kindFor } from '../../../src/client/status-map.js';

describe('errorMessageOf', () => {
  it('reads every JSON error shape', () => {
    expect(errorMessageOf('{"error_msg": "Folder /a/ not found."}')).toBe('Folder /a/ not found.');
    expect(errorMessageOf('{"detail": "Invalid token"}')).toBe('Invalid token');
    expect(errorMessageOf('{"non_field_errors": ["Two factor auth token is missing."]}')).toBe(
      'Two factor auth token is missing.',
    );
    expect(errorMessageOf('{"username": ["This field is required."]}')).toBe('username: This field is required.');
    expect(errorMessageOf('"Permission denied"')).toBe('Permission denied');
    expect(errorMessageOf('{"error": "File does not exist."}')).toBe('File does not exist.');
  });

  it("reads the file server's invalid JSON with a raw newline", () => {
    expect(errorMessageOf('{"error": "File does not exist.\n"}')).toBe('File does not exist.');
    expect(errorMessageOf('{"error": "Out of quota.\n"}\n')).toBe('Out of quota.');
  });

  it('reads HTML, plain text and nothing', () => {
    expect(
      errorMessageOf(
        '<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head><body><h1>Bad Gateway</h1></body></html>',
      ),
    ).toBe('Bad Gateway');
    expect(errorMessageOf('<html><body><p>Server &amp; error</p></body></html>')).toBe('Server & error');
    expect(errorMessageOf('Invalid token\n')).toBe('Invalid token');
    expect(errorMessageOf('')).toBe('');
    expect(errorMessageOf('   \n')).toBe('');
  });

  it('never throws on garbage and clips long bodies', () => {
    for (const g of [
      '{',
      '[1,2',
      '\u0000\u0001\u00ff',
      '{"error_msg": 42}',
      'null',
      '[]',
      '{}',
      '{"a": {"b": 1}}',
      'x'.repeat(100_000),
    ]) {
      expect(typeof errorMessageOf(g)).toBe('string');
    }
    expect(errorMessageOf('y'.repeat(10_000)).length).toBeLessThan(600);
  });
});

describe('kindFor', () => {
  it('treats 401 and token-ish 403 as unauthorized, other 403 as forbidden', () => {
    expect(kindFor(401, 'Invalid token', 'api')).toBe('unauthorized');
    expect(kindFor(403, 'Invalid token', 'api')).toBe('unauthorized');
    expect(kindFor(403, 'Authentication credentials were not provided.', 'api')).toBe('unauthorized');
    expect(kindFor(403, '', 'auth')).toBe('unauthorized');
    expect(kindFor(403, 'Permission denied.', 'api')).toBe('forbidden');
    expect(kindFor(403, 'Permission denied.', 'transfer-link')).toBe('forbidden');
    // a file server's 403 is about the link's token, never the API token
    expect(kindFor(403, 'Access denied: the token is invalid or expired.', 'download')).toBe('forbidden');
    expect(kindFor(403, 'Invalid token', 'upload')).toBe('forbidden');
  });

  it('maps the 4xx family', () => {
    expect(kindFor(404, 'Library not found.', 'api')).toBe('not_found');
    expect(kindFor(409, '', 'api')).toBe('conflict');
    expect(kindFor(400, 'Path is missing.', 'api')).toBe('bad_request');
    expect(kindFor(400, 'name invalid.', 'api')).toBe('invalid_name');
    expect(kindFor(400, 'Invalid file name', 'upload')).toBe('invalid_name');
    expect(kindFor(400, 'Two factor auth token is missing.', 'auth')).toBe('otp_required');
    expect(kindFor(400, 'whatever', 'auth', true)).toBe('otp_required');
    expect(kindFor(400, 'Unable to login with provided credentials.', 'auth')).toBe('unauthorized');
    expect(kindFor(429, '', 'api')).toBe('throttled');
    expect(kindFor(400, 'Library is encrypted, please provide the password first.', 'transfer-link')).toBe(
      'password_required',
    );
    expect(kindFor(400, 'Incorrect password', 'api')).toBe('password_required');
  });

  it('maps "too many files in library" (442 before 12.0, 447 after) to quota', () => {
    expect(kindFor(447, 'The number of files in library exceeds the limit', 'api')).toBe('quota');
    expect(kindFor(442, 'The number of files in library exceeds the limit', 'api')).toBe('quota');
    expect(kindFor(442, 'File size is too large.', 'upload')).toBe('too_large');
  });

  it('maps the service-specific statuses by context', () => {
    expect(kindFor(440, 'Library is encrypted.', 'api')).toBe('password_required');
    expect(kindFor(440, 'Invalid filename.', 'upload')).toBe('invalid_name');
    expect(kindFor(441, 'File does not exist.', 'upload')).toBe('target_missing');
    expect(kindFor(442, '', 'upload')).toBe('too_large');
    expect(kindFor(443, 'Out of quota.', 'upload')).toBe('quota');
    expect(kindFor(443, '', 'transfer-link')).toBe('quota');
    expect(kindFor(500, 'Out of quota.', 'transfer-link')).toBe('quota');
    expect(kindFor(520, 'Above quota', 'transfer-link')).toBe('quota');
    expect(kindFor(500, 'Out of quota.', 'api')).toBe('server');
    expect(kindFor(500, 'Internal Server Error', 'transfer-link')).toBe('server');
    expect(kindFor(502, '', 'api')).toBe('server');
    expect(kindFor(520, '', 'api')).toBe('server');
  });
});
