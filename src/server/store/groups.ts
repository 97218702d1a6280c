// Groups and the libraries shared to them, kept by the Db (store/db.ts) in the
// same db.json: a table of groups with their members, and group shares.
import type { Group, GroupShare } from './records.js';

export interface GroupsFile {
  nextGroupId?: number;
  groups?: Group[];
  groupShares?: GroupShare[];
}

export class Groups {
  private nextId = 1;
  private byId = new Map<number, Group>();
  private shares: GroupShare[] = [];

  load(d: GroupsFile): void {
    this.nextId = d.nextGroupId ?? 1;
    this.byId = new Map((d.groups ?? []).map((g) => [g.id, g]));
    this.shares = d.groupShares ?? [];
  }

  toFile(): Required<GroupsFile> {
    return { nextGroupId: this.nextId, groups: [...this.byId.values()], groupShares: this.shares };
  }

  get(id: number): Group | undefined {
    return this.byId.get(id);
  }

  byName(name: string): Group | undefined {
    return [...this.byId.values()].find((g) => g.name === name);
  }

  /** The groups `email` is a member of, oldest first. */
  of(email: string): Group[] {
    return [...this.byId.values()].filter((g) => g.members.some((m) => m.email === email));
  }

  create(name: string, owner: string): Group {
    const g: Group = {
      id: this.nextId++,
      name,
      owner,
      ctime: Math.floor(Date.now() / 1000),
      members: [{ email: owner, isAdmin: true }],
    };
    this.byId.set(g.id, g);
    return g;
  }

  /** Removes a group with its library shares. */
  delete(id: number): void {
    this.byId.delete(id);
    this.shares = this.shares.filter((s) => s.groupId !== id);
  }

  isMember(g: Group, email: string): boolean {
    return g.members.some((m) => m.email === email);
  }

  isAdmin(g: Group, email: string): boolean {
    return g.members.some((m) => m.email === email && m.isAdmin);
  }

  /** False when already a member. */
  addMember(g: Group, email: string): boolean {
    if (this.isMember(g, email)) return false;
    g.members.push({ email, isAdmin: false });
    return true;
  }

  removeMember(g: Group, email: string): void {
    g.members = g.members.filter((m) => m.email !== email);
  }

  /** An account that is gone leaves every group. */
  forgetUser(email: string): void {
    for (const g of this.byId.values()) this.removeMember(g, email);
  }

  share(repoId: string, groupId: number, from: string, permission: 'r' | 'rw'): void {
    const s = this.shares.find((x) => x.repoId === repoId && x.groupId === groupId);
    if (s) s.permission = permission;
    else this.shares.push({ repoId, groupId, from, permission });
  }

  /** True when a share existed. */
  unshare(repoId: string, groupId: number): boolean {
    const before = this.shares.length;
    this.shares = this.shares.filter((s) => !(s.repoId === repoId && s.groupId === groupId));
    return before !== this.shares.length;
  }

  sharesOfRepo(repoId: string): GroupShare[] {
    return this.shares.filter((s) => s.repoId === repoId);
  }

  sharesOfGroup(groupId: number): GroupShare[] {
    return this.shares.filter((s) => s.groupId === groupId);
  }

  forgetRepo(repoId: string): void {
    this.shares = this.shares.filter((s) => s.repoId !== repoId);
  }

  /** The best permission `email` has on a library through its groups. */
  permissionVia(email: string, repoId: string): 'r' | 'rw' | null {
    let best: 'r' | 'rw' | null = null;
    for (const s of this.sharesOfRepo(repoId)) {
      const g = this.byId.get(s.groupId);
      if (g && this.isMember(g, email)) best = best === 'rw' || s.permission === 'rw' ? 'rw' : 'r';
    }
    return best;
  }
}
