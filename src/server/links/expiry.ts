// When a share or upload link expires, from the fields seahub takes
// (api2/endpoints/share_links.py and upload_links.py): `expire_days` (a
// positive whole number of days from now) or `expiration_time` (an ISO 8601
// time, what seafile-js and the web interface send), never both.
import type { Form } from '../http.js';
import { HttpError } from '../http.js';

const ISO_TIME = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}(?::?\d{2})?)?)?$/;

/**
 * The expiry (epoch seconds) a link creation or update asks for: undefined
 * when it names none, else the time. A bad value is a 400, as seahub answers;
 * a link is never stored without the expiry its creator asked for.
 */
export function requestedExpiry(form: Form, nowMs = Date.now()): number | undefined {
  const days = form.get('expire_days') ?? '';
  const time = form.get('expiration_time') ?? '';
  if (days && time) throw new HttpError(400, 'Can not pass expire_days and expiration_time at the same time.');
  if (days) {
    if (!/^\s*[+-]?\d+\s*$/.test(days) || Number(days) <= 0) throw new HttpError(400, 'expire_days invalid.');
    return Math.floor(nowMs / 1000) + Number(days) * 86400;
  }
  if (time) {
    const ms = ISO_TIME.test(time.trim()) ? Date.parse(time.trim()) : NaN;
    if (!Number.isFinite(ms))
      throw new HttpError(400, 'expiration_time invalid, should be iso format, for example: 2020-05-17T10:26:22+08:00');
    return Math.floor(ms / 1000);
  }
  return undefined;
}

/** Whether a link with this expiry (epoch seconds, null or missing: never) has expired. */
export function isExpired(expire: number | null | undefined, nowMs = Date.now()): boolean {
  return expire !== null && expire !== undefined && expire * 1000 <= nowMs;
}
