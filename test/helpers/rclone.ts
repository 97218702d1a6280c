// Runs the system rclone (Debian package) as an independent client of the
// web API. Remotes are configured only through RCLONE_CONFIG_<NAME>_* env
// variables and an empty config file, so nothing on the machine leaks in and
// no secret appears in argv (the password is obscured through stdin).
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface RcloneResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: Buffer;
  stderr: string;
  ms: number;
  args: string[];
}

export interface RunOptions {
  timeoutMs?: number;
  input?: string | Buffer;
}

export interface RemoteOptions {
  /** Remote name as used on the command line (`name:path`); letters, digits, `_`. */
  name: string;
  url: string;
  user: string;
  password: string;
  /** Library mode: rooted in this library. Omit for all-libraries mode. */
  library?: string;
  /** Let rclone create a missing library (needed to `mkdir` a library in all-libraries mode). */
  createLibrary?: boolean;
}

// Flags every run gets: fail fast instead of hiding a wrong answer behind retries.
const BASE_FLAGS = ['--low-level-retries', '1', '--retries', '1', '--contimeout', '10s', '--timeout', '60s'];

/** Our isolated environment: the parent's env minus anything rclone would read. */
function cleanEnv(extra: Record<string, string>, home: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (!k.startsWith('RCLONE_') && !/_proxy$/i.test(k)) env[k] = v;
  }
  env.HOME = home;
  env.XDG_CACHE_HOME = join(home, '.cache');
  env.XDG_CONFIG_HOME = join(home, '.config');
  return { ...env, ...extra };
}

function exec(args: string[], env: NodeJS.ProcessEnv, opts: RunOptions = {}): Promise<RcloneResult> {
  const timeoutMs = opts.timeoutMs ?? 60_000;
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn('rclone', args, { env, stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    let err = '';
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (s: string) => {
      // Keep the tail only: a failing copy of 200 files can log a lot.
      err = (err + s).slice(-200_000);
    });
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const res: RcloneResult = {
        code,
        signal,
        stdout: Buffer.concat(out),
        stderr: err,
        ms: Date.now() - started,
        args,
      };
      if (timedOut) reject(new Error(`rclone ${args.join(' ')} timed out after ${timeoutMs} ms\n${err}`));
      else resolve(res);
    });
    child.stdin.on('error', () => {}); // rclone may exit before reading stdin
    child.stdin.end(opts.input ?? '');
  });
}

/** `rclone obscure -`: the password travels on stdin, never in argv. */
export async function obscure(password: string, home: string): Promise<string> {
  const r = await exec(['obscure', '-'], cleanEnv({}, home), { input: password, timeoutMs: 20_000 });
  if (r.code !== 0) throw new Error(`rclone obscure failed: ${r.stderr}`);
  return r.stdout.toString('utf8').trim();
}

export class Rclone {
  private constructor(
    /** Sandbox HOME (removed by dispose). */
    readonly home: string,
    private readonly env: Record<string, string>,
    /** The config file every run uses: empty unless a test writes remotes into it (e.g. the 2FA flow). */
    readonly configFile: string,
  ) {}

  /** A sandbox (own HOME, empty config file) holding the given remotes. */
  static async create(remotes: RemoteOptions[]): Promise<Rclone> {
    const home = mkdtempSync(join(tmpdir(), 'seafs-rclone-'));
    const configFile = join(home, 'rclone.conf');
    writeFileSync(configFile, '');
    const env: Record<string, string> = {};
    for (const r of remotes) {
      if (!/^[A-Za-z0-9_]+$/.test(r.name)) throw new Error(`bad remote name ${r.name}`);
      const p = `RCLONE_CONFIG_${r.name.toUpperCase()}_`;
      env[p + 'TYPE'] = 'seafile';
      env[p + 'URL'] = r.url;
      env[p + 'USER'] = r.user;
      env[p + 'PASS'] = await obscure(r.password, home);
      if (r.library !== undefined) env[p + 'LIBRARY'] = r.library;
      if (r.createLibrary) env[p + 'CREATE_LIBRARY'] = 'true';
    }
    return new Rclone(home, env, configFile);
  }

  /** Runs `rclone <args>` (`env` overrides remote settings for this run); resolves whatever the exit code. */
  run(args: string[], opts: RunOptions = {}, env: Record<string, string> = {}): Promise<RcloneResult> {
    const full = ['--config', this.configFile, ...BASE_FLAGS, ...args];
    return exec(full, cleanEnv({ ...this.env, ...env }, this.home), opts);
  }

  /** Runs and throws with rclone's stderr unless it exits 0. */
  async ok(args: string[], opts: RunOptions = {}, env: Record<string, string> = {}): Promise<RcloneResult> {
    const r = await this.run(args, opts, env);
    if (r.code !== 0) {
      throw new Error(`rclone ${args.join(' ')} exited ${r.code ?? r.signal}:\n${r.stderr.slice(-8000)}`);
    }
    return r;
  }

  /** `rclone lsjson` parsed. */
  async lsjson(target: string, extra: string[] = [], opts: RunOptions = {}): Promise<LsJsonItem[]> {
    const r = await this.ok(['lsjson', ...extra, target], opts);
    return JSON.parse(r.stdout.toString('utf8')) as LsJsonItem[];
  }

  dispose(): void {
    rmSync(this.home, { recursive: true, force: true });
  }
}

export interface LsJsonItem {
  Path: string;
  Name: string;
  Size: number;
  MimeType?: string;
  ModTime: string;
  IsDir: boolean;
  ID?: string;
}
