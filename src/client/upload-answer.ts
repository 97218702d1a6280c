// What an upload or update link answers, read into file records: shared by
// the client's own uploads, the multi-file upload and the streaming upload.
import { protocolError } from './http.js';
import type { UploadedFile } from './types.js';

/**
 * Upload answers: `[{"name","id","size"}]` with ret-json=1, otherwise ids as
 * plain text separated by tabs, or a JSON string (the spec).
 */
export function parseUploadAnswer(op: string, text: string, fallback: { name: string; size: number }): UploadedFile[] {
  const t = text.trim();
  let v: unknown;
  try {
    v = JSON.parse(t);
  } catch {
    v = undefined;
  }
  const fromIds = (s: string): UploadedFile[] =>
    s
      .split(/[\t\r\n]+/)
      .map((x) => x.trim())
      .filter(Boolean)
      .map((id) => ({ name: fallback.name, id, size: fallback.size }));
  let out: UploadedFile[] = [];
  if (Array.isArray(v)) {
    out = v.map((x) => {
      const o = (x ?? {}) as Record<string, unknown>;
      if (typeof o.id !== 'string') throw protocolError(op, `upload answer without an id: ${t.slice(0, 200)}`);
      return {
        name: typeof o.name === 'string' ? o.name : fallback.name,
        id: o.id,
        size: typeof o.size === 'number' ? o.size : Number(o.size ?? fallback.size),
      };
    });
  } else if (typeof v === 'string') {
    out = fromIds(v);
  } else if (v && typeof v === 'object' && typeof (v as { id?: unknown }).id === 'string') {
    const o = v as { id: string; name?: unknown; size?: unknown };
    out = [
      {
        id: o.id,
        name: typeof o.name === 'string' ? o.name : fallback.name,
        size: typeof o.size === 'number' ? o.size : fallback.size,
      },
    ];
  } else if (v === undefined && /^[0-9a-f]{40}([\t\r\n]+[0-9a-f]{40})*$/i.test(t)) {
    out = fromIds(t);
  }
  if (out.length === 0) throw protocolError(op, `unreadable upload answer: ${t.slice(0, 200)}`);
  return out;
}
