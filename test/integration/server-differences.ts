// The intended differences between `seafs serve` (as CE 10.0) and a real
// Seafile CE 10.0, which server-differential.test.ts accepts: each names the
// step of the script (`*` matches any run of characters), the start of the
// difference line the test prints ("status", "body $[].starred", ...), and why
// it is accepted. `underChange`: answers another change is reworking (403
// versus 404 for other people's libraries, the batch operations, revert,
// set-password); such an entry may stop matching without failing the test.

export interface Intended {
  call: string;
  what: string;
  why: string;
  underChange?: boolean;
}

const WEB_UI = 'the real server here is built without its web UI (README of real-seafile): its pages answer 500';
const NO_EVENTS = 'the real server here runs without seafevents, so activities and file history by events are off';
const SEAHUB_500 = 'seahub 10 fails on this input with an HTML 500; serve answers a clear JSON error';
const PROBE =
  "a library the caller cannot see answers as a missing one (404) whatever the call; seahub's 403 where it exists tells a stranger that it does";
const WEB_FIELDS =
  "a field seahub's web UI uses (modifier, counts, previews, tags, thumbnails) that serve does not keep; no client here reads it";
const SPEC_FIELDS = "a field the spec's shape has (or serve's own clients read) that 10.0's answer leaves out";
const SYNC_FIELDS =
  "the desktop sync client's library record that 10.0 dumps whole; serve gives the spec's shared-library record";

