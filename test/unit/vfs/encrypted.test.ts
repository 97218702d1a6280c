// Encrypted libraries in the vfs: the password is asked only for an encrypted
// library and a refused one is a WrongLibraryPassword before anything starts;
// in all-libraries mode a library the mount holds no password for answers
// EACCES inside (its folder itself still shows) and the log says so once;
// uploads refused for want of the password wait without a line per retry;
// file-server calls carry their library's id (the client unlocks it again).
import { describe, expect, it } from 'vitest';
import { cleanupAfterEach } from '../../helpers/cleanup.js';
import { WrongLibraryPassword } from '../../../src/vfs/libraries/encrypted-unlock.js';
import { errnoOf, VfsError } from '../../../src/vfs/errors.js';
import { FakeApi, apiError, makeVfs, readWhole, writeWhole } from '../../helpers/fake-api.js';

function encrypted(api: FakeApi, name: string): string {
  const id = api.addLibrary(name);
  api.repos.get(id)!.lib.encrypted = true;
  return id;
}

describe('encrypted libraries in the vfs', () => {
  const cleanups = cleanupAfterEach();

  it('asks the password of an encrypted library only, and unlocks with it before the mount starts', async () => {
    const api = new FakeApi();
    encrypted(api, 'vault');
    api.addLibrary('plain');
    const asked: string[] = [];
    const ask = async (lib: { name: string }) => {
      asked.push(lib.name);
      return 'pw';
    };
    const plain = await makeVfs(api, { library: 'plain', libraryPassword: ask });
    cleanups.push(plain.cleanup);
    expect(asked).toEqual([]);
    expect(api.calls.unlockLibrary ?? 0).toBe(0);
    const vault = await makeVfs(api, { library: 'vault', libraryPassword: ask });
    cleanups.push(vault.cleanup);
    expect(asked).toEqual(['vault']);
    expect(api.calls.unlockLibrary).toBe(1);
  });

  it('turns a refused password into WrongLibraryPassword naming the library', async () => {
    const api = new FakeApi();
    encrypted(api, 'vault');
    api.failNext.set('unlockLibrary', [apiError('password_required', 400, 'unlock library', 'Incorrect password')]);
    const err = await makeVfs(api, { library: 'vault', libraryPassword: async () => 'wrong' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WrongLibraryPassword);
    expect((err as Error).message).toBe('EACCES: wrong password for the encrypted library "vault"');
  });

  it('in all-libraries mode answers EACCES inside a locked library, logs it once, and opens it on unlockLibrary', async () => {
    const api = new FakeApi();
    const repo = encrypted(api, 'vault');
    api.putFile(repo, '/a.txt', 'secret');
    const lines: string[] = [];
    const m = await makeVfs(api, { log: (l) => lines.push(l), unlockHint: (lib) => `seafs unlock MNT ${lib.name}` });
    cleanups.push(m.cleanup);
    expect(await m.vfs.readdir('/')).toEqual(['vault']);
    expect((await m.vfs.getattr('/vault')).mode & 0o040000).toBeTruthy();
    for (const op of [
      () => m.vfs.readdir('/vault'),
      () => m.vfs.getattr('/vault/a.txt'),
      () => m.vfs.mkdir('/vault/d', 0o755),
    ]) {
      const e = await op().then(
        () => null,
        (x: unknown) => x,
      );
      expect(e).toBeInstanceOf(VfsError);
      expect((e as VfsError).code).toBe('EACCES');
    }
    expect(lines.filter((l) => l.includes('is encrypted and locked'))).toEqual([
      'library "vault" is encrypted and locked; its files answer EACCES and uploads into it wait: seafs unlock MNT vault',
    ]);
    await expect(m.vfs.unlockLibrary('nope', 'pw')).rejects.toThrow('no library "nope"');
    await m.vfs.unlockLibrary('vault', 'pw');
    expect(await m.vfs.readdir('/vault')).toEqual(['a.txt']);
  });

  it('gives every file-server call its library id; a refusal the client could not cure answers EACCES, told once', async () => {
    const api = new FakeApi().offerUploadBatch();
    const repo = encrypted(api, 'vault');
    api.putFile(repo, '/a.txt', 'secret content');
    api.putFile(repo, '/b.txt', 'other content');
    api.putFile(repo, '/c.txt', 'old');
    // the library id each file-server call was given (download, streamGet: a URL first; uploads: a link)
    const given: Record<string, unknown[]> = {};
    const spied = api as unknown as Record<string, (...a: unknown[]) => unknown>;
    for (const name of ['download', 'streamGet', 'upload', 'update', 'uploadBatch']) {
      const orig = spied[name]!.bind(api);
      spied[name] = (...args: unknown[]) => {
        const opts = args.find((a, i) => i > 0 && a && typeof a === 'object' && 'repoId' in a) as { repoId?: unknown };
        (given[name] ??= []).push(opts?.repoId);
        return orig(...args);
      };
    }
    const lines: string[] = [];
    const m = await makeVfs(api, { library: 'vault', libraryPassword: async () => 'pw', log: (l) => lines.push(l) });
    cleanups.push(m.cleanup);
    expect((await readWhole(m.vfs, '/a.txt')).toString()).toBe('secret content');
    await writeWhole(m.vfs, '/n.txt', 'new');
    await writeWhole(m.vfs, '/c.txt', 'changed');
    expect(await m.vfs.drain()).toEqual([]);
    expect(api.content(repo, '/n.txt')!.toString()).toBe('new');
    const calls = Object.values(given).flat();
    expect(calls.length, JSON.stringify(given)).toBeGreaterThanOrEqual(2);
    expect(new Set(calls)).toEqual(new Set([repo]));

    // the password stopped opening it (the client's unlock again failed): reads answer EACCES, the log says it once
    const refused = () =>
      apiError('password_required', 400, 'download', 'Repo is encrypted. Please provide password to view it.');
    api.failNext.set('download', Array.from({ length: 20 }, refused));
    api.failNext.set('streamGet', Array.from({ length: 20 }, refused));
    for (let i = 0; i < 2; i++) {
      const e = await readWhole(m.vfs, '/b.txt').then(
        () => null,
        (x: unknown) => x,
      );
      expect(errnoOf(e), String(e)).toBe('EACCES');
    }
    expect(lines.filter((l) => l.includes('is encrypted and locked'))).toEqual([
      'library "vault" is encrypted and locked; its files answer EACCES and uploads into it wait and the password the mount holds no longer opens it',
    ]);
  });

  it('uploads refused for want of the password wait with one log line, and go once the library opens', async () => {
    const api = new FakeApi();
    const repo = encrypted(api, 'vault');
    const lines: string[] = [];
    const m = await makeVfs(api, { library: 'vault', libraryPassword: async () => 'pw', log: (l) => lines.push(l) });
    cleanups.push(m.cleanup);
    const locked = () =>
      apiError('password_required', 400, 'upload link', 'Library is encrypted, please provide the password first.');
    api.failNext.set('uploadLink', [locked(), locked(), locked(), locked()]);
    await writeWhole(m.vfs, '/f.txt', 'kept until unlocked');
    // the first attempt and three rounds of the retry timer
    for (let i = 0; i < 40 && (api.failNext.get('uploadLink')?.length ?? 0) > 0; i++) {
      await new Promise((r) => setTimeout(r, 50));
      if (!m.vfs.writeBack.pending().some((s) => s.running)) m.vfs.writeBack.retryNow();
    }
    expect(api.failNext.get('uploadLink')).toEqual([]);
    expect(api.content(repo, '/f.txt')).toBeUndefined();
    expect(lines.filter((l) => /upload of|batch|listing/.test(l))).toEqual([]);
    expect(lines.filter((l) => l.includes('is encrypted and locked'))).toHaveLength(1);
    expect(await m.vfs.drain()).toEqual([]);
    expect(api.content(repo, '/f.txt')!.toString()).toBe('kept until unlocked');
  });
});
