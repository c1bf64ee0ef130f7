/** One sample of Prometheus' text exposition format. */
export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?\s*/y;

function unescape(value: string): string {
  return value.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
}

/** Every sample of a scrape (comments and blank lines skipped); throws on a line it cannot read. */
export function parseExposition(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = SAMPLE.exec(line);
    if (!match) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    const body = match[2] ?? '';
    LABEL.lastIndex = 0;
    while (LABEL.lastIndex < body.length) {
      const label = LABEL.exec(body);
      if (!label) throw new Error(`unreadable labels: ${line}`);
      labels[label[1]!] = unescape(label[2]!);
    }
    const raw = match[3]!;
    samples.push({ name: match[1]!, labels, value: raw === '+Inf' ? Infinity : raw === '-Inf' ? -Infinity : Number(raw) });
  }
  return samples;
}

/** The samples of one scrape, looked up by name and exact label set. */
export class Scrape {
  readonly samples: Sample[];

  constructor(readonly text: string) {
    this.samples = parseExposition(text);
  }

  /** The value of the sample with exactly these labels; undefined when there is none. */
  value(name: string, labels: Record<string, string> = {}): number | undefined {
    const keys = Object.keys(labels);
    return this.samples.find(
      (s) => s.name === name && Object.keys(s.labels).length === keys.length && keys.every((k) => s.labels[k] === labels[k]),
    )?.value;
  }

  /** Every sample of a name. */
  all(name: string): Sample[] {
    return this.samples.filter((s) => s.name === name);
  }

  /** Whether the scrape has the metric (its TYPE line). */
  has(name: string): boolean {
    return this.text.includes(`# TYPE ${name} `);
  }
}
