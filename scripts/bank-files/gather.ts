/**
 * Copies every file a bank-file source list names from its public repository, byte for byte, at the
 * commit the list records, into the corpus folder (which is not committed: the files are fetched data
 * under their repositories' licenses).
 *
 *   npm run gather:bank-files
 *   npm run gather:bank-files -- --sources scripts/bank-files/holdout.json --corpus corpus/bank-files-holdout
 *   npm run gather:bank-files -- --mirror /path/to/clones
 *
 * Each repository is read from `<mirror>/<owner>+<name>/repo` (a clone or bare git directory) when
 * --mirror names a folder holding one, else cloned from GitHub into a temporary folder. A file whose
 * recorded commit the clone lacks is taken from the clone's HEAD with a warning (its figures may differ).
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { sourceList } from "./sources.js";

const list = sourceList("gather.ts", process.argv.slice(2), ["--mirror"]);
const mirror = list.extra["--mirror"];
const scratch = mkdtempSync(join(tmpdir(), "bank-files-"));

const git = (gitDir: string, args: string[]) =>
  execFileSync("git", ["--git-dir", gitDir, ...args], { maxBuffer: 64 * 1024 * 1024, stdio: ["ignore", "pipe", "pipe"] });

const gitDirs = new Map<string, string>();
/** A git directory holding the repository: the mirror's copy, else a fresh clone without blobs. */
function gitDirOf(repo: string): string {
  const known = gitDirs.get(repo);
  if (known) return known;
  let dir: string | undefined;
  if (mirror) {
    const base = join(mirror, repo.replace("/", "+"), "repo");
    dir = [join(base, ".git"), base].find((d) => existsSync(join(d, "HEAD")));
  }
  if (!dir) {
    const target = join(scratch, repo.replace("/", "+"));
    execFileSync("git", ["clone", "--quiet", "--bare", "--filter=blob:none", `https://github.com/${repo}`, target], { stdio: "inherit" });
    dir = target;
  }
  gitDirs.set(repo, dir);
  return dir;
}

let copied = 0, fromHead = 0, failed = 0;
try {
  for (const src of list.sources) {
    const target = list.filePath(src.file);
    try {
      const dir = gitDirOf(src.repo);
      let bytes: Buffer;
      try {
        bytes = git(dir, ["show", `${src.commit}:${src.path}`]);
      } catch {
        bytes = git(dir, ["show", `HEAD:${src.path}`]);
        fromHead++;
        console.warn(`${src.file}: commit ${src.commit.slice(0, 10)} is not in ${src.repo}'s copy; taken from its HEAD`);
      }
      mkdirSync(dirname(target), { recursive: true });
      writeFileSync(target, bytes);
      copied++;
    } catch (err) {
      failed++;
      console.error(`${src.file}: could not copy ${src.repo}:${src.path} (${(err as Error).message.split("\n")[0]})`);
    }
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
console.log(`${copied} of ${list.sources.length} files copied into ${list.corpusRel}/` +
  (fromHead ? ` (${fromHead} from a repository's HEAD, not the recorded commit)` : "") +
  (failed ? `; ${failed} could not be copied` : "") + ".");
process.exit(failed ? 1 : 0);
