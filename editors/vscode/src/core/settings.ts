// `ctxls.*` settings → how to launch the server and its initializationOptions.
// The checks mirror the server's (daemon/options.py) so a bad value is named
// here, in the user's terms, and left out instead of being sent; left-out
// keys take the server's own defaults.

/** Every `ctxls.<key>` setting the extension reads (package.json declares the same). */
export const SETTING_KEYS = [
  'serverPath',
  'serverArgs',
  'include',
  'exclude',
  'debounceMs',
  'embeddings',
  'owner',
  'session',
  'strictScope',
  'dbPath',
] as const;

export type SettingKey = (typeof SETTING_KEYS)[number];

/** Values as read from the configuration: anything the user typed into settings.json. */
export type RawSettings = Partial<Record<SettingKey, unknown>>;

export interface InitializationOptions {
  include?: string[];
  exclude?: string[];
  debounceMs?: number;
  embeddings?: boolean;
  owner?: string;
  session?: string;
  strictScope?: boolean;
  dbPath?: string;
}

export interface ServerLaunch {
  command: string;
  args: string[];
  initializationOptions: InitializationOptions;
  /** One sentence per ignored setting, for a warning. */
  problems: string[];
}

export interface LaunchContext {
  /** The user's home directory, for `~/` in paths. */
  homeDir: string;
  /** The first workspace folder's file-system path, for relative server paths. */
  workspaceFolder?: string;
  /**
   * Whether the user trusts the workspace (VS Code's Workspace Trust). In
   * Restricted Mode VS Code hands over only the user's own serverPath,
   * serverArgs and dbPath (package.json's restrictedConfigurations); a relative
   * serverPath would still name a program inside the untrusted folder.
   */
  trusted: boolean;
}

const DEFAULT_SERVER_PATH = 'ctxls';
const MAX_DEBOUNCE_MS = 10_000;
// The owner is sent as `scope`, so it follows the server's rules for scope
// names (index/scopes.py, index/vocabulary.py MAX_SCOPE_CHARS).
const SHARED_SCOPE = '@global';
const RESERVED_SCOPE_PREFIX = '@';
const MAX_SCOPE_CHARS = 256;

export function buildServerLaunch(raw: RawSettings, context: LaunchContext): ServerLaunch {
  const problems: string[] = [];
  const problem = (key: SettingKey, expected: string): void => {
    problems.push(`ctxls.${key} ${expected}; using the default.`);
  };

  let command = DEFAULT_SERVER_PATH;
  if (isNonBlankString(raw.serverPath)) {
    const resolved = resolveServerPath(raw.serverPath.trim(), context);
    if (resolved !== undefined) {
      command = resolved;
    } else {
      problems.push('ctxls.serverPath is relative to the workspace, which is not trusted (Restricted Mode); using the default.');
    }
  } else if (isSet(raw.serverPath)) {
    problem('serverPath', 'must be a command name or a path');
  }

  let extraArgs: string[] = [];
  if (isStringArray(raw.serverArgs)) {
    extraArgs = raw.serverArgs;
  } else if (isSet(raw.serverArgs)) {
    problem('serverArgs', 'must be a list of strings');
  }

  const options: InitializationOptions = {};
  for (const key of ['include', 'exclude'] as const) {
    const value = raw[key];
    if (isStringArray(value) && value.length > 0 && value.every(isNonBlankString)) {
      options[key] = value.map((entry) => entry.trim());
    } else if (isSet(value)) {
      problem(key, 'must be a list of non-empty strings');
    }
  }

  const debounceMs = raw.debounceMs;
  if (typeof debounceMs === 'number' && Number.isInteger(debounceMs) && debounceMs >= 0 && debounceMs <= MAX_DEBOUNCE_MS) {
    options.debounceMs = debounceMs;
  } else if (isSet(debounceMs)) {
    problem('debounceMs', `must be a whole number of milliseconds from 0 to ${MAX_DEBOUNCE_MS}`);
  }

  for (const key of ['embeddings', 'strictScope'] as const) {
    const value = raw[key];
    if (typeof value === 'boolean') {
      options[key] = value;
    } else if (isSet(value)) {
      problem(key, 'must be true or false');
    }
  }

  for (const key of ['owner', 'session', 'dbPath'] as const) {
    const value = raw[key];
    if (isNonBlankString(value)) {
      const refused = key === 'owner' ? scopeNameProblem(value.trim()) : undefined;
      if (refused !== undefined) {
        problem(key, refused);
      } else {
        options[key] = key === 'dbPath' ? expandHome(value.trim(), context.homeDir) : value.trim();
      }
    } else if (isSet(value)) {
      problem(key, 'must be a string');
    }
  }

  return { command, args: ['serve', ...extraArgs], initializationOptions: options, problems };
}

