// Lenient extraction of the human message from an error body. Bodies come in
// every shape: {"error_msg"}, {"detail"}, {"non_field_errors": [...]},
// {"field": ["..."]}, the file server's {"error": "...\n"} with a raw newline
// (invalid JSON, text/plain), HTML error pages, plain text, or nothing.
// Never throws.

const MAX_MESSAGE = 500;

function clip(s: string): string {
  const t = s.replace(/\s+/g, ' ').trim();
  return t.length > MAX_MESSAGE ? `${t.slice(0, MAX_MESSAGE)}...` : t;
}

function fromValue(v: unknown): string | null {
  if (typeof v === 'string') return v;
  if (Array.isArray(v)) {
    const parts = v.map(fromValue).filter((x): x is string => !!x);
    return parts.length ? parts.join('; ') : null;
  }
  return null;
}

function fromObject(o: Record<string, unknown>): string | null {
  for (const key of ['error_msg', 'detail', 'error', 'non_field_errors', 'message', 'msg']) {
    const m = fromValue(o[key]);
    if (m) return m;
  }
  // Django form errors: {"username": ["This field is required."]}
  for (const [k, v] of Object.entries(o)) {
    const m = fromValue(v);
    if (m && Array.isArray(v)) return `${k}: ${m}`;
  }
  return null;
}

/** The message a server put in an error body; '' when there is none. */
export function errorMessageOf(text: string): string {
  const body = text.trim();
  if (!body) return '';
  try {
    const v: unknown = JSON.parse(body);
    if (typeof v === 'string') return clip(v);
    if (v && typeof v === 'object' && !Array.isArray(v)) {
      const m = fromObject(v as Record<string, unknown>);
      if (m) return clip(m);
    }
    const m = fromValue(v);
    if (m) return clip(m);
    return clip(body);
  } catch {
    // not JSON: fall through
  }
  // JSON-looking but invalid (a raw newline inside the string): pick the field by hand
  const m = /"(error_msg|error|detail|non_field_errors)"\s*:\s*\[?\s*"((?:[^"\\]|\\.)*)"/s.exec(body);
  if (m) return clip(m[2]!.replace(/\\n/g, ' ').replace(/\\(.)/g, '$1'));
  if (/^\s*<(!doctype|html|head|body|\?xml)/i.test(body) || /<\/(html|body|h1|p)>/i.test(body)) {
    const title = /<title[^>]*>([^<]*)<\/title>/i.exec(body)?.[1];
    const h1 = /<h1[^>]*>([^<]*)<\/h1>/i.exec(body)?.[1];
    const text = (
      h1 ||
      title ||
      body.replace(/<script[\s\S]*?<\/script>|<style[\s\S]*?<\/style>/gi, '').replace(/<[^>]*>/g, ' ')
    )
      .replace(/&nbsp;/g, ' ')
      .replace(/&lt;/g, '<')
      .replace(/&gt;/g, '>')
      .replace(/&quot;/g, '"')
      .replace(/&amp;/g, '&');
    return clip(text);
  }
  return clip(body);
}
