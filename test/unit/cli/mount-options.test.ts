import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { CLI } from '../../helpers/server.js';
import { parseMountOptions, parseUmask, splitSource, unescapeOctal } from '../../../src/cli/mount/fstab-options.js';
import { parseDuration, retryUnreachable, UnreachableError } from '../../../src/cli/mount/retry-login.js';
import { UserError } from '../../../src/cli/user-error.js';

describe('mount sources and -o options', () => {
  it('splits URL#Library at the first #, and decodes fstab escapes such as \\040 for a space', () => {
    expect(splitSource('https://cloud.example.com#My\\040Library')).toEqual({
      url: 'https://cloud.example.com',
      library: 'My Library',
    });
    expect(splitSource('https://h#A#B')).toEqual({ url: 'https://h', library: 'A#B' });
    expect(splitSource('https://h')).toEqual({ url: 'https://h' });
    expect(splitSource('https://h#')).toEqual({ url: 'https://h' });
    expect(unescapeOctal('a\\011b\\134c\\040d')).toBe('a\tb\\c d');
  });

  it('maps the fstab line of the README to the flags it stands for', () => {
    const r = parseMountOptions([
      'username=me@example.com,password_file=/etc/seafs/me.pw,cache_dir=/var/cache/seafs,allow_other,_netdev,noauto,x-systemd.automount',
    ]);
    expect(r.settings).toEqual({
      user: 'me@example.com',
      passwordFile: '/etc/seafs/me.pw',
      cacheDir: '/var/cache/seafs',
      allowOther: true,
    });
    expect(r.kernel).toEqual([]);
  });

  it('cache_streams and nocache_streams set stream caching on for any size, or off', () => {
    expect(parseMountOptions(['cache_streams']).settings).toEqual({ cacheStreams: true });
    expect(parseMountOptions(['nocache_streams']).settings).toEqual({ cacheStreams: false });
    expect(parseMountOptions(['allow_other']).settings.cacheStreams).toBeUndefined();
  });

  it('links turns symbolic links on (and takes no value); absent, they stay off', () => {
    expect(parseMountOptions(['links,ro']).settings).toEqual({ links: true, readOnly: true });
    expect(parseMountOptions(['allow_other']).settings.links).toBeUndefined();
    expect(() => parseMountOptions(['links=1'])).toThrowError(/links takes no value/);
  });

  it('noxattr turns the extended attributes off (and takes no value)', () => {
    expect(parseMountOptions(['noxattr,allow_other']).settings).toEqual({ xattrs: false, allowOther: true });
    expect(() => parseMountOptions(['noxattr=1'])).toThrowError(/noxattr takes no value/);
  });

  it('nothumbnails turns the thumbnail cache filling off (and takes no value)', () => {
    expect(parseMountOptions(['nothumbnails']).settings).toEqual({ thumbnails: false });
    expect(() => parseMountOptions(['nothumbnails=1'])).toThrowError(/nothumbnails takes no value/);
  });

  it('accepts dashes for underscores, numbers, sizes (plain: MiB, KiB), durations and several -o lists', () => {
    const r = parseMountOptions([
      'attr-timeout=5,dir_cache_time=30',
      'cache_max_size=0,read_ahead=1024,retry_for=90s,library=Work\\040Files',
    ]);
    expect(r.settings).toEqual({
      attrTimeout: 5,
      dirCacheTime: 30,
      cacheMaxSize: 0,
      readAhead: 1024 * 1024,
      retryFor: '90s',
      library: 'Work Files',
    });
  });

  it('passes the generic options libfuse knows to the kernel, treats ro as read-only, and ignores what belongs to mount and systemd', () => {
    const r = parseMountOptions([
      'rw,nosuid,nodev,noexec,relatime,user=alice,users,defaults,auto,nofail,comment=x,x-systemd.mount-timeout=30,X-mount.mkdir',
      'ro,noatime,nosuid',
    ]);
    expect(r.kernel).toEqual(['nosuid', 'nodev', 'noexec', 'ro', 'noatime']);
    expect(r.settings).toEqual({ readOnly: true });
  });

  it('refuses an unknown option with one error that names it and the known ones', () => {
    expect(() => parseMountOptions(['username=a,colour=blue'])).toThrowError(UserError);
    expect(() => parseMountOptions(['username=a,colour=blue'])).toThrowError(
      /unknown mount option "colour" \(seafs takes library=, username=.*allow_other/,
    );
    expect(() => parseMountOptions(['kernel_cache'])).toThrowError(/unknown mount option "kernel_cache"/);
  });

  it('refuses secrets in options, switches with a value, missing values and bad numbers or durations', () => {
    expect(() => parseMountOptions(['password=hunter2'])).toThrowError(/password= is refused.*password_file=FILE/);
    expect(() => parseMountOptions(['token=abc'])).toThrowError(/token_file=FILE/);
    expect(() => parseMountOptions(['library_password=abc'])).toThrowError(
      /library_password= is refused.*library_password_file=FILE/,
    );
    expect(() => parseMountOptions(['allow_other=yes'])).toThrowError(/allow_other takes no value/);
    expect(() => parseMountOptions(['library'])).toThrowError(/library needs a value/);
    expect(() => parseMountOptions(['attr_timeout=-1'])).toThrowError(
      /attr_timeout takes a number of 0 or more \(got -1\)/,
    );
    expect(() => parseMountOptions(['retry_for=soon'])).toThrowError(/cannot read the duration "soon"/);
  });
});

describe('--retry-for', () => {
  it('maps ca_file=, client_cert= and client_key= (dashes too) to the https files', () => {
    expect(
      parseMountOptions(['ca_file=/etc/ssl/company-ca.pem,client-cert=/etc/seafs/me.crt,client_key=/etc/seafs/me.key'])
        .settings,
    ).toEqual({ caFile: '/etc/ssl/company-ca.pem', clientCert: '/etc/seafs/me.crt', clientKey: '/etc/seafs/me.key' });
    expect(() => parseMountOptions(['ca_file'])).toThrow('-o ca_file needs a value');
  });

  it('maps library_password_file= to the encrypted library password file', () => {
    expect(parseMountOptions(['library=Vault,library-password-file=/etc/seafs/vault.pw']).settings).toEqual({
      library: 'Vault',
      libraryPasswordFile: '/etc/seafs/vault.pw',
    });
  });

  it('reads uid=, gid= as numeric ids and umask= as an octal mask', () => {
    expect(parseMountOptions(['uid=1000,gid=100,umask=0027']).settings).toEqual({ uid: 1000, gid: 100, umask: '0027' });
    expect(parseUmask('022', '--umask')).toBe(0o022);
    expect(parseUmask('7', '--umask')).toBe(0o007);
    expect(() => parseMountOptions(['uid=alice'])).toThrowError(/-o uid takes a numeric id \(got alice\)/);
    expect(() => parseMountOptions(['umask=999'])).toThrowError(
      /-o umask takes an octal mask such as 022 or 077 \(got 999\)/,
    );
    expect(parseMountOptions(['default_permissions']).kernel).toEqual(['default_permissions']);
  });

  it('reads durations in ms, s, m, h or bare seconds', () => {
    expect(parseDuration('60s')).toBe(60_000);
    expect(parseDuration('90')).toBe(90_000);
    expect(parseDuration('2m')).toBe(120_000);
    expect(parseDuration('1.5h')).toBe(5_400_000);
    expect(parseDuration('250ms')).toBe(250);
    expect(() => parseDuration('1 day')).toThrowError(UserError);
  });

  it('tries an unreachable server again with doubling waits until it answers', async () => {
    let t = 0;
    const waits: number[] = [];
    const lines: string[] = [];
    let calls = 0;
    const r = await retryUnreachable(
      async () => {
        if (++calls < 5) throw new UnreachableError('cannot reach the server at http://x: connect ECONNREFUSED');
        return 'in';
      },
      {
        forMs: 60_000,
        log: (l) => lines.push(l),
        now: () => t,
        sleep: async (ms) => {
          waits.push(ms);
          t += ms;
        },
      },
    );
    expect(r).toBe('in');
    expect(waits).toEqual([1000, 2000, 4000, 8000]);
    expect(lines[0]).toMatch(/cannot reach the server at http:\/\/x.*trying again in 1 s \(60 s of --retry-for left\)/);
  });

  it('gives up when the time is over, saying how long it tried', async () => {
    let t = 0;
    const p = retryUnreachable(
      async () => {
        throw new UnreachableError('cannot reach the server at http://x');
      },
      {
        forMs: 15_000,
        log: () => {},
        now: () => t,
        sleep: async (ms) => {
          t += ms;
        },
      },
    );
    await expect(p).rejects.toThrowError(/cannot reach the server at http:\/\/x \(gave up after 5 attempts in 15 s\)/);
    expect(t).toBe(15_000);
  });

  it('fails at once on anything but an unreachable server (a wrong password is not retried)', async () => {
    let calls = 0;
    const p = retryUnreachable(
      async () => {
        calls++;
        throw new UserError('login refused: wrong user or password');
      },
      { forMs: 60_000, log: () => {}, sleep: async () => {} },
    );
    await expect(p).rejects.toThrowError('login refused');
    expect(calls).toBe(1);
  });

  it('without --retry-for an unreachable server fails on the first attempt', async () => {
    let calls = 0;
    const p = retryUnreachable(
      async () => {
        calls++;
        throw new UnreachableError('cannot reach the server at http://x');
      },
      { forMs: 0, log: () => {}, sleep: async () => {} },
    );
    await expect(p).rejects.toThrowError(/^cannot reach the server at http:\/\/x$/);
    expect(calls).toBe(1);
  });
});

describe('seafs mount refuses bad -o options before it reaches the server', () => {
  const mount = (...args: string[]) =>
    spawnSync(process.execPath, [CLI, 'mount', ...args], {
      encoding: 'utf8',
      env: { ...process.env, SEAFS_PASSWORD: 'x' },
    });

  it('names the library twice, differently: one line, exit 1', () => {
    const r = mount('http://127.0.0.1:9#Photos', '/tmp', '--user', 'a@b.c', '-o', 'library=Music');
    expect(r.status).toBe(1);
    expect(r.stderr).toBe('seafs: the library is named twice, differently: "Photos" and "Music"\n');
  });

  it('a password in -o: one line that points to password_file=, exit 1', () => {
    const r = mount('http://127.0.0.1:9#Photos', '/tmp', '-o', 'username=a@b.c,password=hunter2');
    expect(r.status).toBe(1);
    expect(r.stderr.split('\n')).toHaveLength(2);
    expect(r.stderr).toMatch(/^seafs: -o password= is refused: .*use password_file=FILE/);
  });
});
