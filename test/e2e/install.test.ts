// The install path of a user: `npm pack`, then `npm install -g` of the tarball
// into a temporary prefix (offline from the npm cache where it can), and a
// mount with the installed `seafs`: its postinstall rebuilt fuse-native with
// seafs's fixes, so a time set by touch -d reaches the server. Then the same
// install without the rebuilt binding: `seafs mount` says once what is lost,
// turns the extended attributes off, and names the installed fix script.
// Needs `npm run build` first (the tarball packs dist/ as it is).
import { existsSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectRemoteFile, remoteEntries } from '../helpers/api-check.js';
import { mountLibrary, q, run, sh, sleep } from '../helpers/mount.js';
import { setupE2E } from '../helpers/e2e-fixture.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const ctx = setupE2E(['Installed']);
let tmp = '';
let seafs = '';
let pkgDir = '';

/** npm's environment without the npm_* variables of whoever started the tests (npx, npm test) */
function npmEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.toLowerCase().startsWith('npm_')));
}

beforeAll(async () => {
  if (!existsSync(path.join(ROOT, 'dist', 'cli', 'main.js'))) throw new Error('run npm run build first');
  tmp = mkdtempSync(path.join(os.tmpdir(), 'seafs-install-'));
  const env = npmEnv();
  // --ignore-scripts: no prepack build (dist/ is built by the test run's npm run build)
  await run('npm', ['pack', '--ignore-scripts', '--silent', '--pack-destination', tmp], { cwd: ROOT, env });
  const version = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
  const tgz = path.join(tmp, `seafs-${version}.tgz`);
  const prefix = path.join(tmp, 'prefix');
  await run(
    'npm',
    ['install', '-g', '--prefix', prefix, '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error', tgz],
    { cwd: tmp, env, timeoutMs: 150_000 },
  );
  seafs = path.join(prefix, 'bin', 'seafs');
  pkgDir = path.join(prefix, 'lib', 'node_modules', 'seafs');
}, 180_000);

afterAll(() => {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

/** the mtime (seconds) of `name` in the library's root on the server, polled until it equals `want` or 20 s pass */
async function remoteMtime(name: string, want: number): Promise<number | undefined> {
  let got: number | undefined;
  for (const end = Date.now() + 20_000; Date.now() < end;) {
    got = (await remoteEntries(ctx.api, ctx.repos.Installed, '/')).find((e) => e.name === name)?.mtime;
    if (got === want) break;
    await sleep(250);
  }
  return got;
}

const T1 = Date.UTC(2003, 4, 5, 6, 7, 8) / 1000;
const WARNING = "lacks seafs's fixes";

describe('npm install -g of the packed tarball', () => {
  it('gives a seafs on PATH whose rebuilt binding keeps modification times', async () => {
    const v = await run(seafs, ['--version']);
    expect(v.out).toMatch(/^seafs \d+\.\d+\.\d+\n/);
    // the binding of the installed copy, not the checkout's
    expect(v.out).toContain(`fuse-native 2.2.6: fixed (rebuilt with seafs's fixes), ${pkgDir}/`);

    const m = await mountLibrary(ctx.server, { library: 'Installed', attrTimeout: 0, cli: seafs });
    await sh(`echo installed > ${q(m.mnt)}/kept.txt && touch -m -d @${T1} ${q(m.mnt)}/kept.txt`);
    expect(Number((await run('stat', ['-c', '%Y', `${m.mnt}/kept.txt`])).out.trim())).toBe(T1);
    expect(await remoteMtime('kept.txt', T1)).toBe(T1);
    await expectRemoteFile(ctx.api, ctx.repos.Installed, '/kept.txt', Buffer.from('installed\n'));
    expect((await m.unmount()).code).toBe(0);
    expect(m.output()).not.toContain(WARNING);
  });

  it("completes commands and options in bash with the installed seafs's completion script", async () => {
    const complete = async (...words: string[]) =>
      (
        await run(
          'bash',
          [
            '-c',
            'source <(seafs completion); COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _seafs_yargs_completions; echo "${COMPREPLY[*]}"',
            'complete',
            ...words,
          ],
          { env: { ...process.env, SHELL: '/bin/bash', PATH: `${path.dirname(seafs)}:${process.env.PATH}` } },
        )
      ).out.trim();
    expect(await complete('seafs', 'unm')).toBe('unmount');
    expect(await complete('seafs', 'mount', '--allow-o')).toBe('--allow-other');
    // the zsh script names the command for compdef
    const zsh = await run(seafs, ['completion'], { env: { ...process.env, SHELL: '/bin/zsh' } });
    expect(zsh.out).toMatch(/^#compdef seafs\n/);
    expect(zsh.out).toContain('compdef _seafs_yargs_completions seafs');
  });

  it('without the rebuilt binding, mount says once what is lost and the command that fixes it', async () => {
    // the build set aside (put back at the end: a second compile would double the test's time)
    const build = path.join(pkgDir, 'node_modules', 'fuse-native', 'build');
    renameSync(build, `${build}.aside`);
    expect((await run(seafs, ['--version'])).out).toContain('fuse-native 2.2.6: prebuilt (without');

    const m = await mountLibrary(ctx.server, { library: 'Installed', cli: seafs });
    const out = m.output();
    expect(out.split(WARNING).length - 1).toBe(1);
    expect(out).toContain('modification times set by touch -d, cp -p, rsync -a or tar x are not kept');
    expect(out).toContain('extended attributes are off');
    const hint = `node ${path.join(pkgDir, 'scripts', 'fix-fuse-native.mjs')}`;
    expect(out).toContain(`then run: ${hint}`);
    // the extended attributes are off: the kernel answers for them
    const x = await run('getfattr', ['-n', 'user.seafile.id', m.mnt], { allowFail: true });
    expect(x.err).toMatch(/Operation not supported/);
    // writes still work
    await sh(`echo prebuilt > ${q(m.mnt)}/written.txt`);
    expect((await m.unmount()).code).toBe(0);
    await expectRemoteFile(ctx.api, ctx.repos.Installed, '/written.txt', Buffer.from('prebuilt\n'));

    // the hint's command is the installed script that the postinstall ran (which built the fixed binding of the
    // first case); with the build back it finds nothing to do
    renameSync(`${build}.aside`, build);
    const again = await run('node', [path.join(pkgDir, 'scripts', 'fix-fuse-native.mjs')], { env: npmEnv() });
    expect(again.err).toBe('');
    expect((await run(seafs, ['--version'])).out).toContain('fuse-native 2.2.6: fixed');
  });
});
