// `seafs demo`: a local server with a sample library, mounted as a folder.
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { deflateSync } from 'node:zlib';
import { SeafileClient } from '../../client/client.js';
import { startServer } from '../../server/index.js';
import { logger, printOut } from '../log.js';
import { handleSignals, startMount, uploadSwitches } from './run.js';

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

function crc32(b: Buffer): number {
  let c = 0xffffffff;
  for (const x of b) c = CRC_TABLE[(c ^ x) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function pngChunk(type: string, data: Buffer): Buffer {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const td = Buffer.concat([Buffer.from(type, 'ascii'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(td));
  return Buffer.concat([len, td, crc]);
}

/** A small RGB gradient image, generated (no binary in the repository). */
export function samplePng(w = 96, h = 64): Buffer {
  const raw = Buffer.alloc((w * 3 + 1) * h);
  for (let y = 0; y < h; y++) {
    const row = y * (w * 3 + 1);
    raw[row] = 0; // filter: none
    for (let x = 0; x < w; x++) {
      raw[row + 1 + x * 3] = Math.round((x / (w - 1)) * 255);
      raw[row + 2 + x * 3] = Math.round((y / (h - 1)) * 255);
      raw[row + 3 + x * 3] = 160;
    }
  }
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(w, 0);
  ihdr.writeUInt32BE(h, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // colour type: RGB
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk('IHDR', ihdr),
    pngChunk('IDAT', deflateSync(raw)),
    pngChunk('IEND', Buffer.alloc(0)),
  ]);
}

async function seed(client: SeafileClient, repo: string, staging: string): Promise<void> {
  for (const d of ['/Documents', '/Pictures', '/Data', '/Documents/Notes']) await client.mkdir(repo, d);
  const files: [string, Buffer][] = [
    [
      '/README.txt',
      Buffer.from(
        'Welcome to the seafs demo.\n\nThis folder is a library on a local server, mounted over FUSE.\nEdit, copy, rename and delete files as on any drive.\n',
      ),
    ],
    ['/Documents/hello.md', Buffer.from('# Hello\n\nA markdown file stored on the server.\n')],
    [
      '/Documents/Notes/todo.txt',
      Buffer.from(
        '- try cp, mv, rm\n- open a file in an editor\n- run `seafs unmount` and watch it wait for uploads\n',
      ),
    ],
    ['/Pictures/gradient.png', samplePng()],
    [
      '/Data/numbers.csv',
      Buffer.from(['n,square', ...Array.from({ length: 100 }, (_, i) => `${i},${i * i}`)].join('\n') + '\n'),
    ],
    ['/Data/sample-8MiB.bin', randomBytes(8 * 1024 * 1024)],
  ];
  for (const [path, data] of files) {
    const local = join(staging, path.replace(/\//g, '_'));
    await writeFile(local, data);
    const dir = path.slice(0, path.lastIndexOf('/')) || '/';
    const link = await client.uploadLink(repo, dir);
    await client.upload(link, dir, local, path.slice(path.lastIndexOf('/') + 1));
  }
}

export async function runDemo(mountpoint: string): Promise<number> {
  const mnt = resolve(mountpoint);
  const data = await mkdtemp(join(tmpdir(), 'seafs-demo-'));
  const email = 'demo@seafs.local';
  const password = randomBytes(9).toString('base64url');
  logger.addSecret(password);
  const server = await startServer({
    dataDir: join(data, 'server'),
    host: '127.0.0.1',
    port: 0,
    adminEmail: email,
    adminPassword: password,
  });
  const cleanup = async () => {
    await server.close().catch(() => {});
    await rm(data, { recursive: true, force: true });
  };
  try {
    const { client } = await SeafileClient.login({ baseUrl: server.url, ...uploadSwitches() }, email, password);
    const lib = await client.createLibrary('Demo');
    const staging = join(data, 'staging');
    await mkdir(staging);
    await seed(client, lib.repo_id, staging);
    await rm(staging, { recursive: true, force: true });
    try {
      await stat(mnt);
    } catch {
      await mkdir(mnt, { recursive: true });
    }
    const m = await startMount(
      { url: server.url, mountpoint: mnt, library: 'Demo', cacheDir: join(data, 'cache'), dirCacheTime: 5 },
      client,
      email,
    );
    handleSignals(m);
    printOut(
      [
        `seafs: mounted ${m.label} at ${m.mountpoint}`,
        '',
        `  server   ${server.url}   user ${email}   password ${password}`,
        '',
        '  Try, in another terminal:',
        `    ls -l ${mnt} ${mnt}/Documents`,
        `    cat ${mnt}/README.txt`,
        `    cp /etc/hostname ${mnt}/Documents/ && mv ${mnt}/Documents/hostname ${mnt}/Data/`,
        `    sha256sum ${mnt}/Data/sample-8MiB.bin`,
        `    df -h ${mnt}; mount | grep seafs`,
        `    seafs status ${mnt}`,
        `    seafs unmount ${mnt}    (or Ctrl-C here)`,
        '',
      ].join('\n'),
    );
    const code = await m.finished;
    await cleanup();
    return code;
  } catch (e) {
    logger.error(`demo failed: ${(e as Error).message}`);
    await cleanup();
    throw e;
  }
}
