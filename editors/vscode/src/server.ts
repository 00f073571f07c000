// The `ctxls serve` process and its language client: started from settings,
// restarted when they change, and the one way the rest of the extension
// sends requests.

import { statSync } from 'node:fs';
import * as os from 'node:os';
import * as vscode from 'vscode';
import { LanguageClient, State, TransportKind, type ProgressToken } from 'vscode-languageclient/node';

import { cleanExitAsInfo, isStartFailureNotice } from './core/clientLog';
import { isMissingProgram } from './core/errors';
import type { MethodName, WorkDoneProgressValue } from './core/protocol';
import {
  buildServerLaunch,
  scopeParam,
  serverWorkingFolder,
  SETTING_KEYS,
  type RawSettings,
  type ServerLaunch,
} from './core/settings';

export interface ProgressEvent {
  token: ProgressToken;
  value: WorkDoneProgressValue;
}

export type ServerState = { running: true } | { running: false; error?: string };

export class CtxlsServer implements vscode.Disposable {
  private client: LanguageClient | undefined;
  /** Settles when the current client has started or failed to; requests wait for it. */
  private starting: Promise<void> | undefined;
  private launch: ServerLaunch | undefined;
  /** Every start, stop and restart runs after the ones asked before it. */
  private lifecycle: Promise<void> = Promise.resolve();
  /** A restart asked for and not begun yet: a second ask joins it. */
  private queuedRestart: Promise<void> | undefined;
  // One channel for every client this extension starts, so a restart keeps the log.
  private readonly outputChannel = vscode.window.createOutputChannel('ctxls');
  private readonly progressEmitter = new vscode.EventEmitter<ProgressEvent>();
  private readonly stateEmitter = new vscode.EventEmitter<ServerState>();

  /** Every `$/progress` value of work-done progress the server reports. */
  readonly onProgress = this.progressEmitter.event;
  readonly onDidChangeState = this.stateEmitter.event;

  start(): Promise<void> {
    return this.inTurn(() => this.startNow());
  }

  stop(): Promise<void> {
    return this.inTurn(() => this.stopNow());
  }

  /**
   * Unserialized, two restarts interleaved: one stopped a client still
   * starting (an error dialog, no server left) or replaced one it never
   * stopped (two servers, every lens twice). Granting workspace trust asks
   * twice at once (trust, and the settings now in force): one restart
   * serves both.
   */
  restart(): Promise<void> {
    if (this.queuedRestart === undefined) {
      this.queuedRestart = this.inTurn(async () => {
        this.queuedRestart = undefined;
        await this.stopNow();
        await this.startNow();
      });
    }
    return this.queuedRestart;
  }

  private inTurn(step: () => Promise<void>): Promise<void> {
    const next = this.lifecycle.then(step, step);
    this.lifecycle = next.catch(() => undefined);
    return next;
  }

