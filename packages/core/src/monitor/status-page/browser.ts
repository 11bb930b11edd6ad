// The part of the browser the status page's script uses (client.ts), declared here instead of with
// TypeScript's DOM library: that library would change the types of the whole package, which runs
// on Node. setTimeout and URLSearchParams are typed by Node's own declarations, which agree with
// the browser's for what the script does with them.

export interface PageElement {
  className: string;
  textContent: string | null;
  readonly dataset: Record<string, string | undefined>;
  setAttribute(name: string, value: string): void;
  append(...children: (PageElement | string)[]): void;
  prepend(...children: (PageElement | string)[]): void;
  replaceChildren(...children: (PageElement | string)[]): void;
  addEventListener(type: string, listener: (event: PageEvent) => void): void;
}

/** An input, a select or a button. */
export interface PageControl extends PageElement {
  value: string;
  disabled: boolean;
}

export interface PageEvent {
  readonly target: unknown;
}

export interface PageDocument {
  readonly body: PageElement;
  createElement(tag: string): PageElement;
  createElementNS(namespace: string, tag: string): PageElement;
  getElementById(id: string): PageElement | null;
  querySelectorAll(selector: string): Iterable<PageElement>;
}

export interface PageStorage {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

/** The browser's fetch, as far as the script uses it (Node's RequestInit has no `cache`). */
export type PageFetch = (
  url: string,
  init: { method?: string; cache: 'no-store'; headers: Record<string, string> },
) => Promise<PageResponse>;

export interface PageResponse {
  readonly ok: boolean;
  readonly status: number;
  json(): Promise<unknown>;
}
