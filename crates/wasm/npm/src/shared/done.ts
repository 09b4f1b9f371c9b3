// The end of an answer: the `done` events of its rewriters merged into one list and report.
import type { DoneEvent, ListedSource, Report } from "citeflow";

/** The merged list and report of several rewriters of one answer (its text ids). */
export interface Merged {
  sources: ListedSource[];
  report: Pick<Report, "citations" | "unresolved" | "new_numbers" | "verified">;
}

/** Merges the `done` events of several rewriters of one answer (text ids) into one. */
export function mergeDone(dones: readonly DoneEvent[]): Merged {
  const byNumber = new Map<number, ListedSource>();
  const report = { citations: 0, unresolved: 0, new_numbers: 0, verified: true };
  for (const d of dones) {
    for (const l of d.sources) {
      const had = byNumber.get(l.number);
      if (had) {
        had.citations += l.citations;
        if (l.anchors?.length) had.anchors = [...(had.anchors ?? []), ...l.anchors];
      } else byNumber.set(l.number, { ...l });
    }
    report.citations += d.report.citations;
    report.unresolved += d.report.unresolved;
    report.new_numbers += d.report.new_numbers;
    report.verified &&= d.report.verified;
  }
  return { sources: [...byNumber.values()].sort((a, b) => a.number - b.number), report };
}

/** A plain JSON copy (what crosses the WASM boundary may hold Maps or undefined). */
export function jsonSafe<T>(v: T): T {
  return v === undefined ? (null as T) : (JSON.parse(JSON.stringify(v)) as T);
}

/**
 * A deep copy of a value made of the core's JSON (objects, arrays, strings, numbers, booleans,
 * null: what the core's events hold, and what `mergeDone` builds from them): equal to
 * `jsonSafe(v)` for such a value, without the JSON text in between. A field whose value is
 * `undefined` is left out, as `JSON.stringify` leaves it out.
 */
export function copyJson<T>(v: T): T {
  if (v === null || typeof v !== "object") return (v === undefined ? null : v) as T;
  if (Array.isArray(v)) return v.map((x: unknown) => (x === undefined ? null : copyJson(x))) as T;
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(v)) {
    const x = (v as Record<string, unknown>)[k];
    if (x !== undefined) out[k] = copyJson(x);
  }
  return out as T;
}
