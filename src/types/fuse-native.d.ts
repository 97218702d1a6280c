// fuse-native ships no type declarations; this is the subset seafs uses.
declare module 'fuse-native' {
  type Cb = (...args: any[]) => void;
  interface FuseOpts {
    [key: string]: unknown;
  }
  class Fuse {
    constructor(mnt: string, ops: Record<string, Cb>, opts?: FuseOpts);
    mount(cb: (err: Error | null) => void): void;
    unmount(cb: (err: Error | null) => void): void;
    static unmount(mnt: string, cb: (err: Error | null) => void): void;
    static isConfigured(cb: (err: Error | null, ok: boolean) => void): void;
    _fuseOptions(): string;
    mnt: string;
    static [errno: string]: any;
  }
  export = Fuse;
}
