// The server's own key (DATA/server.key, 0600) and what it protects: API
// tokens are kept in db.json only as a hash (to find the user) and sealed
// with this key (to hand the same token back at the next login, as real
// servers do). A copy of db.json alone reveals no token.
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { writeFileAtomic } from '../store/atomic.js';

export const tokenHash = (token: string) => createHash('sha256').update(token).digest('hex');

export class SecretBox {
  private constructor(private readonly key: Buffer) {}

  /** Reads DATA/server.key, creating it on first start. */
  static async open(dataDir: string): Promise<SecretBox> {
    const file = path.join(dataDir, 'server.key');
    try {
      const key = Buffer.from((await fsp.readFile(file, 'utf8')).trim(), 'hex');
      if (key.length === 32) return new SecretBox(key);
      throw new Error(`${file}: not a 32-byte hex key`);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
    const key = randomBytes(32);
    await writeFileAtomic(file, key.toString('hex') + '\n');
    return new SecretBox(key);
  }

  /** For tests and tools that need no persistence. */
  static ephemeral(): SecretBox {
    return new SecretBox(randomBytes(32));
  }

  seal(text: string): string {
    const iv = randomBytes(12);
    const c = createCipheriv('aes-256-gcm', this.key, iv);
    const body = Buffer.concat([c.update(text, 'utf8'), c.final()]);
    return [iv, c.getAuthTag(), body].map((b) => b.toString('base64')).join('.');
  }

  unseal(sealed: string): string {
    const [iv, tag, body] = sealed.split('.').map((s) => Buffer.from(s, 'base64'));
    const d = createDecipheriv('aes-256-gcm', this.key, iv);
    d.setAuthTag(tag);
    return Buffer.concat([d.update(body), d.final()]).toString('utf8');
  }
}