export const INTENDED: Intended[] = [
  // ---- what the real server here cannot do
  { call: 'visitor: * page', what: 'status', why: WEB_UI },
  { call: 'visitor: file page', what: '', why: WEB_UI },
  { call: 'visitor: no such link', what: '', why: WEB_UI },
  { call: 'events (Pro)', what: '', why: NO_EVENTS },
  { call: 'file new_history v2.1', what: '', why: NO_EVENTS },
  { call: 'virtual libraries', what: '', why: `${SEAHUB_500} (serve has no virtual libraries: 404)` },
  { call: 'file create, no parent', what: '', why: SEAHUB_500 },
  {
    call: 'copy-move progress',
    what: '',
    why: 'seahub copies within one library at once and hands an empty task_id (its progress then 400); serve always runs a task',
  },
  { call: 'sub-library', what: '', why: `${SEAHUB_500} (serve has no sub-libraries: 404)` },
  { call: 'library public (Pro)', what: '', why: `${SEAHUB_500} (public libraries are not in serve: 404)` },
  { call: 'dir download link', what: '', why: `${SEAHUB_500}; serve zips through the V2.1 zip-task only (404 here)` },
  {
    call: 'group * (old)',
    what: '',
    why: `${SEAHUB_500}: the old group messages are gone from seahub 10; serve has none`,
  },
  {
    call: 'folder permissions (Pro)',
    what: '',
    why: 'a Pro feature: CE 10 refuses it (403), serve has no such route (404)',
  },
  { call: 'office viewer (Pro)', what: 'body', why: "an Office server's feature: both 404, serve from its router" },
  {
    call: 'client-login, POST',
    what: '',
    why: 'seahub hands a one-time token for its web login page; serve has no web login to take it (405)',
  },
  {
    call: 'client-login',
    what: '',
    why: "the spec's GET, which serve answers; seahub 10 takes only POST (405 to GET)",
  },
  { call: 'file move, no dst_dir', what: '', why: SEAHUB_500 },

  // ---- forms that say the same to a client
  {
    call: 'mkdir*',
    what: 'location',
    why: "seahub joins '/' and the path into '?p=//d'; serve gives the path once (the same folder)",
  },
  {
    call: 'file download, range',
    what: 'content-disposition',
    why: 'the C server names the file with filename="..." on ranged answers only; serve uses its RFC 5987 filename* on every answer',
  },

  {
    call: 'other: shared items, read-only',
    what: '',
    why: 'seahub 10 shows whom a library is shared with to anyone who can read it; serve to its owner only (403)',
  },

  // ---- under change elsewhere
  { call: 'other: * not shared', what: 'status', why: PROBE, underChange: true },
  { call: 'upload-link, not shared', what: 'status', why: PROBE, underChange: true },
  { call: 'share link, not shared', what: 'status', why: PROBE, underChange: true },
  { call: 'library rename, not the owner', what: 'status', why: PROBE, underChange: true },
  { call: 'library delete, again', what: 'status', why: PROBE, underChange: true },
  { call: 'library owner, not the owner', what: 'status', why: PROBE },
  { call: 'library delete, not the owner', what: 'status', why: PROBE },
  {
    call: 'set password, not encrypted',
    what: '',
    why: 'seahub 10 answers "success" to a password for a library that is not encrypted; set-password is reworked elsewhere',
    underChange: true,
  },
  {
    call: 'file revert',
    what: 'body',
    why: 'seahub 10 answers {"success": true}, serve the spec\'s {"ret": 0}; revert is reworked elsewhere',
    underChange: true,
  },
  {
    call: 'trash',
    what: 'body $.data[].size',
    why: "seahub gives a folder's size as ''; serve a number (the trash is reworked elsewhere)",
    underChange: true,
  },

  // ---- fields one side has and the other not
  {
    call: 'account*',
    what: 'body $.note',
    why: 'the spec lets an administrator set a note; serve shows it back',
  },
  {
    call: 'account*',
    what: 'body $.two_factor_auth_enabled',
    why: "serve's own two-factor switch (totp_secret), shown back to the administrator",
  },
  ...['account update', 'v2.1 user, rename'].map((call) => ({
    call,
    what: 'body $.login_id',
    why: 'seahub answers null right after an update and "" otherwise; serve always ""',
  })),
  { call: '*library*', what: 'body $.desc', why: SPEC_FIELDS },
  { call: '*library*', what: 'body $.head_commit_id', why: SPEC_FIELDS },
  { call: '*library*', what: 'body $.password_need', why: SPEC_FIELDS },
  { call: '*library*', what: 'body $.enc_version', why: SPEC_FIELDS },
  { call: '*library*', what: 'body $.file_count', why: WEB_FIELDS },
  { call: 'download-info', what: 'body $.applet_root', why: SPEC_FIELDS },
  {
    call: 'history',
    what: 'body $.commits[].parent_id',
    why: "seahub commits a library's rename ('Changed library name or description'), serve renames without a commit, so its one commit has no parent",
  },
  { call: 'history v2.1', what: 'body $.data[].creator', why: SPEC_FIELDS },
  {
    call: 'dir detail v2.1',
    what: 'body $.',
    why: 'seahub 10 CE counts nothing here; serve adds size and counts (later seahub has them)',
  },
  { call: '*file detail*', what: 'body $.parent_dir', why: SPEC_FIELDS },
  { call: 'file * v2.1', what: 'body $.can_edit', why: WEB_FIELDS },
  { call: 'file * v2.1', what: 'body $.can_preview', why: WEB_FIELDS },
  { call: 'stars', what: 'body $[].', why: `${WEB_FIELDS} (icons, relative times, the same id twice)` },
  {
    call: '*star*v2.1',
    what: 'body $.',
    why: 'a starred item that is gone is flagged `deleted`, as later seahub does',
  },
  {
    call: 'share links v2',
    what: 'body $.fileshares[].ctime',
    why: "seahub 10 gives null (the V2 list's ctime is never filled); serve the creation time",
  },
  ...['body $.obj_id', 'body $[].obj_id'].map((what) => ({
    call: '*link*',
    what,
    why: 'serve does not pin a link to an object id (a link follows its path)',
  })),
  ...['body $.password', 'body $[].password'].map((what) => ({
    call: '*link*',
    what,
    why: "seahub shows a link's password in clear; serve keeps it hashed",
  })),
  { call: 'share links*', what: 'body $[].can_edit', why: 'the permissions serve links have (view and download)' },
  { call: 'share links*', what: 'body $[].repo_folder_permission', why: WEB_FIELDS },
  { call: 'shared by me', what: 'body $[]', why: SYNC_FIELDS },
  { call: 'other: shared with me', what: 'body $[]', why: SYNC_FIELDS },
  { call: 'shared by me v2.1', what: 'body $[].last_modified', why: SPEC_FIELDS },
  { call: '*libraries*', what: 'body $[].desc', why: SPEC_FIELDS },
  { call: '*libraries*', what: 'body $[].enc_version', why: SPEC_FIELDS },
  { call: '*libraries*', what: 'body $[].magic', why: SPEC_FIELDS },
  { call: '*libraries*', what: 'body $[].random_key', why: SPEC_FIELDS },
  { call: '*libraries*', what: 'body $[].virtual', why: SPEC_FIELDS },
  { call: '*libraries*', what: 'body $[].share_permission', why: SPEC_FIELDS },
  { call: '*libraries*', what: 'body $[].share_type', why: SPEC_FIELDS },
  { call: '*libraries*', what: 'body $[].size_formatted', why: SPEC_FIELDS },
  { call: '*libraries*', what: 'body $[].owner_', why: SPEC_FIELDS },
  {
    call: '*libraries*',
    what: 'body $[].group_name',
    why: "seahub 10 also names the group of a personal share's list item",
  },
  { call: '*libraries*', what: 'body $[].is_admin', why: WEB_FIELDS },
  { call: '*libraries*', what: 'body $[].share_from', why: WEB_FIELDS },
  { call: '*libraries*', what: 'body $.repos[].', why: WEB_FIELDS },
  { call: 'group libraries', what: 'body $[].', why: WEB_FIELDS },
  { call: 'groups v2*', what: 'body $.groups[].mtime', why: SPEC_FIELDS },
];
