// The few web API calls the benchmark needs (seeding, checking what reached the server, and the direct HTTP
// contender), on one keep-alive connection pool.
import { Agent, request, fetch, FormData } from 'undici';

export const agent = new Agent({ connections: 32, keepAliveTimeout: 30_000, pipelining: 1 });

async function body(res) {
  const text = await res.body.text();
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export class Api {
  constructor(base, token = null) {
    this.base = base.replace(/\/+$/, '');
    this.token = token;
  }

  async call(method, path, { form, query, ok = [200, 201, 301] } = {}) {
    const url = new URL(this.base + path);
    for (const [k, v] of Object.entries(query ?? {})) url.searchParams.set(k, String(v));
    const headers = { accept: 'application/json' };
    if (this.token) headers.authorization = `Token ${this.token}`;
    let reqBody;
    if (form) {
      headers['content-type'] = 'application/x-www-form-urlencoded';
      reqBody = new URLSearchParams(form).toString();
    }
    const res = await request(url, { method, headers, body: reqBody, dispatcher: agent });
    const data = await body(res);
    if (!ok.includes(res.statusCode)) {
      const msg = typeof data === 'string' ? data : JSON.stringify(data);
      const err = new Error(`${method} ${path} -> ${res.statusCode} ${msg.slice(0, 200)}`);
      err.status = res.statusCode;
      throw err;
    }
    return data;
  }

  async login(username, password) {
    const r = await this.call('POST', '/api2/auth-token/', { form: { username, password } });
    this.token = r.token;
    return this.token;
  }

  async createUser(email, password) {
    await this.call('PUT', `/api2/accounts/${encodeURIComponent(email)}/`, { form: { password, is_active: 'true' } });
  }

  async repos() {
    return this.call('GET', '/api2/repos/');
  }

  async createRepo(name) {
    const r = await this.call('POST', '/api2/repos/', { form: { name, desc: 'benchmark' } });
    return r.repo_id ?? r.id;
  }

  async mkdir(repo, p) {
    await this.call('POST', `/api2/repos/${repo}/dir/`, {
      query: { p },
      form: { operation: 'mkdir', create_parents: 'true' },
    });
  }

  async listDir(repo, p) {
    return this.call('GET', `/api2/repos/${repo}/dir/`, { query: { p } });
  }

  /** File size on the server, or null while it is not there. */
  async fileSize(repo, p) {
    try {
      const r = await this.call('GET', `/api2/repos/${repo}/file/detail/`, { query: { p } });
      return r.size;
    } catch (err) {
      if (err.status === 404) return null;
      throw err;
    }
  }

  async deletePath(repo, p) {
    await this.call('DELETE', `/api2/repos/${repo}/file/`, { query: { p } }).catch(() => {});
  }

  async uploadLink(repo, dir) {
    return this.call('GET', `/api2/repos/${repo}/upload-link/`, { query: { p: dir } });
  }

  async downloadLink(repo, p, reuse = false) {
    return this.call('GET', `/api2/repos/${repo}/file/`, { query: reuse ? { p, reuse: 1 } : { p } });
  }

  /** Multipart upload of in-memory files [{name, data}] into `dir` through an upload link for `dir`. */
  async upload(link, dir, files) {
    const fd = new FormData();
    for (const f of files) fd.append('file', new Blob([f.data]), f.name);
    fd.append('parent_dir', dir);
    fd.append('replace', '1');
    const url = new URL(link);
    url.searchParams.set('ret-json', '1');
    const res = await fetch(url, { method: 'POST', body: fd, dispatcher: agent });
    const text = await res.text();
    if (!res.ok) throw new Error(`upload to ${dir} -> ${res.status} ${text.slice(0, 200)}`);
    return text;
  }

  /** Every file under `root` as {path, size}, listing folders `concurrency` at a time. */
  async walk(repo, root, concurrency = 8) {
    const files = [];
    const queue = [root];
    let dirs = 0;
    let active = 0;
    await new Promise((resolve, reject) => {
      const pump = () => {
        if (!queue.length && !active) return resolve();
        while (queue.length && active < concurrency) {
          const dir = queue.shift();
          active++;
          this.listDir(repo, dir)
            .then((entries) => {
              dirs++;
              for (const e of entries) {
                const p = `${dir.replace(/\/$/, '')}/${e.name}`;
                if (e.type === 'dir') queue.push(p);
                else files.push({ path: p, size: e.size });
              }
              active--;
              pump();
            })
            .catch(reject);
        }
      };
      pump();
    });
    return { files, dirs };
  }

  /** Number of files under `root`, 0 while it does not exist. */
  async countFiles(repo, root) {
    try {
      return (await this.walk(repo, root, 16)).files.length;
    } catch (err) {
      if (err.status === 404) return 0;
      throw err;
    }
  }
}

/** Run async `fn` over `items`, `n` at a time. */
export async function pool(items, n, fn) {
  let i = 0;
  const workers = Array.from({ length: Math.min(n, items.length) }, async () => {
    while (i < items.length) {
      const k = i++;
      await fn(items[k], k);
    }
  });
  await Promise.all(workers);
}
