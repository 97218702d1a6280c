// The batch upload for the mount, on the client's HTTP core: several files
// in one POST to an upload link (the vfs' UploadMany capability).
import { parseUploadAnswer, type SeafileClient } from '../client/client.js';
import { multipartOfFiles, type UploadMany } from '../vfs/upload-batch.js';

export function uploadManyFor(client: SeafileClient): UploadMany {
  return async (link, parentDir, files, opts) => {
    const fields: [string, string][] = [['parent_dir', parentDir]];
    if (opts.replace) fields.push(['replace', '1']);
    if (opts.lastModify) fields.push(['last_modify', new Date(Math.floor(opts.lastModify / 1000) * 1000).toISOString()]);
    const body = await multipartOfFiles(fields, files);
    const r = await client.http.text({
      op: 'upload',
      method: 'POST',
      url: link,
      query: { 'ret-json': 1 },
      body,
      auth: true,
      retry: 'never',
      ctx: 'upload',
      transfer: 'upload',
    });
    const out = parseUploadAnswer('upload', r.text, { name: files[0]?.name ?? '', size: body.sizes[0] ?? 0 });
    // an answer of bare ids (no ret-json support) carries no names: they come in the order sent
    if (out.length === files.length && out.every((o) => o.name === files[0].name) && files.length > 1) {
      return out.map((o, i) => ({ ...o, name: files[i].name, size: body.sizes[i] }));
    }
    return out;
  };
}
