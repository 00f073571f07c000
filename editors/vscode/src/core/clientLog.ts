// What the language client writes to the output channel, corrected.

/**
 * vscode-languageclient 9 logs every clean exit of the server (each stop and
 * restart) as "[Error - 4:57:10 PM] Server process exited with code 0."; 10.0
 * logs it as information (microsoft/vscode-languageserver-node#1404) but needs
 * VS Code 1.91. The same line as 10.0 writes it; every other line as it is.
 */
export function cleanExitAsInfo(line: string): string {
  const clean = /^\[Error - ([^\]]*)\] Server process exited with code 0\.$/.exec(line);
  return clean === null ? line : `[Info  - ${clean[1]}] Server process exited successfully`;
}

/**
 * Whether the language client's error `message` is its own notice that a
 * start failed ("ctxls client: couldn't create connection to server."). The
 * client always shows that as a notification, beside the one the extension
 * shows with the cause and the setting that fixes it: it is logged only.
 */
export function isStartFailureNotice(message: string): boolean {
  return / client: couldn't create connection to server\.$/.test(message);
}