/**
 * The server's working directory: the first workspace folder that is a
 * directory, else none (the extension host's). A folder removed since the
 * workspace was saved would fail the spawn itself (ENOENT), whatever the
 * program.
 */
export function serverWorkingFolder(
  folders: readonly string[],
  isDirectory: (path: string) => boolean,
): string | undefined {
  return folders.find((folder) => isDirectory(folder));
}

/** Why the server would refuse `name` as a scope, or undefined when it accepts it. */
function scopeNameProblem(name: string): string | undefined {
  // Counted in code points, as the server (Python) counts characters.
  if (Array.from(name).length > MAX_SCOPE_CHARS) {
    return `must be at most ${MAX_SCOPE_CHARS} characters`;
  }
  if (name.startsWith(RESERVED_SCOPE_PREFIX) && name !== SHARED_SCOPE) {
    return `must not start with '${RESERVED_SCOPE_PREFIX}' ('${SHARED_SCOPE}', the shared tier, excepted)`;
  }
  return undefined;
}

/**
 * `~/x` is the home directory's x; a relative path with a slash (`.venv/bin/ctxls`,
 * what `make run` installs) is the workspace's, only in a trusted workspace
 * (else undefined); a bare name is looked up on PATH.
 */
export function resolveServerPath(serverPath: string, context: LaunchContext): string | undefined {
  const expanded = expandHome(serverPath, context.homeDir);
  if (expanded !== serverPath || isAbsolutePath(expanded) || !/[\\/]/.test(expanded)) {
    return expanded;
  }
  if (!context.trusted) {
    return undefined;
  }
  if (context.workspaceFolder === undefined) {
    return expanded;
  }
  const base = context.workspaceFolder.replace(/[\\/]+$/, '');
  return `${base}/${expanded.replace(/^\.[\\/]/, '')}`;
}

function expandHome(path: string, homeDir: string): string {
  if (path === '~') {
    return homeDir;
  }
  if (path.startsWith('~/') || path.startsWith('~\\')) {
    return `${homeDir.replace(/[\\/]+$/, '')}/${path.slice(2)}`;
  }
  return path;
}

function isAbsolutePath(path: string): boolean {
  return path.startsWith('/') || path.startsWith('\\') || /^[A-Za-z]:[\\/]/.test(path);
}

/**
 * Whether the user gave a value at all. A blank string or an empty list is the
 * settings UI's way of saying "not set", and null is a cleared settings.json entry.
 */
function isSet(value: unknown): boolean {
  if (value === undefined || value === null) {
    return false;
  }
  if (typeof value === 'string') {
    return value.trim() !== '';
  }
  return !(Array.isArray(value) && value.length === 0);
}

function isNonBlankString(value: unknown): value is string {
  return typeof value === 'string' && value.trim() !== '';
}

function isStringArray(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((entry) => typeof entry === 'string');
}

/** The `scope` to send with scoped verbs: the configured owner, so `strictScope` is satisfied. */
export function scopeParam(options: InitializationOptions): { scope?: string } {
  return options.owner === undefined ? {} : { scope: options.owner };
}
