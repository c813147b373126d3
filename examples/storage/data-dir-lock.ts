import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { DatabaseError } from './database';

/** Lock files this process holds: a pid equal to ours in a file we do not hold is a stale one (a container restart reuses pids). */
const held = new Set<string>();

/**
 * One process at a time in an embedded data directory: two would corrupt it. A lock whose process is gone
 * (killed, crashed) is taken over. Returns the release function.
 */
export function lockDataDirectory(file: string, dir: string): () => void {
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      writeFileSync(file, String(process.pid), { flag: 'wx', mode: 0o600 });
      held.add(file);
      return () => {
        held.delete(file);
        rmSync(file, { force: true });
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST')
        throw new DatabaseError(`the data directory ${dir} is not writable (${(err as NodeJS.ErrnoException).code})`);
      const pid = Number(readTrimmed(file));
      if (held.has(file) || (pid !== process.pid && isAlive(pid))) {
        throw new DatabaseError(
          `the data directory ${dir} is in use by ${held.has(file) ? 'this process' : `process ${pid}`}; stop it or set DATA_DIR to another directory`,
        );
      }
      rmSync(file, { force: true });
    }
  }
  throw new DatabaseError(`the data directory ${dir} could not be locked`);
}

function readTrimmed(file: string): string {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    return '';
  }
}

function isAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: the process exists but belongs to someone else.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