  private async startNow(): Promise<void> {
    const launch = buildServerLaunch(readSettings(), {
      homeDir: os.homedir(),
      workspaceFolder: vscode.workspace.workspaceFolders?.[0]?.uri.fsPath,
      trusted: vscode.workspace.isTrusted,
    });
    this.launch = launch;
    for (const problem of launch.problems) {
      void vscode.window.showWarningMessage(problem);
    }
    const client = new CtxlsLanguageClient(
      'ctxls',
      'ctxls',
      {
        command: launch.command,
        args: launch.args,
        transport: TransportKind.stdio,
        options: {
          cwd: serverWorkingFolder((vscode.workspace.workspaceFolders ?? []).map((folder) => folder.uri.fsPath), isDirectory),
        },
      },
      {
        // Every file: the server decides what it indexes (`include`/`exclude`).
        documentSelector: [{ scheme: 'file' }],
        initializationOptions: launch.initializationOptions,
        outputChannel: clientChannel(this.outputChannel),
        middleware: {
          // The status bar item shows it. The client's own handler would draw a
          // second, window progress item beside it (which pushed the cursor
          // position off the status bar): it only gets the end, which releases
          // its bookkeeping for the token without drawing anything.
          handleWorkDoneProgress: (token, value, next) => {
            // A stopped client's last reports must not outlive it on the bar.
            if (this.client === client) {
              this.progressEmitter.fire({ token, value });
            }
            if (value.kind === 'end') {
              next(token, value);
            }
          },
        },
      },
    );
    // Also covers the client's own restarts after a crash. A client this object
    // already replaced or stopped on purpose reports nothing.
    client.onDidChangeState((change) => {
      if (this.client !== client) {
        return;
      }
      if (change.newState === State.Running) {
        this.stateEmitter.fire({ running: true });
      } else if (change.newState === State.Stopped) {
        this.stateEmitter.fire({ running: false, error: 'The ctxls server stopped.' });
      }
    });
    this.client = client;
    const starting = client.start();
    this.starting = starting.catch(() => undefined);
    try {
      await starting;
    } catch (error) {
      const message = `ctxls: could not start "${[launch.command, ...launch.args].join(' ')}": ${String(error)}`;
      this.stateEmitter.fire({ running: false, error: message });
      if (isMissingProgram(error)) {
        void vscode.window.showErrorMessage(`${message}. Set ctxls.serverPath to the ctxls command.`, 'Open Settings').then(
          (choice) => {
            if (choice !== undefined) {
              void vscode.commands.executeCommand('workbench.action.openSettings', 'ctxls.serverPath');
            }
          },
        );
      } else {
        // The program ran: why it stopped is in its log, not in the setting.
        void vscode.window.showErrorMessage(`${message}. The server's log says why.`, 'Show Output').then((choice) => {
          if (choice !== undefined) {
            this.showOutput();
          }
        });
      }
    }
  }

  private async stopNow(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client !== undefined && client.needsStop()) {
      await client.stop();
    }
    this.stateEmitter.fire({ running: false });
  }

  /** Sends a ctxls request; `signal` cancels it (`$/cancelRequest`). */
  async request<Result>(method: MethodName, params: object, signal?: AbortSignal): Promise<Result> {
    await this.starting;
    const client = this.client;
    if (client === undefined || !client.isRunning()) {
      throw new Error('the ctxls server is not running (see "ctxls: Show Output")');
    }
    if (signal === undefined) {
      return client.sendRequest<Result>(method, params);
    }
    const cancellation = new vscode.CancellationTokenSource();
    const onAbort = (): void => cancellation.cancel();
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      return await client.sendRequest<Result>(method, params, cancellation.token);
    } finally {
      signal.removeEventListener('abort', onAbort);
      cancellation.dispose();
    }
  }

  /** Calls `listener` whenever a work-done progress ends (an indexing pass, say); returns the unsubscribe. */
  onProgressEnd(listener: () => void): () => void {
    const subscription = this.onProgress(({ value }) => {
      if (value.kind === 'end') {
        listener();
      }
    });
    return () => {
      subscription.dispose();
    };
  }

  /** The `scope` for scoped verbs (`recall`, `remember`): the configured owner, if any. */
  scope(): { scope?: string } {
    return this.launch === undefined ? {} : scopeParam(this.launch.initializationOptions);
  }

  showOutput(): void {
    this.outputChannel.show(true);
  }

  dispose(): void {
    void this.stop();
    this.outputChannel.dispose();
    this.progressEmitter.dispose();
    this.stateEmitter.dispose();
  }
}

/**
 * The language client, less its own notification when a start fails: startNow
 * tells the user why, and which setting fixes it; the client's "couldn't
 * create connection to server" said nothing more beside it. It still goes to
 * the output channel.
 */
class CtxlsLanguageClient extends LanguageClient {
  override error(message: string, data?: unknown, showNotification: boolean | 'force' = true): void {
    super.error(message, data, isStartFailureNotice(message) ? false : showNotification);
  }
}

/** The extension's channel, with the client's lines corrected (`cleanExitAsInfo`). */
function clientChannel(channel: vscode.OutputChannel): vscode.OutputChannel {
  return new Proxy(channel, {
    get(target, property) {
      if (property === 'appendLine') {
        return (line: string) => target.appendLine(cleanExitAsInfo(line));
      }
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function readSettings(): RawSettings {
  const config = vscode.workspace.getConfiguration('ctxls');
  return Object.fromEntries(SETTING_KEYS.map((key) => [key, config.get<unknown>(key)]));
}
