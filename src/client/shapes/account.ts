// The shapes of the account and the server (who is logged in, from which
// device, which server version), and the feed of changes the server pushes.

export interface AccountInfo {
  usage: number;
  total: number; // -2 means unlimited
  email: string;
  name?: string;
  [extra: string]: unknown;
}

/** What a login tells the server of the device (seahub's platform, device_id, device_name...). */
export interface LoginDevice {
  /** 'linux', 'mac', 'windows' (desktop: a 40-character device id), 'android', 'ios' */
  platform: string;
  deviceId: string;
  deviceName: string;
  clientVersion?: string;
  platformVersion?: string;
}

export interface ServerInfo {
  version: string;
  features: string[];
  [extra: string]: unknown;
}

/** A change the notification server told of. */
export interface ServerChange {
  repo: string;
  kind: 'repo-update' | 'file-lock-changed' | 'folder-perm-changed';
  /** repo-update: the library's new head */
  commitId?: string;
  /** file-lock-changed and folder-perm-changed: the path concerned */
  path?: string;
  /** file-lock-changed: 'locked' or 'unlocked' */
  changeEvent?: string;
  /** file-lock-changed: who holds the lock now ('' when unlocked) */
  lockUser?: string;
}

/** how changes made elsewhere reach the mount: pushed by the notification server, or found by revalidating */
export type ChangeMode = 'notification' | 'polling';

export interface ChangeFeedHooks {
  onChange(c: ServerChange): void;
  /** subscribed again after a break: changes made meanwhile were not told */
  onResubscribed(): void;
  onMode(mode: ChangeMode): void;
  log(line: string): void;
}

export interface ChangeFeed {
  readonly mode: ChangeMode;
  close(): void;
}
