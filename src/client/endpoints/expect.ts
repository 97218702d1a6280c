// Shape checks of JSON answers: an answer of the wrong shape is a
// `protocol` error naming the operation, never a crash further up.
import { protocolError } from '../http.js';

export function expectString(op: string, v: unknown): string {
  if (typeof v !== 'string') throw protocolError(op, `expected a JSON string, got ${JSON.stringify(v)?.slice(0, 200)}`);
  return v;
}

export function expectArray<T>(op: string, v: unknown): T[] {
  if (!Array.isArray(v)) throw protocolError(op, `expected a JSON array, got ${JSON.stringify(v)?.slice(0, 200)}`);
  return v as T[];
}

export function expectObject<T>(op: string, v: unknown, field?: string): T {
  if (!v || typeof v !== 'object' || Array.isArray(v) || (field !== undefined && !(field in v))) {
    throw protocolError(op, `unexpected answer ${JSON.stringify(v)?.slice(0, 200)}`);
  }
  return v as T;
}
