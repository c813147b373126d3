import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';

function tempPathFor(target: string): string {
  return path.join(
    path.dirname(target),
    `.${path.basename(target)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`,
  );
}

function isNotFound(error: unknown): boolean {
  return (error as NodeJS.ErrnoException)?.code === 'ENOENT';
}

/**
 * Writes `text` to `file` unless it already holds exactly that (returns false, file untouched).
 * The write is atomic: a temp file in the same directory, fsync, rename — the host's file watcher never
 * sees a half-written config. A symlinked config is written through to its target.
 *
 * Synchronous, and the only implementation: the host's init() (the first write) is synchronous, and later writes
 * are at most one per configWriteIntervalMs of one small file, so an async twin would buy nothing but a second copy.
 */
export function writeIfChanged(file: string, text: string): boolean {
  let target = file;
  let mode: number | undefined;
  try {
    if (fs.readFileSync(file, 'utf8') === text) return false;
    target = fs.realpathSync(file);
    mode = fs.statSync(target).mode & 0o777;
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
  const temp = tempPathFor(target);
  try {
    const fd = fs.openSync(temp, 'wx', mode ?? 0o644);
    try {
      if (mode !== undefined) fs.fchmodSync(fd, mode); // open's mode is filtered by the umask
      fs.writeFileSync(fd, text, 'utf8');
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(temp, target);
  } catch (error) {
    fs.rmSync(temp, { force: true });
    throw error;
  }
  syncDirectory(path.dirname(target));
  return true;
}

/** Makes the rename itself durable. Best effort: some platforms cannot open a directory. */
function syncDirectory(dir: string): void {
  try {
    const fd = fs.openSync(dir, 'r');
    try {
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    // Durability of the directory entry is a bonus; the content is already synced.
  }
}
