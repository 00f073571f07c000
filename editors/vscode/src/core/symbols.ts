// Finds a dotted symbol (`Store.open`, as the edit log names it) among a
// document's symbols, which may come from ctxls or from any other language
// server for that file.

export interface SymbolNode<R> {
  name: string;
  /** ctxls puts the full dotted name here. */
  detail?: string;
  range: R;
  children?: SymbolNode<R>[];
}

/**
 * The range of the symbol whose nesting of names spells `dotted` (or whose
 * detail is `dotted`); failing that, the first symbol named like its last part.
 */
export function findSymbolRange<R>(symbols: readonly SymbolNode<R>[], dotted: string): R | undefined {
  const flat = flatten(symbols, []);
  const exact = flat.find(({ node, qualified }) => qualified === dotted || node.detail === dotted);
  if (exact !== undefined) {
    return exact.node.range;
  }
  const last = dotted.slice(dotted.lastIndexOf('.') + 1);
  return flat.find(({ node }) => node.name === last)?.node.range;
}

interface Flat<R> {
  node: SymbolNode<R>;
  qualified: string;
}

/** Depth-first, parents before children, in document order. */
function flatten<R>(symbols: readonly SymbolNode<R>[], parents: string[]): Flat<R>[] {
  return symbols.flatMap((node) => {
    const names = [...parents, node.name];
    return [{ node, qualified: names.join('.') }, ...flatten(node.children ?? [], names)];
  });
}
