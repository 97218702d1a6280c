// The client's optional write capabilities follow its options (set by the
// CLI from SEAFS_STREAM_UPLOAD / SEAFS_RAW_UPLOAD): nothing below the CLI
// reads the environment.
import { describe, expect, it } from 'vitest';
import { SeafileClient } from '../../../src/client/client.js';

describe('client upload capabilities', () => {
  it('offers the multi-file and the streaming upload by default', async () => {
    const c = new SeafileClient({ baseUrl: 'http://127.0.0.1:9' });
    try {
      expect(typeof c.uploadBatch).toBe('function');
      expect(typeof c.startUploadStream).toBe('function');
    } finally {
      await c.close();
    }
  });

  it('leaves the streaming upload out when told to, whatever the environment says', async () => {
    const before = process.env.SEAFS_STREAM_UPLOAD;
    process.env.SEAFS_STREAM_UPLOAD = '1';
    const c = new SeafileClient({ baseUrl: 'http://127.0.0.1:9', streamUploads: false });
    try {
      expect(c.startUploadStream).toBeUndefined();
      expect(typeof c.uploadBatch).toBe('function');
    } finally {
      if (before === undefined) delete process.env.SEAFS_STREAM_UPLOAD;
      else process.env.SEAFS_STREAM_UPLOAD = before;
      await c.close();
    }
  });
});
