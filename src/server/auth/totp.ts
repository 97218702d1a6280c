// TOTP (RFC 6238: HMAC-SHA1, 30 s steps, 6 digits) for two-factor accounts.
import { createHmac } from 'node:crypto';

export function base32Decode(s: string): Buffer {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  const clean = s.toUpperCase().replace(/[=\s]/g, '');
  let bits = 0;
  let value = 0;
  const out: number[] = [];
  for (const ch of clean) {
    const v = alphabet.indexOf(ch);
    if (v < 0) throw new Error('invalid base32');
    value = (value << 5) | v;
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 0xff);
      bits -= 8;
    }
  }
  return Buffer.from(out);
}

export function totpAt(secretB32: string, timeMs: number, step = 30): string {
  const counter = Math.floor(timeMs / 1000 / step);
  const msg = Buffer.alloc(8);
  msg.writeBigUInt64BE(BigInt(counter));
  const h = createHmac('sha1', base32Decode(secretB32)).update(msg).digest();
  const off = h[h.length - 1] & 0xf;
  const code = (h.readUInt32BE(off) & 0x7fffffff) % 1_000_000;
  return code.toString().padStart(6, '0');
}

/**
 * Accepts the current code and its neighbours (clock skew of one step) and
 * returns the time step it belongs to, or null. A code of a step at or before
 * `usedStep` (the last one accepted) is refused: each code works once.
 */
export function verifyTotp(secretB32: string, code: string, nowMs = Date.now(), usedStep = -1): number | null {
  const now = Math.floor(nowMs / 30_000);
  for (const d of [-1, 0, 1]) {
    if (now + d > usedStep && totpAt(secretB32, (now + d) * 30_000) === code.trim()) return now + d;
  }
  return null;
}
